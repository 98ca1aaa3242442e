/* clusterList and brokers: the GET_BROKER_CLUSTER_INFO rows as mqadmin's
 * table, and with each broker's role. A role other than master or slave
 * (acting master) is only claimed when a route shows it. When the server
 * has its HTTP endpoint on, brokers adds what only that endpoint tells:
 * each broker's heartbeat age, its timeout and its topic count. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "rmqns/json_body.h"
#include "rmqns/json_tree.h"
#include "clusterinfo.h"
#include "ops.h"
#include "routes.h"

static int read_rows(struct admin_ctx *ctx, struct broker_rows *rows, const struct target **who)
{
	struct remoting_cmd req;
	json_t *info;

	target_request_init(&req, REQ_GET_BROKER_CLUSTER_INFO);
	int ex = ops_read_json(ctx, &req, &info, who);
	if (ex != ADMIN_EXIT_OK)
		return ex;
	if (broker_rows_build(info, rows) < 0) {
		broker_rows_free(rows);
		admin_error("%s: the answer is not a ClusterInfo", (*who)->name);
		return ADMIN_EXIT_BAD_ANSWER;
	}
	return ADMIN_EXIT_OK;
}

int cmd_cluster_list(struct admin_ctx *ctx)
{
	struct broker_rows rows;
	const struct target *who;
	int ex = read_rows(ctx, &rows, &who);

	if (ex != ADMIN_EXIT_OK)
		return ex;
	if (ctx->json) {
		json_t *arr = json_array();
		for (size_t i = 0; i < rows.n; i++)
			json_array_append_new(arr, json_pack("{s:s, s:s, s:I, s:s}",
				"cluster", rows.v[i].cluster, "brokerName", rows.v[i].name,
				"brokerId", (json_int_t)rows.v[i].id, "addr", rows.v[i].addr));
		ex = ops_print_json(json_pack("{s:s, s:o}", "server", who->name, "brokers", arr));
	} else {
		printf("%-16s  %-22s  %-4s  %s\n", "#Cluster Name", "#Broker Name", "#BID", "#Addr");
		for (size_t i = 0; i < rows.n; i++)
			printf("%-16s  %-22s  %-4lld  %s\n", rows.v[i].cluster, rows.v[i].name,
			       (long long)rows.v[i].id, rows.v[i].addr);
	}
	broker_rows_free(&rows);
	return ex;
}

/* ---- brokers ---- */

/* What the HTTP endpoint's /brokers adds to a row. */
struct broker_extra {
	bool known; /* the endpoint listed this broker */
	long long age_ms, timeout_ms, topics;
};

/* The columns of `brokers`, in order. A new column is one more entry here
 * plus its member in the JSON row; http columns show only when the
 * server's HTTP endpoint answered. */
struct broker_column {
	const char *title;
	int width;
	bool http;
	void (*cell)(const struct broker_row *row, const struct broker_extra *x, char *out, size_t n);
};

static void cell_cluster(const struct broker_row *r, const struct broker_extra *x, char *o, size_t n) { (void)x; snprintf(o, n, "%s", r->cluster); }
static void cell_name(const struct broker_row *r, const struct broker_extra *x, char *o, size_t n) { (void)x; snprintf(o, n, "%s", r->name); }
static void cell_id(const struct broker_row *r, const struct broker_extra *x, char *o, size_t n) { (void)x; snprintf(o, n, "%lld", (long long)r->id); }
static void cell_role(const struct broker_row *r, const struct broker_extra *x, char *o, size_t n) { (void)x; snprintf(o, n, "%s", broker_role_name(r->role)); }
static void cell_addr(const struct broker_row *r, const struct broker_extra *x, char *o, size_t n) { (void)x; snprintf(o, n, "%s", r->addr); }

static void cell_number(bool known, long long v, char *o, size_t n)
{
	if (known)
		snprintf(o, n, "%lld", v);
	else
		snprintf(o, n, "-");
}

static void cell_age(const struct broker_row *r, const struct broker_extra *x, char *o, size_t n) { (void)r; cell_number(x->known, x->age_ms, o, n); }
static void cell_timeout(const struct broker_row *r, const struct broker_extra *x, char *o, size_t n) { (void)r; cell_number(x->known, x->timeout_ms, o, n); }
static void cell_topics(const struct broker_row *r, const struct broker_extra *x, char *o, size_t n) { (void)r; cell_number(x->known, x->topics, o, n); }

static const struct broker_column broker_columns[] = {
	{ "#Cluster Name", 16, false, cell_cluster },
	{ "#Broker Name", 22, false, cell_name },
	{ "#BID", 4, false, cell_id },
	{ "#Role", 13, false, cell_role },
	{ "#Addr", 22, false, cell_addr },
	{ "#HB Age(ms)", 11, true, cell_age },
	{ "#Timeout(ms)", 12, true, cell_timeout },
	{ "#Topics", 7, true, cell_topics },
};
#define BROKER_NCOLS (sizeof broker_columns / sizeof broker_columns[0])

static json_t *broker_row_json(const struct broker_row *r, const struct broker_extra *x)
{
	json_t *o = json_pack("{s:s, s:s, s:I, s:s, s:s}", "cluster", r->cluster, "brokerName",
			      r->name, "brokerId", (json_int_t)r->id, "role",
			      broker_role_name(r->role), "addr", r->addr);
	if (o && x->known) {
		json_object_set_new(o, "lastHeartbeatAgeMillis", json_integer(x->age_ms));
		json_object_set_new(o, "heartbeatTimeoutMillis", json_integer(x->timeout_ms));
		json_object_set_new(o, "topicCount", json_integer(x->topics));
	}
	return o;
}

/* ---- the HTTP endpoint ---- */

/* The httpPort in the server's options (GET_NAMESRV_CONFIG), 0 when off
 * or not reported. */
static int http_port_of(struct admin_ctx *ctx, const struct target *who)
{
	struct remoting_cmd req;
	struct call_result r;
	int port = 0;

	target_request_init(&req, REQ_GET_NAMESRV_CONFIG);
	target_call(who, &req, ctx->timeout_ms, &r);
	if (call_ok(&r) && r.reply->cmd.body) {
		const char *p = (const char *)r.reply->cmd.body;
		const char *end = p + r.reply->cmd.body_len;
		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			const char *le = nl ? nl : end;
			if (le - p > 9 && memcmp(p, "httpPort=", 9) == 0)
				port = atoi(p + 9);
			p = le + 1;
		}
	}
	call_result_clear(&r);
	return port > 0 && port <= 65535 ? port : 0;
}

/* GET path from host:port; the body of a 200 answer (malloc'd), or NULL. */
static char *http_get_body(const char *host, int port, const char *path, int timeout_ms)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL;
	char ports[16], req[512];
	char *data = NULL;
	size_t len = 0, cap = 0;
	int fd = -1;

	snprintf(ports, sizeof ports, "%d", port);
	if (getaddrinfo(host, ports, &hints, &res) != 0)
		return NULL;
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		goto fail;
	if (connect(fd, res->ai_addr, res->ai_addrlen) < 0) {
		struct pollfd pf = { .fd = fd, .events = POLLOUT };
		int soerr = 0;
		socklen_t sl = sizeof soerr;
		if (errno != EINPROGRESS || poll(&pf, 1, timeout_ms) != 1 ||
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr != 0)
			goto fail;
	}
	if (fcntl(fd, F_SETFL, 0) < 0)
		goto fail;
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	int rl = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: rmqns-admin\r\n"
			  "Connection: close\r\n\r\n", path, host);
	if (send(fd, req, (size_t)rl, MSG_NOSIGNAL) != rl)
		goto fail;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			size_t nc = cap ? cap * 2 : 16384;
			char *nd = nc > (64u << 20) ? NULL : realloc(data, nc);
			if (!nd)
				goto fail;
			data = nd;
			cap = nc;
		}
		ssize_t n = recv(fd, data + len, cap - len - 1, 0);
		if (n < 0)
			goto fail;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	data[len] = '\0';
	close(fd);
	freeaddrinfo(res);
	char *body = strstr(data, "\r\n\r\n");
	if (strncmp(data, "HTTP/1.1 200 ", 13) != 0 || !body) {
		free(data);
		return NULL;
	}
	memmove(data, body + 4, strlen(body + 4) + 1);
	return data;
fail:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(res);
	free(data);
	return NULL;
}

/* Fills extra[] from /brokers; false when there is no endpoint to ask or
 * it did not answer (the columns are then left out). */
static bool brokers_from_http(struct admin_ctx *ctx, const struct target *who,
			      const struct broker_rows *rows, struct broker_extra *extra)
{
	struct target_list http;
	char err[256];
	const char *host = who->host;
	int port;

	if (ctx->a.http) {
		if (target_list_parse(ctx->a.http, &http, err, sizeof err) < 0 || http.n != 1) {
			admin_error("--http %s: want one HOST:PORT", ctx->a.http);
			return false;
		}
		host = http.v[0].host;
		port = http.v[0].port;
	} else if ((port = http_port_of(ctx, who)) == 0) {
		return false;
	}
	char *text = http_get_body(host, port, "/brokers", ctx->timeout_ms);
	json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
	free(text);
	json_t *list = json_object_get(doc, "brokers");
	if (!json_is_array(list)) {
		admin_error("%s: no answer from the HTTP endpoint on %s:%d; "
				"heartbeat columns left out", who->name, host, port);
		json_decref(doc);
		return false;
	}
	size_t i;
	json_t *b;
	json_array_foreach(list, i, b) {
		const char *cluster = ops_str(b, "cluster"), *addr = ops_str(b, "address");
		for (size_t k = 0; k < rows->n; k++) {
			if (strcmp(rows->v[k].cluster, cluster) || strcmp(rows->v[k].addr, addr))
				continue;
			extra[k].known = true;
			extra[k].age_ms = json_integer_value(json_object_get(b, "lastHeartbeatAgeMillis"));
			extra[k].timeout_ms = json_integer_value(json_object_get(b, "heartbeatTimeoutMillis"));
			extra[k].topics = json_integer_value(json_object_get(b, "topicCount"));
		}
	}
	json_decref(doc);
	return true;
}

/* Acting master: a group without id 0 whose brokers enable it is routed
 * by the NameServer (supportActingMaster) with its lowest id as 0. That
 * is only known from a route that carries the group, so the candidates'
 * roles are settled by looking at routes; without one they stay "slave". */
struct acting_scan {
	struct broker_rows *rows;
	size_t pending; /* candidate groups not settled yet */
	char **settled; /* names of the candidate groups seen in a route */
};

static bool acting_candidate(const struct broker_rows *rows, size_t i)
{
	const struct broker_row *r = &rows->v[i];
	if (!r->acting_master_enabled || r->id == 0)
		return false;
	/* rows are sorted: the group's first row has its lowest id */
	if (i > 0 && strcmp(rows->v[i - 1].name, r->name) == 0 &&
	    strcmp(rows->v[i - 1].cluster, r->cluster) == 0)
		return false;
	return true;
}

static int acting_on_route(void *arg, size_t index, const struct remoting_cmd *answer)
{
	struct acting_scan *s = arg;
	int err = 0;
	(void)index;

	if (answer->code != 0 || !answer->body)
		return 0;
	json_t *route = json_body_parse(answer->body, answer->body_len, &err);
	json_t *bd;
	size_t i;
	json_array_foreach(json_object_get(route, "brokerDatas"), i, bd) {
		const char *name = ops_str(bd, "brokerName");
		const char *zero = json_string_value(json_object_get(json_object_get(bd, "brokerAddrs"), "0"));
		for (size_t k = 0; k < s->rows->n; k++) {
			struct broker_row *r = &s->rows->v[k];
			if (!acting_candidate(s->rows, k) || r->role == ROLE_ACTING_MASTER ||
			    strcmp(r->name, name) != 0)
				continue;
			if (zero && strcmp(zero, r->addr) == 0) {
				r->role = ROLE_ACTING_MASTER;
				s->pending--;
			}
		}
	}
	json_decref(route);
	return s->pending == 0;
}

static void settle_acting_masters(struct admin_ctx *ctx, const struct target *who,
				  struct broker_rows *rows)
{
	struct acting_scan scan = { .rows = rows };
	struct remoting_cmd req;
	struct call_result r;
	json_t *list = NULL;
	const char **topics = NULL;
	size_t n = 0, i;
	json_t *t;

	for (size_t k = 0; k < rows->n; k++)
		scan.pending += acting_candidate(rows, k);
	if (scan.pending == 0)
		return;
	target_request_init(&req, REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
	target_call(who, &req, ctx->timeout_ms, &r);
	if (call_ok(&r))
		list = ops_body_json(who, &r);
	call_result_clear(&r);
	json_t *arr = json_object_get(list, "topicList");
	topics = calloc(json_array_size(arr) + 1, sizeof *topics);
	if (topics) {
		json_array_foreach(arr, i, t) {
			const char *s = json_string_value(t);
			/* the NameServer never rewrites these routes */
			if (s && strncmp(s, "rmq_sys_SYNC_BROKER_MEMBER_", 27) != 0)
				topics[n++] = s;
		}
		struct client *c = n ? target_connect(who, ctx->timeout_ms, &r) : NULL;
		if (c) {
			if (routes_fetch(c, topics, n, ctx->timeout_ms, acting_on_route, &scan, &r) < 0)
				admin_error("%s: route scan for acting masters stopped",
					who->name);
			client_close(c);
		}
	}
	free(topics);
	json_decref(list);
}

int cmd_brokers(struct admin_ctx *ctx)
{
	struct broker_rows rows;
	const struct target *who;
	char cell[512];
	int ex = read_rows(ctx, &rows, &who);

	if (ex != ADMIN_EXIT_OK)
		return ex;
	settle_acting_masters(ctx, who, &rows);
	struct broker_extra *extra = calloc(rows.n + 1, sizeof *extra);
	if (!extra) {
		broker_rows_free(&rows);
		admin_error("out of memory");
		return ADMIN_EXIT_BAD_ANSWER;
	}
	bool http = brokers_from_http(ctx, who, &rows, extra);
	size_t ncols = BROKER_NCOLS;
	while (!http && ncols > 0 && broker_columns[ncols - 1].http)
		ncols--;
	if (ctx->json) {
		json_t *arr = json_array();
		for (size_t i = 0; i < rows.n; i++)
			json_array_append_new(arr, broker_row_json(&rows.v[i], &extra[i]));
		ex = ops_print_json(json_pack("{s:s, s:o}", "server", who->name, "brokers", arr));
	} else {
		for (size_t c = 0; c < ncols; c++) {
			if (c + 1 < ncols)
				printf("%-*s  ", broker_columns[c].width, broker_columns[c].title);
			else
				printf("%s\n", broker_columns[c].title);
		}
		for (size_t i = 0; i < rows.n; i++) {
			for (size_t c = 0; c < ncols; c++) {
				broker_columns[c].cell(&rows.v[i], &extra[i], cell, sizeof cell);
				if (c + 1 < ncols)
					printf("%-*s  ", broker_columns[c].width, cell);
				else
					printf("%s\n", cell);
			}
		}
	}
	free(extra);
	broker_rows_free(&rows);
	return ex;
}

