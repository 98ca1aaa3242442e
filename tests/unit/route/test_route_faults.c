/* The route registry when memory runs out, and the cache's byte count.
 * Each scenario is run again and again with the writer's allocation number
 * k failing (k = 0, 1, ... until the change no longer reaches the failure):
 * after every run the tables must pass rt_check, a broker must be either
 * fully registered or fully gone (never its live entry without its routes
 * or the reverse), and the retry the server would make (the next expiry
 * scan, the broker's next registration, the operator's next request) must
 * end in the state a run without failure reaches. */
#include "rmqns/race.h"
#include "route_test_util.h"
#include "route_priv.h"

static struct route_db *db;

static void setup(void)
{
	db = tu_db_open();
}

static void teardown(void)
{
	rt_fail_after = -1;
	rt_test_before_install = NULL;
	tu_db_close(db);
}

TestSuite(faults, .init = setup, .fini = teardown);

#define A "10.0.0.1:10911"
#define B "10.0.0.2:10911"
#define C "10.0.0.3:10911"

static void fresh_db(void)
{
	route_db_destroy(db);
	db = route_db_create(0);
	cr_assert(db);
}

static int reg(const char *name, const char *addr, int64_t id, int64_t counter, const char *topics, bool acting)
{
	struct tu_reg r = { .name = name, .addr = addr, .id = id, .conn = (uint64_t)(addr[7] - '0'), .ha = "ha:1",
			    .timeout = 3000, .new_style = acting, .acting = acting };
	char *body = tu_body(counter, 1000 + counter, 0, topics);
	int rc = tu_register(db, &r, body, 1000, NULL);
	free(body);
	return rc;
}

static const char *const probe_topics[] = { "T0", "T1", "T2", "S", "U", "X" };

/* What clients can see: cluster info, every probed route, the topic list
 * and the live-broker count. */
static char *snapshot(void)
{
	struct buf b = BUF_INIT;
	struct route_stats st;
	char *ci = tu_cluster_info(db);

	buf_append_str(&b, ci);
	free(ci);
	for (size_t i = 0; i < sizeof(probe_topics) / sizeof(probe_topics[0]); i++) {
		char *r = tu_route(db, probe_topics[i], JW_DEFAULT);
		buf_printf(&b, "\n%s: %s", probe_topics[i], r ? r : "(none)");
		free(r);
	}
	struct buf tl = BUF_INIT;
	state_read_lock();
	cr_assert_eq(route_topics_all(db, &tl), 0);
	state_read_unlock();
	buf_printf(&b, "\nlist: %s", tu_text(&tl));
	buf_free(&tl);
	route_stats(db, &st);
	buf_printf(&b, "\nlive: %u", st.live);
	return tu_text(&b);
}

static void check_tables(const char *what, int k)
{
	char err[256];
	int rc = rt_check(db, err, sizeof(err));
	cr_assert_eq(rc, 0, "%s, allocation %d failing: %s", what, k, err);
}

typedef void (*scene_fn)(void);
typedef int (*op_fn)(void);

enum outcome { ALL_OR_NOTHING, PARTIAL_OK };

/* Runs op on a fresh scene with allocation k failing, for every k that
 * op reaches; retry is what brings the system to the end state after a
 * failure (NULL: op again). */
static void run_with_failures(const char *what, scene_fn scene, op_fn op, op_fn retry, enum outcome oc)
{
	char *before, *after;
	int k, tried = 0;

	fresh_db();
	scene();
	before = snapshot();
	cr_assert_geq(op(), 0, "%s without a failure", what);
	tu_settle(db);
	after = snapshot();
	check_tables(what, -1);
	cr_assert_str_neq(before, after, "%s changes nothing visible", what);

	for (k = 0;; k++) {
		fresh_db();
		scene();
		rt_fail_after = k;
		int rc = op();
		bool reached = rt_fail_after == 0;
		rt_fail_after = -1;
		if (!reached) {
			cr_assert_geq(rc, 0);
			break;
		}
		tried++;
		check_tables(what, k);
		tu_settle(db);
		check_tables(what, k);
		char *mid = snapshot();
		if (oc == ALL_OR_NOTHING)
			cr_assert(strcmp(mid, before) == 0 || strcmp(mid, after) == 0,
				  "%s, allocation %d failing: a state between before and after:\n%s\n--- before:\n%s\n--- after:\n%s",
				  what, k, mid, before, after);
		free(mid);
		cr_assert_geq((retry ? retry : op)(), 0, "%s: the retry fails", what);
		tu_settle(db);
		check_tables(what, k);
		mid = snapshot();
		cr_assert_str_eq(mid, after, "%s, allocation %d failing, then retried", what, k);
		free(mid);
	}
	cr_assert_gt(tried, 0, "%s allocates nothing: the test proves nothing", what);
	free(before);
	free(after);
}

/* ---- scenes ---- */

static void scene_two_groups(void)
{
	/* group a: master A and slave B; group b: master C; T1 shared by both */
	cr_assert_eq(reg("a", A, 0, 1, "T0/4/4/6 T1/4/4/6 S/8/8/6", false), 0);
	cr_assert_eq(reg("a", B, 1, 1, "T0/4/4/6 T1/4/4/6 S/8/8/6", false), 0);
	cr_assert_eq(reg("b", C, 0, 1, "T1/2/2/6 T2/2/2/6 U/2/2/6", false), 0);
}

static void scene_acting_group(void)
{
	cr_assert_eq(reg("a", A, 0, 1, "T0/4/4/6 T1/4/4/6", true), 0);
	cr_assert_eq(reg("a", B, 1, 1, "T0/4/4/6 T1/4/4/6", true), 0);
	cr_assert_eq(reg("b", C, 0, 1, "T1/2/2/6 T2/2/2/6", true), 0);
}

static void scene_empty(void)
{
}

/* ---- operations ---- */

static void refresh(const char *cluster, const char *addr, uint64_t now)
{
	state_read_lock();
	bool known = route_heartbeat(db, cluster, addr, now);
	state_read_unlock();
	cr_assert(known, "%s is not registered", addr);
}

static int op_expire_c(void)
{
	/* everyone but C heard from at 3500; C silent since 1000 */
	refresh("DefaultCluster", A, 3500);
	refresh("DefaultCluster", B, 3500);
	return route_apply_expire(db, 4500);
}

static int retry_expire(void)
{
	return route_apply_expire(db, 4500);
}

static int op_expire_slave(void)
{
	refresh("DefaultCluster", A, 3500);
	refresh("DefaultCluster", C, 3500);
	return route_apply_expire(db, 4500);
}

static int op_close_master(void)
{
	return route_apply_conn_closed(db, 1); /* A (10.0.0.1) registered on connection 1 */
}

static int retry_close_master(void)
{
	/* the live entry stayed: the expiry scan finds it later */
	refresh("DefaultCluster", B, 9000);
	refresh("DefaultCluster", C, 9000);
	return route_apply_expire(db, 9500);
}

static int op_unregister_b(void)
{
	return route_apply_unregister(db, "DefaultCluster", C, "b", 0);
}

static int op_register_new(void)
{
	return reg("c", "10.0.0.4:10911", 0, 1, "T2/1/1/6 X/1/1/6 T0/1/1/6", false);
}

static int retry_register_new(void)
{
	/* the broker re-registers 30 s later with the same body */
	return reg("c", "10.0.0.4:10911", 0, 1, "T2/1/1/6 X/1/1/6 T0/1/1/6", false);
}

static int op_register_first(void)
{
	/* three topics with equal queues: one interned list for all three */
	return reg("a", A, 0, 1, "T0/4/4/6 T1/4/4/6 S/4/4/6", false);
}

static int op_wipe(void)
{
	return route_apply_write_perm(db, "a", false);
}

static int op_delete_topic_in_cluster(void)
{
	return route_apply_delete_topic(db, "T1", "DefaultCluster");
}

/* Each operation under an allocation failure at every step it takes. */
static const struct fault_case {
	const char *what;
	scene_fn scene;
	op_fn op;
	op_fn retry;
	enum outcome oc;
} fault_cases[] = {
	{ "expiry of C", scene_two_groups, op_expire_c, retry_expire, ALL_OR_NOTHING },
	{ "expiry of B", scene_two_groups, op_expire_slave, retry_expire, ALL_OR_NOTHING },
	{ "close of A", scene_acting_group, op_close_master, retry_close_master, ALL_OR_NOTHING },
	{ "unregister of C", scene_two_groups, op_unregister_b, NULL, ALL_OR_NOTHING },
	{ "registration of c", scene_two_groups, op_register_new, retry_register_new, PARTIAL_OK },
	/* found by fuzz_route: the table of interned lists was made by the
	 * first list, and when that allocation failed the list stayed out of
	 * it for good, shared with none of its equals (rt_check: "2 uses for
	 * 3 topics") */
	{ "the first registration", scene_empty, op_register_first, NULL, PARTIAL_OK },
	{ "wipe of a", scene_two_groups, op_wipe, NULL, ALL_OR_NOTHING },
	{ "delete of T1", scene_two_groups, op_delete_topic_in_cluster, NULL, PARTIAL_OK },
};

Test(faults, every_operation_under_failures)
{
	for (size_t i = 0; i < sizeof fault_cases / sizeof fault_cases[0]; i++) {
		const struct fault_case *f = &fault_cases[i];
		run_with_failures(f->what, f->scene, f->op, f->retry, f->oc);
	}
}

/* The removal of a dead group's entries, slice by slice, under failures:
 * what could not be removed stays hidden and is removed on the next try. */
Test(faults, removal_of_a_dead_groups_entries)
{
	struct buf topics = BUF_INIT;
	for (int i = 0; i < 3000; i++)
		buf_printf(&topics, "%sM%d/4/4/6", i ? " " : "", i);
	buf_terminate(&topics);
	for (int k = 0; k < 64; k++) {
		fresh_db();
		/* a and b share every topic, so removing a's entries allocates */
		cr_assert_eq(reg("a", A, 0, 1, (const char *)topics.data, false), 0);
		cr_assert_eq(reg("b", C, 0, 1, (const char *)topics.data, false), 0);
		cr_assert_eq(route_apply_unregister(db, "DefaultCluster", A, "a", 0), 1);
		rt_fail_after = k * 37;
		while (route_hook_idle(db) && rt_fail_after != 0)
			;
		rt_fail_after = -1;
		check_tables("partial removal", k);
		char *r = tu_route(db, "M17", JW_DEFAULT);
		cr_assert_not_null(r);
		cr_expect_null(strstr(r, "\"brokerName\":\"a\""), "a dead group's entry is visible: %s", r);
		free(r);
		tu_settle(db);
		check_tables("removal after the failure", k);
		struct route_stats st;
		route_stats(db, &st);
		cr_expect_eq(st.dead_entries, 0);
		cr_expect_eq(st.queue_entries, 3000);
	}
	buf_free(&topics);
}

/* ---- the cache's byte count ---- */

static void delete_topic_now(struct route_db *d, struct route_topic *t)
{
	(void)t;
	rt_test_before_install = NULL;
	/* the registrar unlinks the topic while a reader is building its answer */
	cr_assert_eq(route_apply_delete_topic(d, "T0", NULL), 0);
}

Test(faults, cache_bytes_exact_when_a_topic_goes_during_an_install)
{
	scene_two_groups();
	rt_test_before_install = delete_topic_now;
	char *r = tu_route(db, "T0", JW_DEFAULT);
	cr_assert_not_null(r, "the reader answers from what it read");
	free(r);
	rt_drain_retired(db);
	struct route_stats st;
	route_stats(db, &st);
	cr_expect_eq(st.cache_bytes, rt_cache_sum(db), "cache_bytes %llu, entries in place %llu",
		     (unsigned long long)st.cache_bytes, (unsigned long long)rt_cache_sum(db));
	cr_expect_eq(st.cache_bytes, 0);
}

Test(faults, cache_bytes_exact_after_churn)
{
	scene_two_groups();
	for (int round = 0; round < 50; round++) {
		char *r = tu_route(db, "T1", round % 2 ? JW_DEFAULT : JW_STANDARD);
		free(r);
		cr_assert_eq(reg("b", C, 0, 2 + round, round % 2 ? "T1/2/2/6 T2/2/2/6" : "T1/3/3/6 U/2/2/6", false), 0);
		r = tu_route(db, "T2", JW_DEFAULT);
		free(r);
	}
	rt_drain_retired(db);
	struct route_stats st;
	route_stats(db, &st);
	cr_expect_eq(st.cache_bytes, rt_cache_sum(db));
}

/* Whether topic's answer in form comes out of the cache. */
static bool served_from_cache(const char *topic, enum jw_form form)
{
	struct buf scratch = BUF_INIT;
	struct route_query q = { topic, form, false, NULL, NULL };
	const uint8_t *body = NULL;
	size_t len = 0;
	state_read_lock();
	int rc = route_topic_body(db, &q, &body, &len, &scratch);
	bool cached = rc == 0 && (scratch.data == NULL || body != scratch.data);
	state_read_unlock();
	buf_free(&scratch);
	cr_assert_eq(rc, 0, "%s: %d", topic, rc);
	return cached;
}

Test(faults, cache_trim_spares_an_entry_read_since_the_last_trim)
{
	cr_assert_eq(reg("a", A, 0, 1, "T0/4/4/6 T1/4/4/6", false), 0);
	cr_assert(!served_from_cache("T0", JW_DEFAULT));
	cr_assert(!served_from_cache("T1", JW_DEFAULT));
	cr_assert(served_from_cache("T0", JW_DEFAULT), "T0 is read again, from the cache");
	/* the budget is now full, so the next trim takes what was not read */
	struct route_stats st;
	route_stats(db, &st);
	db->cache_max = st.cache_bytes;
	rt_cache_trim(db);
	rt_drain_retired(db);
	/* a table this small must be walked once per trim, not round and
	 * round: a second lap would take T0 too */
	cr_expect(served_from_cache("T0", JW_DEFAULT), "T0 was read since the last trim and stays");
	cr_expect(!served_from_cache("T1", JW_DEFAULT), "T1 was not read and goes");
}
