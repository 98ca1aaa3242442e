/* Handlers for the KV config requests: PUT_KV_CONFIG (100), GET_KV_CONFIG
 * (101), DELETE_KV_CONFIG (102), GET_KVLIST_BY_NAMESPACE (219). Reads are
 * answered here inside an RCU read-side section; changes go to the
 * registrar, which writes the file before the answer leaves. */
#include <stdio.h>
#include <stdlib.h>

#include <urcu.h>

#include "rmqns/app.h"
#include "rmqns/buf.h"
#include "rmqns/err.h"
#include "rmqns/handlers.h"
#include "rmqns/kv.h"
#include "rmqns/log.h"
#include "rmqns/registrar.h"
#include "rmqns/remoting.h"
#include "rmqns/request.h"

/* Answer texts clients and operators compare (protocol.md §4). */
#define KV_REMARK_NULL_KEY "namespace or key is null"
#define KV_REMARK_NULL_VALUE "value is null"

enum kv_op { KV_OP_PUT, KV_OP_DELETE };

struct kv_mutation {
	struct mutation m;
	struct app *app;
	struct request *req; /* owned; ns/key/value point into its command */
	enum kv_op op;
	const char *ns;
	const char *key;
	const char *value;
};

static void kv_mutation_apply(struct mutation *m)
{
	struct kv_mutation *km = caa_container_of(m, struct kv_mutation, m);
	struct request *req = km->req;
	char err[512], remark[600];
	int rc;

	if (km->op == KV_OP_PUT) {
		rc = kv_put(km->app->kv, km->ns, km->key, km->value, err, sizeof(err));
		if (rc == 0)
			log_info("PUT_KV_CONFIG from %s: %.200s / %.200s = %.200s", req->peer, km->ns, km->key, km->value);
	} else {
		rc = kv_delete(km->app->kv, km->ns, km->key, err, sizeof(err));
		if (rc == 0)
			log_info("DELETE_KV_CONFIG from %s: %.200s / %.200s", req->peer,
				 km->ns ? km->ns : "null", km->key ? km->key : "null");
	}
	if (rc < 0) {
		snprintf(remark, sizeof(remark), "%s_KV_CONFIG failed, nothing changed: %s",
			 km->op == KV_OP_PUT ? "PUT" : "DELETE", err);
		log_error("%s (request from %s)", remark, req->peer);
		request_reply_code(req, RSP_SYSTEM_ERROR, remark);
	} else {
		request_reply_code(req, RSP_SUCCESS, NULL);
	}
	request_free(req);
	free(km);
}

static void kv_submit(struct app *app, struct request *req, enum kv_op op, const char *ns,
		      const char *key, const char *value)
{
	struct kv_mutation *km = calloc(1, sizeof(*km));

	if (!km) {
		request_reply_code(req, RSP_SYSTEM_ERROR, "out of memory");
		request_free(req);
		return;
	}
	km->m.apply = kv_mutation_apply;
	km->app = app;
	km->req = req;
	km->op = op;
	km->ns = ns;
	km->key = key;
	km->value = value;
	registrar_submit(app->registrar, &km->m);
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
	kv_submit(app, req, KV_OP_PUT, ns, key, value);
}

static void handle_delete_kv(struct app *app, struct request *req)
{
	/* As in Java, a missing namespace or key removes nothing and still
	 * rewrites the file, code 0. */
	kv_submit(app, req, KV_OP_DELETE, remoting_ext_get(&req->cmd, "namespace"),
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

	rcu_read_lock();
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
	rcu_read_unlock();
	request_free(req);
}

static void handle_get_kvlist(struct app *app, struct request *req)
{
	const char *ns = remoting_ext_get(&req->cmd, "namespace");
	struct buf body = BUF_INIT;
	char remark[512];
	int rc;

	rcu_read_lock();
	rc = kv_table_json(app->kv, ns, &body);
	rcu_read_unlock();
	if (rc == 0) {
		request_reply_body(req, RSP_SUCCESS, body.data, body.len);
	} else if (rc == RMQNS_ENOTFOUND) {
		snprintf(remark, sizeof(remark), "No config item, Namespace: %s", ns ? ns : "null");
		request_reply_code(req, RSP_QUERY_NOT_FOUND, remark);
	} else {
		request_reply_code(req, RSP_SYSTEM_ERROR, "out of memory");
	}
	buf_free(&body);
	request_free(req);
}

const struct handler handlers_kv[] = {
	{ REQ_PUT_KV_CONFIG, handle_put_kv, LANE_DEFAULT, false },
	{ REQ_GET_KV_CONFIG, handle_get_kv, LANE_DEFAULT, false },
	{ REQ_DELETE_KV_CONFIG, handle_delete_kv, LANE_DEFAULT, false },
	{ REQ_GET_KVLIST_BY_NAMESPACE, handle_get_kvlist, LANE_DEFAULT, false },
	{ 0, NULL, LANE_DEFAULT, false },
};
