/* Route registry semantics (protocol.md §6), one scenario per test. The
 * test thread plays the registrar: it applies changes directly and reads
 * the answers back as clients would get them. */
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
	tu_db_close(db);
}

TestSuite(route, .init = setup, .fini = teardown);

#define A "10.0.0.1:10911"
#define B "10.0.0.2:10911"
#define C "10.0.0.3:10911"

static void reg_simple(const char *name, const char *addr, int64_t id, int64_t counter, const char *topics,
		       uint64_t conn, uint64_t now)
{
	struct tu_reg r = { .name = name, .addr = addr, .id = id, .conn = conn, .ha = "ha:1" };
	char *body = tu_body(counter, 1000 + counter, 0, topics);
	cr_assert_eq(tu_register(db, &r, body, now, NULL), 0);
	free(body);
}

static char *addrs_of(const char *route_json, const char *group)
{
	json_t *j = tu_json(route_json), *bd;
	size_t i;
	char *out = NULL;
	json_array_foreach(json_object_get(j, "brokerDatas"), i, bd)
		if (strcmp(json_string_value(json_object_get(bd, "brokerName")), group) == 0)
			out = json_dumps(json_object_get(bd, "brokerAddrs"), JSON_SORT_KEYS | JSON_COMPACT);
	json_decref(j);
	return out;
}

/* The topic has a route (in form), and it holds needle. */
static void expect_route_has(const char *topic, enum jw_form form, const char *needle)
{
	char *r = tu_route(db, topic, form);
	cr_expect(r && strstr(r, needle), "%s: %s", topic, r ? r : "(no route)");
	free(r);
}

/* The topic has a route (in form) without needle. */
static void expect_route_lacks(const char *topic, enum jw_form form, const char *needle)
{
	char *r = tu_route(db, topic, form);
	cr_assert_not_null(r, "%s: no route", topic);
	cr_expect_null(strstr(r, needle), "%s: %s", topic, r);
	free(r);
}

static void expect_route(const char *topic, enum jw_form form)
{
	expect_route_has(topic, form, "");
}

/* r registers body at 100 and hears of no master (no masterAddr). */
static void register_without_master(const struct tu_reg *r, const char *body, const char *why)
{
	struct route_reg_result res;
	cr_assert_eq(tu_register(db, r, body, 100, &res), 0);
	cr_expect_null(res.master_addr, "%s", why);
	route_reg_result_free(&res);
}

Test(route, master_then_slave)
{
	struct tu_reg m = { .name = "g", .addr = A, .id = 0, .ha = "10.0.0.1:10912", .conn = 1 };
	struct tu_reg s = { .name = "g", .addr = B, .id = 1, .ha = "10.0.0.2:10912", .conn = 2 };
	struct route_reg_result res;
	char *body = tu_body(1, 1, 0, "T/4/4/6 U/2/2/6");

	register_without_master(&m, body, "a master gets no masterAddr");
	cr_assert_eq(tu_register(db, &s, body, 100, &res), 0);
	cr_expect_eq(res.outcome, ROUTE_REG_DONE);
	cr_assert_not_null(res.master_addr);
	cr_expect_str_eq(res.master_addr, A);
	cr_expect_str_eq(res.ha_addr, "10.0.0.1:10912");
	route_reg_result_free(&res);

	char *r = tu_route(db, "T", JW_STANDARD);
	cr_assert_not_null(r);
	char *a = addrs_of(r, "g");
	cr_expect_str_eq(a, "{\"0\":\"" A "\",\"1\":\"" B "\"}");
	free(a);
	cr_expect_eq(tu_perm(r, "g"), 6);
	free(r);
	free(body);
}

Test(route, slave_before_master)
{
	struct tu_reg s = { .name = "g", .addr = B, .id = 1, .conn = 2 };
	struct tu_reg m = { .name = "g", .addr = A, .id = 0, .ha = "10.0.0.1:10912", .conn = 1 };
	struct route_reg_result res;
	char *body = tu_body(1, 1, 0, "T/4/4/6 U/4/4/6");

	register_without_master(&s, body, "no master yet: no masterAddr");
	/* an old-style slave creates the group but none of its topics */
	char *ci = tu_cluster_info(db);
	cr_expect(strstr(ci, "\"g\":{\"brokerAddrs\":{1:\"" B "\"}") != NULL, "%s", ci);
	free(ci);
	cr_expect_null(tu_route(db, "T", JW_DEFAULT));

	cr_assert_eq(tu_register(db, &m, body, 100, NULL), 0);
	char *r = tu_route(db, "T", JW_DEFAULT);
	cr_assert_not_null(r);
	free(r);
	cr_assert_eq(tu_register(db, &s, body, 200, &res), 0);
	cr_expect_str_eq(res.master_addr, A);
	cr_expect_str_eq(res.ha_addr, "10.0.0.1:10912");
	route_reg_result_free(&res);
	free(body);
}

Test(route, prime_slave_takes_topics_read_only)
{
	struct tu_reg s = { .name = "g", .addr = B, .id = 2, .new_style = true, .acting = true, .conn = 2 };
	char *body = tu_body(1, 1, 0, "T/4/4/6 U/4/4/7");

	cr_assert_eq(tu_register(db, &s, body, 100, NULL), 0);
	char *r = tu_route(db, "U", JW_DEFAULT);
	cr_assert_not_null(r, "a new-style slave with the smallest id is the prime slave");
	cr_expect_eq(tu_perm(r, "g"), 5, "write bit cleared: %s", r);
	free(r);

	/* the acting-master rewrite, only when the option is on */
	struct route_query q = { "T", JW_DEFAULT, true, NULL, NULL };
	r = tu_route_q(db, &q);
	cr_expect(strstr(r, "\"brokerAddrs\":{0:\"" B "\"}") != NULL, "%s", r);
	free(r);
	q.support_acting_master = false;
	r = tu_route_q(db, &q);
	cr_expect(strstr(r, "\"brokerAddrs\":{2:\"" B "\"}") != NULL, "%s", r);
	free(r);
	/* never for the member-sync topics */
	char *body2 = tu_body(2, 2, 0, "rmq_sys_SYNC_BROKER_MEMBER_g/1/1/6 T/4/4/6");
	cr_assert_eq(tu_register(db, &s, body2, 100, NULL), 0);
	q.topic = "rmq_sys_SYNC_BROKER_MEMBER_g";
	q.support_acting_master = true;
	r = tu_route_q(db, &q);
	cr_expect(strstr(r, "{2:\"" B "\"}") != NULL, "%s", r);
	free(r);
	free(body);
	free(body2);
}

Test(route, old_style_slave_alone_has_no_route)
{
	reg_simple("g", B, 1, 1, "T/4/4/6 U/4/4/6", 1, 100);
	cr_expect_null(tu_route(db, "T", JW_DEFAULT));
}

Test(route, address_change_for_broker_id)
{
	reg_simple("g", A, 0, 1, "T/4/4/6 U/4/4/6", 1, 100);
	reg_simple("g", B, 0, 1, "T/4/4/6 U/4/4/6", 2, 100);
	char *r = tu_route(db, "T", JW_STANDARD);
	char *a = addrs_of(r, "g");
	cr_expect_str_eq(a, "{\"0\":\"" B "\"}");
	free(a);
	free(r);
	/* the old address's live entry stays until it expires or closes */
	struct data_version dv = { 1, 1001, 0 }, st;
	bool known, changed;
	state_read_lock();
	route_query_data_version(db, "DefaultCluster", A, &dv, 100, &known, &changed, &st);
	state_read_unlock();
	cr_expect(known && !changed);
}

Test(route, promoted_slave_at_same_address_keeps_one_id)
{
	reg_simple("g", B, 1, 1, "T/4/4/6 U/4/4/6", 1, 100);
	reg_simple("g", B, 0, 2, "T/4/4/6 U/4/4/6", 1, 100);
	expect_route_has("T", JW_DEFAULT, "\"brokerAddrs\":{0:\"" B "\"}");
}

Test(route, unchanged_data_version_changes_nothing_but_new_topics)
{
	reg_simple("g", A, 0, 1, "T/4/4/6 U/4/4/6", 1, 100);
	struct buf s = BUF_INIT;
	const uint8_t *b1, *b2;
	size_t l1, l2;
	struct route_query q = { "T", JW_STANDARD, false, NULL, NULL };

	state_read_lock();
	cr_assert_eq(route_topic_body(db, &q, &b1, &l1, &s), 0);
	cr_assert_eq(route_topic_body(db, &q, &b1, &l1, &s), 0);
	cr_expect_neq((void *)b1, (void *)s.data, "second read comes from the cache");
	state_read_unlock();

	/* same DataVersion: T's new counts are ignored, the new topic V is
	 * taken (5.x), and T's cached answer survives */
	reg_simple("g", A, 0, 1, "T/8/8/6 U/4/4/6 V/2/2/6", 1, 200);
	state_read_lock();
	cr_assert_eq(route_topic_body(db, &q, &b2, &l2, &s), 0);
	cr_expect_eq((void *)b2, (void *)b1, "the cached answer was not invalidated");
	state_read_unlock();
	expect_route_has("T", JW_STANDARD, "\"readQueueNums\":4");
	expect_route("V", JW_STANDARD);
	buf_free(&s);
}

Test(route, changed_data_version_applies_body)
{
	reg_simple("g", A, 0, 1, "T/4/4/6 U/4/4/6", 1, 100);
	reg_simple("g", A, 0, 2, "T/8/8/6 U/4/4/6", 1, 200);
	expect_route_has("T", JW_STANDARD, "\"readQueueNums\":8");
	/* a topic left out of a newer body stays */
	reg_simple("g", A, 0, 3, "T/8/8/6 W/1/1/6", 1, 300);
	expect_route("U", JW_STANDARD);
}

/* A body re-sent unchanged under new DataVersions is skipped only while
 * nothing else touched the table: a deleted topic comes back, a changed
 * value is taken, another group's change is noticed. */
Test(route, unchanged_body_new_data_version_after_other_changes)
{
	reg_simple("g", A, 0, 1, "T/4/4/6 U/4/4/6", 1, 100);
	reg_simple("g", A, 0, 2, "T/4/4/6 U/4/4/6", 1, 200);
	cr_expect_eq(route_apply_delete_topic(db, "T", NULL), 0);
	cr_expect_null(tu_route(db, "T", JW_DEFAULT));
	reg_simple("g", A, 0, 3, "T/4/4/6 U/4/4/6", 1, 300);
	char *r = tu_route(db, "T", JW_DEFAULT);
	cr_expect_not_null(r, "the deleted topic is back");
	free(r);
	reg_simple("g", A, 0, 4, "T/4/4/6 U/2/2/6", 1, 400);
	r = tu_route(db, "U", JW_STANDARD);
	cr_expect(r && strstr(r, "\"readQueueNums\":2") != NULL, "%s", r ? r : "(none)");
	free(r);
	reg_simple("h", B, 0, 1, "U/4/4/6 V/4/4/6", 2, 500);
	cr_expect_eq(route_apply_write_perm(db, "g", false), 2);
	reg_simple("g", A, 0, 5, "T/4/4/6 U/2/2/6", 1, 600);
	r = tu_route(db, "U", JW_DEFAULT);
	cr_expect_eq(tu_perm(r, "g"), 6, "the wiped write bit is restored");
	cr_expect_eq(tu_perm(r, "h"), 6);
	free(r);
}

Test(route, expiry_removes_silent_broker)
{
	struct tu_reg r = { .name = "g", .addr = A, .id = 0, .timeout = 3000, .conn = 1 };
	char *body = tu_body(1, 1, 0, "T/4/4/6 U/4/4/6");
	cr_assert_eq(tu_register(db, &r, body, 1000, NULL), 0);
	reg_simple("h", B, 0, 1, "T/4/4/6 X/4/4/6", 2, 1000); /* default 120 s timeout */

	cr_expect_eq(route_apply_expire(db, 4000), 0, "last-seen + timeout == now: not yet");
	cr_expect_eq(route_apply_expire(db, 4001), 1);
	char *rt = tu_route(db, "U", JW_DEFAULT);
	cr_expect_null(rt, "the group's only topic went with it");
	rt = tu_route(db, "T", JW_STANDARD);
	cr_assert_not_null(rt);
	cr_expect_null(strstr(rt, "\"g\""), "%s", rt);
	free(rt);
	char *ci = tu_cluster_info(db);
	cr_expect_null(strstr(ci, "\"g\""), "%s", ci);
	free(ci);
	cr_expect_eq(route_apply_expire(db, 121001), 1);
	ci = tu_cluster_info(db);
	cr_expect_str_eq(ci, "{\"brokerAddrTable\":{},\"clusterAddrTable\":{}}");
	free(ci);
	free(body);
}

static uint64_t closed_ids[8];
static int closed_n;

static void record_close(void *arg, uint64_t conn_id)
{
	cr_expect_eq(arg, &closed_n, "the hook's argument is passed through");
	if (closed_n < 8)
		closed_ids[closed_n] = conn_id;
	closed_n++;
}

Test(route, expiry_asks_to_close_the_broker_connection)
{
	struct tu_reg a = { .name = "g", .addr = A, .id = 0, .timeout = 3000, .conn = 42 };
	struct tu_reg b = { .name = "h", .addr = B, .id = 0, .timeout = 3000, .conn = 0 };
	struct tu_reg c = { .name = "k", .addr = C, .id = 0, .timeout = 9000, .conn = 43 };
	char *body = tu_body(1, 1, 0, "T/4/4/6 U/4/4/6");

	closed_n = 0;
	route_db_set_close_hook(db, record_close, &closed_n);
	cr_assert_eq(tu_register(db, &a, body, 1000, NULL), 0);
	cr_assert_eq(tu_register(db, &b, body, 1000, NULL), 0);
	cr_assert_eq(tu_register(db, &c, body, 1000, NULL), 0);
	cr_expect_eq(route_apply_expire(db, 4000), 0);
	cr_expect_eq(closed_n, 0, "nothing expired, nothing closed");
	cr_expect_eq(route_apply_expire(db, 4001), 2);
	cr_assert_eq(closed_n, 1, "only the broker registered over a connection: %d", closed_n);
	cr_expect_eq(closed_ids[0], 42);
	cr_expect_eq(route_apply_conn_closed(db, 42), 0, "the notice after the close finds nothing");
	route_db_set_close_hook(db, NULL, NULL);
	cr_expect_eq(route_apply_expire(db, 10001), 1);
	cr_expect_eq(closed_n, 1, "no hook, no call");
	free(body);
}

Test(route, heartbeat_and_data_version_query_keep_broker_alive)
{
	struct tu_reg r = { .name = "g", .addr = A, .id = 0, .timeout = 3000, .conn = 1 };
	char *body = tu_body(7, 70, 0, "T/4/4/6 U/4/4/6");
	cr_assert_eq(tu_register(db, &r, body, 1000, NULL), 0);

	state_read_lock();
	cr_expect(route_heartbeat(db, "DefaultCluster", A, 3000));
	cr_expect(!route_heartbeat(db, "OtherCluster", A, 3000), "5.x keys liveness by (cluster, addr)");
	state_read_unlock();
	cr_expect_eq(route_apply_expire(db, 5000), 0);

	struct data_version dv = { 7, 70, 0 }, st = { 0, 0, 0 };
	bool known, changed;
	state_read_lock();
	route_query_data_version(db, "DefaultCluster", A, &dv, 5500, &known, &changed, &st);
	state_read_unlock();
	cr_expect(known && !changed);
	cr_expect_eq(st.counter, 7);
	cr_expect_eq(route_apply_expire(db, 8000), 0);
	dv.counter = 8;
	state_read_lock();
	route_query_data_version(db, "DefaultCluster", A, &dv, 8000, &known, &changed, &st);
	state_read_unlock();
	cr_expect(known && changed, "a different version is reported changed, and still refreshes");
	cr_expect_eq(route_apply_expire(db, 10500), 0);
	cr_expect_eq(route_apply_expire(db, 11001), 1);
	free(body);
}

Test(route, connection_close_removes_every_broker_on_it)
{
	reg_simple("g1", A, 0, 1, "T/4/4/6 U/4/4/6", 7, 100);
	reg_simple("g2", B, 0, 1, "T/4/4/6 U/4/4/6", 7, 100);
	reg_simple("g3", C, 0, 1, "T/4/4/6 U/4/4/6", 8, 100);

	cr_expect_eq(route_apply_conn_closed(db, 99), 0, "a connection that registered nothing");
	cr_expect_eq(route_apply_conn_closed(db, 7), 2);
	char *ci = tu_cluster_info(db);
	cr_expect_null(strstr(ci, "\"g1\""), "%s", ci);
	cr_expect_null(strstr(ci, "\"g2\""), "%s", ci);
	cr_expect_not_null(strstr(ci, "\"g3\""), "%s", ci);
	free(ci);
}

Test(route, stale_unregister_and_close_spare_a_re_registered_broker)
{
	reg_simple("g", A, 0, 1, "T/4/4/6 U/4/4/6", 1, 100);
	reg_simple("g", A, 0, 1, "T/4/4/6 U/4/4/6", 2, 200); /* came back on a new connection */

	cr_expect_eq(route_apply_unregister(db, "DefaultCluster", A, "g", 1), 0, "stale unregister");
	cr_expect_eq(route_apply_conn_closed(db, 1), 0, "stale close");
	expect_route("T", JW_DEFAULT);
	cr_expect_eq(route_apply_unregister(db, "DefaultCluster", A, "g", 2), 1);
	cr_expect_null(tu_route(db, "T", JW_DEFAULT));
}

Test(route, unregister_removes_by_address)
{
	reg_simple("g", A, 0, 1, "T/4/4/6 U/4/4/6", 1, 100);
	reg_simple("g", B, 1, 1, "T/4/4/6 U/4/4/6", 2, 100);
	/* brokerAddr A with brokerId 1: 5.x removes by address */
	route_apply_unregister(db, "DefaultCluster", A, "g", 0);
	char *r = tu_route(db, "T", JW_DEFAULT);
	cr_assert_not_null(r, "the topic stays while the group has an address");
	cr_expect(strstr(r, "\"brokerAddrs\":{1:\"" B "\"}") != NULL, "%s", r);
	free(r);
}

Test(route, unregister_of_acting_master_group_master_clears_write)
{
	struct tu_reg m = { .name = "g", .addr = A, .id = 0, .new_style = true, .acting = true, .conn = 1 };
	struct tu_reg s = { .name = "g", .addr = B, .id = 1, .new_style = true, .acting = true, .conn = 2 };
	char *body = tu_body(1, 1, 0, "T/4/4/6 U/4/4/6");
	cr_assert_eq(tu_register(db, &m, body, 100, NULL), 0);
	cr_assert_eq(tu_register(db, &s, body, 100, NULL), 0);
	route_apply_unregister(db, "DefaultCluster", A, "g", 1);
	char *r = tu_route(db, "T", JW_DEFAULT);
	cr_expect_eq(tu_perm(r, "g"), 4, "%s", r);
	free(r);
	free(body);
}

Test(route, wipe_and_add_write_perm)
{
	reg_simple("g", A, 0, 1, "P6/4/4/6 P7/4/4/7 P4/4/4/4", 1, 100);
	reg_simple("h", B, 0, 1, "P6/4/4/6 Q/4/4/6", 2, 100);

	cr_expect_eq(route_apply_write_perm(db, "g", false), 3);
	cr_expect_eq(route_apply_write_perm(db, "g", false), 3, "touched topics count again");
	cr_expect_eq(route_apply_write_perm(db, "nosuch", false), 0);
	char *r6 = tu_route(db, "P6", JW_DEFAULT), *r7 = tu_route(db, "P7", JW_DEFAULT),
	     *r4 = tu_route(db, "P4", JW_DEFAULT);
	cr_expect_eq(tu_perm(r6, "g"), 4);
	cr_expect_eq(tu_perm(r6, "h"), 6, "other groups untouched");
	cr_expect_eq(tu_perm(r7, "g"), 5);
	cr_expect_eq(tu_perm(r4, "g"), 4);
	free(r6), free(r7), free(r4);

	reg_simple("g", A, 0, 1, "P6/4/4/6 P7/4/4/7 P4/4/4/4", 1, 200); /* same DataVersion */
	r7 = tu_route(db, "P7", JW_DEFAULT);
	cr_expect_eq(tu_perm(r7, "g"), 5, "survives a same-version registration");
	free(r7);

	cr_expect_eq(route_apply_write_perm(db, "g", true), 3);
	r4 = tu_route(db, "P4", JW_DEFAULT);
	r7 = tu_route(db, "P7", JW_DEFAULT);
	cr_expect_eq(tu_perm(r4, "g"), 6, "ADD sets READ|WRITE exactly");
	cr_expect_eq(tu_perm(r7, "g"), 6);
	free(r4), free(r7);

	reg_simple("g", A, 0, 2, "P6/4/4/6 P7/4/4/7 P4/4/4/4", 1, 300);
	r4 = tu_route(db, "P4", JW_DEFAULT);
	r7 = tu_route(db, "P7", JW_DEFAULT);
	cr_expect_eq(tu_perm(r4, "g"), 4, "a new DataVersion restores the body's perms");
	cr_expect_eq(tu_perm(r7, "g"), 7);
	free(r4), free(r7);
}

Test(route, delete_topic_without_cluster)
{
	reg_simple("g", A, 0, 1, "T/4/4/6 U/4/4/6", 1, 100);
	cr_expect_eq(route_apply_delete_topic(db, "T", NULL), 0);
	cr_expect_null(tu_route(db, "T", JW_DEFAULT));
	cr_expect_eq(route_apply_delete_topic(db, "U", ""), 0);
	cr_expect_null(tu_route(db, "U", JW_DEFAULT));
	cr_expect_eq(route_apply_delete_topic(db, "nosuch", NULL), 0);
}

Test(route, delete_topic_with_cluster)
{
	struct tu_reg x = { .cluster = "CX", .name = "gx", .addr = A, .id = 0, .conn = 1 };
	struct tu_reg y = { .cluster = "CY", .name = "gy", .addr = B, .id = 0, .conn = 2 };
	char *body = tu_body(1, 1, 0, "T/4/4/6 U/4/4/6");
	cr_assert_eq(tu_register(db, &x, body, 100, NULL), 0);
	cr_assert_eq(tu_register(db, &y, body, 100, NULL), 0);

	route_apply_delete_topic(db, "T", "NoSuchCluster");
	char *r = tu_route(db, "T", JW_DEFAULT);
	cr_expect_eq(tu_perm(r, "gx"), 6);
	free(r);
	route_apply_delete_topic(db, "T", "CX");
	r = tu_route(db, "T", JW_DEFAULT);
	cr_assert_not_null(r);
	cr_expect_eq(tu_perm(r, "gx"), -1, "%s", r);
	cr_expect_eq(tu_perm(r, "gy"), 6);
	free(r);
	route_apply_delete_topic(db, "T", "CY");
	cr_expect_null(tu_route(db, "T", JW_DEFAULT));
	free(body);
}

Test(route, zone_filter_keeps_own_zone_and_masterless_groups)
{
	struct tu_reg z1 = { .name = "g1", .addr = A, .id = 0, .zone = "zone-a", .conn = 1 };
	struct tu_reg z2 = { .name = "g2", .addr = B, .id = 0, .zone = "zone-b", .conn = 2 };
	struct tu_reg sl = { .name = "g3", .addr = C, .id = 1, .zone = "zone-b", .conn = 3,
			     .new_style = true };
	char *body = tu_body(1, 1, 0, "T/4/4/6 U/4/4/6");
	cr_assert_eq(tu_register(db, &z1, body, 100, NULL), 0);
	cr_assert_eq(tu_register(db, &z2, body, 100, NULL), 0);
	cr_assert_eq(tu_register(db, &sl, body, 100, NULL), 0);

	struct route_query q = { "T", JW_STANDARD, false, NULL, "ZONE-A" };
	char *r = tu_route_q(db, &q);
	cr_assert_not_null(r);
	cr_expect_eq(tu_perm(r, "g1"), 6, "own zone (case ignored)");
	cr_expect_eq(tu_perm(r, "g2"), -1, "other zone with a master goes: %s", r);
	cr_expect_eq(tu_perm(r, "g3"), 6, "a group without a master stays");
	cr_expect(strstr(r, "\"zoneName\":\"zone-a\"") != NULL);
	cr_expect(strstr(r, "{0:\"" A "\"}") != NULL, "zone answers use the default form: %s", r);
	free(r);
	free(body);
}

Test(route, order_topic_conf_spliced_in_both_forms)
{
	reg_simple("g", A, 0, 1, "T/4/4/6 U/4/4/6", 1, 100);
	struct route_query q = { "T", JW_STANDARD, false, "g:4", NULL };
	for (int round = 0; round < 2; round++) { /* fresh build, then from the cache */
		for (int f = 0; f < 2; f++) {
			q.form = (enum jw_form)f;
			char *plain = tu_route(db, "T", q.form);
			char *r = tu_route_q(db, &q);
			cr_expect(strstr(r, "\"filterServerTable\":{},\"orderTopicConf\":\"g:4\",\"queueDatas\":[") != NULL,
				  "%s", r);
			cr_expect_eq(strlen(r), strlen(plain) + strlen("\"orderTopicConf\":\"g:4\","));
			free(r);
			free(plain);
		}
	}
	q.order_conf = "a/b";
	q.form = JW_STANDARD;
	char *r = tu_route_q(db, &q);
	cr_expect(strstr(r, "\"orderTopicConf\":\"a\\/b\"") != NULL, "escaped per form: %s", r);
	free(r);
}

Test(route, partial_registration_guard)
{
	struct tu_reg m = { .name = "g", .addr = A, .id = 0, .conn = 1 };
	struct route_reg_result res;
	char *one = tu_body(1, 1, 0, "T/4/4/6");
	cr_assert_eq(tu_register(db, &m, one, 100, &res), 0);
	cr_expect_eq(res.outcome, ROUTE_REG_REFUSED);
	char *ci = tu_cluster_info(db);
	cr_expect(strstr(ci, "\"g\":{\"brokerAddrs\":{},") != NULL, "group shows with an empty map: %s", ci);
	free(ci);
	cr_expect_null(tu_route(db, "T", JW_DEFAULT));
	/* once registered, a one-topic (incremental) registration is fine */
	char *two = tu_body(2, 2, 0, "T/4/4/6 U/4/4/6");
	cr_assert_eq(tu_register(db, &m, two, 100, &res), 0);
	cr_expect_eq(res.outcome, ROUTE_REG_DONE);
	char *three = tu_body(3, 3, 0, "V/4/4/6");
	cr_assert_eq(tu_register(db, &m, three, 100, &res), 0);
	cr_expect_eq(res.outcome, ROUTE_REG_DONE);
	free(one), free(two), free(three);
}

Test(route, newer_state_version_holder_supersedes)
{
	struct tu_reg a = { .name = "g", .addr = A, .id = 0, .conn = 1 };
	struct tu_reg b = { .name = "g", .addr = B, .id = 0, .conn = 2 };
	struct route_reg_result res;
	char *b5 = tu_body(1, 1, 5, "T/4/4/6 U/4/4/6");
	char *b3 = tu_body(1, 1, 3, "T/8/8/6 U/4/4/6");
	cr_assert_eq(tu_register(db, &a, b5, 100, NULL), 0);
	cr_assert_eq(tu_register(db, &b, b3, 100, &res), 0);
	cr_expect_eq(res.outcome, ROUTE_REG_SUPERSEDED);
	char *r = tu_route(db, "T", JW_DEFAULT);
	cr_expect(strstr(r, "{0:\"" A "\"}") != NULL && strstr(r, "\"readQueueNums\":4"), "%s", r);
	free(r);
	free(b5), free(b3);
}

Test(route, broker_id_map_in_java_hashmap_order)
{
	const int64_t ids[] = { 0, 1, 16, 33, 17 };
	char addr[32];
	char *body = tu_body(1, 1, 0, "T/4/4/6 U/4/4/6");
	for (int i = 0; i < 5; i++) {
		struct tu_reg r = { .name = "g", .addr = addr, .id = ids[i], .conn = 1 };
		snprintf(addr, sizeof(addr), "h%d:1", (int)ids[i]);
		cr_assert_eq(tu_register(db, &r, body, 100, NULL), 0);
	}
	expect_route_has("T", JW_DEFAULT, "{0:\"h0:1\",16:\"h16:1\",1:\"h1:1\",33:\"h33:1\",17:\"h17:1\"}");
	expect_route_has("T", JW_STANDARD,
			 "{\"0\":\"h0:1\",\"1\":\"h1:1\",\"16\":\"h16:1\",\"17\":\"h17:1\",\"33\":\"h33:1\"}");
	free(body);
}

Test(route, filter_servers_in_route)
{
	struct tu_reg m = { .name = "g", .addr = A, .id = 0, .conn = 1 };
	const char *body = "{\"filterServerList\":[\"10.0.0.1:9999\"],\"topicConfigSerializeWrapper\":"
			   "{\"dataVersion\":{\"counter\":1,\"timestamp\":1},\"topicConfigTable\":"
			   "{\"T\":{\"perm\":6,\"readQueueNums\":4,\"topicName\":\"T\",\"writeQueueNums\":4},"
			   "\"U\":{\"perm\":6,\"readQueueNums\":4,\"topicName\":\"U\",\"writeQueueNums\":4}}}}";
	char *before = NULL;
	reg_simple("h", B, 0, 1, "T/4/4/6 U/4/4/6", 2, 100);
	before = tu_route(db, "T", JW_DEFAULT); /* cached without filter servers */
	cr_expect(strstr(before, "\"filterServerTable\":{}") != NULL);
	cr_assert_eq(tu_register(db, &m, body, 100, NULL), 0);
	expect_route_has("T", JW_DEFAULT, "\"filterServerTable\":{\"" A "\":[\"10.0.0.1:9999\"]}");
	/* an empty list removes them */
	char *plain = tu_body(2, 2, 0, "T/4/4/6 U/4/4/6");
	cr_assert_eq(tu_register(db, &m, plain, 100, NULL), 0);
	expect_route_has("T", JW_DEFAULT, "\"filterServerTable\":{}");
	free(plain);
	free(before);
}

Test(route, static_topic_mappings_in_route)
{
	struct tu_reg m = { .name = "broker-a", .addr = A, .id = 0, .conn = 1, .new_style = true };
	const char *body = TU_STATIC_TOPIC_BODY;
	cr_assert_eq(tu_register(db, &m, body, 100, NULL), 0);
	expect_route_has("S", JW_DEFAULT, ",\"topicQueueMappingByBroker\":{\"broker-a\":{\"bname\":\"broker-a\","
			    "\"currIdMap\":{0:0,1:1},\"dirty\":false,\"epoch\":1700000000000,"
			    "\"scope\":\"__global__\",\"topic\":\"S\",\"totalQueues\":2}}}");
	expect_route_has("S", JW_STANDARD, "\"currIdMap\":{\"0\":0,\"1\":1}");
	expect_route_lacks("U", JW_DEFAULT, "topicQueueMappingByBroker");
}

Test(route, delete_topics_with_registration)
{
	struct tu_reg m = { .name = "g", .addr = A, .id = 0, .conn = 1, .delete_missing = true };
	char *b1 = tu_body(1, 1, 0, "D1/4/4/6 D2/4/4/6");
	char *b2 = tu_body(2, 2, 0, "D2/4/4/6 D3/4/4/6");
	cr_assert_eq(tu_register(db, &m, b1, 100, NULL), 0);
	cr_assert_eq(tu_register(db, &m, b2, 100, NULL), 0);
	cr_expect_null(tu_route(db, "D1", JW_DEFAULT));
	expect_route("D3", JW_DEFAULT);
	free(b1), free(b2);
}

Test(route, register_topic_in_namesrv)
{
	reg_simple("ga", A, 0, 1, "T/4/4/6 U/4/4/6", 1, 100);
	reg_simple("gb", B, 0, 1, "T/4/4/6 U/4/4/6", 2, 100);
	struct route_queue_in q[3] = {
		{ "ga", 2, 2, 6, 0 }, { "unknown", 2, 2, 6, 0 }, { "gb", 2, 2, 6, 0 },
	};
	/* new topic naming an unknown group: not created */
	route_apply_register_topic(db, "N", q, 3);
	cr_expect_null(tu_route(db, "N", JW_DEFAULT));
	/* existing topic: entries up to the unknown group are applied */
	route_apply_register_topic(db, "T", q, 3);
	char *r = tu_route(db, "T", JW_DEFAULT);
	cr_expect(strstr(r, "{\"brokerName\":\"ga\",\"perm\":6,\"readQueueNums\":2,") != NULL, "%s", r);
	cr_expect(strstr(r, "{\"brokerName\":\"gb\",\"perm\":6,\"readQueueNums\":4,") != NULL, "%s", r);
	free(r);
	struct route_queue_in ok[1] = { { "gb", 1, 1, 6, 0 } };
	route_apply_register_topic(db, "N", ok, 1);
	expect_route("N", JW_DEFAULT);
}

static char *list(int (*fn)(struct route_db *, struct buf *))
{
	struct buf b = BUF_INIT;
	state_read_lock();
	cr_assert_eq(fn(db, &b), 0);
	state_read_unlock();
	return tu_text(&b);
}

static int unit_list(struct route_db *d, struct buf *b) { return route_topics_unit(d, ROUTE_UNIT, b); }
static int unit_sub_list(struct route_db *d, struct buf *b) { return route_topics_unit(d, ROUTE_UNIT_SUB, b); }
static int sub_not_unit(struct route_db *d, struct buf *b) { return route_topics_unit(d, ROUTE_UNIT_SUB_NOT_UNIT, b); }
static int cx_list(struct route_db *d, struct buf *b) { return route_topics_by_cluster(d, "CX", b); }
static int none_list(struct route_db *d, struct buf *b) { return route_topics_by_cluster(d, NULL, b); }

Test(route, topic_lists)
{
	struct tu_reg x = { .cluster = "CX", .name = "gx", .addr = A, .id = 0, .conn = 1 };
	struct tu_reg y = { .cluster = "CY", .name = "gy", .addr = B, .id = 0, .conn = 2 };
	char *bx = tu_body(1, 1, 0, "X/4/4/6 U1/4/4/6/1 U2/4/4/6/2 U3/4/4/6/3");
	char *by = tu_body(1, 1, 0, "Y/4/4/6 Y2/4/4/6");
	cr_assert_eq(tu_register(db, &x, bx, 100, NULL), 0);
	cr_assert_eq(tu_register(db, &y, by, 100, NULL), 0);

	char *s = list(route_topics_all);
	json_t *j = tu_json(s);
	cr_expect_eq(json_array_size(json_object_get(j, "topicList")), 6, "%s", s);
	json_decref(j), free(s);
	s = list(cx_list);
	j = tu_json(s);
	cr_expect_eq(json_array_size(json_object_get(j, "topicList")), 4, "%s", s);
	json_decref(j), free(s);
	s = list(none_list);
	cr_expect_str_eq(s, "{\"topicList\":[]}");
	free(s);
	s = list(unit_list);
	cr_expect(strstr(s, "U1") && strstr(s, "U3") && !strstr(s, "U2"), "%s", s);
	free(s);
	s = list(unit_sub_list);
	cr_expect(strstr(s, "U2") && strstr(s, "U3") && !strstr(s, "U1"), "%s", s);
	free(s);
	s = list(sub_not_unit);
	cr_expect_str_eq(s, "{\"topicList\":[\"U2\"]}");
	free(s);
	s = list(route_topics_system);
	j = tu_json(s);
	cr_expect_eq(json_array_size(json_object_get(j, "topicList")), 4, "%s", s);
	const char *ba = json_string_value(json_object_get(j, "brokerAddr"));
	cr_expect(ba && (strcmp(ba, A) == 0 || strcmp(ba, B) == 0), "%s", s);
	json_decref(j), free(s);
	free(bx), free(by);
}

Test(route, empty_lists)
{
	char *s = list(route_topics_system);
	cr_expect_str_eq(s, "{\"topicList\":[]}");
	free(s);
	s = list(route_topics_all);
	cr_expect_str_eq(s, "{\"topicList\":[]}");
	free(s);
}

Test(route, member_group)
{
	reg_simple("g", A, 0, 1, "T/4/4/6 U/4/4/6", 1, 100);
	reg_simple("g", B, 1, 1, "T/4/4/6 U/4/4/6", 2, 100);
	struct buf b = BUF_INIT;
	state_read_lock();
	cr_assert_eq(route_member_group(db, "AskedCluster", "g", &b), 0);
	state_read_unlock();
	cr_expect_str_eq(tu_text(&b), "{\"brokerMemberGroup\":{\"brokerAddrs\":{0:\"" A "\",1:\"" B "\"},"
				      "\"brokerName\":\"g\",\"cluster\":\"AskedCluster\"}}");
	b.len = 0;
	state_read_lock();
	cr_assert_eq(route_member_group(db, "C", "nosuch", &b), 0);
	state_read_unlock();
	cr_expect_str_eq(tu_text(&b), "{\"brokerMemberGroup\":{\"brokerAddrs\":{},\"brokerName\":\"nosuch\",\"cluster\":\"C\"}}");
	buf_free(&b);
}

Test(route, registration_of_60000_topics)
{
	struct buf b = BUF_INIT;
	buf_append_str(&b, "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":"
			   "{\"counter\":1,\"stateVersion\":0,\"timestamp\":1},\"topicConfigTable\":{");
	for (int i = 0; i < 60000; i++)
		buf_printf(&b, "%s\"topic-%05d\":{\"attributes\":{},\"order\":false,\"perm\":6,\"readQueueNums\":8,"
			       "\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"topic-%05d\",\"topicSysFlag\":0,"
			       "\"writeQueueNums\":8}",
			   i ? "," : "", i, i);
	buf_append_str(&b, "}}}");
	buf_terminate(&b);
	struct tu_reg m = { .name = "big", .addr = A, .id = 0, .conn = 1 };
	cr_assert_eq(tu_register(db, &m, (const char *)b.data, 100, NULL), 0);
	struct route_stats st;
	route_stats(db, &st);
	cr_expect_eq(st.topics, 60000);
	cr_expect_eq(st.queue_entries, 60000);
	char *r = tu_route(db, "topic-59999", JW_STANDARD);
	cr_assert_not_null(r);
	cr_expect(strstr(r, "\"readQueueNums\":8") != NULL);
	free(r);
	/* the same registration again touches nothing */
	cr_assert_eq(tu_register(db, &m, (const char *)b.data, 200, NULL), 0);
	route_stats(db, &st);
	cr_expect_eq(st.topics, 60000);
	/* and unregistering removes it all */
	cr_expect_eq(route_apply_unregister(db, "DefaultCluster", A, "big", 1), 1);
	/* gone for readers at once, removed from the tables in slices */
	char *gone = tu_route(db, "topic-59999", JW_STANDARD);
	cr_expect_null(gone);
	free(gone);
	route_stats(db, &st);
	cr_expect_eq(st.dead_entries, 60000);
	tu_settle(db);
	route_stats(db, &st);
	cr_expect_eq(st.dead_entries, 0);
	cr_expect_eq(st.topics, 0);
	cr_expect_eq(st.queue_entries, 0);
	buf_free(&b);
}

Test(route, group_slots_are_reused_after_removal)
{
	char name[32];
	/* many groups come and go: interned names must not pile up */
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "g%d", i);
		reg_simple(name, A, 0, 1, "T/4/4/6 U/4/4/6", 1, 100);
		cr_assert_eq(route_apply_unregister(db, "DefaultCluster", A, name, 1), 1);
		tu_settle(db);
		rcu_barrier(); /* let the slot's grace period pass */
	}
	reg_simple("last", A, 0, 1, "T/4/4/6 U/4/4/6", 1, 100);
	char *r = tu_route(db, "T", JW_DEFAULT);
	cr_assert_not_null(r);
	cr_expect(strstr(r, "\"brokerName\":\"last\"") != NULL);
	cr_expect_null(strstr(r, "\"g1\""));
	free(r);
	struct route_stats st;
	route_stats(db, &st);
	cr_expect_eq(st.groups, 1);
	cr_expect_leq(db->groups_high_water, 2, "%u slots used for 301 names over time", db->groups_high_water);
}

/* ---- NOTIFY_MIN_BROKER_ID_CHANGE (905): when and whom ---- */

struct notice_log {
	int n;
	char text[8][256];
};

static void record_notice(void *arg, const struct route_min_id_change *c)
{
	struct notice_log *log = arg;
	char *p;
	if (log->n >= 8)
		return;
	p = log->text[log->n++];
	p += sprintf(p, "%s min=%lld@%s offline=%s ha=%s ->", c->group, (long long)c->min_id, c->min_addr,
		     c->offline_addr ? c->offline_addr : "-", c->ha_addr ? c->ha_addr : "-");
	for (uint32_t i = 0; i < c->n_targets; i++)
		p += sprintf(p, " %s", c->targets[i]);
}

Test(route, min_broker_id_change_is_told_to_the_acting_group)
{
	struct notice_log log = { 0 };
	struct tu_reg s = { .name = "g", .addr = B, .id = 1, .new_style = true, .acting = true, .conn = 2, .ha = "hb:1" };
	struct tu_reg s2 = { .name = "g", .addr = C, .id = 2, .new_style = true, .acting = true, .conn = 3, .ha = "hc:1" };
	struct tu_reg m = { .name = "g", .addr = A, .id = 0, .new_style = true, .acting = true, .conn = 1, .ha = "ha:1" };
	char *body = tu_body(1, 1000, 0, "T/4/4/6 U/4/4/6");

	route_db_set_notify_hook(db, record_notice, &log);
	cr_assert_eq(tu_register(db, &s, body, 100, NULL), 0);
	cr_assert_eq(tu_register(db, &s2, body, 100, NULL), 0);
	cr_expect_eq(log.n, 0, "no smaller id came: %s", log.text[0]);
	/* the master registers: id 0 < 1, everyone but the new minimum hears */
	cr_assert_eq(tu_register(db, &m, body, 100, NULL), 0);
	cr_assert_eq(log.n, 1);
	cr_expect_str_eq(log.text[0], "g min=0@" A " offline=- ha=ha:1 -> " B " " C);
	/* the same registration again changes nothing */
	cr_assert_eq(tu_register(db, &m, body, 200, NULL), 0);
	cr_expect_eq(log.n, 1);
	/* a slave leaving does not move the minimum */
	cr_assert_eq(route_apply_unregister(db, "DefaultCluster", C, "g", 0), 1);
	cr_expect_eq(log.n, 1);
	/* the master leaving does: the rest hear, with the one that went */
	cr_assert_eq(route_apply_unregister(db, "DefaultCluster", A, "g", 0), 1);
	cr_assert_eq(log.n, 2);
	cr_expect_str_eq(log.text[1], "g min=1@" B " offline=" A " ha=- -> " B);
	route_db_set_notify_hook(db, NULL, NULL);
	free(body);
}

Test(route, min_broker_id_change_is_not_told_outside_acting_groups)
{
	struct notice_log log = { 0 };
	struct tu_reg s = { .name = "g", .addr = B, .id = 1, .new_style = true, .conn = 2 };
	struct tu_reg m = { .name = "g", .addr = A, .id = 0, .new_style = true, .conn = 1 };
	char *body = tu_body(1, 1000, 0, "T/4/4/6 U/4/4/6");

	route_db_set_notify_hook(db, record_notice, &log);
	cr_assert_eq(tu_register(db, &s, body, 100, NULL), 0);
	cr_assert_eq(tu_register(db, &m, body, 100, NULL), 0);
	cr_assert_eq(route_apply_unregister(db, "DefaultCluster", A, "g", 0), 1);
	cr_expect_eq(log.n, 0, "told: %s", log.text[0]);
	route_db_set_notify_hook(db, NULL, NULL);
	free(body);
}

/* ---- the cached lists (route_list_body): after every kind of change the
 * registrar makes, every list a client gets is byte for byte what a fresh
 * build gives; between changes (heartbeats, same-version registrations)
 * every list comes from the cache ---- */

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

		state_read_lock();
		rc = route_list_body(db, probes[i].kind, probes[i].arg, &body, &len, &scratch);
		if (rc == 0) {
			hits += body != scratch.data;
			rc = buf_append(&sent, body, len);
		}
		frc = fresh_build(&probes[i], &fresh);
		state_read_unlock();
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

static void reg_in(const char *cluster, const char *name, const char *addr, int64_t id, int64_t counter,
		const char *topics, uint64_t conn, int64_t timeout)
{
	struct tu_reg r = { .cluster = cluster, .name = name, .addr = addr, .id = id, .conn = conn,
			    .timeout = timeout };
	char *body = tu_body(counter, 1000 + counter, 0, topics);
	cr_assert_eq(tu_register(db, &r, body, 1000, NULL), 0);
	free(body);
}

Test(route, cached_lists_show_every_change_and_nothing_else_rebuilds)
{
	changed("nothing");

	reg_in("CX", "gx", A, 0, 1, "X/4/4/6 U1/4/4/6/1 U2/4/4/6/2 U3/4/4/6/3", 1, 3000);
	changed("the first registration");
	reg_in("CY", "gy", B, 0, 1, "Y/4/4/6 X/4/4/6", 2, 120000);
	changed("a second cluster");

	/* liveness without change: every list stays cached */
	state_read_lock();
	cr_assert(route_heartbeat(db, "CX", A, 1500));
	struct data_version dv = { 1, 1001, 0 }, st;
	bool known, chg;
	route_query_data_version(db, "CY", B, &dv, 1500, &known, &chg, &st);
	state_read_unlock();
	reg_in("CX", "gx", A, 0, 1, "X/4/4/6 U1/4/4/6/1 U2/4/4/6/2 U3/4/4/6/3", 1, 3000);
	cr_assert_eq(check_lists("heartbeats and a same-version registration"), N_PROBES,
		     "nothing changed, nothing rebuilt");

	reg_in("CX", "gx", A, 0, 2, "X/4/4/6 U1/4/4/6/2 U3/4/4/6/3 X2/4/4/6", 1, 3000);
	changed("a new data version (topic added, unit flags changed)");
	reg_in("CX", "gx", C, 1, 2, "X/4/4/6 U1/4/4/6/2 U3/4/4/6/3 X2/4/4/6", 3, 120000);
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

	reg_in("CZ", "gz", C, 0, 1, "Z/4/4/6 Z2/4/4/6", 9, 120000);
	changed("a third cluster");
	cr_assert_eq(route_apply_conn_closed(db, 9), 1);
	changed("a connection closed");
	tu_settle(db);
	changed("the clean-up after a close");

	cr_assert_eq(route_apply_expire(db, 5000), 1);
	changed("an expiry");
	tu_settle(db);
	changed("the clean-up after an expiry");

	reg_in("CX", "gy", B, 0, 3, "Y/4/4/6 Y2/4/4/6", 2, 120000);
	changed("a group moving to another cluster");
	cr_assert_eq(route_apply_unregister(db, "CX", B, "gy", 2), 1);
	tu_settle(db);
	changed("the last broker leaving");
}

/* ---- the identical-body shortcut: a re-send of the last body on the
 * same connection goes undecoded; any difference is applied ---- */

static void reg_handler(const struct tu_reg *r, const char *body, uint64_t now, bool want_undecoded,
			const char *what)
{
	bool undecoded;
	cr_assert_eq(tu_register_as_handler(db, r, body, now, &undecoded), 0, "%s", what);
	cr_expect_eq(undecoded, want_undecoded, "%s: %s", what, want_undecoded ? "not decoded" : "decoded");
}

Test(route, identical_body_on_the_same_connection_only_refreshes_liveness)
{
	struct tu_reg r = { .name = "g", .addr = A, .id = 0, .timeout = 3000, .conn = 1, .ha = "ha:1" };
	char *body = tu_body(1, 1, 0, "T/4/4/6 U/4/4/6");

	reg_handler(&r, body, 1000, false, "first registration");
	reg_handler(&r, body, 3500, true, "the same body again");
	cr_expect_eq(route_apply_expire(db, 6500), 0, "seen at 3500: alive until 6500");
	reg_handler(&r, body, 6000, true, "and again");
	cr_expect_eq(route_apply_expire(db, 9000), 0);
	/* the live entry takes the request's fields as Java's does */
	r.ha = "ha:2";
	reg_handler(&r, body, 8000, true, "a new HA address");
	struct route_reg_result res;
	struct tu_reg s = { .name = "g", .addr = B, .id = 1, .conn = 2 };
	cr_assert_eq(tu_register(db, &s, body, 8000, &res), 0);
	cr_expect_str_eq(res.ha_addr, "ha:2", "the slave hears the master's new HA address");
	route_reg_result_free(&res);
	cr_expect_eq(route_apply_expire(db, 11001), 1, "silent since 8000: expired at 11001");
	expect_route_lacks("T", JW_STANDARD, A);
	free(body);
}

Test(route, identical_body_on_a_new_connection_is_applied_as_a_re_registration)
{
	struct tu_reg r = { .name = "g", .addr = A, .id = 0, .conn = 1 };
	char *body = tu_body(1, 1, 0, "T/4/4/6 U/4/4/6");

	reg_handler(&r, body, 100, false, "first registration");
	r.conn = 2;
	reg_handler(&r, body, 200, false, "the broker came back on another connection");
	cr_expect_eq(route_apply_conn_closed(db, 1), 0, "the old connection no longer holds it");
	reg_handler(&r, body, 300, true, "the same body on the new connection");
	cr_expect_eq(route_apply_conn_closed(db, 2), 1, "the new one does");
	cr_expect_null(tu_route(db, "T", JW_DEFAULT));
	/* registered anew after the close: decoded, its topics back */
	reg_handler(&r, body, 400, false, "after the broker was removed");
	expect_route("T", JW_DEFAULT);
	free(body);
}

Test(route, any_difference_from_the_last_body_is_applied)
{
	struct tu_reg r = { .name = "g", .addr = A, .id = 0, .conn = 1 };
	char *body = tu_body(1, 1, 0, "T/4/4/6 U/4/4/6");
	reg_handler(&r, body, 100, false, "first registration");
	reg_handler(&r, body, 150, true, "identical");

	/* a filter server list, under the same data version */
	char *filtered = tu_body(1, 1, 0, "T/4/4/6 U/4/4/6");
	const char *empty = "\"filterServerList\":[]";
	char *at = strstr(filtered, empty);
	cr_assert_not_null(at);
	char *with = malloc(strlen(filtered) + 32);
	sprintf(with, "%.*s\"filterServerList\":[\"10.0.0.9:1\"]%s", (int)(at - filtered), filtered,
		at + strlen(empty));
	reg_handler(&r, with, 200, false, "a new filter server list");
	expect_route_has("T", JW_DEFAULT, "\"filterServerTable\":{\"" A "\":[\"10.0.0.9:1\"]}");
	reg_handler(&r, with, 250, true, "that body again");
	reg_handler(&r, body, 300, false, "the list emptied again");
	expect_route_has("T", JW_DEFAULT, "\"filterServerTable\":{}");

	/* a permission and a queue count, with the new data version a
	 * broker sends them under */
	char *perm = tu_body(2, 2, 0, "T/4/4/4 U/4/4/6");
	reg_handler(&r, perm, 400, false, "a permission");
	char *rt = tu_route(db, "T", JW_DEFAULT);
	cr_expect_eq(tu_perm(rt, "g"), 4, "%s", rt);
	free(rt);
	char *queues = tu_body(3, 3, 0, "T/4/4/4 U/2/2/6");
	reg_handler(&r, queues, 500, false, "a queue count");
	expect_route_has("U", JW_STANDARD, "\"readQueueNums\":2");
	/* a topic set, under the same data version: the new topic is taken */
	char *more = tu_body(3, 3, 0, "T/4/4/4 U/2/2/6 V/1/1/6");
	reg_handler(&r, more, 600, false, "a topic more");
	expect_route("V", JW_DEFAULT);
	free(more);
	free(queues);
	free(perm);
	free(with);
	free(filtered);
	free(body);
}

Test(route, identical_body_after_a_topic_change_is_applied_in_full)
{
	struct tu_reg r = { .name = "g", .addr = A, .id = 0, .conn = 1 };
	char *body = tu_body(1, 1, 0, "T/4/4/6 U/4/4/6");
	reg_handler(&r, body, 100, false, "first registration");
	cr_assert_eq(route_apply_delete_topic(db, "T", NULL), 0);
	/* 5.x takes a topic missing from the table under an unchanged data
	 * version: the body is read after all */
	reg_handler(&r, body, 200, false, "the same body after T was deleted");
	char *rt = tu_route(db, "T", JW_DEFAULT);
	cr_expect_not_null(rt, "T is back");
	free(rt);
	reg_handler(&r, body, 300, true, "and the same body once more");
	free(body);
}

/* CRC-32 (the bodyCrc32 one), bit by bit */
static uint32_t crc32_bits(const uint8_t *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0xEDB88320u : c >> 1;
	}
	return ~c;
}

/* Rewrites the 4 bytes of m at off so that m's CRC-32 becomes want: the
 * CRC of a fixed length is affine in the bits, so the 32 bits solve a
 * linear system over GF(2). False when it has no solution. */
static bool crc_forge(uint8_t *m, size_t n, size_t off, uint32_t want)
{
	uint32_t col[32], sol = 0;
	memset(m + off, 0, 4);
	uint32_t base = crc32_bits(m, n);
	for (int b = 0; b < 32; b++) {
		m[off + b / 8] = (uint8_t)(1u << (b % 8));
		col[b] = crc32_bits(m, n) ^ base;
		m[off + b / 8] = 0;
	}
	/* Gaussian elimination: row r of the system is bit r of the columns */
	uint32_t rows[32], rhs = want ^ base;
	for (int r = 0; r < 32; r++) {
		rows[r] = 0;
		for (int b = 0; b < 32; b++)
			rows[r] |= ((col[b] >> r) & 1u) << b;
	}
	uint32_t rhsbits[32];
	for (int r = 0; r < 32; r++)
		rhsbits[r] = (rhs >> r) & 1u;
	int pivot_row[32];
	for (int b = 0, r = 0; b < 32; b++) {
		int p = -1;
		for (int k = r; k < 32; k++)
			if (rows[k] >> b & 1u) {
				p = k;
				break;
			}
		if (p < 0)
			return false;
		uint32_t t = rows[p], tr = rhsbits[p];
		rows[p] = rows[r], rhsbits[p] = rhsbits[r];
		rows[r] = t, rhsbits[r] = tr;
		for (int k = 0; k < 32; k++)
			if (k != r && (rows[k] >> b & 1u)) {
				rows[k] ^= rows[r];
				rhsbits[k] ^= rhsbits[r];
			}
		pivot_row[b] = r++;
	}
	for (int b = 0; b < 32; b++)
		sol |= rhsbits[pivot_row[b]] << b;
	for (int b = 0; b < 32; b++)
		m[off + b / 8] = (uint8_t)(m[off + b / 8] | ((sol >> b) & 1u) << (b % 8));
	return crc32_bits(m, n) == want;
}

Test(route, a_body_whose_crc_collides_is_applied)
{
	struct tu_reg r = { .name = "g", .addr = A, .id = 0, .conn = 1 };
	char *body = tu_body(1, 1, 0, "Tabcd/4/4/6 U/4/4/6");
	uint32_t want = crc32_bits((const uint8_t *)body, strlen(body));
	reg_handler(&r, body, 100, false, "first registration");

	/* the same length and CRC, another topic: the 4 bytes after the first
	 * letter of its map key are chosen (the topicName member names it),
	 * with another first letter until none is a quote, backslash or NUL */
	char *twin = NULL;
	for (char c = 'V'; c <= 'Z' && !twin; c++) {
		char spec[32];
		snprintf(spec, sizeof(spec), "%cabcd/4/4/6 U/4/4/6", c);
		char *t = tu_body(1, 1, 0, spec);
		char *key = strstr(t, "\"topicConfigTable\":{\"") + strlen("\"topicConfigTable\":{\"");
		size_t off = (size_t)(key + 1 - t);
		if (crc_forge((uint8_t *)t, strlen(t), off, want) && !memchr(key + 1, '"', 4) &&
		    !memchr(key + 1, '\\', 4) && !memchr(key + 1, 0, 4))
			twin = t;
		else
			free(t);
	}
	cr_assert_not_null(twin, "no CRC twin found");
	cr_assert_eq(strlen(twin), strlen(body));
	cr_assert_eq(crc32_bits((const uint8_t *)twin, strlen(twin)), want);
	cr_assert_str_neq(twin, body);

	struct route_broker_reg ra, rb;
	tu_reg_fill(&ra, &r, body);
	tu_reg_fill(&rb, &r, twin);
	cr_expect_eq(ra.body_id.crc, rb.body_id.crc, "the bodyCrc32 values are equal");
	reg_handler(&r, twin, 200, false, "the CRC twin");
	struct route_stats st;
	route_stats(db, &st);
	cr_expect_eq(st.topics, 3, "the twin's topic was taken beside Tabcd and U");
	free(twin);
	free(body);
}

static uint32_t names_digest(struct route_db *d)
{
	struct route_stats st;
	route_stats(d, &st);
	return st.names_digest;
}

/* rmqns_route_digest: the same brokers and topics give the same digest in
 * whatever order they came; a broker or topic more or less changes it, and
 * its leaving brings the digest back. */
Test(route, names_digest_follows_brokers_and_topics_not_their_order)
{
	uint32_t empty = names_digest(db);
	reg_simple("g1", A, 0, 1, "T/4/4/6 U/4/4/6", 1, 100);
	uint32_t one = names_digest(db);
	cr_expect_neq(one, empty);
	/* two topics: a first registration with one is refused (protocol.md) */
	reg_simple("g2", B, 0, 1, "V/4/4/6 W/4/4/6", 2, 100);
	uint32_t both = names_digest(db);
	cr_expect_neq(both, one);
	cr_expect_eq(route_apply_unregister(db, "DefaultCluster", B, "g2", 2), 1);
	tu_settle(db);
	cr_expect_eq(names_digest(db), one);
	cr_expect_eq(route_apply_unregister(db, "DefaultCluster", A, "g1", 1), 1);
	tu_settle(db);
	cr_expect_eq(names_digest(db), empty);

	/* the other way round, topics listed in another order */
	reg_simple("g2", B, 0, 2, "W/4/4/6 V/4/4/6", 2, 200);
	reg_simple("g1", A, 0, 2, "U/4/4/6 T/4/4/6", 1, 200);
	cr_expect_eq(names_digest(db), both);
	char err[256];
	cr_expect_eq(rt_check(db, err, sizeof err), 0, "%s", err);
}
