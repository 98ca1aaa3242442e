/* The cached list answers against the real binary: a thousand identical
 * pipelined GET_KVLIST_BY_NAMESPACE requests for a namespace holding a
 * large value cost one build (counted in /metrics) and get byte-identical
 * answers; a PUT shows in the very next answer. The same for cluster info
 * and the topic list around a registration. One processor thread, so that
 * a cold burst is served in order (with more, each thread that misses at
 * the same moment builds once). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "rmqns/buf.h"
#include "rmqns/err.h"

#define T HARNESS_IO_TIMEOUT_MS
#define REQUESTS 1000
/* Requests written at once: the answers of one window (WINDOW MiB) stay
 * under the server's outboundCloseBytes. */
#define WINDOW 40
#define VALUE_BYTES ((size_t)1 << 20)

static struct harness_server srv;
static int http_port;

static void fini(void)
{
	cr_expect_eq(harness_cleanup(&srv), 0, "the server did not stop cleanly");
}

TestSuite(answer_cache, .fini = fini, .timeout = 240);

static void start(void)
{
	static char http[32];
	const char *args[] = { http, "--serverWorkerThreads=1", NULL };

	http_port = harness_free_port();
	cr_assert_gt(http_port, 0);
	snprintf(http, sizeof http, "--httpPort=%d", http_port);
	cr_assert_eq(harness_start(&srv, args), 0, "the server did not start");
}

static double builds(const char *cache)
{
	char sample[96];
	snprintf(sample, sizeof sample, "rmqns_answer_cache_lookups_total{cache=\"%s\",result=\"built\"}", cache);
	double v = harness_metric(http_port, sample);
	cr_assert_geq(v, 0, "%s is not in /metrics", sample);
	return v;
}

/* Sends n identical requests (code, one ext field) pipelined in windows
 * and checks that every answer is code 0 with the same body, returned
 * (malloc'd, NUL-terminated). */
static char *pipelined(struct client *c, int32_t code, const char *key, const char *value, int n)
{
	struct remoting_ext_field ext = { key, value };
	char *first = NULL;
	size_t first_len = 0;

	for (int sent = 0; sent < n;) {
		struct buf frames = BUF_INIT;
		int w = n - sent < WINDOW ? n - sent : WINDOW;
		for (int i = 0; i < w; i++) {
			struct remoting_cmd req;
			harness_request_init(&req, code, REMOTING_JSON);
			req.ext = &ext;
			req.ext_count = key ? 1 : 0;
			req.ext_present = key != NULL;
			req.opaque = client_next_opaque(c);
			harness_encode(&req, &frames);
		}
		cr_assert_eq(client_send_raw(c, frames.data, frames.len, T), 0);
		buf_free(&frames);
		for (int i = 0; i < w; i++) {
			struct client_reply *r = NULL;
			cr_assert_eq(client_recv(c, &r, T), 0, "answer %d of %d", sent + i, n);
			cr_assert_eq(r->cmd.code, 0, "answer %d: code %d %s", sent + i, r->cmd.code,
				     r->cmd.remark ? r->cmd.remark : "");
			if (!first) {
				first = malloc(r->cmd.body_len + 1);
				cr_assert_not_null(first);
				memcpy(first, r->cmd.body, r->cmd.body_len);
				first[r->cmd.body_len] = 0;
				first_len = r->cmd.body_len;
			} else {
				cr_assert(r->cmd.body_len == first_len && memcmp(r->cmd.body, first, first_len) == 0,
					  "answer %d differs from the first", sent + i);
			}
			client_reply_free(r);
		}
		sent += w;
	}
	return first;
}

static void put(struct client *c, const char *ns, const char *key, const char *value)
{
	struct client_reply *r = NULL;
	cr_assert_eq(harness_call(c, 100, NULL, &r, "namespace", ns, "key", key, "value", value, NULL), 0);
	cr_assert_eq(r->cmd.code, 0, "PUT_KV_CONFIG: %s", r->cmd.remark ? r->cmd.remark : "");
	client_reply_free(r);
}

Test(answer_cache, a_thousand_kvlist_requests_cost_one_build)
{
	start();
	struct client *c = harness_connect(&srv);
	cr_assert_not_null(c);
	char *big = malloc(VALUE_BYTES + 1);
	cr_assert_not_null(big);
	memset(big, 'v', VALUE_BYTES);
	big[VALUE_BYTES] = 0;
	put(c, "BIG", "k", big);

	double b0 = builds("kv");
	char *body = pipelined(c, 219, "namespace", "BIG", REQUESTS);
	cr_expect_eq(builds("kv"), b0 + 1, "%d identical requests, one build", REQUESTS);
	cr_assert_eq(strlen(body), VALUE_BYTES + 18); /* {"table":{"k":"..."}} */
	cr_expect_eq(strncmp(body, "{\"table\":{\"k\":\"vvv", 18), 0, "%.40s", body);
	free(body);

	/* a change shows in the very next answer, built once again */
	big[0] = 'w';
	put(c, "BIG", "k", big);
	body = pipelined(c, 219, "namespace", "BIG", 10);
	cr_expect_eq(strncmp(body, "{\"table\":{\"k\":\"wvv", 18), 0, "%.40s", body);
	cr_expect_eq(builds("kv"), b0 + 2);
	free(body);
	put(c, "BIG", "k2", "small");
	body = pipelined(c, 219, "namespace", "BIG", 1);
	cr_expect_neq(strstr(body, "\"k2\":\"small\""), NULL, "a new key shows at once");
	free(body);
	free(big);
	client_close(c);
}

static void register_broker(struct client *c, const char *name, const char *addr, const char *prefix)
{
	struct buf body = BUF_INIT;
	struct client_reply *r = NULL;

	harness_topics_body(&body, prefix, 3, 4);
	cr_assert_eq(harness_call(c, 103, (const char *)body.data, &r, "brokerName", name, "brokerAddr", addr,
				  "clusterName", "CacheCluster", "haServerAddr", "h:1", "brokerId", "0", NULL),
		     0);
	cr_assert_eq(r->cmd.code, 0, "registration refused: %s", r->cmd.remark ? r->cmd.remark : "");
	client_reply_free(r);
	buf_free(&body);
}

Test(answer_cache, cluster_info_and_topic_list_are_built_once_per_change)
{
	start();
	struct client *c = harness_connect(&srv);
	cr_assert_not_null(c);
	register_broker(c, "b1", "10.8.0.1:10911", "first");

	double b0 = builds("lists");
	char *ci = pipelined(c, 106, NULL, NULL, 200);
	char *tl = pipelined(c, 206, NULL, NULL, 200);
	cr_expect_eq(builds("lists"), b0 + 2, "two lists, one build each");
	cr_expect_neq(strstr(ci, "\"b1\""), NULL, "%s", ci);
	cr_expect_eq(strstr(ci, "\"b2\""), NULL, "%s", ci);
	cr_expect_neq(strstr(tl, "\"first2\""), NULL, "%s", tl);
	free(ci), free(tl);

	/* the same registration again changes nothing: still cached */
	register_broker(c, "b1", "10.8.0.1:10911", "first");
	free(pipelined(c, 106, NULL, NULL, 5));
	cr_expect_eq(builds("lists"), b0 + 2, "a registration that changed nothing rebuilt a list");

	register_broker(c, "b2", "10.8.0.2:10911", "second");
	ci = pipelined(c, 106, NULL, NULL, 5);
	tl = pipelined(c, 206, NULL, NULL, 5);
	cr_expect_neq(strstr(ci, "\"b2\""), NULL, "the new broker shows at once: %s", ci);
	cr_expect_neq(strstr(tl, "\"second0\""), NULL, "the new topics show at once: %s", tl);
	cr_expect_eq(builds("lists"), b0 + 4);
	free(ci), free(tl);
	client_close(c);
}
