/* Readers against the single writer: reader threads ask for routes (both
 * forms, cached and not), cluster info and topic lists (built and
 * cached), and refresh
 * liveness, while the test thread, standing in for the registrar,
 * registers, re-registers with new versions, wipes and adds perms, deletes
 * topics, unregisters and trims a small cache. Every answer must parse and
 * name only groups and perms that existed. A plain program (exit 0 = pass)
 * so that it runs under ThreadSanitizer, where Criterion cannot start. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <urcu.h>

#include "rmqns/buf.h"
#include "rmqns/err.h"
#include "rmqns/json_body.h"
#include "rmqns/json_tree.h"
#include "rmqns/race.h"
#include "rmqns/regbody.h"
#include "rmqns/route.h"
#include "reader_loop.h"

#define GROUPS 6
#define TOPICS 40
#define ROUNDS 150
#define READERS 3

static struct route_db *db;
static atomic_bool stop;
static atomic_long answers, bad;

static void fail(const char *what, const char *detail)
{
	fprintf(stderr, "check failed: %s: %.300s\n", what, detail ? detail : "");
	atomic_fetch_add(&bad, 1);
}

static void check_route(const uint8_t *body, size_t len)
{
	int err = 0;
	json_t *j = json_body_parse(body, len, &err), *v;
	size_t i;

	if (!j) {
		fail("route body parses", (const char *)body);
		return;
	}
	json_array_foreach(json_object_get(j, "queueDatas"), i, v) {
		const char *g = json_string_value(json_object_get(v, "brokerName"));
		json_int_t perm = json_integer_value(json_object_get(v, "perm"));
		if (!g || strncmp(g, "g", 1) != 0 || (perm != 4 && perm != 6 && perm != 7 && perm != 5))
			fail("queue entry", (const char *)body);
	}
	if (json_array_size(json_object_get(j, "brokerDatas")) == 0)
		fail("a found route has broker data", (const char *)body);
	json_decref(j);
}

/* One reader turn (reader_loop.h). */
static void read_once(unsigned *seed, struct buf *scratch, struct buf *out)
{
	char topic[32];
	const uint8_t *body;
	size_t len;
	snprintf(topic, sizeof(topic), "t%d", rand_r(seed) % TOPICS);
	struct route_query q = { topic, (enum jw_form)(rand_r(seed) & 1), rand_r(seed) & 1,
				 (rand_r(seed) % 5) == 0 ? "g0:4" : NULL, NULL };
	state_read_lock();
	int rc = route_topic_body(db, &q, &body, &len, scratch);
	if (rc == 0)
		check_route(body, len);
	else if (rc != RMQNS_ENOTFOUND)
		fail("route_topic_body", rmqns_strerror(rc));
	state_read_unlock();

	out->len = 0;
	state_read_lock();
	switch (rand_r(seed) % 6) {
	case 4:
	case 5: {
		/* the cached lists: installed and replaced by the readers */
		enum route_list kind = (enum route_list)(rand_r(seed) % 7);
		rc = route_list_body(db, kind, "C", &body, &len, scratch);
		if (rc == 0 && buf_append(out, body, len))
			rc = RMQNS_ENOMEM;
		break;
	}
	case 0:
		rc = route_cluster_info(db, out);
		break;
	case 1:
		rc = route_topics_all(db, out);
		break;
	case 2:
		rc = route_topics_system(db, out);
		break;
	default: {
		char addr[32];
		struct data_version dv = { 1, 1, 0 }, st;
		bool known, changed;
		snprintf(addr, sizeof(addr), "10.0.0.%d:1", rand_r(seed) % GROUPS);
		route_heartbeat(db, "C", addr, 5);
		route_query_data_version(db, "C", addr, &dv, 5, &known, &changed, &st);
		rc = route_member_group(db, "C", "g1", out);
	}
	}
	state_read_unlock();
	if (rc)
		fail("list", rmqns_strerror(rc));
	else if (out->len) {
		int err;
		json_t *j = json_body_parse(out->data, out->len, &err);
		if (!j)
			fail("list parses", NULL);
		json_decref(j);
	}
	atomic_fetch_add(&answers, 1);
}

static void *reader(void *arg)
{
	reader_loop(&stop, (unsigned)(uintptr_t)arg, read_once);
	return NULL;
}

static int reg(int g, int counter, int perm)
{
	struct buf b = BUF_INIT;
	char name[16], addr[32], why[128];
	struct regbody rb;
	struct route_reg_result res;

	buf_printf(&b, "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":"
		       "{\"counter\":%d,\"timestamp\":1},\"topicConfigTable\":{", counter);
	for (int t = 0; t < TOPICS; t++)
		if ((t + g) % 3 != 0)
			buf_printf(&b, "%s\"t%d\":{\"perm\":%d,\"readQueueNums\":%d,\"topicName\":\"t%d\",\"writeQueueNums\":4}",
				   b.data[b.len - 1] == '{' ? "" : ",", t, perm, 1 + counter % 8, t);
	buf_append_str(&b, "}}}");
	snprintf(name, sizeof(name), "g%d", g);
	snprintf(addr, sizeof(addr), "10.0.0.%d:1", g);
	if (regbody_decode(b.data, b.len, false, 441, 0, &rb, why, sizeof(why))) {
		fail("decode", why);
		buf_free(&b);
		return -1;
	}
	struct route_broker_reg r = { .cluster = "C", .name = name, .addr = addr, .ha_addr = "h:1", .id = 0,
				      .conn_id = (uint64_t)g + 1, .body = &rb };
	int rc = route_apply_register(db, &r, 1, &res);
	route_reg_result_free(&res);
	regbody_free(&rb);
	buf_free(&b);
	return rc;
}

int main(void)
{
	pthread_t th[READERS];

	rcu_register_thread();
	db = route_db_create(16 << 10); /* small: trimming runs */
	if (!db)
		return 1;
	for (int g = 0; g < GROUPS; g++)
		reg(g, 1, 6);
	for (int i = 0; i < READERS; i++)
		pthread_create(&th[i], NULL, reader, (void *)(uintptr_t)(i + 1));
	for (int round = 0; round < ROUNDS; round++) {
		int g = round % GROUPS;
		char name[16], addr[32], topic[16];
		snprintf(name, sizeof(name), "g%d", g);
		snprintf(addr, sizeof(addr), "10.0.0.%d:1", g);
		snprintf(topic, sizeof(topic), "t%d", round % TOPICS);
		if (reg(g, round + 2, round % 2 ? 6 : 7))
			fail("register", NULL);
		route_apply_write_perm(db, name, round % 3 == 0);
		if (round % 7 == 0)
			route_apply_delete_topic(db, topic, round % 2 ? "C" : NULL);
		if (round % 11 == 0) {
			route_apply_unregister(db, "C", addr, name, 0);
			reg(g, round + 3, 6);
		}
		if (round % 13 == 0)
			route_apply_conn_closed(db, (uint64_t)((round / 13) % GROUPS) + 1);
		route_hook_tick(db, 2);
	}
	/* On a loaded machine the writer can finish before every reader has
	 * been scheduled; give them (boundedly) the time to answer at all. */
	for (int waited = 0; waited < 1000 && atomic_load(&answers) < READERS; waited++)
		usleep(10000);
	atomic_store(&stop, true);
	for (int i = 0; i < READERS; i++)
		pthread_join(th[i], NULL);
	route_db_destroy(db);
	rcu_unregister_thread();
	if (atomic_load(&answers) < READERS) {
		fprintf(stderr, "readers made no progress\n");
		return 1;
	}
	printf("%ld answers checked, %ld bad\n", atomic_load(&answers), atomic_load(&bad));
	return atomic_load(&bad) ? 1 : 0;
}
