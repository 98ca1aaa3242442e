/* The write subcommands: updateNamesrvConfig, updateKvConfig,
 * deleteKvConfig, wipeWritePerm, addWritePerm, deleteTopic (on the
 * cluster's master brokers, then the NameServers) and updateOrderConf.
 * Each goes to every listed NameServer, as mqadmin sends them, and says
 * where it took effect. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/buf.h"
#include "clusterinfo.h"
#include "ops.h"

#define ORDER_TOPIC_NAMESPACE "ORDER_TOPIC_CONFIG"

/* Properties text escaping (the 318 body is parsed as Java properties):
 * backslashes, line breaks and, in keys, the separators. */
static int props_append(struct buf *b, const char *s, bool is_key)
{
	int rc = 0;
	for (const char *p = s; *p && rc == 0; p++) {
		switch (*p) {
		case '\\': rc = buf_append_str(b, "\\\\"); break;
		case '\n': rc = buf_append_str(b, "\\n"); break;
		case '\r': rc = buf_append_str(b, "\\r"); break;
		case '=': case ':': case ' ': case '#': case '!':
			if (is_key || (*p == ' ' && p == s))
				rc = buf_putc(b, '\\');
			if (rc == 0)
				rc = buf_putc(b, (uint8_t)*p);
			break;
		default: rc = buf_putc(b, (uint8_t)*p); break;
		}
	}
	return rc;
}

int admin_update_config(struct admin_ctx *ctx, const struct target_list *list, int32_t code,
			const char *what)
{
	struct remoting_cmd req;
	struct buf body = BUF_INIT;

	if (props_append(&body, ctx->a.key, true) < 0 || buf_putc(&body, '=') < 0 ||
	    props_append(&body, ctx->a.value, false) < 0 || buf_putc(&body, '\n') < 0) {
		buf_free(&body);
		return ADMIN_EXIT_BAD_ANSWER;
	}
	target_request_init(&req, code);
	req.body = body.data;
	req.body_len = (uint32_t)body.len;
	int ex = ops_write_list(ctx, list, what, &req, NULL, NULL, NULL);
	buf_free(&body);
	return ex;
}

int cmd_update_namesrv_config(struct admin_ctx *ctx)
{
	return admin_update_config(ctx, &ctx->targets, REQ_UPDATE_NAMESRV_CONFIG, "updateNamesrvConfig");
}

int cmd_update_kv_config(struct admin_ctx *ctx)
{
	struct remoting_cmd req;
	struct ops_ext ext;

	target_request_init(&req, REQ_PUT_KV_CONFIG);
	ops_set_ext(&req, &ext, "namespace", ctx->a.ns, "key", ctx->a.key, "value", ctx->a.value, NULL);
	return ops_write_all(ctx, "updateKvConfig", &req, NULL, NULL, NULL);
}

int cmd_delete_kv_config(struct admin_ctx *ctx)
{
	struct remoting_cmd req;
	struct ops_ext ext;

	target_request_init(&req, REQ_DELETE_KV_CONFIG);
	ops_set_ext(&req, &ext, "namespace", ctx->a.ns, "key", ctx->a.key, NULL);
	return ops_write_all(ctx, "deleteKvConfig", &req, NULL, NULL, NULL);
}

struct perm_args {
	const char *field;  /* the header field with the topic count */
	const char *broker;
};

/* The topic count the server answers a wipe or add with; 0 means the
 * server knows no topic of that broker. */
static bool perm_ok(void *arg, const struct target *t, const struct call_result *r, char *text,
		    size_t n, json_t *result)
{
	const struct perm_args *pa = arg;
	const char *count = remoting_ext_get(&r->reply->cmd, pa->field);
	long long v = count ? strtoll(count, NULL, 10) : -1;
	(void)t;
	if (v == 0)
		snprintf(text, n, "no topic of broker %s here (0 topics)", pa->broker);
	else
		snprintf(text, n, "OK, %s topics", count ? count : "?");
	if (result)
		json_object_set_new(result, pa->field, json_integer(v < 0 ? 0 : v));
	return v != 0;
}

/* WIPE (205) and ADD (327) write permission: the same request, the count
 * answered in `field`. */
static int write_perm(struct admin_ctx *ctx, int32_t code, const char *what, const char *field)
{
	struct remoting_cmd req;
	struct ops_ext ext;
	struct perm_args pa = { field, ctx->a.broker };
	char nothing[400];

	snprintf(nothing, sizeof nothing, "no server knows broker %s: nothing changed", ctx->a.broker);
	target_request_init(&req, code);
	ops_set_ext(&req, &ext, "brokerName", ctx->a.broker, NULL);
	return ops_write_all(ctx, what, &req, perm_ok, &pa, nothing);
}

int cmd_wipe_write_perm(struct admin_ctx *ctx)
{
	return write_perm(ctx, REQ_WIPE_WRITE_PERM_OF_BROKER, "wipeWritePerm", "wipeTopicCount");
}

int cmd_add_write_perm(struct admin_ctx *ctx)
{
	return write_perm(ctx, REQ_ADD_WRITE_PERM_OF_BROKER, "addWritePerm", "addTopicCount");
}

/* The master addresses (id 0) of the cluster's brokers, as targets. -1
 * when the cluster is unknown or an address does not parse (reported). */
static int delete_topic_masters(const struct broker_rows *rows, const char *cluster,
				struct target_list *out)
{
	char err[256];
	bool known = false;

	out->n = 0;
	for (size_t i = 0; i < rows->n; i++) {
		const struct broker_row *b = &rows->v[i];
		if (strcmp(b->cluster, cluster) != 0)
			continue;
		known = true;
		if (b->id != 0)
			continue;
		struct target_list one;
		if (out->n == TARGET_MAX || target_list_parse(b->addr, &one, err, sizeof err) < 0 ||
		    one.n != 1) {
			admin_error("broker %s: cannot use master address \"%s\"", b->name, b->addr);
			return -1;
		}
		out->v[out->n++] = one.v[0];
	}
	if (!known) {
		admin_error("cluster %s: no such cluster on the NameServers; nothing deleted", cluster);
		return -1;
	}
	return 0;
}

/* As mqadmin's deleteTopic -c: DELETE_TOPIC_IN_BROKER (215) to each master
 * of the cluster, so their next registration does not bring the topic
 * back, then DELETE_TOPIC_IN_NAMESRV (216) to every NameServer. */
int cmd_delete_topic(struct admin_ctx *ctx)
{
	struct remoting_cmd req;
	struct ops_ext ext;
	const struct target *who;
	struct broker_rows rows;
	struct target_list *masters = calloc(1, sizeof *masters);
	json_t *info;

	if (!masters) {
		admin_error("out of memory");
		return ADMIN_EXIT_BAD_ANSWER;
	}
	target_request_init(&req, REQ_GET_BROKER_CLUSTER_INFO);
	int ex = ops_read_json(ctx, &req, &info, &who);
	if (ex == ADMIN_EXIT_OK && broker_rows_build(info, &rows) < 0) {
		admin_error("%s: the answer is not a ClusterInfo", who->name);
		ex = ADMIN_EXIT_BAD_ANSWER;
	} else if (ex == ADMIN_EXIT_OK) {
		if (delete_topic_masters(&rows, ctx->a.cluster, masters) < 0)
			ex = ADMIN_EXIT_REFUSED;
		broker_rows_free(&rows);
	}
	if (ex != ADMIN_EXIT_OK) {
		free(masters);
		return ex;
	}

	struct ops_write on_brokers, on_servers;
	ops_write_begin(ctx, &on_brokers);
	target_request_init(&req, REQ_DELETE_TOPIC_IN_BROKER);
	ops_set_ext(&req, &ext, "topic", ctx->a.topic, NULL);
	for (size_t i = 0; i < masters->n; i++)
		ops_write_one(ctx, "deleteTopic broker", &masters->v[i], &req, NULL, NULL, &on_brokers);

	ops_write_begin(ctx, &on_servers);
	target_request_init(&req, REQ_DELETE_TOPIC_IN_NAMESRV);
	ops_set_ext(&req, &ext, "topic", ctx->a.topic, "clusterName", ctx->a.cluster, NULL);
	for (size_t i = 0; i < ctx->targets.n; i++)
		ops_write_one(ctx, "deleteTopic", &ctx->targets.v[i], &req, NULL, NULL, &on_servers);

	/* one outcome over both steps */
	struct ops_write all = on_servers;
	all.ok += on_brokers.ok;
	all.failed += on_brokers.failed;
	if (on_brokers.fail_exit == ADMIN_EXIT_REFUSED || all.fail_exit == ADMIN_EXIT_OK)
		all.fail_exit = on_brokers.fail_exit ? on_brokers.fail_exit : all.fail_exit;
	ex = ops_write_exit(&all, NULL);
	if (ctx->json) {
		json_t *top = json_object();
		json_object_set_new(top, "command", json_string("deleteTopic"));
		json_object_set_new(top, "brokers", on_brokers.results);
		json_object_set_new(top, "results", on_servers.results);
		json_object_set_new(top, "succeeded", json_integer((json_int_t)all.ok));
		json_object_set_new(top, "failed", json_integer((json_int_t)all.failed));
		if (ex != ADMIN_EXIT_OK)
			json_object_set_new(top, "exit", json_integer(ex));
		ops_print_json(top);
	}
	free(masters);
	return ex;
}

/* -m put|get|delete on namespace ORDER_TOPIC_CONFIG, key = the topic. */
int cmd_update_order_conf(struct admin_ctx *ctx)
{
	struct remoting_cmd req;
	struct ops_ext ext;
	const char *m = ctx->a.method;

	if (strcmp(m, "get") == 0)
		return admin_get_kv(ctx, ORDER_TOPIC_NAMESPACE, ctx->a.topic, true);
	if (strcmp(m, "put") == 0) {
		if (!ctx->a.value || !*ctx->a.value) {
			admin_error("updateOrderConf -m put needs -v brokerName:num;...");
			return ADMIN_EXIT_USAGE;
		}
		target_request_init(&req, REQ_PUT_KV_CONFIG);
		ops_set_ext(&req, &ext, "namespace", ORDER_TOPIC_NAMESPACE, "key", ctx->a.topic, "value",
			    ctx->a.value, NULL);
		return ops_write_all(ctx, "updateOrderConf", &req, NULL, NULL, NULL);
	}
	if (strcmp(m, "delete") == 0) {
		target_request_init(&req, REQ_DELETE_KV_CONFIG);
		ops_set_ext(&req, &ext, "namespace", ORDER_TOPIC_NAMESPACE, "key", ctx->a.topic, NULL);
		return ops_write_all(ctx, "updateOrderConf", &req, NULL, NULL, NULL);
	}
	admin_error("updateOrderConf -m wants put, get or delete, not \"%s\"", m);
	return ADMIN_EXIT_USAGE;
}
