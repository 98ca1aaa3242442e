/* rmqns-admin's controller subcommands against real rmqns processes with
 * the embedded controller on: a three-node group (metadata from the
 * leader and from a follower, getSyncStateSet by names and by cluster,
 * electMaster's answer and its refusals, an unclean election allowed by
 * updateControllerConfig, cleanBrokerMetadata refused for a live broker
 * and done for a dead one, clusterDiff finding the nodes agree), and two
 * independent one-node groups that clusterDiff finds disagreeing on the
 * leader. Brokers are played by the test: heartbeat (904), apply id (1013)
 * and register (1003) on connections kept open, so they stay alive. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "harness.h"
#include "rmqns/buf.h"

#define RAFT_OFFSET 1000 /* the default controllerRaftPortOffset */
#define MAX_NODES 3
#define MAX_BROKERS 4
#define LEADER_WAIT_MS 20000
#define ELECT_LOOP 300 /* refused elections in a row */

static struct harness_server node[MAX_NODES];
static int ctl_port[MAX_NODES];
static char ctl_addr[MAX_NODES][32];
static int nnodes;
static int http_port; /* node 0's HTTP port, when a test gives it one */
static struct client *broker[MAX_BROKERS];
static char tmp[256];

static void setup(void)
{
	cr_assert_eq(harness_mkdtemp(tmp, sizeof tmp, "rmqns-admin-ctl"), 0);
	unsetenv("NAMESRV_ADDR");
}

static void teardown(void)
{
	for (int i = 0; i < MAX_BROKERS; i++) {
		if (broker[i])
			client_close(broker[i]);
		broker[i] = NULL;
	}
	for (int i = 0; i < nnodes; i++)
		cr_expect_eq(harness_cleanup(&node[i]), 0, "node %d did not stop cleanly", i);
	nnodes = 0;
	http_port = 0;
	harness_rmdir(tmp);
}

TestSuite(admin_controller, .init = setup, .fini = teardown, .timeout = 240);

/* ---- running rmqns-admin ---- */

struct run {
	int code;
	char *out, *err;
	json_t *json; /* stdout parsed, when it is a JSON document */
};

/* Runs rmqns-admin with args (NULL-terminated) through the shell, each
 * argument single-quoted, under timeout(1) so that it cannot hang the
 * test: stdout and stderr captured, the exit code (124: it was stopped). */
static struct run admin_run(const char *const *args)
{
	static int seq;
	struct buf cmd = BUF_INIT;
	struct run r = { 0 };
	char errfile[300];

	snprintf(errfile, sizeof errfile, "%s/admin-err-%d", tmp, seq++);
	cr_assert_eq(buf_printf(&cmd, "exec timeout 60 '%s'", RMQNS_ADMIN_BIN), 0);
	for (size_t i = 0; args[i]; i++) {
		cr_assert_eq(buf_append_str(&cmd, " '"), 0);
		for (const char *p = args[i]; *p; p++)
			cr_assert_eq(*p == '\'' ? buf_append_str(&cmd, "'\\''") : buf_putc(&cmd, (uint8_t)*p), 0);
		cr_assert_eq(buf_putc(&cmd, '\''), 0);
	}
	cr_assert_eq(buf_printf(&cmd, " 2>'%s'", errfile), 0);
	cr_assert_eq(buf_terminate(&cmd), 0);
	FILE *p = popen((const char *)cmd.data, "r");
	cr_assert_not_null(p);
	struct buf out = BUF_INIT;
	char chunk[4096];
	for (size_t n; (n = fread(chunk, 1, sizeof chunk, p)) > 0;)
		cr_assert_eq(buf_append(&out, chunk, n), 0);
	int status = pclose(p);
	cr_assert(WIFEXITED(status), "rmqns-admin %s died", args[0]);
	r.code = WEXITSTATUS(status);
	cr_assert_eq(buf_terminate(&out), 0);
	r.out = (char *)out.data;
	r.err = harness_slurp(errfile);
	r.json = json_loads(r.out, 0, NULL);
	cr_assert_not_null(r.out);
	cr_assert_not_null(r.err);
	buf_free(&cmd);
	return r;
}

#define ADMIN(...) admin_run((const char *const[]){ __VA_ARGS__, NULL })

static void run_done(struct run *r)
{
	json_decref(r->json);
	free(r->out);
	free(r->err);
}

/* The run's JSON output, which must be there. */
static json_t *doc(const struct run *r)
{
	cr_assert_not_null(r->json, "not JSON: %s", r->out);
	return r->json;
}

/* A run the controller refused: exit 4, its code and remark on stderr (a
 * write's, on stdout beside the servers that took it). */
static void expect_refused(struct run r, const char *needle)
{
	cr_assert_eq(r.code, 4, "exit %d: %s", r.code, r.out);
	cr_assert(strstr(r.err, needle) || strstr(r.out, needle), "stderr: %s stdout: %s", r.err, r.out);
	run_done(&r);
}

static const char *jstr(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "(none)";
}

static long long jint(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	cr_assert(json_is_integer(v), "%s is not an integer", key);
	return (long long)json_integer_value(v);
}

/* ---- the controller nodes ---- */

/* A controller port whose Raft port (+1000) is free too. */
static int controller_port(void)
{
	int p = harness_free_port_pair(RAFT_OFFSET);
	cr_assert_gt(p, 0, "no free controller port pair");
	return p;
}

/* Starts n nodes: one group `group` of them all, or (independent) a
 * one-node group each, named group-0, group-1, ... */
/* $RMQNS_CTL_STYLE=jraft: the group configured with Java's jRaft keys,
 * each node's id its Raft address (the controller port + RAFT_OFFSET) */
static bool jraft_style(void)
{
	const char *style = getenv("RMQNS_CTL_STYLE");
	return style && strcmp(style, "jraft") == 0;
}

static char node_id[3][64];

static void start_nodes(int n, bool independent)
{
	char peers[256] = "", raft[256] = "", rpc[256] = "";
	bool jraft = jraft_style() && !independent;
	for (int i = 0; i < n; i++) {
		ctl_port[i] = controller_port();
		snprintf(ctl_addr[i], sizeof ctl_addr[i], "127.0.0.1:%d", ctl_port[i]);
		if (jraft)
			snprintf(node_id[i], sizeof node_id[i], "127.0.0.1:%d", ctl_port[i] + RAFT_OFFSET);
		else
			snprintf(node_id[i], sizeof node_id[i], "n%d", i);
		size_t len = strlen(peers);
		snprintf(peers + len, sizeof peers - len, "%sn%d-%s", i ? ";" : "", i, ctl_addr[i]);
		len = strlen(raft);
		snprintf(raft + len, sizeof raft - len, "%s%s", i ? "," : "", node_id[i]);
		len = strlen(rpc);
		snprintf(rpc + len, sizeof rpc - len, "%s%s", i ? "," : "", ctl_addr[i]);
	}
	for (int i = 0; i < n; i++) {
		char peers_arg[300], self_arg[256], group_arg[64], rpc_arg[300];
		if (jraft) {
			snprintf(peers_arg, sizeof peers_arg, "--jRaftInitConf=%s", raft);
			snprintf(rpc_arg, sizeof rpc_arg, "--jRaftControllerRPCAddr=%s", rpc);
			snprintf(self_arg, sizeof self_arg, "--jRaftServerId=%s", node_id[i]);
			snprintf(group_arg, sizeof group_arg, "--jRaftGroupId=group");
		} else if (independent) {
			snprintf(peers_arg, sizeof peers_arg, "--controllerDLegerPeers=n0-%s", ctl_addr[i]);
			snprintf(self_arg, sizeof self_arg, "--controllerDLegerSelfId=n0");
			snprintf(group_arg, sizeof group_arg, "--controllerDLegerGroup=group-%d", i);
		} else {
			snprintf(peers_arg, sizeof peers_arg, "--controllerDLegerPeers=%s", peers);
			snprintf(self_arg, sizeof self_arg, "--controllerDLegerSelfId=n%d", i);
			snprintf(group_arg, sizeof group_arg, "--controllerDLegerGroup=group");
		}
		char http_arg[32] = "--httpPort=0";
		if (i == 0 && http_port > 0)
			snprintf(http_arg, sizeof http_arg, "--httpPort=%d", http_port);
		/* the played brokers' 10 min heartbeat timeout is allowed: they
		 * stay alive while their connections are open */
		const char *args[] = { "--enableControllerInNamesrv=true", group_arg, peers_arg, self_arg,
				       "--controllerMaxHeartbeatTimeoutMillis=600000", http_arg,
				       jraft ? "--controllerType=jRaft" : NULL, rpc_arg, NULL };
		cr_assert_eq(harness_start(&node[i], args), 0, "node %d did not start", i);
		nnodes = i + 1;
	}
}

/* The metadata answer's ext value key from node i; NULL when absent. */
static char *meta_value(int i, const char *key)
{
	int err = 0;
	struct client *c = client_connect("127.0.0.1", ctl_port[i], HARNESS_IO_TIMEOUT_MS, &err);
	struct client_reply *r = NULL;
	char *v = NULL;
	if (c && harness_call(c, 1005, NULL, &r, NULL) == 0 && r->cmd.code == 0 &&
	    remoting_ext_get(&r->cmd, key))
		v = strdup(remoting_ext_get(&r->cmd, key));
	client_reply_free(r);
	if (c)
		client_close(c);
	return v;
}

/* Waits until every node names the same leader and that leader serves
 * (a state request it answers is not refused with 2007); its index. */
static int wait_leader(void)
{
	int64_t deadline = harness_now_ms() + LEADER_WAIT_MS;
	for (int round = 0; round < 1000 && harness_now_ms() < deadline; round++) {
		char *first = meta_value(0, "controllerLeaderAddress");
		bool same = first != NULL;
		for (int i = 1; i < nnodes && same; i++) {
			char *other = meta_value(i, "controllerLeaderAddress");
			same = other && strcmp(other, first) == 0;
			free(other);
		}
		int leader = -1;
		for (int i = 0; i < nnodes && same; i++)
			if (strcmp(first, ctl_addr[i]) == 0)
				leader = i;
		free(first);
		if (leader >= 0) {
			struct run r = ADMIN("getSyncStateSet", "-a", ctl_addr[leader], "-b", "none-yet");
			bool serving = strstr(r.err, "2007") == NULL && r.code != 3;
			run_done(&r);
			if (serving)
				return leader;
		}
		harness_sleep_ms(50);
	}
	cr_assert_fail("no leader within %d ms", LEADER_WAIT_MS);
	return -1;
}

/* ---- brokers, as a controller-mode broker starts ---- */

/* Broker `id` of set name in cluster C1 at addr: heartbeat (with a long
 * timeout: alive while its connection is open), id applied, registered;
 * all on one connection to the leader, kept in broker[slot]. Each answer
 * must be code 0. */
static void play_broker(int leader, int slot, const char *name, int id, const char *addr)
{
	char ids[16], check[64];
	struct client_reply *r[3] = { NULL };
	int rc[3], err = 0;
	snprintf(ids, sizeof ids, "%d", id);
	snprintf(check, sizeof check, "%s;1700000000000", addr);
	struct client *c = client_connect("127.0.0.1", ctl_port[leader], HARNESS_IO_TIMEOUT_MS, &err);
	cr_assert_not_null(c, "cannot connect to the leader");
	broker[slot] = c;
	rc[0] = harness_call(c, 904, NULL, &r[0], "clusterName", "C1", "brokerName", name, "brokerAddr",
			     addr, "brokerId", ids, "heartbeatTimeoutMills", "600000", "epoch", "0",
			     "maxOffset", "0", "confirmOffset", "0", NULL);
	rc[1] = rc[0] ? rc[0] : harness_call(c, 1013, NULL, &r[1], "clusterName", "C1", "brokerName", name,
					     "appliedBrokerId", ids, "registerCheckCode", check, NULL);
	rc[2] = rc[1] ? rc[1] : harness_call(c, 1003, NULL, &r[2], "clusterName", "C1", "brokerName", name,
					     "brokerId", ids, "brokerAddress", addr, NULL);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(rc[i], 0, "broker %d: request %d not answered", id, i);
		cr_assert_eq(r[i]->cmd.code, 0, "broker %d: request %d: code %d %s", id, i, r[i]->cmd.code,
			     r[i]->cmd.remark ? r[i]->cmd.remark : "");
		client_reply_free(r[i]);
	}
}

/* The broker also registers its routes with node i's NameServer, so that
 * `getSyncStateSet -c C1` finds its name there; on a connection kept in
 * broker[slot] (the NameServer drops a broker whose connection closes). */
static void register_route(int i, int slot, const char *name, const char *addr)
{
	struct buf body = BUF_INIT;
	struct client_reply *r = NULL;
	struct client *c = harness_connect(&node[i]);
	cr_assert_not_null(c);
	harness_topics_body(&body, "T", 2, 4);
	cr_assert_eq(harness_call(c, 103, (const char *)body.data, &r, "brokerName", name, "brokerAddr",
				  addr, "clusterName", "C1", "haServerAddr", addr, "brokerId", "0", NULL), 0);
	cr_assert_eq(r->cmd.code, 0);
	client_reply_free(r);
	broker[slot] = c;
	buf_free(&body);
}

/* ---- the three-node group ---- */

static void check_metadata(int leader, int follower)
{
	char expect[512], peers[256] = "";
	for (int i = 0; i < nnodes; i++) {
		size_t len = strlen(peers);
		/* Java's jRaft controller lists the addresses without ids */
		if (jraft_style())
			snprintf(peers + len, sizeof peers - len, "\n#Peer:\t%s", ctl_addr[i]);
		else
			snprintf(peers + len, sizeof peers - len, "\n#Peer:\tn%d:%s", i, ctl_addr[i]);
	}
	/* from the leader, then from every follower: the same leader, and
	 * whether the node asked is it */
	for (int i = 0; i < nnodes; i++) {
		int asked = (leader + i) % nnodes;
		struct run r = ADMIN("getControllerMetaData", "-a", ctl_addr[asked]);
		cr_assert_eq(r.code, 0, "%s", r.err);
		snprintf(expect, sizeof expect,
			 "\n#ControllerGroup\tgroup\n#ControllerLeaderId\t%s\n#ControllerLeaderAddress\t%s"
			 "\n#IsLeader\t%s%s\n", node_id[leader], ctl_addr[leader], asked == leader ? "true" : "false",
			 peers);
		cr_assert_str_eq(r.out, expect);
		run_done(&r);
	}

	struct run r = ADMIN("getControllerMetaData", "--json", "-a", ctl_addr[follower]);
	cr_assert_eq(r.code, 0, "%s", r.err);
	json_t *v = doc(&r);
	cr_assert_str_eq(jstr(v, "server"), ctl_addr[follower]);
	cr_assert_str_eq(jstr(v, "group"), "group");
	cr_assert(json_is_false(json_object_get(v, "isLeader")));
	cr_assert_str_eq(jstr(v, "controllerLeaderAddress"), ctl_addr[leader]);
	json_t *p = json_object_get(v, "peers");
	cr_assert_eq(json_array_size(p), 3);
	cr_assert_str_eq(jstr(json_array_get(p, 2), "id"), jraft_style() ? "" : "n2");
	cr_assert_str_eq(jstr(json_array_get(p, 2), "address"), ctl_addr[2]);
	run_done(&r);
}

#define A1 "127.0.0.1:30911"
#define A2 "127.0.0.1:30921"
#define REPLICA(id, addr, alive)                                                            \
	"ReplicaIdentity{brokerName='broker-a', brokerId=" id ", brokerAddress='" addr "', alive=" \
	alive "}"

Test(admin_controller, three_node_group)
{
	start_nodes(3, false);
	int leader = wait_leader(), follower = (leader + 1) % 3;
	char all[128];
	snprintf(all, sizeof all, "%s;%s;%s", ctl_addr[0], ctl_addr[1], ctl_addr[2]);

	check_metadata(leader, follower);

	/* broker 1 registers; the operator makes it master (through a follower:
	 * the request goes to the leader it names) */
	play_broker(leader, 0, "broker-a", 1, A1);
	struct run r = ADMIN("electMaster", "-a", ctl_addr[follower], "-c", "C1", "-bn", "broker-a", "-b", "1");
	cr_assert_eq(r.code, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "\n#ClusterName\tC1\n#BrokerName\tbroker-a\n#BrokerMasterAddr\t" A1
				"\n#MasterEpoch\t1\n#SyncStateSetEpoch\t1\n\t#Broker\t1\t" A1 "\n");
	run_done(&r);

	/* broker 2 joins: not in sync */
	play_broker(leader, 1, "broker-a", 2, A2);
	r = ADMIN("getSyncStateSet", "-a", ctl_addr[follower], "-b", "broker-a");
	cr_assert_eq(r.code, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "\n#brokerName\tbroker-a\n#MasterBrokerId\t1\n#MasterAddr\t" A1
				"\n#MasterEpoch\t1\n#SyncStateSetEpoch\t1\n#SyncStateSetNums\t1\n"
				"\nInSyncReplica:\t" REPLICA("1", A1, "true") "\n"
				"\nNotInSyncReplica:\t" REPLICA("2", A2, "true") "\n");
	run_done(&r);

	/* by names, one unknown: reported, the known one shown */
	r = ADMIN("getSyncStateSet", "--json", "-a", all, "-b", "broker-a, broker-zz");
	cr_assert_eq(r.code, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "no broker set broker-zz"), "%s", r.err);
	json_t *v = doc(&r), *set = json_array_get(json_object_get(v, "brokers"), 0);
	cr_assert_str_eq(jstr(v, "controller"), ctl_addr[leader]);
	cr_assert_eq(json_array_size(json_object_get(v, "brokers")), 1);
	cr_assert_str_eq(json_string_value(json_array_get(json_object_get(v, "unknown"), 0)), "broker-zz");
	cr_assert_str_eq(jstr(set, "brokerName"), "broker-a");
	cr_assert_eq(jint(set, "masterBrokerId"), 1);
	cr_assert_str_eq(jstr(set, "masterAddress"), A1);
	cr_assert_eq(jint(set, "masterEpoch"), 1);
	cr_assert_eq(jint(set, "syncStateSetEpoch"), 1);
	json_t *not_in = json_object_get(set, "notInSyncReplicas");
	cr_assert_eq(json_array_size(not_in), 1);
	cr_assert_eq(jint(json_array_get(not_in, 0), "brokerId"), 2);
	cr_assert(json_is_true(json_object_get(json_array_get(not_in, 0), "alive")));
	run_done(&r);

	/* by cluster: the names come from a NameServer */
	register_route(follower, 2, "broker-a", A1);
	char ns[32];
	snprintf(ns, sizeof ns, "127.0.0.1:%d", node[follower].port);
	r = ADMIN("getSyncStateSet", "-a", ctl_addr[leader], "-c", "C1", "-n", ns);
	cr_assert_eq(r.code, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "\n#brokerName\tbroker-a\n#MasterBrokerId\t1\n"), "%s", r.out);
	run_done(&r);
	expect_refused(ADMIN("getSyncStateSet", "-a", ctl_addr[leader], "-c", "C9", "-n", ns),
		       "knows no broker of cluster C9");

	/* the controller's refusals: 1 is already master; 2 is not in sync */
	expect_refused(ADMIN("electMaster", "-a", ctl_addr[leader], "-c", "C1", "-bn", "broker-a", "-b", "1"),
		       "code 2011 (CONTROLLER_MASTER_STILL_EXIST): The old master 1 is still alive");
	r = ADMIN("electMaster", "--json", "-a", ctl_addr[leader], "-c", "C1", "-bn", "broker-a", "-b", "2");
	cr_assert_eq(r.code, 4, "%s", r.out);
	v = doc(&r);
	cr_assert(json_is_false(json_object_get(v, "ok")));
	cr_assert_not_null(strstr(jstr(v, "error"), "code 2012 (CONTROLLER_ELECT_MASTER_FAILED)"), "%s", r.out);
	run_done(&r);

	/* unclean elections allowed on every node: 2 can be elected */
	r = ADMIN("updateControllerConfig", "-a", all, "-k", "enableElectUncleanMaster", "-v", "true");
	cr_assert_eq(r.code, 0, "%s", r.err);
	for (int i = 0; i < 3; i++) {
		char line[128];
		snprintf(line, sizeof line, "updateControllerConfig %s OK\n", ctl_addr[i]);
		cr_assert_not_null(strstr(r.out, line), "%s", r.out);
	}
	run_done(&r);
	r = ADMIN("getControllerConfig", "-a", ctl_addr[follower]);
	cr_assert_eq(r.code, 0, "%s", r.err);
	char head[128];
	snprintf(head, sizeof head, "============%s============\n", ctl_addr[follower]);
	cr_assert_eq(strncmp(r.out, head, strlen(head)), 0, "%s", r.out);
	cr_assert_not_null(strstr(r.out, "\nenableElectUncleanMaster                          =  true\n"),
			   "%s", r.out);
	run_done(&r);
	r = ADMIN("getControllerConfig", "--json", "-a", all);
	cr_assert_eq(r.code, 0, "%s", r.err);
	v = doc(&r);
	json_t *results = json_object_get(v, "results");
	cr_assert_eq(json_array_size(results), 3);
	for (int i = 0; i < 3; i++) {
		json_t *one = json_array_get(results, (size_t)i);
		cr_assert_str_eq(jstr(one, "server"), ctl_addr[i]);
		cr_assert_str_eq(jstr(json_object_get(one, "config"), "enableElectUncleanMaster"), "true");
		cr_assert_str_eq(jstr(json_object_get(one, "config"),
				      jraft_style() ? "jRaftServerId" : "controllerDLegerSelfId"),
				 node_id[i]);
	}
	run_done(&r);

	r = ADMIN("electMaster", "--json", "-a", ctl_addr[follower], "-c", "C1", "-bn", "broker-a", "-b", "2");
	cr_assert_eq(r.code, 0, "%s", r.err);
	v = doc(&r);
	cr_assert_str_eq(jstr(v, "controller"), ctl_addr[leader]);
	cr_assert_eq(jint(v, "masterBrokerId"), 2);
	cr_assert_str_eq(jstr(v, "masterAddress"), A2);
	cr_assert_eq(jint(v, "masterEpoch"), 2);
	cr_assert_eq(jint(v, "syncStateSetEpoch"), 2);
	cr_assert_str_eq(jstr(json_object_get(v, "brokerAddrs"), "1"), A1);
	cr_assert_str_eq(jstr(json_object_get(v, "brokerAddrs"), "2"), A2);
	cr_assert_eq(json_array_size(json_object_get(v, "syncStateSet")), 1);
	cr_assert_eq(json_integer_value(json_array_get(json_object_get(v, "syncStateSet"), 0)), 2);
	run_done(&r);

	/* cleaning: broker 1 is alive, so refused; once its connection is
	 * gone it is cleaned */
	expect_refused(ADMIN("cleanBrokerMetadata", "-a", ctl_addr[leader], "-c", "C1", "-bn", "broker-a",
			     "-b", "1"),
		       "code 2009 (CONTROLLER_INVALID_CLEAN_BROKER_METADATA): Broker [broker-a,  1] is still alive");
	client_close(broker[0]);
	broker[0] = NULL;
	bool dead = false;
	int64_t deadline = harness_now_ms() + HARNESS_WAIT_MS;
	for (int round = 0; round < 1500 && !dead && harness_now_ms() < deadline; round++) {
		r = ADMIN("getSyncStateSet", "-a", ctl_addr[leader], "-b", "broker-a");
		dead = strstr(r.out, REPLICA("1", A1, "false")) != NULL;
		run_done(&r);
		if (!dead)
			harness_sleep_ms(20);
	}
	cr_assert(dead, "broker 1 still alive after its connection closed");
	r = ADMIN("cleanBrokerMetadata", "-a", ctl_addr[follower], "-c", "C1", "-bn", "broker-a", "-b", "1");
	cr_assert_eq(r.code, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "clear broker broker-a metadata from controller success! \n");
	run_done(&r);
	r = ADMIN("getSyncStateSet", "--json", "-a", ctl_addr[leader], "-b", "broker-a");
	cr_assert_eq(r.code, 0, "%s", r.err);
	v = doc(&r);
	set = json_array_get(json_object_get(v, "brokers"), 0);
	cr_assert_eq(json_array_size(json_object_get(set, "inSyncReplicas")), 1);
	cr_assert_eq(jint(json_array_get(json_object_get(set, "inSyncReplicas"), 0), "brokerId"), 2);
	cr_assert_eq(json_array_size(json_object_get(set, "notInSyncReplicas")), 0);
	run_done(&r);

	/* mqadmin's rules: a cluster unless -l; ids as numbers */
	r = ADMIN("cleanBrokerMetadata", "-a", ctl_addr[leader], "-bn", "broker-a", "-b", "2");
	cr_assert_eq(r.code, 2);
	cr_assert_not_null(strstr(r.err, "needs -c CLUSTER unless -l"), "%s", r.err);
	run_done(&r);
	r = ADMIN("cleanBrokerMetadata", "-a", ctl_addr[leader], "-c", "C1", "-bn", "broker-a", "-b", "2;x");
	cr_assert_eq(r.code, 2);
	run_done(&r);
	/* -l: a living broker too (broker 2 is master and alive) */
	r = ADMIN("cleanBrokerMetadata", "--json", "-a", ctl_addr[leader], "-bn", "broker-a", "-b", "2", "-l");
	cr_assert_eq(r.code, 0, "%s", r.err);
	v = doc(&r);
	cr_assert(json_is_true(json_object_get(v, "ok")));
	cr_assert(json_is_true(json_object_get(v, "cleanLivingBroker")));
	run_done(&r);

	/* clusterDiff: the three nodes name the same leader */
	r = ADMIN("clusterDiff", "-a", all);
	cr_assert_eq(r.code, 0, "%s%s", r.out, r.err);
	char line[256];
	snprintf(line, sizeof line, "3 controllers compared (the leader only: no answer carries the Raft "
		 "term): they agree, leader %s at %s\n", node_id[leader], ctl_addr[leader]);
	cr_assert_str_eq(r.out, line);
	run_done(&r);
	r = ADMIN("clusterDiff", "--json", "-a", all);
	cr_assert_eq(r.code, 0, "%s", r.err);
	v = doc(&r);
	cr_assert(json_is_true(json_object_get(v, "agree")));
	json_t *ctl = json_object_get(v, "controllers");
	cr_assert(json_is_true(json_object_get(ctl, "agree")));
	cr_assert(json_is_false(json_object_get(ctl, "termCompared")));
	cr_assert_eq(json_array_size(json_object_get(ctl, "nodes")), 3);
	cr_assert(json_is_true(json_object_get(json_array_get(json_object_get(ctl, "nodes"), (size_t)leader),
					       "isLeader")));
	run_done(&r);
}

/* ---- two independent groups ---- */

Test(admin_controller, independent_groups_disagree)
{
	start_nodes(2, true);
	int64_t deadline = harness_now_ms() + LEADER_WAIT_MS;
	for (int i = 0; i < 2; i++) {
		char *leader = NULL;
		for (int round = 0; round < 1000 && !leader && harness_now_ms() < deadline; round++) {
			leader = meta_value(i, "controllerLeaderAddress");
			if (!leader)
				harness_sleep_ms(20);
		}
		cr_assert_not_null(leader, "node %d names no leader", i);
		cr_assert_str_eq(leader, ctl_addr[i], "a one-node group leads itself");
		free(leader);
	}
	char both[80];
	snprintf(both, sizeof both, "%s;%s", ctl_addr[0], ctl_addr[1]);

	struct run r = ADMIN("getControllerMetaData", "-a", ctl_addr[1]);
	cr_assert_eq(r.code, 0, "%s", r.err);
	char expect[512];
	snprintf(expect, sizeof expect,
		 "\n#ControllerGroup\tgroup-1\n#ControllerLeaderId\tn0\n#ControllerLeaderAddress\t%s"
		 "\n#IsLeader\ttrue\n#Peer:\tn0:%s\n", ctl_addr[1], ctl_addr[1]);
	cr_assert_str_eq(r.out, expect);
	run_done(&r);

	/* each leads itself: two leaders */
	r = ADMIN("clusterDiff", "-a", both);
	cr_assert_eq(r.code, 1, "%s%s", r.out, r.err);
	snprintf(expect, sizeof expect,
		 "controller leader:\n  %-24s n0 at %s (this node says it leads)\n"
		 "  %-24s n0 at %s (this node says it leads)\n"
		 "2 controllers compared (the leader only: no answer carries the Raft term): "
		 "the controllers DISAGREE on the leader\n", ctl_addr[0], ctl_addr[0], ctl_addr[1],
		 ctl_addr[1]);
	cr_assert_str_eq(r.out, expect);
	run_done(&r);

	/* with the NameServers: they agree (both empty), the controllers do not */
	char ns[80];
	snprintf(ns, sizeof ns, "127.0.0.1:%d;127.0.0.1:%d", node[0].port, node[1].port);
	r = ADMIN("clusterDiff", "--json", "-n", ns, "-a", both);
	cr_assert_eq(r.code, 1, "%s%s", r.out, r.err);
	json_t *v = doc(&r), *ctl = json_object_get(v, "controllers");
	cr_assert(json_is_false(json_object_get(v, "agree")));
	cr_assert_eq(json_integer_value(json_object_get(v, "brokersDiffer")), 0);
	cr_assert_eq(json_integer_value(json_object_get(v, "topicsDiffer")), 0);
	cr_assert(json_is_false(json_object_get(ctl, "agree")));
	json_t *n1 = json_array_get(json_object_get(ctl, "nodes"), 1);
	cr_assert_str_eq(jstr(n1, "server"), ctl_addr[1]);
	cr_assert_str_eq(jstr(n1, "group"), "group-1");
	cr_assert_str_eq(jstr(n1, "controllerLeaderAddress"), ctl_addr[1]);
	run_done(&r);

	/* one node gone: no verdict, exit 3 */
	int st = harness_stop(&node[1], SIGTERM, 10000, NULL);
	cr_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "node 1 did not stop cleanly");
	r = ADMIN("clusterDiff", "-a", both);
	cr_assert_eq(r.code, 3, "%s%s", r.out, r.err);
	cr_assert_not_null(strstr(r.err, "controller metadata: connection refused"), "%s", r.err);
	run_done(&r);
}

/* ---- the details: refused keys, the wrong port, counted requests ---- */

/* node 0's count of controller requests of code with response rsp */
static double ctl_requests(int code, const char *name, int rsp)
{
	char sample[200];
	snprintf(sample, sizeof sample,
		 "rmqns_requests_total{code=\"%d\",request=\"%s\",port=\"controller\",response=\"%d\"}",
		 code, name, rsp);
	double v = harness_metric(http_port, sample);
	return v < 0 ? 0 : v;
}

Test(admin_controller, refusals_hints_and_counters)
{
	http_port = harness_free_port();
	cr_assert_gt(http_port, 0);
	start_nodes(1, true);
	char *leader = NULL;
	int64_t deadline = harness_now_ms() + LEADER_WAIT_MS;
	for (int round = 0; round < 1000 && !leader && harness_now_ms() < deadline; round++)
		if (!(leader = meta_value(0, "controllerLeaderAddress")))
			harness_sleep_ms(20);
	cr_assert_not_null(leader, "the one-node group names no leader");
	free(leader);

	/* an unknown key and a key fixed at start: refused, named, nothing saved */
	expect_refused(ADMIN("updateControllerConfig", "-a", ctl_addr[0], "-k", "bogusKey", "-v", "1"),
		       "code 1 (SYSTEM_ERROR): unknown key: bogusKey");
	expect_refused(ADMIN("updateControllerConfig", "-a", ctl_addr[0], "-k", "controllerDLegerPeers",
			     "-v", "n0-127.0.0.1:1"),
		       "code 16 (NO_PERMISSION): Can not update config in black list: controllerDLegerPeers");
	struct run r = ADMIN("getControllerConfig", "--json", "-a", ctl_addr[0]);
	cr_assert_eq(r.code, 0, "%s", r.err);
	json_t *cfg = json_object_get(json_array_get(json_object_get(doc(&r), "results"), 0), "config");
	cr_assert_null(json_object_get(cfg, "bogusKey"));
	cr_assert_str_eq(jstr(cfg, "controllerDLegerPeers"), jstr(cfg, "controllerDLegerPeers"));
	cr_assert_null(strstr(jstr(cfg, "controllerDLegerPeers"), "127.0.0.1:1;"));
	run_done(&r);
	cr_assert(harness_wait_log(&node[0], "UPDATE_CONTROLLER_CONFIG refused (code 1): unknown key: bogusKey",
				   10000));

	/* -a at the NameServer's port: the answer says where the controller is */
	char ns[32], hint[160];
	snprintf(ns, sizeof ns, "127.0.0.1:%d", node[0].port);
	snprintf(hint, sizeof hint,
		 "code 3 (REQUEST_CODE_NOT_SUPPORTED):  request type 1005 not supported; this is a "
		 "NameServer port: the controller of this node listens on port %d", ctl_port[0]);
	expect_refused(ADMIN("getControllerMetaData", "-a", ns), hint);
	/* and the reverse: -n at the controller's port */
	snprintf(hint, sizeof hint,
		 " request type 105 not supported; this is a controller port: the NameServer of "
		 "this node listens on port %d", node[0].port);
	expect_refused(ADMIN("topicRoute", "-n", ctl_addr[0], "-t", "T"), hint);

	/* counted by name on the controller's port, the NameServer's series apart */
	double before = ctl_requests(1005, "CONTROLLER_GET_METADATA_INFO", 0);
	for (int i = 0; i < 7; i++)
		free(meta_value(0, "controllerLeaderAddress"));
	cr_assert_eq(ctl_requests(1005, "CONTROLLER_GET_METADATA_INFO", 0), before + 7);
	cr_assert_geq(harness_metric(http_port, "rmqns_request_duration_seconds_count{code=\"1005\","
				     "request=\"CONTROLLER_GET_METADATA_INFO\",port=\"controller\"}"),
		      before + 7, "timed too");
	cr_assert_eq(ctl_requests(1009, "UPDATE_CONTROLLER_CONFIG", 1), 1);
	cr_assert_eq(ctl_requests(1009, "UPDATE_CONTROLLER_CONFIG", 16), 1);
	cr_assert_eq(ctl_requests(105, "GET_ROUTEINFO_BY_TOPIC", 3), 1);
	cr_assert_eq(harness_metric(http_port, "rmqns_requests_total{code=\"1005\",request="
				    "\"CONTROLLER_GET_METADATA_INFO\",response=\"3\"}"), 1,
		     "the NameServer port's series keeps its labels");

	/* a retry loop of refused elections: its log lines are bounded */
	int err = 0, refused = 0;
	struct client *c = client_connect("127.0.0.1", ctl_port[0], HARNESS_IO_TIMEOUT_MS, &err);
	cr_assert_not_null(c);
	int64_t t0 = harness_now_ms();
	for (int i = 0; i < ELECT_LOOP; i++) {
		struct client_reply *rep = NULL;
		cr_assert_eq(harness_call(c, 1002, NULL, &rep, "clusterName", "C1", "brokerName", "ghost",
					  "brokerId", "1", "designateElect", "true", NULL), 0);
		refused += rep->cmd.code != 0;
		client_reply_free(rep);
	}
	int64_t took_ms = harness_now_ms() - t0;
	client_close(c);
	cr_assert_eq(refused, ELECT_LOOP);
	cr_assert_eq(ctl_requests(1002, "CONTROLLER_ELECT_MASTER", 2010), ELECT_LOOP);
	cr_assert(harness_wait_log(&node[0], "election in ghost found no master", 10000));
	char *log = harness_read_log(&node[0]);
	cr_assert_not_null(log);
	int lines = 0;
	for (const char *p = log; (p = strstr(p, "election in ghost found no master")); p++)
		lines++;
	free(log);
	/* 10 lines a 10 s window (log.h), in every window the loop touched */
	long windows = took_ms / 10000 + 2;
	cr_assert(lines >= 1 && lines <= 10 * windows, "%d lines for %d refusals in %lld ms", lines,
		  ELECT_LOOP, (long long)took_ms);
}
