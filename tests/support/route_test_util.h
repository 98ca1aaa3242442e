/* Helpers for the route unit tests: the test thread stands in for the
 * registrar (it calls the route_apply_* functions directly) and reads
 * answers back through the public read functions. */
#ifndef RMQNS_ROUTE_TEST_UTIL_H
#define RMQNS_ROUTE_TEST_UTIL_H

#include <criterion/criterion.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <urcu.h>

#include "rmqns/buf.h"
#include "rmqns/err.h"
#include "rmqns/json_body.h"
#include "rmqns/json_tree.h"
#include "rmqns/race.h"
#include "rmqns/regbody.h"
#include "rmqns/remoting.h"
#include "rmqns/route.h"
#include "test_util.h"

#ifndef TESTDATA_DIR
#error "TESTDATA_DIR must name tests/data"
#endif

/* A captured frame (path relative to tests/data), decoded. Free with
 * tu_frame_free. */
struct tu_frame {
	uint8_t *bytes;
	size_t len;
	struct remoting_cmd cmd;
};

static inline void tu_frame_load(struct tu_frame *f, const char *rel)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", TESTDATA_DIR, rel);
	f->bytes = tu_load(path, &f->len);
	cr_assert_eq(remoting_decode(f->bytes, f->len, &f->cmd), 0, "%s does not decode", rel);
}

static inline void tu_frame_free(struct tu_frame *f)
{
	remoting_cmd_release(&f->cmd);
	free(f->bytes);
}

/* A registry for one test, the test thread registered with RCU (it plays
 * the registrar). */
static inline struct route_db *tu_db_open(void)
{
	rcu_register_thread();
	struct route_db *db = route_db_create(0);
	cr_assert(db);
	return db;
}

static inline void tu_db_close(struct route_db *db)
{
	route_db_destroy(db);
	rcu_unregister_thread();
}

/* A plain-JSON RegisterBrokerBody. topics: "name/read/write/perm[/sysflag]"
 * separated by spaces (NULL or "" for none). */
static inline char *tu_body(int64_t counter, int64_t ts, int64_t state, const char *topics)
{
	struct buf b = BUF_INIT;
	char *spec = strdup(topics ? topics : "");
	char *save = NULL;
	int first = 1;

	buf_printf(&b, "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":"
		       "{\"counter\":%" PRId64 ",\"stateVersion\":%" PRId64 ",\"timestamp\":%" PRId64 "},"
		       "\"topicConfigTable\":{",
		   counter, state, ts);
	for (char *t = strtok_r(spec, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		char name[256];
		int r = 0, w = 0, perm = 0, sys = 0;
		int n = sscanf(t, "%255[^/]/%d/%d/%d/%d", name, &r, &w, &perm, &sys);
		cr_assert(n >= 4, "bad topic spec %s", t);
		buf_printf(&b, "%s\"%s\":{\"order\":false,\"perm\":%d,\"readQueueNums\":%d,"
			       "\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"%s\",\"topicSysFlag\":%d,"
			       "\"writeQueueNums\":%d}",
			   first ? "" : ",", name, perm, r, name, sys, w);
		first = 0;
	}
	buf_append_str(&b, "}}}");
	buf_terminate(&b);
	free(spec);
	return (char *)b.data;
}

struct tu_reg {
	const char *cluster, *name, *addr, *ha;
	int64_t id;
	bool new_style, acting;
	const char *zone;
	int64_t timeout;
	uint64_t conn;
	bool delete_missing;
};

/* Decodes `body` as a REGISTER_BROKER body and applies it. */
/* broker-a's registration of a 5.x static topic S (its route carries
 * topicQueueMappingByBroker) and a plain topic U. */
#define TU_STATIC_TOPIC_BODY                                                                       \
	"{\"filterServerList\":[],\"topicConfigSerializeWrapper\":"                                 \
	"{\"dataVersion\":{\"counter\":1,\"timestamp\":1},\"topicConfigTable\":"                      \
	"{\"S\":{\"perm\":6,\"readQueueNums\":2,\"topicName\":\"S\",\"writeQueueNums\":2},"           \
	"\"U\":{\"perm\":6,\"readQueueNums\":4,\"topicName\":\"U\",\"writeQueueNums\":4}},"           \
	"\"topicQueueMappingInfoMap\":{\"S\":{\"bname\":\"broker-a\",\"currIdMap\":{1:1,0:0},"        \
	"\"dirty\":false,\"epoch\":1700000000000,\"scope\":\"__global__\",\"topic\":\"S\","         \
	"\"totalQueues\":2}}}}"

static inline void tu_reg_fill(struct route_broker_reg *reg, const struct tu_reg *r, const char *body)
{
	*reg = (struct route_broker_reg){
		.cluster = r->cluster ? r->cluster : "DefaultCluster", .name = r->name,
		.addr = r->addr, .ha_addr = r->ha, .id = r->id, .new_style = r->new_style,
		.acting_master = r->acting, .zone = r->zone, .timeout_ms = r->timeout,
		.conn_id = r->conn, .delete_missing_topics = r->delete_missing,
		/* the body's identity, as the REGISTER_BROKER handler gives it */
		.body_id = { .bytes = (const uint8_t *)body, .len = body ? strlen(body) : 0,
			     .version = 441, .max_bytes = REGBODY_DEFAULT_MAX_BYTES },
	};
	regbody_fingerprint(reg->body_id.bytes, reg->body_id.len, &reg->body_id.crc, &reg->body_id.hash);
}

/* Decodes `body` into rb and applies it with reg. */
static inline int tu_apply_decoded(struct route_db *db, struct route_broker_reg *reg, const char *body,
				   uint64_t now, struct route_reg_result *res)
{
	struct regbody rb;
	char why[128];
	int rc = regbody_decode((const uint8_t *)body, body ? strlen(body) : 0, false, 441, 0, &rb, why,
				sizeof(why));
	cr_assert_eq(rc, 0, "body does not decode: %s", why);
	reg->body = &rb;
	rc = route_apply_register(db, reg, now, res);
	regbody_free(&rb);
	reg->body = NULL;
	return rc;
}

static inline int tu_register(struct route_db *db, const struct tu_reg *r, const char *body, uint64_t now,
			      struct route_reg_result *res)
{
	struct route_broker_reg reg;
	struct route_reg_result tmp;
	tu_reg_fill(&reg, r, body);
	int rc = tu_apply_decoded(db, &reg, body, now, res ? res : &tmp);
	if (!res)
		route_reg_result_free(&tmp);
	return rc;
}

/* As the REGISTER_BROKER handler registers: a body identical to the
 * broker's last on this connection goes undecoded (*undecoded = true when
 * the registrar took it so); otherwise, or when the registrar finds that
 * no longer holds, it is decoded and applied in full. */
static inline int tu_register_as_handler(struct route_db *db, const struct tu_reg *r, const char *body,
					 uint64_t now, bool *undecoded)
{
	struct route_broker_reg reg;
	struct route_reg_result res;
	int rc = RMQNS_ENOTFOUND;
	tu_reg_fill(&reg, r, body);
	state_read_lock();
	bool same = route_body_is_last(db, reg.cluster, reg.addr, reg.conn_id, &reg.body_id);
	state_read_unlock();
	if (same)
		rc = route_apply_register(db, &reg, now, &res);
	*undecoded = rc != RMQNS_ENOTFOUND;
	if (rc == RMQNS_ENOTFOUND)
		rc = tu_apply_decoded(db, &reg, body, now, &res);
	route_reg_result_free(&res);
	return rc;
}

/* The route answer as a NUL-terminated string, or NULL when not found. */
static inline char *tu_route_q(struct route_db *db, const struct route_query *q)
{
	struct buf scratch = BUF_INIT;
	const uint8_t *body;
	size_t len;
	char *out = NULL;

	state_read_lock();
	int rc = route_topic_body(db, q, &body, &len, &scratch);
	if (rc == 0) {
		out = malloc(len + 1);
		memcpy(out, body, len);
		out[len] = 0;
	} else {
		cr_assert_eq(rc, RMQNS_ENOTFOUND, "route_topic_body: %d", rc);
	}
	state_read_unlock();
	buf_free(&scratch);
	return out;
}

static inline char *tu_route(struct route_db *db, const char *topic, enum jw_form form)
{
	struct route_query q = { topic, form, false, NULL, NULL };
	return tu_route_q(db, &q);
}

/* What the registrar does when no mutation waits: removes the entries of
 * groups that left, until none remain. */
static inline void tu_settle(struct route_db *db)
{
	for (int i = 0; route_hook_idle(db); i++)
		cr_assert_lt(i, 1000000, "background removal never ends");
}

typedef int (*tu_list_fn)(struct route_db *db, struct buf *out);

static inline char *tu_text(struct buf *b)
{
	buf_terminate(b);
	return (char *)b->data;
}

static inline char *tu_cluster_info(struct route_db *db)
{
	struct buf b = BUF_INIT;
	state_read_lock();
	cr_assert_eq(route_cluster_info(db, &b), 0);
	state_read_unlock();
	return tu_text(&b);
}

/* Parses a body (bare integer keys allowed). */
static inline json_t *tu_json(const char *s)
{
	int err = 0;
	json_t *j = json_body_parse((const uint8_t *)s, strlen(s), &err);
	cr_assert(j, "body does not parse (%d): %s", err, s);
	return j;
}

/* perm of the queue entry of `group` in a route answer, -1 if none. */
static inline int tu_perm(const char *route, const char *group)
{
	json_t *j = tu_json(route), *q;
	size_t i;
	int perm = -1;
	json_array_foreach(json_object_get(j, "queueDatas"), i, q)
		if (strcmp(json_string_value(json_object_get(q, "brokerName")), group) == 0)
			perm = (int)json_integer_value(json_object_get(q, "perm"));
	json_decref(j);
	return perm;
}

#endif
