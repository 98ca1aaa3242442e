/* Reclamation and table resizing while readers read: the test thread,
 * standing in for the registrar, registers groups of thousands of topics
 * (the topic table grows), replaces them with new versions, deletes and
 * unregisters them (replaced objects are freed after grace periods, the
 * table shrinks), while reader threads ask for routes, cluster info and
 * topic lists. Every answer must parse. In-process, a plain program (exit
 * 0 = pass): its point is the ThreadSanitizer build with
 * -DRMQNS_TSAN_RECLAIM (.ci/run), where objects are really freed through
 * call_rcu and the table really resizes; other builds run it as a plain
 * stress test. */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
#include "route_priv.h"

#define READERS 2
#define ROUNDS 6
#define BIG 5000 /* topics a group: past 2,048 the table grows */

static struct route_db *db;
static atomic_bool stop;
static atomic_long answers, bad;

static void check_body(const char *what, const uint8_t *body, size_t len)
{
	int err = 0;
	json_t *j = json_body_parse(body, len, &err);
	if (!j) {
		fprintf(stderr, "%s: answer does not parse: %.200s\n", what, (const char *)body);
		atomic_fetch_add(&bad, 1);
		return;
	}
	json_decref(j);
	atomic_fetch_add(&answers, 1);
}

/* One reader turn (reader_loop.h). */
static void read_once(unsigned *seed, struct buf *scratch, struct buf *out)
{
	char topic[32];
	*seed = *seed * 1103515245u + 12345u;
	snprintf(topic, sizeof topic, "G%u-%u", (*seed >> 8) % 3, (*seed >> 12) % BIG);
	struct route_query q = { topic, (enum jw_form)((*seed >> 4) & 1), false, NULL, NULL };
	const uint8_t *body;
	size_t len;
	state_read_lock();
	int rc = route_topic_body(db, &q, &body, &len, scratch);
	if (rc == RMQNS_OK)
		check_body("route", body, len);
	else if (rc != RMQNS_ENOTFOUND)
		atomic_fetch_add(&bad, 1);
	if ((*seed & 63) == 0) {
		out->len = 0;
		if (route_cluster_info(db, out) == RMQNS_OK)
			check_body("cluster info", out->data, out->len);
		else
			atomic_fetch_add(&bad, 1);
	}
	if ((*seed & 1023) == 0) {
		out->len = 0;
		if (route_topics_all(db, out) == RMQNS_OK)
			check_body("topic list", out->data, out->len);
		else
			atomic_fetch_add(&bad, 1);
	}
	state_read_unlock();
}

static void *reader(void *arg)
{
	reader_loop(&stop, (unsigned)(uintptr_t)arg, read_once);
	return NULL;
}

static char *big_body(int group, int counter, int n)
{
	struct buf b = BUF_INIT;
	buf_printf(&b, "{\"topicConfigSerializeWrapper\":{\"dataVersion\":{\"counter\":%d,\"timestamp\":%d},"
		       "\"topicConfigTable\":{",
		   counter, counter);
	for (int i = 0; i < n; i++)
		buf_printf(&b, "%s\"G%d-%d\":{\"perm\":%d,\"readQueueNums\":%d,\"topicName\":\"G%d-%d\","
			       "\"writeQueueNums\":4}",
			   i ? "," : "", group, i, counter % 2 ? 6 : 4, 1 + counter % 8, group, i);
	buf_append_str(&b, "}}}");
	buf_terminate(&b);
	return (char *)b.data;
}

static int reg(int group, int counter, int n)
{
	char name[16], addr[32];
	char *body = big_body(group, counter, n);
	struct regbody rb;
	char why[160];
	int rc = regbody_decode((const uint8_t *)body, strlen(body), false, 441, 0, &rb, why, sizeof(why));
	free(body);
	if (rc)
		return rc;
	snprintf(name, sizeof name, "g%d", group);
	snprintf(addr, sizeof addr, "10.0.0.%d:10911", group + 1);
	struct route_broker_reg r = { .cluster = "c1", .name = name, .addr = addr, .id = 0,
				      .conn_id = (uint64_t)group + 1, .body = &rb };
	struct route_reg_result res;
	rc = route_apply_register(db, &r, route_now_ms(), &res);
	if (rc == 0)
		route_reg_result_free(&res);
	regbody_free(&rb);
	return rc;
}

int main(void)
{
	pthread_t th[READERS];
	char err[512];
	int failed = 0;

	rcu_register_thread();
	db = route_db_create(256u << 10); /* small: trimming retires cache entries */
	if (!db)
		return 1;
	for (int i = 0; i < READERS; i++)
		pthread_create(&th[i], NULL, reader, (void *)(uintptr_t)(i + 1));
	for (int round = 0; round < ROUNDS && !failed; round++) {
		for (int g = 0; g < 3; g++)
			failed |= reg(g, round * 2 + 1, BIG) != 0;
		/* new versions replace every group and queue list */
		for (int g = 0; g < 3; g++)
			failed |= reg(g, round * 2 + 2, BIG) != 0;
		route_hook_tick(db, route_now_ms());
		/* half the topics of one group go, then whole groups leave */
		for (int i = 0; i < BIG; i += 2) {
			char t[32];
			snprintf(t, sizeof t, "G0-%d", i);
			route_apply_delete_topic(db, t, NULL);
		}
		route_apply_conn_closed(db, 1);
		route_apply_unregister(db, "c1", "10.0.0.2:10911", "g1", 0);
		while (route_hook_idle(db))
			;
		route_hook_tick(db, route_now_ms());
		if (rt_check(db, err, sizeof err) != 0) {
			fprintf(stderr, "round %d: %s\n", round, err);
			failed = 1;
		}
		synchronize_rcu(); /* let the callbacks run while readers go on */
	}
	atomic_store(&stop, true);
	for (int i = 0; i < READERS; i++)
		pthread_join(th[i], NULL);
	route_db_destroy(db);
	rcu_unregister_thread();
	fprintf(stderr, "%ld answers, %ld bad\n", atomic_load(&answers), atomic_load(&bad));
	return failed || atomic_load(&bad) || atomic_load(&answers) == 0 ? 1 : 0;
}
