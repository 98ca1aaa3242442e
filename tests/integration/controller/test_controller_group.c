/* Three controller nodes (ctl_node) in this process, a Raft group over
 * loopback TCP with their logs in a temporary directory: one leader
 * serves, followers answer 2007 and name it, the states agree, the
 * leader's loss elects another with nothing committed lost, a returning
 * node catches up, and a restart of all three rebuilds the same state
 * from log and snapshots. Requests go in as frames, answers come back as
 * frames. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <ftw.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "harness.h"
#include "rmqns/controller.h"
#include "rmqns/err.h"
#include "rmqns/remoting.h"

#define NODES 3
#define WAIT_MS 30000 /* generous: "does it happen at all", on a loaded host */

struct group {
	char dir[256];
	char peers[256];
	struct ctl_node *nodes[NODES];
};

static void group_init(struct group *g)
{
	int ports[NODES];
	cr_assert_eq(harness_mkdtemp(g->dir, sizeof g->dir, "rmqns-test-ctl"), 0);
	for (int i = 0; i < NODES; i++) {
		ports[i] = harness_free_port_pair(CTL_DEFAULT_RAFT_PORT_OFFSET);
		cr_assert_gt(ports[i], 0);
	}
	snprintf(g->peers, sizeof g->peers, "n0-127.0.0.1:%d;n1-127.0.0.1:%d;n2-127.0.0.1:%d", ports[0],
		 ports[1], ports[2]);
	memset(g->nodes, 0, sizeof g->nodes);
}

static void node_up(struct group *g, int i)
{
	char self[8], err[512] = "";
	snprintf(self, sizeof self, "n%d", i);
	struct ctl_node_config cfg = {
		.group = "group1", .peers = g->peers, .self_id = self, .store_path = g->dir,
		.bind_host = "127.0.0.1",
		/* small, so that snapshots are taken and restored on the way */
		.snapshot_threshold = 8, .snapshot_trailing = 4,
	};
	g->nodes[i] = ctl_node_start(&cfg, err, sizeof err);
	cr_assert_not_null(g->nodes[i], "node %d: %s", i, err);
}

static void node_down(struct group *g, int i)
{
	ctl_node_stop(g->nodes[i]);
	g->nodes[i] = NULL;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void group_fini(struct group *g)
{
	for (int i = 0; i < NODES; i++)
		if (g->nodes[i])
			node_down(g, i);
	nftw(g->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The node that serves as leader, once exactly one does (-1 on timeout). */
static int wait_leader(struct group *g, int64_t timeout_ms)
{
	int64_t end = harness_now_ms() + timeout_ms;
	do {
		int leader = -1, count = 0;
		for (int i = 0; i < NODES; i++) {
			struct ctl_node_status st;
			if (!g->nodes[i])
				continue;
			ctl_node_status(g->nodes[i], &st);
			if (st.serving) {
				leader = i;
				count++;
			}
		}
		if (count == 1)
			return leader;
		harness_sleep_ms(20);
	} while (harness_now_ms() < end);
	return -1;
}

/* ---- requests as frames ---- */

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	struct buf frame;
};

static void on_reply(void *arg, const uint8_t *frame, size_t len)
{
	struct waiter *w = arg;
	pthread_mutex_lock(&w->lock);
	if (frame)
		buf_append(&w->frame, frame, len);
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

struct answer {
	struct remoting_cmd cmd;
	struct buf frame;
};

static int32_t next_opaque = 1;

/* Sends code with key/value pairs (NULL-ended) and an optional body; the
 * decoded answer goes to *a (release with answer_free). */
static int32_t ask(struct ctl_node *node, struct answer *a, int32_t code, const char *body, ...)
{
	struct remoting_ext_field ext[16];
	struct remoting_cmd req = { .code = code, .language = LANG_JAVA, .version = 441,
				    .opaque = next_opaque++, .serialize = REMOTING_JSON };
	struct buf frame = BUF_INIT;
	struct waiter w = { .done = false, .frame = BUF_INIT };
	va_list ap;
	const char *k;

	va_start(ap, body);
	while ((k = va_arg(ap, const char *))) {
		ext[req.ext_count].key = k;
		ext[req.ext_count].value = va_arg(ap, const char *);
		req.ext_count++;
	}
	va_end(ap);
	req.ext = ext;
	if (body) {
		req.body = (const uint8_t *)body;
		req.body_len = (uint32_t)strlen(body);
	}
	harness_encode(&req, &frame);
	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	cr_assert_eq(ctl_node_submit(node, frame.data, frame.len, 1, on_reply, &w), 0);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += WAIT_MS / 1000;
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		cr_assert_eq(pthread_cond_timedwait(&w.cond, &w.lock, &until), 0, "no answer to %d", code);
	pthread_mutex_unlock(&w.lock);
	buf_free(&frame);
	cr_assert_gt(w.frame.len, 0, "empty answer to %d", code);
	a->frame = w.frame;
	cr_assert_eq(remoting_decode(a->frame.data, a->frame.len, &a->cmd), 0);
	return a->cmd.code;
}

static void answer_free(struct answer *a)
{
	remoting_cmd_release(&a->cmd);
	buf_free(&a->frame);
}

static const char *ext_of(struct answer *a, const char *key)
{
	const char *v = remoting_ext_get(&a->cmd, key);
	return v ? v : "(absent)";
}

static void apply_id(struct ctl_node *node, const char *name, const char *id)
{
	struct answer a;
	char check[64];
	snprintf(check, sizeof check, "127.0.0.1:3%s911;17961757", id);
	cr_assert_eq(ask(node, &a, 1013, NULL, "clusterName", "C1", "brokerName", name,
			 "appliedBrokerId", id, "registerCheckCode", check, NULL), 0,
		     "apply %s/%s: %s", name, id, a.cmd.remark ? a.cmd.remark : "");
	answer_free(&a);
}

/* ---- comparing states ---- */

static void snapshot_of(void *arg, const struct ctl_state *s)
{
	cr_assert_eq(ctl_state_snapshot(s, arg), 0);
}

static void state_image(struct ctl_node *node, struct buf *out)
{
	buf_reset(out);
	cr_assert_eq(ctl_node_inspect(node, snapshot_of, out), 0);
}

/* Waits until every running node has the image `want`. */
static void wait_same_state(struct group *g, const struct buf *want)
{
	int64_t end = harness_now_ms() + WAIT_MS;
	struct buf img = BUF_INIT;
	for (int i = 0; i < NODES; i++) {
		if (!g->nodes[i])
			continue;
		for (;;) {
			state_image(g->nodes[i], &img);
			if (img.len == want->len && memcmp(img.data, want->data, img.len) == 0)
				break;
			cr_assert_lt(harness_now_ms(), end, "node %d's state differs from the leader's", i);
			harness_sleep_ms(20);
		}
	}
	buf_free(&img);
}

static bool has_snapshot_file(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool found = false;
	if (!d)
		return false;
	while ((e = readdir(d)))
		found |= strncmp(e->d_name, "snapshot-", 9) == 0;
	closedir(d);
	return found;
}

Test(controller_group, elect_serve_fail_over_restart, .timeout = 120)
{
	struct group g;
	struct answer a;
	struct buf ref = BUF_INIT;
	char expect[64];

	group_init(&g);
	for (int i = 0; i < NODES; i++)
		node_up(&g, i);
	int leader = wait_leader(&g, WAIT_MS);
	cr_assert_geq(leader, 0, "no leader");
	int follower = (leader + 1) % NODES;

	/* a follower refuses writes and names the leader */
	cr_assert_eq(ask(g.nodes[follower], &a, 1013, NULL, "clusterName", "C1", "brokerName", "broker-a",
			 "appliedBrokerId", "1", "registerCheckCode", "x;1", NULL), 2007);
	cr_assert_str_eq(a.cmd.remark, "The controller is not in leader state");
	cr_assert_not(a.cmd.ext_present);
	answer_free(&a);
	int64_t end = harness_now_ms() + WAIT_MS;
	for (;;) {
		cr_assert_eq(ask(g.nodes[follower], &a, 1005, NULL, NULL), 0);
		snprintf(expect, sizeof expect, "n%d", leader);
		bool named = strcmp(ext_of(&a, "controllerLeaderId"), expect) == 0;
		if (named) {
			cr_assert_str_eq(ext_of(&a, "isLeader"), "false");
			cr_assert_str_eq(ext_of(&a, "group"), "group1");
			answer_free(&a);
			break;
		}
		answer_free(&a);
		cr_assert_lt(harness_now_ms(), end, "the follower never learnt the leader");
		harness_sleep_ms(20);
	}

	/* a broker set through the leader: ids, heartbeat, first master */
	apply_id(g.nodes[leader], "broker-a", "1");
	cr_assert_eq(ask(g.nodes[leader], &a, 904, NULL, "clusterName", "C1", "brokerName", "broker-a",
			 "brokerAddr", "127.0.0.1:31911", "brokerId", "1", NULL), 0);
	answer_free(&a);
	cr_assert_eq(ask(g.nodes[leader], &a, 1002, NULL, "clusterName", "C1", "brokerName", "broker-a",
			 "brokerId", "1", "designateElect", "false", NULL), 0);
	cr_assert_str_eq(ext_of(&a, "masterBrokerId"), "1");
	cr_assert_str_eq(ext_of(&a, "masterEpoch"), "1");
	answer_free(&a);
	for (int id = 2; id <= 6; id++) {
		char text[8];
		snprintf(text, sizeof text, "%d", id);
		apply_id(g.nodes[leader], "broker-a", text);
	}
	apply_id(g.nodes[leader], "broker-b", "1");
	apply_id(g.nodes[leader], "broker-c", "1");
	apply_id(g.nodes[leader], "broker-d", "1");
	state_image(g.nodes[leader], &ref);
	wait_same_state(&g, &ref);

	/* the leader goes: another serves, with every committed event */
	int64_t t0 = harness_now_ms();
	node_down(&g, leader);
	int next = wait_leader(&g, WAIT_MS);
	cr_assert_geq(next, 0, "no new leader");
	fprintf(stderr, "controller_group: new leader n%d serving %lld ms after n%d stopped\n", next,
		(long long)(harness_now_ms() - t0), leader);
	cr_assert_eq(ask(g.nodes[next], &a, 1012, NULL, "clusterName", "C1", "brokerName", "broker-a",
			 NULL), 0);
	cr_assert_str_eq(ext_of(&a, "nextBrokerId"), "7");
	answer_free(&a);
	cr_assert_eq(ask(g.nodes[next], &a, 1004, NULL, "brokerName", "broker-a", NULL), 0);
	cr_assert_str_eq(ext_of(&a, "masterBrokerId"), "1");
	cr_assert_str_eq(ext_of(&a, "masterEpoch"), "1");
	answer_free(&a);
	state_image(g.nodes[next], &ref);
	apply_id(g.nodes[next], "broker-a", "7");

	/* the old leader returns and catches up */
	node_up(&g, leader);
	state_image(g.nodes[next], &ref);
	wait_same_state(&g, &ref);
	char raft_dir[400];
	snprintf(raft_dir, sizeof raft_dir, "%s/raft-n%d", g.dir, next);
	cr_assert(has_snapshot_file(raft_dir), "no snapshot in %s", raft_dir);

	/* all three stop and start again: the same state from log and snapshots */
	for (int i = 0; i < NODES; i++)
		node_down(&g, i);
	for (int i = 0; i < NODES; i++)
		node_up(&g, i);
	leader = wait_leader(&g, WAIT_MS);
	cr_assert_geq(leader, 0, "no leader after the restart");
	wait_same_state(&g, &ref);
	cr_assert_eq(ask(g.nodes[leader], &a, 1012, NULL, "clusterName", "C1", "brokerName", "broker-a",
			 NULL), 0);
	cr_assert_str_eq(ext_of(&a, "nextBrokerId"), "8");
	answer_free(&a);

	buf_free(&ref);
	group_fini(&g);
}
