/* Handlers for the KV config requests: PUT_KV_CONFIG (100), GET_KV_CONFIG
 * (101), DELETE_KV_CONFIG (102), GET_KVLIST_BY_NAMESPACE (219). Reads are
 * answered here inside an RCU read-side section; changes go to the KV
 * writer, which writes the file before the answer leaves. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <urcu/compiler.h>

#include "rmqns/app.h"
#include "rmqns/buf.h"
#include "rmqns/err.h"
#include "rmqns/handlers.h"
#include "rmqns/kv.h"
#include "rmqns/race.h"
#include "rmqns/log.h"
#include "rmqns/remoting.h"
#include "rmqns/request.h"

/* Answer texts clients and operators compare (protocol.md §4). */
#define KV_REMARK_NULL_KEY "namespace or key is null"
#define KV_REMARK_NULL_VALUE "value is null"

/* A change waiting for the KV writer, with the request it answers. */
struct kv_request {
	struct kv_change change;
	struct request *req; /* owned; ns/key/value point into its command */
};

/* Runs on the KV writer thread once the change's batch is on disk (or failed). */
static void kv_request_done(struct kv_change *c, int rc, const char *err)
{
	struct kv_request *kr = caa_container_of(c, struct kv_request, change);
	struct request *req = kr->req;
	bool put = c->op == KV_CHANGE_PUT;
	char remark[600];

	if (rc < 0) {
		snprintf(remark, sizeof(remark), "%s_KV_CONFIG failed, nothing changed: %s",
			 put ? "PUT" : "DELETE", err ? err : rmqns_strerror(rc));
		log_error("%s (request from %s)", remark, req->peer);
		request_reply_code(req, RSP_SYSTEM_ERROR, remark);
	} else {
		if (put)
			log_info("PUT_KV_CONFIG from %s: %.200s / %.200s = %.200s", req->peer, c->ns, c->key,
				 c->value);
		else
			log_info("DELETE_KV_CONFIG from %s: %.200s / %.200s", req->peer,
				 c->ns ? c->ns : "null", c->key ? c->key : "null");
		request_reply_code(req, RSP_SUCCESS, NULL);
	}
	request_free(req);
	free(kr);
}

static void submit_kv_change(struct app *app, struct request *req, enum kv_change_op op, const char *ns,
		      const char *key, const char *value)
{
	struct kv_request *kr = calloc(1, sizeof(*kr));

	if (!kr) {
		request_reply_code(req, RSP_SYSTEM_ERROR, "out of memory");
		request_free(req);
		return;
	}
	kr->req = req;
	kr->change.op = op;
	kr->change.ns = ns;
	kr->change.key = key;
	kr->change.value = value;
	kr->change.done = kv_request_done;
	kv_writer_submit(app->kv_writer, &kr->change);
}

static void handle_put_kv(struct app *app, struct request *req)
{
	const char *ns = remoting_ext_get(&req->cmd, "namespace");
	const char *key = remoting_ext_get(&req->cmd, "key");
	const char *value = remoting_ext_get(&req->cmd, "value");

	if (!ns || !key) {
		request_reply_code(req, RSP_SYSTEM_ERROR, KV_REMARK_NULL_KEY);
		request_free(req);
		return;
	}
	/* Java stores a missing value as null, which later reads cannot see
	 * and the file leaves out: refusing says so at once. */
	if (!value) {
		request_reply_code(req, RSP_SYSTEM_ERROR, KV_REMARK_NULL_VALUE);
		request_free(req);
		return;
	}
	submit_kv_change(app, req, KV_CHANGE_PUT, ns, key, value);
}

static void handle_delete_kv(struct app *app, struct request *req)
{
	/* As in Java, a missing namespace or key removes nothing and still
	 * rewrites the file, code 0. */
	submit_kv_change(app, req, KV_CHANGE_DELETE, remoting_ext_get(&req->cmd, "namespace"),
		  remoting_ext_get(&req->cmd, "key"), NULL);
}

static void handle_get_kv(struct app *app, struct request *req)
{
	const char *ns = remoting_ext_get(&req->cmd, "namespace");
	const char *key = remoting_ext_get(&req->cmd, "key");
	struct remoting_ext_field ext;
	struct remoting_cmd rsp;
	char remark[512];
	const char *value;

	state_read_lock();
	value = kv_get(app->kv, ns, key);
	if (value) {
		remoting_response_init(&rsp, &req->cmd, RSP_SUCCESS, NULL);
		ext.key = "value";
		ext.value = value;
		rsp.ext = &ext;
		rsp.ext_count = 1;
	} else {
		snprintf(remark, sizeof(remark), "No config item, Namespace: %s Key: %s",
			 ns ? ns : "null", key ? key : "null");
		remoting_response_init(&rsp, &req->cmd, RSP_QUERY_NOT_FOUND, remark);
	}
	rsp.ext_present = true; /* the answer has a header type: "extFields":{} on a miss */
	request_reply(req, &rsp);
	state_read_unlock();
	request_free(req);
}

static void handle_get_kvlist(struct app *app, struct request *req)
{
	const char *ns = remoting_ext_get(&req->cmd, "namespace");
	struct buf scratch = BUF_INIT;
	const uint8_t *body;
	size_t len;
	char remark[512];
	int rc;

	state_read_lock();
	rc = kv_table_body(app->kv, ns, &body, &len, &scratch);
	if (rc == 0)
		request_reply_body(req, RSP_SUCCESS, body, len); /* copied out before the unlock */
	state_read_unlock();
	if (rc == RMQNS_ENOTFOUND) {
		snprintf(remark, sizeof(remark), "No config item, Namespace: %s", ns ? ns : "null");
		request_reply_code(req, RSP_QUERY_NOT_FOUND, remark);
	} else if (rc) {
		request_reply_code(req, RSP_SYSTEM_ERROR, "out of memory");
	}
	buf_free(&scratch);
	request_free(req);
}

const struct handler handlers_kv[] = {
	{ REQ_PUT_KV_CONFIG, handle_put_kv, LANE_DEFAULT, false },
	{ REQ_GET_KV_CONFIG, handle_get_kv, LANE_DEFAULT, false },
	{ REQ_DELETE_KV_CONFIG, handle_delete_kv, LANE_DEFAULT, false },
	{ REQ_GET_KVLIST_BY_NAMESPACE, handle_get_kvlist, LANE_DEFAULT, false },
	{ 0, NULL, LANE_DEFAULT, false },
};
