/* clusterList and brokers: the GET_BROKER_CLUSTER_INFO rows as mqadmin's
 * table, and with each broker's role. A role other than master or slave
 * (acting master) is only claimed when a route shows it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/json_body.h"
#include "rmqns/json_tree.h"
#include "clusterinfo.h"
#include "ops.h"
#include "routes.h"

static int read_rows(struct admin_ctx *ctx, struct broker_rows *rows, const struct target **who)
{
	struct remoting_cmd req;
	json_t *info;

	target_request_init(&req, 106);
	int ex = ops_read_json(ctx, &req, &info, who);
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

