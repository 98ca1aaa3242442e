/* topicRoute and topicList (plain, or -c by cluster). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

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

	target_request_init(&req, REQ_GET_ROUTEINFO_BY_TOPIC);
	ops_set_ext(&req, &ext, "topic", ctx->a.topic, NULL);
	int ex = ops_read_json(ctx, &req, &route, &who);
	if (ex != ADMIN_EXIT_OK)
		return ex;
	if (ctx->json)
		return ops_print_json(route);
	print_route(route);
	json_decref(route);
	return ADMIN_EXIT_OK;
}

/* ---- topicList ---- */

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
	qsort(v, *n, sizeof *v, ops_str_ptr_cmp);
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
	return ct->sorted && bsearch(&topic, ct->sorted, ct->n, sizeof *ct->sorted, ops_str_ptr_cmp);
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

	target_request_init(&req, REQ_GET_BROKER_CLUSTER_INFO);
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
	if (!ct) {
		json_decref(info);
		return ADMIN_EXIT_BAD_ANSWER;
	}
	json_t *v;
	json_object_foreach(clusters, name, v) {
		struct ops_ext ext;
		ct[k].cluster = name;
		target_request_init(&req, REQ_GET_TOPICS_BY_CLUSTER);
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

	target_request_init(&req, REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
	int ex = ops_read_json(ctx, &req, &list, &who);
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

