/* Three controller nodes (ctl_node) in this process, used from several
 * threads at once, as the reactors and the HTTP thread use them in the
 * server: submitters send frames to every node (writes, heartbeats one-way
 * and two-way, reads) and close their connections, a reader takes the
 * status, the published view and the state of each node, and meanwhile
 * the leader is stopped and started again from its log. Every request
 * taken gets exactly one answer with a code it may have, every write
 * acknowledged is in every node's state at the end, and the three states
 * are equal. A plain program (plain_test.h) so that it runs under TSan:
 * the point is the hand-over between those threads and the node's. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "plain_test.h"
#include "rmqns/controller.h"
#include "rmqns/err.h"
#include "rmqns/remoting.h"

#define NODES 3
#define SUBMITTERS 4
#define ROUNDS 240        /* requests per submitter */
#define WINDOW 6          /* of which at most this many unanswered at once */
#define WAIT_MS 30000     /* "does it happen at all", under TSan on a busy machine */
#define RSP_SYSTEM_ERROR_CODE 1

/* ---- the group: slots the threads find their nodes in ---- */

struct slot {
	pthread_mutex_t lock;      /* held while a thread uses node */
	struct ctl_node *node;     /* NULL while stopped */
	atomic_int stops;          /* times the node in this slot was stopped */
};

struct group {
	char dir[256];
	char peers[256];
	struct slot slot[NODES];
};

static struct group g;

static struct ctl_node *node_start(int i)
{
	char self[8], err[512] = "";
	snprintf(self, sizeof self, "n%d", i);
	struct ctl_node_config cfg = {
		.group = "group1", .peers = g.peers, .self_id = self, .store_path = g.dir,
		.bind_host = "127.0.0.1",
		/* small: snapshots taken and sent while requests flow */
		.snapshot_threshold = 16, .snapshot_trailing = 8,
	};
	struct ctl_node *n = ctl_node_start(&cfg, err, sizeof err);
	if (!n)
		fprintf(stderr, "node %d: %s\n", i, err);
	return n;
}

/* The slot's node leaves it, then stops: nobody uses it meanwhile, and
 * what it still holds is answered (with nothing) on its thread. */
static void slot_stop(int i)
{
	struct slot *s = &g.slot[i];
	pthread_mutex_lock(&s->lock);
	struct ctl_node *n = s->node;
	s->node = NULL;
	atomic_fetch_add(&s->stops, 1);
	pthread_mutex_unlock(&s->lock);
	ctl_node_stop(n);
}

static int slot_start(int i)
{
	struct ctl_node *n = node_start(i);
	if (!n)
		return -1;
	pthread_mutex_lock(&g.slot[i].lock);
	g.slot[i].node = n;
	pthread_mutex_unlock(&g.slot[i].lock);
	return 0;
}

/* The node serving as leader, once exactly one does; -1 after WAIT_MS. */
static int wait_leader(void)
{
	int64_t end = harness_now_ms() + WAIT_MS;
	do {
		int leader = -1, count = 0;
		for (int i = 0; i < NODES; i++) {
			struct ctl_node_status st;
			pthread_mutex_lock(&g.slot[i].lock);
			bool up = g.slot[i].node != NULL;
			if (up)
				ctl_node_status(g.slot[i].node, &st);
			pthread_mutex_unlock(&g.slot[i].lock);
			if (up && st.serving) {
				leader = i;
				count++;
			}
		}
		if (count == 1)
			return leader;
		sleep_ms(20);
	} while (harness_now_ms() < end);
	return -1;
}

/* ---- requests and their answers ---- */

enum kind { K_APPLY, K_HEARTBEAT, K_HEARTBEAT_ONEWAY, K_METADATA, K_NEXT_ID, K_KINDS };

struct submitter;

/* One request taken by a node; freed by the submitter once answered. */
struct call {
	struct submitter *by;
	enum kind kind;
	int node;
	int stops_before;  /* the slot's stop count when it was taken */
	int replies;       /* written by the node's thread, read after `done` */
	int code;          /* -1: no frame */
	char name[48];     /* K_APPLY: the set */
	struct call *next_done;
};

struct submitter {
	int index;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int unanswered;           /* under lock */
	struct call *done;        /* answered, under lock */
	/* the outcome, read after join */
	int taken, refused_stopped, answered;
	char (*acked)[48];        /* K_APPLY answered 0 */
	int n_acked;
	int by_code[K_KINDS][4];  /* 0, 2007, 1, no frame */
};

static atomic_int progress;   /* requests answered so far, all submitters */
static atomic_bool reading = true;
static atomic_llong conn_ids = 1;

static void on_reply(void *arg, const uint8_t *frame, size_t len)
{
	struct call *c = arg;
	struct submitter *s = c->by;
	struct remoting_cmd cmd;

	c->replies++;
	c->code = -1;
	if (frame && remoting_decode(frame, len, &cmd) == 0) {
		c->code = cmd.code;
		remoting_cmd_release(&cmd);
	} else if (frame) {
		c->code = -2; /* a frame that does not decode */
	}
	pthread_mutex_lock(&s->lock);
	c->next_done = s->done;
	s->done = c;
	s->unanswered--;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	atomic_fetch_add(&progress, 1);
}

static void encode(struct buf *out, int32_t code, bool oneway, int32_t opaque, const char *k1,
		   const char *v1, const char *k2, const char *v2, const char *k3, const char *v3,
		   const char *k4, const char *v4)
{
	struct remoting_ext_field ext[4] = { { k1, v1 }, { k2, v2 }, { k3, v3 }, { k4, v4 } };
	struct remoting_cmd req = { .code = code, .language = LANG_JAVA, .version = 441,
				    .opaque = opaque, .serialize = REMOTING_JSON,
				    .flag = oneway ? REMOTING_FLAG_ONEWAY : 0, .ext = ext };
	while (req.ext_count < 4 && ext[req.ext_count].key)
		req.ext_count++;
	req.ext_present = req.ext_count > 0;
	buf_reset(out);
	harness_encode(&req, out);
}

/* Whether a code is one this kind of request may get. A frame is owed to
 * every two-way request unless its node was stopped while it waited. */
static bool code_expected(const struct call *c)
{
	bool stopped = atomic_load(&g.slot[c->node].stops) > c->stops_before;
	if (c->kind == K_HEARTBEAT_ONEWAY)
		return c->code == -1;
	if (c->code == -1)
		return stopped;
	switch (c->kind) {
	case K_APPLY: /* done, not the leader, or not committed (leadership lost) */
		return c->code == 0 || c->code == 2007 || c->code == RSP_SYSTEM_ERROR_CODE;
	case K_NEXT_ID:
		return c->code == 0 || c->code == 2007;
	default: /* heartbeats and metadata: any node */
		return c->code == 0;
	}
}

static void settle(struct submitter *s, struct call *c)
{
	EXPECT(c->replies == 1, "submitter %d: %d answers to one request", s->index, c->replies);
	EXPECT(code_expected(c), "submitter %d: kind %d to n%d answered %d", s->index, c->kind,
	       c->node, c->code);
	int col = c->code == 0 ? 0 : c->code == 2007 ? 1 : c->code == -1 ? 3 : 2;
	s->by_code[c->kind][col]++;
	if (c->kind == K_APPLY && c->code == 0)
		memcpy(s->acked[s->n_acked++], c->name, sizeof c->name);
	s->answered++;
	free(c);
}

/* Settles what was answered; waits while `window` or more are unanswered. */
static int drain(struct submitter *s, int window)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WAIT_MS / 1000;
	pthread_mutex_lock(&s->lock);
	while (s->unanswered >= window) {
		if (pthread_cond_timedwait(&s->cond, &s->lock, &until) != 0) {
			pthread_mutex_unlock(&s->lock);
			plain_failed(__FILE__, __LINE__, "submitter %d: %d requests never answered",
				     s->index, s->unanswered);
			return -1;
		}
	}
	struct call *done = s->done;
	s->done = NULL;
	pthread_mutex_unlock(&s->lock);
	while (done) {
		struct call *next = done->next_done;
		settle(s, done);
		done = next;
	}
	return 0;
}

/* The leader node i names, or i when it names none or is stopped. */
static int named_leader(int i)
{
	struct ctl_node_status st = { .leader = -1 };
	pthread_mutex_lock(&g.slot[i].lock);
	if (g.slot[i].node)
		ctl_node_status(g.slot[i].node, &st);
	pthread_mutex_unlock(&g.slot[i].lock);
	return st.leader >= 0 && st.leader < NODES ? st.leader : i;
}

static void *submit_thread(void *arg)
{
	struct submitter *s = arg;
	struct buf frame = BUF_INIT;
	char hb_name[32], hb_addr[32], hb_id[16], check[64];
	uint64_t conn = (uint64_t)atomic_fetch_add(&conn_ids, 1);

	snprintf(hb_name, sizeof hb_name, "hb-%d", s->index);
	snprintf(hb_addr, sizeof hb_addr, "127.0.0.1:%d", 40000 + s->index);
	snprintf(hb_id, sizeof hb_id, "%d", s->index + 1);
	for (int i = 0; i < ROUNDS; i++) {
		if (drain(s, WINDOW) != 0)
			break;
		int node = (s->index + i) % NODES;
		if (i % K_KINDS == K_APPLY)
			node = named_leader(node); /* as a broker finds it (1005) */
		struct call *c = calloc(1, sizeof *c);
		if (!c) {
			plain_failed(__FILE__, __LINE__, "out of memory");
			break;
		}
		c->by = s;
		c->node = node;
		c->kind = (enum kind)(i % K_KINDS);
		int32_t opaque = i + 1;
		switch (c->kind) {
		case K_APPLY:
			snprintf(c->name, sizeof c->name, "s%d-%d", s->index, i);
			snprintf(check, sizeof check, "127.0.0.1:%d;%d", 30000 + i, s->index);
			encode(&frame, 1013, false, opaque, "clusterName", "C1", "brokerName", c->name,
			       "appliedBrokerId", "1", "registerCheckCode", check);
			break;
		case K_HEARTBEAT:
		case K_HEARTBEAT_ONEWAY:
			encode(&frame, 904, c->kind == K_HEARTBEAT_ONEWAY, opaque, "clusterName", "C1",
			       "brokerName", hb_name, "brokerAddr", hb_addr, "brokerId", hb_id);
			break;
		case K_METADATA:
			encode(&frame, 1005, false, opaque, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
			break;
		default:
			encode(&frame, 1012, false, opaque, "clusterName", "C1", "brokerName", hb_name,
			       NULL, NULL, NULL, NULL);
			break;
		}
		struct slot *sl = &g.slot[node];
		pthread_mutex_lock(&sl->lock);
		int rc = RMQNS_ECLOSED;
		if (sl->node) {
			c->stops_before = atomic_load(&sl->stops);
			pthread_mutex_lock(&s->lock);
			s->unanswered++;
			pthread_mutex_unlock(&s->lock);
			rc = ctl_node_submit(sl->node, frame.data, frame.len, conn, on_reply, c);
			if (rc != 0) {
				pthread_mutex_lock(&s->lock);
				s->unanswered--;
				pthread_mutex_unlock(&s->lock);
			}
		}
		/* now and then the connection closes: its heartbeats stop counting */
		if (i % 37 == 36 && sl->node)
			EXPECT(ctl_node_conn_closed(sl->node, conn) == 0, "conn_closed refused");
		pthread_mutex_unlock(&sl->lock);
		if (i % 37 == 36)
			conn = (uint64_t)atomic_fetch_add(&conn_ids, 1);
		if (rc == 0) {
			s->taken++;
		} else {
			EXPECT(rc == RMQNS_ECLOSED, "submit: %d", rc);
			s->refused_stopped++;
			free(c);
		}
	}
	drain(s, 1);
	buf_free(&frame);
	return NULL;
}

/* ---- the reader: what the HTTP thread reads ---- */

static void image_of(void *arg, const struct ctl_state *s)
{
	EXPECT(ctl_state_snapshot(s, arg) == 0, "snapshot of a state");
}

static void *read_thread(void *arg)
{
	int *reads = arg;
	struct buf json = BUF_INIT, prom = BUF_INIT, img = BUF_INIT;
	int64_t end = harness_now_ms() + 10 * WAIT_MS;

	while (atomic_load(&reading) && harness_now_ms() < end) {
		for (int i = 0; i < NODES; i++) {
			struct slot *sl = &g.slot[i];
			struct ctl_node_status st;
			char self[24];
			pthread_mutex_lock(&sl->lock);
			if (!sl->node) {
				pthread_mutex_unlock(&sl->lock);
				continue;
			}
			ctl_node_status(sl->node, &st);
			buf_reset(&json);
			buf_reset(&prom);
			EXPECT(ctl_node_view(sl->node, &json, &prom) == 0, "view of n%d", i);
			buf_reset(&img);
			EXPECT(ctl_node_inspect(sl->node, image_of, &img) == 0, "inspect n%d", i);
			pthread_mutex_unlock(&sl->lock);
			EXPECT(!st.serving || st.is_leader, "n%d serves but is no leader", i);
			EXPECT(st.leader >= -1 && st.leader < NODES, "n%d names leader %d", i, st.leader);
			snprintf(self, sizeof self, "\"self\":\"n%d\"", i);
			if (json.len) { /* published once the node ran a turn or two */
				EXPECT(buf_append(&json, "", 1) == 0 && strstr((char *)json.data, self),
				       "n%d's view: %.*s", i, (int)json.len, (char *)json.data);
			}
			EXPECT(img.len > 0, "n%d: an empty state image", i);
			(*reads)++;
		}
		sleep_ms(2);
	}
	buf_free(&json);
	buf_free(&prom);
	buf_free(&img);
	return NULL;
}

/* ---- the end: equal states holding every acknowledged write ---- */

struct acked_check {
	struct submitter *subs;
	int missing;
};

static void find_acked(void *arg, const struct ctl_state *st)
{
	struct acked_check *a = arg;
	for (int k = 0; k < SUBMITTERS; k++)
		for (int i = 0; i < a->subs[k].n_acked; i++)
			a->missing += ctl_set_replica(ctl_state_find(st, a->subs[k].acked[i]), 1) == NULL;
}

static int same_states(struct submitter *subs)
{
	struct buf want = BUF_INIT, img = BUF_INIT;
	int rc = -1;
	int leader = wait_leader();
	CHECK(leader >= 0);
	CHECK(ctl_node_inspect(g.slot[leader].node, image_of, &want) == 0);
	for (int i = 0; i < NODES; i++) {
		int64_t end = harness_now_ms() + WAIT_MS;
		for (;;) {
			buf_reset(&img);
			CHECK(ctl_node_inspect(g.slot[i].node, image_of, &img) == 0);
			if (img.len == want.len && memcmp(img.data, want.data, img.len) == 0)
				break;
			if (harness_now_ms() >= end) {
				fprintf(stderr, "n%d's state differs from the leader n%d's\n", i, leader);
				goto out;
			}
			sleep_ms(20);
		}
		struct acked_check a = { subs, 0 };
		CHECK(ctl_node_inspect(g.slot[i].node, find_acked, &a) == 0);
		EXPECT(a.missing == 0, "n%d lacks %d acknowledged sets", i, a.missing);
	}
	rc = 0;
out:
	buf_free(&want);
	buf_free(&img);
	return rc;
}

int main(void)
{
	struct submitter subs[SUBMITTERS];
	pthread_t reader;
	int reads = 0, rc = 1;
	bool reader_up = false;
	int started = 0;

	memset(subs, 0, sizeof subs);
	CHECK(harness_mkdtemp(g.dir, sizeof g.dir, "rmqns-test-ctlt") == 0);
	int ports[NODES];
	for (int i = 0; i < NODES; i++) {
		ports[i] = harness_free_port_pair(CTL_DEFAULT_RAFT_PORT_OFFSET);
		CHECK(ports[i] > 0);
		pthread_mutex_init(&g.slot[i].lock, NULL);
	}
	snprintf(g.peers, sizeof g.peers, "n0-127.0.0.1:%d;n1-127.0.0.1:%d;n2-127.0.0.1:%d", ports[0],
		 ports[1], ports[2]);
	for (int i = 0; i < NODES; i++)
		CHECK(slot_start(i) == 0);
	int leader = wait_leader();
	CHECK(leader >= 0);

	CHECK(pthread_create(&reader, NULL, read_thread, &reads) == 0);
	reader_up = true;
	for (; started < SUBMITTERS; started++) {
		struct submitter *s = &subs[started];
		s->index = started;
		pthread_mutex_init(&s->lock, NULL);
		pthread_cond_init(&s->cond, NULL);
		s->acked = calloc(ROUNDS, sizeof *s->acked);
		CHECK(s->acked);
		CHECK(pthread_create(&s->thread, NULL, submit_thread, s) == 0);
	}

	/* a third of the way: the leader stops while requests flow, another
	 * takes over, and the old one comes back from its log */
	int64_t end = harness_now_ms() + 10 * WAIT_MS;
	while (atomic_load(&progress) < SUBMITTERS * ROUNDS / 3 && harness_now_ms() < end)
		sleep_ms(5);
	CHECK(atomic_load(&progress) >= SUBMITTERS * ROUNDS / 3);
	slot_stop(leader);
	int next = wait_leader();
	CHECK(next >= 0 && next != leader);
	CHECK(slot_start(leader) == 0);
	fprintf(stderr, "controller_threads: n%d stopped after %d answers, n%d took over\n", leader,
		SUBMITTERS * ROUNDS / 3, next);

	rc = 0;
out:
	for (int k = 0; k < started; k++)
		pthread_join(subs[k].thread, NULL);
	atomic_store(&reading, false);
	if (reader_up)
		pthread_join(reader, NULL);
	if (rc == 0 && same_states(subs) != 0)
		rc = 1;
	int acked = 0, taken = 0, answered = 0;
	for (int k = 0; k < started; k++) {
		acked += subs[k].n_acked;
		taken += subs[k].taken;
		answered += subs[k].answered;
		EXPECT(subs[k].taken == subs[k].answered, "submitter %d: %d taken, %d answered", k,
		       subs[k].taken, subs[k].answered);
		fprintf(stderr, "submitter %d: %d taken, %d refused while stopped;", k, subs[k].taken,
			subs[k].refused_stopped);
		for (int kind = 0; kind < K_KINDS; kind++)
			fprintf(stderr, " [%d/%d/%d/%d]", subs[k].by_code[kind][0], subs[k].by_code[kind][1],
				subs[k].by_code[kind][2], subs[k].by_code[kind][3]);
		fputc('\n', stderr);
	}
	fprintf(stderr, "controller_threads: %d taken, %d answered, %d writes acknowledged, %d reads\n",
		taken, answered, acked, reads);
	if (rc == 0) {
		EXPECT(acked > 0, "no write acknowledged");
		EXPECT(reads > 0, "the reader never read");
	}
	for (int i = 0; i < NODES; i++)
		if (g.slot[i].node)
			slot_stop(i);
	for (int k = 0; k < started; k++)
		free(subs[k].acked);
	harness_rmdir(g.dir);
	return rc ? rc : plain_exit_status();
}
