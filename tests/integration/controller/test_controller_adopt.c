/* Adoption by real rmqns processes: two brokers of one set in controller
 * mode, with ids and a master epoch raised to 2 by an election in a first
 * three-node group, carried to a second, empty group (and, apart, kept
 * while all three stores of their group are wiped): the new group keeps
 * the master they serve with at epoch 3 with both replicas in sync, every
 * NameServer routes that master as brokerId 0, and a later death of the
 * master elects the slave. With controllerAdoptBrokers=false the brokers
 * get Java's 2008 and 2010, as before.
 *
 * The brokers are played here as a 5.x broker behaves (controller.md §4):
 * one connection to every controller carrying its heartbeats (epoch, max
 * offset) and its 1004 poll, 1003 after a 2008, a role change taken only
 * at a master epoch above its own, REGISTER_BROKER to every NameServer
 * with brokerId 0 as master. Waits are bounded by tens of seconds. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_cluster.h"
#include "harness.h"
#include "rmqns/acl.h"
#include "rmqns/client.h"
#include "rmqns/remoting.h"

#define NODES CTL_CLUSTER_NODES
#define SET "broker-a"
#define WAIT_MS 40000
#define STEP_MS 200
#define OFFSET "4096"

struct broker {
	int64_t id;
	char addr[32];
	int32_t epoch;      /* the master epoch it holds; its heartbeats report it */
	int64_t master;     /* -1: none known */
	bool dead;
	struct client *ctl[NODES];
	struct client *ns[NODES];
	int64_t last_code;  /* of its last 1004 (or 1003 after a 2008) */
	char last_remark[160];
};

static struct ctl_cluster groups[2];
static int ngroups;
static struct broker brokers[2];

static void fini(void)
{
	for (int b = 0; b < 2; b++)
		for (int i = 0; i < NODES; i++) {
			client_close(brokers[b].ctl[i]);
			client_close(brokers[b].ns[i]);
		}
	for (int g = 0; g < ngroups; g++) {
		for (int i = 0; i < NODES; i++)
			if (groups[g].node[i].pid)
				cr_expect_eq(harness_cleanup(&groups[g].node[i]), 0, "node %d stopped uncleanly", i);
		harness_rmdir(groups[g].dir);
	}
}

TestSuite(adopt, .fini = fini, .timeout = 240);

static struct ctl_cluster *group_start(const char *const *extra)
{
	struct ctl_cluster *cl = &groups[ngroups++];
	cr_assert_eq(ctl_cluster_init(cl, "127.0.0.1"), 0);
	for (int i = 0; i < NODES; i++)
		cr_assert_eq(ctl_cluster_start_with(cl, i, extra), 0, "node %d did not start", i);
	return cl;
}

static int group_leader(const struct ctl_cluster *cl)
{
	const bool all[NODES] = { true, true, true };
	int leader = ctl_cluster_wait_leader(cl, all, NULL);
	cr_assert_geq(leader, 0, "no leader");
	return leader;
}

static void group_stop(struct ctl_cluster *cl)
{
	for (int i = 0; i < NODES; i++)
		cr_assert_eq(harness_cleanup(&cl->node[i]), 0, "node %d stopped uncleanly", i);
}

static void broker_init(struct broker *b, int64_t id)
{
	memset(b, 0, sizeof *b);
	b->id = id;
	b->epoch = -1;
	b->master = -1;
	snprintf(b->addr, sizeof b->addr, "127.0.0.1:%d", harness_free_port());
}

static void broker_disconnect(struct broker *b)
{
	for (int i = 0; i < NODES; i++) {
		client_close(b->ctl[i]);
		client_close(b->ns[i]);
		b->ctl[i] = b->ns[i] = NULL;
	}
}

/* A request on the broker's connection to node i (made when missing); the
 * answer, or NULL when there is none (the connection is then dropped). */
static struct client_reply *broker_call(struct broker *b, const struct ctl_cluster *cl, int i,
					int32_t code, const char *body, const char *const *ext)
{
	struct remoting_ext_field f[HARNESS_CALL_MAX_EXT];
	struct remoting_cmd req;
	struct client_reply *r = NULL;
	int err;

	if (!b->ctl[i] && !(b->ctl[i] = client_connect("127.0.0.1", cl->ctl_port[i], 1000, &err)))
		return NULL;
	ctl_cluster_request(&req, f, code, ext, body);
	if (client_call(b->ctl[i], &req, &r, 3000) < 0) {
		client_close(b->ctl[i]);
		b->ctl[i] = NULL;
		return NULL;
	}
	return r;
}

static int call_code(struct broker *b, const struct ctl_cluster *cl, int i, int32_t code,
		     const char *body, const char *const *ext)
{
	struct client_reply *r = broker_call(b, cl, i, code, body, ext);
	int c = r ? r->cmd.code : -1;
	client_reply_free(r);
	return c;
}

static void broker_beat(struct broker *b, const struct ctl_cluster *cl)
{
	char id[24], epoch[24];
	snprintf(id, sizeof id, "%lld", (long long)b->id);
	snprintf(epoch, sizeof epoch, "%d", b->epoch);
	const char *const ext[] = { "clusterName", "C1", "brokerName", SET, "brokerAddr", b->addr,
				    "brokerId", id, "epoch", epoch, "maxOffset", OFFSET,
				    "confirmOffset", OFFSET, "heartbeatTimeoutMills", "10000", NULL };
	for (int i = 0; i < NODES; i++)
		if (cl->node[i].pid)
			call_code(b, cl, i, 904, NULL, ext);
}

/* REGISTER_BROKER with every NameServer of the group: brokerId 0 as
 * master, its id as slave, on connections it keeps. */
static void broker_routes(struct broker *b, const struct ctl_cluster *cl)
{
	char id[24];
	struct buf body = BUF_INIT;

	snprintf(id, sizeof id, "%lld", (long long)(b->master == b->id ? 0 : b->id));
	harness_topics_body(&body, "T", 2, 4);
	for (int i = 0; i < NODES; i++) {
		/* a connection that went with a restarted NameServer: a new one */
		for (int tries = 0; tries < 2; tries++) {
			struct client_reply *r = NULL;
			if (!b->ns[i] && !(b->ns[i] = harness_connect(&cl->node[i])))
				break;
			int rc = harness_call(b->ns[i], 103, (const char *)body.data, &r, "brokerName", SET,
					      "brokerAddr", b->addr, "clusterName", "C1", "haServerAddr",
					      b->addr, "brokerId", id, NULL);
			client_reply_free(r);
			if (rc == 0)
				break;
			client_close(b->ns[i]);
			b->ns[i] = NULL;
		}
	}
	buf_free(&body);
}

/* A master named at an epoch above the broker's own: taken, as 5.x does. */
static void broker_take(struct broker *b, const struct ctl_cluster *cl, const struct client_reply *r)
{
	int64_t master, epoch;
	if (!remoting_ext_get_long(&r->cmd, "masterBrokerId", &master) ||
	    !remoting_ext_get_long(&r->cmd, "masterEpoch", &epoch) || epoch <= b->epoch)
		return;
	b->master = master;
	b->epoch = (int32_t)epoch;
	broker_routes(b, cl);
}

/* The 5 s poll of a running broker: 1004, and 1003 after a 2008. */
static void broker_poll(struct broker *b, const struct ctl_cluster *cl, int leader)
{
	char id[24];
	snprintf(id, sizeof id, "%lld", (long long)b->id);
	const char *const info[] = { "brokerName", SET, NULL };
	const char *const reg[] = { "clusterName", "C1", "brokerName", SET, "brokerId", id,
				    "brokerAddress", b->addr, NULL };
	struct client_reply *r = broker_call(b, cl, leader, 1004, NULL, info);
	if (r && r->cmd.code == 2008) {
		client_reply_free(r);
		r = broker_call(b, cl, leader, 1003, NULL, reg);
	}
	b->last_code = r ? r->cmd.code : -1;
	snprintf(b->last_remark, sizeof b->last_remark, "%s", r && r->cmd.remark ? r->cmd.remark : "");
	if (r && r->cmd.code == 0)
		broker_take(b, cl, r);
	client_reply_free(r);
}

/* The live brokers beat and poll until both hold master `master` at an
 * epoch of at least `epoch`; false after WAIT_MS. */
static bool run_until(const struct ctl_cluster *cl, int64_t master, int32_t epoch)
{
	int64_t t0 = harness_now_ms();
	while (harness_now_ms() - t0 < WAIT_MS) {
		const bool all[NODES] = { true, true, true };
		int leader = ctl_cluster_wait_leader(cl, all, NULL);
		bool done = leader >= 0;
		for (int k = 0; k < 2; k++) {
			struct broker *b = &brokers[k];
			if (b->dead)
				continue;
			broker_beat(b, cl);
			if (leader >= 0)
				broker_poll(b, cl, leader);
			done = done && b->master == master && b->epoch >= epoch;
		}
		if (done)
			return true;
		harness_sleep_ms(STEP_MS);
	}
	return false;
}

/* Broker id elected (by itself, or designated by an operator) at
 * master_epoch; it then widens the sync-state set (at sss_epoch) to both,
 * and both brokers take it as master. */
static void elect_and_widen(const struct ctl_cluster *cl, int leader, int id, const char *designate,
			    const char *master_epoch, int sss_epoch)
{
	struct broker *b = &brokers[id - 1];
	char ids[8], body[96];
	snprintf(ids, sizeof ids, "%d", id);
	snprintf(body, sizeof body, "{\"syncStateSet\":[1,2],\"syncStateSetEpoch\":%d}", sss_epoch);
	const char *const elect[] = { "clusterName", "C1", "brokerName", SET, "brokerId", ids,
				      "designateElect", designate, NULL };
	const char *const alter[] = { "brokerName", SET, "masterBrokerId", ids, "masterEpoch",
				      master_epoch, NULL };
	cr_assert_eq(call_code(b, cl, leader, 1002, NULL, elect), 0);
	cr_assert_eq(call_code(b, cl, leader, 1001, body, alter), 0);
	cr_assert(run_until(cl, id, atoi(master_epoch)), "brokers did not take master %d", id);
}

/* The estate as a Java group leaves it: ids 1 and 2, the first master 1
 * (epoch 1), both in sync, then 2 made master by an election (epoch 2)
 * and both in sync again; the brokers serve and route accordingly. */
static void make_estate(const struct ctl_cluster *cl)
{
	int leader = group_leader(cl);
	for (int k = 0; k < 2; k++) {
		struct broker *b = &brokers[k];
		char id[8], code[64];
		snprintf(id, sizeof id, "%lld", (long long)b->id);
		snprintf(code, sizeof code, "%s;1700000000000", b->addr);
		const char *const apply[] = { "clusterName", "C1", "brokerName", SET, "appliedBrokerId", id,
					      "registerCheckCode", code, NULL };
		cr_assert_eq(call_code(b, cl, leader, 1013, NULL, apply), 0);
		broker_beat(b, cl);
	}
	elect_and_widen(cl, leader, 1, "false", "1", 1);
	elect_and_widen(cl, leader, 2, "true", "2", 3);
	cr_assert_eq(brokers[0].epoch, 2);
	cr_assert_eq(brokers[1].epoch, 2);
}

/* brokerAddrs of SET on NameServer i has `addr` as brokerId `id`. */
static bool route_names(const struct ctl_cluster *cl, int i, int id, const char *addr)
{
	struct client *c = harness_connect(&cl->node[i]);
	struct client_reply *r = NULL;
	char quoted[96], bare[96];
	bool found = false;

	cr_assert_not_null(c);
	if (harness_call(c, 106, NULL, &r, NULL) == 0 && r->cmd.code == 0 && r->cmd.body) {
		char *body = strndup((const char *)r->cmd.body, r->cmd.body_len);
		snprintf(quoted, sizeof quoted, "\"%d\":\"%s\"", id, addr);
		snprintf(bare, sizeof bare, "%d:\"%s\"", id, addr);
		found = strstr(body, quoted) || strstr(body, bare);
		free(body);
	}
	client_reply_free(r);
	client_close(c);
	return found;
}

static void expect_routes(const struct ctl_cluster *cl, const struct broker *master)
{
	int64_t t0 = harness_now_ms();
	for (int i = 0; i < NODES; i++)
		while (!route_names(cl, i, 0, master->addr)) {
			cr_assert_lt(harness_now_ms() - t0, WAIT_MS, "NameServer %d does not route %s as 0",
				     i, master->addr);
			harness_sleep_ms(STEP_MS);
		}
}

/* The leader's sync state of SET: master, epoch, both replicas in sync. */
static void expect_sync_state(const struct ctl_cluster *cl, const char *master, const char *epoch)
{
	struct client_reply *r = NULL;
	int leader = group_leader(cl);
	char want[64];

	cr_assert_eq(ctl_cluster_call(cl, leader, 1006, NULL, "[\"" SET "\"]", &r), 0);
	char *body = strndup((const char *)r->cmd.body, r->cmd.body_len);
	snprintf(want, sizeof want, "\"masterBrokerId\":%s,", master);
	cr_expect(strstr(body, want), "%s in %s", want, body);
	snprintf(want, sizeof want, "\"masterEpoch\":%s,", epoch);
	cr_expect(strstr(body, want), "%s in %s", want, body);
	cr_expect(strstr(body, "\"notInSyncReplicas\":[]"), "both in sync: %s", body);
	cr_expect(strstr(body, brokers[0].addr) && strstr(body, brokers[1].addr), "%s", body);
	free(body);
	client_reply_free(r);
}

/* After the switch: master 2 kept at epoch 3, both in sync, routed as 0
 * everywhere, counted and logged; then its death elects 1 at epoch 4. */
static void expect_adopted_then_failover(const struct ctl_cluster *cl)
{
	bool adopted = run_until(cl, 2, 3);
	cr_assert(adopted, "adoption: broker 1 holds master %lld epoch %d (%lld %s), broker 2 master %lld epoch %d",
		  (long long)brokers[0].master, brokers[0].epoch, (long long)brokers[0].last_code,
		  brokers[0].last_remark, (long long)brokers[1].master, brokers[1].epoch);
	cr_expect_eq(brokers[0].epoch, 3, "one above the epoch the brokers held");
	cr_expect_eq(brokers[1].epoch, 3);
	expect_sync_state(cl, "2", "3");
	expect_routes(cl, &brokers[1]);
	int leader = group_leader(cl);
	cr_expect_eq(harness_metric(cl->http_port[leader], "rmqns_controller_adopted_total{kind=\"set\"}"), 1);
	cr_expect_eq(harness_metric(cl->http_port[leader], "rmqns_controller_adopted_total{kind=\"broker\"}"), 2);
	cr_expect(harness_wait_log(&cl->node[leader], "controller: adopted broker set C1/" SET, 5000));

	broker_disconnect(&brokers[1]);
	brokers[1].dead = true;
	cr_assert(run_until(cl, 1, 4), "no fail-over after the adoption: broker 1 holds %lld epoch %d",
		  (long long)brokers[0].master, brokers[0].epoch);
	expect_routes(cl, &brokers[0]);
}

static void estate(void)
{
	broker_init(&brokers[0], 1);
	broker_init(&brokers[1], 2);
	make_estate(group_start(NULL));
}

static const char *const adopt_wait[] = { "--controllerAdoptWaitMs=2000", NULL };

/* The brokers keep serving: their routes go to the group's NameServers
 * (new ones, or restarted), and the group adopts them. */
static void routes_then_adoption(struct ctl_cluster *cl)
{
	for (int k = 0; k < 2; k++)
		broker_routes(&brokers[k], cl);
	expect_adopted_then_failover(cl);
}

Test(adopt, carried_to_an_empty_group_keeps_master_and_fails_over)
{
	estate();
	group_stop(&groups[0]);
	for (int k = 0; k < 2; k++)
		broker_disconnect(&brokers[k]);
	routes_then_adoption(group_start(adopt_wait));
}

Test(adopt, all_three_stores_wiped_while_brokers_run)
{
	estate();
	struct ctl_cluster *cl = &groups[0];
	char store[400];
	group_stop(cl);
	for (int i = 0; i < NODES; i++) {
		snprintf(store, sizeof store, "%s/n%d", cl->dir, i);
		harness_rmdir(store);
		cr_assert_eq(ctl_cluster_start_with(cl, i, adopt_wait), 0);
	}
	routes_then_adoption(cl);
}

Test(adopt, node_restarted_empty_alone_catches_up)
{
	estate();
	struct ctl_cluster *cl = &groups[0];
	int leader = group_leader(cl);
	int lost = (leader + 1) % NODES;
	char store[400], *view = NULL;
	cr_assert_eq(harness_cleanup(&cl->node[lost]), 0);
	snprintf(store, sizeof store, "%s/n%d", cl->dir, lost);
	harness_rmdir(store);
	cr_assert_eq(ctl_cluster_start(cl, lost), 0);
	/* its view shows the set as the others hold it, from the log: no adoption */
	int64_t t0 = harness_now_ms();
	for (;;) {
		free(view);
		view = NULL;
		harness_http_get(cl->http_port[lost], "/controller", &view);
		if (view && strstr(view, "\"masterBrokerId\":2") && strstr(view, "\"masterEpoch\":2"))
			break;
		cr_assert_lt(harness_now_ms() - t0, WAIT_MS, "the empty node did not catch up: %s",
			     view ? view : "(none)");
		harness_sleep_ms(STEP_MS);
	}
	free(view);
	for (int i = 0; i < NODES; i++)
		cr_expect_eq(harness_metric(cl->http_port[i], "rmqns_controller_adopted_total{kind=\"broker\"}"), 0);
	cr_assert(run_until(cl, 2, 2));
	cr_expect_eq(brokers[0].epoch, 2, "no new epoch: nothing was adopted");
}

Test(adopt, off_keeps_java_refusals)
{
	estate();
	group_stop(&groups[0]);
	for (int k = 0; k < 2; k++)
		broker_disconnect(&brokers[k]);
	const char *const off[] = { "--controllerAdoptBrokers=false", "--controllerAdoptWaitMs=500", NULL };
	struct ctl_cluster *b = group_start(off);
	int leader = group_leader(b);
	for (int round = 0; round < 8; round++) {
		for (int k = 0; k < 2; k++) {
			broker_beat(&brokers[k], b);
			broker_poll(&brokers[k], b, leader);
			cr_assert_eq(brokers[k].last_code, 2010, "round %d broker %d: %lld %s", round, k,
				     (long long)brokers[k].last_code, brokers[k].last_remark);
			cr_assert_str_eq(brokers[k].last_remark,
					 "Broker-set: " SET " hasn't been registered in controller");
		}
		harness_sleep_ms(500);
	}
	const char *const info[] = { "brokerName", SET, NULL };
	struct client_reply *r = broker_call(&brokers[0], b, leader, 1004, NULL, info);
	cr_assert_not_null(r);
	cr_expect_eq(r->cmd.code, 2008);
	cr_expect_str_eq(r->cmd.remark, "Broker metadata is not existed");
	client_reply_free(r);
	cr_expect_eq(brokers[0].epoch, 2);
	cr_expect_eq(harness_metric(b->http_port[leader], "rmqns_controller_adopted_total{kind=\"broker\"}"), 0);
}

/* ---- ACL: adoption needs the signatures registration needs ---- */

static const char accounts_yaml[] = "globalWhiteRemoteAddresses:\n"
				    "accounts:\n"
				    "  - accessKey: brokerKey\n"
				    "    secretKey: brokerSecret1\n"
				    "    admin: false\n";

/* One request on c, signed with the broker's account when `sign`. */
static int signed_call(struct client *c, int32_t code, bool sign, const char *const *ext)
{
	struct remoting_ext_field f[HARNESS_CALL_MAX_EXT];
	struct remoting_cmd req;
	struct client_reply *r = NULL;
	struct acl_signed sig = { 0 };

	ctl_cluster_request(&req, f, code, ext, NULL);
	if (sign)
		cr_assert_eq(acl_sign_cmd(&req, "brokerKey", "brokerSecret1", &sig), 0);
	int rc = client_call(c, &req, &r, 3000);
	int code_back = rc < 0 ? -1 : r->cmd.code;
	client_reply_free(r);
	acl_signed_free(&sig);
	return code_back;
}

Test(adopt, needs_the_signatures_registration_needs)
{
	struct ctl_cluster *cl = &groups[ngroups];
	char dir[256], path[320], arg[340];
	cr_assert_eq(harness_mkdtemp(dir, sizeof dir, "rmqns-adopt-acl"), 0);
	snprintf(path, sizeof path, "%s/plain_acl.yml", dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	cr_assert_geq(fputs(accounts_yaml, f), 0);
	cr_assert_eq(fclose(f), 0);
	snprintf(arg, sizeof arg, "--aclFile=%s", path);
	const char *const acl[] = { "--aclEnable=true", "--aclBrokerRequests=true", arg,
				    "--controllerAdoptWaitMs=500", NULL };
	group_start(acl);
	/* the usual probe (1012) needs a signature here: 1005, then a read */
	int leader = -1;
	for (int64_t t0 = harness_now_ms(); leader < 0; harness_sleep_ms(100)) {
		cr_assert_lt(harness_now_ms() - t0, WAIT_MS, "no leader");
		for (int i = 0; i < NODES && leader < 0; i++) {
			struct client_reply *r = NULL;
			if (ctl_cluster_call(cl, i, 1005, NULL, NULL, &r) == 0) {
				const char *is = remoting_ext_get(&r->cmd, "isLeader");
				if (is && strcmp(is, "true") == 0 &&
				    ctl_cluster_call(cl, i, 1006, NULL, "[\"x\"]", NULL) == 0)
					leader = i;
			}
			client_reply_free(r);
		}
	}
	int err;
	struct client *c = client_connect("127.0.0.1", cl->ctl_port[leader], 1000, &err);
	cr_assert_not_null(c);
	const char *const beat[] = { "clusterName", "C1", "brokerName", SET, "brokerAddr",
				     "127.0.0.1:30921", "brokerId", "2", "epoch", "2", "maxOffset", OFFSET,
				     "heartbeatTimeoutMills", "10000", NULL };
	const char *const reg[] = { "clusterName", "C1", "brokerName", SET, "brokerId", "2",
				    "brokerAddress", "127.0.0.1:30921", NULL };
	const char *const info[] = { "brokerName", SET, NULL };
	/* unsigned: refused before the controller sees it, nothing adopted */
	cr_expect_eq(signed_call(c, 904, false, beat), 16);
	cr_expect_eq(signed_call(c, 1003, false, reg), 16);
	cr_expect_eq(signed_call(c, 1004, false, info), 2008, "nobody heart-beats on it: unknown");
	harness_sleep_ms(1000);
	cr_expect_eq(harness_metric(cl->http_port[leader], "rmqns_controller_adopted_total{kind=\"broker\"}"), 0);
	/* signed as a broker registers: adopted */
	cr_expect_eq(signed_call(c, 904, true, beat), 0);
	cr_expect_eq(signed_call(c, 1003, true, reg), 0);
	cr_expect_eq(signed_call(c, 1004, true, info), 0);
	cr_expect_eq(harness_metric(cl->http_port[leader], "rmqns_controller_adopted_total{kind=\"set\"}"), 1);
	cr_expect_eq(harness_metric(cl->http_port[leader], "rmqns_controller_adopted_total{kind=\"broker\"}"), 1);
	client_close(c);
	harness_rmdir(dir);
}

/* ---- export and import ---- */

#ifndef RMQNS_ADMIN_BIN
#error "RMQNS_ADMIN_BIN must name rmqns-admin"
#endif

/* "h:p;h:p;h:p" of the group's controller ports, or of its NameServers. */
static void addr_list(const struct ctl_cluster *cl, bool controllers, char *out, size_t len)
{
	size_t off = 0;
	for (int i = 0; i < NODES; i++)
		off += (size_t)snprintf(out + off, len - off, "%s127.0.0.1:%d", i ? ";" : "",
					controllers ? cl->ctl_port[i] : cl->node[i].port);
}

static void expect_imported(const struct ctl_cluster *cl)
{
	expect_sync_state(cl, "2", "2");
	struct client_reply *r = NULL;
	const char *const next[] = { "clusterName", "C1", "brokerName", SET, NULL };
	cr_assert_eq(ctl_cluster_call(cl, group_leader(cl), 1012, next, NULL, &r), 0);
	cr_expect_str_eq(remoting_ext_get(&r->cmd, "nextBrokerId"), "3");
	client_reply_free(r);
}

Test(adopt, export_import_round_trip_and_refusal_on_a_store_with_state)
{
	char ctl[256], ns[256], file[400], arg[440];
	estate();
	struct ctl_cluster *a = &groups[0];
	addr_list(a, true, ctl, sizeof ctl);
	addr_list(a, false, ns, sizeof ns);
	snprintf(file, sizeof file, "%s/state.json", a->dir);
	char cmd[1600], said[4096] = "";
	snprintf(cmd, sizeof cmd, "exec timeout 60 '%s' exportControllerState -a '%s' -n '%s' -o '%s' 2>&1",
		 RMQNS_ADMIN_BIN, ctl, ns, file);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	size_t got = fread(said, 1, sizeof said - 1, p);
	said[got] = '\0';
	cr_assert_eq(pclose(p), 0, "rmqns-admin: %s", said);
	cr_expect(strstr(said, "1 broker sets of"), "%s", said);
	char *doc = harness_slurp(file);
	cr_assert_not_null(doc);
	cr_expect(strstr(doc, "\"format\": \"rmqns-controller-state\""), "%s", doc);
	cr_expect(strstr(doc, "\"masterEpoch\": 2"), "%s", doc);
	free(doc);

	/* a new group on empty stores starts from the file (the brokers are
	 * gone: nothing is adopted, the state is the file's) */
	for (int k = 0; k < 2; k++)
		broker_disconnect(&brokers[k]);
	snprintf(arg, sizeof arg, "--controllerImportFile=%s", file);
	const char *const import[] = { arg, NULL };
	struct ctl_cluster *b = group_start(import);
	expect_imported(b);
	int leader = group_leader(b);
	cr_expect(harness_wait_log(&b->node[leader], "imported: ", 5000));

	/* started again on its own store with the same file: refused, said why */
	group_stop(b);
	for (int i = 0; i < NODES; i++)
		cr_assert_eq(ctl_cluster_start_with(b, i, import), 0);
	leader = group_leader(b);
	cr_expect(harness_wait_log(&b->node[leader], "not imported: the store already holds 1 broker sets",
				   10000));
	expect_imported(b);
}
