/* ctl-player: brokers in controller mode for the cluster scripts, not
 * installed. Two commands:
 *
 *   ctl-player play -a "h:p;h:p;h:p" -p PREFIX -s SETS [-c CLUSTER] [-H HOST] [-d SECONDS]
 *     Makes SETS broker sets PREFIX-0.. through the controller leader, as
 *     brokers do: ids 1 and 2 applied (1013), both registered (1003),
 *     heart-beating, the first election (1002) naming 1, then the
 *     sync-state set widened to {1,2} (1001) so that either may be elected
 *     later. Prints "ready" and keeps both replicas of every set alive
 *     with a one-way heartbeat (904) each second on one open connection to
 *     every node, as a 5.x broker does, until SIGTERM or -d runs out. A
 *     write refused with 2007 or unanswered asks the nodes for the leader
 *     again; all of it bounded in time.
 *
 *   ctl-player ask -a h:p
 *     One leader-only request (1012 GET_NEXT_BROKER_ID) to that node alone;
 *     prints its code and remark. Exit 0 when it answers, 3 when not.
 *
 * Replica i of set k claims the address HOST:(20000 + 10k + i); nobody
 * listens there, as the controller does not need it to. */
#include <stdarg.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rmqns/controller.h"
#include "rmqns/err.h"

#define MAX_NODES 9
#define MAX_SETS 256
#define CALL_TIMEOUT_MS 2000
#define CONNECT_TIMEOUT_MS 500
#define LEADER_WAIT_MS 20000
#define HEARTBEAT_EVERY_MS 1000
#define HEARTBEAT_TIMEOUT "10000"

struct node {
	char host[64];
	int port;
	struct client *hb; /* the open connection heartbeats go on */
};

struct player {
	struct node nodes[MAX_NODES];
	int count;
	int leader; /* index, -1 while unknown */
	const char *cluster, *prefix, *host;
	int sets;
};

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

/* "h:p;h:p" into p->nodes; -1 on a bad list */
static int parse_nodes(struct player *p, const char *list)
{
	char *copy = strdup(list), *save = NULL;
	if (!copy)
		return -1;
	p->count = 0;
	for (char *t = strtok_r(copy, ";", &save); t; t = strtok_r(NULL, ";", &save)) {
		char *colon = strrchr(t, ':');
		if (!colon || p->count == MAX_NODES || (size_t)(colon - t) >= sizeof p->nodes[0].host)
			goto bad;
		struct node *n = &p->nodes[p->count++];
		memcpy(n->host, t, (size_t)(colon - t));
		n->host[colon - t] = '\0';
		n->port = atoi(colon + 1);
		if (n->port <= 0 || n->port > 65535)
			goto bad;
	}
	free(copy);
	return p->count > 0 ? 0 : -1;
bad:
	free(copy);
	return -1;
}

/* One request on a connection of its own to node n; the answer, or NULL
 * when there is none within the time. ap: ext pairs, ending with NULL. */
static struct client_reply *call_va(const struct node *n, int32_t code, const char *body, va_list ap)
{
	struct remoting_ext_field ext[HARNESS_CALL_MAX_EXT];
	struct remoting_cmd req;
	struct client_reply *r = NULL;
	int err;

	if (harness_request_va(&req, ext, code, REMOTING_JSON, body, ap))
		return NULL;
	struct client *c = client_connect(n->host, n->port, CONNECT_TIMEOUT_MS, &err);
	if (!c)
		return NULL;
	if (client_call(c, &req, &r, CALL_TIMEOUT_MS) < 0)
		r = NULL;
	client_close(c);
	return r;
}

static struct client_reply *call(const struct node *n, int32_t code, const char *body, ...)
{
	va_list ap;
	va_start(ap, body);
	struct client_reply *r = call_va(n, code, body, ap);
	va_end(ap);
	return r;
}

/* The node that says it leads (1005 isLeader=true), within LEADER_WAIT_MS. */
static int find_leader(struct player *p)
{
	int64_t t0 = harness_now_ms();

	p->leader = -1;
	while (!stop && harness_now_ms() - t0 < LEADER_WAIT_MS) {
		for (int i = 0; i < p->count; i++) {
			struct client_reply *r = call(&p->nodes[i], CTL_REQ_GET_METADATA_INFO, NULL, NULL);
			const char *is = r && r->cmd.code == 0 ? remoting_ext_get(&r->cmd, "isLeader") : NULL;
			bool leads = is && strcmp(is, "true") == 0;
			client_reply_free(r);
			if (leads) {
				p->leader = i;
				return 0;
			}
		}
		harness_sleep_ms(200);
	}
	fprintf(stderr, "ctl-player: no node says it leads\n");
	return -1;
}

/* A write to the leader; on 2007 or no answer, the leader is looked up
 * again and the write sent there. The answer, NULL if none came. */
static struct client_reply *leader_write(struct player *p, int32_t code, const char *body, ...)
{
	struct client_reply *r = NULL;
	int64_t t0 = harness_now_ms();

	while (!stop && harness_now_ms() - t0 < LEADER_WAIT_MS) {
		if (p->leader < 0 && find_leader(p) < 0)
			break;
		va_list ap;
		va_start(ap, body);
		r = call_va(&p->nodes[p->leader], code, body, ap);
		va_end(ap);
		if (r && r->cmd.code != CTL_RSP_NOT_LEADER)
			break;
		client_reply_free(r);
		r = NULL;
		p->leader = -1;
	}
	return r;
}

/* A request without a body; ext pairs end with NULL. */
static int request(struct remoting_cmd *req, struct remoting_ext_field *ext, int32_t code, ...)
{
	va_list ap;
	va_start(ap, code);
	int rc = harness_request_va(req, ext, code, REMOTING_JSON, NULL, ap);
	va_end(ap);
	return rc;
}

static void replica_addr(const struct player *p, int set, int id, char *out, size_t len)
{
	snprintf(out, len, "%s:%d", p->host, 20000 + 10 * set + id);
}

/* Replica `id` of `set` heart-beats on node n's open connection (made when
 * missing). Two-way waits for the answer, so that the node has taken it. */
static int heartbeat(struct player *p, struct node *n, int set, int id, bool two_way)
{
	struct remoting_ext_field ext[HARNESS_CALL_MAX_EXT];
	struct remoting_cmd req;
	char name[128], addr[96], ids[8];
	int err;

	if (!n->hb && !(n->hb = client_connect(n->host, n->port, CONNECT_TIMEOUT_MS, &err)))
		return -1;
	snprintf(name, sizeof name, "%s-%d", p->prefix, set);
	replica_addr(p, set, id, addr, sizeof addr);
	snprintf(ids, sizeof ids, "%d", id);
	int rc = request(&req, ext, CTL_REQ_BROKER_HEARTBEAT, "clusterName", p->cluster, "brokerName",
			 name, "brokerAddr", addr, "brokerId", ids, "epoch", "0", "maxOffset", "0",
			 "heartbeatTimeoutMills", HEARTBEAT_TIMEOUT, NULL);
	if (rc)
		return -1;
	if (two_way) {
		struct client_reply *r = NULL;
		rc = client_call(n->hb, &req, &r, CALL_TIMEOUT_MS);
		if (rc == 0 && r->cmd.code != 0)
			rc = -1;
		client_reply_free(r);
	} else {
		req.flag = REMOTING_FLAG_ONEWAY;
		req.opaque = client_next_opaque(n->hb);
		/* nothing comes back; a send that cannot go out within the time
		 * means a connection stalled for longer than the buffers hold */
		rc = client_send(n->hb, &req, 200);
	}
	if (rc) {
		/* a stalled or broken connection: a fresh one next time */
		client_close(n->hb);
		n->hb = NULL;
	}
	return rc ? -1 : 0;
}

/* Every replica heart-beats on every node; a node that does not take
 * them is skipped until the next round. */
static void heartbeat_all(struct player *p)
{
	for (int i = 0; i < p->count; i++)
		for (int s = 0; s < p->sets; s++)
			if (heartbeat(p, &p->nodes[i], s, 1, false) < 0 ||
			    heartbeat(p, &p->nodes[i], s, 2, false) < 0)
				break;
}

static int expect_ok(struct client_reply *r, const char *what, const char *name)
{
	int rc = r && r->cmd.code == 0 ? 0 : -1;
	if (rc)
		fprintf(stderr, "ctl-player: %s of %s: %s (code %d: %s)\n", what, name,
			r ? "refused" : "no answer", r ? r->cmd.code : -1,
			r && r->cmd.remark ? r->cmd.remark : "");
	return rc;
}

/* Set k made through the leader, ending with master 1 and {1,2} in sync. */
static int make_set(struct player *p, int k)
{
	char name[128], a[3][96], code[3][128], body[128], epoch[24];
	struct client_reply *r;
	int64_t master_epoch = -1, sss_epoch = -1;

	snprintf(name, sizeof name, "%s-%d", p->prefix, k);
	for (int id = 1; id <= 2; id++) {
		char ids[8];
		snprintf(ids, sizeof ids, "%d", id);
		replica_addr(p, k, id, a[id], sizeof a[id]);
		snprintf(code[id], sizeof code[id], "%s;%d", a[id], id);
		r = leader_write(p, CTL_REQ_APPLY_BROKER_ID, NULL, "clusterName", p->cluster, "brokerName", name,
			  "appliedBrokerId", ids, "registerCheckCode", code[id], NULL);
		if (expect_ok(r, "apply id", name) < 0)
			goto fail;
		client_reply_free(r);
		r = leader_write(p, CTL_REQ_REGISTER_BROKER, NULL, "clusterName", p->cluster, "brokerName", name,
			  "brokerId", ids, "brokerAddress", a[id], NULL);
		if (expect_ok(r, "register", name) < 0)
			goto fail;
		client_reply_free(r);
	}
	/* the first election needs a live replica: the leader must have the heartbeats */
	for (int id = 1; id <= 2; id++)
		if (p->leader < 0 || heartbeat(p, &p->nodes[p->leader], k, id, true) < 0) {
			fprintf(stderr, "ctl-player: heartbeat of %s-%d: no answer from the leader\n",
				name, id);
			return -1;
		}
	r = leader_write(p, CTL_REQ_ELECT_MASTER, NULL, "clusterName", p->cluster, "brokerName", name,
		  "brokerId", "1", "designateElect", "false", NULL);
	if (expect_ok(r, "election", name) < 0)
		goto fail;
	remoting_ext_get_long(&r->cmd, "masterEpoch", &master_epoch);
	remoting_ext_get_long(&r->cmd, "syncStateSetEpoch", &sss_epoch);
	client_reply_free(r);
	snprintf(epoch, sizeof epoch, "%lld", (long long)master_epoch);
	snprintf(body, sizeof body, "{\"syncStateSet\":[1,2],\"syncStateSetEpoch\":%lld}",
		 (long long)sss_epoch);
	r = leader_write(p, CTL_REQ_ALTER_SYNC_STATE_SET, body, "brokerName", name, "masterBrokerId", "1",
		  "masterEpoch", epoch, NULL);
	if (expect_ok(r, "sync-state set", name) < 0)
		goto fail;
	client_reply_free(r);
	return 0;
fail:
	client_reply_free(r);
	return -1;
}

static int play(struct player *p, int seconds)
{
	int64_t end = harness_now_ms() + (int64_t)seconds * 1000;

	if (find_leader(p) < 0)
		return 1;
	for (int k = 0; k < p->sets; k++)
		if (stop || make_set(p, k) < 0)
			return 1;
	printf("ready: %d broker sets %s-0..%d made through %s:%d\n", p->sets, p->prefix,
	       p->sets - 1, p->nodes[p->leader].host, p->nodes[p->leader].port);
	fflush(stdout);
	while (!stop && harness_now_ms() < end) {
		int64_t next = harness_now_ms() + HEARTBEAT_EVERY_MS;
		heartbeat_all(p);
		while (!stop && harness_now_ms() < next)
			harness_sleep_ms(50);
	}
	for (int i = 0; i < p->count; i++)
		if (p->nodes[i].hb)
			client_close(p->nodes[i].hb);
	return 0;
}

static int ask(const struct player *p)
{
	struct client_reply *r = call(&p->nodes[0], CTL_REQ_GET_NEXT_BROKER_ID, NULL, "clusterName",
				      "probe", "brokerName", "probe", NULL);
	if (!r) {
		printf("no answer\n");
		return 3;
	}
	printf("code %d %s\n", r->cmd.code, r->cmd.remark ? r->cmd.remark : "");
	client_reply_free(r);
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: ctl-player play -a \"h:p;h:p\" -p PREFIX -s SETS [-c CLUSTER] "
			"[-H HOST] [-d SECONDS]\n"
			"       ctl-player ask -a h:p\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct player p = { .leader = -1, .cluster = "NetCluster", .host = "127.0.0.1" };
	const char *nodes = NULL;
	int seconds = 300, opt;

	if (argc < 2)
		return usage();
	const char *cmd = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "a:p:s:c:H:d:")) != -1) {
		switch (opt) {
		case 'a': nodes = optarg; break;
		case 'p': p.prefix = optarg; break;
		case 's': p.sets = atoi(optarg); break;
		case 'c': p.cluster = optarg; break;
		case 'H': p.host = optarg; break;
		case 'd': seconds = atoi(optarg); break;
		default: return usage();
		}
	}
	if (!nodes || parse_nodes(&p, nodes) < 0)
		return usage();
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	if (strcmp(cmd, "ask") == 0)
		return ask(&p);
	if (strcmp(cmd, "play") != 0 || !p.prefix || p.sets < 1 || p.sets > MAX_SETS || seconds < 1)
		return usage();
	return play(&p, seconds);
}
