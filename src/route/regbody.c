/* REGISTER_BROKER body decoder (regbody.h): which layout a body is in,
 * the decode from start to result, and the result's look-ups. The table
 * under construction is regbody_build.c, the JSON layouts regbody_json.c,
 * the compressed one regbody_zlib.c. Touches no shared state. */
#include "rmqns/regbody.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "regbody_decode_general.h"
#include "regbody_zlib.h"
#include "rmqns/err.h"

static bool looks_zlib(const uint8_t *p, size_t len)
{
	return len >= 2 && p[0] == 0x78 && (p[1] == 0x01 || p[1] == 0x5E || p[1] == 0x9C || p[1] == 0xDA);
}

static int decode(const uint8_t *body, size_t len, bool compressed, int32_t version, size_t max_bytes,
		  bool general, struct regbody *out, char *why, size_t whylen)
{
	struct body_build b;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&b, 0, sizeof(b));
	b.why = why;
	b.whylen = whylen;
	b.general = general;
	if (why && whylen)
		why[0] = 0;
	if (max_bytes == 0)
		max_bytes = REGBODY_DEFAULT_MAX_BYTES;

	if (!body || len == 0) {
		/* no body: no topics, DataVersion {0,0,0}, an empty filter list */
		b.has_filters = true;
	} else if (compressed || looks_zlib(body, len)) {
		/* 5.x brokers flag compressed bodies as plain; a JSON body never
		 * starts with 0x78 ('x'), so the zlib header decides. */
		rc = regbody_zlib_decode(&b, body, len, version, max_bytes);
		if (rc)
			goto fail;
	} else {
		if (len > max_bytes) {
			char lim[32];
			snprintf(lim, sizeof(lim), "%zu", max_bytes);
			rc = build_fail(&b, RMQNS_ETOOBIG, "body exceeds %s bytes", lim);
			goto fail;
		}
		rc = regbody_json_decode(&b, body, len, version);
		if (rc)
			goto fail;
	}
	rc = build_finish(&b, out);
	if (rc)
		goto fail;
	build_free(&b);
	return 0;
fail:
	if (rc == RMQNS_ENOMEM)
		build_fail(&b, rc, "out of memory%s", NULL);
	build_fail(&b, rc, "undecodable body%s", NULL);
	build_free(&b);
	regbody_free(out);
	return rc;
}

int regbody_decode(const uint8_t *body, size_t len, bool compressed, int32_t version,
		   size_t max_bytes, struct regbody *out, char *why, size_t whylen)
{
	return decode(body, len, compressed, version, max_bytes, false, out, why, whylen);
}

int regbody_decode_general(const uint8_t *body, size_t len, bool compressed, int32_t version,
			   size_t max_bytes, struct regbody *out, char *why, size_t whylen)
{
	return decode(body, len, compressed, version, max_bytes, true, out, why, whylen);
}

void regbody_free(struct regbody *rb)
{
	if (!rb)
		return;
	for (uint32_t i = 0; rb->mappings && i < rb->n_mappings; i++)
		free(rb->mappings[i].ids);
	free(rb->mappings);
	body_spare_give(rb->topics);
	free(rb->filters);
	body_spare_give(rb->arena);
	free(rb->index);
	memset(rb, 0, sizeof(*rb));
}

const struct regbody_topic *regbody_find_topic(const struct regbody *rb, const char *name)
{
	size_t n;
	uint32_t slot;

	if (!rb->index || !name)
		return NULL;
	n = strlen(name);
	slot = (uint32_t)name_hash(name, n) & rb->index_mask;
	while (rb->index[slot]) {
		const struct regbody_topic *t = &rb->topics[rb->index[slot] - 1];
		if (strcmp(t->name, name) == 0)
			return t;
		slot = (slot + 1) & rb->index_mask;
	}
	return NULL;
}

int data_version_format(const struct data_version *dv, char *out, size_t outlen)
{
	return snprintf(out, outlen, "{\"counter\":%" PRId64 ",\"stateVersion\":%" PRId64 ",\"timestamp\":%" PRId64 "}",
			dv->counter, dv->state_version, dv->timestamp);
}
