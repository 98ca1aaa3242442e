/* Server core under concurrent load, against the real binary: many
 * pipelining connections, a full processor lane, peers that stop reading,
 * and a stop signal with requests in flight. Every loop is bounded in
 * count and time; worker threads report failures to the test thread. A
 * plain program (see harness.h) so that it also runs under TSan. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "harness.h"
#include "rmqns/err.h"
#include "rmqns/processor.h"

#define T HARNESS_IO_TIMEOUT_MS

#define START(s, args) HARNESS_CHECK(harness_start((s), (args)) == 0, "the server did not start")

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Checks one code-3 answer; returns NULL or what was wrong. */
static const char *check_code3(const struct client_reply *r, int32_t code, char *why, size_t n)
{
	char remark[64];
	snprintf(remark, sizeof remark, " request type %d not supported", code);
	if (r->cmd.code != RSP_REQUEST_CODE_NOT_SUPPORTED || !r->cmd.remark ||
	    strcmp(r->cmd.remark, remark) != 0 || r->cmd.flag != REMOTING_FLAG_RESPONSE) {
		snprintf(why, n, "opaque %d: code %d remark '%s', expected code 3 '%s'", r->cmd.opaque,
			 r->cmd.code, r->cmd.remark ? r->cmd.remark : "(none)", remark);
		return why;
	}
	return NULL;
}

/* ---- 200 connections x 16 pipelined requests ---- */

#define PIPE_THREADS 4
#define PIPE_CONNS_PER_THREAD 50
#define PIPE_DEPTH 16

struct pipe_job {
	const struct harness_server *srv;
	int index;
	int answers;
	char error[256];
};

static void *pipe_thread(void *arg)
{
	struct pipe_job *job = arg;
	struct client *conns[PIPE_CONNS_PER_THREAD] = { 0 };
	struct buf b = BUF_INIT;

	for (int i = 0; i < PIPE_CONNS_PER_THREAD; i++) {
		conns[i] = harness_connect(job->srv);
		if (!conns[i]) {
			snprintf(job->error, sizeof job->error, "connect %d failed", i);
			goto out;
		}
	}
	/* All requests out first, so every connection has 16 in flight. */
	for (int i = 0; i < PIPE_CONNS_PER_THREAD; i++) {
		int conn_no = job->index * PIPE_CONNS_PER_THREAD + i;
		enum remoting_serialize ser = conn_no % 2 ? REMOTING_ROCKETMQ : REMOTING_JSON;
		b.len = 0;
		for (int k = 0; k < PIPE_DEPTH; k++) {
			struct remoting_cmd req;
			harness_request_init(&req, 10000 + conn_no * PIPE_DEPTH + k, ser);
			req.opaque = k;
			harness_encode(&req, &b);
		}
		if (client_send_raw(conns[i], b.data, b.len, T) < 0) {
			snprintf(job->error, sizeof job->error, "send on connection %d failed", conn_no);
			goto out;
		}
	}
	for (int i = 0; i < PIPE_CONNS_PER_THREAD; i++) {
		int conn_no = job->index * PIPE_CONNS_PER_THREAD + i;
		enum remoting_serialize ser = conn_no % 2 ? REMOTING_ROCKETMQ : REMOTING_JSON;
		bool seen[PIPE_DEPTH] = { false };
		for (int k = 0; k < PIPE_DEPTH; k++) {
			struct client_reply *r = NULL;
			int rc = client_recv(conns[i], &r, T);
			if (rc < 0) {
				snprintf(job->error, sizeof job->error,
					 "connection %d: answer %d not received (%d)", conn_no, k, rc);
				goto out;
			}
			int32_t op = r->cmd.opaque;
			char why[200];
			if (op < 0 || op >= PIPE_DEPTH || seen[op]) {
				snprintf(job->error, sizeof job->error,
					 "connection %d: unexpected or repeated opaque %d", conn_no, op);
			} else if (r->cmd.serialize != ser) {
				snprintf(job->error, sizeof job->error,
					 "connection %d: answer in the wrong serialization", conn_no);
			} else if (check_code3(r, 10000 + conn_no * PIPE_DEPTH + op, why, sizeof why)) {
				snprintf(job->error, sizeof job->error, "connection %d: %s", conn_no, why);
			} else {
				seen[op] = true;
				job->answers++;
			}
			client_reply_free(r);
			if (job->error[0])
				goto out;
		}
	}
out:
	buf_free(&b);
	for (int i = 0; i < PIPE_CONNS_PER_THREAD; i++)
		client_close(conns[i]);
	return NULL;
}

static int check_pipelining(struct harness_server *s, const char *const *args)
{
	START(s, args);
	pthread_t th[PIPE_THREADS];
	struct pipe_job jobs[PIPE_THREADS];
	int started = 0;

	for (int t = 0; t < PIPE_THREADS; t++) {
		memset(&jobs[t], 0, sizeof jobs[t]);
		jobs[t].srv = s;
		jobs[t].index = t;
		if (pthread_create(&th[t], NULL, pipe_thread, &jobs[t]) != 0)
			break;
		started++;
	}
	int total = 0, failed = -1;
	for (int t = 0; t < started; t++) {
		pthread_join(th[t], NULL);
		if (jobs[t].error[0] && failed < 0)
			failed = t;
		total += jobs[t].answers;
	}
	HARNESS_CHECK(started == PIPE_THREADS, "only %d threads started", started);
	HARNESS_CHECK(failed < 0, "thread %d: %s", failed, failed < 0 ? "" : jobs[failed].error);
	HARNESS_CHECK(total == PIPE_THREADS * PIPE_CONNS_PER_THREAD * PIPE_DEPTH, "%d answers", total);
	int st = harness_stop(s, SIGTERM, 5000, NULL);
	HARNESS_CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status %#x", st);
	return 0;
}

static int test_pipelined_200x16_pool(struct harness_server *s)
{
	static const char *const args[] = { "--routeQueryInline=false", "--serverSelectorThreads=2",
					    "--serverWorkerThreads=2", NULL };
	return check_pipelining(s, args);
}

static int test_pipelined_200x16_inline(struct harness_server *s)
{
	static const char *const args[] = { "--routeQueryInline=true", "--serverSelectorThreads=2",
					    NULL };
	return check_pipelining(s, args);
}

/* ---- a full lane answers SYSTEM_BUSY at once ---- */

static int test_full_queue_answers_busy(struct harness_server *s)
{
	static const char *const args[] = { "--routeQueryInline=false", "--processorQueueCapacity=1",
					    "--serverWorkerThreads=1", "--serverSelectorThreads=1",
					    NULL };
	enum { N = 2000 };
	START(s, args);
	struct client *c = harness_connect(s);
	HARNESS_CHECK((c) != NULL, "%s", "");
	struct buf b = BUF_INIT;
	static bool seen[N];
	memset(seen, 0, sizeof seen);

	/* One burst; every tenth request one-way: those must get nothing back,
	 * busy or not. */
	int expected = 0;
	for (int i = 0; i < N; i++) {
		struct remoting_cmd req;
		harness_request_init(&req, 9999, REMOTING_JSON);
		req.opaque = i;
		if (i % 10 == 9)
			req.flag = REMOTING_FLAG_ONEWAY;
		else
			expected++;
		harness_encode(&req, &b);
	}
	HARNESS_CHECK((client_send_raw(c, b.data, b.len, T)) == (0), "%s", "");
	buf_free(&b);

	int busy = 0, done = 0;
	for (int k = 0; k < expected; k++) {
		struct client_reply *r = NULL;
		HARNESS_CHECK((client_recv(c, &r, T)) == (0), "answer %d of %d missing", k, expected);
		int32_t op = r->cmd.opaque;
		HARNESS_CHECK(op >= 0 && op < N && !seen[op] && op % 10 != 9, "bad opaque %d", op);
		seen[op] = true;
		if (r->cmd.code == RSP_SYSTEM_BUSY) {
			HARNESS_CHECK(r->cmd.remark && strcmp(r->cmd.remark, PROCESSOR_BUSY_REMARK) == 0,
				      "busy remark: %s", r->cmd.remark ? r->cmd.remark : "(none)");
			busy++;
		} else {
			char why[200];
			const char *bad = check_code3(r, 9999, why, sizeof why);
			HARNESS_CHECK((bad) == NULL, "%s", bad);
			done++;
		}
		client_reply_free(r);
	}
	struct client_reply *r = NULL;
	int rc = client_recv(c, &r, 300);
	if (rc == 0)
		client_reply_free(r);
	HARNESS_CHECK((rc) == (RMQNS_EAGAIN), "a frame beyond the expected answers arrived");
	HARNESS_CHECK((busy) > (0), "a burst of %d into a lane of 1 must meet a full lane", N);
	HARNESS_CHECK((done) > (0), "%s", "");
	client_close(c);
	return 0;
}

/* ---- peers that do not read their answers ---- */

struct flood {
	int fd;
	int sent;          /* whole requests written */
	struct buf partial; /* a request cut short by a stall: bytes from partial_off on unsent */
	size_t partial_off;
	bool closed;       /* the server closed or reset the connection */
	char error[200];
};

/* Waits until the socket takes more; false on a stall of stall_ms. */
static bool flood_wait_writable(struct flood *f, int stall_ms)
{
	struct pollfd p = { .fd = f->fd, .events = POLLOUT };
	int pr = poll(&p, 1, stall_ms);
	if (pr > 0 && (p.revents & (POLLERR | POLLHUP)))
		f->closed = true;
	return pr > 0 && !f->closed;
}

/* Writes requests without reading until the socket stays full for
 * stall_ms, the server closes it, max requests have gone out or the
 * deadline passes. A request cut short is left in f->partial. */
static void flood_write(struct flood *f, int max, int stall_ms, int64_t deadline)
{
	struct buf frame = BUF_INIT;
	while (f->sent < max && now_ms() < deadline) {
		struct remoting_cmd req;
		harness_request_init(&req, 9999, REMOTING_JSON);
		req.opaque = f->sent;
		frame.len = 0;
		harness_encode(&req, &frame);
		size_t off = 0;
		while (off < frame.len) {
			ssize_t n = send(f->fd, frame.data + off, frame.len - off,
					 MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n > 0) {
				off += (size_t)n;
				continue;
			}
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
				if (flood_wait_writable(f, stall_ms) && now_ms() < deadline)
					continue;
				if (off > 0) {
					f->partial = frame;
					f->partial_off = off;
					return;
				}
				goto out;
			}
			if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
				f->closed = true;
				goto out;
			}
			snprintf(f->error, sizeof f->error, "send: %s", strerror(errno));
			goto out;
		}
		f->sent++;
	}
out:
	buf_free(&frame);
}

/* s with answers paused past 64 KiB unsent, close_arg as the close limit
 * and a 4 KiB send buffer; a flooder reading through a 4 KiB receive
 * buffer (its peer name in peer) and another client. */
static int slow_reader_start(struct harness_server *s, const char *close_arg, struct client **flooder,
			     struct client **other, char peer[64])
{
	const char *const args[] = { "--outboundPauseBytes=65536", close_arg, "--serverSocketSndBufSize=4096",
				     NULL };
	START(s, args);
	*flooder = harness_connect_rcvbuf(s, 4096);
	*other = harness_connect(s);
	HARNESS_CHECK(*flooder && *other, "%s", "");
	harness_client_peer(*flooder, peer, 64);
	return 0;
}

static int test_slow_reader_paused_without_loss(struct harness_server *s)
{
	enum { MAX = 40000, CALLS = 100 };
	struct client *flooder, *other;
	char peer[64], needle[128];
	if (slow_reader_start(s, "--outboundCloseBytes=1073741824", &flooder, &other, peer))
		return -1;

	struct flood f = { .fd = client_fd(flooder) };
	flood_write(&f, MAX, 500, now_ms() + 20000);
	HARNESS_CHECK((f.error[0]) == ('\0'), "%s", f.error);
	HARNESS_CHECK(!f.closed, "a paused peer must not be closed below the hard cap");

	/* The server stopped reading the flooder but serves everyone else. */
	snprintf(needle, sizeof needle, "connection %s: not reading its answers", peer);
	HARNESS_CHECK(harness_wait_log(s, needle, T), "the flooder was never paused (%d sent)", f.sent);
	for (int i = 0; i < CALLS; i++) {
		struct remoting_cmd req;
		struct client_reply *r = NULL;
		harness_request_init(&req, 9999, REMOTING_JSON);
		HARNESS_CHECK((client_call(other, &req, &r, T)) == (0), "call %d failed", i);
		HARNESS_CHECK((r->cmd.code) == (RSP_REQUEST_CODE_NOT_SUPPORTED), "%s", "");
		client_reply_free(r);
	}

	/* Once the flooder reads, every request it sent is answered, the one
	 * cut short included once it is complete. */
	static bool seen[MAX + 1];
	memset(seen, 0, sizeof seen);
	int expected = f.sent + (f.partial.len ? 1 : 0);
	for (int k = 0; k < expected; k++) {
		if (k == f.sent && f.partial.len) {
			HARNESS_CHECK(client_send_raw(flooder, f.partial.data + f.partial_off,
						      f.partial.len - f.partial_off, T) == 0,
				      "%s", "finishing the cut request");
			buf_free(&f.partial);
		}
		struct client_reply *r = NULL;
		int rc = client_recv(flooder, &r, T);
		HARNESS_CHECK(rc == 0, "answer %d of %d missing (%d)", k, expected, rc);
		int32_t op = r->cmd.opaque;
		HARNESS_CHECK(op >= 0 && op < expected && !seen[op], "bad opaque %d", op);
		seen[op] = true;
		HARNESS_CHECK(r->cmd.code == RSP_REQUEST_CODE_NOT_SUPPORTED, "code %d", r->cmd.code);
		client_reply_free(r);
	}
	buf_free(&f.partial);
	client_close(flooder);
	client_close(other);
	return 0;
}

struct flood_job {
	struct flood f;
};

static void *flood_thread(void *arg)
{
	struct flood_job *job = arg;
	flood_write(&job->f, 2000000, 20000, now_ms() + 30000);
	return NULL;
}

static int test_slow_reader_closed_past_hard_cap(struct harness_server *s)
{
	enum { CALLS = 200 };
	struct client *flooder, *other;
	char peer[64], needle[160];
	if (slow_reader_start(s, "--outboundCloseBytes=65536", &flooder, &other, peer))
		return -1;

	struct flood_job job = { .f = { .fd = client_fd(flooder) } };
	pthread_t th;
	HARNESS_CHECK(pthread_create(&th, NULL, flood_thread, &job) == 0, "%s", "pthread_create");
	int ok = 0;
	for (int i = 0; i < CALLS; i++) {
		struct remoting_cmd req;
		struct client_reply *r = NULL;
		harness_request_init(&req, 9999, REMOTING_JSON);
		if (client_call(other, &req, &r, T) == 0 && r->cmd.code == RSP_REQUEST_CODE_NOT_SUPPORTED)
			ok++;
		client_reply_free(r);
	}
	pthread_join(th, NULL);
	buf_free(&job.f.partial);
	HARNESS_CHECK((ok) == (CALLS), "only %d of %d calls succeeded beside the flooder", ok, CALLS);
	HARNESS_CHECK((job.f.error[0]) == ('\0'), "%s", job.f.error);
	HARNESS_CHECK(job.f.closed, "the flooder was not closed (%d requests sent)", job.f.sent);
	snprintf(needle, sizeof needle, "closing connection %s: ", peer);
	HARNESS_CHECK(harness_wait_log(s, needle, T), "%s", "");
	HARNESS_CHECK(harness_wait_log(s, "outboundCloseBytes", T), "%s", "");

	/* And the server is still fine. */
	struct remoting_cmd req;
	struct client_reply *r = NULL;
	harness_request_init(&req, 9999, REMOTING_ROCKETMQ);
	HARNESS_CHECK((client_call(other, &req, &r, T)) == (0), "%s", "");
	client_reply_free(r);
	client_close(flooder);
	client_close(other);
	return 0;
}

/* ---- stop with requests in flight ---- */

static int test_sigterm_with_requests_in_flight(struct harness_server *s)
{
	static const char *const args[] = { "--serverWorkerThreads=1", "--routeQueryInline=false",
					    NULL };
	enum { CONNS = 8, DEPTH = 2000 };
	START(s, args);
	struct client *c[CONNS];
	struct buf b = BUF_INIT;

	for (int i = 0; i < DEPTH; i++) {
		struct remoting_cmd req;
		harness_request_init(&req, 9999, REMOTING_JSON);
		req.opaque = i;
		harness_encode(&req, &b);
	}
	for (int i = 0; i < CONNS; i++) {
		c[i] = harness_connect(s);
		HARNESS_CHECK((c[i]) != NULL, "%s", "");
		HARNESS_CHECK((client_send_raw(c[i], b.data, b.len, T)) == (0), "%s", "");
	}
	buf_free(&b);

	int elapsed = 0;
	int st = harness_stop(s, SIGTERM, HARNESS_WAIT_MS, &elapsed);
	HARNESS_CHECK(st != -1, "the server did not exit within %d ms of SIGTERM", HARNESS_WAIT_MS);
	HARNESS_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status %#x", st);

	/* Whatever was answered is a whole, correct answer; then the end. */
	for (int i = 0; i < CONNS; i++) {
		int rc;
		struct client_reply *r = NULL;
		while ((rc = client_recv(c[i], &r, T)) == 0) {
			HARNESS_CHECK(r->cmd.opaque >= 0 && r->cmd.opaque < DEPTH, "%s", "");
			HARNESS_CHECK(r->cmd.code == RSP_REQUEST_CODE_NOT_SUPPORTED ||
				  r->cmd.code == RSP_SYSTEM_BUSY, "code %d", r->cmd.code);
			client_reply_free(r);
		}
		HARNESS_CHECK((rc) == (RMQNS_ECLOSED), "connection %d ended with %d", i, rc);
		client_close(c[i]);
	}
	char *log = harness_read_log(s);
	HARNESS_CHECK(log && strstr(log, "shutdown hook done"), "%s", "");
	free(log);
	return 0;
}

static const struct harness_test load_tests[] = {
	{ "pipelined_200x16_pool", test_pipelined_200x16_pool },
	{ "pipelined_200x16_inline", test_pipelined_200x16_inline },
	{ "full_queue_answers_busy", test_full_queue_answers_busy },
	{ "slow_reader_paused_without_loss", test_slow_reader_paused_without_loss },
	{ "slow_reader_closed_past_hard_cap", test_slow_reader_closed_past_hard_cap },
	{ "sigterm_with_requests_in_flight", test_sigterm_with_requests_in_flight },
};

int main(int argc, char **argv)
{
	return harness_main(load_tests, sizeof load_tests / sizeof load_tests[0], argc, argv);
}
