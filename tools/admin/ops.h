/* The two ways rmqns-admin asks its NameServers, plus output helpers:
 * a read goes to the first server that answers (the others are skipped
 * with a warning), a write goes to every server and says, per server,
 * whether it took effect. */
#ifndef ADMIN_OPS_H
#define ADMIN_OPS_H

#include <jansson.h>

#include "admin.h"

/* Sends req to the servers in order until one answers (any code). Returns
 * the index of that server with r->reply set, or -1 when none answered
 * (r holds the last failure, already reported on stderr). */
int ops_read(struct admin_ctx *ctx, struct remoting_cmd *req, struct call_result *r);

/* The same over another list (the controllers); kind names its members
 * in the "trying the next ..." warning. */
int ops_read_from(struct admin_ctx *ctx, const struct target_list *list, const char *kind,
		  struct remoting_cmd *req, struct call_result *r);

/* For a successful write on t: the text after "<server> " in the human
 * line (e.g. "OK, 3 topics"), and extra members for the JSON result.
 * Returns false when the answer says nothing changed there (the line then
 * says so instead of OK). */
typedef bool (*ops_write_ok_fn)(void *arg, const struct target *t, const struct call_result *r,
				char *text, size_t n, json_t *result);

/* The outcome of one write sent to several peers. */
struct ops_write {
	json_t *results;  /* --json: one object per peer, else NULL */
	size_t ok, failed;
	size_t unchanged; /* of ok: the answer said nothing changed */
	int fail_exit;    /* the exit code the failures ask for */
};

/* Starts w (its results array only with --json). */
void ops_write_begin(struct admin_ctx *ctx, struct ops_write *w);

/* Sends req to t and reports it: "<what> <server> OK..." or "<what>
 * <server> FAILED: <reason>", or an object in w->results. on_ok may be
 * NULL. */
void ops_write_one(struct admin_ctx *ctx, const char *what, const struct target *t,
		   struct remoting_cmd *req, ops_write_ok_fn on_ok, void *arg, struct ops_write *w);

/* 0 when every peer took it, ADMIN_EXIT_PARTIAL when some did, else the
 * exit code of the failures; ADMIN_EXIT_REFUSED, with `nothing` as a
 * warning, when every peer answered that nothing changed (nothing NULL:
 * not a failure). */
int ops_write_exit(const struct ops_write *w, const char *nothing);

/* Sends req to every server (ops_write_one each), then with --json prints
 * {"command":what,"results":[{"server":..,"ok":..,...}],"succeeded":..,
 * "failed":..}. Returns ops_write_exit's code. */
int ops_write_all(struct admin_ctx *ctx, const char *what, struct remoting_cmd *req,
		  ops_write_ok_fn on_ok, void *arg, const char *nothing);

/* The same over another list (the controllers). */
int ops_write_list(struct admin_ctx *ctx, const struct target_list *list, const char *what,
		   struct remoting_cmd *req, ops_write_ok_fn on_ok, void *arg, const char *nothing);

/* ops_read, then the body: on code 0 with a JSON body, *out gets the body
 * and *who the server that answered. Otherwise the failure is reported on
 * stderr and its exit code returned. */
int ops_read_json(struct admin_ctx *ctx, struct remoting_cmd *req, json_t **out,
		  const struct target **who);

/* Reports a failed read answer (code != 0) on stderr and returns its exit code. */
int ops_fail(const struct target *t, const struct call_result *r);

/* The body of a successful answer as JSON; NULL (reported) when it has
 * none or it does not parse. */
json_t *ops_body_json(const struct target *t, const struct call_result *r);

/* A properties answer (getNamesrvConfig, getControllerConfig): with cfg
 * NULL printed as mqadmin does ("============server============", then
 * "%-50s=  %s" a key), else each key put into cfg. */
void admin_config_print(const struct target *who, const struct remoting_cmd *c, json_t *cfg);

/* Prints v (stealing the reference) as indented JSON and a newline. */
int ops_print_json(json_t *v);

/* The string member key of obj, or "" */
const char *ops_str(const json_t *obj, const char *key);

/* qsort/bsearch comparison of two (const char *) elements. */
int ops_str_ptr_cmp(const void *a, const void *b);

/* Sets one ext field pair list on req (pairs of key, value; NULL ends). */
#define OPS_MAX_EXT 8
struct ops_ext {
	struct remoting_ext_field f[OPS_MAX_EXT];
};
void ops_set_ext(struct remoting_cmd *req, struct ops_ext *store, ...);

/* Appends one ext field to req (which must use store, or no ext yet);
 * a NULL value adds nothing: for optional fields. */
void ops_ext_add(struct remoting_cmd *req, struct ops_ext *store, const char *key, const char *value);

#endif
