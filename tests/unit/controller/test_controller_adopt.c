/* Adoption of brokers the controller's store does not know (ctl_adopt.c):
 * the election rule as a pure function, the two ADOPT events (their effect
 * and their encoding), the answers to 1003/1004 from unknown brokers with
 * the option on and off, and the adoption election against heartbeats. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmqns/controller.h"
#include "rmqns/err.h"
#include "rmqns/remoting.h"
#include "ctl_internal.h"
#include "ctl_test_req.h"

/* ---- the rule ---- */

static struct ctl_adopt_report rep(int64_t id, int32_t epoch, int64_t offset)
{
	return (struct ctl_adopt_report){ .id = id, .epoch = epoch, .max_offset = offset,
					  .priority = CTL_DEFAULT_ELECTION_PRIORITY, .known = true };
}

static int64_t sss_room[16];

static enum ctl_adopt_verdict choose(const struct ctl_adopt_report *r, uint32_t n, int32_t epoch,
				     struct ctl_adopt_choice *c)
{
	memset(c, 0, sizeof *c);
	c->sss = sss_room;
	return ctl_adopt_choose(r, n, epoch, 0, c);
}

/* The rule elects `master` at `master_epoch` from these reports. */
static void expect_elects(const struct ctl_adopt_report *r, uint32_t n, int32_t set_epoch,
			  int64_t master, int32_t master_epoch, struct ctl_adopt_choice *c)
{
	cr_assert_eq(choose(r, n, set_epoch, c), CTL_ADOPT_ELECT);
	cr_expect_eq(c->master, master);
	cr_expect_eq(c->master_epoch, master_epoch);
}

Test(rule, highest_epoch_wins_over_offset)
{
	struct ctl_adopt_report r[] = { rep(1, 2, 900), rep(2, 3, 100) };
	struct ctl_adopt_choice c;

	expect_elects(r, 2, 0, 2, 4, &c);
	/* 1 is at an older epoch: not in sync */
	cr_assert_eq(c.sss_count, 1);
	cr_expect_eq(c.sss[0], 2);
	cr_expect_eq(c.sss_epoch, 1);
}

Test(rule, same_epoch_higher_offset_wins_even_over_the_serving_one)
{
	struct ctl_adopt_report r[] = { rep(1, 2, 500), rep(2, 2, 400) };
	struct ctl_adopt_choice c;

	r[1].serving = true; /* never a replica behind another */
	expect_elects(r, 2, 0, 1, 3, &c);
	cr_assert_eq(c.sss_count, 1);
	cr_expect_eq(c.sss[0], 1);
}

Test(rule, equal_data_keeps_the_serving_master_and_both_in_sync)
{
	struct ctl_adopt_report r[] = { rep(1, 2, 700), rep(2, 2, 700) };
	struct ctl_adopt_choice c;

	r[1].serving = true;
	expect_elects(r, 2, 0, 2, 3, &c); /* the one already serving: no roles flip */
	cr_assert_eq(c.sss_count, 2);
	cr_expect_eq(c.sss[0], 1);
	cr_expect_eq(c.sss[1], 2);
	/* without a serving hint: priority, then the lower id */
	r[1].serving = false;
	r[1].priority = 1;
	cr_assert_eq(choose(r, 2, 0, &c), CTL_ADOPT_ELECT);
	cr_expect_eq(c.master, 2);
	r[1].priority = CTL_DEFAULT_ELECTION_PRIORITY;
	cr_assert_eq(choose(r, 2, 0, &c), CTL_ADOPT_ELECT);
	cr_expect_eq(c.master, 1);
}

Test(rule, sync_state_set_by_confirm_offset)
{
	struct ctl_adopt_report r[] = { rep(1, 5, 1000), rep(2, 5, 950), rep(3, 5, 800) };
	struct ctl_adopt_choice c;

	r[0].confirm_offset = 900;
	cr_assert_eq(choose(r, 3, 0, &c), CTL_ADOPT_ELECT);
	cr_expect_eq(c.master, 1);
	cr_assert_eq(c.sss_count, 2);
	cr_expect_eq(c.sss[0], 1);
	cr_expect_eq(c.sss[1], 2);
}

Test(rule, new_epoch_above_every_reported_and_the_sets)
{
	struct ctl_adopt_report r[] = { rep(1, 7, 10), rep(2, 9, 0) };
	struct ctl_adopt_choice c;

	expect_elects(r, 2, 0, 2, 10, &c);
	expect_elects(r, 2, 8, 2, 10, &c);
	/* nothing above the set's own epoch: nothing to adopt */
	cr_expect_eq(choose(r, 2, 9, &c), CTL_ADOPT_NOTHING);
	cr_expect_eq(choose(r, 2, 12, &c), CTL_ADOPT_NOTHING);
}

Test(rule, no_epoch_no_candidate_and_unknown_best_waits)
{
	struct ctl_adopt_report r[] = { rep(1, -1, 99999), rep(2, 2, 10) };
	struct ctl_adopt_choice c;

	cr_assert_eq(choose(r, 2, 0, &c), CTL_ADOPT_ELECT);
	cr_expect_eq(c.master, 2);
	cr_expect_eq(choose(r, 1, 0, &c), CTL_ADOPT_NOTHING);
	cr_expect_eq(choose(r, 0, 0, &c), CTL_ADOPT_NOTHING);
	/* the best is not a known replica: wait rather than elect one behind it */
	struct ctl_adopt_report w[] = { rep(1, 2, 50), rep(2, 2, 60) };
	w[1].known = false;
	cr_expect_eq(choose(w, 2, 0, &c), CTL_ADOPT_WAIT);
	/* an epoch at the top of int32: no epoch above it */
	struct ctl_adopt_report top[] = { rep(1, INT32_MAX, 0) };
	cr_expect_eq(choose(top, 1, 0, &c), CTL_ADOPT_NOTHING);
}

/* ---- the events ---- */

static struct ctl_event ev_adopt_replica(const char *name, int64_t id, const char *addr,
					 int64_t next)
{
	return (struct ctl_event){ .type = CTL_EV_ADOPT_REPLICA, .cluster = "C1",
				   .broker_name = (char *)name, .address = (char *)addr,
				   .broker_id = id, .next_id = next };
}

static struct ctl_event ev_adopt_master(const char *name, bool elected, int64_t id, int32_t epoch,
					int32_t sss_epoch, int64_t *ids, uint32_t n)
{
	return (struct ctl_event){ .type = CTL_EV_ADOPT_MASTER, .broker_name = (char *)name,
				   .elected = elected, .broker_id = elected ? id : 0,
				   .master_epoch = epoch, .sss_epoch = sss_epoch, .ids = ids,
				   .id_count = n };
}

Test(events, adopt_replica_creates_the_set_and_keeps_ids)
{
	struct ctl_state s;
	ctl_state_init(&s);
	struct ctl_event a = ev_adopt_replica("broker-a", 5, "127.0.0.1:30951", 0);
	cr_assert_eq(ctl_state_apply(&s, &a), 0);
	const struct ctl_set *set = ctl_state_find(&s, "broker-a");
	cr_assert(ctl_set_exists(set));
	cr_expect_str_eq(set->cluster, "C1");
	cr_expect_eq(set->next_id, 6);
	cr_expect_not(set->has_master);
	cr_expect_eq(set->master_epoch, 0);
	cr_expect_eq(set->sss_count, 0);
	cr_assert_not_null(ctl_set_replica(set, 5));
	cr_expect_str_eq(ctl_set_replica(set, 5)->address, "127.0.0.1:30951");
	/* a lower id: the next id is never lowered; again: nothing changes */
	struct ctl_event b = ev_adopt_replica("broker-a", 2, "127.0.0.1:30921", 0);
	cr_assert_eq(ctl_state_apply(&s, &b), 0);
	cr_assert_eq(ctl_state_apply(&s, &b), 0);
	cr_expect_eq(set->replica_count, 2);
	cr_expect_eq(set->next_id, 6);
	/* an imported next id above every id */
	struct ctl_event c = ev_adopt_replica("broker-a", 3, "127.0.0.1:30931", 9);
	cr_assert_eq(ctl_state_apply(&s, &c), 0);
	cr_expect_eq(set->next_id, 9);
	ctl_state_free(&s);
}

Test(events, adopt_master_sets_epochs_as_given)
{
	struct ctl_state s;
	int64_t both[] = { 1, 2 };
	ctl_state_init(&s);
	struct ctl_event a = ev_adopt_replica("broker-a", 1, "127.0.0.1:30911", 0);
	struct ctl_event b = ev_adopt_replica("broker-a", 2, "127.0.0.1:30921", 0);
	struct ctl_event m = ev_adopt_master("broker-a", true, 2, 3, 1, both, 2);
	cr_assert_eq(ctl_state_apply(&s, &a), 0);
	cr_assert_eq(ctl_state_apply(&s, &b), 0);
	cr_assert_eq(ctl_state_apply(&s, &m), 0);
	const struct ctl_set *set = ctl_state_find(&s, "broker-a");
	cr_assert(set->has_master);
	cr_expect_eq(set->master_id, 2);
	cr_expect_eq(set->master_epoch, 3);
	cr_expect_eq(set->sss_epoch, 1);
	cr_assert_eq(set->sss_count, 2);
	/* a later Java election goes on from there */
	struct ctl_event e = { .type = CTL_EV_ELECT_MASTER, .broker_name = "broker-a",
			       .elected = true, .broker_id = 1 };
	cr_assert_eq(ctl_state_apply(&s, &e), 0);
	cr_expect_eq(set->master_epoch, 4);
	cr_expect_eq(set->sss_epoch, 2);
	/* no master, as an import of a masterless set */
	struct ctl_event none = ev_adopt_master("broker-a", false, 0, 6, 5, NULL, 0);
	cr_assert_eq(ctl_state_apply(&s, &none), 0);
	cr_expect_not(set->has_master);
	cr_expect_eq(set->master_epoch, 6);
	cr_expect_eq(set->sss_count, 0);
	/* a set that is not there: nothing */
	struct ctl_event other = ev_adopt_master("nope", true, 1, 3, 1, both, 2);
	cr_assert_eq(ctl_state_apply(&s, &other), 0);
	cr_expect_null(ctl_state_find(&s, "nope"));
	/* a snapshot of an adopted state restores to the same state */
	struct buf img = BUF_INIT;
	struct ctl_state back;
	ctl_state_init(&back);
	cr_assert_eq(ctl_state_snapshot(&s, &img), 0);
	cr_assert_eq(ctl_state_restore(&back, img.data, img.len), 0);
	cr_expect(ctl_state_equal(&s, &back));
	buf_free(&img);
	ctl_state_free(&back);
	ctl_state_free(&s);
}

static void round_trip(struct ctl_event ev)
{
	struct buf b = BUF_INIT, again = BUF_INIT;
	struct ctl_event back;

	cr_assert_eq(ctl_event_encode(&ev, &b), 0);
	cr_assert_eq(ctl_event_decode(b.data, b.len, &back), 0);
	cr_expect_eq(back.type, ev.type);
	cr_expect_eq(back.broker_id, ev.broker_id);
	cr_expect_eq(back.next_id, ev.next_id);
	cr_expect_eq(back.master_epoch, ev.master_epoch);
	cr_expect_eq(back.sss_epoch, ev.sss_epoch);
	cr_expect_eq(back.id_count, ev.id_count);
	cr_assert_eq(ctl_event_encode(&back, &again), 0);
	cr_assert_eq(again.len, b.len);
	cr_expect_eq(memcmp(again.data, b.data, b.len), 0);
	/* every shorter prefix is refused */
	for (size_t cut = 0; cut < b.len; cut++) {
		struct ctl_event part;
		cr_expect_eq(ctl_event_decode(b.data, cut, &part), RMQNS_EINVAL, "cut at %zu", cut);
	}
	ctl_event_clear(&back);
	buf_free(&b);
	buf_free(&again);
}

Test(events, adopt_events_round_trip_and_refusals)
{
	int64_t ids[] = { 1, 2, 7 };
	round_trip(ev_adopt_replica("broker-a", 3, "127.0.0.1:30931", 12));
	round_trip(ev_adopt_master("broker-a", true, 2, 3, 4, ids, 3));
	round_trip(ev_adopt_master("broker-a", false, 0, 3, 4, NULL, 0));
	/* a negative epoch is neither written nor read */
	struct buf b = BUF_INIT;
	struct ctl_event bad = ev_adopt_master("broker-a", true, 2, -1, 0, NULL, 0);
	cr_expect_eq(ctl_event_encode(&bad, &b), RMQNS_EINVAL);
	cr_expect_eq(b.len, 0);
	struct ctl_event good = ev_adopt_master("broker-a", true, 2, 1, 0, NULL, 0);
	cr_assert_eq(ctl_event_encode(&good, &b), 0);
	/* master epoch at byte 2 + 4 + 8 + 1 + 8 */
	b.data[2 + 4 + 8 + 1 + 8] = 0x80;
	struct ctl_event back;
	cr_expect_eq(ctl_event_decode(b.data, b.len, &back), RMQNS_EINVAL);
	buf_free(&b);
}

/* ---- requests from brokers the store does not know ---- */

static struct ctl_state state;
static struct ctl_live live;
static struct properties config;
static struct ctl_meta meta = { "group1", "n0", "127.0.0.1:9878", true, "n0:127.0.0.1:9878;" };
static struct ctl_env env;
static struct ctl_answer ans;

static void setup(void)
{
	ctl_state_init(&state);
	ctl_live_init(&live);
	config = (struct properties)PROPERTIES_INIT;
	env = (struct ctl_env){ &state, &live, &config, &meta, 1000000, true, 7 };
	memset(&ans, 0, sizeof ans);
}

static void teardown(void)
{
	ctl_answer_clear(&ans);
	ctl_state_free(&state);
	ctl_live_free(&live);
	properties_free(&config);
}

TestSuite(adopt, .init = setup, .fini = teardown);

/* The answer's events applied in order, as the node commits them. */
static void commit(void)
{
	for (uint32_t i = 0; i < ans.pre_count; i++)
		cr_assert_eq(ctl_state_apply(&state, &ans.pre[i]), 0);
	if (ans.has_event)
		cr_assert_eq(ctl_state_apply(&state, &ans.event), 0);
}

static int32_t call(struct remoting_cmd req)
{
	ctl_answer_clear(&ans);
	cr_assert_eq(ctl_handle(&env, &req, &ans), 0);
	commit();
	return ans.code;
}

static const char *ext(const char *key)
{
	return answer_ext(&ans, key);
}

static void expect_body(const char *want)
{
	cr_assert(ans.has_body);
	char *got = strndup((const char *)ans.body.data, ans.body.len);
	cr_expect_str_eq(got, want);
	free(got);
}

/* A heartbeat of broker-a's replica id on connection conn. */
static void heartbeat(uint64_t conn, const char *id, const char *addr, const char *epoch,
		      const char *offset)
{
	uint64_t keep = env.conn;
	env.conn = conn;
	cr_assert_eq(call(make_req(904, "clusterName", "C1", "brokerName", "broker-a", "brokerAddr",
				   addr, "brokerId", id, "epoch", epoch, "maxOffset", offset,
				   "heartbeatTimeoutMills", "10000", NULL)), 0);
	env.conn = keep;
}

static struct remoting_cmd register_req(const char *id, const char *addr)
{
	return make_req(1003, "clusterName", "C1", "brokerName", "broker-a", "brokerId", id,
			"brokerAddress", addr, NULL);
}

Test(adopt, off_keeps_java_refusals)
{
	cr_assert_eq(properties_set(&config, "controllerAdoptBrokers", "false"), 0);
	heartbeat(7, "2", "127.0.0.1:30921", "2", "100");
	cr_expect_eq(call(make_req(1004, "brokerName", "broker-a", NULL)), 2008);
	cr_expect_str_eq(ans.remark, "Broker metadata is not existed");
	cr_expect_eq(call(register_req("2", "127.0.0.1:30921")), 2010);
	cr_expect_str_eq(ans.remark, "Broker-set: broker-a hasn't been registered in controller");
	cr_expect_null(ctl_state_find(&state, "broker-a"));
}

Test(adopt, register_adopts_set_and_replica)
{
	cr_assert_eq(call(register_req("2", "127.0.0.1:30921")), 0);
	cr_expect_eq(ans.adopted, CTL_ADOPTED_BROKER | CTL_ADOPTED_SET);
	cr_expect_eq(ans.event.type, CTL_EV_ADOPT_REPLICA);
	cr_expect_str_eq(ext("clusterName"), "C1");
	cr_expect_null(ext("masterBrokerId"));
	expect_body("{\"syncStateSet\":[],\"syncStateSetEpoch\":0}");
	const struct ctl_set *set = ctl_state_find(&state, "broker-a");
	cr_assert(ctl_set_exists(set));
	cr_expect_eq(set->next_id, 3);
	/* a second id joins the set; the known one registers as ever */
	cr_assert_eq(call(register_req("1", "127.0.0.1:30911")), 0);
	cr_expect_eq(ans.adopted, CTL_ADOPTED_BROKER);
	cr_assert_eq(call(register_req("1", "127.0.0.1:30911")), 0);
	cr_expect_not(ans.has_event);
	cr_expect_eq(set->replica_count, 2);
	/* another cluster's broker of the same name is not adopted into it */
	cr_expect_eq(call(make_req(1003, "clusterName", "C2", "brokerName", "broker-a", "brokerId",
				   "3", "brokerAddress", "127.0.0.1:30931", NULL)), 2010);
	/* nor an id that is not a controller id */
	cr_expect_eq(call(register_req("0", "127.0.0.1:30901")), 2010);
}

Test(adopt, replica_info_adopts_the_broker_on_its_connection)
{
	/* nobody heart-beats on this connection: Java's answer */
	cr_expect_eq(call(make_req(1004, "brokerName", "broker-a", NULL)), 2008);
	heartbeat(7, "2", "127.0.0.1:30921", "2", "100");
	cr_assert_eq(call(make_req(1004, "brokerName", "broker-a", NULL)), 0);
	cr_expect_str_eq(ext("masterEpoch"), "0");
	cr_expect_null(ext("masterBrokerId"));
	const struct ctl_set *set = ctl_state_find(&state, "broker-a");
	cr_assert_not_null(ctl_set_replica(set, 2));
	cr_expect_str_eq(ctl_set_replica(set, 2)->address, "127.0.0.1:30921");
	/* another broker of the set, on its own connection */
	heartbeat(8, "1", "127.0.0.1:30911", "2", "100");
	env.conn = 8;
	cr_assert_eq(call(make_req(1004, "brokerName", "broker-a", NULL)), 0);
	cr_expect_eq(ans.adopted, CTL_ADOPTED_BROKER);
	cr_expect_eq(set->replica_count, 2);
}

Test(adopt, broker_election_waits_and_adoption_keeps_the_serving_master)
{
	heartbeat(7, "1", "127.0.0.1:30911", "2", "700");
	heartbeat(8, "2", "127.0.0.1:30921", "2", "700");
	cr_assert_eq(call(register_req("1", "127.0.0.1:30911")), 0);
	cr_assert(ctl_adopt_pending(&env, ctl_state_find(&state, "broker-a")));
	/* a broker's own election would make a master at epoch 1, which the
	 * brokers (at 2) ignore: refused while the adoption is pending */
	cr_expect_eq(call(make_req(1002, "clusterName", "C1", "brokerName", "broker-a", "brokerId",
				   "1", NULL)), 2012);
	cr_expect_not(ans.has_event);
	/* 2 serves (the NameServer's brokerId 0); it is not adopted yet: the
	 * adoption adopts it and keeps it master above epoch 2 */
	ctl_answer_clear(&ans);
	cr_assert_eq(ctl_adopt_elect(&env, "broker-a", "127.0.0.1:30921", true, &ans), 0);
	cr_assert_eq(ans.code, 0);
	cr_assert_eq(ans.pre_count, 1);
	cr_expect_eq(ans.pre[0].broker_id, 2);
	cr_expect(ans.notify_role_change);
	cr_expect_str_eq(ext("masterBrokerId"), "2");
	cr_expect_str_eq(ext("masterAddress"), "127.0.0.1:30921");
	cr_expect_str_eq(ext("masterEpoch"), "3");
	commit();
	const struct ctl_set *set = ctl_state_find(&state, "broker-a");
	cr_assert(set->has_master);
	cr_expect_eq(set->master_id, 2);
	cr_expect_eq(set->master_epoch, 3);
	cr_assert_eq(set->sss_count, 2);
	cr_expect_not(ctl_adopt_pending(&env, set));
	/* 1003 now names it, as any registered set's */
	cr_assert_eq(call(register_req("1", "127.0.0.1:30911")), 0);
	cr_expect_str_eq(ext("masterBrokerId"), "2");
	cr_expect_str_eq(ext("masterEpoch"), "3");
	/* a second adoption finds nothing to do */
	ctl_answer_clear(&ans);
	cr_assert_eq(ctl_adopt_elect(&env, "broker-a", NULL, false, &ans), 0);
	cr_expect_eq(ans.code, 2012);
	cr_expect_not(ans.has_event);
}

Test(adopt, tied_reports_wait_for_the_nameserver_s_master)
{
	heartbeat(7, "1", "127.0.0.1:30911", "2", "700");
	heartbeat(8, "2", "127.0.0.1:30921", "2", "700");
	cr_assert_eq(call(register_req("1", "127.0.0.1:30911")), 0);
	ctl_answer_clear(&ans);
	cr_assert_eq(ctl_adopt_elect(&env, "broker-a", NULL, true, &ans), 0);
	cr_expect_eq(ans.code, 2012);
	cr_expect_not(ans.has_event);
	cr_expect_eq(ans.pre_count, 0);
	/* past that wait: the rule's own order (the lower id) */
	ctl_answer_clear(&ans);
	cr_assert_eq(ctl_adopt_elect(&env, "broker-a", NULL, false, &ans), 0);
	cr_assert_eq(ans.code, 0);
	cr_expect_eq(ans.event.broker_id, 1);
	/* reports that do not tie need no NameServer */
	heartbeat(8, "2", "127.0.0.1:30921", "2", "800");
	ctl_answer_clear(&ans);
	cr_assert_eq(ctl_adopt_elect(&env, "broker-a", NULL, true, &ans), 0);
	cr_assert_eq(ans.code, 0);
	cr_expect_eq(ans.event.broker_id, 2);
}

Test(adopt, new_brokers_keep_the_java_first_election)
{
	/* brokers that never had a master report no epoch above the set's 0 */
	heartbeat(7, "1", "127.0.0.1:30911", "-1", "0");
	cr_assert_eq(call(register_req("1", "127.0.0.1:30911")), 0);
	cr_expect_not(ctl_adopt_pending(&env, ctl_state_find(&state, "broker-a")));
	cr_assert_eq(call(make_req(1002, "clusterName", "C1", "brokerName", "broker-a", "brokerId",
				   "1", NULL)), 0);
	cr_expect_str_eq(ext("masterEpoch"), "1");
}

/* ---- the import file ---- */

static char *write_temp(const char *text)
{
	static char path[64];
	snprintf(path, sizeof path, "/tmp/rmqns-import-XXXXXX");
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	FILE *f = fdopen(fd, "w");
	cr_assert_not_null(f);
	cr_assert_geq(fputs(text, f), 0);
	cr_assert_eq(fclose(f), 0);
	return path;
}

static int import_text(const char *text, struct ctl_event **ev, uint32_t *n, char *err, size_t errlen)
{
	char *path = write_temp(text);
	int rc = ctl_import_read(path, ev, n, err, errlen);
	unlink(path);
	return rc;
}

static void events_free(struct ctl_event *ev, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		ctl_event_clear(&ev[i]);
	free(ev);
}

Test(import, file_rebuilds_the_sets)
{
	const char *text =
		"{\"brokerSets\":[{\"brokerName\":\"broker-a\",\"clusterName\":\"C1\",\"masterBrokerId\":2,"
		"\"masterEpoch\":2,\"nextBrokerId\":5,\"replicas\":[{\"brokerAddress\":\"127.0.0.1:30911\","
		"\"brokerId\":1},{\"brokerAddress\":\"127.0.0.1:30921\",\"brokerId\":2}],"
		"\"syncStateSet\":[2,1],\"syncStateSetEpoch\":4},"
		"{\"replicas\":[{\"brokerId\":3,\"brokerAddress\":\"127.0.0.1:30931\"}],\"brokerName\":\"broker-b\","
		"\"clusterName\":\"C1\",\"masterBrokerId\":null,\"masterEpoch\":7,\"syncStateSetEpoch\":1,"
		"\"syncStateSet\":[]}],\"controller\":\"127.0.0.1:9878\",\"format\":\"rmqns-controller-state\","
		"\"version\":1}";
	struct ctl_event *ev;
	uint32_t n;
	char err[256];
	struct ctl_state s;

	cr_assert_eq(import_text(text, &ev, &n, err, sizeof err), 0, "%s", err);
	cr_assert_eq(n, 5);
	ctl_state_init(&s);
	for (uint32_t i = 0; i < n; i++)
		cr_assert_eq(ctl_state_apply(&s, &ev[i]), 0);
	const struct ctl_set *a = ctl_state_find(&s, "broker-a"), *b = ctl_state_find(&s, "broker-b");
	cr_assert(ctl_set_exists(a));
	cr_expect_str_eq(a->cluster, "C1");
	cr_expect_eq(a->replica_count, 2);
	cr_expect_str_eq(ctl_set_replica(a, 2)->address, "127.0.0.1:30921");
	cr_expect_eq(a->next_id, 5);
	cr_expect(a->has_master);
	cr_expect_eq(a->master_id, 2);
	cr_expect_eq(a->master_epoch, 2);
	cr_expect_eq(a->sss_epoch, 4);
	cr_assert_eq(a->sss_count, 2);
	cr_expect_eq(a->sss[0], 1);
	cr_assert(ctl_set_exists(b));
	cr_expect_not(b->has_master);
	cr_expect_eq(b->master_epoch, 7);
	cr_expect_eq(b->next_id, 4);
	events_free(ev, n);
	ctl_state_free(&s);
}

Test(import, bad_files_refused_with_a_reason)
{
	static const char *const bad[] = {
		"not json",
		"{\"format\":\"something-else\",\"brokerSets\":[]}",
		"{\"format\":\"rmqns-controller-state\",\"brokerSets\":[]}",
		/* no epochs */
		"{\"format\":\"rmqns-controller-state\",\"brokerSets\":[{\"brokerName\":\"a\",\"clusterName\":\"C\","
		"\"replicas\":[{\"brokerId\":1,\"brokerAddress\":\"x:1\"}]}]}",
		/* an id below 1 */
		"{\"format\":\"rmqns-controller-state\",\"brokerSets\":[{\"brokerName\":\"a\",\"clusterName\":\"C\","
		"\"masterEpoch\":1,\"syncStateSetEpoch\":1,\"replicas\":[{\"brokerId\":0,\"brokerAddress\":\"x:1\"}]}]}",
		/* no replicas */
		"{\"format\":\"rmqns-controller-state\",\"brokerSets\":[{\"brokerName\":\"a\",\"clusterName\":\"C\","
		"\"masterEpoch\":1,\"syncStateSetEpoch\":1,\"replicas\":[]}]}",
		NULL,
	};
	for (int i = 0; bad[i]; i++) {
		struct ctl_event *ev = (struct ctl_event *)1;
		uint32_t n = 9;
		char err[256] = "";
		cr_expect_eq(import_text(bad[i], &ev, &n, err, sizeof err), RMQNS_EINVAL, "file %d", i);
		cr_expect_null(ev);
		cr_expect_eq(n, 0);
		cr_expect_neq(err[0], '\0', "file %d: a reason", i);
	}
	char err[256];
	struct ctl_event *ev;
	uint32_t n;
	cr_expect_eq(ctl_import_read("/nonexistent/rmqns-import", &ev, &n, err, sizeof err), RMQNS_EIO);
}
