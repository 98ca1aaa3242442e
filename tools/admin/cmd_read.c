/* The remaining reads: getNamesrvConfig, getKvConfig, getKvList (also
 * `updateOrderConf -m get`) and probe. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops.h"

/* ---- config and KV ---- */

void admin_config_print(const struct target *who, const struct remoting_cmd *c, json_t *cfg)
{
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
}

int cmd_get_namesrv_config(struct admin_ctx *ctx)
{
	struct remoting_cmd req;
	struct call_result r;

	target_request_init(&req, REQ_GET_NAMESRV_CONFIG);
	int idx = ops_read(ctx, &req, &r);
	if (idx < 0)
		return admin_exit_for(&r);
	const struct target *who = &ctx->targets.v[idx];
	if (!call_ok(&r)) {
		int ex = ops_fail(who, &r);
		call_result_clear(&r);
		return ex;
	}
	json_t *cfg = ctx->json ? json_object() : NULL;
	admin_config_print(who, &r.reply->cmd, cfg);
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

	target_request_init(&req, REQ_GET_KV_CONFIG);
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

	target_request_init(&req, REQ_GET_KVLIST_BY_NAMESPACE);
	ops_set_ext(&req, &ext, "namespace", ctx->a.ns, NULL);
	int ex = ops_read_json(ctx, &req, &kv, &who);
	if (ex != ADMIN_EXIT_OK)
		return ex;
	json_t *table = json_object_get(kv, "table");
	if (ctx->json) {
		json_t *copy = json_is_object(table) ? json_incref(table) : json_object();
		ex = ops_print_json(json_pack("{s:s, s:s, s:o}", "server", who->name, "namespace",
					      ctx->a.ns, "table", copy));
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
		qsort(keys, n, sizeof *keys, ops_str_ptr_cmp);
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

/* Every listed server must answer GET_BROKER_CLUSTER_INFO: any
 * well-formed answer means it is alive, an error code included (an ACL
 * refusal, code 16, comes from a working server). Exit 0, else the exit
 * code of the first server that did not answer. */
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

		target_request_init(&req, REQ_GET_BROKER_CLUSTER_INFO);
		target_call(t, &req, ctx->timeout_ms, &r);
		double ms = now_ms() - t0;
		bool alive = r.status == CALL_ANSWERED;
		bool refused = alive && r.reply->cmd.code != 0;
		if (!alive && ex == ADMIN_EXIT_OK)
			ex = admin_exit_for(&r);
		call_describe(&r, why, sizeof why);
		if (arr) {
			json_t *item = json_pack("{s:s, s:b}", "server", t->name, "ok", alive);
			if (alive)
				json_object_set_new(item, "ms", json_real(ms));
			if (refused) {
				json_object_set_new(item, "code", json_integer(r.reply->cmd.code));
				json_object_set_new(item, "answer", json_string(why));
			}
			if (!alive)
				json_object_set_new(item, "error", json_string(why));
			json_array_append_new(arr, item);
		} else if (refused) {
			printf("%s OK %.2f ms (alive: it answered with a refusal, %s)\n", t->name, ms, why);
		} else if (alive) {
			printf("%s OK %.2f ms\n", t->name, ms);
		} else {
			printf("%s FAILED: %s\n", t->name, why);
		}
		call_result_clear(&r);
	}
	if (arr)
		ops_print_json(json_pack("{s:b, s:o}", "ok", ex == ADMIN_EXIT_OK, "results", arr));
	return ex;
}
