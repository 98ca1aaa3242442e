/* The controller's request handlers (controller.h ctl_handle) against a
 * state built by committing their own events: per request code, the
 * codes, remarks, ext fields and bodies of controller.md §3, every
 * refusal, and the event each write commits. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/controller.h"
#include "rmqns/err.h"
#include "rmqns/remoting.h"
#include "ctl_internal.h" /* ctl_notify_encode */
#include "ctl_test_req.h"

struct fx {
	struct ctl_state state;
	struct ctl_live live;
	struct properties config;
	struct ctl_meta meta;
	struct ctl_env env;
};

static struct fx fx;

static void fx_setup(void)
{
	ctl_state_init(&fx.state);
	ctl_live_init(&fx.live);
	fx.config = (struct properties)PROPERTIES_INIT;
	cr_assert_eq(properties_set(&fx.config, "enableElectUncleanMaster", "false"), 0);
	cr_assert_eq(properties_set(&fx.config, "notifyBrokerRoleChanged", "true"), 0);
	cr_assert_eq(properties_set(&fx.config, "controllerDLegerGroup", "group1"), 0);
	/* Java's answers to brokers the store does not know (adoption has its own tests) */
	cr_assert_eq(properties_set(&fx.config, "controllerAdoptBrokers", "false"), 0);
	fx.meta = (struct ctl_meta){ "group1", "n1", "127.0.0.1:9868", false,
				     "n0:127.0.0.1:9878;n1:127.0.0.1:9868;n2:127.0.0.1:9858;" };
	fx.env = (struct ctl_env){ &fx.state, &fx.live, &fx.config, &fx.meta, 1000000, true, 7 };
}

static void fx_teardown(void)
{
	ctl_state_free(&fx.state);
	ctl_live_free(&fx.live);
	properties_free(&fx.config);
}

TestSuite(handlers, .init = fx_setup, .fini = fx_teardown);

static void with_body(struct remoting_cmd *c, const char *body)
{
	c->body = (const uint8_t *)body;
	c->body_len = (uint32_t)strlen(body);
}

static struct ctl_answer ans;

/* Handles the request; a committed write is applied as the log would. */
static int32_t call(struct remoting_cmd req)
{
	ctl_answer_clear(&ans);
	cr_assert_eq(ctl_handle(&fx.env, &req, &ans), 0);
	if (ans.has_event)
		cr_assert_eq(ctl_state_apply(&fx.state, &ans.event), 0);
	return ans.code;
}

static const char *ext(const char *key)
{
	return answer_ext(&ans, key);
}

static void expect_ext(const char *key, const char *value)
{
	const char *v = ext(key);
	if (!value) {
		cr_expect_null(v, "%s should be absent, is %s", key, v);
		return;
	}
	cr_assert_not_null(v, "%s missing", key);
	cr_expect_str_eq(v, value, "%s", key);
}

static void expect_body(const char *want)
{
	cr_assert(ans.has_body);
	char *got = strndup((const char *)ans.body.data, ans.body.len);
	cr_expect_str_eq(got, want);
	free(got);
}

static void expect_remark(const char *want)
{
	cr_assert_not_null(ans.remark, "no remark, want %s", want);
	cr_expect_str_eq(ans.remark, want);
}

/* An ext header that is there but holds no field. */
static void expect_empty_ext(void)
{
	cr_assert(ans.ext_present);
	cr_assert_eq(ans.ext_count, 0);
}

static void heartbeat(const char *name, const char *id, const char *epoch, const char *offset)
{
	struct remoting_cmd hb = make_req(904, "clusterName", "C1", "brokerName", name, "brokerAddr",
					  "127.0.0.1:1", "brokerId", id, "epoch", epoch, "maxOffset",
					  offset, "heartbeatTimeoutMills", "10000", NULL);
	cr_assert_eq(call(hb), 0);
}

static void register_id(const char *name, const char *id, const char *addr)
{
	char code[64];
	snprintf(code, sizeof code, "%s;1796175749448", addr);
	cr_assert_eq(call(make_req(1013, "clusterName", "C1", "brokerName", name, "appliedBrokerId",
				   id, "registerCheckCode", code, NULL)), 0);
	heartbeat(name, id, "-1", "0");
}

/* broker-a: ids 1 and 2, master 1, sync-state set {1,2} (epochs 1 and 2). */
static void two_brokers(void)
{
	register_id("broker-a", "1", "127.0.0.1:30911");
	register_id("broker-a", "2", "127.0.0.1:30921");
	cr_assert_eq(call(make_req(1002, "clusterName", "C1", "brokerName", "broker-a", "brokerId", "1",
				   "designateElect", "false", NULL)), 0);
	struct remoting_cmd alter = make_req(1001, "brokerName", "broker-a", "masterBrokerId", "1",
					     "masterEpoch", "1", NULL);
	with_body(&alter, "{\"syncStateSet\":[1,2],\"syncStateSetEpoch\":1}");
	cr_assert_eq(call(alter), 0);
}

/* The live entry of an id goes (its heartbeats stopped long ago). */
static void kill_broker(int64_t id)
{
	for (uint32_t i = 0; i < fx.live.count; i++)
		if (fx.live.items[i].broker_id == id)
			fx.live.items[i].last_ms = fx.env.now_ms - 60000;
}

/* ---- leadership, unknown codes ---- */

Test(handlers, follower_refuses_state_codes)
{
	fx.env.serving = false;
	int codes[] = { 1001, 1002, 1003, 1004, 1006, 1011, 1012, 1013 };
	for (unsigned i = 0; i < sizeof codes / sizeof codes[0]; i++) {
		cr_assert_eq(call(make_req(codes[i], "brokerName", "broker-a", NULL)), 2007);
		expect_remark("The controller is not in leader state");
		cr_assert_not(ans.ext_present);
		cr_assert_eq(ans.ext_count, 0);
		cr_assert_not(ans.has_body);
		cr_assert_not(ans.has_event);
	}
	/* any node answers these */
	cr_assert_eq(call(make_req(1005, NULL)), 0);
	cr_assert_eq(call(make_req(1010, NULL)), 0);
	cr_assert_eq(call(make_req(904, "brokerId", "1", NULL)), 0);
}

Test(handlers, unknown_codes)
{
	int codes[] = { 1007, 1008, 1999, 105 };
	for (unsigned i = 0; i < 4; i++) {
		cr_assert_eq(call(make_req(codes[i], NULL)), 3);
		char want[64];
		snprintf(want, sizeof want, " request type %d not supported", codes[i]);
		expect_remark(want);
		cr_assert_not(ans.ext_present);
	}
}

/* ---- 1005 ---- */

Test(handlers, metadata)
{
	cr_assert_eq(call(make_req(1005, NULL)), 0);
	cr_assert_null(ans.remark);
	expect_ext("group", "group1");
	expect_ext("controllerLeaderId", "n1");
	expect_ext("controllerLeaderAddress", "127.0.0.1:9868");
	expect_ext("isLeader", "false");
	expect_ext("peers", "n0:127.0.0.1:9878;n1:127.0.0.1:9868;n2:127.0.0.1:9858;");
	fx.meta.leader_id = NULL;
	fx.env.serving = false;
	cr_assert_eq(call(make_req(1005, NULL)), 0);
	expect_ext("controllerLeaderId", NULL);
	expect_ext("controllerLeaderAddress", NULL);
	cr_assert_eq(ans.ext_count, 3);
}

/* ---- 904 ---- */

Test(handlers, heartbeat_records_liveness)
{
	cr_assert_eq(call(make_req(904, "brokerName", "x", NULL)), 2005);
	expect_remark("Heart beat with empty brokerId");
	heartbeat("broker-a", "1", "3", "100");
	expect_remark("Heart beat success");
	cr_assert_not(ans.ext_present);
	cr_assert(ctl_live_alive(&fx.live, "C1", "broker-a", 1, fx.env.now_ms));
	cr_assert_not(ctl_live_alive(&fx.live, "C2", "broker-a", 1, fx.env.now_ms));
	const struct ctl_live_entry *e = ctl_live_find(&fx.live, "C1", "broker-a", 1);
	cr_assert_eq(e->epoch, 3);
	cr_assert_eq(e->max_offset, 100);
	cr_assert_eq(e->conn, 7);
	/* an older (epoch, offset) pair does not replace a newer one */
	heartbeat("broker-a", "1", "2", "500");
	cr_assert_eq(e->epoch, 3);
	cr_assert_eq(e->max_offset, 100);
	heartbeat("broker-a", "1", "3", "200");
	cr_assert_eq(e->max_offset, 200);
	/* one-way: nothing to send */
	struct remoting_cmd oneway = make_req(904, "brokerId", "9", NULL);
	oneway.flag = REMOTING_FLAG_ONEWAY;
	call(oneway);
	cr_assert(ans.no_answer);
}

Test(handlers, liveness_expiry_and_connection_close)
{
	struct ctl_broker_key *gone;
	uint32_t n;
	heartbeat("broker-a", "1", "1", "0");
	fx.env.conn = 8;
	heartbeat("broker-a", "2", "1", "0");
	cr_assert_eq(ctl_live_remove_expired(&fx.live, fx.env.now_ms + 10000, &gone, &n), 0);
	cr_assert_eq(n, 0);
	cr_assert_eq(ctl_live_remove_expired(&fx.live, fx.env.now_ms + 10001, &gone, &n), 0);
	cr_assert_eq(n, 2);
	ctl_broker_keys_free(gone, n);
	heartbeat("broker-a", "2", "1", "0");
	fx.env.conn = 9; /* the broker reconnected: its new connection counts */
	heartbeat("broker-a", "2", "1", "0");
	cr_assert_eq(ctl_live_remove_conn(&fx.live, 8, &gone, &n), 0);
	cr_assert_eq(n, 0);
	cr_assert_eq(ctl_live_remove_conn(&fx.live, 9, &gone, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(gone[0].broker_name, "broker-a");
	cr_assert_eq(gone[0].broker_id, 2);
	ctl_broker_keys_free(gone, n);
}

/* A full table refuses new brokers (code 2, counted) but refreshes known
 * ones; a timeout asked beyond the maximum is cut, so such an entry goes
 * too. */
Test(handlers, liveness_bounds)
{
	struct ctl_broker_key *gone;
	uint32_t n;

	ctl_live_set_bounds(&fx.live, 2, 20000);
	cr_assert_eq(call(make_req(904, "clusterName", "C1", "brokerName", "a", "brokerId", "1",
				   "heartbeatTimeoutMills", "9223372036854775807", NULL)),
		     0);
	cr_assert_eq(ctl_live_find(&fx.live, "C1", "a", 1)->timeout_ms, 20000);
	heartbeat("broker-a", "1", "1", "0");
	cr_assert_eq(call(make_req(904, "clusterName", "C1", "brokerName", "b", "brokerId", "1", NULL)),
		     RSP_SYSTEM_BUSY);
	expect_remark("[TOO_MANY_BROKERS] heartbeat refused: this controller tracks 2 brokers, "
		      "its controllerMaxLiveBrokers");
	cr_assert_eq(fx.live.count, 2);
	cr_assert_eq(fx.live.refused, 1);
	heartbeat("broker-a", "1", "2", "0");
	expect_remark("Heart beat success");
	cr_assert_eq(ctl_live_remove_expired(&fx.live, fx.env.now_ms + 10001, &gone, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(gone[0].broker_name, "broker-a");
	ctl_broker_keys_free(gone, n);
	cr_assert_eq(ctl_live_remove_expired(&fx.live, fx.env.now_ms + 20001, &gone, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(gone[0].broker_name, "a");
	ctl_broker_keys_free(gone, n);
	cr_assert_eq(call(make_req(904, "clusterName", "C1", "brokerName", "b", "brokerId", "1", NULL)), 0);
}

/* ---- 1012, 1013 ---- */

Test(handlers, next_broker_id)
{
	cr_assert_eq(call(make_req(1012, "clusterName", "C1", "brokerName", "broker-a", NULL)), 0);
	expect_ext("clusterName", "C1");
	expect_ext("brokerName", "broker-a");
	expect_ext("nextBrokerId", "1");
	cr_assert_not(ans.has_event);
	register_id("broker-a", "1", "127.0.0.1:30911");
	cr_assert_eq(call(make_req(1012, "clusterName", "C1", "brokerName", "broker-a", NULL)), 0);
	expect_ext("nextBrokerId", "2");
}

Test(handlers, apply_broker_id)
{
	struct remoting_cmd r = make_req(1013, "clusterName", "C1", "brokerName", "broker-a",
					 "appliedBrokerId", "2", "registerCheckCode", "127.0.0.1:30911;1", NULL);
	cr_assert_eq(call(r), 2014);
	expect_remark("Broker-set: broker-a hasn't been registered in controller, but broker try to apply brokerId: 2");
	expect_ext("clusterName", "C1");
	expect_ext("brokerName", "broker-a");
	cr_assert_not(ans.has_event);

	req_ext[2].value = "1";
	cr_assert_eq(call(r), 0);
	cr_assert_null(ans.remark);
	cr_assert(ans.has_event);
	cr_assert_eq(ans.event.type, CTL_EV_APPLY_BROKER_ID);
	cr_assert_str_eq(ans.event.address, "127.0.0.1:30911");
	cr_assert_str_eq(ans.event.check_code, "127.0.0.1:30911;1");
	cr_assert_str_eq(ctl_set_replica(ctl_state_find(&fx.state, "broker-a"), 1)->address,
			 "127.0.0.1:30911");
	/* the same id and check code again: a retry, accepted */
	cr_assert_eq(call(r), 0);
	/* the same id from another broker */
	req_ext[3].value = "127.0.0.1:30921;2";
	cr_assert_eq(call(r), 2014);
	expect_remark("Fail to apply brokerId: 1 in broker-set: broker-a");
	/* any id not taken is accepted, not only the next one */
	req_ext[2].value = "5";
	cr_assert_eq(call(r), 0);
	cr_assert_eq(ctl_state_find(&fx.state, "broker-a")->next_id, 3);
	/* a missing check code: code 1, no ext */
	cr_assert_eq(call(make_req(1013, "clusterName", "C1", "brokerName", "broker-a",
				   "appliedBrokerId", "3", NULL)), 1);
	cr_assert_not(ans.ext_present);
}

/* ---- 1003 ---- */

static struct remoting_cmd register_req(const char *id, const char *addr)
{
	return make_req(1003, "clusterName", "C1", "brokerName", "broker-a", "brokerId", id,
			"brokerAddress", addr, NULL);
}

Test(handlers, register_broker)
{
	cr_assert_eq(call(register_req("1", "127.0.0.1:30911")), 2010);
	expect_remark("Broker-set: broker-a hasn't been registered in controller");
	expect_ext("clusterName", "C1");
	register_id("broker-a", "1", "127.0.0.1:30911");
	cr_assert_eq(call(register_req("3", "127.0.0.1:30911")), 2010);
	expect_remark("BrokerId: 3 hasn't been registered in broker-set: broker-a");
	/* no master yet */
	cr_assert_eq(call(register_req("1", "127.0.0.1:30911")), 0);
	cr_assert_eq(ans.ext_count, 2);
	expect_body("{\"syncStateSet\":[],\"syncStateSetEpoch\":0}");
	cr_assert_not(ans.has_event);
	/* a live master is named */
	two_brokers();
	cr_assert_eq(call(register_req("2", "127.0.0.1:30921")), 0);
	expect_ext("masterBrokerId", "1");
	expect_ext("masterAddress", "127.0.0.1:30911");
	expect_ext("masterEpoch", "1");
	expect_ext("syncStateSetEpoch", "2");
	expect_body("{\"syncStateSet\":[1,2],\"syncStateSetEpoch\":2}");
	/* a dead master is not */
	kill_broker(1);
	cr_assert_eq(call(register_req("2", "127.0.0.1:30921")), 0);
	expect_ext("masterBrokerId", NULL);
	cr_assert_eq(ans.ext_count, 2);
	/* a new address is committed */
	cr_assert_eq(call(register_req("2", "127.0.0.1:30931")), 0);
	cr_assert(ans.has_event);
	cr_assert_eq(ans.event.type, CTL_EV_UPDATE_BROKER_ADDRESS);
	cr_assert_str_eq(ctl_set_replica(ctl_state_find(&fx.state, "broker-a"), 2)->address,
			 "127.0.0.1:30931");
}

/* ---- 1004 ---- */

Test(handlers, replica_info)
{
	struct remoting_cmd r = make_req(1004, "brokerName", "broker-a", NULL);
	cr_assert_eq(call(r), 2008);
	expect_remark("Broker metadata is not existed");
	expect_empty_ext();
	two_brokers();
	kill_broker(1);
	cr_assert_eq(call(r), 0);
	expect_ext("masterBrokerId", "1"); /* named whether alive or not */
	expect_ext("masterAddress", "127.0.0.1:30911");
	expect_ext("masterEpoch", "1");
	expect_body("{\"syncStateSet\":[1,2],\"syncStateSetEpoch\":2}");
}

/* ---- 1002 ---- */

static struct remoting_cmd elect_req(const char *id, const char *designate)
{
	if (!id)
		return make_req(1002, "clusterName", "C1", "brokerName", "broker-a", NULL);
	return make_req(1002, "clusterName", "C1", "brokerName", "broker-a", "brokerId", id,
			"designateElect", designate, NULL);
}

Test(handlers, elect_first_master_and_still_exists)
{
	cr_assert_eq(call(elect_req("1", "false")), 2010);
	expect_remark("Broker hasn't been registered");
	expect_empty_ext();
	register_id("broker-a", "1", "127.0.0.1:30911");
	cr_assert_eq(call(elect_req("1", "false")), 0);
	cr_assert_null(ans.remark);
	expect_ext("masterBrokerId", "1");
	expect_ext("masterAddress", "127.0.0.1:30911");
	expect_ext("masterEpoch", "1");
	expect_ext("syncStateSetEpoch", "1");
	expect_body("{\"brokerMemberGroup\":{\"brokerAddrs\":{1:\"127.0.0.1:30911\"},\"brokerName\":\"broker-a\",\"cluster\":\"C1\"},\"syncStateSet\":[1]}");
	cr_assert(ans.notify_role_change);
	const struct ctl_set *set = ctl_state_find(&fx.state, "broker-a");
	cr_assert_eq(set->master_id, 1);
	cr_assert_eq(set->master_epoch, 1);
	/* the second broker asks too: the master is alive */
	register_id("broker-a", "2", "127.0.0.1:30921");
	cr_assert_eq(call(elect_req("2", "false")), 2011);
	expect_remark("The old master 1 is still alive, not need to elect new master for broker broker-a");
	expect_ext("masterBrokerId", "1");
	expect_ext("masterEpoch", "1");
	expect_ext("syncStateSetEpoch", "1");
	expect_body("{\"syncStateSet\":[1]}");
	cr_assert_not(ans.has_event);
	cr_assert_not(ans.notify_role_change);
}

Test(handlers, first_election_needs_a_live_replica)
{
	register_id("broker-a", "1", "127.0.0.1:30911");
	kill_broker(1);
	cr_assert_eq(call(elect_req("1", "false")), 2012);
	/* an id that is not a replica (Java would elect it unchecked) */
	heartbeat("broker-a", "9", "-1", "0");
	cr_assert_eq(call(elect_req("9", "true")), 2012);
	expect_remark("Failed to elect a new master");
	cr_assert_eq(ctl_state_find(&fx.state, "broker-a")->master_epoch, 0);
}

Test(handlers, controller_trigger_fails_over_within_sync_state_set)
{
	two_brokers();
	kill_broker(1);
	cr_assert_eq(call(elect_req(NULL, NULL)), 0);
	expect_ext("masterBrokerId", "2");
	expect_ext("masterEpoch", "2");
	expect_ext("syncStateSetEpoch", "3");
	expect_body("{\"brokerMemberGroup\":{\"brokerAddrs\":{1:\"127.0.0.1:30911\",2:\"127.0.0.1:30921\"},\"brokerName\":\"broker-a\",\"cluster\":\"C1\"},\"syncStateSet\":[2]}");
	const struct ctl_set *set = ctl_state_find(&fx.state, "broker-a");
	cr_assert_eq(set->master_id, 2);
	cr_assert_eq(set->sss_count, 1);
	/* brokerId -1 (5.3) is the controller's trigger too; now nobody is left */
	kill_broker(2);
	cr_assert_eq(call(elect_req("-1", "false")), 2004);
	expect_remark("Old master has down and failed to elect a new broker master");
	expect_empty_ext();
	cr_assert(ans.has_event);
	cr_assert_not(ans.event.elected);
	cr_assert_not(set->has_master);
	cr_assert_eq(set->master_epoch, 3);
	cr_assert_eq(set->sss_count, 1, "the sync-state set is kept");
}

Test(handlers, unclean_election_only_when_enabled)
{
	int64_t one[] = { 1 };
	two_brokers();
	struct ctl_event shrink = { .type = CTL_EV_ALTER_SYNC_STATE_SET, .broker_name = "broker-a",
				    .ids = one, .id_count = 1 };
	cr_assert_eq(ctl_state_apply(&fx.state, &shrink), 0);
	kill_broker(1);
	/* 2 is alive but out of the set */
	cr_assert_eq(call(elect_req("2", "false")), 2012);
	expect_remark("Failed to elect a new master");
	expect_empty_ext();
	cr_assert_not(ans.has_event);
	cr_assert_eq(properties_set(&fx.config, "enableElectUncleanMaster", "true"), 0);
	cr_assert_eq(call(elect_req("2", "false")), 0);
	expect_ext("masterBrokerId", "2");
}

Test(handlers, admin_designates_a_master)
{
	two_brokers();
	cr_assert_eq(call(elect_req("2", "true")), 0);
	expect_ext("masterBrokerId", "2");
	expect_ext("masterEpoch", "2");
	cr_assert_eq(call(elect_req("2", "true")), 2011);
	expect_remark("The old master 2 is still alive, not need to elect new master for broker broker-a");
	/* a designated id that is not alive: nobody, no fallback to the best */
	register_id("broker-a", "3", "127.0.0.1:30941");
	kill_broker(3);
	cr_assert_eq(call(elect_req("3", "true")), 2012);
}

/* Ids 1-3, master 1, all three in the sync-state set. */
static void three_in_sync(void)
{
	static int64_t all[] = { 1, 2, 3 };
	register_id("broker-a", "1", "a1");
	register_id("broker-a", "2", "a2");
	register_id("broker-a", "3", "a3");
	cr_assert_eq(call(elect_req("1", "false")), 0);
	struct ctl_event grow = { .type = CTL_EV_ALTER_SYNC_STATE_SET, .broker_name = "broker-a",
				  .ids = all, .id_count = 3 };
	cr_assert_eq(ctl_state_apply(&fx.state, &grow), 0);
}

Test(handlers, policy_prefers_epoch_then_offset_then_priority)
{
	int64_t all[] = { 1, 2, 3 };
	three_in_sync();
	kill_broker(1);
	heartbeat("broker-a", "2", "1", "5000000000"); /* offsets past 32 bits compare right */
	heartbeat("broker-a", "3", "1", "100");
	cr_assert_eq(call(elect_req(NULL, NULL)), 0);
	expect_ext("masterBrokerId", "2");
	/* now 3 has a newer epoch */
	kill_broker(2);
	heartbeat("broker-a", "1", "1", "0");
	heartbeat("broker-a", "3", "2", "0");
	struct ctl_event regrow = { .type = CTL_EV_ALTER_SYNC_STATE_SET, .broker_name = "broker-a",
				    .ids = all, .id_count = 3 };
	cr_assert_eq(ctl_state_apply(&fx.state, &regrow), 0);
	cr_assert_eq(call(elect_req(NULL, NULL)), 0);
	expect_ext("masterBrokerId", "3");
}

Test(handlers, policy_priority_breaks_equal_data)
{
	three_in_sync();
	kill_broker(1);
	cr_assert_eq(call(make_req(904, "clusterName", "C1", "brokerName", "broker-a", "brokerId", "3",
				   "electionPriority", "1", NULL)), 0);
	cr_assert_eq(call(elect_req(NULL, NULL)), 0);
	expect_ext("masterBrokerId", "3");
}

/* ---- 1001 ---- */

static int32_t alter(const char *master, const char *epoch, const char *body)
{
	struct remoting_cmd r = make_req(1001, "brokerName", "broker-a", "masterBrokerId", master,
					 "masterEpoch", epoch, NULL);
	with_body(&r, body);
	return call(r);
}

static void expect_refused_alter(int32_t code, const char *remark)
{
	cr_expect_eq(ans.code, code);
	expect_remark(remark);
	expect_ext("newSyncStateSetEpoch", "0");
	cr_assert_eq(ans.ext_count, 1);
	cr_assert_not(ans.has_event);
}

/* A refusal whose remark gives the reason after Java's fixed prefix. */
static void alter_refused(const char *master, const char *epoch, const char *body, int32_t code,
			  const char *why)
{
	char want[200];
	alter(master, epoch, body);
	snprintf(want, sizeof want, "Rejecting alter syncStateSet request because %s", why);
	expect_refused_alter(code, want);
}

Test(handlers, alter_sync_state_set_refusals)
{
	alter("1", "1", "{\"syncStateSet\":[1],\"syncStateSetEpoch\":1}");
	expect_refused_alter(2013, "Broker metadata is not existed");
	two_brokers();
	/* the same set comes first, even from a non-master */
	alter("2", "1", "{\"syncStateSet\":[2,1],\"syncStateSetEpoch\":2}");
	expect_refused_alter(2013, "The newSyncStateSet is equal with oldSyncStateSet, no needed to update syncStateSet");
	alter_refused("2", "1", "{\"syncStateSet\":[2],\"syncStateSetEpoch\":2}", 2002,
		      "the current leader is:{1}, not {2}");
	alter_refused("1", "0", "{\"syncStateSet\":[1],\"syncStateSetEpoch\":2}", 2000,
		      "the current master epoch is:{1}, not {0}");
	alter_refused("1", "1", "{\"syncStateSet\":[1],\"syncStateSetEpoch\":1}", 2001,
		      "the current syncStateSet epoch is:{2}, not {1}");
	alter_refused("1", "1", "{\"syncStateSet\":[1,2,7],\"syncStateSetEpoch\":2}", 2003,
		      "the replicas {7} don't exist");
	register_id("broker-a", "3", "a3");
	kill_broker(3);
	alter_refused("1", "1", "{\"syncStateSet\":[1,3],\"syncStateSetEpoch\":2}", 2006,
		      "the replicas {3} don't alive");
	alter_refused("1", "1", "{\"syncStateSet\":[2],\"syncStateSetEpoch\":2}", 2013,
		      "the newSyncStateSet don't contains origin leader {1}");
	/* a master cleared: nobody may alter */
	kill_broker(1);
	kill_broker(2);
	cr_assert_eq(call(elect_req(NULL, NULL)), 2004);
	alter_refused("1", "2", "{\"syncStateSet\":[1],\"syncStateSetEpoch\":2}", 2002,
		      "the current leader is:{null}, not {1}");
	/* no body: code 1 */
	cr_assert_eq(call(make_req(1001, "brokerName", "broker-a", "masterBrokerId", "1",
				   "masterEpoch", "1", NULL)), 1);
	cr_assert_not(ans.ext_present);
}

Test(handlers, alter_sync_state_set_success)
{
	two_brokers();
	cr_assert_eq(alter("1", "1", "{\"syncStateSet\":[1],\"syncStateSetEpoch\":2}"), 0);
	cr_assert_null(ans.remark);
	expect_ext("newSyncStateSetEpoch", "3");
	expect_body("{\"syncStateSet\":[1],\"syncStateSetEpoch\":3}");
	const struct ctl_set *set = ctl_state_find(&fx.state, "broker-a");
	cr_assert_eq(set->sss_epoch, 3);
	cr_assert_eq(set->sss_count, 1);
}

/* ---- 1006 ---- */

Test(handlers, sync_state_data)
{
	struct remoting_cmd r = make_req(1006, NULL);
	cr_assert_eq(call(r), 1);
	expect_remark("not set any response code");
	with_body(&r, "[]");
	cr_assert_eq(call(r), 1);
	two_brokers();
	register_id("broker-a", "3", "127.0.0.1:30941");
	kill_broker(3);
	with_body(&r, "[\"nope\",\"broker-a\",\"broker-a\"]");
	cr_assert_eq(call(r), 0);
	cr_assert_not(ans.ext_present);
	expect_body("{\"replicasInfoTable\":{\"broker-a\":{\"inSyncReplicas\":["
		    "{\"alive\":true,\"brokerAddress\":\"127.0.0.1:30911\",\"brokerId\":1,\"brokerName\":\"broker-a\"},"
		    "{\"alive\":true,\"brokerAddress\":\"127.0.0.1:30921\",\"brokerId\":2,\"brokerName\":\"broker-a\"}],"
		    "\"masterAddress\":\"127.0.0.1:30911\",\"masterBrokerId\":1,\"masterEpoch\":1,"
		    "\"notInSyncReplicas\":[{\"alive\":false,\"brokerAddress\":\"127.0.0.1:30941\",\"brokerId\":3,"
		    "\"brokerName\":\"broker-a\"}],\"syncStateSetEpoch\":2}}}");
}

/* ---- 1011 ---- */

static struct remoting_cmd clean_req(const char *ids, const char *living)
{
	return make_req(1011, "clusterName", "C1", "brokerName", "broker-a",
			"brokerControllerIdsToClean", ids, "isCleanLivingBroker", living, NULL);
}

Test(handlers, clean_broker_data_refusals)
{
	cr_assert_eq(call(clean_req("1", "false")), 2009);
	expect_remark("Broker broker-a is not existed,clean broker data failure.");
	two_brokers();
	cr_assert_eq(call(clean_req("", "false")), 2009);
	expect_remark("Broker broker-a is still alive, clean up failure");
	cr_assert_eq(call(clean_req("2", "false")), 2009);
	expect_remark("Broker [broker-a,  2] is still alive, clean up failure");
	cr_assert_eq(call(clean_req("2;x", "false")), 2009);
	expect_remark("Please set the option <brokerControllerIdsToClean> according to the format, "
		      "exception: java.lang.NumberFormatException: For input string: \"x\"");
	cr_assert_not(ans.ext_present);
	cr_assert_not(ans.has_event);
}

Test(handlers, clean_broker_data)
{
	two_brokers();
	kill_broker(2);
	cr_assert_eq(call(clean_req("2;", "false")), 0);
	cr_assert_null(ans.remark);
	cr_assert_not(ans.ext_present);
	cr_assert(ans.has_event);
	const struct ctl_set *set = ctl_state_find(&fx.state, "broker-a");
	cr_assert_null(ctl_set_replica(set, 2));
	cr_assert_eq(set->next_id, 3);
	/* isCleanLivingBroker: a live id goes too, and only the named one */
	register_id("broker-a", "3", "a3");
	cr_assert_eq(call(clean_req("3", "true")), 0);
	set = ctl_state_find(&fx.state, "broker-a");
	cr_assert_not_null(set);
	cr_assert_null(ctl_set_replica(set, 3));
	cr_assert_not_null(ctl_set_replica(set, 1));
	/* the whole set, master and all */
	cr_assert_eq(call(clean_req(NULL, "true")), 0);
	cr_assert_null(ctl_state_find(&fx.state, "broker-a"));
}

/* ---- 1009, 1010 ---- */

Test(handlers, controller_config)
{
	cr_assert_eq(call(make_req(1010, NULL)), 0);
	cr_assert_not(ans.ext_present);
	expect_body("controllerAdoptBrokers=false\ncontrollerDLegerGroup=group1\nenableElectUncleanMaster=false\nnotifyBrokerRoleChanged=true\n");
	struct remoting_cmd up = make_req(1009, NULL);
	with_body(&up, "configStorePath=/tmp/x\n");
	cr_assert_eq(call(up), 16);
	expect_remark("Can not update config path");
	with_body(&up, "rocketmqHome=/tmp/x\n");
	cr_assert_eq(call(up), 16);
	expect_remark("Can not update config in black list: rocketmqHome");
	with_body(&up, "controllerDLegerPeers=n0-127.0.0.1:1\n");
	cr_assert_eq(call(up), 16);
	expect_remark("Can not update config in black list: controllerDLegerPeers");
	/* an unknown key refuses the whole update: nothing half set */
	with_body(&up, "enableElectUncleanMaster=true\nnoSuchKey=1\n");
	cr_assert_eq(call(up), 1);
	expect_remark("unknown key: noSuchKey");
	cr_assert_not(ans.config_changed);
	cr_assert_not(ctl_config_flag(&fx.config, "enableElectUncleanMaster", false));
	cr_assert_not(properties_has(&fx.config, "noSuchKey"));
	cr_assert_eq(properties_set(&fx.config, "configBlackList", "configBlackList;notifyBrokerRoleChanged"), 0);
	with_body(&up, "notifyBrokerRoleChanged=false\n");
	cr_assert_eq(call(up), 16);
	expect_remark("Can not update config in black list: notifyBrokerRoleChanged");
	with_body(&up, "enableElectUncleanMaster=true\n");
	cr_assert_eq(call(up), 0);
	cr_assert(ans.config_changed);
	cr_assert(ctl_config_flag(&fx.config, "enableElectUncleanMaster", false));
	cr_assert_not(properties_has(&fx.config, "noSuchKey"));
}

/* ---- answer frames ---- */

static struct remoting_cmd encode_and_decode(const struct remoting_cmd *req, struct buf *frame)
{
	struct remoting_cmd back;
	cr_assert_eq(ctl_answer_encode(&ans, req, frame), 0);
	cr_assert_eq(remoting_decode(frame->data, frame->len, &back), 0);
	return back;
}

Test(handlers, answer_frames)
{
	struct buf frame = BUF_INIT;
	fx.env.serving = false;
	struct remoting_cmd req = make_req(1004, "brokerName", "broker-a", NULL);
	call(req);
	struct remoting_cmd back = encode_and_decode(&req, &frame);
	cr_assert_eq(back.code, 2007);
	cr_assert_eq(back.opaque, 42);
	cr_assert(remoting_is_response(&back));
	cr_assert_not(back.ext_present);
	cr_assert_str_eq(back.remark, "The controller is not in leader state");
	char *head = strndup((const char *)frame.data + 8, frame.len - 8);
	cr_assert_null(strstr(head, "extFields"));
	free(head);
	remoting_cmd_release(&back);
	buf_reset(&frame);

	fx.env.serving = true;
	req = make_req(1012, "clusterName", "C1", "brokerName", "broker-a", NULL);
	call(req);
	back = encode_and_decode(&req, &frame);
	cr_assert_eq(back.code, 0);
	cr_assert_null(back.remark);
	cr_assert_str_eq(remoting_ext_get(&back, "nextBrokerId"), "1");
	cr_assert_str_eq(remoting_ext_get(&back, "clusterName"), "C1");
	remoting_cmd_release(&back);
	buf_free(&frame);
}

/* ---- the members: controllerDLegerPeers and the Raft port rule, jRaft's lists ---- */

Test(peers, parse_describe_and_raft_port)
{
	struct ctl_peer *p;
	unsigned n;
	char err[200] = "", addr[64];
	cr_assert_eq(ctl_peers_parse("n0-127.0.0.1:9878;n1-127.0.0.1:9868; n2-10.0.0.3:9858 ;",
				     CTL_DEFAULT_RAFT_PORT_OFFSET, &p, &n, err, sizeof err), 0, "%s", err);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(p[2].id, "n2");
	cr_assert_str_eq(p[2].address, "10.0.0.3:9858");
	cr_assert_str_eq(p[2].host, "10.0.0.3");
	cr_assert_eq(p[2].port, 9858);
	cr_assert_str_eq(p[2].raft_host, "10.0.0.3");
	cr_assert_eq(p[2].raft_port, 10858);
	char *d = ctl_peers_describe(p, n, true);
	cr_assert_str_eq(d, "n0:127.0.0.1:9878;n1:127.0.0.1:9868;n2:10.0.0.3:9858;");
	free(d);
	cr_assert_eq(ctl_peer_raft_address(&p[0], addr, sizeof addr), 0);
	cr_assert_str_eq(addr, "127.0.0.1:10878");
	ctl_peers_free(p, n);
	err[0] = '\0';
	cr_assert_eq(ctl_peers_parse("n0-127.0.0.1:9878", 60000, &p, &n, err, sizeof err), RMQNS_EINVAL);
	cr_assert_not_null(strstr(err, "controllerRaftPortOffset"), "%s", err);
	/* the id ends at the first '-' */
	cr_assert_eq(ctl_peers_parse("a-b-host-1:1", 1000, &p, &n, err, sizeof err), 0);
	cr_assert_str_eq(p[0].id, "a");
	cr_assert_str_eq(p[0].host, "b-host-1");
	ctl_peers_free(p, n);
}

Test(peers, refusals)
{
	struct ctl_peer *p;
	unsigned n;
	char err[200];
	const char *bad[] = { "", ";;", "127.0.0.1:9878", "-127.0.0.1:1", "n0-127.0.0.1",
			      "n0-127.0.0.1:0", "n0-127.0.0.1:65536", "n0-:1", "n0-h:1;n0-h:2",
			      "n0-h:x" };
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = '\0';
		cr_expect_eq(ctl_peers_parse(bad[i], 1000, &p, &n, err, sizeof err), RMQNS_EINVAL, "%s",
			     bad[i]);
		cr_expect_neq(err[0], '\0', "no reason for %s", bad[i]);
	}
}

Test(peers, jraft_lists_give_both_addresses)
{
	struct ctl_peer *p;
	unsigned n, self;
	char err[200] = "", addr[64];
	const struct ctl_node_config cfg = {
		.jraft = true,
		.jraft_init_conf = " 127.0.0.1:9880, 127.0.0.1:9881 ,[::1]:9882",
		.jraft_rpc_addrs = "127.0.0.1:9770,127.0.0.1:9771,[::1]:9772",
		.jraft_server_id = "::1:9882",
		/* the DLedger keys are not read */
		.peers = "garbage", .self_id = "n9",
	};
	cr_assert_eq(ctl_peers_of_config(&cfg, &p, &n, &self, err, sizeof err), 0, "%s", err);
	cr_assert_eq(n, 3);
	cr_assert_eq(self, 2);
	cr_assert_str_eq(p[1].id, "127.0.0.1:9881");
	cr_assert_str_eq(p[1].address, "127.0.0.1:9771");
	cr_assert_eq(p[1].port, 9771);
	cr_assert_eq(p[1].raft_port, 9881);
	cr_assert_str_eq(p[2].host, "::1");
	cr_assert_eq(ctl_peer_raft_address(&p[2], addr, sizeof addr), 0);
	cr_assert_str_eq(addr, "[::1]:9882");
	/* Java's jRaft controller lists the controller addresses only */
	char *d = ctl_peers_describe(p, n, false);
	cr_assert_str_eq(d, "127.0.0.1:9770;127.0.0.1:9771;[::1]:9772;");
	free(d);
	ctl_peers_free(p, n);
	cr_assert_eq(ctl_peers_self_port(&cfg, err, sizeof err), 9772);
}

Test(peers, jraft_refusals_name_the_key)
{
	struct ctl_peer *p;
	unsigned n, self;
	char err[200];
	const struct {
		const char *init, *rpc, *server, *key, *why;
	} bad[] = {
		{ "", "a:1", "a:2", "jRaftInitConf", "empty" },
		{ "a:2,b:2", "", "a:2", "jRaftControllerRPCAddr", "0 entries" },
		{ "a:2,b:2", "a:1", "a:2", "jRaftControllerRPCAddr", "1 entries" },
		{ "a:2", "a:1,b:1", "a:2", "jRaftControllerRPCAddr", "2 entries" },
		{ "a:2,a:2", "a:1,b:1", "a:2", "jRaftInitConf", "twice" },
		{ "a:2,b:2", "a:1,a:1", "a:2", "jRaftControllerRPCAddr", "twice" },
		{ "a:65536", "a:1", "a:65536", "jRaftInitConf", "65535" },
		{ "a:2", "a:70000", "a:2", "jRaftControllerRPCAddr", "65535" },
		{ "a:2,b:2", "a:1,b:1", "c:2", "jRaftServerId", "not one of" },
		{ "a:2,b:2", "a:1,b:1", "", "jRaftServerId", "host:port" },
		{ "a", "a:1", "a:2", "jRaftInitConf", "host:port" },
	};
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const struct ctl_node_config cfg = { .jraft = true, .jraft_init_conf = bad[i].init,
						     .jraft_rpc_addrs = bad[i].rpc,
						     .jraft_server_id = bad[i].server };
		err[0] = '\0';
		cr_expect_eq(ctl_peers_of_config(&cfg, &p, &n, &self, err, sizeof err), RMQNS_EINVAL,
			     "case %u", i);
		cr_expect_not_null(strstr(err, bad[i].key), "case %u: '%s' lacks %s", i, err, bad[i].key);
		cr_expect_not_null(strstr(err, bad[i].why), "case %u: '%s' lacks %s", i, err, bad[i].why);
	}
}

/* ---- 1008 NOTIFY_BROKER_ROLE_CHANGED ---- */

Test(handlers, role_change_notification_frame)
{
	struct buf frame = BUF_INIT;
	struct remoting_cmd back;
	two_brokers();
	cr_assert_eq(ctl_notify_encode(ctl_state_find(&fx.state, "broker-a"), 77, &frame), 0);
	cr_assert_eq(remoting_decode(frame.data, frame.len, &back), 0);
	cr_assert_eq(back.code, 1008);
	cr_assert_eq(back.opaque, 77);
	cr_assert(remoting_is_oneway(&back));
	cr_assert_not(remoting_is_response(&back));
	cr_assert_str_eq(remoting_ext_get(&back, "masterAddress"), "127.0.0.1:30911");
	cr_assert_str_eq(remoting_ext_get(&back, "masterBrokerId"), "1");
	cr_assert_str_eq(remoting_ext_get(&back, "masterEpoch"), "1");
	cr_assert_str_eq(remoting_ext_get(&back, "syncStateSetEpoch"), "2");
	char *body = strndup((const char *)back.body, back.body_len);
	cr_assert_str_eq(body, "{\"syncStateSet\":[1,2],\"syncStateSetEpoch\":2}");
	free(body);
	remoting_cmd_release(&back);
	buf_free(&frame);
}
