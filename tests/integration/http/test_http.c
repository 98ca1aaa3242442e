/* The HTTP endpoint against the real binary: /metrics values moving with
 * the requests, registrations, expiries, closes, KV writes and busy answers
 * the test causes; /healthz failing while the registrar is really stalled
 * (a SIGHUP re-read blocked on a FIFO) and passing again after; /readyz
 * through needWaitForService and once shutdown has begun; /brokers; bad
 * requests; a huge request and a slowloris crowd on the HTTP port while
 * route queries are answered on the protocol port; and probes answered
 * while a thousand idle connections crowd the HTTP port. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "broker_json.h"
#include "harness.h"
#include "harness_criterion.h"
#include "rmqns/app.h"
#include "rmqns/buf.h"
#include "rmqns/config.h"
#include "rmqns/err.h"
#include "rmqns/http.h"
#include "rmqns/registrar.h"
#include "rmqns/route.h"

#define T HARNESS_IO_TIMEOUT_MS

/* the labels of a request code: its number and its name */
#define ROUTE_LABELS "code=\"105\",request=\"GET_ROUTEINFO_BY_TOPIC\""
#define REGISTER_LABELS "code=\"103\",request=\"REGISTER_BROKER\""

static struct harness_server srv;
static int http_port_no;

static void http_fini(void)
{
	cr_expect_eq(harness_cleanup(&srv), 0, "the server did not stop cleanly");
}

TestSuite(http, .fini = http_fini, .timeout = 180);

static int free_port(void)
{
	int port = harness_free_port();
	cr_assert_gt(port, 0, "no free loopback port");
	return port;
}

/* Starts the server with the HTTP port on and extra arguments. */
static void start(const char *const *extra)
{
	static char port_arg[32];
	const char *args[32];
	size_t n = 0;

	http_port_no = free_port();
	snprintf(port_arg, sizeof port_arg, "--httpPort=%d", http_port_no);
	args[n++] = port_arg;
	for (; extra && *extra && n < 31; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	cr_assert_eq(harness_start(&srv, args), 0, "the server did not start");
}

static struct sockaddr_in http_addr(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)http_port_no),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	return a;
}

/* A connection to the HTTP port whose connect, sends and receives each
 * give up after timeout_ms; -1 when the connect did. */
static int http_connect_within(int timeout_ms)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = http_addr();
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	cr_assert(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv); /* connect too */
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int http_connect(void)
{
	int fd = http_connect_within(T);
	cr_assert(fd >= 0, "HTTP connect: %s", strerror(errno));
	return fd;
}

static void send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		cr_assert(w > 0, "send: %s", strerror(errno));
		p += w;
		n -= (size_t)w;
	}
}

/* Everything the server sends until it closes. */
static char *recv_all(int fd)
{
	struct buf b = BUF_INIT;
	char chunk[8192];
	for (;;) {
		ssize_t n = recv(fd, chunk, sizeof chunk, 0);
		cr_assert(n >= 0, "recv: %s", strerror(errno));
		if (n == 0)
			break;
		cr_assert_eq(buf_append(&b, chunk, (size_t)n), 0);
	}
	cr_assert_eq(buf_terminate(&b), 0);
	return (char *)b.data;
}

struct http_answer {
	int status;
	char *raw;
	const char *body;
};

static void answer_parse(struct http_answer *a, char *raw)
{
	a->raw = raw;
	cr_assert_eq(strncmp(raw, "HTTP/1.1 ", 9), 0, "not an HTTP answer: %.80s", raw);
	a->status = atoi(raw + 9);
	char *end = strstr(raw, "\r\n\r\n");
	cr_assert_not_null(end, "no end of head");
	a->body = end + 4;
	const char *cl = strstr(raw, "Content-Length: ");
	cr_assert(cl && cl < end, "no Content-Length");
	cr_assert_eq((size_t)atol(cl + 16), strlen(a->body), "Content-Length disagrees");
}

static struct http_answer http_raw(const char *request)
{
	struct http_answer a;
	int fd = http_connect();
	send_all(fd, request, strlen(request));
	answer_parse(&a, recv_all(fd));
	close(fd);
	return a;
}

static struct http_answer http_get(const char *path)
{
	char req[256];
	snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: localhost\r\nUser-Agent: test\r\n\r\n",
		 path);
	return http_raw(req);
}

/* The value of one sample ("name{labels}" exactly as written), or -1. */
static double metric(const char *text, const char *sample)
{
	size_t n = strlen(sample);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, sample, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	}
	return -1;
}

/* A sample of a fresh scrape; a missing one counts as 0 (not counted yet). */
static double scrape(const char *sample)
{
	struct http_answer a = http_get("/metrics");
	cr_assert_eq(a.status, 200);
	double v = metric(a.body, sample);
	free(a.raw);
	return v < 0 ? 0 : v;
}

/* Polls a sample until it reaches want (bounded); returns the last value. */
static double wait_metric(const char *sample, double want)
{
	double v = -1;
	for (int i = 0; i < 200 && (v = scrape(sample)) != want; i++)
		harness_sleep_ms(100);
	return v;
}

/* The same for a sample that may also move for other reasons. */
static double wait_metric_at_least(const char *sample, double want)
{
	double v = -1;
	for (int i = 0; i < 200 && (v = scrape(sample)) < want; i++)
		harness_sleep_ms(100);
	return v;
}

/* ---- protocol requests ---- */

static void register_broker(struct client *c, const char *name, const char *addr,
			    const char *timeout_ms)
{
	char body[1024];
	snprintf(body, sizeof body,
		 "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":"
		 "{\"counter\":1,\"stateVersion\":0,\"timestamp\":1},\"topicConfigTable\":{"
		 "\"%s-a\":{\"perm\":6,\"readQueueNums\":4,\"topicName\":\"%s-a\",\"writeQueueNums\":4},"
		 "\"%s-b\":{\"perm\":6,\"readQueueNums\":4,\"topicName\":\"%s-b\",\"writeQueueNums\":4}}}}",
		 name, name, name, name);
	struct remoting_ext_field ext[] = {
		{ "brokerName", name }, { "brokerAddr", addr }, { "clusterName", "HttpCluster" },
		{ "haServerAddr", "h:1" }, { "brokerId", "0" }, { "heartbeatTimeoutMillis", timeout_ms },
	};
	struct remoting_cmd req;
	struct client_reply *r = NULL;

	harness_request_init(&req, 103, REMOTING_JSON);
	req.ext = ext;
	req.ext_count = sizeof ext / sizeof ext[0];
	req.body = (const uint8_t *)body;
	req.body_len = (uint32_t)strlen(body);
	cr_assert_eq(client_call(c, &req, &r, T), 0);
	cr_assert_eq(r->cmd.code, 0, "registration refused: %s", r->cmd.remark ? r->cmd.remark : "");
	client_reply_free(r);
}

static int simple_call(struct client *c, int32_t code, struct remoting_ext_field *ext,
		       uint32_t n)
{
	struct remoting_cmd req;
	struct client_reply *r = NULL;
	harness_request_init(&req, code, REMOTING_JSON);
	req.ext = ext;
	req.ext_count = n;
	cr_assert_eq(client_call(c, &req, &r, T), 0);
	int rc = r->cmd.code;
	client_reply_free(r);
	return rc;
}

/* ---- /metrics ---- */

Test(http, metrics_move_with_requests)
{
	start(NULL);
	struct http_answer a = http_get("/metrics");
	cr_assert_eq(a.status, 200);
	cr_assert_not_null(strstr(a.raw, "Content-Type: text/plain; version=0.0.4"));
	cr_assert_eq(metric(a.body, "rmqns_build_info{version=\"0.1.0\",build=\"" RMQNS_BUILD "\"}"),
		     1);
	cr_assert_not_null(strstr(a.body, "# TYPE rmqns_requests_total counter\n"));
	cr_assert_not_null(strstr(a.body, "# TYPE rmqns_request_duration_seconds histogram\n"));
	free(a.raw);

	const char *miss = "rmqns_requests_total{" ROUTE_LABELS ",response=\"17\"}";
	const char *hist = "rmqns_request_duration_seconds_count{" ROUTE_LABELS "}";
	const char *inf = "rmqns_request_duration_seconds_bucket{" ROUTE_LABELS ",le=\"+Inf\"}";
	double miss0 = scrape(miss), hist0 = scrape(hist);
	double acc0 = scrape("rmqns_connections_accepted_total");
	struct client *c = harness_connect_or_fail(&srv);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(harness_route_code(c, "no-such-topic"), 17);
	cr_assert_eq(scrape(miss), miss0 + 5, "five misses counted");
	/* a reactor observes its answers' latency at the end of its turn,
	 * just after the answers left: it may trail them by a moment */
	cr_assert_eq(wait_metric(hist, hist0 + 5), hist0 + 5, "five latencies observed");
	cr_assert_eq(scrape(inf), hist0 + 5, "+Inf bucket equals the count");
	cr_assert_eq(scrape("rmqns_connections_accepted_total"), acc0 + 1);
	cr_assert_eq(scrape("rmqns_connections_open"), 1);

	/* a registration: brokers, topics, outcome, apply time */
	double applied0 = scrape("rmqns_registrations_total{outcome=\"applied\"}");
	double apply0 = scrape("rmqns_registrar_apply_seconds_count");
	double digest0 = scrape("rmqns_route_digest");
	struct client *broker = harness_connect_or_fail(&srv);
	register_broker(broker, "hb1", "10.9.0.1:10911", "60000");
	cr_assert_eq(scrape("rmqns_registrations_total{outcome=\"applied\"}"), applied0 + 1);
	cr_assert_eq(scrape("rmqns_brokers_live"), 1);
	cr_assert_eq(scrape("rmqns_broker_groups"), 1);
	cr_assert_eq(scrape("rmqns_topics"), 2);
	cr_assert_eq(scrape("rmqns_queue_entries"), 2);
	cr_assert_eq(digest0, 0, "no topic and no broker: the empty sum");
	cr_assert_neq(scrape("rmqns_route_digest"), digest0, "a broker and two topics more");
	/* the registrar times a mutation once it has run, its answer included */
	cr_assert_geq(wait_metric_at_least("rmqns_registrar_apply_seconds_count", apply0 + 1), apply0 + 1);
	cr_assert_eq(scrape("rmqns_requests_total{" REGISTER_LABELS ",response=\"0\"}"), 1);

	/* the route cache: built once, then served from the bytes */
	double built0 = scrape("rmqns_route_cache_lookups_total{result=\"built\"}");
	double hit0 = scrape("rmqns_route_cache_lookups_total{result=\"hit\"}");
	cr_assert_eq(harness_route_code(c, "hb1-a"), 0);
	cr_assert_eq(harness_route_code(c, "hb1-a"), 0);
	cr_assert_eq(scrape("rmqns_route_cache_lookups_total{result=\"built\"}"), built0 + 1);
	cr_assert_eq(scrape("rmqns_route_cache_lookups_total{result=\"hit\"}"), hit0 + 1);
	cr_assert_gt(scrape("rmqns_route_cache_bytes"), 0);
	cr_assert_eq(scrape("rmqns_requests_total{" ROUTE_LABELS ",response=\"0\"}"), 2);

	/* KV: one durable write per put */
	double kv0 = scrape("rmqns_kv_writes_total");
	struct remoting_ext_field kv[] = { { "namespace", "NS" }, { "key", "k" }, { "value", "v" } };
	cr_assert_eq(simple_call(c, 100, kv, 3), 0);
	cr_assert_eq(scrape("rmqns_kv_writes_total"), kv0 + 1);
	cr_assert_eq(scrape("rmqns_kv_write_failures_total"), 0);

	/* removals: unregistered, then connection closed */
	struct remoting_ext_field un[] = { { "clusterName", "HttpCluster" },
					   { "brokerAddr", "10.9.0.1:10911" },
					   { "brokerName", "hb1" }, { "brokerId", "0" } };
	cr_assert_eq(simple_call(broker, 104, un, 4), 0);
	cr_assert_eq(scrape("rmqns_broker_removals_total{reason=\"unregistered\"}"), 1);
	cr_assert_eq(scrape("rmqns_brokers_live"), 0);
	register_broker(broker, "hb2", "10.9.0.2:10911", "60000");
	cr_assert_eq(scrape("rmqns_brokers_live"), 1);
	client_close(broker);
	cr_assert_eq(wait_metric("rmqns_broker_removals_total{reason=\"connection_closed\"}", 1), 1);
	cr_assert_eq(scrape("rmqns_brokers_live"), 0);
	cr_assert_eq(scrape("rmqns_broker_removals_total{reason=\"expired\"}"), 0);
	client_close(c);
}

/* Series of a family in a scrape. */
static int series_count(const char *text, const char *family)
{
	size_t n = strlen(family);
	int count = 0;
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		count += strncmp(p, family, n) == 0 && (p[n] == '{' || p[n] == ' ');
	return count;
}

#define HB_AGE "rmqns_broker_heartbeat_age_seconds"
#define HB_TIMEOUT "rmqns_broker_heartbeat_timeout_seconds"
#define HB_LABELS(name, addr) \
	"{cluster=\"HttpCluster\",broker=\"" name "\",id=\"0\",address=\"" addr "\"}"

/* The request code's name beside its number (an unknown code keeps its
 * number as the name); the process_* families with plausible values; one
 * heartbeat-age series per live broker, gone with the broker. */
Test(http, metrics_names_process_and_heartbeats)
{
	start(NULL);
	struct client *c = harness_connect_or_fail(&srv);
	cr_assert_eq(simple_call(c, 777, NULL, 0), 3); /* no such code */
	struct http_answer a = http_get("/metrics");
	cr_assert_eq(a.status, 200);
	cr_assert_eq(metric(a.body, "rmqns_requests_total{code=\"777\",request=\"777\",response=\"3\"}"),
		     1, "%s", a.body);

	/* process_*: what /proc says of the server, as client libraries name it */
	cr_assert_not_null(strstr(a.body, "# TYPE process_cpu_seconds_total counter\n"));
	double rss = metric(a.body, "process_resident_memory_bytes");
	long vmrss_kb = harness_status_kb(&srv, "VmRSS");
	cr_assert_gt(rss, 0);
	cr_assert_gt(vmrss_kb, 0);
	cr_assert(rss > vmrss_kb * 1024.0 / 4 && rss < vmrss_kb * 1024.0 * 4, "RSS %g, VmRSS %ld kB",
		  rss, vmrss_kb);
	cr_assert_gt(metric(a.body, "process_virtual_memory_bytes"), rss);
	double fds = metric(a.body, "process_open_fds");
	cr_assert_gt(fds, 3, "%g open fds", fds); /* stdio, epoll, listeners, our connection */
	cr_assert_geq(metric(a.body, "process_max_fds"), fds);
	cr_assert_geq(metric(a.body, "process_cpu_seconds_total"), 0);
	double started = metric(a.body, "process_start_time_seconds");
	double now = (double)time(NULL);
	cr_assert(started > now - 300 && started <= now + 1, "started %f, now %f", started, now);
	cr_assert_eq(series_count(a.body, HB_AGE), 0);
	free(a.raw);

	struct client *b1 = harness_connect_or_fail(&srv), *b2 = harness_connect_or_fail(&srv);
	register_broker(b1, "hb-one", "10.9.3.1:10911", "45000");
	register_broker(b2, "hb-two", "10.9.3.2:10911", "60000");
	a = http_get("/metrics");
	cr_assert_eq(series_count(a.body, HB_AGE), 2, "%s", a.body);
	cr_assert_eq(series_count(a.body, HB_TIMEOUT), 2, "%s", a.body);
	double age = metric(a.body, HB_AGE HB_LABELS("hb-one", "10.9.3.1:10911"));
	cr_assert(age >= 0 && age < 45, "age %g\n%s", age, a.body);
	cr_assert_eq(metric(a.body, HB_TIMEOUT HB_LABELS("hb-one", "10.9.3.1:10911")), 45);
	cr_assert_eq(metric(a.body, HB_TIMEOUT HB_LABELS("hb-two", "10.9.3.2:10911")), 60);
	free(a.raw);

	/* the age grows without heartbeats */
	harness_sleep_ms(1200);
	cr_assert_geq(scrape(HB_AGE HB_LABELS("hb-one", "10.9.3.1:10911")), 1.0);

	struct remoting_ext_field un[] = { { "clusterName", "HttpCluster" },
					   { "brokerAddr", "10.9.3.1:10911" },
					   { "brokerName", "hb-one" }, { "brokerId", "0" } };
	cr_assert_eq(simple_call(b1, 104, un, 4), 0);
	client_close(b2);
	cr_assert_eq(wait_metric("rmqns_brokers_live", 0), 0);
	a = http_get("/metrics");
	cr_assert_eq(series_count(a.body, HB_AGE), 0, "%s", a.body);
	cr_assert_eq(series_count(a.body, HB_TIMEOUT), 0, "%s", a.body);
	cr_assert_not_null(strstr(a.body, "# TYPE " HB_AGE " gauge\n"));
	free(a.raw);
	client_close(b1);
	client_close(c);
}

Test(http, metrics_count_expiry)
{
	static const char *const args[] = { "--scanNotActiveBrokerInterval=200", NULL };
	start(args);
	struct client *broker = harness_connect_or_fail(&srv);
	register_broker(broker, "exp", "10.9.1.1:10911", "1000");
	cr_assert_eq(scrape("rmqns_brokers_live"), 1);
	/* no heartbeat: the scan removes it within a few ticks */
	cr_assert_eq(wait_metric("rmqns_broker_removals_total{reason=\"expired\"}", 1), 1);
	cr_assert_eq(scrape("rmqns_brokers_live"), 0);
	/* the expired broker's connection is closed by the server; its
	 * brokers were already gone, so no close-removal is counted */
	cr_assert_eq(scrape("rmqns_broker_removals_total{reason=\"connection_closed\"}"), 0);
	client_close(broker);
}

Test(http, metrics_count_busy_answers)
{
	/* one-slot lanes, route queries through the pool: a burst of
	 * pipelined queries overflows the route lane within one reactor turn */
	static const char *const args[] = { "--processorQueueCapacity=1", "--routeQueryInline=false",
					    "--serverSelectorThreads=1", NULL };
	start(args);
	struct client *c = harness_connect_or_fail(&srv);
	struct remoting_ext_field ext[1] = { { "topic", "t" } };
	struct remoting_cmd req;
	struct buf frames = BUF_INIT;
	long busy = 0;

	for (int round = 0; round < 20 && busy == 0; round++) {
		frames.len = 0;
		for (int i = 0; i < 200; i++) {
			harness_request_init(&req, 105, REMOTING_JSON);
			req.ext = ext;
			req.ext_count = 1;
			req.opaque = client_next_opaque(c);
			harness_encode(&req, &frames);
		}
		cr_assert_eq(client_send_raw(c, frames.data, frames.len, T), 0);
		for (int i = 0; i < 200; i++) {
			struct client_reply *r = NULL;
			cr_assert_eq(client_recv(c, &r, T), 0, "answer %d of the burst", i);
			cr_assert(r->cmd.code == 17 || r->cmd.code == 2, "code %d", r->cmd.code);
			busy += r->cmd.code == 2;
			client_reply_free(r);
		}
	}
	buf_free(&frames);
	cr_assert_gt(busy, 0, "no burst overflowed a one-slot lane");
	cr_assert_eq(scrape("rmqns_system_busy_total{lane=\"route\"}"), (double)busy);
	cr_assert_eq(scrape("rmqns_requests_total{" ROUTE_LABELS ",response=\"2\"}"), (double)busy);
	cr_assert_eq(scrape("rmqns_system_busy_total{lane=\"default\"}"), 0);
	cr_assert_eq(scrape("rmqns_lane_queue_capacity"), 1);
	client_close(c);
}

/* ---- /healthz ---- */

static struct http_answer wait_status(const char *path, int want)
{
	struct http_answer a = http_get(path);
	for (int i = 0; i < 200 && a.status != want; i++) {
		free(a.raw);
		harness_sleep_ms(100);
		a = http_get(path);
	}
	return a;
}

Test(http, healthz_fails_while_the_registrar_is_stalled)
{
	char dir[256], conf[300];
	cr_assert_eq(harness_mkdtemp(dir, sizeof dir, "rmqns-http"), 0);
	snprintf(conf, sizeof conf, "%s/n.conf", dir);
	FILE *f = fopen(conf, "w");
	cr_assert_not_null(f);
	fputs("enableTopicList=true\n", f);
	fclose(f);
	const char *args[] = { "-c", conf, "--healthStallMillis=2000", NULL };
	start(args);

	struct http_answer a = http_get("/healthz");
	cr_assert_eq(a.status, 200, "%s", a.raw);
	cr_assert_eq(strncmp(a.body, "ok\n", 3), 0);
	cr_assert_not_null(strstr(a.body, "registrar: ok"));
	free(a.raw);

	/* SIGHUP has the registrar re-read the -c file; as a FIFO nobody
	 * writes, its open() blocks: a registrar truly stuck in a mutation */
	cr_assert_eq(unlink(conf), 0);
	cr_assert_eq(mkfifo(conf, 0600), 0);
	cr_assert_eq(kill(srv.pid, SIGHUP), 0);
	a = wait_status("/healthz", 503);
	cr_assert_eq(a.status, 503, "still healthy with the registrar stuck: %s", a.body);
	cr_assert_not_null(strstr(a.body, "registrar: STALLED"), "%s", a.body);
	cr_assert_not_null(strstr(a.body, "reactor 0: ok"), "%s", a.body);
	free(a.raw);
	a = http_get("/readyz");
	cr_assert_eq(a.status, 503, "ready while stalled: %s", a.body);
	free(a.raw);
	/* the reactors still answer route queries meanwhile */
	struct client *c = harness_connect_or_fail(&srv);
	cr_assert_eq(harness_route_code(c, "nothing"), 17);

	/* a writer opens and closes: the re-read fails (not a regular file),
	 * the registrar goes on */
	int fd = open(conf, O_WRONLY | O_NONBLOCK);
	cr_assert(fd >= 0, "the registrar should be waiting on the FIFO: %s", strerror(errno));
	close(fd);
	a = wait_status("/healthz", 200);
	cr_assert_eq(a.status, 200, "not healthy again: %s", a.body);
	free(a.raw);
	cr_assert(harness_wait_log(&srv, "not a regular file", T));
	client_close(c);
	harness_rmdir(dir);
}

/* ---- /readyz ---- */

Test(http, readyz_waits_for_service)
{
	static const char *const args[] = { "--needWaitForService=true", "--waitSecondsForService=10",
					    NULL };
	start(args);
	struct http_answer a = http_get("/readyz");
	cr_assert_eq(a.status, 503, "%s", a.raw);
	cr_assert_not_null(strstr(a.body, "needWaitForService"), "%s", a.body);
	free(a.raw);
	/* alive meanwhile, and route queries refused like Java's */
	a = http_get("/healthz");
	cr_assert_eq(a.status, 200);
	free(a.raw);
	struct client *c = harness_connect_or_fail(&srv);
	cr_assert_eq(harness_route_code(c, "nothing"), 1, "route queries refused while waiting");
	a = wait_status("/readyz", 200);
	cr_assert_eq(a.status, 200, "never ready: %s", a.body);
	cr_assert_str_eq(a.body, "ready\n");
	free(a.raw);
	cr_assert_eq(harness_route_code(c, "nothing"), 17, "route queries answered once ready");
	client_close(c);
}

Test(http, readyz_at_once_without_wait)
{
	start(NULL);
	struct http_answer a = http_get("/readyz");
	cr_assert_eq(a.status, 200, "%s", a.raw);
	free(a.raw);
}

/* The shutdown path cannot be watched from outside (main stops the
 * endpoint right after telling it), so the endpoint runs here, in the test
 * process, over live route tables and a turning registrar, and the test
 * makes main's call itself. */
Test(http, readyz_says_stopping_once_shutdown_begins)
{
	char port_arg[32], err[256];
	http_port_no = free_port();
	snprintf(port_arg, sizeof port_arg, "--httpPort=%d", http_port_no);
	char *argv[] = { "rmqns", port_arg, "--bindAddress=127.0.0.1", NULL };
	struct config *cfg = NULL;
	enum config_action action;
	cr_assert_eq(config_from_args(3, argv, &cfg, &action, err, sizeof err), 0, "%s", err);
	struct app app = { .config = cfg, .route = route_db_create(0) };
	cr_assert_not_null(app.route);
	app.registrar = registrar_create(NULL);
	cr_assert(app.registrar && registrar_start(app.registrar) == 0);
	int rc;
	struct http_endpoints *e = http_endpoints_start(&app, config_startup(cfg), &rc);
	cr_assert_not_null(e, "%s", rmqns_strerror(rc));

	struct http_answer a = wait_status("/readyz", 200);
	cr_assert_eq(a.status, 200, "%s", a.raw);
	free(a.raw);
	http_endpoints_set_stopping(e, true);
	a = http_get("/readyz");
	cr_assert_eq(a.status, 503, "%s", a.raw);
	cr_assert_str_eq(a.body, "not ready: stopping\n");
	free(a.raw);
	a = http_get("/healthz");
	cr_assert_eq(a.status, 200, "alive while stopping: %s", a.raw);
	cr_assert_eq(strncmp(a.body, "ok\n", 3), 0);
	free(a.raw);

	http_endpoints_stop(e);
	registrar_destroy(app.registrar);
	route_db_destroy(app.route);
	config_destroy(cfg);
}

/* ---- /brokers ---- */

Test(http, brokers_lists_live_brokers)
{
	start(NULL);
	struct http_answer a = http_get("/brokers");
	cr_assert_eq(a.status, 200);
	cr_assert_not_null(strstr(a.raw, "Content-Type: application/json"));
	json_error_t je;
	json_t *doc = json_loads(a.body, 0, &je);
	cr_assert_not_null(doc, "%s", je.text);
	cr_assert_eq(json_array_size(json_object_get(doc, "brokers")), 0);
	json_decref(doc);
	free(a.raw);

	struct client *broker = harness_connect_or_fail(&srv);
	register_broker(broker, "bk", "10.9.2.1:10911", "45000");
	a = http_get("/brokers");
	cr_assert_eq(a.status, 200);
	doc = json_loads(a.body, 0, &je);
	cr_assert_not_null(doc, "%s", je.text);
	json_t *list = json_object_get(doc, "brokers");
	cr_assert_eq(json_array_size(list), 1, "%s", a.body);
	json_t *b = json_array_get(list, 0);
	cr_assert_str_eq(json_string_value(json_object_get(b, "cluster")), "HttpCluster");
	cr_assert_str_eq(json_string_value(json_object_get(b, "brokerName")), "bk");
	cr_assert_eq(json_integer_value(json_object_get(b, "brokerId")), 0);
	cr_assert_str_eq(json_string_value(json_object_get(b, "role")), "master");
	cr_assert_str_eq(json_string_value(json_object_get(b, "address")), "10.9.2.1:10911");
	expect_broker_heartbeat(b, 45000, 2);
	json_decref(doc);
	free(a.raw);
	client_close(broker);
}

/* ---- bad requests ---- */

Test(http, bad_requests_get_4xx)
{
	start(NULL);
	struct {
		const char *req;
		int status;
	} cases[] = {
		{ "GET /nope HTTP/1.1\r\n\r\n", 404 },
		{ "GET /metrics/x HTTP/1.1\r\n\r\n", 404 },
		{ "garbage\r\n\r\n", 400 },
		{ "GET /metrics HTTP/2.0\r\n\r\n", 400 },
		{ "GET metrics HTTP/1.1\r\n\r\n", 400 },
		{ "GET  /metrics HTTP/1.1\r\n\r\n", 400 },
		{ "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405 },
		{ "GET /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", 400 },
		{ "GET /healthz?verbose=1 HTTP/1.1\r\n\r\n", 200 },
		{ "HEAD /healthz HTTP/1.0\r\n\r\n", 200 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int fd = http_connect();
		send_all(fd, cases[i].req, strlen(cases[i].req));
		char *raw = recv_all(fd);
		close(fd);
		cr_assert_eq(strncmp(raw, "HTTP/1.1 ", 9), 0, "case %zu: %.60s", i, raw);
		cr_assert_eq(atoi(raw + 9), cases[i].status, "case %zu (%s): %.60s", i, cases[i].req,
			     raw);
		if (strncmp(cases[i].req, "HEAD", 4) == 0)
			cr_assert_str_eq(strstr(raw, "\r\n\r\n"), "\r\n\r\n", "HEAD has no body");
		free(raw);
	}
}

Test(http, request_in_pieces)
{
	start(NULL);
	static const char *const pieces[] = { "GET /hea", "lthz HTTP/1.1\r", "\nHost: x\r\n\r", "\n" };
	int fd = http_connect();
	for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
		send_all(fd, pieces[i], strlen(pieces[i]));
		harness_sleep_ms(50); /* separate reads on the server, not a timing check */
	}
	struct http_answer a;
	answer_parse(&a, recv_all(fd));
	close(fd);
	cr_assert_eq(a.status, 200, "%s", a.raw);
	cr_assert_eq(strncmp(a.body, "ok\n", 3), 0);
	free(a.raw);
}

/* ---- abuse on the HTTP port does not reach the protocol port ---- */

Test(http, huge_request_is_refused)
{
	start(NULL);
	size_t n = 256 * 1024;
	char *big = malloc(n + 1);
	cr_assert_not_null(big);
	memcpy(big, "GET /metrics HTTP/1.1\r\nX-Pad: ", 30);
	memset(big + 30, 'a', n - 30);
	big[n] = '\0';
	int fd = http_connect();
	/* the server answers after 8 KiB and reads the rest away */
	send_all(fd, big, n);
	shutdown(fd, SHUT_WR);
	struct http_answer a;
	answer_parse(&a, recv_all(fd));
	close(fd);
	cr_assert_eq(a.status, 431, "%.80s", a.raw);
	free(a.raw);
	free(big);
	struct client *c = harness_connect_or_fail(&srv);
	cr_assert_eq(harness_route_code(c, "nothing"), 17);
	client_close(c);
	cr_assert_eq(scrape("rmqns_http_rejected_total"), 1);
}

/* A connection the server closed without a word: EOF, or a reset when it
 * left the request unread. */
static void assert_cut_without_answer(int fd, int i)
{
	char chunk[256];
	ssize_t n = recv(fd, chunk, sizeof chunk, 0);
	cr_assert(n == 0 || (n < 0 && errno == ECONNRESET), "connection %d: %s", i,
		  n > 0 ? "got an answer" : strerror(errno));
}

Test(http, slowloris_does_not_hurt_route_queries)
{
	start(NULL);
	/* more requests that never end than there are slots */
	enum { SLOW = HTTP_MAX_CONNS_DEFAULT + 44 };
	static int slow[SLOW];
	for (int i = 0; i < SLOW; i++) {
		slow[i] = http_connect();
		send_all(slow[i], "GET /metrics HTTP/1.1\r\nX-Slow: ", 32);
	}
	/* a probe after them takes the slot of the oldest at once */
	struct http_answer a = http_get("/healthz");
	cr_assert_eq(a.status, 200, "the probe: %.60s", a.raw);
	free(a.raw);

	/* the protocol port serves route queries all the while */
	struct client *c = harness_connect_or_fail(&srv);
	for (int i = 0; i < 200; i++)
		cr_assert_eq(harness_route_code(c, "nothing"), 17, "query %d", i);

	/* each slow peer is cut without an answer: the oldest to make room,
	 * the others at the deadline */
	for (int i = 0; i < SLOW; i++) {
		assert_cut_without_answer(slow[i], i);
		close(slow[i]);
	}
	double evicted = scrape("rmqns_http_connections_evicted_total");
	cr_assert_eq(evicted, SLOW - HTTP_MAX_CONNS_DEFAULT + 1, "44 crowded out, 1 by the probe");
	cr_assert_eq(scrape("rmqns_http_rejected_total"), HTTP_MAX_CONNS_DEFAULT - 1);
	cr_assert(harness_wait_log(&srv, "to make room for new ones", T), "no eviction logged");
	cr_assert_eq(harness_route_code(c, "nothing"), 17);
	client_close(c);
}

/* ---- a crowd of idle connections ---- */

#define IDLE_CROWD 1000
/* A probe's answer must come before the crowd could have freed a slot by
 * itself: without room made for it, the probe would wait in the listen
 * backlog behind the ~750 idle connections not taken, through three of
 * the server's 5 s request timeouts. Generous below that for a loaded
 * host (an idle one answers in milliseconds). */
#define PROBE_TIMEOUT_MS 8000

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Room for n descriptors, the soft limit raised toward the hard one;
 * false when the hard limit is lower. */
static bool nofile_at_least(rlim_t n)
{
	struct rlimit rl;
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < n) {
		if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < n)
			return false;
		rl.rlim_cur = n;
		cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0, "%s", strerror(errno));
	}
	return true;
}

/* Opens n connections that never send (connects not waited for: a full
 * backlog must not stall the test) and waits, bounded, until the kernel
 * has completed them; returns how many it did. */
static int idle_crowd_open(int *fds, int n)
{
	struct sockaddr_in a = http_addr();
	static struct pollfd pfd[IDLE_CROWD];
	for (int i = 0; i < n; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		cr_assert(fds[i] >= 0, "socket %d: %s", i, strerror(errno));
		int rc = connect(fds[i], (struct sockaddr *)&a, sizeof a);
		cr_assert(rc == 0 || errno == EINPROGRESS, "connect %d: %s", i, strerror(errno));
	}
	int done = 0;
	uint64_t until = mono_ms() + 5000;
	for (int i = 0; i < n; i++) {
		pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLOUT };
		while (mono_ms() < until && poll(&pfd[i], 1, 100) == 0)
			;
		done += (pfd[i].revents & POLLOUT) != 0;
	}
	return done;
}

/* GET path on a new connection: its status, or -1 when no whole answer
 * came within timeout_ms; *ms the time it took. */
static int probe(const char *path, int timeout_ms, uint64_t *ms)
{
	char req[128];
	uint64_t t0 = mono_ms();
	int status = -1;
	int fd = http_connect_within(timeout_ms);
	int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
	if (fd >= 0 && send(fd, req, (size_t)n, MSG_NOSIGNAL) == n) {
		struct buf b = BUF_INIT;
		char chunk[4096];
		ssize_t r;
		while ((r = recv(fd, chunk, sizeof chunk, 0)) > 0)
			cr_assert_eq(buf_append(&b, chunk, (size_t)r), 0);
		if (r == 0 && b.len > 9 && memcmp(b.data, "HTTP/1.1 ", 9) == 0)
			status = atoi((const char *)b.data + 9);
		buf_free(&b);
	}
	if (fd >= 0)
		close(fd);
	*ms = mono_ms() - t0;
	return *ms <= (uint64_t)timeout_ms ? status : -1;
}

Test(http, probes_answered_through_a_crowd_of_idle_connections)
{
	if (!nofile_at_least(IDLE_CROWD + 64))
		cr_skip_test("the descriptor hard limit is below %d", IDLE_CROWD + 64);
	start(NULL);
	static int idle[IDLE_CROWD];
	static const char *const paths[] = { "/healthz", "/readyz" };
	for (int round = 0; round < 3; round++) {
		int open = idle_crowd_open(idle, IDLE_CROWD);
		for (int p = 0; p < 2; p++) {
			uint64_t ms;
			int status = probe(paths[p], PROBE_TIMEOUT_MS, &ms);
			fprintf(stderr, "round %d: %d idle connections open, %s answered %d in %llu ms\n",
				round, open, paths[p], status, (unsigned long long)ms);
			cr_assert_eq(status, 200, "round %d: %s within %d ms", round, paths[p],
				     PROBE_TIMEOUT_MS);
		}
		cr_assert_eq(open, IDLE_CROWD, "round %d: only %d connects completed", round, open);
		/* the oldest idle one was closed to make room */
		struct timeval tv = { T / 1000, 0 };
		setsockopt(idle[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		fcntl(idle[0], F_SETFL, 0);
		assert_cut_without_answer(idle[0], 0);
		for (int i = 0; i < IDLE_CROWD; i++)
			close(idle[i]);
	}
	double evicted = scrape("rmqns_http_connections_evicted_total");
	cr_assert_geq(evicted, 3 * (IDLE_CROWD - HTTP_MAX_CONNS_DEFAULT), "%g evicted", evicted);
}

Test(http, off_by_default)
{
	cr_assert_eq(harness_start(&srv, NULL), 0);
	char *log = harness_read_log(&srv);
	cr_assert_not_null(log);
	cr_assert_null(strstr(log, "HTTP endpoint listening"), "HTTP is on without httpPort");
	free(log);
}
