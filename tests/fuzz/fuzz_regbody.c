/* libFuzzer target for REGISTER_BROKER bodies (regbody_decode): plain JSON,
 * the bare wrapper of old senders, the compressed layout with and without
 * the static-topic section, and bodies flagged plain that are zlib. The
 * first input byte picks the sender version, the request's compressed flag
 * and whether the rest is deflated here first (so the fuzzer reaches the
 * compressed layout behind a valid zlib stream). A decoded body must be
 * self-consistent: every topic is found by name, names are distinct, and
 * counts match the arrays; and the decoder's shortcuts must agree with its
 * general path (regbody_general.h): the same result, or the same error and
 * reason. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "rmqns/err.h"
#include "rmqns/regbody.h"

#include "../unit/route/regbody_general.h"

#define REQUIRE(cond) do { if (!(cond)) abort(); } while (0)

/* Small, so that the inflate cap is reachable. */
#define FUZZ_MAX_BODY (256u << 10)

static const int32_t versions[8] = { 0, 36, 37, 412, 413, 441, -1, 0x7fffffff };

static void check_body(const struct regbody *rb)
{
	for (uint32_t i = 0; i < rb->n_topics; i++) {
		REQUIRE(rb->topics[i].name != NULL);
		const struct regbody_topic *t = regbody_find_topic(rb, rb->topics[i].name);
		REQUIRE(t == &rb->topics[i]);
	}
	for (uint32_t i = 0; i < rb->n_filters; i++)
		REQUIRE(rb->filters[i] != NULL);
	REQUIRE(rb->has_filters || rb->n_filters == 0);
	for (uint32_t i = 0; i < rb->n_mappings; i++) {
		const struct regbody_mapping *m = &rb->mappings[i];
		REQUIRE(m->key != NULL);
		REQUIRE(m->has_ids || m->n_ids == 0);
		for (uint32_t k = 0; k < m->n_ids; k++)
			(void)m->ids[k][0];
	}
	char dv[96];
	int n = data_version_format(&rb->dv, dv, sizeof(dv));
	REQUIRE(n > 0 && (size_t)n < sizeof(dv));
	struct data_version back;
	REQUIRE(regbody_parse_data_version((const uint8_t *)dv, (size_t)n, &back) == RMQNS_OK);
	REQUIRE(data_version_equal(&back, &rb->dv));
}

static void decode(const uint8_t *body, size_t len, bool compressed, int32_t version)
{
	struct regbody rb;
	char why[160];
	why[0] = 0;
	int rc = regbody_decode(body, len, compressed, version, FUZZ_MAX_BODY, &rb, why, sizeof(why));
	if (rc == RMQNS_OK)
		check_body(&rb);
	else
		REQUIRE(rc < 0 && why[0] != 0 && rb.n_topics == 0 && rb.topics == NULL);

	struct regbody general;
	char why_general[160], diff[128];
	why_general[0] = 0;
	int rc_general = regbody_decode_general(body, len, compressed, version, FUZZ_MAX_BODY, &general,
						why_general, sizeof(why_general));
	REQUIRE(rc_general == rc);
	if (rc == RMQNS_OK)
		REQUIRE(regbody_same(&rb, &general, diff, sizeof(diff)));
	else
		REQUIRE(strcmp(why, why_general) == 0);
	regbody_free(&general);
	regbody_free(&rb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0) {
		decode(NULL, 0, false, 441);
		return 0;
	}
	uint8_t mode = data[0];
	int32_t version = versions[mode & 7];
	bool compressed = mode & 8;
	const uint8_t *body = data + 1;
	size_t len = size - 1;

	if (mode & 16) {
		uLongf zlen = compressBound((uLong)len);
		uint8_t *z = malloc(zlen ? zlen : 1);
		if (!z)
			return 0;
		if (compress2(z, &zlen, body, (uLong)len, (mode & 32) ? 9 : 1) == Z_OK)
			decode(z, zlen, compressed, version);
		free(z);
	} else {
		decode(body, len, compressed, version);
	}
	struct data_version dv;
	(void)regbody_parse_data_version(body, len, &dv);
	(void)regbody_crc_matches(body, len, (int64_t)mode);
	return 0;
}
