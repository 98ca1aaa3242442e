/* Three real rmqns processes running the controller on loopback, in the
 * set-up $RMQNS_CTL_STYLE names (ctl_cluster.h: embedded from a DLedger or a
 * jRaft namesrv.conf, or standalone from a Java controller.conf): they elect one leader that every node names, a follower
 * refuses leader-only requests with CONTROLLER_NOT_LEADER, a killed
 * leader is replaced with every acknowledged event kept, all three killed
 * with SIGKILL come back with every broker set, master and epoch, a
 * broker's disconnect from the leader moves the master to the live
 * replica and the broker is told (1008), and the NameServer ports keep
 * answering beside (standalone: there are none). The times printed are for reading; nothing here is
 * timed against a bound tighter than "it happens at all". */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>

#include "ctl_cluster.h"
#include "harness.h"
#include "rmqns/client.h"
#include "rmqns/err.h"
#include "rmqns/remoting.h"

#define NODES CTL_CLUSTER_NODES
#define WAIT_MS CTL_CLUSTER_WAIT_MS

static struct ctl_cluster cl;

static void cluster_fini(void)
{
	cr_expect_eq(ctl_cluster_cleanup(&cl), 0, "nodes did not stop cleanly");
}

static void node_start(int i)
{
	cr_assert_eq(ctl_cluster_start(&cl, i), 0, "node %d did not start", i);
}

/* host: how controllerDLegerPeers spells the nodes' address */
static void cluster_start_at(const char *host)
{
	cr_assert_eq(ctl_cluster_init(&cl, host), 0);
	for (int i = 0; i < NODES; i++)
		node_start(i);
}

static void cluster_start(void)
{
	cluster_start_at("127.0.0.1");
}

static int ctl_call(int i, int32_t code, const char *const *ext, const char *body,
		    struct client_reply **out)
{
	return ctl_cluster_call(&cl, i, code, ext, body, out);
}

static int wait_leader(const bool *alive, int64_t *serving_ms)
{
	return ctl_cluster_wait_leader(&cl, alive, serving_ms);
}

static const bool all_alive[NODES] = { true, true, true };

/* Replica `id` of set `name` heart-beats on c (two-way, to see it taken). */
static void heartbeat(struct client *c, const char *name, const char *addr, const char *id)
{
	struct client_reply *r;
	cr_assert_eq(harness_call(c, 904, NULL, &r, "clusterName", "C1", "brokerName", name,
				  "brokerAddr", addr, "brokerId", id, NULL), 0);
	cr_assert_eq(r->cmd.code, 0);
	client_reply_free(r);
}

/* A broker set `name` of replicas 1 and 2 (addresses a1, a2), made
 * through the leader: ids applied, registered, replica 1 heart-beating on
 * hb (its liveness lasts while hb is open), the first election naming 1. */
static void make_set(int leader, const char *name, const char *a1, const char *a2,
		     struct client *hb)
{
	char code1[80], code2[80];
	snprintf(code1, sizeof code1, "%s;1", a1);
	snprintf(code2, sizeof code2, "%s;2", a2);
	const char *const apply1[] = { "clusterName", "C1", "brokerName", name, "appliedBrokerId", "1",
				       "registerCheckCode", code1, NULL };
	const char *const apply2[] = { "clusterName", "C1", "brokerName", name, "appliedBrokerId", "2",
				       "registerCheckCode", code2, NULL };
	cr_assert_eq(ctl_call(leader, 1013, apply1, NULL, NULL), 0);
	cr_assert_eq(ctl_call(leader, 1013, apply2, NULL, NULL), 0);
	const char *const reg1[] = { "clusterName", "C1", "brokerName", name, "brokerId", "1",
				     "brokerAddress", a1, NULL };
	cr_assert_eq(ctl_call(leader, 1003, reg1, NULL, NULL), 0);
	heartbeat(hb, name, a1, "1");
	const char *const elect[] = { "clusterName", "C1", "brokerName", name, "brokerId", "1",
				      "designateElect", "false", NULL };
	cr_assert_eq(ctl_call(leader, 1002, elect, NULL, NULL), 0);
}

/* GET_REPLICA_INFO on node i: code, and the master id and epoch. */
static int replica_info(int i, const char *name, int64_t *master, int64_t *epoch)
{
	const char *const ext[] = { "brokerName", name, NULL };
	struct client_reply *r;
	int code = ctl_call(i, 1004, ext, NULL, &r);
	*master = -1;
	*epoch = -1;
	if (code == 0) {
		remoting_ext_get_long(&r->cmd, "masterBrokerId", master);
		remoting_ext_get_long(&r->cmd, "masterEpoch", epoch);
	}
	if (r)
		client_reply_free(r);
	return code;
}

TestSuite(controller_cluster, .fini = cluster_fini, .timeout = 170);

Test(controller_cluster, one_leader_named_by_all_and_followers_refuse)
{
	cluster_start();
	int64_t ms;
	int leader = wait_leader(all_alive, &ms);
	cr_assert_geq(leader, 0, "no leader that all three name");
	printf("controller_cluster: a leader served %lld ms after the three started\n", (long long)ms);

	struct client_reply *r;
	cr_assert_eq(ctl_call(leader, 1005, NULL, NULL, &r), 0);
	cr_assert_str_eq(remoting_ext_get(&r->cmd, "isLeader"), "true");
	cr_assert_str_eq(remoting_ext_get(&r->cmd, "group"), "g1");
	client_reply_free(r);

	int follower = (leader + 1) % NODES;
	char leader_addr[64];
	snprintf(leader_addr, sizeof leader_addr, "127.0.0.1:%d", cl.ctl_port[leader]);
	cr_assert_eq(ctl_call(follower, 1005, NULL, NULL, &r), 0);
	cr_assert_str_eq(remoting_ext_get(&r->cmd, "isLeader"), "false");
	cr_assert_str_eq(remoting_ext_get(&r->cmd, "controllerLeaderAddress"), leader_addr);
	client_reply_free(r);
	const char *const next_id[] = { "clusterName", "C1", "brokerName", "b", NULL };
	cr_assert_eq(ctl_call(follower, 1012, next_id, NULL, NULL), 2007, "CONTROLLER_NOT_LEADER");

	/* processReadEvent: off, reads add nothing to the log; on (live,
	 * through 1009), each read waits for an entry of its own, and its
	 * answer is the same */
	int hp = cl.http_port[leader];
	harness_sleep_ms(100); /* the status is published every 20 ms */
	double applied = harness_metric(hp, "rmqns_controller_last_applied");
	for (int k = 0; k < 3; k++)
		cr_assert_eq(ctl_call(leader, 1012, next_id, NULL, NULL), 0);
	harness_sleep_ms(100);
	cr_assert_eq(harness_metric(hp, "rmqns_controller_last_applied"), applied);
	cr_assert_eq(ctl_call(leader, 1009, NULL, "processReadEvent=true", NULL), 0);
	for (int k = 0; k < 3; k++) {
		cr_assert_eq(ctl_call(leader, 1012, next_id, NULL, &r), 0);
		cr_assert_str_eq(remoting_ext_get(&r->cmd, "nextBrokerId"), "1");
		client_reply_free(r);
	}
	double now_applied = applied;
	for (int k = 0; k < 100 && now_applied < applied + 3; k++) {
		harness_sleep_ms(20);
		now_applied = harness_metric(hp, "rmqns_controller_last_applied");
	}
	cr_assert_eq(now_applied, applied + 3, "three reads, three entries: %f -> %f", applied,
		     now_applied);

	struct client *c = harness_connect(&cl.node[follower]);
	cr_assert_not_null(c);
	if (cl.standalone) {
		/* no NameServer port: the boot line names the controller's, and
		 * it serves no route request (GET_BROKER_CLUSTER_INFO) */
		cr_assert_eq(cl.node[follower].port, cl.ctl_port[follower]);
		cr_assert_eq(harness_call(c, 106, NULL, &r, NULL), 0);
		cr_assert_eq(r->cmd.code, 3, "code %d", r->cmd.code);
		client_reply_free(r);
		client_close(c);
		return;
	}
	/* the NameServer port of every node is the NameServer's: 1005 is not its code */
	cr_assert_eq(harness_call(c, 1005, NULL, &r, NULL), 0);
	cr_assert_eq(r->cmd.code, 3);
	client_reply_free(r);
	cr_assert_eq(harness_call(c, 106, NULL, &r, NULL), 0); /* GET_BROKER_CLUSTER_INFO */
	cr_assert_eq(r->cmd.code, 0);
	client_reply_free(r);
	client_close(c);
}

/* Peers named, as a StatefulSet's or Compose's are: the Raft port is
 * dialled at what the name resolves to (libraft itself takes numbers). */
Test(controller_cluster, peers_given_by_host_name_form_a_group)
{
	cluster_start_at("localhost");
	int leader = wait_leader(all_alive, NULL);
	cr_assert_geq(leader, 0, "no leader with named peers");
	struct client_reply *r;
	cr_assert_eq(ctl_call((leader + 1) % NODES, 1005, NULL, NULL, &r), 0);
	char want[64];
	snprintf(want, sizeof want, "localhost:%d", cl.ctl_port[leader]);
	cr_assert_str_eq(remoting_ext_get(&r->cmd, "controllerLeaderAddress"), want);
	client_reply_free(r);
}

Test(controller_cluster, killed_leader_is_replaced_and_nothing_acknowledged_is_lost)
{
	cluster_start();
	int leader = wait_leader(all_alive, NULL);
	cr_assert_geq(leader, 0);
	struct client *hb = client_connect("127.0.0.1", cl.ctl_port[leader], 1000, &(int){ 0 });
	cr_assert_not_null(hb);
	make_set(leader, "b1", "127.0.0.1:30911", "127.0.0.1:30912", hb);
	int64_t master, epoch;
	cr_assert_eq(replica_info(leader, "b1", &master, &epoch), 0);
	cr_assert_eq(master, 1);
	cr_assert_eq(epoch, 1);

	bool alive[NODES] = { true, true, true };
	int64_t t0 = harness_now_ms();
	cr_assert_eq(kill(cl.node[leader].pid, SIGKILL), 0);
	harness_stop(&cl.node[leader], 0, 5000, NULL); /* reaps it */
	alive[leader] = false;
	int64_t ms;
	int next = wait_leader(alive, &ms);
	cr_assert_geq(next, 0, "no new leader");
	cr_assert_neq(next, leader);
	printf("controller_cluster: leader killed, a new leader served %lld ms later\n",
	       (long long)(harness_now_ms() - t0));
	cr_assert_eq(replica_info(next, "b1", &master, &epoch), 0, "the set was lost");
	cr_assert_eq(master, 1);
	cr_assert_eq(epoch, 1);

	/* the old leader comes back as a follower and catches up */
	node_start(leader);
	alive[leader] = true;
	cr_assert_eq(wait_leader(alive, NULL), next);
	const char *const next_id[] = { "clusterName", "C1", "brokerName", "b1", NULL };
	cr_assert_eq(ctl_call(leader, 1012, next_id, NULL, NULL), 2007);
	client_close(hb);
}

Test(controller_cluster, all_killed_and_restarted_keep_every_set_master_and_epoch)
{
	cluster_start();
	int leader = wait_leader(all_alive, NULL);
	cr_assert_geq(leader, 0);
	char name[32], a1[32], a2[32];
	struct client *hb = client_connect("127.0.0.1", cl.ctl_port[leader], 1000, &(int){ 0 });
	cr_assert_not_null(hb);
	for (int k = 0; k < 5; k++) {
		snprintf(name, sizeof name, "set%d", k);
		snprintf(a1, sizeof a1, "127.0.0.1:%d", 31000 + 2 * k);
		snprintf(a2, sizeof a2, "127.0.0.1:%d", 31001 + 2 * k);
		make_set(leader, name, a1, a2, hb);
	}
	/* a second election on set0, by an operator: epoch 2, master 2 */
	heartbeat(hb, "set0", "127.0.0.1:31001", "2");
	struct client_reply *r;
	cr_assert_eq(harness_call(hb, 1001, "{\"syncStateSet\":[1,2],\"syncStateSetEpoch\":1}", &r,
				  "brokerName", "set0", "masterBrokerId", "1", "masterEpoch", "1", NULL), 0);
	cr_assert_eq(r->cmd.code, 0);
	client_reply_free(r);
	const char *const elect[] = { "clusterName", "C1", "brokerName", "set0", "brokerId", "2",
				      "designateElect", "true", NULL };
	cr_assert_eq(ctl_call(leader, 1002, elect, NULL, NULL), 0);

	/* hb stays open: its close would make the leader replace the master */
	for (int i = 0; i < NODES; i++) {
		cr_assert_eq(kill(cl.node[i].pid, SIGKILL), 0);
		harness_stop(&cl.node[i], 0, 5000, NULL);
	}
	for (int i = 0; i < NODES; i++)
		node_start(i);
	leader = wait_leader(all_alive, NULL);
	cr_assert_geq(leader, 0, "no leader after the restart");
	int64_t master, epoch;
	cr_assert_eq(replica_info(leader, "set0", &master, &epoch), 0);
	cr_assert_eq(master, 2, "set0: master %lld epoch %lld", (long long)master, (long long)epoch);
	cr_assert_eq(epoch, 2);
	for (int k = 1; k < 5; k++) {
		snprintf(name, sizeof name, "set%d", k);
		cr_assert_eq(replica_info(leader, name, &master, &epoch), 0, "%s lost", name);
		cr_assert_eq(master, 1);
		cr_assert_eq(epoch, 1);
	}
	/* ids keep counting from where they were */
	const char *const next_id[] = { "clusterName", "C1", "brokerName", "set3", NULL };
	cr_assert_eq(ctl_call(leader, 1012, next_id, NULL, &r), 0);
	cr_assert_str_eq(remoting_ext_get(&r->cmd, "nextBrokerId"), "3");
	client_reply_free(r);
	client_close(hb);
}

/* A broker's port: accepts one connection and reads one frame. */
static int listen_loopback(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 4) == 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

Test(controller_cluster, master_disconnect_elects_the_live_replica_and_tells_it)
{
	cluster_start();
	int leader = wait_leader(all_alive, NULL);
	cr_assert_geq(leader, 0);
	int p1, p2;
	int l1 = listen_loopback(&p1), l2 = listen_loopback(&p2);
	char a1[32], a2[32];
	snprintf(a1, sizeof a1, "127.0.0.1:%d", p1);
	snprintf(a2, sizeof a2, "127.0.0.1:%d", p2);
	/* both replicas heart-beat on connections of their own; replica 2
	 * joins the sync-state set through the master's ALTER */
	struct client *h1 = client_connect("127.0.0.1", cl.ctl_port[leader], 1000, &(int){ 0 });
	struct client *h2 = client_connect("127.0.0.1", cl.ctl_port[leader], 1000, &(int){ 0 });
	cr_assert(h1 && h2);
	make_set(leader, "b2", a1, a2, h1);
	heartbeat(h2, "b2", a2, "2");
	struct client_reply *r;
	cr_assert_eq(harness_call(h1, 1001, "{\"syncStateSet\":[1,2],\"syncStateSetEpoch\":1}", &r,
				  "brokerName", "b2", "masterBrokerId", "1", "masterEpoch", "1", NULL), 0);
	cr_assert_eq(r->cmd.code, 0, "ALTER_SYNC_STATE_SET: %d %s", r->cmd.code,
		     r->cmd.remark ? r->cmd.remark : "");
	client_reply_free(r);

	int64_t t0 = harness_now_ms();
	client_close(h1); /* the master's process is gone */
	int64_t master = -1, epoch = -1;
	while (harness_now_ms() - t0 < WAIT_MS && master != 2) {
		replica_info(leader, "b2", &master, &epoch);
		if (master != 2)
			harness_sleep_ms(10);
	}
	cr_assert_eq(master, 2, "replica 2 not elected");
	cr_assert_eq(epoch, 2);
	printf("controller_cluster: master's connection closed, replica elected %lld ms later\n",
	       (long long)(harness_now_ms() - t0));

	/* NOTIFY_BROKER_ROLE_CHANGED reached the live replica */
	struct timeval tv = { .tv_sec = 10 };
	setsockopt(l2, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	int fd = accept(l2, NULL, NULL);
	cr_assert_geq(fd, 0, "the new master was not told");
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	uint8_t frame[4096];
	size_t got = 0;
	while (got < 4 || got < 4 + ((size_t)frame[0] << 24 | (size_t)frame[1] << 16 |
				     (size_t)frame[2] << 8 | frame[3])) {
		ssize_t k = read(fd, frame + got, sizeof frame - got);
		cr_assert_gt(k, 0, "the notice was cut short");
		got += (size_t)k;
	}
	struct remoting_cmd cmd;
	cr_assert_eq(remoting_decode(frame, got, &cmd), 0);
	cr_assert_eq(cmd.code, 1008);
	cr_assert_str_eq(remoting_ext_get(&cmd, "masterBrokerId"), "2");
	cr_assert_str_eq(remoting_ext_get(&cmd, "masterAddress"), a2);
	cr_assert_str_eq(remoting_ext_get(&cmd, "masterEpoch"), "2");
	remoting_cmd_release(&cmd);
	close(fd);
	close(l1);
	close(l2);

	/* what an operator sees: the election in the log, the state as JSON,
	 * the series in /metrics, the controller's line in /healthz */
	cr_assert(harness_wait_log(&cl.node[leader], "b2 elected broker 2", HARNESS_WAIT_MS));
	char needle[256];
	snprintf(needle, sizeof needle, "leader is %s", cl.id[leader]);
	cr_assert(harness_wait_log(&cl.node[(leader + 1) % NODES], needle, HARNESS_WAIT_MS));
	char *doc = NULL;
	bool seen = false;
	for (int k = 0; k < 50 && !seen; k++) { /* the view is rebuilt every 500 ms */
		free(doc);
		doc = NULL;
		cr_assert_eq(harness_http_get(cl.http_port[leader], "/controller", &doc), 200);
		seen = strstr(doc, "\"masterBrokerId\":2") != NULL;
		if (!seen)
			harness_sleep_ms(100);
	}
	cr_assert(seen, "/controller: %s", doc);
	cr_assert_not_null(strstr(doc, "\"role\":\"leader\""), "%s", doc);
	cr_assert_not_null(strstr(doc, "\"brokerName\":\"b2\""), "%s", doc);
	cr_assert_not_null(strstr(doc, "\"masterEpoch\":2"), "%s", doc);
	free(doc);
	cr_assert_eq(harness_http_get(cl.http_port[(leader + 1) % NODES], "/controller", &doc), 200);
	cr_assert_not_null(strstr(doc, "\"role\":\"follower\""), "%s", doc);
	free(doc);
	cr_assert_eq(harness_metric(cl.http_port[leader], "rmqns_controller_leader"), 1);
	cr_assert_eq(harness_metric(cl.http_port[(leader + 1) % NODES], "rmqns_controller_leader"), 0);
	cr_assert_geq(harness_metric(cl.http_port[leader],
				     "rmqns_controller_elections_total{result=\"elected\"}"), 2);
	cr_assert_eq(harness_metric(cl.http_port[leader], "rmqns_controller_masters"), 1);
	cr_assert_eq(harness_metric(cl.http_port[leader],
				    "rmqns_controller_set_master_id{cluster=\"C1\",broker=\"b2\"}"), 2);
	cr_assert_eq(harness_metric(cl.http_port[leader],
				    "rmqns_controller_set_master_epoch{cluster=\"C1\",broker=\"b2\"}"), 2);
	snprintf(needle, sizeof needle, "rmqns_controller_leader_info{self=\"%s\",leader=\"%s\"}",
		 cl.id[(leader + 1) % NODES], cl.id[leader]);
	double follows = -1; /* its view too is rebuilt every 500 ms */
	for (int k = 0; k < 50 && follows != 1; k++) {
		follows = harness_metric(cl.http_port[(leader + 1) % NODES], needle);
		if (follows != 1)
			harness_sleep_ms(100);
	}
	cr_assert_eq(follows, 1, "%s", needle);
	cr_assert_eq(harness_http_get(cl.http_port[leader], "/healthz", &doc), 200);
	cr_assert_not_null(strstr(doc, "controller: ok"), "%s", doc);
	free(doc);
	client_close(h2);
}

/* A master gone with no other replica in the sync-state set: nobody is
 * elected (the set keeps no master, its epoch moves on) unless unclean
 * election is on, and then the live replica outside the set is. */
Test(controller_cluster, no_in_sync_replica_no_master_unless_unclean)
{
	cluster_start();
	int leader = wait_leader(all_alive, NULL);
	cr_assert_geq(leader, 0);
	struct client *h1 = client_connect("127.0.0.1", cl.ctl_port[leader], 1000, &(int){ 0 });
	struct client *h2 = client_connect("127.0.0.1", cl.ctl_port[leader], 1000, &(int){ 0 });
	cr_assert(h1 && h2);
	make_set(leader, "u1", "127.0.0.1:32001", "127.0.0.1:32002", h1);
	heartbeat(h2, "u1", "127.0.0.1:32002", "2"); /* live, never in the sync-state set */
	client_close(h1);
	int64_t master = 1, epoch = 1;
	int64_t t0 = harness_now_ms();
	while (harness_now_ms() - t0 < WAIT_MS && epoch < 2) {
		replica_info(leader, "u1", &master, &epoch);
		if (epoch < 2)
			harness_sleep_ms(10);
	}
	cr_assert_eq(epoch, 2, "no election was tried");
	cr_assert_eq(master, -1, "replica 2 is not in sync: nobody may be elected");
	cr_assert(harness_wait_log(&cl.node[leader], "election in u1 found no master", HARNESS_WAIT_MS));

	/* unclean election on: the operator's election takes the live replica */
	cr_assert_eq(ctl_call(leader, 1009, NULL, "enableElectUncleanMaster=true", NULL), 0);
	const char *const elect[] = { "clusterName", "C1", "brokerName", "u1", "brokerId", "2",
				      "designateElect", "true", NULL };
	cr_assert_eq(ctl_call(leader, 1002, elect, NULL, NULL), 0);
	cr_assert_eq(replica_info(leader, "u1", &master, &epoch), 0);
	cr_assert_eq(master, 2);
	cr_assert_eq(epoch, 3);
	client_close(h2);
}
