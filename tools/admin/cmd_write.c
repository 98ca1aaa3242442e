/* The write subcommands: updateNamesrvConfig, updateKvConfig,
 * deleteKvConfig, wipeWritePerm, addWritePerm, deleteTopic (the
 * NameServer part) and updateOrderConf. Each goes to every listed
 * NameServer, as mqadmin sends them, and says where it took effect. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/buf.h"
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

int cmd_update_namesrv_config(struct admin_ctx *ctx)
{
	struct remoting_cmd req;
	struct buf body = BUF_INIT;

	if (props_append(&body, ctx->a.key, true) < 0 || buf_putc(&body, '=') < 0 ||
	    props_append(&body, ctx->a.value, false) < 0 || buf_putc(&body, '\n') < 0) {
		buf_free(&body);
		return ADMIN_EXIT_BAD_ANSWER;
	}
	target_request_init(&req, REQ_UPDATE_NAMESRV_CONFIG);
	req.body = body.data;
	req.body_len = (uint32_t)body.len;
	int ex = ops_write_all(ctx, "updateNamesrvConfig", &req, NULL, NULL);
	buf_free(&body);
	return ex;
}

int cmd_update_kv_config(struct admin_ctx *ctx)
{
	struct remoting_cmd req;
	struct ops_ext ext;

	target_request_init(&req, REQ_PUT_KV_CONFIG);
	ops_set_ext(&req, &ext, "namespace", ctx->a.ns, "key", ctx->a.key, "value", ctx->a.value, NULL);
	return ops_write_all(ctx, "updateKvConfig", &req, NULL, NULL);
}

int cmd_delete_kv_config(struct admin_ctx *ctx)
{
	struct remoting_cmd req;
	struct ops_ext ext;

	target_request_init(&req, REQ_DELETE_KV_CONFIG);
	ops_set_ext(&req, &ext, "namespace", ctx->a.ns, "key", ctx->a.key, NULL);
	return ops_write_all(ctx, "deleteKvConfig", &req, NULL, NULL);
}

/* The topic count the server answers a wipe or add with. */
static void perm_ok(void *arg, const struct target *t, const struct call_result *r, char *text,
		    size_t n, json_t *result)
{
	const char *field = arg;
	const char *count = remoting_ext_get(&r->reply->cmd, field);
	(void)t;
	snprintf(text, n, "OK, %s topics", count ? count : "?");
	if (result)
		json_object_set_new(result, field, json_integer(count ? strtoll(count, NULL, 10) : 0));
}

/* WIPE (205) and ADD (327) write permission: the same request, the count
 * answered in `field`. */
static int write_perm(struct admin_ctx *ctx, int32_t code, const char *what, char *field)
{
	struct remoting_cmd req;
	struct ops_ext ext;

	target_request_init(&req, code);
	ops_set_ext(&req, &ext, "brokerName", ctx->a.broker, NULL);
	return ops_write_all(ctx, what, &req, perm_ok, field);
}

int cmd_wipe_write_perm(struct admin_ctx *ctx)
{
	return write_perm(ctx, REQ_WIPE_WRITE_PERM_OF_BROKER, "wipeWritePerm", "wipeTopicCount");
}

int cmd_add_write_perm(struct admin_ctx *ctx)
{
	return write_perm(ctx, REQ_ADD_WRITE_PERM_OF_BROKER, "addWritePerm", "addTopicCount");
}

int cmd_delete_topic(struct admin_ctx *ctx)
{
	struct remoting_cmd req;
	struct ops_ext ext;

	target_request_init(&req, REQ_DELETE_TOPIC_IN_NAMESRV);
	if (ctx->a.cluster)
		ops_set_ext(&req, &ext, "topic", ctx->a.topic, "clusterName", ctx->a.cluster, NULL);
	else
		ops_set_ext(&req, &ext, "topic", ctx->a.topic, NULL);
	return ops_write_all(ctx, "deleteTopic", &req, NULL, NULL);
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
			fprintf(stderr, "rmqns-admin: updateOrderConf -m put needs -v brokerName:num;...\n");
			return ADMIN_EXIT_USAGE;
		}
		target_request_init(&req, REQ_PUT_KV_CONFIG);
		ops_set_ext(&req, &ext, "namespace", ORDER_TOPIC_NAMESPACE, "key", ctx->a.topic, "value",
			    ctx->a.value, NULL);
		return ops_write_all(ctx, "updateOrderConf", &req, NULL, NULL);
	}
	if (strcmp(m, "delete") == 0) {
		target_request_init(&req, REQ_DELETE_KV_CONFIG);
		ops_set_ext(&req, &ext, "namespace", ORDER_TOPIC_NAMESPACE, "key", ctx->a.topic, NULL);
		return ops_write_all(ctx, "updateOrderConf", &req, NULL, NULL);
	}
	fprintf(stderr, "rmqns-admin: updateOrderConf -m wants put, get or delete, not \"%s\"\n", m);
	return ADMIN_EXIT_USAGE;
}
