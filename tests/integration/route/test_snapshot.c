/* The route snapshot (warm restart) against the real binary: a restart
 * answers routes at once with the bytes of before, /readyz is ready at once
 * under needWaitForService, a broker that does not come back expires by
 * what was left of its timeout while one that registers again stays, a
 * stale snapshot is ignored, corrupt ones are refused (the server starts
 * empty), and a kill -9 in the middle of a write leaves the previous file. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "harness_criterion.h"
#include "rmqns/buf.h"
#include "rmqns/remoting.h"

#define T HARNESS_IO_TIMEOUT_MS

static struct harness_server srv;
static char dir[64];
static char *snap;

static void init(void)
{
	cr_assert_eq(harness_mkdtemp(dir, sizeof(dir), "rmqns-snap"), 0);
	snap = harness_path_in(dir, "routes.snapshot");
	cr_assert_not_null(snap);
}

static void fini(void)
{
	harness_cleanup(&srv);
	harness_rmdir(dir);
	free(snap);
}

TestSuite(snapshot, .init = init, .fini = fini, .timeout = 180);

/* Starts the server writing its snapshot to `snap`, with up to 3 more
 * arguments (NULL = none); the previous run's directory goes first (the
 * snapshot is in the suite's own). */
static void start(const char *a1, const char *a2, const char *a3)
{
	const char *more[] = { a1, a2, a3 };
	const char *args[6] = { NULL };
	char *arg = NULL;
	int n = 0;

	harness_cleanup(&srv);
	cr_assert(asprintf(&arg, "--routeSnapshotPath=%s", snap) > 0);
	args[n++] = arg;
	args[n++] = "--routeSnapshotIntervalSeconds=1";
	for (int i = 0; i < 3; i++)
		if (more[i])
			args[n++] = more[i];
	cr_assert_eq(harness_start(&srv, args), 0, "the server did not start");
	free(arg);
}

static void stop_clean(void)
{
	int st = harness_stop(&srv, SIGTERM, 10000, NULL);
	cr_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "unclean stop: %d", st);
}

/* REGISTER_BROKER of n topics prefix0.. with the given timeout (NULL =
 * default); the data version is the harness body's. */
static void register_broker(struct client *c, const char *name, const char *id, const char *addr,
			    const char *prefix, int n, const char *timeout)
{
	struct buf body = BUF_INIT;
	struct client_reply *r = NULL;

	harness_topics_body(&body, prefix, n, 4);
	cr_assert_eq(harness_call(c, REQ_REGISTER_BROKER, (const char *)body.data, &r, "brokerName", name,
				  "brokerAddr", addr, "clusterName", "SnapCluster", "haServerAddr", "127.0.0.9:10912",
				  "brokerId", id, "heartbeatTimeoutMillis", timeout ? timeout : "120000", NULL),
		     0);
	cr_assert_eq(r->cmd.code, 0, "registration of %s: %d", addr, r->cmd.code);
	client_reply_free(r);
	buf_free(&body);
}

/* The answer to `code` (with a topic when given): its code, and its body
 * into out (reset first). */
static int query(struct client *c, int32_t code, const char *topic, bool standard, struct buf *out)
{
	struct client_reply *r = NULL;

	buf_reset(out);
	cr_assert_eq(harness_call(c, code, NULL, &r, "topic", topic, "acceptStandardJsonOnly",
				  standard ? "true" : "false", NULL),
		     0, "no answer to %d", code);
	int rc = r->cmd.code;
	if (r->cmd.body_len)
		cr_assert_eq(buf_append(out, r->cmd.body, r->cmd.body_len), 0);
	client_reply_free(r);
	return rc;
}

/* Waits for the snapshot file to appear (it is written within a second). */
static void wait_snapshot(void)
{
	struct timespec nap = { 0, 20 * 1000000L };
	struct stat st;

	for (int i = 0; i < 500 && stat(snap, &st) != 0; i++)
		nanosleep(&nap, NULL);
	cr_assert_eq(stat(snap, &st), 0, "no snapshot written at %s", snap);
}

#define N_ANSWERS 7

Test(snapshot, restart_answers_at_once_with_the_same_bytes)
{
	static const char *topics[] = { "SnapA0", "SnapA7", "SnapB3", "SnapB0" };
	struct buf before[N_ANSWERS * 2], now = BUF_INIT;
	int port = harness_free_port();
	char http[64];

	start(NULL, NULL, NULL);
	struct client *c = harness_connect_or_fail(&srv);
	/* two groups, one with a master and a slave, topics shared and not */
	register_broker(c, "snap-a", "0", "127.0.0.9:10911", "SnapA", 10, NULL);
	register_broker(c, "snap-a", "1", "127.0.0.9:10921", "SnapA", 10, NULL);
	register_broker(c, "snap-b", "0", "127.0.0.9:10931", "SnapB", 5, NULL);
	register_broker(c, "snap-b", "0", "127.0.0.9:10931", "SnapA", 3, NULL);
	int k = 0;
	for (int f = 0; f < 2; f++) {
		for (size_t i = 0; i < sizeof topics / sizeof *topics; i++) {
			before[k] = (struct buf)BUF_INIT;
			cr_assert_eq(query(c, REQ_GET_ROUTEINFO_BY_TOPIC, topics[i], f, &before[k]), 0);
			k++;
		}
		before[k] = (struct buf)BUF_INIT;
		cr_assert_eq(query(c, REQ_GET_BROKER_CLUSTER_INFO, NULL, f, &before[k++]), 0);
		before[k] = (struct buf)BUF_INIT;
		cr_assert_eq(query(c, 206 /* GET_ALL_TOPIC_LIST_FROM_NAMESERVER */, NULL, f, &before[k++]), 0);
		before[k] = (struct buf)BUF_INIT;
		cr_assert_eq(query(c, REQ_GET_ROUTEINFO_BY_TOPIC, "NoSuchTopic", f, &before[k++]),
			     RSP_TOPIC_NOT_EXIST);
	}
	/* the brokers' connection stays open across the stop: nothing is
	 * unregistered, the snapshot at SIGTERM has everything */
	stop_clean();
	client_close(c);
	cr_assert(harness_wait_log(&srv, "route snapshot: written at shutdown", 0));

	snprintf(http, sizeof http, "--httpPort=%d", port);
	start("--needWaitForService=true", "--waitSecondsForService=600", http);
	cr_assert(harness_wait_log(&srv, "route snapshot: restored from", 0));
	char *ready = NULL;
	cr_expect_eq(harness_http_get(port, "/readyz", &ready), 200, "/readyz: %s", ready);
	free(ready);
	c = harness_connect_or_fail(&srv);
	k = 0;
	for (int f = 0; f < 2; f++) {
		for (size_t i = 0; i < sizeof topics / sizeof *topics; i++, k++) {
			cr_assert_eq(query(c, REQ_GET_ROUTEINFO_BY_TOPIC, topics[i], f, &now), 0);
			cr_expect(now.len == before[k].len && memcmp(now.data, before[k].data, now.len) == 0,
				  "route of %s (form %d) differs:\n%.*s\nbefore:\n%.*s", topics[i], f, (int)now.len,
				  now.data, (int)before[k].len, before[k].data);
		}
		for (int q = 0; q < 2; q++, k++) {
			cr_assert_eq(query(c, q ? 206 : REQ_GET_BROKER_CLUSTER_INFO, NULL, f, &now), 0);
			cr_expect(now.len == before[k].len && memcmp(now.data, before[k].data, now.len) == 0,
				  "answer %d (form %d) differs:\n%.*s\nbefore:\n%.*s", q, f, (int)now.len, now.data,
				  (int)before[k].len, before[k].data);
		}
		cr_expect_eq(query(c, REQ_GET_ROUTEINFO_BY_TOPIC, "NoSuchTopic", f, &now), RSP_TOPIC_NOT_EXIST);
		k++;
	}
	client_close(c);
	for (int i = 0; i < k; i++)
		buf_free(&before[i]);
	buf_free(&now);
	stop_clean();
}

/* Whether topic has a route now. */
static bool routed(struct client *c, const char *topic)
{
	struct buf b = BUF_INIT;
	int rc = query(c, REQ_GET_ROUTEINFO_BY_TOPIC, topic, false, &b);
	buf_free(&b);
	cr_assert(rc == 0 || rc == RSP_TOPIC_NOT_EXIST, "code %d", rc);
	return rc == 0;
}

Test(snapshot, a_broker_missing_after_the_restart_expires_by_its_timeout)
{
	start(NULL, NULL, NULL);
	struct client *c = harness_connect_or_fail(&srv);
	register_broker(c, "gone", "0", "127.0.0.9:10941", "Gone", 2, "4000");
	register_broker(c, "back", "0", "127.0.0.9:10951", "Back", 2, "4000");
	stop_clean();
	client_close(c);

	start("--scanNotActiveBrokerInterval=200", NULL, NULL);
	c = harness_connect_or_fail(&srv);
	cr_assert(routed(c, "Gone0"), "not restored");
	cr_assert(routed(c, "Back1"), "not restored");
	/* "back" registers again and keeps registering; "gone" never does */
	struct timespec nap = { 0, 500 * 1000000L };
	bool expired = false;
	for (int i = 0; i < 40 && !expired; i++) {
		register_broker(c, "back", "0", "127.0.0.9:10951", "Back", 2, "4000");
		nanosleep(&nap, NULL);
		expired = !routed(c, "Gone0");
	}
	cr_assert(expired, "the broker that did not come back is still served after 20 s");
	cr_assert(harness_wait_log(&srv, "127.0.0.9:10941 (gone) of cluster SnapCluster removed: expired", T));
	cr_assert(routed(c, "Back0"), "the broker that registered again was dropped");
	cr_assert(routed(c, "Back1"));
	client_close(c);
	stop_clean();
}

Test(snapshot, a_stale_snapshot_is_ignored)
{
	start(NULL, NULL, NULL);
	struct client *c = harness_connect_or_fail(&srv);
	register_broker(c, "stale", "0", "127.0.0.9:10961", "Stale", 2, "1000");
	stop_clean();
	client_close(c);
	struct timespec nap = { 1, 500 * 1000000L }; /* past the 1 s timeout */
	nanosleep(&nap, NULL);

	start(NULL, NULL, NULL);
	cr_assert(harness_wait_log(&srv, "past the longest broker timeout (1000 ms)", 0));
	c = harness_connect_or_fail(&srv);
	cr_assert(!routed(c, "Stale0"), "a stale snapshot served routes");
	client_close(c);
	stop_clean();
}

static int make_fifo(const char *path)
{
	return mkfifo(path, 0600);
}

static int make_dir(const char *path)
{
	return mkdir(path, 0700);
}

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(p, 1, n, f), n);
	cr_assert_eq(fclose(f), 0);
}

Test(snapshot, corrupt_snapshots_are_refused)
{
	start(NULL, NULL, NULL);
	struct client *c = harness_connect_or_fail(&srv);
	register_broker(c, "corrupt", "0", "127.0.0.9:10971", "Corrupt", 20, NULL);
	stop_clean();
	client_close(c);
	struct stat st;
	cr_assert_eq(stat(snap, &st), 0);
	char *good = harness_slurp(snap);
	cr_assert_not_null(good);
	size_t len = (size_t)st.st_size;
	cr_assert_gt(len, 64);

	struct {
		const char *what, *log;
		size_t len;
		size_t flip; /* 0 = none */
	} cases[] = {
		{ "truncated", "truncated", len / 2, 0 },
		{ "header only", "truncated", 32, 0 },
		{ "a flipped content byte", "CRC32 mismatch", len, len / 2 },
		{ "a flipped time byte", "CRC32 mismatch", len, 25 },
		{ "a flipped magic byte", "not a route snapshot", len, 1 },
		{ "empty", "not a route snapshot", 0, 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *bad = malloc(len);
		cr_assert_not_null(bad);
		memcpy(bad, good, len);
		if (cases[i].flip)
			bad[cases[i].flip] ^= 0x20;
		write_file(snap, bad, cases[i].len);
		free(bad);
		start(NULL, NULL, NULL);
		cr_assert(harness_wait_log(&srv, "refused, starting empty", 0), "%s: not refused", cases[i].what);
		cr_assert(harness_wait_log(&srv, cases[i].log, 0), "%s: no \"%s\" in the log", cases[i].what,
			  cases[i].log);
		c = harness_connect_or_fail(&srv);
		cr_assert(!routed(c, "Corrupt0"), "%s: routes served", cases[i].what);
		client_close(c);
		stop_clean();
	}
	free(good);
}

/* kill -9 while the snapshot is written (its .tmp file there): the file
 * at the path is still the previous snapshot, and it restores. A table of
 * some megabytes and a write every second make the moment easy to hit. */
Test(snapshot, kill9_while_writing_keeps_the_previous_snapshot)
{
	char *tmp = NULL;
	cr_assert(asprintf(&tmp, "%s.tmp", snap) > 0);
	int hits = 0;
	for (int round = 0; round < 20 && hits < 2; round++) {
		start(NULL, NULL, NULL);
		struct client *c = harness_connect_or_fail(&srv);
		register_broker(c, "big", "0", "127.0.0.9:10981", "Big", 40000, NULL);
		wait_snapshot();
		/* a change a second: a write a second; kill as one is under way */
		struct timespec nap = { 0, 1000000L };
		struct stat st;
		bool writing = false;
		for (int i = 0; i < 3000 && !writing; i++) {
			if (i % 500 == 0)
				register_broker(c, "big", "0", "127.0.0.9:10981", "Big", 40000 - i / 500, NULL);
			writing = stat(tmp, &st) == 0;
			if (!writing)
				nanosleep(&nap, NULL);
		}
		harness_stop(&srv, SIGKILL, 10000, NULL);
		client_close(c);
		if (writing && stat(tmp, &st) == 0)
			hits++; /* killed between the tmp file's creation and its rename */
		start(NULL, NULL, NULL);
		cr_assert(harness_wait_log(&srv, "route snapshot: restored from", 0),
			  "round %d: the snapshot did not restore after kill -9", round);
		c = harness_connect_or_fail(&srv);
		cr_assert(routed(c, "Big39999"), "round %d: not restored", round);
		client_close(c);
		stop_clean();
		(void)unlink(tmp);
	}
	cr_assert_geq(hits, 1, "no kill -9 came while a snapshot was written");
	free(tmp);
}

/* A FIFO or a directory at the path: refused at once (a log line naming
 * it), the server starts empty, answers, and stops on SIGTERM. Opening
 * the FIFO for reading used to wait for a writer for ever. */
Test(snapshot, non_regular_file_at_the_path_is_refused_without_blocking)
{
	static const struct {
		const char *kind;
		int (*make)(const char *path);
	} cases[] = { { "is a FIFO", make_fifo }, { "is a directory", make_dir } };

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		cr_assert_eq(cases[i].make(snap), 0, "%s", cases[i].kind);
		start(NULL, NULL, NULL);
		cr_assert(harness_wait_log(&srv, "refused, starting empty", 0), "%s: not refused", cases[i].kind);
		cr_assert(harness_wait_log(&srv, cases[i].kind, 0), "%s: the reason not logged", cases[i].kind);
		struct client *c = harness_connect_or_fail(&srv);
		register_broker(c, "after", "0", "127.0.0.9:10981", "After", 2, NULL);
		cr_assert(routed(c, "After0"), "%s: the server does not answer", cases[i].kind);
		client_close(c);
		stop_clean();
		struct stat st;
		cr_assert_eq(lstat(snap, &st), 0);
		if (S_ISDIR(st.st_mode))
			cr_assert_eq(rmdir(snap), 0);
		else
			cr_assert_eq(unlink(snap), 0);
	}
}

/* A symbolic link planted at <path>.tmp is removed, not written
 * through: its target keeps its bytes and the snapshot is a regular file
 * of the usual mode. */
Test(snapshot, a_link_at_the_tmp_path_is_not_followed)
{
	char *victim = harness_path_in(dir, "victim");
	char *tmp = NULL;
	cr_assert_not_null(victim);
	cr_assert(asprintf(&tmp, "%s.tmp", snap) > 0);
	write_file(victim, "precious", 8);
	cr_assert_eq(symlink(victim, tmp), 0);

	start(NULL, NULL, NULL);
	struct client *c = harness_connect_or_fail(&srv);
	register_broker(c, "linked", "0", "127.0.0.9:10991", "Linked", 2, NULL);
	wait_snapshot();
	client_close(c);
	stop_clean();
	char *text = harness_slurp(victim);
	cr_assert_not_null(text);
	cr_assert_str_eq(text, "precious");
	free(text);
	struct stat st;
	cr_assert_eq(lstat(snap, &st), 0);
	cr_assert(S_ISREG(st.st_mode));
	mode_t mask = umask(0);
	umask(mask);
	cr_assert_eq(st.st_mode & 0777, 0640 & ~mask, "mode %o", st.st_mode & 0777);
	cr_assert_eq(lstat(tmp, &st), -1, "%s left behind", tmp);
	free(tmp);
	free(victim);
}
