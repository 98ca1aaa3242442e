/* The controller's heartbeat table against heartbeats from anyone: 20,000
 * unsigned heartbeats with made-up identities and the longest timeout a
 * long can say keep the table at controllerMaxLiveBrokers, the rest are
 * refused on the wire (code 2, [TOO_MANY_BROKERS]) and counted, the WARN
 * is rate-limited, /controller and /metrics stay small; and the entries
 * of brokers of no set go once controllerMaxHeartbeatTimeoutMillis
 * passes without a heartbeat. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "harness.h"
#include "rmqns/client.h"
#include "rmqns/remoting.h"

#define T HARNESS_IO_TIMEOUT_MS
#define WAIT_MS 30000 /* a loaded 2-core host publishes the view well within this */

static struct harness_server srv;
static int http_port;

static void stop_server(void)
{
	cr_expect_eq(harness_cleanup(&srv), 0, "the server did not stop cleanly");
}

TestSuite(controller_bounds, .fini = stop_server, .timeout = 240);

/* A one-node controller with its HTTP port and up to two more options; a
 * client of its port. */
static struct client *start(const char *opt1, const char *opt2)
{
	static struct harness_solo_controller ctl;
	static char http[32];

	http_port = harness_free_port();
	cr_assert_gt(http_port, 0);
	snprintf(http, sizeof http, "--httpPort=%d", http_port);
	const char *const extra[] = { http, opt1, opt2, NULL };
	cr_assert_eq(harness_solo_controller(&ctl, extra), 0, "no free port pair");
	cr_assert_eq(harness_start(&srv, ctl.args), 0, "the server did not start");
	int err;
	struct client *c = client_connect("127.0.0.1", ctl.port, 2000, &err);
	cr_assert_not_null(c, "controller port: %d", err);
	return c;
}

/* Sends an answered (not one-way) heartbeat of broker `i` of a made-up
 * set asking for the longest timeout there is. */
static void send_heartbeat(struct client *c, int i)
{
	char name[32], id[16], addr[32];
	snprintf(name, sizeof name, "made-up-%d", i);
	snprintf(id, sizeof id, "%d", i % 7);
	snprintf(addr, sizeof addr, "10.%d.%d.%d:10911", (i >> 16) & 255, (i >> 8) & 255, i & 255);
	struct remoting_ext_field ext[] = {
		{ "clusterName", "Nowhere" }, { "brokerName", name }, { "brokerId", id },
		{ "brokerAddr", addr }, { "heartbeatTimeoutMills", "9223372036854775807" },
		{ "epoch", "1" }, { "maxOffset", "0" },
	};
	struct remoting_cmd req;
	harness_request_init(&req, 904, REMOTING_JSON);
	req.ext = ext;
	req.ext_count = sizeof ext / sizeof ext[0];
	req.ext_present = true;
	req.opaque = client_next_opaque(c);
	cr_assert_eq(client_send(c, &req, T), 0, "heartbeat %d not sent", i);
}

struct tally {
	int ok, refused;
};

static void receive_answer(struct client *c, struct tally *t)
{
	struct client_reply *r = NULL;

	cr_assert_eq(client_recv(c, &r, T), 0, "no answer to a heartbeat");
	if (r->cmd.code == RSP_SUCCESS) {
		t->ok++;
	} else {
		cr_assert_eq(r->cmd.code, RSP_SYSTEM_BUSY, "answered %d %s", r->cmd.code,
			     r->cmd.remark ? r->cmd.remark : "");
		cr_assert_not_null(r->cmd.remark);
		cr_assert_not_null(strstr(r->cmd.remark, "[TOO_MANY_BROKERS]"), "%s", r->cmd.remark);
		cr_assert_not_null(strstr(r->cmd.remark, "controllerMaxLiveBrokers"), "%s", r->cmd.remark);
		t->refused++;
	}
	client_reply_free(r);
}

/* Heartbeats of brokers [from, to), a window of them in flight (below the
 * connection's in-flight cap). */
static struct tally heartbeats(struct client *c, int from, int to)
{
	enum { WINDOW = 32 };
	struct tally t = { 0 };
	int sent = from, answered = from;

	while (answered < to) {
		for (; sent < to && sent - answered < WINDOW; sent++)
			send_heartbeat(c, sent);
		receive_answer(c, &t);
		answered++;
	}
	return t;
}

/* Waits until the metric sample reaches want; its last value. */
static double wait_metric(const char *sample, double want)
{
	double v = -1;
	for (int64_t end = harness_now_ms() + WAIT_MS; harness_now_ms() < end; harness_sleep_ms(100))
		if ((v = harness_metric(http_port, sample)) == want)
			break;
	return v;
}

static json_t *controller_json(size_t *size)
{
	char *out = NULL;
	cr_assert_eq(harness_http_get(http_port, "/controller", &out), 200);
	const char *body = strstr(out, "\r\n\r\n");
	cr_assert_not_null(body);
	*size = strlen(body + 4);
	json_error_t e;
	json_t *j = json_loads(body + 4, 0, &e);
	cr_assert_not_null(j, "/controller: %s", e.text);
	free(out);
	return j;
}

static json_int_t counts_member(json_t *j, const char *key)
{
	return json_integer_value(json_object_get(json_object_get(j, "liveBrokerCounts"), key));
}

static size_t occurrences(const char *text, const char *needle)
{
	size_t n = 0;
	for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

Test(controller_bounds, twenty_thousand_made_up_heartbeats_keep_the_table_bounded)
{
	struct client *c = start(NULL, NULL);
	int64_t began = harness_now_ms();

	struct tally t = heartbeats(c, 0, 20000);
	cr_assert_eq(t.ok, 10000, "%d taken", t.ok);
	cr_assert_eq(t.refused, 10000, "%d refused", t.refused);
	/* a broker already tracked is still refreshed when the table is full */
	t = heartbeats(c, 5, 6);
	cr_assert_eq(t.ok, 1);

	cr_assert_eq(wait_metric("rmqns_controller_heartbeats_refused_total", 10000), 10000);
	cr_assert_eq(harness_metric(http_port, "rmqns_controller_live_brokers"), 10000);
	cr_assert_eq(harness_metric(http_port, "rmqns_controller_live_brokers_max"), 10000);

	/* /controller: counts, not 10,000 entries */
	size_t size = 0;
	json_t *j = NULL;
	for (int64_t end = harness_now_ms() + WAIT_MS; harness_now_ms() < end; harness_sleep_ms(100)) {
		json_decref(j);
		j = controller_json(&size);
		if (counts_member(j, "total") == 10000 && counts_member(j, "refusedTotal") == 10000)
			break;
	}
	cr_assert_eq(counts_member(j, "total"), 10000);
	cr_assert_eq(counts_member(j, "inNoBrokerSet"), 10000);
	cr_assert_eq(counts_member(j, "max"), 10000);
	cr_assert_eq(counts_member(j, "refusedTotal"), 10000);
	cr_assert(json_is_false(json_object_get(json_object_get(j, "liveBrokerCounts"), "listed")));
	cr_assert_eq(json_array_size(json_object_get(j, "liveBrokers")), 0);
	cr_assert_lt(size, 16384, "/controller is %zu bytes", size);
	json_decref(j);

	/* /metrics: at most 500 per-broker series */
	char *metrics = NULL;
	cr_assert_eq(harness_http_get(http_port, "/metrics", &metrics), 200);
	size_t series = occurrences(metrics, "\nrmqns_controller_heartbeat_age_seconds{");
	cr_assert_eq(series, 500, "%zu heartbeat age series", series);
	cr_assert_lt(strlen(metrics), 512 * 1024, "/metrics is %zu bytes", strlen(metrics));
	free(metrics);

	/* the WARN is rate-limited: 10 lines per 10 s, not one per refusal */
	char *log = harness_read_log(&srv);
	cr_assert_not_null(log);
	size_t warns = occurrences(log, "refused: 10000 brokers tracked already");
	int64_t windows = (harness_now_ms() - began) / 10000 + 2;
	cr_assert(warns >= 1 && warns <= (size_t)(10 * windows), "%zu WARN lines in %lld windows", warns,
		  (long long)windows);
	free(log);
	client_close(c);
}

/* Brokers of no set asking for ever are dropped once the cut timeout
 * passes without a heartbeat; the connection stays open all along, so
 * only the timeout removes them. */
Test(controller_bounds, made_up_brokers_expire_after_the_cut_timeout)
{
	struct client *c =
		start("--controllerMaxHeartbeatTimeoutMillis=1000", "--scanNotActiveBrokerInterval=200");

	struct tally t = heartbeats(c, 0, 3);
	cr_assert_eq(t.ok, 3);
	size_t size;
	json_t *j = NULL;
	for (int64_t end = harness_now_ms() + WAIT_MS; harness_now_ms() < end; harness_sleep_ms(50)) {
		json_decref(j);
		j = controller_json(&size);
		if (json_array_size(json_object_get(j, "liveBrokers")) == 3)
			break;
	}
	json_t *live = json_object_get(j, "liveBrokers");
	if (json_array_size(live) == 3) {
		/* seen before the scan: the timeout asked for was cut */
		json_t *e = json_array_get(live, 0);
		cr_assert_eq(json_integer_value(json_object_get(e, "heartbeatTimeoutMillis")), 1000);
	}
	json_decref(j);
	cr_assert_eq(wait_metric("rmqns_controller_live_brokers", 0), 0, "the made-up brokers stayed");
	cr_assert(harness_wait_log(&srv, "made-up-0", WAIT_MS), "no log line of the expiry");
	/* and one coming back is taken again */
	t = heartbeats(c, 0, 1);
	cr_assert_eq(t.ok, 1);
	client_close(c);
}
