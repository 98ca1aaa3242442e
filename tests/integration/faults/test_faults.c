/* Bad input and bad luck against the real binary: garbage floods, many
 * idle connections, slowloris, clients vanishing mid-request and
 * mid-answer, a flood of registrations, the frame size limit streamed in
 * full, an inflate bomb, a registration of 100,000 topics and broker
 * identities at extreme lengths. Whatever happens, the server keeps
 * answering route queries correctly, its memory and descriptors stay
 * bounded, and it exits cleanly at the end (harness_cleanup checks the
 * exit status and the log for sanitizer reports). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "harness.h"
#include "harness_criterion.h"
#include "rmqns/buf.h"
#include "rmqns/err.h"
#include "rmqns/json_body.h"
#include "rmqns/json_tree.h"

#define T HARNESS_IO_TIMEOUT_MS

/* Freed memory stays resident in AddressSanitizer's quarantine (256 MB by
 * default): the RSS bounds allow for it in such builds. */
#define RSS_SLACK_KB (HARNESS_ASAN ? 320L * 1024 : 0L)

static struct harness_server srv;

static void fini(void)
{
	cr_expect_eq(harness_cleanup(&srv), 0, "the server did not exit cleanly");
}

TestSuite(faults, .fini = fini, .timeout = 240);

static void start(const char *const *args)
{
	cr_assert_eq(harness_start(&srv, args), 0, "server did not boot");
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the server's resources, from /proc ---- */

static long server_rss_kb(void)
{
	return harness_status_kb(&srv, "VmRSS");
}

static int server_fds(void)
{
	char path[64];
	int n = 0;
	snprintf(path, sizeof path, "/proc/%d/fd", (int)srv.pid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Waits (up to 20 s) for the server's descriptors to come back to at most
 * `want`: closed connections are released. */
static void expect_fds_back_to(int want)
{
	int n = server_fds();
	for (int64_t end = now_ms() + 20000; n > want && now_ms() < end; n = server_fds())
		harness_sleep_ms(20);
	cr_expect_leq(n, want, "the server holds %d descriptors, %d before", n, want);
}

/* ---- requests ---- */

/* A RegisterBrokerBody with topics prefix0..prefix(n-1). */
static char *reg_body(const char *prefix, int n)
{
	struct buf b = BUF_INIT;
	buf_append_str(&b, "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":"
			   "{\"counter\":1,\"stateVersion\":0,\"timestamp\":1700000000000},\"topicConfigTable\":{");
	for (int i = 0; i < n; i++)
		buf_printf(&b, "%s\"%s%d\":{\"perm\":6,\"readQueueNums\":4,\"topicName\":\"%s%d\","
			       "\"writeQueueNums\":4}", i ? "," : "", prefix, i, prefix, i);
	buf_append_str(&b, "}}}");
	buf_terminate(&b);
	return (char *)b.data;
}

static void reg_request(struct remoting_cmd *req, struct remoting_ext_field *ext, const char *cluster,
			const char *name, const char *addr, const char *id, const void *body, size_t len)
{
	harness_request_init(req, REQ_REGISTER_BROKER, REMOTING_JSON);
	ext[0] = (struct remoting_ext_field){ "clusterName", cluster };
	ext[1] = (struct remoting_ext_field){ "brokerName", name };
	ext[2] = (struct remoting_ext_field){ "brokerAddr", addr };
	ext[3] = (struct remoting_ext_field){ "brokerId", id };
	ext[4] = (struct remoting_ext_field){ "haServerAddr", addr };
	req->ext = ext;
	req->ext_count = 5;
	req->ext_present = true;
	req->body = body;
	req->body_len = (uint32_t)len;
}

/* Registers a broker; returns the answer's code. */
static int32_t register_broker(struct client *c, const char *cluster, const char *name, const char *addr,
			       const char *id, const void *body, size_t len)
{
	struct remoting_ext_field ext[5];
	struct remoting_cmd req;
	struct client_reply *r = NULL;
	reg_request(&req, ext, cluster, name, addr, id, body, len);
	cr_assert_eq(client_call(c, &req, &r, T * 3), 0, "no answer to a registration");
	int32_t code = r->cmd.code;
	client_reply_free(r);
	return code;
}

static void register_simple(struct client *c)
{
	char *body = reg_body("T", 2);
	cr_assert_eq(register_broker(c, "c1", "b1", "127.0.0.1:10911", "0", body, strlen(body)), 0);
	free(body);
}

/* The route of `topic`: its body (malloc'd, NUL-terminated), or NULL when
 * the server says the topic is not known (code 17). */
static char *route_of(struct client *c, const char *topic)
{
	struct remoting_ext_field ext[HARNESS_CALL_MAX_EXT];
	struct remoting_cmd req;
	struct client_reply *r = NULL;
	cr_assert_eq(harness_request(&req, ext, REQ_GET_ROUTEINFO_BY_TOPIC, REMOTING_JSON, NULL, "topic", topic,
				     NULL), 0);
	cr_assert_eq(client_call(c, &req, &r, T), 0, "no route answer");
	char *out = NULL;
	if (r->cmd.code == 0) {
		out = malloc(r->cmd.body_len + 1);
		cr_assert(out);
		memcpy(out, r->cmd.body, r->cmd.body_len);
		out[r->cmd.body_len] = 0;
	} else {
		cr_assert_eq(r->cmd.code, 17, "route answer code %d", r->cmd.code);
	}
	client_reply_free(r);
	return out;
}

/* A route query on a fresh connection must name b1's address. */
static void expect_route_served(void)
{
	struct client *c = harness_connect_or_fail(&srv);
	char *r = route_of(c, "T0");
	cr_assert(r, "T0 has no route");
	cr_expect(strstr(r, "127.0.0.1:10911") != NULL, "route of T0: %s", r);
	free(r);
	client_close(c);
}

/* The answer of a request without ext fields, as a parsed JSON body. */
static json_t *call_json(struct client *c, int32_t code)
{
	struct remoting_cmd req;
	struct client_reply *r = NULL;
	harness_request_init(&req, code, REMOTING_JSON);
	cr_assert_eq(client_call(c, &req, &r, T * 3), 0, "no answer to code %d", code);
	cr_assert_eq(r->cmd.code, 0, "code %d answered %d", code, r->cmd.code);
	int err = 0;
	json_t *j = json_body_parse(r->cmd.body, r->cmd.body_len, &err);
	cr_assert(j, "code %d: body is not JSON (%d): %.*s", code, err, (int)r->cmd.body_len,
		  (const char *)r->cmd.body);
	client_reply_free(r);
	return j;
}

/* A raw loopback socket to a port (blocking), or -1. */
static int raw_connect_to(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A raw loopback socket to the server's protocol port, or -1. */
static int raw_connect(void)
{
	return raw_connect_to(srv.port);
}

/* Closes with a reset instead of a FIN. */
static void close_reset(int fd)
{
	struct linger l = { 1, 0 };
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
	close(fd);
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* ---- garbage ---- */

Test(faults, garbage_flood_on_many_connections)
{
	enum { CONNS = 64, BYTES = 64 * 1024 };
	static uint8_t junk[BYTES];
	int fds[CONNS];

	start(NULL);
	struct client *c = harness_connect_or_fail(&srv);
	register_simple(c);
	int fds0 = server_fds();
	long rss0 = server_rss_kb();
	for (int i = 0; i < CONNS; i++) {
		fds[i] = raw_connect();
		cr_assert_geq(fds[i], 0);
	}
	for (int i = 0; i < CONNS; i++) {
		for (size_t k = 0; k < BYTES; k += 8) {
			uint64_t v = next_rand();
			memcpy(junk + k, &v, 8);
		}
		/* a third start like a frame: a length in range, then junk */
		if (i % 3 == 0) {
			uint32_t len = htonl((uint32_t)(next_rand() % BYTES));
			memcpy(junk, &len, 4);
		}
		/* the server may close at the first bad byte: a failed send is fine */
		for (size_t off = 0; off < BYTES;) {
			ssize_t n = send(fds[i], junk + off, BYTES - off, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n <= 0)
				break;
			off += (size_t)n;
		}
		if (i % 8 == 0)
			expect_route_served();
	}
	for (int i = 0; i < CONNS; i++)
		close(fds[i]);
	expect_route_served();
	expect_fds_back_to(fds0);
	long rss = server_rss_kb();
	cr_expect_lt(rss, rss0 + 128 * 1024 + RSS_SLACK_KB, "RSS grew from %ld to %ld kB", rss0, rss);
	client_close(c);
}

static int count_in(const char *s, const char *needle)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

/* Connections a client opens at will to make the server complain: their
 * WARN lines are limited per kind, not one per connection. */
Test(faults, garbage_connections_log_a_bounded_number_of_lines)
{
	enum { CONNS = 2000, KIND_MAX = 10 + 1 };
	static const uint8_t bad_length[] = { 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0 };
	static const uint8_t bad_header[] = { 0, 0, 0, 8, 0, 0, 0, 4, '{', '"', 'c', ':' };
	struct buf rsp = BUF_INIT;
	struct remoting_cmd cmd;

	harness_request_init(&cmd, 0, REMOTING_JSON);
	cmd.flag = 1; /* a response nobody asked for */
	harness_encode(&cmd, &rsp);
	start(NULL);
	int fds0 = server_fds();
	char *log0 = harness_read_log(&srv);
	cr_assert_not_null(log0);
	for (int i = 0; i < CONNS; i++) {
		int fd = raw_connect();
		cr_assert_geq(fd, 0, "connect %d: %s", i, strerror(errno));
		const void *p = i % 3 == 0 ? bad_length : i % 3 == 1 ? bad_header : rsp.data;
		size_t n = i % 3 == 0 ? sizeof bad_length : i % 3 == 1 ? sizeof bad_header : rsp.len;
		cr_assert_eq(send(fd, p, n, MSG_NOSIGNAL), (ssize_t)n);
		close(fd);
	}
	buf_free(&rsp);
	expect_fds_back_to(fds0);
	struct client *c = harness_connect_or_fail(&srv);
	cr_assert_null(route_of(c, "NoSuchTopic"));
	client_close(c);
	char *log1 = harness_read_log(&srv);
	cr_assert_not_null(log1);
	const char *since = log1 + strlen(log0);
	int bad = count_in(since, "bad frame"), header = count_in(since, "undecodable command header"),
	    unasked = count_in(since, "nobody asked for");
	cr_expect(bad >= 1 && bad <= KIND_MAX, "%d bad-frame lines", bad);
	cr_expect(header >= 1 && header <= KIND_MAX, "%d bad-header lines", header);
	cr_expect(unasked >= 1 && unasked <= KIND_MAX, "%d unasked-response lines", unasked);
	cr_expect_leq(count_in(since, "\n"), 3 * KIND_MAX, "%s", since);
	free(log0);
	free(log1);
}

/* ---- out of descriptors ---- */

/* The server's highest open descriptor number. */
static int server_max_fd(void)
{
	char path[64];
	int max = -1;
	snprintf(path, sizeof path, "/proc/%d/fd", (int)srv.pid);
	DIR *d = opendir(path);
	cr_assert(d, "cannot list %s", path);
	for (struct dirent *e; (e = readdir(d));)
		if (e->d_name[0] != '.' && atoi(e->d_name) > max)
			max = atoi(e->d_name);
	closedir(d);
	return max;
}

/* The server's CPU time so far, user and system, in ms. */
static long long server_cpu_ms(void)
{
	char path[64];
	unsigned long long user = 0, sys = 0;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)srv.pid);
	char *st = harness_slurp(path);
	const char *p = st ? strrchr(st, ')') : NULL; /* the name may hold blanks */
	int got = p ? sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &user,
			     &sys)
		    : 0;
	free(st);
	cr_assert_eq(got, 2, "cannot read %s", path);
	return (long long)((user + sys) * 1000 / (unsigned long long)sysconf(_SC_CLK_TCK));
}

/* With every descriptor it may open in use, the server stops watching its
 * listener for a while instead of waking at once for a connection it
 * cannot take: little CPU, a line now and then, and it takes connections
 * again once descriptors are back. */
Test(faults, out_of_descriptors_pauses_accepts_quietly)
{
	enum { HEADROOM = 24, HELD = HEADROOM + 8, WINDOW_MS = 3000 };
	int held[HELD];
	struct rlimit lim;
	char http_arg[32];
	int http = harness_free_port();
	snprintf(http_arg, sizeof http_arg, "--httpPort=%d", http);
	const char *const args[] = { http_arg, NULL };
	const char *wrapper = getenv("RMQNS_SERVER_WRAPPER");
	if (wrapper && *wrapper)
		cr_skip_test("the server runs under a wrapper (valgrind keeps descriptors of its own "
			     "near the limit and refuses a lower one)");

	start(args);
	cr_assert_eq(prlimit(srv.pid, RLIMIT_NOFILE, NULL, &lim), 0);
	lim.rlim_cur = (rlim_t)server_max_fd() + 1 + HEADROOM;
	cr_assert_eq(prlimit(srv.pid, RLIMIT_NOFILE, &lim, NULL), 0, "prlimit: %s", strerror(errno));
	for (int i = 0; i < HELD; i++) {
		held[i] = raw_connect();
		cr_assert_geq(held[i], 0, "connect %d: %s", i, strerror(errno));
	}
	cr_assert(harness_wait_log(&srv, "accept: Too many open files", T), "the server never ran out");

	/* more clients keep knocking for a few seconds, on both ports */
	char *log0 = harness_read_log(&srv);
	cr_assert_not_null(log0);
	long long cpu0 = server_cpu_ms();
	int64_t t0 = now_ms();
	while (now_ms() - t0 < WINDOW_MS) {
		int fd = raw_connect();
		cr_assert_geq(fd, 0, "connect: %s", strerror(errno));
		close(fd);
		fd = raw_connect_to(http);
		cr_assert_geq(fd, 0, "HTTP connect: %s", strerror(errno));
		close(fd);
		harness_sleep_ms(50);
	}
	long long cpu = server_cpu_ms() - cpu0;
	int64_t window = now_ms() - t0;
	char *log1 = harness_read_log(&srv);
	cr_assert_not_null(log1);
	int lines = count_in(log1 + strlen(log0), "\n");
	cr_expect_lt(cpu * 10, window, "%lld ms of CPU in %lld ms out of descriptors", cpu, (long long)window);
	/* the protocol port's line every 10 s, the HTTP port's a second (10 per 10 s) */
	cr_expect_leq(lines, 8, "%d log lines in %lld ms out of descriptors", lines, (long long)window);
	free(log0);
	free(log1);

	for (int i = 0; i < HELD; i++)
		close(held[i]);
	struct client *c = harness_connect_or_fail(&srv);
	cr_assert_null(route_of(c, "NoSuchTopic"));
	client_close(c);
	cr_expect(harness_wait_log(&srv, "accept: accepting connections again", T));
}

/* ---- 10,000 idle connections ---- */

Test(faults, ten_thousand_idle_connections_while_routes_answered)
{
	enum { IDLE = 10000 };
	struct rlimit rl;
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < IDLE * 2 + 200) {
		cr_skip_test("the hard descriptor limit (%lu) is below the %d this test needs for %d idle "
			     "connections held on both ends", (unsigned long)rl.rlim_max, IDLE * 2 + 200, IDLE);
	}
	rlim_t want = IDLE * 2 + 200;
	if (rl.rlim_cur < want) {
		rl.rlim_cur = want;
		cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0, "cannot raise RLIMIT_NOFILE: %s", strerror(errno));
	}
	/* the server inherits the raised limit */
	static const char *const args[] = { "--serverChannelMaxIdleTimeSeconds=0", NULL };
	start(args);
	struct client *c = harness_connect_or_fail(&srv);
	register_simple(c);
	int fds0 = server_fds();
	static int fds[IDLE];
	for (int i = 0; i < IDLE; i++) {
		fds[i] = raw_connect();
		cr_assert_geq(fds[i], 0, "connection %d: %s", i, strerror(errno));
		if (i % 1000 == 999) {
			char *r = route_of(c, "T1");
			cr_assert(r && strstr(r, "127.0.0.1:10911"), "route while %d connections are open", i + 1);
			free(r);
		}
	}
	/* every connection accepted and held by the server */
	int n = server_fds();
	for (int64_t end = now_ms() + 20000; n < fds0 + IDLE && now_ms() < end; n = server_fds())
		harness_sleep_ms(20);
	cr_expect_geq(n, fds0 + IDLE, "the server holds %d descriptors", n);
	for (int i = 0; i < 200; i++) {
		char *r = route_of(c, i % 2 ? "T0" : "T1");
		cr_assert(r && strstr(r, "127.0.0.1:10911"), "route %d with %d idle connections", i, IDLE);
		free(r);
	}
	/* an idle connection still works */
	struct remoting_cmd req;
	struct buf b = BUF_INIT;
	harness_request_init(&req, 9999, REMOTING_JSON);
	req.opaque = 1;
	harness_encode(&req, &b);
	cr_assert_eq(send(fds[IDLE / 2], b.data, b.len, MSG_NOSIGNAL), (ssize_t)b.len);
	uint8_t hdr[4];
	cr_assert_eq(recv(fds[IDLE / 2], hdr, 4, MSG_WAITALL), 4, "no answer on an idle connection");
	buf_free(&b);
	for (int i = 0; i < IDLE; i++)
		close(fds[i]);
	expect_fds_back_to(fds0);
	expect_route_served();
	client_close(c);
}

/* ---- slowloris ---- */

Test(faults, slowloris_partial_frames)
{
	enum { SLOW = 40 };
	static const char *const args[] = { "--serverChannelMaxIdleTimeSeconds=2", NULL };
	int fds[SLOW];
	struct buf frames[SLOW];

	start(args);
	struct client *c = harness_connect_or_fail(&srv);
	register_simple(c);
	int fds0 = server_fds();
	size_t longest = 0;
	for (int i = 0; i < SLOW; i++) {
		struct remoting_ext_field ext[] = { { "topic", "T0" } };
		struct remoting_cmd req;
		harness_request_init(&req, REQ_GET_ROUTEINFO_BY_TOPIC, i % 2 ? REMOTING_ROCKETMQ : REMOTING_JSON);
		req.ext = ext;
		req.ext_count = 1;
		req.ext_present = true;
		req.opaque = 100 + i;
		frames[i] = (struct buf)BUF_INIT;
		harness_encode(&req, &frames[i]);
		longest = frames[i].len > longest ? frames[i].len : longest;
		fds[i] = raw_connect();
		cr_assert_geq(fds[i], 0);
		int one = 1;
		setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	}
	/* one byte per connection per round, a route query in between */
	for (size_t k = 0; k < longest; k++) {
		for (int i = 0; i < SLOW; i++)
			if (k < frames[i].len)
				cr_assert_eq(send(fds[i], frames[i].data + k, 1, MSG_NOSIGNAL), 1);
		if (k % 8 == 0) {
			char *r = route_of(c, "T1");
			cr_assert(r, "route while frames trickle in");
			free(r);
		}
		harness_sleep_ms(2);
	}
	/* every trickled frame is answered in full */
	for (int i = 0; i < SLOW; i++) {
		uint8_t hdr[4];
		cr_assert_eq(recv(fds[i], hdr, 4, MSG_WAITALL), 4, "no answer to trickled frame %d", i);
		uint32_t len = ntohl(*(uint32_t *)hdr);
		cr_assert(len > 4 && len < (1u << 20));
		uint8_t *rest = malloc(len);
		cr_assert_eq(recv(fds[i], rest, len, MSG_WAITALL), (ssize_t)len);
		cr_expect(memmem(rest, len, "127.0.0.1:10911", 15) != NULL, "answer %d names no broker", i);
		free(rest);
		buf_free(&frames[i]);
	}
	/* half a frame, then nothing: the idle timeout closes those */
	for (int i = 0; i < SLOW; i++)
		cr_assert_eq(send(fds[i], "\0\0\0\x40\0\0", 6, MSG_NOSIGNAL), 6);
	for (int i = 0; i < SLOW; i++) {
		struct pollfd p = { fds[i], POLLIN, 0 };
		cr_assert_eq(poll(&p, 1, 30000), 1, "a stalled connection stays open");
		uint8_t x;
		cr_expect_leq(recv(fds[i], &x, 1, 0), 0, "a stalled connection got bytes");
		close(fds[i]);
	}
	/* the broker's own connection idled out too, which unregistered it */
	client_close(c);
	expect_fds_back_to(fds0 - 1);
	c = harness_connect_or_fail(&srv);
	register_simple(c);
	expect_route_served();
	client_close(c);
}

/* ---- clients vanishing ---- */

Test(faults, clients_vanishing_mid_request_and_mid_answer)
{
	enum { CONNS = 100, PIPELINE = 20 };
	start(NULL);
	struct client *c = harness_connect_or_fail(&srv);
	register_simple(c);
	/* a second broker with 5000 topics makes the topic list ~100 KB */
	char *big = reg_body("Big", 5000);
	cr_assert_eq(register_broker(c, "c1", "b2", "127.0.0.2:10911", "0", big, strlen(big)), 0);
	free(big);
	int fds0 = server_fds();

	struct buf req_bytes = BUF_INIT, list_bytes = BUF_INIT;
	struct remoting_cmd req;
	char *body = reg_body("V", 3);
	struct remoting_ext_field ext[5];
	reg_request(&req, ext, "c1", "b3", "127.0.0.3:10911", "0", body, strlen(body));
	harness_encode(&req, &req_bytes);
	for (int i = 0; i < PIPELINE; i++) {
		harness_request_init(&req, REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, i % 2 ? REMOTING_ROCKETMQ : REMOTING_JSON);
		req.opaque = i;
		harness_encode(&req, &list_bytes);
	}
	for (int i = 0; i < CONNS; i++) {
		/* mid-request: part of a registration, then gone */
		int fd = raw_connect();
		cr_assert_geq(fd, 0);
		size_t part = 1 + next_rand() % (req_bytes.len - 1);
		cr_assert_eq(send(fd, req_bytes.data, part, MSG_NOSIGNAL), (ssize_t)part);
		if (i % 2)
			close_reset(fd);
		else
			close(fd);
		/* mid-answer: big answers asked for, none read */
		fd = raw_connect();
		cr_assert_geq(fd, 0);
		cr_assert_eq(send(fd, list_bytes.data, list_bytes.len, MSG_NOSIGNAL), (ssize_t)list_bytes.len);
		if (i % 3 == 0) {
			uint8_t some[1000];
			(void)recv(fd, some, sizeof some, 0); /* the answer began */
		}
		if (i % 2)
			close_reset(fd);
		else
			close(fd);
		if (i % 20 == 0)
			expect_route_served();
	}
	free(body);
	buf_free(&req_bytes);
	buf_free(&list_bytes);
	expect_fds_back_to(fds0);
	expect_route_served();
	/* the half-sent registration was never applied */
	char *r = route_of(c, "V0");
	cr_expect_null(r, "a partial registration was applied: %s", r);
	free(r);
	client_close(c);
}

/* ---- a flood of registrations ---- */

Test(faults, registration_flood_answered_or_busy_with_bounded_memory)
{
	enum { CONNS = 4, PER_CONN = 2500, WINDOW = 500 };
	/* small lanes, so that the flood overflows them */
	static const char *const args[] = { "--processorQueueCapacity=64", NULL };
	start(args);
	struct client *c = harness_connect_or_fail(&srv);
	register_simple(c);
	long rss0 = server_rss_kb(), peak = rss0;
	struct client *fc[CONNS];
	int ok = 0, busy = 0, other = 0, answered = 0;
	for (int k = 0; k < CONNS; k++)
		fc[k] = harness_connect_or_fail(&srv);
	char *body = reg_body("F", 20);
	for (int base = 0; base < PER_CONN; base += WINDOW) {
		/* every connection sends a window of registrations, then reads its answers */
		for (int k = 0; k < CONNS; k++) {
			for (int i = base; i < base + WINDOW; i++) {
				char addr[64], name[32];
				snprintf(addr, sizeof addr, "10.%d.%d.%d:10911", k, i / 250, i % 250);
				snprintf(name, sizeof name, "flood-%d-%d", k, i % 50);
				struct remoting_ext_field ext[5];
				struct remoting_cmd req;
				reg_request(&req, ext, "flood", name, addr, "0", body, strlen(body));
				req.opaque = i;
				cr_assert_eq(client_send(fc[k], &req, T), 0);
			}
		}
		long rss = server_rss_kb();
		peak = rss > peak ? rss : peak;
		for (int k = 0; k < CONNS; k++) {
			for (int i = base; i < base + WINDOW; i++) {
				struct client_reply *r = NULL;
				cr_assert_eq(client_recv(fc[k], &r, T * 3), 0, "registration %d on %d unanswered", i, k);
				answered++;
				if (r->cmd.code == RSP_SUCCESS)
					ok++;
				else if (r->cmd.code == RSP_SYSTEM_BUSY)
					busy++;
				else
					other++;
				client_reply_free(r);
			}
		}
		expect_route_served();
	}
	free(body);
	/* brokers of a connection leave with it: look before closing */
	json_t *ci = call_json(c, REQ_GET_BROKER_CLUSTER_INFO);
	cr_expect(json_object_get(json_object_get(ci, "brokerAddrTable"), "flood-0-0") != NULL || ok == 0,
		  "no flooded broker is registered");
	json_decref(ci);
	for (int k = 0; k < CONNS; k++)
		client_close(fc[k]);
	cr_expect_eq(answered, CONNS * PER_CONN);
	cr_expect_eq(other, 0, "%d answers neither success nor SYSTEM_BUSY", other);
	cr_expect_gt(ok, 0);
	fprintf(stderr, "registration flood: %d ok, %d busy; RSS %ld -> peak %ld kB\n", ok, busy, rss0, peak);
	cr_expect_lt(peak, rss0 + 512 * 1024 + RSS_SLACK_KB, "RSS went from %ld to %ld kB", rss0, peak);
	client_close(c);
}

/* ---- the frame size limit, streamed in full ---- */

/* A frame of `total` bytes (prefix included): code 9999 with a JSON header
 * and a body of zeros. */
static uint8_t *big_frame(size_t total)
{
	struct remoting_cmd req;
	struct buf head = BUF_INIT;
	harness_request_init(&req, 9999, REMOTING_JSON);
	req.opaque = 77;
	cr_assert_eq(remoting_encode_head(&req, 0, &head), 0);
	/* head = [len][hlen|ser][header]; grow the frame with a body */
	uint8_t *f = calloc(1, total);
	cr_assert(f);
	memcpy(f, head.data, head.len);
	uint32_t len = htonl((uint32_t)(total - 4));
	memcpy(f, &len, 4);
	buf_free(&head);
	return f;
}

static int send_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

Test(faults, frame_of_16_mib_answered_and_16_mib_plus_1_refused)
{
	const size_t max = 16u << 20;
	start(NULL);
	struct client *c = harness_connect_or_fail(&srv);
	register_simple(c);
	long rss0 = server_rss_kb();

	/* exactly the limit: read and answered (code 3, not supported) */
	uint8_t *f = big_frame(max);
	int fd = raw_connect();
	cr_assert_geq(fd, 0);
	cr_assert_eq(send_all(fd, f, max), 0, "the server refused a frame of 16 MiB");
	uint8_t hdr[8];
	cr_assert_eq(recv(fd, hdr, 8, MSG_WAITALL), 8, "no answer to a frame of 16 MiB");
	close(fd);
	free(f);

	/* one byte more: the connection is closed without reading it all */
	f = big_frame(max + 1);
	fd = raw_connect();
	cr_assert_geq(fd, 0);
	(void)send_all(fd, f, max + 1); /* fails once the server closes */
	uint8_t x;
	struct pollfd p = { fd, POLLIN, 0 };
	cr_assert_eq(poll(&p, 1, T), 1);
	cr_expect_leq(recv(fd, &x, 1, 0), 0, "a frame of 16 MiB + 1 got an answer");
	close(fd);
	free(f);
	expect_route_served();
	long rss = server_rss_kb();
	cr_expect_lt(rss, rss0 + 96 * 1024 + RSS_SLACK_KB, "RSS went from %ld to %ld kB", rss0, rss);
	client_close(c);
}

/* ---- an inflate bomb ---- */

Test(faults, inflate_bomb_refused_with_bounded_memory)
{
	/* 256 MiB of the same byte deflates to about 256 KB */
	const size_t plain = 256u << 20;
	uint8_t *zeros = calloc(1, plain);
	cr_assert(zeros);
	uLongf zlen = compressBound((uLong)plain);
	uint8_t *z = malloc(zlen);
	cr_assert(z);
	cr_assert_eq(compress2(z, &zlen, zeros, (uLong)plain, 9), Z_OK);
	free(zeros);

	start(NULL);
	struct client *c = harness_connect_or_fail(&srv);
	register_simple(c);
	long rss0 = server_rss_kb();
	for (int flagged = 0; flagged < 2; flagged++) {
		struct remoting_ext_field ext[6];
		struct remoting_cmd req;
		struct client_reply *r = NULL;
		reg_request(&req, ext, "c1", "bomb", "127.0.0.9:10911", "0", z, zlen);
		ext[5] = (struct remoting_ext_field){ "compressed", flagged ? "true" : "false" };
		req.ext_count = 6;
		cr_assert_eq(client_call(c, &req, &r, T * 3), 0, "no answer to an inflate bomb");
		cr_expect_eq(r->cmd.code, RSP_SYSTEM_ERROR, "an inflate bomb answered %d", r->cmd.code);
		client_reply_free(r);
	}
	free(z);
	long rss = server_rss_kb();
	/* the cap is 64 MiB of inflated bytes */
	cr_expect_lt(rss, rss0 + 160 * 1024 + RSS_SLACK_KB, "RSS went from %ld to %ld kB", rss0, rss);
	json_t *ci = call_json(c, REQ_GET_BROKER_CLUSTER_INFO);
	cr_expect_null(json_object_get(json_object_get(ci, "brokerAddrTable"), "bomb"),
		       "the bomb's broker was registered");
	json_decref(ci);
	expect_route_served();
	client_close(c);
}

/* ---- 100,000 topics ---- */

Test(faults, registration_with_100000_topics)
{
	enum { TOPICS = 100000 };
	start(NULL);
	struct client *c = harness_connect_or_fail(&srv);
	char *body = reg_body("Topic", TOPICS);
	cr_assert_lt(strlen(body), 16u << 20);
	cr_assert_eq(register_broker(c, "c1", "huge", "127.0.0.5:10911", "0", body, strlen(body)), 0);
	free(body);
	for (int i = 0; i < TOPICS; i += 9973) {
		char name[32];
		snprintf(name, sizeof name, "Topic%d", i);
		char *r = route_of(c, name);
		cr_assert(r && strstr(r, "127.0.0.5:10911"), "no route for %s", name);
		free(r);
	}
	char *r = route_of(c, "Topic99999");
	cr_assert(r, "no route for the last topic");
	free(r);
	json_t *tl = call_json(c, REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
	cr_expect_geq(json_array_size(json_object_get(tl, "topicList")), TOPICS);
	json_decref(tl);
	/* the same registration again (a heartbeat's re-registration) and a smaller one */
	body = reg_body("Topic", 10);
	cr_assert_eq(register_broker(c, "c1", "huge", "127.0.0.5:10911", "0", body, strlen(body)), 0);
	free(body);
	struct remoting_ext_field ext[HARNESS_CALL_MAX_EXT];
	struct remoting_cmd req;
	struct client_reply *rep = NULL;
	cr_assert_eq(harness_request(&req, ext, REQ_UNREGISTER_BROKER, REMOTING_JSON, NULL, "clusterName", "c1",
				     "brokerName", "huge", "brokerAddr", "127.0.0.5:10911", "brokerId", "0", NULL), 0);
	cr_assert_eq(client_call(c, &req, &rep, T * 3), 0);
	cr_expect_eq(rep->cmd.code, 0);
	client_reply_free(rep);
	r = route_of(c, "Topic5");
	cr_expect_null(r, "a route is left after the broker unregistered: %s", r);
	free(r);
	client_close(c);
}

/* ---- broker identities at extreme lengths, odd characters ---- */

static char *repeat(char ch, size_t n)
{
	char *s = malloc(n + 1);
	cr_assert(s);
	memset(s, ch, n);
	s[n] = 0;
	return s;
}

Test(faults, broker_identities_at_extreme_lengths_and_odd_characters)
{
	char *long_name = repeat('n', 60000), *long_addr = repeat('9', 4000), *long_cluster = repeat('c', 30000);
	const char *names[] = { "b", long_name, "\xe3\x83\x96\xe3\x83\xad\xe3\x83\xbc\xe3\x82\xab\xe3\x83\xbc",
				"q\"uote\\back/slash", "tab\tnl\ncr\r", "ctl\x01\x1f\x7f", "<&>'%s%n",
				"\xf0\x9f\x90\x87rabbit", " ", "bad\xff\xfeutf8" };
	const char *addrs[] = { "1:1", long_addr, "[::1]:10911", "host:port:extra", "\"q\":1", ":", "x y",
				"\xe2\x80\xa8:1", "127.0.0.1:65536", "127.0.0.1:-1" };
	const char *ids[] = { "0", "1", "-1", "9223372036854775807", "-9223372036854775808", "2", "3", "4",
			      "99999999999999999999", "0x10" };
	const char *clusters[] = { "c1", long_cluster, "\xe2\x98\x83", "c1", "c\"2", "c1", "c1", "c1", "c1",
				   "c\\3" };
	start(NULL);
	struct client *c = harness_connect_or_fail(&srv);
	register_simple(c);
	int registered = 0;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char topic_prefix[32];
		snprintf(topic_prefix, sizeof topic_prefix, "X%zu_", i);
		char *body = reg_body(topic_prefix, 2);
		int32_t code = register_broker(c, clusters[i], names[i], addrs[i], ids[i], body, strlen(body));
		free(body);
		cr_expect(code == RSP_SUCCESS || code == RSP_SYSTEM_ERROR, "broker %zu answered %d", i, code);
		registered += code == RSP_SUCCESS;
		/* whatever was stored must come back as valid JSON */
		json_t *ci = call_json(c, REQ_GET_BROKER_CLUSTER_INFO);
		json_decref(ci);
		char t[40];
		snprintf(t, sizeof t, "X%zu_0", i);
		char *r = route_of(c, t);
		if (r) {
			int err = 0;
			json_t *j = json_body_parse((const uint8_t *)r, strlen(r), &err);
			cr_expect(j, "route of %s is not JSON (%d): %.200s", t, err, r);
			json_decref(j);
		}
		free(r);
		for (int form = 0; form < 2; form++) {
			struct remoting_ext_field ext[] = { { "clusterName", clusters[i] }, { "brokerName", names[i] },
							    { "brokerAddr", addrs[i] }, { "brokerId", ids[i] } };
			struct remoting_cmd req;
			struct client_reply *rep = NULL;
			harness_request_init(&req, REQ_BROKER_HEARTBEAT, form ? REMOTING_ROCKETMQ : REMOTING_JSON);
			req.ext = ext;
			req.ext_count = 4;
			req.ext_present = true;
			cr_assert_eq(client_call(c, &req, &rep, T), 0, "no answer to a heartbeat of broker %zu", i);
			client_reply_free(rep);
		}
	}
	cr_expect_gt(registered, 3);
	json_t *ci = call_json(c, REQ_GET_BROKER_CLUSTER_INFO);
	cr_expect(json_object_get(json_object_get(ci, "brokerAddrTable"), long_name) != NULL,
		  "the 60000-byte broker name is not in the cluster info");
	json_decref(ci);
	/* and they all leave again */
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		struct remoting_ext_field ext[HARNESS_CALL_MAX_EXT];
		struct remoting_cmd req;
		struct client_reply *rep = NULL;
		cr_assert_eq(harness_request(&req, ext, REQ_UNREGISTER_BROKER, REMOTING_JSON, NULL, "clusterName",
					     clusters[i], "brokerName", names[i], "brokerAddr", addrs[i], "brokerId",
					     ids[i], NULL), 0);
		cr_assert_eq(client_call(c, &req, &rep, T), 0);
		client_reply_free(rep);
	}
	expect_route_served();
	free(long_name);
	free(long_addr);
	free(long_cluster);
	client_close(c);
}
