/* Fair admission against the real binary, each case as a hostile client
 * plays it: pipelined reads never read back, the same closing at once, a
 * flood of inflate-heavy registrations, frames stalled one byte short, and
 * SIGTERM with work queued. Each asserts what a broker, a client or an
 * operator sees: registrations answered while the flood is still queued
 * and routes that never disappear, bounded RSS, an exit long before the
 * queued work could have run, with every acknowledged KV write on disk.
 * The assertions are orders, not durations: the suite must hold on a
 * loaded 2-core host, where every thread waits its turn for a CPU; the
 * waits have bounds such a host meets (tens of seconds). */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "harness_criterion.h"
#include "rmqns/buf.h"
#include "rmqns/client.h"
#include "rmqns/remoting.h"
#include "reqs.h"

static struct harness_server srv;

static void fini(void)
{
	cr_expect_eq(harness_cleanup(&srv), 0, "the server did not stop cleanly");
}

TestSuite(admission, .fini = fini, .timeout = 300);

/* How long a call may wait for its answer: what a loaded 2-core host
 * meets. Whether the answer beat the flood is asserted by order. */
#define ANSWER_BOUND_MS 30000
/* The well-behaved broker's heartbeat timeout: longer than the answer
 * bound plus its 2 s between registrations, so that only a registration
 * left behind the flood can expire it. */
#define BROKER_HEARTBEAT_TIMEOUT "60000"
/* How long a broker keeps registering through a registration flood, at
 * most: the flood's last request is usually applied well before. */
#define FLOOD_WATCH_MS 150000
/* Topics in each registration of a flood: seconds of work queued. An
 * AddressSanitizer build does the same work several times slower. */
#define FLOOD_TOPICS (HARNESS_ASAN ? 25000 : 100000)
#define FLOOD_DEPTH 40 /* registrations pipelined on each flooding connection */
#define FLOODERS 3     /* connections flooding registrations */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* n copies of a frame of `code` with ext fields key, value, ..., NULL. */
static void pipeline(struct buf *out, int n, int32_t code, ...)
{
	struct remoting_ext_field ext[4];
	struct remoting_cmd req;
	uint32_t k = 0;
	va_list ap;

	harness_request_init(&req, code, REMOTING_JSON);
	va_start(ap, code);
	for (const char *key; k < 4 && (key = va_arg(ap, const char *)) != NULL; k++)
		ext[k] = (struct remoting_ext_field){ key, va_arg(ap, const char *) };
	va_end(ap);
	req.ext = ext;
	req.ext_count = k;
	req.ext_present = k > 0;
	for (int i = 0; i < n; i++) {
		req.opaque = i + 1;
		harness_encode(&req, out);
	}
}

/* A client that sends and never reads: its receive buffer stays small, so
 * the server's answers pile up on the server's side. What the server no
 * longer reads stays unsent after a second. */
static struct client *flood(const struct buf *frames)
{
	struct client *c = harness_connect_rcvbuf(&srv, 4096);
	cr_assert(c, "cannot connect the flooding client");
	(void)client_send_raw(c, frames->data, frames->len, 1000);
	return c;
}

/* Starts the server with the HTTP endpoint on a free port and more args. */
static int start_with_http(const char *more)
{
	static char http_arg[32];
	int port = harness_free_port();
	cr_assert_gt(port, 0);
	snprintf(http_arg, sizeof http_arg, "--httpPort=%d", port);
	const char *args[] = { http_arg, more, NULL };
	cr_assert_eq(harness_start(&srv, args), 0);
	return port;
}

/* The sum of every /metrics sample whose line starts with `prefix`
 * (a family, or a family and its first labels); -1 without an answer. */
static double metric_sum(int http, const char *prefix)
{
	char *text = NULL;
	double sum = -1;
	if (harness_http_get(http, "/metrics", &text) == 200 && text) {
		sum = 0;
		size_t n = strlen(prefix);
		for (const char *line = text; line && *line; line = strchr(line, '\n'), line += !!line)
			if (strncmp(line, prefix, n) == 0) {
				const char *value = strchr(line, ' ');
				sum += value ? strtod(value + 1, NULL) : 0;
			}
	}
	free(text);
	return sum;
}

/* The counter went up at least once, now or within the harness's wait:
 * what is counted when a worker reaches it (a dropped request) may come
 * after the answer the test waited for (its value printed for the log). */
static void expect_counted(int http, const char *series, const char *never)
{
	double v = harness_metric(http, series);
	for (int64_t end = now_ms() + HARNESS_WAIT_MS; v <= 0 && now_ms() < end;
	     v = harness_metric(http, series))
		harness_sleep_ms(100);
	fprintf(stderr, "%s: %.0f\n", series, v);
	cr_expect_gt(v, 0, "%s", never);
}

/* Stores a value of `size` bytes under NS/big. */
static void put_big_value(size_t size)
{
	char *value = malloc(size + 1);
	cr_assert(value);
	memset(value, 'v', size);
	value[size] = 0;
	struct client *c = harness_connect_or_fail(&srv);
	struct client_reply *r = NULL;
	cr_assert_eq(harness_call(c, REQ_PUT_KV_CONFIG, NULL, &r, "namespace", "NS", "key", "big",
				  "value", value, NULL),
		     0, "no answer to the PUT");
	cr_assert_eq(r->cmd.code, 0, "PUT refused: %d", r->cmd.code);
	client_reply_free(r);
	client_close(c);
	free(value);
}

/* ---- a broker and the clients of its topic ---- */

#define BROKER_TOPIC "AdmTopic0"

/* One registration of the well-behaved broker, answered; returns how
 * long it took. */
static int64_t broker_register(struct client *broker)
{
	struct buf body = BUF_INIT;
	harness_topics_body(&body, "AdmTopic", 4, 4);
	struct remoting_ext_field ext[] = {
		{ "clusterName", "AdmCluster" },  { "brokerName", "adm-broker" },
		{ "brokerAddr", "127.0.0.1:30911" }, { "brokerId", "0" },
		{ "haServerAddr", "127.0.0.1:30912" }, { "heartbeatTimeoutMillis", BROKER_HEARTBEAT_TIMEOUT },
	};
	struct remoting_cmd req;
	struct client_reply *r = NULL;
	harness_request_init(&req, REQ_REGISTER_BROKER, REMOTING_JSON);
	req.ext = ext;
	req.ext_count = sizeof ext / sizeof ext[0];
	req.ext_present = true;
	req.body = body.data;
	req.body_len = (uint32_t)body.len;
	int64_t t0 = now_ms();
	int rc = client_call(broker, &req, &r, ANSWER_BOUND_MS);
	int64_t took = now_ms() - t0;
	buf_free(&body);
	cr_assert_eq(rc, 0, "REGISTER_BROKER not answered within %d ms", ANSWER_BOUND_MS);
	cr_assert_eq(r->cmd.code, 0, "REGISTER_BROKER answered %d", r->cmd.code);
	client_reply_free(r);
	return took;
}

/* The route a client gets for the broker's topic: present. */
static void expect_route(struct client *c)
{
	struct client_reply *r = NULL;
	cr_assert_eq(harness_call(c, REQ_GET_ROUTEINFO_BY_TOPIC, NULL, &r, "topic", BROKER_TOPIC, NULL),
		     0, "no route answer");
	cr_assert_eq(r->cmd.code, 0, "the broker's topic has no route (code %d): the broker expired",
		     r->cmd.code);
	client_reply_free(r);
}

/* What a flood has made the server do, read from /metrics: `series`
 * summed (less the broker's own registrations when it counts them too),
 * the flood done once that reaches `total`. */
struct flood_progress {
	int http;
	const char *series;
	double total;
	bool counts_broker;
	int max_ms; /* the broker stops there, flood done or not */
};

/* The broker registers every 2 s and its route is served throughout, for
 * at least `min_ms` and until the flood is done (p->max_ms at most).
 * The broker is answered before the flood's last request: its first
 * registration during the flood, and every one while the flood has work
 * left, come back while the flood's count is short of its total. */
static void broker_lives_through(struct client *broker, const struct flood_progress *p, int min_ms)
{
	struct client *reader = harness_connect_or_fail(&srv);
	int64_t t0 = now_ms(), worst = 0, next_reg = 0, flood_done_ms = -1;
	int during = 0, regs = 0;
	double done = 0;
	while (now_ms() - t0 < p->max_ms && (flood_done_ms < 0 || now_ms() - t0 < min_ms)) {
		if (now_ms() >= next_reg) {
			int64_t took = broker_register(broker);
			regs++;
			worst = took > worst ? took : worst;
			next_reg = now_ms() + 2000;
			done = metric_sum(p->http, p->series);
			cr_assert_geq(done, 0, "no /metrics answer");
			if (flood_done_ms < 0 && done - (p->counts_broker ? regs : 0) < p->total)
				during++;
			else if (flood_done_ms < 0)
				flood_done_ms = now_ms() - t0;
			cr_assert_gt(during, 0, "the broker's first registration was answered only after the "
				     "flood's last request (%s at %.0f)", p->series, done);
		}
		expect_route(reader);
		harness_sleep_ms(250);
	}
	fprintf(stderr, "%d registrations, %d of them answered while the flood had work left "
		"(%s at %.0f, flood done after %lld ms); slowest answer %lld ms\n",
		regs, during, p->series, done, (long long)flood_done_ms, (long long)worst);
	client_close(reader);
}

/* n clients each send `frames` (freed here) and never read; the broker
 * lives through them (above), then everyone leaves. */
static void broker_lives_through_floods(struct client *broker, struct buf *frames, int n,
					const struct flood_progress *p)
{
	struct client *floods[8];
	cr_assert_leq(n, 8);
	for (int i = 0; i < n; i++)
		floods[i] = flood(frames);
	buf_free(frames);
	broker_lives_through(broker, p, 12000);
	for (int i = 0; i < n; i++)
		client_close(floods[i]);
	client_close(broker);
}

/* ---- the cases ---- */

Test(admission, a_reader_pipelining_without_reading_never_starves_a_broker)
{
	int http = start_with_http("--scanNotActiveBrokerInterval=1000");
	struct client *broker = harness_connect_or_fail(&srv);
	broker_register(broker);
	put_big_value(8u << 20);

	/* 5 x 600 reads of 8 MiB nobody reads back: the flood never ends */
	enum { READERS = 5, READS = 600 };
	struct buf frames = BUF_INIT;
	pipeline(&frames, READS, REQ_GET_KVLIST_BY_NAMESPACE, "namespace", "NS", NULL);
	const struct flood_progress p = { http, "rmqns_requests_total{code=\"219\",",
					  READERS * READS, false, 12000 };
	broker_lives_through_floods(broker, &frames, READERS, &p);
}

Test(admission, a_connection_at_its_in_flight_cap_is_paused_not_closed)
{
	int http = start_with_http("--serverMaxInflight=16");
	put_big_value(1u << 20);
	struct buf frames = BUF_INIT;
	enum { N = 200 };
	pipeline(&frames, N, REQ_GET_KVLIST_BY_NAMESPACE, "namespace", "NS", NULL);
	struct client *c = harness_connect_or_fail(&srv);
	cr_assert_eq(client_send_raw(c, frames.data, frames.len, HARNESS_IO_TIMEOUT_MS), 0);
	buf_free(&frames);
	/* every answer comes, in order of the requests (one connection: one flow) */
	for (int i = 0; i < N; i++) {
		struct client_reply *r = NULL;
		cr_assert_eq(client_recv(c, &r, HARNESS_IO_TIMEOUT_MS), 0, "answer %d of %d missing", i, N);
		cr_assert_eq(r->cmd.opaque, i + 1);
		cr_assert_eq(r->cmd.code, 0);
		client_reply_free(r);
	}
	client_close(c);
	expect_counted(http, "rmqns_connection_read_pauses_total{reason=\"inflight\"}",
		       "the connection was never paused at 16 requests in flight");
}

/* A broker's one-way registration, then at once a route query for one of
 * its topics on the same connection: the answer always sees it applied. */
Test(admission, a_one_way_registration_is_applied_before_its_connection_reads_on)
{
	cr_assert_eq(harness_start(&srv, NULL), 0);
	struct client *broker = harness_connect_or_fail(&srv);
	struct remoting_ext_field ext[] = {
		{ "clusterName", "OwCluster" }, { "brokerName", "ow-broker" },
		{ "brokerAddr", "127.0.0.1:50911" }, { "brokerId", "0" },
		{ "haServerAddr", "127.0.0.1:50912" },
	};
	char prefix[32], topic[40];
	for (int round = 0; round < 50; round++) {
		struct buf body = BUF_INIT, frames = BUF_INIT;
		snprintf(prefix, sizeof prefix, "Ow%d-", round);
		harness_topics_body(&body, prefix, 2000, 4);
		struct remoting_cmd reg;
		harness_request_init(&reg, REQ_REGISTER_BROKER, REMOTING_JSON);
		reg.flag |= REMOTING_FLAG_ONEWAY;
		reg.ext = ext;
		reg.ext_count = sizeof ext / sizeof ext[0];
		reg.ext_present = true;
		reg.body = body.data;
		reg.body_len = (uint32_t)body.len;
		harness_encode(&reg, &frames);
		snprintf(topic, sizeof topic, "%s1999", prefix);
		struct remoting_ext_field qext[] = { { "topic", topic } };
		struct remoting_cmd q;
		harness_request_init(&q, REQ_GET_ROUTEINFO_BY_TOPIC, REMOTING_JSON);
		q.opaque = 1000 + round;
		q.ext = qext;
		q.ext_count = 1;
		q.ext_present = true;
		harness_encode(&q, &frames);
		/* one write: both arrive together */
		cr_assert_eq(client_send_raw(broker, frames.data, frames.len, HARNESS_IO_TIMEOUT_MS), 0);
		struct client_reply *r = NULL;
		cr_assert_eq(client_recv(broker, &r, HARNESS_IO_TIMEOUT_MS), 0);
		cr_assert_eq(r->cmd.opaque, 1000 + round);
		cr_assert_eq(r->cmd.code, 0, "round %d: the route of %s after its one-way registration: "
			     "code %d", round, topic, r->cmd.code);
		client_reply_free(r);
		buf_free(&body);
		buf_free(&frames);
	}
	client_close(broker);
}

Test(admission, work_queued_for_a_closed_connection_is_dropped)
{
	int http = start_with_http(NULL);
	put_big_value(8u << 20);
	struct buf frames = BUF_INIT;
	pipeline(&frames, 500, REQ_GET_KVLIST_BY_NAMESPACE, "namespace", "NS", NULL);
	for (int i = 0; i < 3; i++)
		client_close(flood(&frames)); /* sent, then gone */
	buf_free(&frames);

	/* An admin read right after is answered without the dead
	 * connections' 1,500 reads running first: when its answer comes,
	 * fewer than that have been answered. */
	struct client *admin = harness_connect_or_fail(&srv);
	struct remoting_cmd req;
	struct client_reply *r = NULL;
	harness_request_init(&req, REQ_GET_BROKER_CLUSTER_INFO, REMOTING_JSON);
	int64_t t0 = now_ms();
	cr_assert_eq(client_call(admin, &req, &r, ANSWER_BOUND_MS), 0,
		     "GET_BROKER_CLUSTER_INFO not answered within %d ms", ANSWER_BOUND_MS);
	double reads_run = metric_sum(http, "rmqns_requests_total{code=\"219\",");
	fprintf(stderr, "cluster info answered in %lld ms, after %.0f of the 1500 dead reads\n",
		(long long)(now_ms() - t0), reads_run);
	cr_expect_lt(reads_run, 1500, "the admin read waited for the closed connections' reads");
	cr_expect_eq(r->cmd.code, 0);
	client_reply_free(r);
	client_close(admin);
	expect_counted(http, "rmqns_requests_dropped_total{reason=\"connection_closed\"}",
		       "no queued request was dropped");
}

/* n pipelined registrations of one broker identity, each of `topics`
 * topics in the compressed layout a broker with compressedRegister=true
 * sends (the load tool's builder), each with another data version than
 * the one before: every one is inflated, parsed and applied in full. */
static void registration_flood(struct buf *out, int n, int topics)
{
	const struct reqs_body_spec spec = { .topic_prefix = "FloodTopic", .layout = LAYOUT_SHARED,
					     .topics = (uint32_t)topics, .queues = 8,
					     .compressed = true, .version = 479 };
	struct remoting_ext_field ext[] = {
		{ "clusterName", "FloodCluster" }, { "brokerName", "flood-broker" },
		{ "brokerAddr", "127.0.0.1:40911" }, { "brokerId", "0" },
		{ "haServerAddr", "127.0.0.1:40912" }, { "compressed", "true" },
	};
	struct remoting_cmd req;
	harness_request_init(&req, REQ_REGISTER_BROKER, REMOTING_JSON);
	req.ext = ext;
	req.ext_count = sizeof ext / sizeof ext[0];
	req.ext_present = true;
	struct buf body[2] = { BUF_INIT, BUF_INIT };
	for (int v = 0; v < 2; v++)
		cr_assert_eq(reqs_register_body(&body[v], &spec, 0, v + 1, 1700000000000), 0);
	for (int i = 0; i < n; i++) {
		req.opaque = i + 1;
		req.body = body[i % 2].data; /* data versions 1, 2, 1, 2: each a change */
		req.body_len = (uint32_t)body[i % 2].len;
		harness_encode(&req, out);
	}
	buf_free(&body[0]);
	buf_free(&body[1]);
}

Test(admission, an_inflate_heavy_registration_flood_never_starves_a_broker)
{
	int http = start_with_http("--scanNotActiveBrokerInterval=1000");
	struct client *broker = harness_connect_or_fail(&srv);
	broker_register(broker);

	struct buf frames = BUF_INIT;
	registration_flood(&frames, FLOOD_DEPTH, FLOOD_TOPICS);
	/* the series counts the broker's registrations too, the first included */
	const struct flood_progress p = { http, "rmqns_registrations_total{",
					  FLOODERS * FLOOD_DEPTH + 1, true, FLOOD_WATCH_MS };
	broker_lives_through_floods(broker, &frames, FLOODERS, &p);
}

Test(admission, stalled_frames_stay_within_the_memory_budget)
{
	cr_assert_eq(harness_start(&srv, NULL), 0);
	struct client *broker = harness_connect_or_fail(&srv);
	broker_register(broker);

	/* 40 connections, each one byte short of a 16 MiB frame */
	enum { STALLERS = 40 };
	const size_t frame = 16u << 20, sent = frame - 1;
	uint8_t *bytes = calloc(1, sent);
	cr_assert(bytes);
	uint32_t be = htonl((uint32_t)(frame - 4));
	memcpy(bytes, &be, 4);
	struct client *stallers[STALLERS];
	long peak_kb = 0;
	for (int i = 0; i < STALLERS; i++) {
		stallers[i] = harness_connect_or_fail(&srv);
		/* a connection the budget closes fails its send: that is the point */
		(void)client_send_raw(stallers[i], bytes, sent, 3000);
		long kb = harness_status_kb(&srv, "VmRSS");
		peak_kb = kb > peak_kb ? kb : peak_kb;
	}
	free(bytes);
	for (int i = 0; i < 20; i++) {
		long kb = harness_status_kb(&srv, "VmRSS");
		peak_kb = kb > peak_kb ? kb : peak_kb;
		harness_sleep_ms(50);
	}
	fprintf(stderr, "peak RSS with %d stalled frames: %ld kB\n", STALLERS, peak_kb);
	cr_expect_lt(peak_kb, 300 * 1024 + (HARNESS_ASAN ? 320 * 1024 : 0),
		     "RSS reached %ld kB (budget 192 MiB)", peak_kb);
	cr_expect(harness_wait_log(&srv, "connectionMemoryBudget", ANSWER_BOUND_MS),
		  "no log line about the connections closed for the budget");
	/* and it keeps answering */
	struct client *reader = harness_connect_or_fail(&srv);
	expect_route(reader);
	broker_register(broker);
	client_close(reader);
	for (int i = 0; i < STALLERS; i++)
		client_close(stallers[i]);
	client_close(broker);
}

/* How many lines of the server's log contain `needle`. */
static int log_lines_with(const char *needle)
{
	char *log = harness_slurp(srv.log_path);
	int n = 0;
	for (const char *at = log; at && (at = strstr(at, needle)) != NULL; at += strlen(needle))
		n++;
	free(log);
	return n;
}

/* Whether the KV file holds "key":"value". */
static bool kv_file_has(const char *key, const char *value)
{
	char *path = harness_path_in(srv.dir, "namesrv/kvConfig.json");
	char *file = path ? harness_slurp(path) : NULL;
	char needle[128];
	snprintf(needle, sizeof needle, "\"%s\":\"%s\"", key, value);
	bool has = file && strstr(file, needle);
	free(file);
	free(path);
	return has;
}

Test(admission, sigterm_with_queued_work_exits_by_the_deadline_with_every_acknowledged_write)
{
	int http = start_with_http("--shutdownTimeoutMillis=1000");

	/* KV writes acknowledged before the flood */
	struct client *kv = harness_connect_or_fail(&srv);
	int acked = 0;
	char key[32], value[32];
	for (int i = 0; i < 20; i++) {
		struct client_reply *r = NULL;
		snprintf(key, sizeof key, "key%d", i);
		snprintf(value, sizeof value, "value%d", i);
		if (harness_call(kv, REQ_PUT_KV_CONFIG, NULL, &r, "namespace", "ACK", "key", key,
				 "value", value, NULL) == 0 &&
		    r->cmd.code == 0)
			acked++;
		client_reply_free(r);
	}
	cr_assert_eq(acked, 20, "only %d of 20 PUTs acknowledged", acked);

	/* seconds of registrations queued when the signal comes */
	struct buf frames = BUF_INIT;
	registration_flood(&frames, FLOOD_DEPTH, FLOOD_TOPICS);
	struct client *floods[FLOODERS];
	for (int i = 0; i < FLOODERS; i++)
		floods[i] = flood(&frames);
	buf_free(&frames);

	/* while it drains, it says it is not ready, and stays alive */
	int64_t t0 = now_ms();
	cr_assert_eq(kill(srv.pid, SIGTERM), 0);
	char *ready = NULL, *health = NULL;
	int ready_status = -1;
	for (int i = 0; i < 50 && ready_status != 503; i++, harness_sleep_ms(10)) {
		free(ready);
		ready_status = harness_http_get(http, "/readyz", &ready);
	}
	cr_expect_eq(ready_status, 503, "/readyz during the drain: %d", ready_status);
	cr_expect(ready && strstr(ready, "stopping"), "/readyz: %s", ready ? ready : "");
	int health_status = harness_http_get(http, "/healthz", &health);
	free(ready);
	free(health);
	int st = harness_stop(&srv, SIGTERM, ANSWER_BOUND_MS, NULL);
	int elapsed = (int)(now_ms() - t0);
	/* each flood registration the registrar applied logged its data
	 * version change (the first one its arrival) */
	int applied = log_lines_with("route: broker registered: cluster FloodCluster") +
		      log_lines_with("(flood-broker, id 0) data version");
	fprintf(stderr, "exit %d ms after SIGTERM, %d of the %d queued registrations applied\n", elapsed,
		applied, FLOODERS * FLOOD_DEPTH);
	cr_expect(health_status == 200 || health_status == -1,
		  "/healthz during the drain: %d", health_status);
	cr_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "unclean exit: %d", st);
	/* by the deadline: before the queued work was through, however slow the host */
	cr_expect_lt(applied, FLOODERS * FLOOD_DEPTH, "the exit waited for all %d queued registrations (%d ms)",
		     FLOODERS * FLOOD_DEPTH, elapsed);
	for (int i = 0; i < 20; i++) {
		snprintf(key, sizeof key, "key%d", i);
		snprintf(value, sizeof value, "value%d", i);
		cr_expect(kv_file_has(key, value), "acknowledged %s=%s is not in the KV file", key,
			  value);
	}
	client_close(kv);
	for (int i = 0; i < FLOODERS; i++)
		client_close(floods[i]);
}
