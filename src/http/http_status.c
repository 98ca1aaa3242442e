/* The status page (http_status.h): the embedded page files and the JSON
 * the page reads. Everything here only reads: route tables and options
 * under RCU, counters and stamps; topic lists are filtered, sorted and
 * paged here, so the browser never receives the whole table. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "rmqns/app.h"
#include "rmqns/config.h"
#include "rmqns/controller.h"
#include "rmqns/controller_port.h"
#include "rmqns/err.h"
#include "rmqns/http_status.h"
#include "rmqns/json_body.h"
#include "rmqns/kv.h"
#include "rmqns/net.h"
#include "rmqns/race.h"
#include "rmqns/regbody.h"
#include "rmqns/route.h"

#define JSON_TYPE "application/json"
#define TEXT_TYPE "text/plain; charset=utf-8"
/* The page loads only its own files and reads JSON from here and, for the
 * comparison with other nodes, from their HTTP ports. */
#define PAGE_HEADERS                                                                    \
	"Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self'; " \
	"img-src 'self' data:; connect-src 'self' http: https:; base-uri 'none'; "      \
	"form-action 'none'; frame-ancestors 'none'\r\n"                                \
	"X-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n"
#define API_HEADERS "X-Content-Type-Options: nosniff\r\n"
#define API_HEADERS_CORS API_HEADERS "Access-Control-Allow-Origin: *\r\n"
#define NAME_MAX_BYTES 512 /* a decoded query value: topic names are far shorter */
#define HEAP_PAGES_MAX 5000u /* /api/topics: offset + limit up to this keeps a heap */

static void status_text(struct http_response *rsp, int status, const char *text)
{
	rsp->status = status;
	rsp->content_type = TEXT_TYPE;
	rsp->body.len = 0;
	if (buf_append_str(&rsp->body, text) < 0)
		rsp->body.len = 0;
}

static void status_oom(struct http_response *rsp)
{
	status_text(rsp, 500, "out of memory\n");
}

/* ---- query strings ---- */

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int http_status_query_param(const char *query, const char *name, char *out, size_t outlen)
{
	size_t nlen = strlen(name);

	for (const char *p = query; p && *p;) {
		const char *end = strchr(p, '&');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len > nlen && strncmp(p, name, nlen) == 0 && p[nlen] == '=') {
			size_t o = 0;
			for (size_t i = nlen + 1; i < len; i++) {
				char c = p[i];
				if (c == '+') {
					c = ' ';
				} else if (c == '%') {
					int hi = i + 2 < len ? hex_value(p[i + 1]) : -1;
					int lo = hi >= 0 ? hex_value(p[i + 2]) : -1;
					if (lo < 0)
						return -1;
					c = (char)(hi * 16 + lo);
					i += 2;
				}
				if (c == '\0' || o + 1 >= outlen)
					return -1;
				out[o++] = c;
			}
			out[o] = '\0';
			return 1;
		}
		if (len == nlen && strncmp(p, name, nlen) == 0) {
			if (outlen == 0)
				return -1;
			out[0] = '\0';
			return 1;
		}
		p = end ? end + 1 : NULL;
	}
	return 0;
}

/* A non-negative integer parameter: def when absent, -1 when malformed. */
static long query_number(const char *query, const char *name, long def, long max)
{
	char v[24], *end;
	int rc = http_status_query_param(query, name, v, sizeof v);
	if (rc == 0 || (rc == 1 && !*v))
		return def;
	if (rc < 0 || !isdigit((unsigned char)v[0]))
		return -1;
	long n = strtol(v, &end, 10);
	if (*end)
		return -1;
	return n > max ? max : n;
}

/* ---- /api/brokers ---- */

struct broker_row {
	struct route_broker_view v; /* strings valid inside the read-side section */
	const char *role;
};

struct broker_rows {
	struct broker_row *r;
	size_t n, cap;
};

static int brokers_collect(void *arg, const struct route_broker_view *b)
{
	struct broker_rows *rows = arg;
	if (rows->n == rows->cap) {
		size_t nc = rows->cap ? rows->cap * 2 : 32;
		struct broker_row *x = realloc(rows->r, nc * sizeof *x);
		if (!x)
			return RMQNS_ENOMEM;
		rows->r = x;
		rows->cap = nc;
	}
	rows->r[rows->n++] = (struct broker_row){ .v = *b };
	return 0;
}

static int broker_row_cmp(const void *a, const void *b)
{
	const struct route_broker_view *x = &((const struct broker_row *)a)->v;
	const struct route_broker_view *y = &((const struct broker_row *)b)->v;
	int c = strcmp(x->cluster, y->cluster);
	if (!c)
		c = strcmp(x->name, y->name);
	if (!c)
		c = (x->id > y->id) - (x->id < y->id);
	return c ? c : strcmp(x->addr, y->addr);
}

/* Roles as a client's route shows them: with supportActingMaster, the
 * smallest id of an acting-master group with no master stands in for it. */
static void brokers_assign_roles(struct broker_rows *rows, bool support_acting_master)
{
	for (size_t i = 0; i < rows->n;) {
		size_t j = i;
		bool has_master = false;
		while (j < rows->n && strcmp(rows->r[j].v.cluster, rows->r[i].v.cluster) == 0 &&
		       strcmp(rows->r[j].v.name, rows->r[i].v.name) == 0) {
			has_master = has_master || rows->r[j].v.id == 0;
			j++;
		}
		bool acting_done = false;
		for (size_t k = i; k < j; k++) { /* sorted by id: the first slave is the smallest */
			const struct route_broker_view *v = &rows->r[k].v;
			if (v->id < 0 || !*v->name) {
				rows->r[k].role = "unknown";
			} else if (v->id == 0) {
				rows->r[k].role = "master";
			} else if (support_acting_master && v->acting_master && !has_master && !acting_done) {
				rows->r[k].role = "acting master";
				acting_done = true;
			} else {
				rows->r[k].role = "slave";
			}
		}
		i = j;
	}
}

void http_status_broker_begin(struct jw *w, const struct route_broker_view *b, const char *role)
{
	jw_obj_begin(w);
	jw_member_str(w, "cluster", b->cluster);
	jw_member_str(w, "brokerName", b->name);
	jw_member_int(w, "brokerId", b->id);
	jw_member_str(w, "role", role);
	jw_member_str(w, "address", b->addr);
}

static void broker_write(struct jw *w, const struct broker_row *row, uint64_t now)
{
	const struct route_broker_view *b = &row->v;
	http_status_broker_begin(w, b, row->role);
	jw_member_bool(w, "actingMasterEnabled", b->acting_master);
	jw_member_int(w, "lastHeartbeatAgeMillis", (int64_t)(now > b->last_ms ? now - b->last_ms : 0));
	jw_member_int(w, "heartbeatTimeoutMillis", b->timeout_ms);
	jw_member_int(w, "topicCount", (int64_t)b->topics);
	char dv[96];
	int n = data_version_format(&b->dv, dv, sizeof dv);
	jw_key(w, "dataVersion");
	jw_raw(w, dv, n > 0 ? (size_t)n : 0);
	jw_obj_end(w);
}

static int api_brokers(struct app *app, const struct http_request *req, struct buf *out)
{
	struct broker_rows rows = { NULL, 0, 0 };
	struct jw w;
	(void)req;

	state_read_lock();
	bool sam = config_current(app->config)->supportActingMaster;
	uint64_t now = route_now_ms();
	int rc = route_brokers(app->route, brokers_collect, &rows);
	if (rc == 0) {
		if (rows.n)
			qsort(rows.r, rows.n, sizeof *rows.r, broker_row_cmp);
		brokers_assign_roles(&rows, sam);
		jw_init(&w, out, JW_STANDARD);
		jw_obj_begin(&w);
		jw_member_bool(&w, "supportActingMaster", sam);
		jw_key(&w, "brokers");
		jw_arr_begin(&w);
		for (size_t i = 0; i < rows.n; i++)
			broker_write(&w, &rows.r[i], now);
		jw_arr_end(&w);
		jw_obj_end(&w);
		rc = jw_error(&w);
	}
	state_read_unlock();
	free(rows.r);
	return rc;
}

/* ---- /api/topics ---- */

/* The names that match, up to `keep` of the smallest while collecting
 * (a max-heap: the first page of 100,000 topics costs no full sort), or
 * every match when keep is 0. */
struct topic_pick {
	const char *q; /* "" = every topic */
	size_t keep;
	const char **v;
	size_t n, cap;
	uint64_t total, matched;
};

static void heap_sift_down(const char **h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, big = i;
		if (l < n && strcmp(h[l], h[big]) > 0)
			big = l;
		if (l + 1 < n && strcmp(h[l + 1], h[big]) > 0)
			big = l + 1;
		if (big == i)
			return;
		const char *t = h[i];
		h[i] = h[big];
		h[big] = t;
		i = big;
	}
}

static void heap_sift_up(const char **h, size_t i)
{
	while (i > 0 && strcmp(h[(i - 1) / 2], h[i]) < 0) {
		const char *t = h[i];
		h[i] = h[(i - 1) / 2];
		h[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static int topics_collect(void *arg, const char *name, uint64_t digest)
{
	struct topic_pick *tp = arg;
	(void)digest;
	tp->total++;
	if (*tp->q && !strcasestr(name, tp->q))
		return 0;
	tp->matched++;
	if (tp->keep && tp->n == tp->keep) {
		if (strcmp(name, tp->v[0]) < 0) { /* smaller than the largest kept */
			tp->v[0] = name;
			heap_sift_down(tp->v, tp->n, 0);
		}
		return 0;
	}
	if (tp->n == tp->cap) {
		size_t nc = tp->cap ? tp->cap * 2 : 256;
		const char **x = realloc(tp->v, nc * sizeof *x);
		if (!x)
			return RMQNS_ENOMEM;
		tp->v = x;
		tp->cap = nc;
	}
	tp->v[tp->n++] = name;
	if (tp->keep)
		heap_sift_up(tp->v, tp->n - 1);
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* {"total","matched","offset","limit","topics":[...]}: the page of the
 * sorted names that contain q (any case). */
static int api_topics(struct app *app, const struct http_request *req, struct buf *out)
{
	char q[NAME_MAX_BYTES];
	struct topic_pick tp = { .q = q };
	long offset = query_number(req->query, "offset", 0, INT32_MAX);
	long limit = query_number(req->query, "limit", HTTP_STATUS_PAGE_DEFAULT, HTTP_STATUS_PAGE_MAX);
	int qrc = http_status_query_param(req->query, "q", q, sizeof q);
	struct jw w;

	if (offset < 0 || limit < 0 || qrc < 0)
		return RMQNS_EINVAL;
	if (qrc == 0)
		q[0] = '\0';
	/* early pages keep a heap of offset + limit names; later ones sort all */
	if ((size_t)offset + (size_t)limit <= HEAP_PAGES_MAX)
		tp.keep = (size_t)offset + (size_t)limit;
	state_read_lock();
	int rc = route_topic_names(app->route, topics_collect, &tp);
	if (rc == 0) {
		if (tp.n)
			qsort(tp.v, tp.n, sizeof *tp.v, name_cmp);
		jw_init(&w, out, JW_STANDARD);
		jw_obj_begin(&w);
		jw_member_int(&w, "total", (int64_t)tp.total);
		jw_member_int(&w, "matched", (int64_t)tp.matched);
		jw_member_int(&w, "offset", offset);
		jw_member_int(&w, "limit", limit);
		jw_key(&w, "topics");
		jw_arr_begin(&w);
		for (size_t i = (size_t)offset; i < tp.n && i < (size_t)offset + (size_t)limit; i++)
			jw_str(&w, tp.v[i]);
		jw_arr_end(&w);
		jw_obj_end(&w);
		rc = jw_error(&w);
	}
	state_read_unlock();
	free(tp.v);
	return rc;
}

/* ---- /api/topic ---- */

/* The TopicRouteData a client asking in standard JSON gets (acting-master
 * rewrite and orderTopicConf as the options say); 404 when none. */
static void api_topic(struct app *app, const struct http_request *req, struct http_response *rsp)
{
	char name[NAME_MAX_BYTES];
	struct buf scratch = BUF_INIT;
	const uint8_t *body = NULL;
	size_t len = 0;

	int qrc = http_status_query_param(req->query, "name", name, sizeof name);
	if (qrc <= 0) {
		status_text(rsp, 400, "name=TOPIC expected\n");
		return;
	}
	struct route_query q = { .topic = name, .form = JW_STANDARD };
	state_read_lock();
	const struct options *o = config_current(app->config);
	q.support_acting_master = o->supportActingMaster;
	if (o->orderMessageEnable && app->kv)
		q.order_conf = kv_get(app->kv, KV_NAMESPACE_ORDER_TOPIC_CONFIG, name);
	int rc = route_topic_body(app->route, &q, &body, &len, &scratch);
	if (rc == 0 && buf_append(&rsp->body, body, len) < 0)
		rc = RMQNS_ENOMEM;
	state_read_unlock();
	buf_free(&scratch);
	if (rc == RMQNS_ENOTFOUND) {
		rsp->status = 404;
		rsp->body.len = 0;
		if (buf_append_str(&rsp->body, "{\"error\":\"no route for this topic\"}") < 0)
			status_oom(rsp);
	} else if (rc < 0) {
		status_oom(rsp);
	}
}

/* ---- /api/node ---- */

static bool key_looks_secret(const char *k, size_t n)
{
	static const char *const words[] = { "password", "secret", "token", "credential" };
	char low[128];
	if (n >= sizeof low)
		n = sizeof low - 1;
	for (size_t i = 0; i < n; i++)
		low[i] = (char)tolower((unsigned char)k[i]);
	low[n] = '\0';
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		if (strstr(low, words[i]))
			return true;
	return false;
}

/* The options in force as [{"key","value"}]; secrets (the table's and any
 * other key of the file that names one) masked. Inside rcu_read_lock. */
static int node_config(struct app *app, struct jw *w)
{
	struct buf text = BUF_INIT;
	int rc = config_properties_text(app->config, &text);
	jw_arr_begin(w);
	for (size_t i = 0; rc == 0 && i < text.len;) {
		const char *line = (const char *)text.data + i;
		const char *nl = memchr(line, '\n', text.len - i);
		size_t len = nl ? (size_t)(nl - line) : text.len - i;
		const char *eq = memchr(line, '=', len);
		i += len + 1;
		if (!eq)
			continue;
		size_t klen = (size_t)(eq - line);
		jw_obj_begin(w);
		jw_key(w, "key");
		jw_strn(w, line, klen);
		jw_key(w, "value");
		if (key_looks_secret(line, klen) && eq + 1 < line + len)
			jw_str(w, "******");
		else
			jw_strn(w, eq + 1, len - klen - 1);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	buf_free(&text);
	return rc;
}

struct topic_digest {
	uint64_t n, sum;
};

static int digest_add(void *arg, const char *name, uint64_t digest)
{
	struct topic_digest *d = arg;
	(void)name;
	d->n++;
	d->sum += digest;
	return 0;
}

static uint64_t node_rss_bytes(void)
{
	unsigned long size = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &rss) != 2)
		rss = 0;
	fclose(f);
	long page = sysconf(_SC_PAGESIZE);
	return (uint64_t)rss * (uint64_t)(page > 0 ? page : 4096);
}

/* The peers option split at commas, blanks dropped. */
static void node_peers(struct jw *w, const char *peers)
{
	jw_arr_begin(w);
	for (const char *p = peers; p && *p;) {
		while (*p == ',' || *p == ' ' || *p == ';')
			p++;
		size_t n = strcspn(p, ", ;");
		if (n)
			jw_strn(w, p, n);
		p += n;
	}
	jw_arr_end(w);
}

static int api_node(struct app *app, const struct http_request *req, struct buf *out)
{
	struct route_stats st;
	struct topic_digest d = { 0, 0 };
	size_t kv_ns = 0, kv_keys = 0;
	char hex[24];
	struct jw w;
	(void)req;

	jw_init(&w, out, JW_STANDARD);
	state_read_lock();
	uint64_t now = route_now_ms();
	route_stats(app->route, &st);
	int rc = route_topic_names(app->route, digest_add, &d);
	if (app->kv)
		kv_count(app->kv, &kv_ns, &kv_keys);
	const struct options *o = config_current(app->config);
	jw_obj_begin(&w);
	jw_member_str(&w, "version", RMQNS_VERSION);
	jw_member_int(&w, "uptimeMillis", (int64_t)route_uptime_ms(app->route, now));
	jw_member_int(&w, "listenPort", app->server ? server_port(app->server) : o->listenPort);
	jw_member_int(&w, "connections", app->server ? server_conn_count(app->server) : 0);
	jw_member_int(&w, "connectionMemoryBytes", app->server ? server_held_bytes(app->server) : 0);
	jw_member_int(&w, "connectionMemoryBudgetBytes", app->server ? (int64_t)server_memory_budget(app->server) : 0);
	jw_member_int(&w, "rssBytes", (int64_t)node_rss_bytes());
	jw_member_int(&w, "brokersLive", st.live);
	jw_member_int(&w, "brokerGroups", st.groups);
	jw_member_int(&w, "topics", (int64_t)d.n);
	/* equal on two nodes when they route every topic alike */
	snprintf(hex, sizeof hex, "%016llx", (unsigned long long)d.sum);
	jw_member_str(&w, "topicsDigest", hex);
	jw_member_int(&w, "queueEntries", (int64_t)st.queue_entries);
	jw_member_int(&w, "kvNamespaces", (int64_t)kv_ns);
	jw_member_int(&w, "kvKeys", (int64_t)kv_keys);
	jw_key(&w, "peers");
	node_peers(&w, o->statusPeers);
	/* the embedded controller's view (as /controller), or null */
	jw_key(&w, "controller");
	struct ctl_node *ctl = ctl_port_node(app->controller);
	struct buf view = BUF_INIT;
	if (ctl && ctl_node_view(ctl, &view, NULL) == 0 && view.len)
		jw_raw(&w, (const char *)view.data, view.len);
	else
		jw_null(&w);
	buf_free(&view);
	jw_key(&w, "config");
	if (rc == 0)
		rc = node_config(app, &w);
	jw_obj_end(&w);
	state_read_unlock();
	return rc < 0 ? rc : jw_error(&w);
}

/* ---- /api/kv ---- */

static int api_kv(struct app *app, const struct http_request *req, struct buf *out)
{
	(void)req;
	if (!app->kv)
		return buf_append_str(out, "{\"configTable\":{}}");
	state_read_lock();
	int rc = kv_file_json(app->kv, out);
	state_read_unlock();
	return rc;
}

/* ---- dispatch ---- */

typedef int (*api_fn)(struct app *app, const struct http_request *req, struct buf *out);

static const struct {
	const char *path;
	api_fn fn;
} api_routes[] = {
	{ "/api/node", api_node },
	{ "/api/brokers", api_brokers },
	{ "/api/topics", api_topics },
	{ "/api/kv", api_kv },
};

/* Whether origin ("scheme://host:port") is one of the peers: an entry
 * "host:port" stands for both schemes, "https://host:port" for itself. */
static bool origin_is_peer(const char *peers, const char *origin)
{
	const char *bare = strstr(origin, "://");
	bare = bare ? bare + 3 : origin;
	for (const char *p = peers; p && *p;) {
		p += strspn(p, ", ;");
		size_t n = strcspn(p, ", ;");
		const char *scheme_end = strstr(p, "://");
		/* an entry with a scheme of its own matches the whole origin */
		const char *want = scheme_end && (size_t)(scheme_end - p) < n ? origin : bare;
		if (n && strlen(want) == n && strncasecmp(want, p, n) == 0)
			return true;
		p += n;
	}
	return false;
}

/* Cross-origin reads only for a node told of its peers (statusPeers): the
 * other nodes' pages read its JSON from the browser. Behind a login the
 * browser must send its credentials for this origin, which CORS allows
 * only to an origin named in the answer: a peer's, never any site's. The
 * buffer is the HTTP thread's, copied into the answer before the next. */
static const char *api_headers(struct app *app, const struct http_request *req, bool login_on)
{
	static char with_credentials[400];
	state_read_lock();
	const char *peers = config_current(app->config)->statusPeers;
	bool cors = peers && *peers;
	bool peer = cors && login_on && req->origin && strlen(req->origin) < 256 &&
		    !strpbrk(req->origin, "\r\n") && origin_is_peer(peers, req->origin);
	state_read_unlock();
	if (!cors || (login_on && !peer))
		return API_HEADERS;
	if (!login_on)
		return API_HEADERS_CORS;
	snprintf(with_credentials, sizeof with_credentials,
		 API_HEADERS "Access-Control-Allow-Origin: %s\r\n"
			     "Access-Control-Allow-Credentials: true\r\nVary: Origin\r\n",
		 req->origin);
	return with_credentials;
}

void http_status_serve(struct app *app, const struct http_request *req, struct http_response *rsp,
		       bool login_on)
{
	for (size_t i = 0; i < http_status_asset_count; i++) {
		const struct http_status_asset *a = &http_status_assets[i];
		if (strcmp(a->path, req->path) != 0)
			continue;
		rsp->content_type = a->content_type;
		rsp->headers = PAGE_HEADERS;
		if (buf_append(&rsp->body, a->data, a->len) < 0)
			status_oom(rsp);
		return;
	}
	if (strncmp(req->path, "/api/", 5) != 0) {
		status_text(rsp, 404, "not found\n");
		return;
	}
	rsp->headers = api_headers(app, req, login_on);
	rsp->content_type = JSON_TYPE;
	if (strcmp(req->path, "/api/topic") == 0) {
		api_topic(app, req, rsp);
		return;
	}
	for (size_t i = 0; i < sizeof api_routes / sizeof api_routes[0]; i++) {
		if (strcmp(api_routes[i].path, req->path) != 0)
			continue;
		int rc = api_routes[i].fn(app, req, &rsp->body);
		if (rc == RMQNS_EINVAL)
			status_text(rsp, 400, "bad query parameter\n");
		else if (rc < 0 || buf_putc(&rsp->body, '\n') < 0)
			status_oom(rsp);
		return;
	}
	status_text(rsp, 404, "not found\n");
}
