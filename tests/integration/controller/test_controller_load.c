/* Three real rmqns processes with embedded controllers under traffic from
 * several clients at once, as brokers make it: broker sets registered
 * (1013, 1003), heartbeats two-way and one-way (904), elections (1002),
 * sync-state sets (1001), reads (1005, 1012, 1004), connections closed
 * with requests still unanswered (their master is then replaced and the
 * new one told, 1008), /controller and /metrics fetched meanwhile; the
 * leader is stopped with SIGTERM mid-traffic. Every answer has a code its
 * request may get, every set whose election was acknowledged is known to
 * the new leader, and every process stops cleanly: built with a
 * sanitizer, a report in a server's log fails the test (harness.h). A
 * plain program, so that it runs under TSan in the 'concurrency' suite. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl_cluster.h"
#include "harness.h"
#include "plain_test.h"
#include "rmqns/client.h"
#include "rmqns/remoting.h"

#define NODES CTL_CLUSTER_NODES
#define CLIENTS 3
#define ROUNDS 10
#define MAX_SETS (CLIENTS * ROUNDS)
#define STOP_MS 30000 /* a TSan build stops slowly on a busy machine */

static struct ctl_cluster cl;
static atomic_bool alive[NODES];
static atomic_int rounds_done;   /* rounds that got as far as the election */
static atomic_int notices;       /* 1008 frames the replicas' ports read */
static atomic_bool traffic = true;

/* ---- the brokers' side: a port reading what the controller sends ---- */

struct replica_port {
	int fd;
	int port;
	pthread_t thread;
};

/* Reads frames from every connection the controllers open; counts 1008. */
static void *replica_thread(void *arg)
{
	struct replica_port *p = arg;
	struct pollfd fds[16];
	uint8_t buf[4096];
	size_t got[16];
	nfds_t n = 1;

	fds[0] = (struct pollfd){ .fd = p->fd, .events = POLLIN };
	while (atomic_load(&traffic)) {
		if (poll(fds, n, 50) <= 0)
			continue;
		if ((fds[0].revents & POLLIN) && n < 16) {
			int fd = accept(p->fd, NULL, NULL);
			if (fd >= 0) {
				fds[n] = (struct pollfd){ .fd = fd, .events = POLLIN };
				got[n++] = 0;
			}
		}
		for (nfds_t i = 1; i < n; i++) {
			if (!(fds[i].revents & (POLLIN | POLLHUP)))
				continue;
			/* one frame at a time: length, then that many bytes */
			ssize_t k = read(fds[i].fd, buf + got[i], sizeof buf - got[i]);
			if (k <= 0) {
				close(fds[i].fd);
				fds[i] = fds[--n];
				got[i] = got[n];
				i--;
				continue;
			}
			got[i] += (size_t)k;
			while (got[i] >= 4) {
				size_t len = (size_t)buf[0] << 24 | (size_t)buf[1] << 16 |
					     (size_t)buf[2] << 8 | buf[3];
				if (len + 4 > sizeof buf) {
					got[i] = 0; /* not a notice: dropped */
					break;
				}
				if (got[i] < len + 4)
					break;
				struct remoting_cmd cmd;
				if (remoting_decode(buf, len + 4, &cmd) == 0) {
					if (cmd.code == 1008)
						atomic_fetch_add(&notices, 1);
					remoting_cmd_release(&cmd);
				}
				memmove(buf, buf + len + 4, got[i] - len - 4);
				got[i] -= len + 4;
			}
		}
	}
	for (nfds_t i = 1; i < n; i++)
		close(fds[i].fd);
	return NULL;
}

static int replica_port_open(struct replica_port *p)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	p->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (p->fd < 0 || bind(p->fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(p->fd, 16) != 0 ||
	    getsockname(p->fd, (struct sockaddr *)&a, &len) != 0)
		return -1;
	p->port = ntohs(a.sin_port);
	return pthread_create(&p->thread, NULL, replica_thread, p) == 0 ? 0 : -1;
}

/* ---- the clients ---- */

struct broker_client {
	int index;
	int replica_port;
	pthread_t thread;
	char acked[ROUNDS][32]; /* sets whose election was acknowledged */
	int n_acked;
	int lost_rounds;        /* cut short by the leader's stop or change */
	int unanswered;         /* calls the stopping leader did not answer */
	int unexpected;
};

/* The leader some live node names; -1 when none does. */
static int find_leader(void)
{
	for (int i = 0; i < NODES; i++) {
		struct client_reply *r;
		if (!atomic_load(&alive[i]))
			continue;
		int code = ctl_cluster_call(&cl, i, 1005, NULL, NULL, &r);
		int named = -1;
		if (code == 0) {
			const char *id = remoting_ext_get(&r->cmd, "controllerLeaderId");
			named = ctl_cluster_index(&cl, id);
		}
		if (r)
			client_reply_free(r);
		if (named >= 0 && named < NODES && atomic_load(&alive[named]))
			return named;
	}
	return -1;
}

/* A write's code: 0 goes on; 2007 (leadership moved) and 1 (not
 * committed: leadership lost meanwhile) end the round; anything else is
 * wrong. -1: no answer (the process stopped). */
static int write_ok(struct broker_client *b, int code, int32_t req, const char *set)
{
	if (code == 0)
		return 1;
	b->unanswered += code == -1;
	if (code == -1 || code == 2007 || code == 1)
		return 0;
	fprintf(stderr, "client %d: %d on %s answered %d\n", b->index, req, set, code);
	b->unexpected++;
	return 0;
}

/* harness_call's code (-1 when it failed), the answer freed or kept. */
static int call(struct client *c, int32_t code, const char *body, struct client_reply **keep,
		const char *k1, const char *v1, const char *k2, const char *v2, const char *k3,
		const char *v3, const char *k4, const char *v4)
{
	struct client_reply *r = NULL;
	int rc = harness_call(c, code, body, &r, k1, v1, k2, v2, k3, v3, k4, v4, NULL);
	int answer = rc < 0 || !r ? -1 : r->cmd.code;
	if (keep)
		*keep = r;
	else if (r)
		client_reply_free(r);
	return answer;
}

/* Sends a request and does not wait for its answer. */
static void send_only(struct client *c, int32_t code, bool oneway, const char *k1, const char *v1,
		      const char *k2, const char *v2, const char *k3, const char *v3, const char *k4,
		      const char *v4)
{
	struct remoting_ext_field ext[HARNESS_CALL_MAX_EXT];
	struct remoting_cmd req;
	if (harness_request(&req, ext, code, REMOTING_JSON, NULL, k1, v1, k2, v2, k3, v3, k4, v4,
			    NULL) != 0)
		return;
	req.opaque = client_next_opaque(c);
	if (oneway)
		req.flag |= REMOTING_FLAG_ONEWAY;
	client_send(c, &req, 2000);
}

/* One broker set's life on the leader: both ids applied, replica 1
 * registered and heart-beating on its connection (two-way), replica 2 on
 * another (one-way), 1 elected, 2 in the sync-state set; then the
 * master's connection closes with requests unanswered, so the leader
 * elects 2 and tells it. 0 when the round got to the election. */
static int round_trip(struct broker_client *b, int leader, int round)
{
	char set[32], a1[32], a2[32], code1[64], code2[64];
	struct client_reply *r = NULL;
	int rc = -1, code;

	snprintf(set, sizeof set, "c%d-r%d", b->index, round);
	snprintf(a1, sizeof a1, "127.0.0.1:%d", 20000 + b->index); /* nobody listens */
	snprintf(a2, sizeof a2, "127.0.0.1:%d", b->replica_port);
	snprintf(code1, sizeof code1, "%s;1", a1);
	snprintf(code2, sizeof code2, "%s;2", a2);
	struct client *m = client_connect("127.0.0.1", cl.ctl_port[leader], 2000, &(int){ 0 });
	struct client *s = client_connect("127.0.0.1", cl.ctl_port[leader], 2000, &(int){ 0 });
	if (!m || !s)
		goto out;
	code = call(m, 1013, NULL, NULL, "clusterName", "C1", "brokerName", set, "appliedBrokerId",
		    "1", "registerCheckCode", code1);
	if (!write_ok(b, code, 1013, set))
		goto out;
	code = call(s, 1013, NULL, NULL, "clusterName", "C1", "brokerName", set, "appliedBrokerId",
		    "2", "registerCheckCode", code2);
	if (!write_ok(b, code, 1013, set))
		goto out;
	code = call(m, 1003, NULL, NULL, "clusterName", "C1", "brokerName", set, "brokerId", "1",
		    "brokerAddress", a1);
	if (!write_ok(b, code, 1003, set))
		goto out;
	code = call(m, 904, NULL, NULL, "clusterName", "C1", "brokerName", set, "brokerAddr", a1,
		    "brokerId", "1");
	if (code != 0) {
		if (code != -1) {
			fprintf(stderr, "client %d: heartbeat answered %d\n", b->index, code);
			b->unexpected++;
		}
		goto out;
	}
	send_only(s, 904, true, "clusterName", "C1", "brokerName", set, "brokerAddr", a2, "brokerId",
		  "2");
	code = call(m, 1002, NULL, &r, "clusterName", "C1", "brokerName", set, "brokerId", "1",
		    "designateElect", "false");
	if (!write_ok(b, code, 1002, set))
		goto out;
	const char *master = remoting_ext_get(&r->cmd, "masterBrokerId");
	if (!master || strcmp(master, "1") != 0) {
		fprintf(stderr, "client %d: %s elected %s\n", b->index, set, master ? master : "nobody");
		b->unexpected++;
		goto out;
	}
	snprintf(b->acked[b->n_acked++], sizeof b->acked[0], "%s", set);
	atomic_fetch_add(&rounds_done, 1);
	code = call(m, 1001, "{\"syncStateSet\":[1,2],\"syncStateSetEpoch\":1}", NULL, "brokerName",
		    set, "masterBrokerId", "1", "masterEpoch", "1", NULL, NULL);
	if (code != 0 && code != -1 && code != 2007 && code != 1) {
		fprintf(stderr, "client %d: 1001 on %s answered %d\n", b->index, set, code);
		b->unexpected++;
	}
	/* reads answered by nobody: the connection goes while they wait */
	send_only(m, 1005, false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	send_only(m, 1012, false, "clusterName", "C1", "brokerName", set, NULL, NULL, NULL, NULL);
	send_only(m, 1004, false, "brokerName", set, NULL, NULL, NULL, NULL, NULL, NULL);
	send_only(m, 904, false, "clusterName", "C1", "brokerName", set, "brokerAddr", a1, "brokerId",
		  "1");
	client_close(m);
	m = NULL;
	/* replica 2 goes on heart-beating, two-way now, a while */
	for (int k = 0; k < 5; k++) {
		code = call(s, 904, NULL, NULL, "clusterName", "C1", "brokerName", set, "brokerAddr", a2,
			    "brokerId", "2");
		if (code == -1) {
			b->unanswered++;
			break;
		}
		if (code != 0) {
			fprintf(stderr, "client %d: heartbeat of replica 2 answered %d\n", b->index, code);
			b->unexpected++;
		}
		harness_sleep_ms(100);
	}
	rc = 0;
out:
	if (r)
		client_reply_free(r);
	if (m)
		client_close(m);
	if (s)
		client_close(s);
	return rc;
}

static void *client_thread(void *arg)
{
	struct broker_client *b = arg;

	for (int round = 0; round < ROUNDS; round++) {
		int leader = -1;
		int64_t end = harness_now_ms() + CTL_CLUSTER_WAIT_MS;
		while ((leader = find_leader()) < 0 && harness_now_ms() < end)
			harness_sleep_ms(50);
		if (leader < 0) {
			fprintf(stderr, "client %d: no leader named\n", b->index);
			b->unexpected++;
			break;
		}
		if (round_trip(b, leader, round) != 0)
			b->lost_rounds++;
	}
	return NULL;
}

/* ---- the operator's side: /controller and /metrics meanwhile ---- */

static void *scrape_thread(void *arg)
{
	int *scrapes = arg;
	int64_t end = harness_now_ms() + 20 * CTL_CLUSTER_WAIT_MS;

	while (atomic_load(&traffic) && harness_now_ms() < end) {
		for (int i = 0; i < NODES; i++) {
			char *doc = NULL;
			if (!atomic_load(&alive[i]))
				continue;
			int st = harness_http_get(cl.http_port[i], "/controller", &doc);
			/* a node is marked gone before it is told to stop */
			EXPECT(st == 200 || !atomic_load(&alive[i]), "/controller on n%d: %d", i, st);
			if (st == 200)
				EXPECT(strstr(doc, "\"self\":"), "/controller on n%d: %s", i, doc);
			free(doc);
			doc = NULL;
			st = harness_http_get(cl.http_port[i], "/metrics", &doc);
			EXPECT(st == 200 || !atomic_load(&alive[i]), "/metrics on n%d: %d", i, st);
			if (st == 200)
				EXPECT(strstr(doc, "rmqns_controller_leader"), "/metrics on n%d lacks the leader", i);
			free(doc);
			(*scrapes)++;
		}
		harness_sleep_ms(30);
	}
	return NULL;
}

/* ---- the test ---- */

static int stop_clean(int i)
{
	atomic_store(&alive[i], false);
	int st = harness_stop(&cl.node[i], SIGTERM, STOP_MS, NULL);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "n%d did not stop cleanly (status %#x)\n", i, st);
		return -1;
	}
	return 0;
}

static int test_traffic_and_leader_stop(struct harness_server *unused)
{
	struct broker_client clients[CLIENTS];
	struct replica_port ports[CLIENTS];
	pthread_t scraper;
	int scrapes = 0, started = 0, opened = 0, rc = -1;
	bool scraping = false;

	(void)unused;
	memset(clients, 0, sizeof clients);
	CHECK_RET(ctl_cluster_init(&cl, "127.0.0.1") == 0);
	for (int i = 0; i < NODES; i++) {
		if (ctl_cluster_start(&cl, i) != 0)
			goto out;
		atomic_store(&alive[i], true);
	}
	bool all[NODES] = { true, true, true };
	int leader = ctl_cluster_wait_leader(&cl, all, NULL);
	CHECK(leader >= 0);

	for (; opened < CLIENTS; opened++)
		CHECK(replica_port_open(&ports[opened]) == 0);
	CHECK(pthread_create(&scraper, NULL, scrape_thread, &scrapes) == 0);
	scraping = true;
	for (; started < CLIENTS; started++) {
		clients[started].index = started;
		clients[started].replica_port = ports[started].port;
		CHECK(pthread_create(&clients[started].thread, NULL, client_thread, &clients[started]) == 0);
	}

	/* a few rounds in, the leader stops (SIGTERM) while the clients work */
	int64_t end = harness_now_ms() + 10 * CTL_CLUSTER_WAIT_MS;
	while (atomic_load(&rounds_done) < CLIENTS * 2 && harness_now_ms() < end)
		harness_sleep_ms(20);
	CHECK(atomic_load(&rounds_done) >= CLIENTS * 2);
	CHECK(stop_clean(leader) == 0);
	all[leader] = false;
	int next = ctl_cluster_wait_leader(&cl, all, NULL);
	CHECK(next >= 0);
	fprintf(stderr, "controller_load: n%d stopped after %d rounds, n%d leads\n", leader,
		CLIENTS * 2, next);
	rc = 0;
out:
	for (int k = 0; k < started; k++)
		pthread_join(clients[k].thread, NULL);
	/* the last master replaced is told before the ports close */
	int64_t until = harness_now_ms() + CTL_CLUSTER_WAIT_MS;
	while (rc == 0 && atomic_load(&notices) == 0 && harness_now_ms() < until)
		harness_sleep_ms(50);
	atomic_store(&traffic, false);
	if (scraping)
		pthread_join(scraper, NULL);
	for (int k = 0; k < opened; k++) {
		pthread_join(ports[k].thread, NULL);
		close(ports[k].fd);
	}

	int acked = 0, lost = 0, unanswered = 0;
	for (int k = 0; k < started; k++) {
		acked += clients[k].n_acked;
		lost += clients[k].lost_rounds;
		unanswered += clients[k].unanswered;
		EXPECT(clients[k].unexpected == 0, "client %d: %d unexpected answers", k,
		       clients[k].unexpected);
	}
	fprintf(stderr, "controller_load: %d sets elected, %d rounds cut short, %d calls unanswered, "
		"%d notices, %d scrapes\n", acked, lost, unanswered, atomic_load(&notices), scrapes);
	if (rc == 0) {
		/* every acknowledged election is known to the leader now */
		int next = ctl_cluster_wait_leader(&cl, (bool[NODES]){ atomic_load(&alive[0]),
							       atomic_load(&alive[1]),
							       atomic_load(&alive[2]) }, NULL);
		EXPECT(next >= 0, "no leader at the end");
		for (int k = 0; k < started && next >= 0; k++)
			for (int i = 0; i < clients[k].n_acked; i++) {
				const char *const ext[] = { "brokerName", clients[k].acked[i], NULL };
				int code = ctl_cluster_call(&cl, next, 1004, ext, NULL, NULL);
				EXPECT(code == 0, "%s: 1004 answered %d on the new leader",
				       clients[k].acked[i], code);
			}
		EXPECT(acked >= CLIENTS * 2, "only %d sets elected", acked);
		EXPECT(atomic_load(&notices) > 0, "no replica was told it became master");
		EXPECT(scrapes > 0, "nothing scraped");
	}
	for (int i = 0; i < NODES; i++)
		if (cl.node[i].pid && stop_clean(i) != 0)
			rc = -1;
	for (int i = 0; i < NODES; i++)
		if (harness_cleanup(&cl.node[i]) != 0)
			rc = -1;
	harness_rmdir(cl.dir);
	return rc == 0 && atomic_load(&plain_failures) == 0 ? 0 : -1;
}

static const struct harness_test tests[] = {
	{ "traffic_and_leader_stop", test_traffic_and_leader_stop },
};

int main(int argc, char **argv)
{
	return harness_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
