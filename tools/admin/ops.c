/* Reads, writes and output helpers shared by the subcommands (ops.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/json_body.h"
#include "rmqns/json_tree.h"
#include "ops.h"

/* What admin_error reported, for the JSON error document. */
#define ADMIN_ERRORS_MAX 32
static char *admin_errors[ADMIN_ERRORS_MAX];
static size_t admin_nerrors;
static bool admin_json_printed;

void admin_error(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "rmqns-admin: %s\n", msg);
	if (admin_nerrors < ADMIN_ERRORS_MAX) {
		admin_errors[admin_nerrors] = strdup(msg);
		if (admin_errors[admin_nerrors])
			admin_nerrors++;
	}
}

const char *admin_last_error(void)
{
	return admin_nerrors ? admin_errors[admin_nerrors - 1] : NULL;
}

void admin_json_error(int exit_code)
{
	if (exit_code == ADMIN_EXIT_OK || admin_json_printed)
		return;
	json_t *errors = json_array();
	for (size_t i = 0; i < admin_nerrors; i++)
		json_array_append_new(errors, json_string(admin_errors[i]));
	ops_print_json(json_pack("{s:b, s:i, s:s, s:o}", "ok", 0, "exit", exit_code, "error",
				 admin_nerrors ? admin_errors[admin_nerrors - 1] : "failed", "errors",
				 errors));
}

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

int ops_read_from(struct admin_ctx *ctx, const struct target_list *list, const char *kind,
		  struct remoting_cmd *req, struct call_result *r)
{
	char why[512];

	/* no target at all reads as a connect that failed */
	*r = (struct call_result){ .status = CALL_CONN_FAILED, .timeout_ms = ctx->timeout_ms };

	for (size_t i = 0; i < list->n; i++) {
		const struct target *t = &list->v[i];
		target_call(t, req, ctx->timeout_ms, r);
		if (r->status == CALL_ANSWERED)
			return (int)i;
		call_describe(r, why, sizeof why);
		admin_error("%s: %s%s%s", t->name, why, i + 1 < list->n ? "; trying the next " : "",
			    i + 1 < list->n ? kind : "");
	}
	return -1;
}

int ops_read(struct admin_ctx *ctx, struct remoting_cmd *req, struct call_result *r)
{
	return ops_read_from(ctx, &ctx->targets, "NameServer", req, r);
}

int ops_fail(const struct target *t, const struct call_result *r)
{
	char why[512];

	call_describe(r, why, sizeof why);
	admin_error("%s: %s", t->name, why);
	return admin_exit_for(r);
}

json_t *ops_body_json(const struct target *t, const struct call_result *r)
{
	const struct remoting_cmd *c = &r->reply->cmd;
	int err = 0;

	if (!c->body || c->body_len == 0) {
		admin_error("%s: the answer has no body", t->name);
		return NULL;
	}
	json_t *v = json_body_parse(c->body, c->body_len, &err);
	if (!v)
		admin_error("%s: the answer's body is not JSON we can read", t->name);
	return v;
}

int ops_print_json(json_t *v)
{
	if (!v)
		return ADMIN_EXIT_BAD_ANSWER;
	admin_json_printed = true;
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

void ops_ext_add(struct remoting_cmd *req, struct ops_ext *store, const char *key, const char *value)
{
	if (!value || req->ext_count >= OPS_MAX_EXT)
		return;
	store->f[req->ext_count].key = key;
	store->f[req->ext_count].value = value;
	req->ext = store->f;
	req->ext_count++;
	req->ext_present = true;
}

void ops_write_begin(struct admin_ctx *ctx, struct ops_write *w)
{
	memset(w, 0, sizeof *w);
	w->results = ctx->json ? json_array() : NULL;
}

void ops_write_one(struct admin_ctx *ctx, const char *what, const struct target *t,
		   struct remoting_cmd *req, ops_write_ok_fn on_ok, void *arg, struct ops_write *w)
{
	struct call_result r;
	json_t *item = w->results ? json_object() : NULL;
	char why[512], text[512];

	target_call(t, req, ctx->timeout_ms, &r);
	if (item)
		json_object_set_new(item, "server", json_string(t->name));
	if (call_ok(&r)) {
		w->ok++;
		snprintf(text, sizeof text, "OK");
		bool changed = on_ok ? on_ok(arg, t, &r, text, sizeof text, item) : true;
		if (!changed)
			w->unchanged++;
		if (item) {
			json_object_set_new(item, "ok", json_true());
			json_object_set_new(item, "changed", json_boolean(changed));
		} else {
			printf("%s %s %s\n", what, t->name, text);
		}
	} else {
		w->failed++;
		int ex = admin_exit_for(&r);
		/* A refusal says more than an unreachable server. */
		if (w->fail_exit == ADMIN_EXIT_OK || ex == ADMIN_EXIT_REFUSED)
			w->fail_exit = ex;
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
		json_array_append_new(w->results, item);
	call_result_clear(&r);
}

int ops_write_exit(const struct ops_write *w, const char *nothing)
{
	if (w->failed == 0 && nothing && w->ok > 0 && w->unchanged == w->ok) {
		admin_error("warning: %s", nothing);
		return ADMIN_EXIT_REFUSED;
	}
	if (w->failed == 0)
		return ADMIN_EXIT_OK;
	return w->ok > 0 ? ADMIN_EXIT_PARTIAL : w->fail_exit;
}

int ops_write_all(struct admin_ctx *ctx, const char *what, struct remoting_cmd *req,
		  ops_write_ok_fn on_ok, void *arg, const char *nothing)
{
	return ops_write_list(ctx, &ctx->targets, what, req, on_ok, arg, nothing);
}

int ops_write_list(struct admin_ctx *ctx, const struct target_list *list, const char *what,
		   struct remoting_cmd *req, ops_write_ok_fn on_ok, void *arg, const char *nothing)
{
	struct ops_write w;

	ops_write_begin(ctx, &w);
	for (size_t i = 0; i < list->n; i++)
		ops_write_one(ctx, what, &list->v[i], req, on_ok, arg, &w);
	int ex = ops_write_exit(&w, nothing);
	if (w.results) {
		json_t *top = json_object();
		json_object_set_new(top, "command", json_string(what));
		json_object_set_new(top, "results", w.results);
		json_object_set_new(top, "succeeded", json_integer((json_int_t)w.ok));
		json_object_set_new(top, "failed", json_integer((json_int_t)w.failed));
		if (ex != ADMIN_EXIT_OK) {
			json_object_set_new(top, "exit", json_integer(ex));
			if (admin_last_error())
				json_object_set_new(top, "warning", json_string(admin_last_error()));
		}
		ops_print_json(top);
	}
	return ex;
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
