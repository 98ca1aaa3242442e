/* The read subcommands: clusterList, brokers, topicRoute, topicList,
 * getNamesrvConfig, getKvConfig, getKvList, probe. Each asks the first
 * NameServer that answers and prints a table (or JSON with --json). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rmqns/json_body.h"
#include "clusterinfo.h"
#include "ops.h"
#include "routes.h"

/* Asks the first server that answers; on code 0 with a JSON body, *out
 * gets the body and *who the server. Otherwise reports and returns the
 * exit code. */
static int read_json(struct admin_ctx *ctx, struct remoting_cmd *req, json_t **out,
		     const struct target **who)
{
	struct call_result r;
	int idx = ops_read(ctx, req, &r);

	*out = NULL;
	if (idx < 0)
		return admin_exit_for(&r);
	*who = &ctx->targets.v[idx];
	int ex = call_ok(&r) ? ADMIN_EXIT_OK : ops_fail(*who, &r);
	if (ex == ADMIN_EXIT_OK) {
		*out = ops_body_json(*who, &r);
		if (!*out)
			ex = ADMIN_EXIT_BAD_ANSWER;
	}
	call_result_clear(&r);
	return ex;
}

static int read_rows(struct admin_ctx *ctx, struct broker_rows *rows, const struct target **who)
{
	struct remoting_cmd req;
	json_t *info;

	target_request_init(&req, 106);
	int ex = read_json(ctx, &req, &info, who);
	if (ex != ADMIN_EXIT_OK)
		return ex;
	if (broker_rows_build(info, rows) < 0) {
		broker_rows_free(rows);
		fprintf(stderr, "rmqns-admin: %s: the answer is not a ClusterInfo\n", (*who)->name);
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

/* The columns of `brokers`, in order. A new column (the heartbeat's age
 * and timeout, once the server reports them) is one more entry here plus
 * its member in the JSON row. */
struct broker_column {
	const char *title;
	int width;
	void (*cell)(const struct broker_row *row, char *out, size_t n);
};

static void cell_cluster(const struct broker_row *r, char *o, size_t n) { snprintf(o, n, "%s", r->cluster); }
static void cell_name(const struct broker_row *r, char *o, size_t n) { snprintf(o, n, "%s", r->name); }
static void cell_id(const struct broker_row *r, char *o, size_t n) { snprintf(o, n, "%lld", (long long)r->id); }
static void cell_role(const struct broker_row *r, char *o, size_t n) { snprintf(o, n, "%s", broker_role_name(r->role)); }
static void cell_addr(const struct broker_row *r, char *o, size_t n) { snprintf(o, n, "%s", r->addr); }

static const struct broker_column broker_columns[] = {
	{ "#Cluster Name", 16, cell_cluster },
	{ "#Broker Name", 22, cell_name },
	{ "#BID", 4, cell_id },
	{ "#Role", 13, cell_role },
	{ "#Addr", 22, cell_addr },
};
#define BROKER_NCOLS (sizeof broker_columns / sizeof broker_columns[0])

static json_t *broker_row_json(const struct broker_row *r)
{
	return json_pack("{s:s, s:s, s:I, s:s, s:s}", "cluster", r->cluster, "brokerName", r->name,
			 "brokerId", (json_int_t)r->id, "role", broker_role_name(r->role), "addr", r->addr);
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
	target_request_init(&req, 206);
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
				fprintf(stderr, "rmqns-admin: %s: route scan for acting masters stopped\n",
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
	if (ctx->json) {
		json_t *arr = json_array();
		for (size_t i = 0; i < rows.n; i++)
			json_array_append_new(arr, broker_row_json(&rows.v[i]));
		ex = ops_print_json(json_pack("{s:s, s:o}", "server", who->name, "brokers", arr));
	} else {
		for (size_t c = 0; c < BROKER_NCOLS; c++) {
			if (c + 1 < BROKER_NCOLS)
				printf("%-*s  ", broker_columns[c].width, broker_columns[c].title);
			else
				printf("%s\n", broker_columns[c].title);
		}
		for (size_t i = 0; i < rows.n; i++) {
			for (size_t c = 0; c < BROKER_NCOLS; c++) {
				broker_columns[c].cell(&rows.v[i], cell, sizeof cell);
				if (c + 1 < BROKER_NCOLS)
					printf("%-*s  ", broker_columns[c].width, cell);
				else
					printf("%s\n", cell);
			}
		}
	}
	broker_rows_free(&rows);
	return ex;
}

/* ---- topicRoute ---- */

static int id_key_cmp(const void *a, const void *b)
{
	long long x = strtoll(*(const char *const *)a, NULL, 10);
	long long y = strtoll(*(const char *const *)b, NULL, 10);
	return (x > y) - (x < y);
}

static void print_route(const json_t *route)
{
	json_t *bd, *qd;
	size_t i;

	printf("%-16s  %-22s  %-4s  %s\n", "#Cluster Name", "#Broker Name", "#BID", "#Addr");
	json_array_foreach(json_object_get(route, "brokerDatas"), i, bd) {
		json_t *addrs = json_object_get(bd, "brokerAddrs");
		const char *ids[256];
		size_t n = 0;
		const char *id;
		json_t *a;
		json_object_foreach(addrs, id, a) {
			if (n < 256)
				ids[n++] = id;
		}
		qsort(ids, n, sizeof ids[0], id_key_cmp);
		for (size_t k = 0; k < n; k++)
			printf("%-16s  %-22s  %-4s  %s\n", ops_str(bd, "cluster"), ops_str(bd, "brokerName"),
			       ids[k], json_string_value(json_object_get(addrs, ids[k])) ?
			       json_string_value(json_object_get(addrs, ids[k])) : "");
	}
	printf("\n%-22s  %-10s  %-10s  %-5s  %s\n", "#Broker Name", "#ReadQ", "#WriteQ", "#Perm",
	       "#SysFlag");
	json_array_foreach(json_object_get(route, "queueDatas"), i, qd) {
		printf("%-22s  %-10lld  %-10lld  %-5lld  %lld\n", ops_str(qd, "brokerName"),
		       (long long)json_integer_value(json_object_get(qd, "readQueueNums")),
		       (long long)json_integer_value(json_object_get(qd, "writeQueueNums")),
		       (long long)json_integer_value(json_object_get(qd, "perm")),
		       (long long)json_integer_value(json_object_get(qd, "topicSysFlag")));
	}
	if (json_string_value(json_object_get(route, "orderTopicConf")))
		printf("\norderTopicConf: %s\n", ops_str(route, "orderTopicConf"));
}

int cmd_topic_route(struct admin_ctx *ctx)
{
	struct remoting_cmd req;
	struct ops_ext ext;
	const struct target *who;
	json_t *route;

	target_request_init(&req, 105);
	ops_set_ext(&req, &ext, "topic", ctx->a.topic, NULL);
	int ex = read_json(ctx, &req, &route, &who);
	if (ex != ADMIN_EXIT_OK)
		return ex;
	if (ctx->json)
		return ops_print_json(route);
	print_route(route);
	json_decref(route);
	return ADMIN_EXIT_OK;
}

/* ---- topicList ---- */

static int str_ptr_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The strings of a JSON array, sorted (pointers into arr). */
static const char **sorted_strings(const json_t *arr, size_t *n)
{
	const char **v = calloc(json_array_size(arr) + 1, sizeof *v);
	size_t i;
	json_t *s;

	*n = 0;
	if (!v)
		return NULL;
	json_array_foreach(arr, i, s) {
		if (json_string_value(s))
			v[(*n)++] = json_string_value(s);
	}
	qsort(v, *n, sizeof *v, str_ptr_cmp);
	return v;
}

struct cluster_topics {
	const char *cluster;
	json_t *list;
	const char **sorted;
	size_t n;
};

static bool in_sorted(const struct cluster_topics *ct, const char *topic)
{
	return ct->sorted && bsearch(&topic, ct->sorted, ct->n, sizeof *ct->sorted, str_ptr_cmp);
}

/* -c: every topic with the clusters holding it (GET_TOPICS_BY_CLUSTER per
 * cluster, asked of the server that gave the list). Retry and DLQ topics
 * are left out, as mqadmin does. */
static int topic_list_by_cluster(struct admin_ctx *ctx, const struct target *who, const char **topics,
				 size_t n)
{
	struct remoting_cmd req;
	struct call_result r;
	json_t *info = NULL;
	int ex = ADMIN_EXIT_OK;

	target_request_init(&req, 106);
	target_call(who, &req, ctx->timeout_ms, &r);
	if (!call_ok(&r))
		ex = ops_fail(who, &r);
	else if (!(info = ops_body_json(who, &r)))
		ex = ADMIN_EXIT_BAD_ANSWER;
	call_result_clear(&r);
	if (ex != ADMIN_EXIT_OK)
		return ex;

	json_t *clusters = json_object_get(info, "clusterAddrTable");
	size_t nc = json_object_size(clusters), k = 0;
	struct cluster_topics *ct = calloc(nc + 1, sizeof *ct);
	const char *name;
	json_t *v;
	json_object_foreach(clusters, name, v) {
		struct ops_ext ext;
		ct[k].cluster = name;
		target_request_init(&req, 224);
		ops_set_ext(&req, &ext, "cluster", name, NULL);
		target_call(who, &req, ctx->timeout_ms, &r);
		if (!call_ok(&r))
			ex = ops_fail(who, &r);
		else if ((ct[k].list = ops_body_json(who, &r)) != NULL)
			ct[k].sorted = sorted_strings(json_object_get(ct[k].list, "topicList"), &ct[k].n);
		call_result_clear(&r);
		k++;
	}
	if (nc > 1) {
		/* clusters in name order, so the output is stable */
		for (size_t a = 0; a < nc; a++)
			for (size_t b = a + 1; b < nc; b++)
				if (strcmp(ct[b].cluster, ct[a].cluster) < 0) {
					struct cluster_topics tmp = ct[a];
					ct[a] = ct[b];
					ct[b] = tmp;
				}
	}

	json_t *arr = ctx->json ? json_array() : NULL;
	if (!arr)
		printf("%-20s  %s\n", "#Cluster Name", "#Topic");
	for (size_t i = 0; i < n; i++) {
		bool any = false;
		if (strncmp(topics[i], "%RETRY%", 7) == 0 || strncmp(topics[i], "%DLQ%", 5) == 0)
			continue;
		for (size_t c = 0; c <= nc; c++) {
			const char *cl = NULL;
			if (c < nc && in_sorted(&ct[c], topics[i]))
				cl = ct[c].cluster;
			else if (c == nc && !any)
				cl = "";
			if (!cl)
				continue;
			any = true;
			if (arr)
				json_array_append_new(arr, json_pack("{s:s, s:s}", "cluster", cl, "topic", topics[i]));
			else
				printf("%-20s  %s\n", cl, topics[i]);
		}
	}
	if (arr)
		ops_print_json(json_pack("{s:s, s:o}", "server", who->name, "topics", arr));
	for (size_t c = 0; c < nc; c++) {
		free(ct[c].sorted);
		json_decref(ct[c].list);
	}
	free(ct);
	json_decref(info);
	return ex;
}

int cmd_topic_list(struct admin_ctx *ctx)
{
	struct remoting_cmd req;
	const struct target *who;
	json_t *list;
	size_t n;

	target_request_init(&req, 206);
	int ex = read_json(ctx, &req, &list, &who);
	if (ex != ADMIN_EXIT_OK)
		return ex;
	const char **topics = sorted_strings(json_object_get(list, "topicList"), &n);
	if (!topics) {
		json_decref(list);
		return ADMIN_EXIT_BAD_ANSWER;
	}
	if (ctx->a.by_cluster) {
		ex = topic_list_by_cluster(ctx, who, topics, n);
	} else if (ctx->json) {
		json_t *arr = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(arr, json_string(topics[i]));
		ex = ops_print_json(json_pack("{s:s, s:o}", "server", who->name, "topicList", arr));
	} else {
		for (size_t i = 0; i < n; i++)
			puts(topics[i]);
	}
	free(topics);
	json_decref(list);
	return ex;
}

/* ---- config and KV ---- */

int cmd_get_namesrv_config(struct admin_ctx *ctx)
{
	struct remoting_cmd req;
	struct call_result r;

	target_request_init(&req, 319);
	int idx = ops_read(ctx, &req, &r);
	if (idx < 0)
		return admin_exit_for(&r);
	const struct target *who = &ctx->targets.v[idx];
	if (!call_ok(&r)) {
		int ex = ops_fail(who, &r);
		call_result_clear(&r);
		return ex;
	}
	const struct remoting_cmd *c = &r.reply->cmd;
	json_t *cfg = ctx->json ? json_object() : NULL;
	if (!cfg)
		printf("============%s============\n", who->name);
	const char *p = (const char *)c->body, *end = p + (c->body ? c->body_len : 0);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *eq = memchr(p, '=', (size_t)(le - p));
		if (eq) {
			int kl = (int)(eq - p), vl = (int)(le - eq - 1);
			if (cfg) {
				char *k = strndup(p, (size_t)kl);
				if (k)
					json_object_set_new(cfg, k, json_stringn(eq + 1, (size_t)vl));
				free(k);
			} else {
				printf("%-50.*s=  %.*s\n", kl, p, vl, eq + 1);
			}
		}
		p = nl ? nl + 1 : end;
	}
	call_result_clear(&r);
	if (cfg)
		return ops_print_json(json_pack("{s:s, s:o}", "server", who->name, "config", cfg));
	return ADMIN_EXIT_OK;
}

/* GET_KV_CONFIG; also `updateOrderConf -m get`. */
int admin_get_kv(struct admin_ctx *ctx, const char *ns, const char *key, bool order_conf)
{
	struct remoting_cmd req;
	struct ops_ext ext;
	struct call_result r;

	target_request_init(&req, 101);
	ops_set_ext(&req, &ext, "namespace", ns, "key", key, NULL);
	int idx = ops_read(ctx, &req, &r);
	if (idx < 0)
		return admin_exit_for(&r);
	const struct target *who = &ctx->targets.v[idx];
	int ex = ADMIN_EXIT_OK;
	if (!call_ok(&r)) {
		ex = ops_fail(who, &r);
	} else {
		const char *value = remoting_ext_get(&r.reply->cmd, "value");
		if (ctx->json)
			ex = ops_print_json(json_pack("{s:s, s:s, s:s, s:s?}", "server", who->name,
						      "namespace", ns, "key", key, "value", value));
		else if (order_conf)
			printf("get orderConf success. topic=[%s], orderConf=[%s]\n", key, value ? value : "");
		else
			printf("%s\n", value ? value : "");
	}
	call_result_clear(&r);
	return ex;
}

int cmd_get_kv_config(struct admin_ctx *ctx)
{
	return admin_get_kv(ctx, ctx->a.ns, ctx->a.key, false);
}

int cmd_get_kv_list(struct admin_ctx *ctx)
{
	struct remoting_cmd req;
	struct ops_ext ext;
	const struct target *who;
	json_t *kv;

	target_request_init(&req, 219);
	ops_set_ext(&req, &ext, "namespace", ctx->a.ns, NULL);
	int ex = read_json(ctx, &req, &kv, &who);
	if (ex != ADMIN_EXIT_OK)
		return ex;
	json_t *table = json_object_get(kv, "table");
	if (ctx->json) {
		ex = ops_print_json(json_pack("{s:s, s:s, s:O}", "server", who->name, "namespace",
					      ctx->a.ns, "table", json_is_object(table) ? table : json_object()));
	} else {
		const char **keys = calloc(json_object_size(table) + 1, sizeof *keys);
		size_t n = 0;
		const char *k;
		json_t *v;
		if (!keys) {
			json_decref(kv);
			return ADMIN_EXIT_BAD_ANSWER;
		}
		json_object_foreach(table, k, v)
			keys[n++] = k;
		qsort(keys, n, sizeof *keys, str_ptr_cmp);
		printf("%-40s  %s\n", "#Key", "#Value");
		for (size_t i = 0; i < n; i++)
			printf("%-40s  %s\n", keys[i], ops_str(table, keys[i]));
		free(keys);
	}
	json_decref(kv);
	return ex;
}

/* ---- probe ---- */

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Every listed server must answer GET_BROKER_CLUSTER_INFO with code 0:
 * exit 0, else the exit code of the first failure. */
int cmd_probe(struct admin_ctx *ctx)
{
	json_t *arr = ctx->json ? json_array() : NULL;
	int ex = ADMIN_EXIT_OK;
	char why[512];

	for (size_t i = 0; i < ctx->targets.n; i++) {
		const struct target *t = &ctx->targets.v[i];
		struct remoting_cmd req;
		struct call_result r;
		double t0 = now_ms();

		target_request_init(&req, 106);
		target_call(t, &req, ctx->timeout_ms, &r);
		double ms = now_ms() - t0;
		bool ok = call_ok(&r);
		if (!ok && ex == ADMIN_EXIT_OK)
			ex = admin_exit_for(&r);
		call_describe(&r, why, sizeof why);
		if (arr)
			json_array_append_new(arr, ok ? json_pack("{s:s, s:b, s:f}", "server", t->name, "ok", 1, "ms", ms)
						      : json_pack("{s:s, s:b, s:s}", "server", t->name, "ok", 0, "error", why));
		else if (ok)
			printf("%s OK %.2f ms\n", t->name, ms);
		else
			printf("%s FAILED: %s\n", t->name, why);
		call_result_clear(&r);
	}
	if (arr)
		ops_print_json(json_pack("{s:b, s:o}", "ok", ex == ADMIN_EXIT_OK, "results", arr));
	return ex;
}
