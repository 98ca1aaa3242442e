/* Stateful libFuzzer target for the route registry: the input is a script
 * of operations (registrations with a few topics, ids, groups, clusters
 * and acting-master settings, heartbeats, unregistrations, closed
 * connections, expiry at a time, topic deletion with and without a
 * cluster, write permission wiped and added, REGISTER_TOPIC, background
 * removal of the entries of groups that left) applied to one route_db on
 * this thread, standing in for the registrar. An operation may run with
 * the writer's allocation number k failing (rt_fail_after). After every
 * step rt_check must pass (it recounts everything and checks every index
 * and count), every probed topic must answer or say not found, and the
 * cluster info and topic lists must build. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <urcu.h>

#include "rmqns/buf.h"
#include "rmqns/err.h"
#include "rmqns/log.h"
#include "rmqns/race.h"
#include "rmqns/regbody.h"
#include "rmqns/route.h"
#include "route_priv.h"

/* FUZZ_ROUTE_TRACE=1 prints each step, to read a finding. */
static bool tracing;
#define TRACE(...) do { if (tracing) fprintf(stderr, __VA_ARGS__); } while (0)

#define REQUIRE(cond) do { if (!(cond)) { fprintf(stderr, "failed: %s\n", #cond); abort(); } } while (0)

static const char *const clusters[] = { "c0", "c1", "c2" };
static const char *const groups[] = { "g0", "g1", "g2", "g3", "g4" };
static const char *const addrs[] = { "10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.3:10911",
				     "10.0.0.4:10911", "10.0.0.5:10911", "10.0.0.6:10911" };
static const char *const topics[] = { "T0", "T1", "T2", "T3", "T4", "%RETRY%G",
				      "rmq_sys_SYNC_BROKER_MEMBER_g0", "TBW102" };
static const int32_t perms[] = { 6, 2, 4, 0, 7, 3 };
#define N(a) (sizeof(a) / sizeof((a)[0]))

struct script {
	const uint8_t *p;
	size_t left;
};

static uint8_t next(struct script *s)
{
	if (!s->left)
		return 0;
	s->left--;
	return *s->p++;
}

static uint64_t now_ms;

static void check(struct route_db *db, const char *after)
{
	char err[1024];
	if (rt_check(db, err, sizeof(err)) != 0) {
		fprintf(stderr, "rt_check after %s: %s\n", after, err);
		abort();
	}
}

static void probe(struct route_db *db, uint8_t which, bool lists)
{
	struct buf scratch = BUF_INIT, out = BUF_INIT;
	const uint8_t *body;
	size_t len;

	state_read_lock();
	for (int form = 0; form < 2; form++) {
		struct route_query q = { topics[which % N(topics)], (enum jw_form)form, (which >> 4) & 1, NULL,
					 (which & 0x20) ? "z1" : NULL };
		int rc = route_topic_body(db, &q, &body, &len, &scratch);
		if (rc != RMQNS_OK && rc != RMQNS_ENOTFOUND) {
			fprintf(stderr, "route_topic_body(%s): %d\n", q.topic, rc);
			abort();
		}
		REQUIRE(rc != RMQNS_OK || (len > 2 && body[0] == '{' && body[len - 1] == '}'));
	}
	REQUIRE(route_cluster_info(db, &out) == RMQNS_OK);
	if (!lists)
		goto out;
	out.len = 0;
	REQUIRE(route_topics_all(db, &out) == RMQNS_OK);
	out.len = 0;
	REQUIRE(route_topics_by_cluster(db, clusters[which % N(clusters)], &out) == RMQNS_OK);
	out.len = 0;
	REQUIRE(route_member_group(db, clusters[which % N(clusters)], groups[which % N(groups)], &out) ==
		RMQNS_OK);
out:
	state_read_unlock();
	buf_free(&scratch);
	buf_free(&out);
}

/* A plain-JSON RegisterBrokerBody: the topics in `mask`, values from the
 * script, optionally filter servers and a static-topic mapping. */
static char *make_body(struct script *s, uint8_t mask, bool extras)
{
	struct buf b = BUF_INIT;
	uint8_t counter = next(s);
	bool first = true;

	buf_printf(&b, "{\"filterServerList\":[%s],\"topicConfigSerializeWrapper\":{\"dataVersion\":"
		       "{\"counter\":%u,\"stateVersion\":%u,\"timestamp\":%u},\"topicConfigTable\":{",
		   extras ? "\"10.0.0.9:1\"" : "", counter & 0x0f, counter >> 6, 1000u + (counter >> 4));
	for (unsigned i = 0; i < 8; i++) {
		if (!(mask & (1u << i)))
			continue;
		uint8_t v = next(s);
		buf_printf(&b, "%s\"%s\":{\"perm\":%d,\"readQueueNums\":%u,\"topicName\":\"%s\","
			       "\"topicSysFlag\":%u,\"writeQueueNums\":%u}",
			   first ? "" : ",", topics[i], perms[v % N(perms)], 1u + (v >> 4), topics[i],
			   (v >> 3) & 3, 1u + ((v >> 5) & 7));
		first = false;
	}
	buf_append_str(&b, "}");
	if (extras)
		buf_printf(&b, ",\"topicQueueMappingInfoMap\":{\"T0\":{\"bname\":\"g0\",\"currIdMap\":{\"0\":0},"
			       "\"dirty\":false,\"epoch\":%u,\"scope\":\"__global__\",\"topic\":\"T0\","
			       "\"totalQueues\":1}}",
			   counter);
	buf_append_str(&b, "}}");
	buf_terminate(&b);
	return (char *)b.data;
}

static void op_register(struct route_db *db, struct script *s)
{
	uint8_t who = next(s), flags = next(s), mask = next(s);
	char *body = make_body(s, mask, flags & 0x40);
	struct regbody rb;
	char why[160];

	if (!body)
		return;
	REQUIRE(regbody_decode((const uint8_t *)body, strlen(body), false, 441, 0, &rb, why, sizeof(why)) == 0);
	struct route_broker_reg reg = {
		.cluster = clusters[(who >> 6) % N(clusters)],
		.name = groups[who % N(groups)],
		.addr = addrs[(who >> 3) % N(addrs)],
		.ha_addr = (flags & 0x80) ? "10.0.0.9:10912" : NULL,
		.id = (flags & 3),
		.new_style = flags & 4,
		.acting_master = flags & 8,
		.zone = (flags & 0x10) ? "z1" : NULL,
		.timeout_ms = (flags & 0x20) ? 2000 : 0,
		.conn_id = 1 + ((who >> 3) % N(addrs)) + ((flags & 0x40) ? 8 : 0),
		.delete_missing_topics = mask & 1,
		.body = &rb,
	};
	struct route_reg_result res;
	memset(&res, 0, sizeof(res));
	/* the body's identity, as the handler gives it: a re-send of the last
	 * body goes undecoded first, in full when the registrar says no */
	reg.body_id.bytes = (const uint8_t *)body;
	reg.body_id.len = strlen(body);
	reg.body_id.version = 441;
	reg.body_id.max_bytes = REGBODY_DEFAULT_MAX_BYTES;
	regbody_fingerprint(reg.body_id.bytes, reg.body_id.len, &reg.body_id.crc, &reg.body_id.hash);
	TRACE("register %s/%s %s id %lld new_style %d acting %d conn %llu delete_missing %d: %s\n", reg.cluster,
	      reg.name, reg.addr, (long long)reg.id, reg.new_style, reg.acting_master,
	      (unsigned long long)reg.conn_id, reg.delete_missing_topics, body);
	int rc = RMQNS_ENOTFOUND;
	rcu_read_lock();
	bool same = route_body_is_last(db, reg.cluster, reg.addr, reg.conn_id, &reg.body_id);
	rcu_read_unlock();
	if (same) {
		reg.body = NULL;
		rc = route_apply_register(db, &reg, now_ms, &res);
		TRACE("  undecoded -> %d\n", rc);
		reg.body = &rb;
	}
	if (rc == RMQNS_ENOTFOUND)
		rc = route_apply_register(db, &reg, now_ms, &res);
	TRACE("  -> %d\n", rc);
	REQUIRE(rc == 0 || rc == RMQNS_ENOMEM);
	if (rc == 0)
		route_reg_result_free(&res);
	regbody_free(&rb);
	free(body);
}

static void op_register_topic(struct route_db *db, struct script *s)
{
	uint8_t t = next(s), n = next(s) % 4;
	struct route_queue_in q[3];
	for (uint8_t i = 0; i < n; i++) {
		uint8_t v = next(s);
		q[i].group = (v & 7) == 7 ? "nobody" : groups[(v & 7) % N(groups)];
		q[i].perm = perms[(v >> 3) % N(perms)];
		q[i].read_queues = v >> 4;
		q[i].write_queues = v >> 5;
		q[i].sysflag = v & 1;
	}
	TRACE("register_topic %s with %u queue sets\n", topics[t % N(topics)], n);
	for (uint8_t i = 0; i < n; i++)
		TRACE("  %s perm %d r %u w %u\n", q[i].group, q[i].perm, q[i].read_queues, q[i].write_queues);
	int rc = route_apply_register_topic(db, topics[t % N(topics)], q, n);
	TRACE("  -> %d\n", rc);
	REQUIRE(rc == 0 || rc == RMQNS_ENOMEM);
}

static void run_op(struct route_db *db, struct script *s, uint8_t op)
{
	uint8_t a;

	TRACE("op %u (fail after %lld)\n", op % 11, (long long)rt_fail_after);
	switch (op % 11) {
	case 0:
	case 1:
		op_register(db, s);
		break;
	case 2:
		a = next(s);
		(void)route_heartbeat(db, clusters[a % N(clusters)], addrs[(a >> 2) % N(addrs)], now_ms);
		break;
	case 3: {
		a = next(s);
		uint8_t c = next(s);
		int rc = route_apply_unregister(db, clusters[a % N(clusters)], addrs[(a >> 2) % N(addrs)],
						groups[c % N(groups)], (c & 0x80) ? 0 : 1 + ((a >> 2) % N(addrs)));
		REQUIRE(rc == 0 || rc == 1 || rc == RMQNS_ENOMEM);
		break;
	}
	case 4:
		a = next(s);
		REQUIRE(route_apply_conn_closed(db, 1 + a % 16) >= 0 || rt_fail_after >= 0);
		break;
	case 5:
		a = next(s);
		now_ms += (uint64_t)a * 100;
		if (a & 1)
			route_hook_tick(db, now_ms);
		else
			(void)route_apply_expire(db, now_ms);
		break;
	case 6: {
		a = next(s);
		int rc = route_apply_delete_topic(db, topics[a % N(topics)],
						  (a & 0x80) ? NULL : clusters[(a >> 3) % N(clusters)]);
		REQUIRE(rc >= 0 || rc == RMQNS_ENOMEM);
		break;
	}
	case 7: {
		a = next(s);
		int rc = route_apply_write_perm(db, groups[a % N(groups)], a & 0x80);
		REQUIRE(rc >= 0 || rc == RMQNS_ENOMEM);
		break;
	}
	case 8:
		op_register_topic(db, s);
		break;
	case 9:
		a = next(s);
		for (unsigned i = 0; i <= (a & 7) && route_hook_idle(db); i++)
			;
		break;
	default: {
		a = next(s);
		struct data_version dv = { a & 3, 1000 + (a >> 2), 0 }, stored;
		bool known, changed;
		route_query_data_version(db, clusters[a % N(clusters)], addrs[(a >> 2) % N(addrs)], &dv,
					 now_ms, &known, &changed, &stored);
		REQUIRE(known || changed);
		break;
	}
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	tracing = getenv("FUZZ_ROUTE_TRACE") != NULL;
	log_set_level(tracing ? LOG_INFO : LOG_ERROR);
	if (!tracing)
		(void)log_set_file("/dev/null"); /* failures are expected here; keep stderr for findings */
	rcu_register_thread();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Creating and tearing down a db waits for RCU grace periods, so one db
 * serves many inputs: each input ends by removing every broker and topic
 * it made, and the db is replaced every DB_RUNS inputs. */
#define DB_RUNS 256
static struct route_db *db;
static unsigned db_runs;

static void empty_db(void)
{
	struct route_stats st;

	for (uint64_t c = 1; c <= 16; c++)
		(void)route_apply_conn_closed(db, c);
	for (size_t i = 0; i < N(topics); i++)
		(void)route_apply_delete_topic(db, topics[i], NULL);
	while (route_hook_idle(db))
		;
	route_hook_tick(db, now_ms);
	check(db, "emptying the db");
	route_stats(db, &st);
	REQUIRE(st.live == 0 && st.topics == 0 && st.queue_entries == 0 && st.dead_entries == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct script s = { data, size };

	if (db && ++db_runs >= DB_RUNS) {
		route_db_destroy(db);
		db = NULL;
	}
	if (!db) {
		/* a small cache so that trimming and retirement run too */
		db = route_db_create(4096);
		REQUIRE(db);
		db_runs = 0;
	}
	now_ms = 1000000;

	for (unsigned step = 0; s.left && step < 32; step++) {
		uint8_t op = next(&s);
		if (op & 0x80) {
			/* this step runs with the allocation k from now failing */
			rt_fail_after = next(&s) & 0x3f;
		}
		run_op(db, &s, op & 0x7f);
		rt_fail_after = -1;
		check(db, "a step");
		probe(db, (uint8_t)(op ^ step), (step & 3) == 3);
	}
	while (route_hook_idle(db))
		;
	check(db, "the final removal");
	empty_db();
	return 0;
}
