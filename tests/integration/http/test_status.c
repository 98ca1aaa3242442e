/* The status page's server side against the real binary: the embedded
 * files and their headers, /api/topics paging (both the heap and the full
 * sort) and filtering, odd topic names escaped and found again,
 * /api/topic byte for byte what a client's route query gets, broker roles
 * (master, slave, acting master), /api/node with secrets masked and the
 * peers option, cross-origin reads only with statusPeers, and /api/kv. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "harness.h"
#include "harness_criterion.h"
#include "rmqns/buf.h"
#include "rmqns/client.h"
#include "rmqns/http_status.h"
#include "rmqns/remoting.h"

static struct harness_server srv;
static int http_port_no;
static char conf_dir[256];

static void status_fini(void)
{
	cr_expect_eq(harness_cleanup(&srv), 0, "the server did not stop cleanly");
	if (conf_dir[0])
		harness_rmdir(conf_dir);
}

TestSuite(status, .fini = status_fini, .timeout = 180);

/* Starts the server with the HTTP port on and extra arguments. */
static void start(const char *const *extra)
{
	static char port_arg[32];
	const char *args[16];
	size_t n = 0;

	http_port_no = harness_free_port();
	cr_assert_gt(http_port_no, 0, "no free loopback port");
	snprintf(port_arg, sizeof port_arg, "--httpPort=%d", http_port_no);
	args[n++] = port_arg;
	for (; extra && *extra && n < 15; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	cr_assert_eq(harness_start(&srv, args), 0, "the server did not start");
}

struct answer {
	int status;
	char *raw;        /* head and body */
	const char *body;
};

static struct answer get(const char *path)
{
	struct answer a = { 0, NULL, NULL };
	a.status = harness_http_get(http_port_no, path, &a.raw);
	cr_assert_gt(a.status, 0, "GET %s: no answer", path);
	char *sep = strstr(a.raw, "\r\n\r\n");
	cr_assert_not_null(sep);
	a.body = sep + 4;
	return a;
}

static json_t *get_json(const char *path)
{
	struct answer a = get(path);
	cr_assert_eq(a.status, 200, "GET %s: %d %s", path, a.status, a.body);
	cr_assert_not_null(strstr(a.raw, "Content-Type: application/json\r\n"));
	json_error_t err;
	json_t *j = json_loads(a.body, 0, &err);
	cr_assert_not_null(j, "GET %s: not JSON (%s): %s", path, err.text, a.body);
	free(a.raw);
	return j;
}

/* REGISTER_BROKER with the given body; code 0 expected. */
static void register_body(struct client *c, const char *cluster, const char *name,
			  const char *addr, const char *id, const char *acting, const char *body)
{
	struct client_reply *r = NULL;
	cr_assert_eq(harness_call(c, 103, body, &r, "brokerName", name, "brokerAddr", addr,
				  "clusterName", cluster, "haServerAddr", addr, "brokerId", id,
				  "enableActingMaster", acting, NULL),
		     0);
	cr_assert_eq(r->cmd.code, 0, "registration refused: %s", r->cmd.remark ? r->cmd.remark : "");
	client_reply_free(r);
}

/* A registration body of the given topic names (each 4/4 queues, perm 6). */
static char *names_body(const char *const *names, size_t n)
{
	json_t *table = json_object();
	for (size_t i = 0; i < n; i++)
		json_object_set_new(table, names[i],
				    json_pack("{s:i,s:i,s:s,s:i}", "perm", 6, "readQueueNums", 4,
					      "topicName", names[i], "writeQueueNums", 4));
	json_t *body = json_pack("{s:[],s:{s:{s:i,s:i,s:i},s:o}}", "filterServerList",
				 "topicConfigSerializeWrapper", "dataVersion", "counter", 7,
				 "stateVersion", 0, "timestamp", 1, "topicConfigTable", table);
	char *s = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	cr_assert_not_null(s);
	return s;
}

static void register_many(struct client *c, const char *name, const char *addr, const char *prefix,
			  int n)
{
	struct buf body = BUF_INIT;
	harness_topics_body(&body, prefix, n, 4);
	register_body(c, "StatusCluster", name, addr, "0", "false", (const char *)body.data);
	buf_free(&body);
}

/* Percent-encodes every byte outside [A-Za-z0-9-_.~]. */
static void url_encode(const char *s, char *out, size_t n)
{
	size_t o = 0;
	for (; *s && o + 4 < n; s++) {
		unsigned char ch = (unsigned char)*s;
		if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
		    strchr("-_.~", ch))
			out[o++] = (char)ch;
		else
			o += (size_t)snprintf(out + o, n - o, "%%%02X", ch);
	}
	out[o] = '\0';
}

/* ---- query parameters ---- */

Test(status, query_params_decode)
{
	char v[8];
	cr_assert_eq(http_status_query_param("a=1&q=x%41+y", "q", v, sizeof v), 1);
	cr_assert_str_eq(v, "xA y");
	cr_assert_eq(http_status_query_param("qq=1&q=", "q", v, sizeof v), 1);
	cr_assert_str_eq(v, "");
	cr_assert_eq(http_status_query_param("q", "q", v, sizeof v), 1);
	cr_assert_eq(http_status_query_param("qq=1", "q", v, sizeof v), 0);
	cr_assert_eq(http_status_query_param("", "q", v, sizeof v), 0);
	cr_assert_eq(http_status_query_param("q=%4", "q", v, sizeof v), -1, "short escape");
	cr_assert_eq(http_status_query_param("q=%zz", "q", v, sizeof v), -1, "bad hex");
	cr_assert_eq(http_status_query_param("q=a%00b", "q", v, sizeof v), -1, "NUL");
	cr_assert_eq(http_status_query_param("q=12345678", "q", v, sizeof v), -1, "too long");
	cr_assert_eq(http_status_query_param("q=1234567", "q", v, sizeof v), 1);
}

/* ---- the page ---- */

Test(status, page_files_and_headers)
{
	start(NULL);
	struct answer a = get("/");
	cr_assert_eq(a.status, 200);
	cr_assert_not_null(strstr(a.raw, "Content-Type: text/html; charset=utf-8\r\n"));
	cr_assert_not_null(strstr(a.raw, "Content-Security-Policy: default-src 'none'; script-src 'self'"));
	cr_assert_not_null(strstr(a.raw, "X-Content-Type-Options: nosniff\r\n"));
	cr_assert_not_null(strstr(a.body, "<!doctype html>"));
	cr_assert_not_null(strstr(a.body, "<script src=\"/status.js\" defer></script>"));
	free(a.raw);

	size_t total = 0;
	for (size_t i = 0; i < http_status_asset_count; i++) {
		a = get(http_status_assets[i].path);
		cr_assert_eq(a.status, 200, "%s", http_status_assets[i].path);
		cr_assert_eq(strlen(a.body), http_status_assets[i].len, "%s whole", http_status_assets[i].path);
		total += http_status_assets[i].len;
		free(a.raw);
	}
	cr_assert_lt(total, 200u * 1024, "the page is %zu bytes", total);
	a = get("/status.js");
	cr_assert_not_null(strstr(a.raw, "Content-Type: text/javascript; charset=utf-8\r\n"));
	free(a.raw);
	a = get("/status.css");
	cr_assert_not_null(strstr(a.raw, "Content-Type: text/css; charset=utf-8\r\n"));
	free(a.raw);

	/* the API: JSON, no cross-origin reads without statusPeers */
	a = get("/api/brokers");
	cr_assert_eq(a.status, 200);
	cr_assert_null(strstr(a.raw, "Access-Control-Allow-Origin"));
	free(a.raw);
	a = get("/api/nothing");
	cr_assert_eq(a.status, 404);
	free(a.raw);
	a = get("/nothing.js");
	cr_assert_eq(a.status, 404);
	free(a.raw);
	a = get("/metrics"); /* the endpoints' own routes still come first */
	cr_assert_eq(a.status, 200);
	cr_assert_not_null(strstr(a.body, "rmqns_build_info"));
	free(a.raw);
}

/* ---- /api/topics ---- */

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of one page, after checking its counts. */
static size_t page_names(const char *path, long total, long matched, char **out, size_t cap)
{
	json_t *j = get_json(path);
	cr_assert_eq(json_integer_value(json_object_get(j, "total")), total, "%s total", path);
	cr_assert_eq(json_integer_value(json_object_get(j, "matched")), matched, "%s matched", path);
	json_t *list = json_object_get(j, "topics");
	size_t n = json_array_size(list);
	cr_assert_leq(n, cap);
	for (size_t i = 0; i < n; i++)
		out[i] = strdup(json_string_value(json_array_get(list, i)));
	json_decref(j);
	return n;
}

Test(status, topics_paged_sorted_and_filtered)
{
	enum { N = 6000 };
	start(NULL);
	struct client *c = harness_connect_or_fail(&srv);
	register_many(c, "pg-broker", "10.8.0.1:10911", "pg", N);

	/* every page in turn: 500 at most, sorted, the union is every topic,
	 * across the heap (offset + limit <= 5000) and the full sort */
	char **all = calloc(N + 500, sizeof *all);
	size_t got = 0;
	char path[128];
	for (long off = 0; off < N + 500; off += 500) {
		snprintf(path, sizeof path, "/api/topics?offset=%ld&limit=9999", off);
		size_t n = page_names(path, N, N, all + got, 500);
		cr_assert_eq(n, off < N ? 500u : 0u, "page at %ld", off);
		got += n;
	}
	cr_assert_eq(got, (size_t)N);
	for (size_t i = 1; i < got; i++)
		cr_assert_lt(strcmp(all[i - 1], all[i]), 0, "sorted and distinct at %zu: %s %s", i,
			     all[i - 1], all[i]);
	char **want = calloc(N, sizeof *want);
	for (int i = 0; i < N; i++)
		cr_assert_gt(asprintf(&want[i], "pg%d", i), 0);
	qsort(want, N, sizeof *want, str_cmp);
	for (size_t i = 0; i < got; i++)
		cr_assert_str_eq(all[i], want[i]);

	/* the default page is 50; an odd page straddling the two methods */
	char *page[500];
	cr_assert_eq(page_names("/api/topics", N, N, page, 500), 50u);
	for (size_t i = 0; i < 50; i++) {
		cr_assert_str_eq(page[i], want[i]);
		free(page[i]);
	}
	cr_assert_eq(page_names("/api/topics?offset=4990&limit=20", N, N, page, 500), 20u);
	for (size_t i = 0; i < 20; i++) {
		cr_assert_str_eq(page[i], want[4990 + i]);
		free(page[i]);
	}

	/* a filter: any case, contained anywhere, counted before paging */
	long matched = 0;
	for (int i = 0; i < N; i++)
		matched += strstr(want[i], "g11") != NULL;
	size_t n = page_names("/api/topics?q=G11&limit=500", N, matched, page, 500);
	cr_assert_eq(n, (size_t)matched < 500 ? (size_t)matched : 500u);
	for (size_t i = 0; i < n; i++) {
		cr_assert_not_null(strstr(page[i], "g11"), "%s", page[i]);
		free(page[i]);
	}
	cr_assert_eq(page_names("/api/topics?q=nothing-like-it", N, 0, page, 500), 0u);
	cr_assert_eq(page_names("/api/topics?q=pg5999&limit=0", N, 1, page, 500), 0u);

	/* malformed numbers and escapes are refused */
	const char *bad[] = { "/api/topics?offset=x", "/api/topics?limit=-1", "/api/topics?q=%G0" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct answer a = get(bad[i]);
		cr_assert_eq(a.status, 400, "%s: %d", bad[i], a.status);
		free(a.raw);
	}
	for (int i = 0; i < N; i++) {
		free(all[i]);
		free(want[i]);
	}
	free(all);
	free(want);
	client_close(c);
}

/* ---- odd names, /api/topic ---- */

static const char *const odd_names[] = {
	"quote\"d", "back\\slash", "tab\there", "<script>alert(1)</script>", "\xc3\xbc" "n\xc3\xaf" "c\xc3\xb6" "de",
	"sp ace", "amp&eq=", "plus+sign", "pct%41", "slash/and?q", "emoji\xf0\x9f\x98\x80",
};
#define ODD_COUNT (sizeof odd_names / sizeof odd_names[0])

Test(status, odd_names_escaped_and_found)
{
	start(NULL);
	struct client *c = harness_connect_or_fail(&srv);
	char *body = names_body(odd_names, ODD_COUNT);
	register_body(c, "StatusCluster", "odd-broker", "10.8.0.2:10911", "0", "false", body);
	free(body);

	char enc[256], path[320];
	for (size_t i = 0; i < ODD_COUNT; i++) {
		/* found by its whole name, listed exactly */
		url_encode(odd_names[i], enc, sizeof enc);
		snprintf(path, sizeof path, "/api/topics?q=%s", enc);
		json_t *j = get_json(path);
		json_t *list = json_object_get(j, "topics");
		bool found = false;
		for (size_t k = 0; k < json_array_size(list); k++)
			found = found || strcmp(json_string_value(json_array_get(list, k)), odd_names[i]) == 0;
		cr_assert(found, "%s not listed", odd_names[i]);
		json_decref(j);

		/* its route is what a client's GET_ROUTEINFO_BY_TOPIC gets */
		snprintf(path, sizeof path, "/api/topic?name=%s", enc);
		struct answer a = get(path);
		cr_assert_eq(a.status, 200, "%s: %d", odd_names[i], a.status);
		struct client_reply *r = NULL;
		cr_assert_eq(harness_call(c, 105, NULL, &r, "topic", odd_names[i], NULL), 0);
		cr_assert_eq(r->cmd.code, 0);
		cr_assert_eq(strlen(a.body), r->cmd.body_len, "%s: %s", odd_names[i], a.body);
		cr_assert_eq(memcmp(a.body, r->cmd.body, r->cmd.body_len), 0, "%s: %s", odd_names[i], a.body);
		client_reply_free(r);
		json_error_t err;
		json_t *route = json_loads(a.body, 0, &err);
		cr_assert_not_null(route, "%s: %s", odd_names[i], err.text);
		json_t *q = json_array_get(json_object_get(route, "queueDatas"), 0);
		cr_assert_eq(json_integer_value(json_object_get(q, "readQueueNums")), 4);
		json_decref(route);
		free(a.raw);
	}
	struct answer a = get("/api/topic?name=no-such-topic");
	cr_assert_eq(a.status, 404);
	json_t *none = json_loads(a.body, 0, NULL);
	cr_assert_not_null(none);
	json_decref(none);
	free(a.raw);
	a = get("/api/topic");
	cr_assert_eq(a.status, 400);
	free(a.raw);
	client_close(c);
}

/* ---- /api/brokers ---- */

static json_t *broker_at(json_t *list, const char *addr)
{
	for (size_t i = 0; i < json_array_size(list); i++) {
		json_t *b = json_array_get(list, i);
		if (strcmp(json_string_value(json_object_get(b, "address")), addr) == 0)
			return b;
	}
	cr_assert_fail("no broker %s", addr);
	return NULL;
}

Test(status, brokers_with_roles)
{
	const char *args[] = { "--supportActingMaster=true", NULL };
	start(args);
	struct client *c = harness_connect_or_fail(&srv);
	struct buf body = BUF_INIT;
	harness_topics_body(&body, "role", 3, 2);
	const char *b = (const char *)body.data;
	register_body(c, "C1", "set-a", "10.8.1.1:10911", "0", "false", b);
	register_body(c, "C1", "set-a", "10.8.1.2:10911", "1", "false", b);
	register_body(c, "C1", "set-b", "10.8.1.3:10911", "2", "true", b);
	register_body(c, "C1", "set-b", "10.8.1.4:10911", "5", "true", b);
	register_body(c, "C0", "set-c", "10.8.1.5:10911", "1", "false", b);
	buf_free(&body);

	json_t *j = get_json("/api/brokers");
	cr_assert(json_is_true(json_object_get(j, "supportActingMaster")));
	json_t *list = json_object_get(j, "brokers");
	cr_assert_eq(json_array_size(list), 5);
	const char *order[] = { "10.8.1.5:10911", "10.8.1.1:10911", "10.8.1.2:10911", "10.8.1.3:10911",
				"10.8.1.4:10911" };
	for (size_t i = 0; i < 5; i++) /* by cluster, set, id */
		cr_assert_str_eq(json_string_value(json_object_get(json_array_get(list, i), "address")),
				 order[i]);
	const char *role[][2] = { { "10.8.1.1:10911", "master" }, { "10.8.1.2:10911", "slave" },
				  { "10.8.1.3:10911", "acting master" }, { "10.8.1.4:10911", "slave" },
				  { "10.8.1.5:10911", "slave" } };
	for (size_t i = 0; i < 5; i++)
		cr_assert_str_eq(json_string_value(json_object_get(broker_at(list, role[i][0]), "role")),
				 role[i][1], "%s", role[i][0]);
	json_t *one = broker_at(list, "10.8.1.1:10911");
	cr_assert_eq(json_integer_value(json_object_get(one, "topicCount")), 3);
	cr_assert_eq(json_integer_value(json_object_get(one, "heartbeatTimeoutMillis")), 120000);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(one, "dataVersion"), "counter")), 1);
	json_decref(j);
	client_close(c);
}

/* ---- /api/node, /api/kv ---- */

Test(status, node_masks_secrets_and_lists_peers)
{
	cr_assert_eq(harness_mkdtemp(conf_dir, sizeof conf_dir, "rmqns-status-conf"), 0);
	char *conf = harness_path_in(conf_dir, "rmqns.conf");
	FILE *f = fopen(conf, "w");
	cr_assert_not_null(f);
	fprintf(f, "statusPeers=127.0.0.1:19001, 127.0.0.1:19002\n"
		   "tls.server.keyPassword=hunter2\n"
		   "my.db.password=sesame\n"
		   "plain.extra=visible\n");
	fclose(f);
	const char *args[] = { "-c", conf, NULL };
	start(args);

	struct answer a = get("/api/node");
	cr_assert_eq(a.status, 200);
	cr_assert_not_null(strstr(a.raw, "Access-Control-Allow-Origin: *\r\n"), "statusPeers set: CORS");
	cr_assert_null(strstr(a.body, "hunter2"));
	cr_assert_null(strstr(a.body, "sesame"));
	json_t *j = json_loads(a.body, 0, NULL);
	cr_assert_not_null(j);
	free(a.raw);
	cr_assert_str_eq(json_string_value(json_object_get(j, "version")), "0.1.0");
	cr_assert_eq(json_integer_value(json_object_get(j, "listenPort")), srv.port);
	cr_assert(json_is_null(json_object_get(j, "controller")));
	json_t *peers = json_object_get(j, "peers");
	cr_assert_eq(json_array_size(peers), 2);
	cr_assert_str_eq(json_string_value(json_array_get(peers, 1)), "127.0.0.1:19002");
	const char *seen[][2] = { { "tls.server.keyPassword", "******" }, { "my.db.password", "******" },
				  { "plain.extra", "visible" }, { "statusPeers", "127.0.0.1:19001, 127.0.0.1:19002" } };
	json_t *cfg = json_object_get(j, "config");
	for (size_t k = 0; k < sizeof seen / sizeof seen[0]; k++) {
		const char *v = NULL;
		for (size_t i = 0; i < json_array_size(cfg); i++)
			if (strcmp(json_string_value(json_object_get(json_array_get(cfg, i), "key")), seen[k][0]) == 0)
				v = json_string_value(json_object_get(json_array_get(cfg, i), "value"));
		cr_assert_not_null(v, "%s listed", seen[k][0]);
		cr_assert_str_eq(v, seen[k][1]);
	}
	json_decref(j);

	/* topics and their digest follow the routes */
	struct client *c = harness_connect_or_fail(&srv);
	j = get_json("/api/node");
	cr_assert_eq(json_integer_value(json_object_get(j, "topics")), 0);
	char *empty = strdup(json_string_value(json_object_get(j, "topicsDigest")));
	json_decref(j);
	register_many(c, "d-broker", "10.8.2.1:10911", "dg", 10);
	j = get_json("/api/node");
	cr_assert_eq(json_integer_value(json_object_get(j, "topics")), 10);
	cr_assert_str_neq(json_string_value(json_object_get(j, "topicsDigest")), empty);
	json_decref(j);
	free(empty);

	/* KV: what PUT_KV_CONFIG wrote */
	struct client_reply *r = NULL;
	cr_assert_eq(harness_call(c, 100, NULL, &r, "namespace", "NS\"1", "key", "k<1>", "value", "v&1", NULL), 0);
	cr_assert_eq(r->cmd.code, 0);
	client_reply_free(r);
	j = get_json("/api/kv");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(j, "configTable"), "NS\"1"), "k<1>")), "v&1");
	json_decref(j);
	client_close(c);
	free(conf);
}
