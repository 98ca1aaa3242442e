/* libFuzzer target for the route snapshot loader: any bytes either load or
 * are refused with a reason, never crash, and a refusal changes nothing.
 * The first byte picks how: bit 0 set, the rest gets a correct content
 * length and CRC32 first (so the records behind the checksum are reached);
 * the other bits, how many seconds after its writing it is loaded. What
 * loads must pass rt_check (every index and count recounted), answer every
 * listed topic, and encode to a snapshot that loads again with the same counts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <urcu.h>
#include <zlib.h>

#include "rmqns/buf.h"
#include "rmqns/err.h"
#include "rmqns/log.h"
#include "rmqns/race.h"
#include "rmqns/route.h"
#include "rmqns/route_snapshot.h"
#include "route_priv.h"

#define REQUIRE(cond) do { if (!(cond)) { fprintf(stderr, "failed: %s\n", #cond); abort(); } } while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_ERROR);
	(void)log_set_file("/dev/null");
	rcu_register_thread(); /* this thread stands in for the registrar */
	return 0;
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* A correct content length and CRC32 for the header. */
static void fix_header(uint8_t *p, size_t len)
{
	uint64_t content = len - ROUTE_SNAPSHOT_HEADER;
	for (int i = 0; i < 8; i++)
		p[16 + i] = (uint8_t)(content >> (8 * i));
	uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), p + 16, (uInt)(len - 16));
	for (int i = 0; i < 4; i++)
		p[12 + i] = (uint8_t)(crc >> (8 * i));
}

/* Every topic of db (as the topic list names it) answers in both forms,
 * and the cluster info builds. */
static void probe_all(struct route_db *db)
{
	struct buf scratch = BUF_INIT, out = BUF_INIT;

	state_read_lock();
	REQUIRE(route_topics_all(db, &out) == 0);
	json_t *root = json_loadb((const char *)out.data, out.len, 0, NULL);
	json_t *list = json_object_get(root, "topicList");
	for (size_t i = 0; i < json_array_size(list); i++) {
		for (int form = 0; form < 2; form++) {
			struct route_query q = { json_string_value(json_array_get(list, i)), (enum jw_form)form,
						 form == 1, NULL, NULL };
			const uint8_t *body;
			size_t len;
			int rc = q.topic ? route_topic_body(db, &q, &body, &len, &scratch) : RMQNS_OK;
			REQUIRE(rc == RMQNS_OK || rc == RMQNS_ENOTFOUND);
		}
	}
	json_decref(root);
	buf_reset(&out);
	REQUIRE(route_cluster_info(db, &out) == 0);
	state_read_unlock();
	buf_free(&scratch);
	buf_free(&out);
}

static void check(struct route_db *db)
{
	char err[1024];
	if (rt_check(db, err, sizeof err) != 0) {
		fprintf(stderr, "rt_check after a load: %s\n", err);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct route_snapshot_info info, again;
	char err[512];

	if (size < 1)
		return 0;
	uint8_t mode = data[0];
	size_t len = size - 1;
	uint8_t *p = malloc(len ? len : 1);
	REQUIRE(p);
	memcpy(p, data + 1, len);
	if ((mode & 1) && len >= ROUTE_SNAPSHOT_HEADER)
		fix_header(p, len);
	uint64_t now = len >= ROUTE_SNAPSHOT_HEADER ? le64(p + 24) + (uint64_t)(mode >> 1) * 1000u : 0;

	struct route_db *db = route_db_create(0);
	REQUIRE(db);
	int rc = route_snapshot_load_bytes(db, p, len, now, &info, err, sizeof err);
	if (rc == 0) {
		/* brokers past their timeout were removed: their entries go too */
		while (route_hook_idle(db))
			;
		check(db);
		REQUIRE(route_db_warm(db));
		probe_all(db);
		struct buf enc = BUF_INIT;
		REQUIRE(route_snapshot_encode(db, now, NULL, &enc) == 0);
		struct route_db *db2 = route_db_create(0);
		REQUIRE(db2);
		rc = route_snapshot_load_bytes(db2, enc.data, enc.len, now, &again, err, sizeof err);
		if (rc != 0) {
			fprintf(stderr, "a loaded snapshot, encoded again, is refused: %s\n", err);
			abort();
		}
		check(db2);
		struct route_stats a, b;
		route_stats(db, &a);
		route_stats(db2, &b);
		REQUIRE(a.topics == b.topics && a.live == b.live && a.groups == b.groups &&
			a.queue_entries == b.queue_entries);
		route_db_destroy(db2);
		buf_free(&enc);
	} else {
		REQUIRE(rc != RMQNS_ENOMEM);
		REQUIRE(err[0] != 0);
		/* refused before any change */
		struct route_stats st;
		route_stats(db, &st);
		REQUIRE(st.topics == 0 && st.live == 0 && st.groups == 0);
		REQUIRE(!route_db_warm(db));
	}
	route_db_destroy(db);
	free(p);
	return 0;
}
