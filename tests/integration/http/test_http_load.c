/* The HTTP endpoint read while the server works, against the real binary:
 * route-query threads, a broker registering and sending heartbeats, and a
 * scraper reading /metrics, /brokers and /healthz all at once; afterwards
 * the request counters equal exactly what was sent. Bounded in count; a
 * plain program (see harness.h) so that it also runs under TSan. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "harness.h"
#include "rmqns/buf.h"
#include "metrics_text.h"

/* the labels of a request code: its number and its name */
#define ROUTE_LABELS "code=\"105\",request=\"GET_ROUTEINFO_BY_TOPIC\""
#define REGISTER_LABELS "code=\"103\",request=\"REGISTER_BROKER\""
#define HEARTBEAT_LABELS "code=\"904\",request=\"BROKER_HEARTBEAT\""

#define T HARNESS_IO_TIMEOUT_MS
#define QUERY_THREADS 3
#define QUERIES 1500
#define HEARTBEATS 300
#define MAX_SCRAPES 400

struct job {
	const struct harness_server *srv;
	int http_port;
	atomic_int *running;
	int done;
	char error[256];
};

static void *query_thread(void *arg)
{
	struct job *j = arg;
	struct client *c = harness_connect(j->srv);
	struct remoting_ext_field ext[1] = { { "topic", "load-none" } };

	if (!c) {
		snprintf(j->error, sizeof j->error, "connect failed");
	} else {
		for (int i = 0; i < QUERIES; i++) {
			struct remoting_cmd req;
			struct client_reply *r = NULL;
			harness_request_init(&req, 105, REMOTING_JSON);
			req.ext = ext;
			req.ext_count = 1;
			if (client_call(c, &req, &r, T) < 0 || r->cmd.code != 17) {
				snprintf(j->error, sizeof j->error, "query %d: no answer or not 17", i);
				client_reply_free(r);
				break;
			}
			client_reply_free(r);
			j->done++;
		}
		client_close(c);
	}
	atomic_fetch_sub(j->running, 1);
	return NULL;
}

static void *broker_thread(void *arg)
{
	struct job *j = arg;
	struct client *c = harness_connect(j->srv);
	static const char body[] =
		"{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":"
		"{\"counter\":1,\"stateVersion\":0,\"timestamp\":1},\"topicConfigTable\":{"
		"\"ld-a\":{\"perm\":6,\"readQueueNums\":4,\"topicName\":\"ld-a\",\"writeQueueNums\":4},"
		"\"ld-b\":{\"perm\":6,\"readQueueNums\":4,\"topicName\":\"ld-b\",\"writeQueueNums\":4}}}}";
	struct remoting_ext_field ext[] = {
		{ "brokerName", "ld" }, { "brokerAddr", "10.8.0.1:10911" }, { "clusterName", "LoadC" },
		{ "haServerAddr", "h:1" }, { "brokerId", "0" },
	};
	struct remoting_cmd req;
	struct client_reply *r = NULL;

	if (!c) {
		snprintf(j->error, sizeof j->error, "connect failed");
		goto out;
	}
	harness_request_init(&req, 103, REMOTING_JSON);
	req.ext = ext;
	req.ext_count = sizeof ext / sizeof ext[0];
	req.body = (const uint8_t *)body;
	req.body_len = (uint32_t)strlen(body);
	if (client_call(c, &req, &r, T) < 0 || r->cmd.code != 0) {
		snprintf(j->error, sizeof j->error, "registration failed");
		client_reply_free(r);
		goto out;
	}
	client_reply_free(r);
	/* heartbeats are one-way: nothing comes back */
	for (int i = 0; i < HEARTBEATS; i++) {
		harness_request_init(&req, 904, REMOTING_JSON);
		req.ext = ext;
		req.ext_count = sizeof ext / sizeof ext[0];
		req.flag |= REMOTING_FLAG_ONEWAY;
		req.opaque = client_next_opaque(c);
		if (client_send(c, &req, T) < 0) {
			snprintf(j->error, sizeof j->error, "heartbeat %d not sent", i);
			break;
		}
		j->done++;
	}
out:
	client_close(c);
	atomic_fetch_sub(j->running, 1);
	return NULL;
}

static int test_scrape_under_load(struct harness_server *s)
{
	int port = harness_free_port();
	char arg[32];
	HARNESS_CHECK(port > 0, "no free port");
	snprintf(arg, sizeof arg, "--httpPort=%d", port);
	const char *args[] = { arg, NULL };
	HARNESS_CHECK(harness_start(s, args) == 0, "the server did not start");

	atomic_int running = QUERY_THREADS + 1;
	struct job jobs[QUERY_THREADS + 1];
	pthread_t th[QUERY_THREADS + 1];
	for (int i = 0; i <= QUERY_THREADS; i++) {
		jobs[i] = (struct job){ .srv = s, .http_port = port, .running = &running };
		HARNESS_CHECK(pthread_create(&th[i], NULL, i < QUERY_THREADS ? query_thread : broker_thread,
					     &jobs[i]) == 0,
			      "thread");
	}
	/* scrape while they run (bounded) */
	int scrapes = 0, unhealthy = 0, bad = 0;
	static const char *const paths[] = { "/metrics", "/brokers", "/healthz" };
	while (atomic_load(&running) > 0 && scrapes < MAX_SCRAPES) {
		char *out = NULL;
		int st = harness_http_get(port, paths[scrapes % 3], &out);
		if (st < 0)
			bad++;
		else if (st != 200)
			unhealthy++;
		free(out);
		scrapes++;
	}
	for (int i = 0; i <= QUERY_THREADS; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i <= QUERY_THREADS; i++)
		HARNESS_CHECK(jobs[i].error[0] == '\0', "job %d: %s", i, jobs[i].error);
	HARNESS_CHECK(bad == 0 && unhealthy == 0, "%d failed and %d non-200 scrapes of %d", bad,
		      unhealthy, scrapes);

	/* exact counts once everything has been answered */
	char *m = NULL;
	HARNESS_CHECK(harness_http_get(port, "/metrics", &m) == 200, "final scrape");
	double q = metrics_text_sample(m, "rmqns_requests_total{" ROUTE_LABELS ",response=\"17\"}");
	double reg = metrics_text_sample(m, "rmqns_requests_total{" REGISTER_LABELS ",response=\"0\"}");
	double live = metrics_text_sample(m, "rmqns_brokers_live");
	free(m);
	HARNESS_CHECK(q == QUERY_THREADS * QUERIES, "route misses %g, sent %d", q,
		      QUERY_THREADS * QUERIES);
	HARNESS_CHECK(reg == 1, "registrations %g", reg);
	/* the broker's connection closed: it goes once the registrar has it */
	for (int i = 0; i < 100 && live != 0; i++) {
		struct timespec ts = { 0, 50 * 1000000L };
		nanosleep(&ts, NULL);
		HARNESS_CHECK(harness_http_get(port, "/metrics", &m) == 200, "scrape");
		live = metrics_text_sample(m, "rmqns_brokers_live");
		free(m);
	}
	HARNESS_CHECK(live == 0, "brokers live %g after the close", live);
	/* one-way heartbeats are counted as they are handled */
	for (int i = 0; i < 100; i++) {
		HARNESS_CHECK(harness_http_get(port, "/metrics", &m) == 200, "scrape");
		double hb = metrics_text_sample(m, "rmqns_requests_total{" HEARTBEAT_LABELS ",response=\"0\"}");
		free(m);
		if (hb == HEARTBEATS)
			return 0;
		struct timespec ts = { 0, 50 * 1000000L };
		nanosleep(&ts, NULL);
	}
	HARNESS_CHECK(0, "heartbeats not all counted");
	return -1;
}

static const struct harness_test tests[] = {
	{ "scrape_under_load", test_scrape_under_load },
};

int main(int argc, char **argv)
{
	return harness_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
