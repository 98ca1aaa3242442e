/* The cached list answers (route_list_body): after every kind of change
 * the registrar makes, every list a client gets is byte for byte what a
 * fresh build gives; between changes (heartbeats, same-version
 * registrations) every list comes from the cache. The test thread plays
 * the registrar. */
#include "route_test_util.h"

static struct route_db *db;

static void setup(void)
{
	rcu_register_thread();
	db = route_db_create(0);
	cr_assert(db);
}

static void teardown(void)
{
	route_db_destroy(db);
	rcu_unregister_thread();
}

TestSuite(lists, .init = setup, .fini = teardown);

#define A "10.0.0.1:10911"
#define B "10.0.0.2:10911"
#define C "10.0.0.3:10911"

struct probe {
	enum route_list kind;
	const char *arg;
};

static const struct probe probes[] = {
	{ ROUTE_LIST_CLUSTER_INFO, NULL },
	{ ROUTE_LIST_TOPICS_ALL, NULL },
	{ ROUTE_LIST_TOPICS_BY_CLUSTER, NULL },
	{ ROUTE_LIST_TOPICS_BY_CLUSTER, "CX" },
	{ ROUTE_LIST_TOPICS_BY_CLUSTER, "CY" },
	{ ROUTE_LIST_TOPICS_BY_CLUSTER, "CZ" },
	{ ROUTE_LIST_TOPICS_SYSTEM, NULL },
	{ ROUTE_LIST_TOPICS_UNIT, NULL },
	{ ROUTE_LIST_TOPICS_UNIT_SUB, NULL },
	{ ROUTE_LIST_TOPICS_UNIT_SUB_NOT_UNIT, NULL },
};
#define N_PROBES ((int)(sizeof(probes) / sizeof(probes[0])))

static int fresh_build(const struct probe *p, struct buf *out)
{
	switch (p->kind) {
	case ROUTE_LIST_CLUSTER_INFO:
		return route_cluster_info(db, out);
	case ROUTE_LIST_TOPICS_ALL:
		return route_topics_all(db, out);
	case ROUTE_LIST_TOPICS_BY_CLUSTER:
		return route_topics_by_cluster(db, p->arg, out);
	case ROUTE_LIST_TOPICS_SYSTEM:
		return route_topics_system(db, out);
	case ROUTE_LIST_TOPICS_UNIT:
		return route_topics_unit(db, ROUTE_UNIT, out);
	case ROUTE_LIST_TOPICS_UNIT_SUB:
		return route_topics_unit(db, ROUTE_UNIT_SUB, out);
	case ROUTE_LIST_TOPICS_UNIT_SUB_NOT_UNIT:
		return route_topics_unit(db, ROUTE_UNIT_SUB_NOT_UNIT, out);
	}
	return RMQNS_EINVAL;
}

/* Every list as sent against a fresh build of the same state; how many
 * came from the cache. Compared once out of the read-side section: a
 * failed assertion inside one would leave it open for the teardown. */
static int check_lists(const char *after)
{
	int hits = 0;

	for (int i = 0; i < N_PROBES; i++) {
		struct buf scratch = BUF_INIT, fresh = BUF_INIT, sent = BUF_INIT;
		const uint8_t *body;
		size_t len;
		int rc, frc;

		route_read_lock();
		rc = route_list_body(db, probes[i].kind, probes[i].arg, &body, &len, &scratch);
		if (rc == 0) {
			hits += body != scratch.data;
			rc = buf_append(&sent, body, len);
		}
		frc = fresh_build(&probes[i], &fresh);
		route_read_unlock();
		cr_assert_eq(rc, 0);
		cr_assert_eq(frc, 0);
		cr_assert(sent.len == fresh.len && memcmp(sent.data, fresh.data, sent.len) == 0,
			  "after %s, list %d (%s) is stale:\nsent  %.*s\nfresh %.*s", after, (int)probes[i].kind,
			  probes[i].arg ? probes[i].arg : "-", (int)sent.len, (const char *)sent.data,
			  (int)fresh.len, (const char *)fresh.data);
		buf_free(&sent);
		buf_free(&scratch);
		buf_free(&fresh);
	}
	return hits;
}

/* Checks after a change, then that the next round comes from the cache. */
static void changed(const char *what)
{
	check_lists(what);
	cr_assert_eq(check_lists(what), N_PROBES, "after %s, the second round is all cached", what);
}

static void reg(const char *cluster, const char *name, const char *addr, int64_t id, int64_t counter,
		const char *topics, uint64_t conn, int64_t timeout)
{
	struct tu_reg r = { .cluster = cluster, .name = name, .addr = addr, .id = id, .conn = conn,
			    .timeout = timeout };
	char *body = tu_body(counter, 1000 + counter, 0, topics);
	cr_assert_eq(tu_register(db, &r, body, 1000, NULL), 0);
	free(body);
}

Test(lists, every_change_shows_and_nothing_else_rebuilds)
{
	changed("nothing");

	reg("CX", "gx", A, 0, 1, "X/4/4/6 U1/4/4/6/1 U2/4/4/6/2 U3/4/4/6/3", 1, 3000);
	changed("the first registration");
	reg("CY", "gy", B, 0, 1, "Y/4/4/6 X/4/4/6", 2, 120000);
	changed("a second cluster");

	/* liveness without change: every list stays cached */
	route_read_lock();
	cr_assert(route_heartbeat(db, "CX", A, 1500));
	struct data_version dv = { 1, 1001, 0 }, st;
	bool known, chg;
	route_query_data_version(db, "CY", B, &dv, 1500, &known, &chg, &st);
	route_read_unlock();
	reg("CX", "gx", A, 0, 1, "X/4/4/6 U1/4/4/6/1 U2/4/4/6/2 U3/4/4/6/3", 1, 3000);
	cr_assert_eq(check_lists("heartbeats and a same-version registration"), N_PROBES,
		     "nothing changed, nothing rebuilt");

	reg("CX", "gx", A, 0, 2, "X/4/4/6 U1/4/4/6/2 U3/4/4/6/3 X2/4/4/6", 1, 3000);
	changed("a new data version (topic added, unit flags changed)");
	reg("CX", "gx", C, 1, 2, "X/4/4/6 U1/4/4/6/2 U3/4/4/6/3 X2/4/4/6", 3, 120000);
	changed("a slave joining");

	cr_assert_gt(route_apply_write_perm(db, "gx", false), 0);
	changed("wipe write perm");
	cr_assert_gt(route_apply_write_perm(db, "gx", true), 0);
	changed("add write perm");

	struct route_queue_in q[1] = { { "gy", 2, 2, 6, 0 } };
	route_apply_register_topic(db, "N", q, 1);
	changed("a topic registered on the name server");
	struct route_queue_in qu[1] = { { "gy", 2, 2, 6, 1 } };
	route_apply_register_topic(db, "NU", qu, 1);
	changed("a unit topic registered on the name server");

	route_apply_delete_topic(db, "X", "CY");
	changed("a topic deleted in one cluster");
	route_apply_delete_topic(db, "X2", NULL);
	changed("a topic deleted");

	cr_assert_eq(route_apply_unregister(db, "CX", C, "gx", 3), 1);
	changed("a slave unregistered");

	reg("CZ", "gz", C, 0, 1, "Z/4/4/6 Z2/4/4/6", 9, 120000);
	changed("a third cluster");
	cr_assert_eq(route_apply_conn_closed(db, 9), 1);
	changed("a connection closed");
	tu_settle(db);
	changed("the clean-up after a close");

	cr_assert_eq(route_apply_expire(db, 5000), 1);
	changed("an expiry");
	tu_settle(db);
	changed("the clean-up after an expiry");

	reg("CX", "gy", B, 0, 3, "Y/4/4/6 Y2/4/4/6", 2, 120000);
	changed("a group moving to another cluster");
	cr_assert_eq(route_apply_unregister(db, "CX", B, "gy", 2), 1);
	tu_settle(db);
	changed("the last broker leaving");
}
