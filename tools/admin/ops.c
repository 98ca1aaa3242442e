/* Reads, writes and output helpers shared by the subcommands (ops.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/json_body.h"
#include "rmqns/json_tree.h"
#include "ops.h"

int admin_exit_for(const struct call_result *r)
{
	switch (r->status) {
	case CALL_ANSWERED:
		return r->reply->cmd.code == 0 ? ADMIN_EXIT_OK : ADMIN_EXIT_REFUSED;
	case CALL_BAD_FRAME:
	case CALL_NOMEM:
		return ADMIN_EXIT_BAD_ANSWER;
	default:
		return ADMIN_EXIT_UNREACHABLE;
	}
}

int ops_read(struct admin_ctx *ctx, struct remoting_cmd *req, struct call_result *r)
{
	char why[512];

	for (size_t i = 0; i < ctx->targets.n; i++) {
		const struct target *t = &ctx->targets.v[i];
		target_call(t, req, ctx->timeout_ms, r);
		if (r->status == CALL_ANSWERED)
			return (int)i;
		call_describe(r, why, sizeof why);
		fprintf(stderr, "rmqns-admin: %s: %s%s\n", t->name, why,
			i + 1 < ctx->targets.n ? "; trying the next NameServer" : "");
	}
	return -1;
}

int ops_fail(const struct target *t, const struct call_result *r)
{
	char why[512];

	call_describe(r, why, sizeof why);
	fprintf(stderr, "rmqns-admin: %s: %s\n", t->name, why);
	return admin_exit_for(r);
}

json_t *ops_body_json(const struct target *t, const struct call_result *r)
{
	const struct remoting_cmd *c = &r->reply->cmd;
	int err = 0;

	if (!c->body || c->body_len == 0) {
		fprintf(stderr, "rmqns-admin: %s: the answer has no body\n", t->name);
		return NULL;
	}
	json_t *v = json_body_parse(c->body, c->body_len, &err);
	if (!v)
		fprintf(stderr, "rmqns-admin: %s: the answer's body is not JSON we can read\n", t->name);
	return v;
}

int ops_print_json(json_t *v)
{
	if (!v)
		return ADMIN_EXIT_BAD_ANSWER;
	char *s = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(v);
	if (!s)
		return ADMIN_EXIT_BAD_ANSWER;
	puts(s);
	free(s);
	return ADMIN_EXIT_OK;
}

const char *ops_str(const json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));
	return s ? s : "";
}

void ops_set_ext(struct remoting_cmd *req, struct ops_ext *store, ...)
{
	va_list ap;
	uint32_t n = 0;

	va_start(ap, store);
	for (const char *k; n < OPS_MAX_EXT && (k = va_arg(ap, const char *)) != NULL;) {
		store->f[n].key = k;
		store->f[n].value = va_arg(ap, const char *);
		n++;
	}
	va_end(ap);
	req->ext = store->f;
	req->ext_count = n;
	req->ext_present = n > 0;
}

int ops_write_all(struct admin_ctx *ctx, const char *what, struct remoting_cmd *req,
		  ops_write_ok_fn on_ok, void *arg)
{
	json_t *results = ctx->json ? json_array() : NULL;
	size_t ok = 0, failed = 0;
	int fail_exit = ADMIN_EXIT_OK;
	char why[512], text[512];

	for (size_t i = 0; i < ctx->targets.n; i++) {
		const struct target *t = &ctx->targets.v[i];
		struct call_result r;
		json_t *item = results ? json_object() : NULL;

		target_call(t, req, ctx->timeout_ms, &r);
		if (item)
			json_object_set_new(item, "server", json_string(t->name));
		if (call_ok(&r)) {
			ok++;
			snprintf(text, sizeof text, "OK");
			if (on_ok)
				on_ok(arg, t, &r, text, sizeof text, item);
			if (item)
				json_object_set_new(item, "ok", json_true());
			else
				printf("%s %s %s\n", what, t->name, text);
		} else {
			failed++;
			int ex = admin_exit_for(&r);
			/* A refusal says more than an unreachable server. */
			if (fail_exit == ADMIN_EXIT_OK || ex == ADMIN_EXIT_REFUSED)
				fail_exit = ex;
			call_describe(&r, why, sizeof why);
			if (item) {
				json_object_set_new(item, "ok", json_false());
				if (r.status == CALL_ANSWERED) {
					json_object_set_new(item, "code", json_integer(r.reply->cmd.code));
					json_object_set_new(item, "remark", r.reply->cmd.remark
							    ? json_string(r.reply->cmd.remark) : json_null());
				}
				json_object_set_new(item, "error", json_string(why));
			} else {
				printf("%s %s FAILED: %s\n", what, t->name, why);
			}
		}
		if (item)
			json_array_append_new(results, item);
		call_result_clear(&r);
	}
	if (results) {
		json_t *top = json_object();
		json_object_set_new(top, "command", json_string(what));
		json_object_set_new(top, "results", results);
		json_object_set_new(top, "succeeded", json_integer((json_int_t)ok));
		json_object_set_new(top, "failed", json_integer((json_int_t)failed));
		ops_print_json(top);
	}
	if (failed == 0)
		return ADMIN_EXIT_OK;
	return ok > 0 ? ADMIN_EXIT_PARTIAL : fail_exit;
}

/* Asks the first server that answers; on code 0 with a JSON body, *out
 * gets the body and *who the server. Otherwise reports and returns the
 * exit code. */
int ops_read_json(struct admin_ctx *ctx, struct remoting_cmd *req, json_t **out,
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

int ops_str_ptr_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}
