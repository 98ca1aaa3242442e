/* rmqns-bench `controller` against one real rmqns whose embedded controller
 * is a single-node group: two broker sets of two brokers each go through the
 * controller-mode life cycle, each set's master is killed once, and every
 * kill must end with a new master elected, told with its own 1008, and
 * named brokerId 0 in the route, within the bench's fail-over bound. The
 * controller is then asked directly (1006) whether it holds what the bench
 * reported: each set's master is the one elected, at the epoch after one
 * kill. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "bench_run.h"
#include "ctl_cluster.h"
#include "harness.h"
#include "rmqns/client.h"
#include "rmqns/controller.h"
#include "rmqns/json_tree.h"
#include "rmqns/remoting.h"

static struct harness_server srv;
static char store[256];
static int ctl_port;

/* The controller's own port and its Raft port (+1000) both free. */
static int pick_ports(void)
{
	return harness_free_port_pair(1000);
}

static void server_up(void)
{
	cr_assert_eq(harness_mkdtemp(store, sizeof(store), "rmqns-ctl-store"), 0);
	ctl_port = pick_ports();
	cr_assert_gt(ctl_port, 0);
	char peers[96], path[300];
	snprintf(peers, sizeof(peers), "--controllerDLegerPeers=n0-127.0.0.1:%d", ctl_port);
	snprintf(path, sizeof(path), "--controllerStorePath=%s", store);
	const char *args[] = { "--enableControllerInNamesrv=true", "--controllerDLegerGroup=G", peers,
			       "--controllerDLegerSelfId=n0", path, NULL };
	cr_assert_eq(harness_start(&srv, args), 0, "rmqns with a controller did not start");
}

static void server_down(void)
{
	int st = harness_stop(&srv, SIGTERM, 10000, NULL);
	harness_cleanup(&srv);
	harness_rmdir(store);
	cr_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "rmqns did not stop cleanly");
}

TestSuite(bench_controller_server, .init = server_up, .fini = server_down, .timeout = 180);

Test(bench_controller_server, every_kill_elects_notifies_and_routes_a_new_master)
{
	char ctl[64];
	snprintf(ctl, sizeof(ctl), "127.0.0.1:%d", ctl_port);
	const char *a[] = { "controller", "--controller-addr", ctl, "--broker-sets", "2", "--replicas",
			    "2", "--kills", "2", "--kill-every", "500ms", "--return-after", "300ms",
			    "--poll-interval", "2ms", "--heartbeat-interval", "200ms", "--failover-timeout",
			    "20s", "--broker-prefix", "ctlbench", "-d", "100s", NULL };
	/* exit 0 (asserted inside) means: every set got its master, both kills were made */
	json_t *d = bench_run_json(RMQNS_BENCH_BIN, srv.port, a);
	json_t *c = json_object_get(d, "controller");
	cr_assert_not_null(c);
	cr_assert_str_eq(json_string_value(json_object_get(c, "mode")), "kill");
	cr_assert_eq(json_integer_value(json_object_get(c, "kills")), 2);
	json_t *missing = json_object_get(c, "missing");
	cr_assert_eq(json_integer_value(json_object_get(missing, "elected_ms")), 0);
	cr_assert_eq(json_integer_value(json_object_get(missing, "notified_ms")), 0);
	cr_assert_eq(json_integer_value(json_object_get(missing, "route_ms")), 0);
	cr_assert_gt(json_integer_value(json_object_get(c, "notifications")), 0);
	json_t *each = json_object_get(c, "each");
	cr_assert_eq(json_array_size(each), 2);
	long long new_master[2] = { -1, -1 };
	for (size_t i = 0; i < 2; i++) {
		json_t *k = json_array_get(each, i);
		long long set = json_integer_value(json_object_get(k, "set"));
		long long old = json_integer_value(json_object_get(k, "old_master"));
		long long nm = json_integer_value(json_object_get(k, "new_master"));
		cr_assert_eq(set, (long long)i, "kills go round the sets");
		cr_assert(nm > 0 && nm != old, "kill %zu: master %lld -> %lld", i, old, nm);
		double el = json_real_value(json_object_get(k, "elected_ms"));
		double no = json_real_value(json_object_get(k, "notified_ms"));
		double rt = json_real_value(json_object_get(k, "route_ms"));
		/* seen at all, within the bound the bench was given, in causal order */
		cr_assert(el >= 0 && no >= 0 && rt >= 0 && rt < 20000, "kill %zu: %f %f %f", i, el, no, rt);
		cr_assert(el <= no, "kill %zu: notified (%f) before elected (%f)", i, no, el);
		cr_assert(json_is_true(json_object_get(k, "route_agrees")), "kill %zu: route names another", i);
		cr_assert_geq(json_real_value(json_object_get(k, "back_ms")), 0, "kill %zu: the old master "
			      "did not come back as a slave", i);
		new_master[set] = nm;
	}

	/* what the controller holds */
	int err = 0;
	struct client *cl = client_connect("127.0.0.1", ctl_port, 5000, &err);
	cr_assert_not_null(cl, "controller port: %d", err);
	struct client_reply *rep = NULL;
	cr_assert_eq(harness_call(cl, CTL_REQ_GET_SYNC_STATE_DATA, "[\"ctlbench-0\",\"ctlbench-1\"]", &rep,
				  NULL), 0);
	cr_assert_eq(rep->cmd.code, 0);
	json_t *body = json_body_parse(rep->cmd.body, rep->cmd.body_len, &err);
	cr_assert_not_null(body);
	for (int s = 0; s < 2; s++) {
		char name[16];
		snprintf(name, sizeof(name), "ctlbench-%d", s);
		json_t *set = json_object_get(json_object_get(body, "replicasInfoTable"), name);
		cr_assert_not_null(set, "%s unknown to the controller", name);
		/* the bench has exited: its brokers' connections closed one after
		 * the other, so the controller may have moved on since (the master's
		 * close elects the replica still open, the last close finds nobody:
		 * epochs 3 and 4); as the bench left it, epoch 2 names the new master */
		json_t *mid = json_object_get(set, "masterBrokerId");
		long long epoch = json_integer_value(json_object_get(set, "masterEpoch"));
		cr_assert(epoch >= 2 && epoch <= 4, "%s: epoch %lld", name, epoch);
		if (epoch == 2)
			cr_assert_eq(json_integer_value(mid), new_master[s], "%s", name);
		else if (mid)
			cr_assert(json_integer_value(mid) == 1 || json_integer_value(mid) == 2, "%s", name);
		/* the killed master came back with its old id: still two replicas, ids 1 and 2 */
		long long ids = 0;
		size_t n = 0;
		const char *lists[] = { "inSyncReplicas", "notInSyncReplicas" };
		for (int l = 0; l < 2; l++) {
			size_t i;
			json_t *rep1;
			json_array_foreach(json_object_get(set, lists[l]), i, rep1) {
				ids |= 1ll << json_integer_value(json_object_get(rep1, "brokerId"));
				n++;
			}
		}
		cr_assert(n == 2 && ids == ((1ll << 1) | (1ll << 2)), "%s: %zu replicas", name, n);
	}
	json_decref(body);
	client_reply_free(rep);
	client_close(cl);
	json_decref(d);
}

/* Brokers in controller mode against three NameServers configured as
 * RocketMQ 5.2's jRaft set-up: the players' controllerAddr is the
 * jRaftControllerRPCAddr list (';'-separated, as a broker takes it). */
static struct ctl_cluster jcl;

static void jraft_fini(void)
{
	cr_expect_eq(ctl_cluster_cleanup(&jcl), 0, "nodes did not stop cleanly");
}

TestSuite(bench_controller_jraft, .fini = jraft_fini, .timeout = 180);

Test(bench_controller_jraft, players_fail_over_through_a_jraft_group)
{
	cr_assert_eq(setenv("RMQNS_CTL_STYLE", "jraft", 1), 0);
	cr_assert_eq(ctl_cluster_init(&jcl, "127.0.0.1"), 0);
	for (int i = 0; i < CTL_CLUSTER_NODES; i++)
		cr_assert_eq(ctl_cluster_start(&jcl, i), 0, "node %d did not start", i);
	const bool all[CTL_CLUSTER_NODES] = { true, true, true };
	int leader = ctl_cluster_wait_leader(&jcl, all, NULL);
	cr_assert_geq(leader, 0, "no jRaft leader");

	char addrs[sizeof jcl.peers];
	snprintf(addrs, sizeof addrs, "%s", jcl.peers);
	for (char *c = addrs; (c = strchr(c, ',')) != NULL;)
		*c = ';';
	const char *a[] = { "controller", "--controller-addr", addrs, "--broker-sets", "1",
			    "--replicas", "2", "--kills", "1", "--kill-every", "500ms",
			    "--return-after", "300ms", "--poll-interval", "2ms", "--heartbeat-interval",
			    "200ms", "--failover-timeout", "20s", "--broker-prefix", "jrbench", "-d",
			    "100s", NULL };
	/* the players register with the leader's NameServer, whose route they check */
	json_t *d = bench_run_json(RMQNS_BENCH_BIN, jcl.node[leader].port, a);
	json_t *c = json_object_get(d, "controller");
	cr_assert_not_null(c);
	cr_assert_eq(json_integer_value(json_object_get(c, "kills")), 1);
	json_t *missing = json_object_get(c, "missing");
	cr_assert_eq(json_integer_value(json_object_get(missing, "elected_ms")), 0);
	cr_assert_eq(json_integer_value(json_object_get(missing, "notified_ms")), 0);
	cr_assert_eq(json_integer_value(json_object_get(missing, "route_ms")), 0);
	json_t *k = json_array_get(json_object_get(c, "each"), 0);
	cr_assert_not_null(k);
	long long old = json_integer_value(json_object_get(k, "old_master"));
	long long nm = json_integer_value(json_object_get(k, "new_master"));
	cr_assert(nm > 0 && nm != old, "master %lld -> %lld", old, nm);
	cr_assert(json_is_true(json_object_get(k, "route_agrees")), "the route names another");
	json_decref(d);
}
