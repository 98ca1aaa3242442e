/* Handlers for the route requests (protocol.md §4): reads answered here
 * inside a read-side section, changes decoded here (the costly part of a
 * registration runs on the processor thread) and applied by the registrar.
 * Knows the wire; the route module knows the tables. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <urcu/compiler.h>

#include "rmqns/app.h"
#include "rmqns/config.h"
#include "rmqns/err.h"
#include "rmqns/handlers.h"
#include "rmqns/json_body.h"
#include "rmqns/json_reader.h"
#include "rmqns/kv.h"
#include "rmqns/log.h"
#include "rmqns/metrics.h"
#include "rmqns/processor.h"
#include "rmqns/regbody.h"
#include "rmqns/registrar.h"
#include "rmqns/remoting.h"
#include "rmqns/request.h"
#include "rmqns/route.h"

#define NOT_FOUND_FMT "No topic route info in name server for the topic: %s\nSee %s for further details."
#define FAQ_URL "https://rocketmq.apache.org/docs/bestPractice/06FAQ"
#define DECODE_FAILED "org.apache.rocketmq.remoting.exception.RemotingCommandException: Failed to decode RegisterBrokerBody"
#define VERSION_STANDARD_JSON 401

static void reply_free(struct request *req, int32_t code, const char *remark)
{
	request_reply_code(req, code, remark);
	request_free(req);
}

static void reply_out_of_memory(struct request *req)
{
	reply_free(req, RSP_SYSTEM_ERROR, "rmqns: out of memory");
}

/* A required ext field, or NULL after answering code 1 naming it. */
static const char *need_ext(struct request *req, const char *key)
{
	const char *v = remoting_ext_get(&req->cmd, key);
	char remark[128];

	if (v)
		return v;
	snprintf(remark, sizeof(remark), "the request has no %s", key);
	reply_free(req, RSP_SYSTEM_ERROR, remark);
	return NULL;
}

/* ---- 105 GET_ROUTEINFO_BY_TOPIC ---- */

static bool is_blank(const char *s)
{
	for (; s && *s; s++)
		if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r' && *s != '\f' && *s != '\v')
			return false;
	return true;
}

static void h_get_route(struct app *app, struct request *req)
{
	const struct remoting_cmd *cmd = &req->cmd;
	const char *topic = remoting_ext_get(cmd, "topic");
	const char *zone = remoting_ext_get(cmd, "__ZONE_NAME");
	struct buf scratch = BUF_INIT;
	struct remoting_cmd rsp;
	struct route_query q;
	const uint8_t *body = NULL;
	size_t len = 0;
	int rc;

	memset(&q, 0, sizeof(q));
	q.topic = topic;
	q.form = cmd->version >= VERSION_STANDARD_JSON || remoting_ext_get_bool(cmd, "acceptStandardJsonOnly")
			 ? JW_STANDARD : JW_DEFAULT;
	if (remoting_ext_get_bool(cmd, "__ZONE_MODE") && !is_blank(zone))
		q.zone = zone;

	route_read_lock();
	const struct options *o = config_current(app->config);
	if (o->needWaitForService && !route_db_warm(app->route) &&
	    route_uptime_ms(app->route, route_now_ms()) < (uint64_t)(o->waitSecondsForService > 0 ? o->waitSecondsForService : 0) * 1000u) {
		route_read_unlock();
		reply_free(req, RSP_SYSTEM_ERROR, "name server not ready");
		return;
	}
	q.support_acting_master = o->supportActingMaster;
	if (o->orderMessageEnable && topic)
		q.order_conf = kv_get(app->kv, KV_NAMESPACE_ORDER_TOPIC_CONFIG, topic);
	rc = route_topic_body(app->route, &q, &body, &len, &scratch);
	if (rc == 0) {
		/* bytes outside scratch are the cached answer (with orderTopicConf
		 * spliced in, a hit also lands in scratch and counts as built) */
		metrics_add(body == scratch.data ? MC_ROUTE_CACHE_BUILDS : MC_ROUTE_CACHE_HITS, 1);
		remoting_response_init(&rsp, cmd, RSP_SUCCESS, NULL);
		rsp.body = body;
		rsp.body_len = (uint32_t)len;
		request_reply(req, &rsp);
	}
	route_read_unlock();
	buf_free(&scratch);
	if (rc == RMQNS_ENOTFOUND) {
		char *remark = NULL;
		if (asprintf(&remark, NOT_FOUND_FMT, topic ? topic : "null", FAQ_URL) < 0)
			remark = NULL;
		reply_free(req, RSP_TOPIC_NOT_EXIST, remark ? remark : "No topic route info in name server");
		free(remark);
		return;
	}
	if (rc) {
		reply_free(req, RSP_SYSTEM_ERROR, rmqns_strerror(rc));
		return;
	}
	request_free(req);
}

/* ---- plain reads ---- */

/* Points *body at the answer: cached bytes, or what it wrote into scratch. */
typedef int (*body_fn)(struct app *app, struct request *req, struct buf *scratch, const uint8_t **body,
		       size_t *len);

/* Answers code 0 with the body fn gives (inside a read-side section: the
 * answer is copied out before it ends). */
static void reply_read(struct app *app, struct request *req, body_fn fn, const char *remark)
{
	struct buf scratch = BUF_INIT;
	struct remoting_cmd rsp;
	const uint8_t *body = NULL;
	size_t len = 0;
	int rc;

	route_read_lock();
	rc = fn(app, req, &scratch, &body, &len);
	if (rc == 0) {
		remoting_response_init(&rsp, &req->cmd, RSP_SUCCESS, remark);
		rsp.body = body;
		rsp.body_len = (uint32_t)len;
		request_reply(req, &rsp);
	}
	route_read_unlock();
	buf_free(&scratch);
	if (rc) {
		reply_free(req, RSP_SYSTEM_ERROR, rmqns_strerror(rc));
		return;
	}
	request_free(req);
}

/* enableAllTopicList / enableTopicList switched off: code 1 "disable".
 * Asked on every request, so cached lists need no word of the switch. */
static bool list_disabled(struct app *app, bool all)
{
	bool off;

	route_read_lock();
	const struct options *o = config_current(app->config);
	off = all ? !o->enableAllTopicList : !o->enableTopicList;
	route_read_unlock();
	return off;
}

/* The list of a request code (cached by the route module). */
static int b_list(struct app *app, struct request *req, struct buf *scratch, const uint8_t **body,
		  size_t *len)
{
	enum route_list kind;

	switch (req->cmd.code) {
	case REQ_GET_BROKER_CLUSTER_INFO:
		kind = ROUTE_LIST_CLUSTER_INFO;
		break;
	case REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER:
		kind = ROUTE_LIST_TOPICS_ALL;
		break;
	case REQ_GET_TOPICS_BY_CLUSTER:
		kind = ROUTE_LIST_TOPICS_BY_CLUSTER;
		break;
	case REQ_GET_SYSTEM_TOPIC_LIST_FROM_NS:
		kind = ROUTE_LIST_TOPICS_SYSTEM;
		break;
	case REQ_GET_UNIT_TOPIC_LIST:
		kind = ROUTE_LIST_TOPICS_UNIT;
		break;
	case REQ_GET_HAS_UNIT_SUB_TOPIC_LIST:
		kind = ROUTE_LIST_TOPICS_UNIT_SUB;
		break;
	default:
		kind = ROUTE_LIST_TOPICS_UNIT_SUB_NOT_UNIT;
		break;
	}
	return route_list_body(app->route, kind, remoting_ext_get(&req->cmd, "cluster"), body, len, scratch);
}

static int b_member_group(struct app *app, struct request *req, struct buf *scratch, const uint8_t **body,
			  size_t *len)
{
	int rc = route_member_group(app->route, remoting_ext_get(&req->cmd, "clusterName"),
				    remoting_ext_get(&req->cmd, "brokerName"), scratch);

	*body = scratch->data;
	*len = scratch->len;
	return rc;
}

static void h_cluster_info(struct app *app, struct request *req)
{
	reply_read(app, req, b_list, NULL);
}

static void h_all_topics(struct app *app, struct request *req)
{
	if (list_disabled(app, true))
		reply_free(req, RSP_SYSTEM_ERROR, "disable");
	else
		reply_read(app, req, b_list, NULL);
}

static void h_cluster_topics(struct app *app, struct request *req)
{
	if (list_disabled(app, false))
		reply_free(req, RSP_SYSTEM_ERROR, "disable");
	else
		reply_read(app, req, b_list, NULL);
}

static void h_system_topics(struct app *app, struct request *req)
{
	reply_read(app, req, b_list, NULL);
}

static void h_unit_topics(struct app *app, struct request *req)
{
	if (list_disabled(app, false))
		reply_free(req, RSP_SYSTEM_ERROR, "disable");
	else
		reply_read(app, req, b_list, NULL);
}

static void h_member_group(struct app *app, struct request *req)
{
	/* 5.x leaves the code unset, so the default remark goes out with 0 */
	reply_read(app, req, b_member_group, "not set any response code");
}

/* ---- liveness: 904, 322 ---- */

static void h_heartbeat(struct app *app, struct request *req)
{
	route_read_lock();
	route_heartbeat(app->route, remoting_ext_get(&req->cmd, "clusterName"),
			remoting_ext_get(&req->cmd, "brokerAddr"), route_now_ms());
	route_read_unlock();
	reply_free(req, RSP_SUCCESS, NULL);
}

static void h_query_data_version(struct app *app, struct request *req)
{
	struct data_version dv, stored;
	struct remoting_cmd rsp;
	struct remoting_ext_field ext[1];
	char body[128];
	bool known, changed;

	if (!req->cmd.body || req->cmd.body_len == 0) {
		reply_free(req, RSP_SYSTEM_ERROR, "QUERY_DATA_VERSION needs a DataVersion body");
		return;
	}
	if (regbody_parse_data_version(req->cmd.body, req->cmd.body_len, &dv)) {
		reply_free(req, RSP_SYSTEM_ERROR, "QUERY_DATA_VERSION body is not a DataVersion");
		return;
	}
	route_read_lock();
	route_query_data_version(app->route, remoting_ext_get(&req->cmd, "clusterName"),
				 remoting_ext_get(&req->cmd, "brokerAddr"), &dv, route_now_ms(), &known, &changed,
				 &stored);
	route_read_unlock();
	remoting_response_init(&rsp, &req->cmd, RSP_SUCCESS, NULL);
	ext[0].key = "changed";
	ext[0].value = changed ? "true" : "false";
	rsp.ext = ext;
	rsp.ext_count = 1;
	rsp.ext_present = true;
	if (known) {
		int n = data_version_format(&stored, body, sizeof(body));
		rsp.body = (const uint8_t *)body;
		rsp.body_len = n > 0 ? (uint32_t)n : 0;
	}
	request_reply(req, &rsp);
	request_free(req);
}

/* ---- changes, applied by the registrar ---- */

struct route_mut {
	struct mutation m;
	mutation_apply_fn change; /* the route change itself (mut_apply runs it) */
	bool handoff; /* counted by processor_pool_handoff_begin until freed */
	struct app *app;
	struct request *req;
	int32_t code;
	/* REGISTER_BROKER */
	struct regbody body;
	struct route_broker_reg reg;
	/* REGISTER_TOPIC_IN_NAMESRV */
	struct route_queue_in *queues;
	uint32_t n_queues;
	char *names; /* the queues' broker names */
};

static void mut_free(struct route_mut *mu);

/* On the registrar: a change whose connection closed while it waited is
 * dropped (nobody reads its answer, and a registration would tie a broker
 * to a connection already gone); a one-way registration still applies. */
static void mut_apply(struct mutation *m)
{
	struct route_mut *mu = caa_container_of(m, struct route_mut, m);
	if (mu->req && request_is_stale(mu->req)) {
		metrics_add(MC_REQ_DROPPED_CLOSED, 1);
		mut_free(mu);
		return;
	}
	mu->change(m);
}

static void mut_drop(struct mutation *m)
{
	mut_free(caa_container_of(m, struct route_mut, m));
}

static struct route_mut *mut_new(struct app *app, struct request *req, mutation_apply_fn fn)
{
	struct route_mut *mu = calloc(1, sizeof(*mu));

	if (!mu)
		return NULL;
	mu->m.apply = mut_apply;
	mu->m.drop = mut_drop;
	mu->change = fn;
	mu->app = app;
	mu->req = req;
	mu->code = req->cmd.code;
	return mu;
}

static void mut_free(struct route_mut *mu)
{
	if (mu->handoff && mu->app->pool)
		processor_pool_handoff_end(mu->app->pool);
	regbody_free(&mu->body);
	free(mu->queues);
	free(mu->names);
	if (mu->req)
		request_free(mu->req);
	free(mu);
}

/* Decodes the request's body into mu->body, as its identity says it is
 * to be read; mu->reg.body points at it on success. */
static int register_decode(struct route_mut *mu, char *why, size_t whylen)
{
	const struct remoting_cmd *cmd = &mu->req->cmd;
	const struct route_body_id *id = &mu->reg.body_id;
	int rc = regbody_decode(cmd->body, cmd->body_len, id->compressed, id->version, id->max_bytes, &mu->body,
				why, whylen);

	if (rc == 0)
		mu->reg.body = &mu->body;
	return rc;
}

static void apply_register(struct mutation *m)
{
	struct route_mut *mu = caa_container_of(m, struct route_mut, m);
	struct app *app = mu->app;
	struct route_reg_result res;
	struct remoting_cmd rsp;
	struct remoting_ext_field ext[2];
	struct buf kv = BUF_INIT;
	int rc;

	rc = route_apply_register(app->route, &mu->reg, route_now_ms(), &res);
	if (rc == RMQNS_ENOTFOUND && !mu->reg.body) {
		/* sent as identical to the broker's last body, but something
		 * changed in between (a topic, its place in the group): the
		 * body is decoded here after all, and applied in full */
		char why[160];
		rc = register_decode(mu, why, sizeof(why));
		if (rc)
			log_warn("route: undecodable registration from %s (%s): %s", mu->reg.addr, mu->req->peer, why);
		else
			rc = route_apply_register(app->route, &mu->reg, route_now_ms(), &res);
	}
	metrics_add(rc ? MC_REG_FAILED
		       : res.outcome == ROUTE_REG_REFUSED    ? MC_REG_REFUSED
		       : res.outcome == ROUTE_REG_SUPERSEDED ? MC_REG_SUPERSEDED
							    : MC_REG_DONE,
		    1);
	if (rc) {
		log_warn("route: registration of %s (%s) failed: %s", mu->reg.addr, mu->reg.name, rmqns_strerror(rc));
		char remark[96];
		snprintf(remark, sizeof(remark), "register broker failed: %s", rmqns_strerror(rc));
		remoting_response_init(&rsp, &mu->req->cmd, RSP_SYSTEM_ERROR, remark);
		rsp.ext_present = true;
		request_reply(mu->req, &rsp);
		mut_free(mu);
		return;
	}
	if (res.outcome == ROUTE_REG_REFUSED) {
		remoting_response_init(&rsp, &mu->req->cmd, RSP_SYSTEM_ERROR, "register broker failed");
		rsp.ext_present = true;
		request_reply(mu->req, &rsp);
		mut_free(mu);
		return;
	}
	remoting_response_init(&rsp, &mu->req->cmd, RSP_SUCCESS, NULL);
	rsp.ext = ext;
	rsp.ext_present = true;
	if (res.master_addr) {
		ext[rsp.ext_count].key = "masterAddr";
		ext[rsp.ext_count++].value = res.master_addr;
	}
	if (res.ha_addr) {
		ext[rsp.ext_count].key = "haServerAddr";
		ext[rsp.ext_count++].value = res.ha_addr;
	}
	route_read_lock();
	const struct options *o = config_current(app->config);
	if (o->returnOrderTopicConfigToBroker && !remoting_is_oneway(&mu->req->cmd) &&
	    kv_table_json(app->kv, KV_NAMESPACE_ORDER_TOPIC_CONFIG, &kv) == 0) {
		rsp.body = kv.data;
		rsp.body_len = (uint32_t)kv.len;
	}
	route_read_unlock();
	request_reply(mu->req, &rsp);
	buf_free(&kv);
	route_reg_result_free(&res);
	mut_free(mu);
}

static void h_register_broker(struct app *app, struct request *req)
{
	const struct remoting_cmd *cmd = &req->cmd;
	const char *name, *addr, *cluster;
	int64_t id, timeout = 0, crc_want = 0;
	char why[160], remark[sizeof(why) + sizeof(DECODE_FAILED) + 8];
	uint32_t crc;
	uint64_t hash;
	struct route_mut *mu;
	int rc;

	if (!(name = need_ext(req, "brokerName")) || !(addr = need_ext(req, "brokerAddr")) ||
	    !(cluster = need_ext(req, "clusterName")))
		return;
	if (!remoting_ext_get_long(cmd, "brokerId", &id)) {
		reply_free(req, RSP_SYSTEM_ERROR, "the request has no brokerId");
		return;
	}
	if (cmd->version < 0) {
		reply_free(req, RSP_SYSTEM_ERROR, "REGISTER_BROKER with a negative version");
		return;
	}
	/* the CRC bodyCrc32 is checked against and a hash beside it, in one
	 * walk: together the identity of the body */
	regbody_fingerprint(cmd->body, cmd->body_len, &crc, &hash);
	if (remoting_ext_get_long(cmd, "bodyCrc32", &crc_want) && crc_want != 0 && crc_want != (int64_t)crc) {
		struct remoting_cmd rsp;
		remoting_response_init(&rsp, cmd, RSP_SYSTEM_ERROR, "crc32 not match");
		rsp.ext_present = true;
		request_reply(req, &rsp);
		request_free(req);
		return;
	}

	mu = mut_new(app, req, apply_register);
	if (!mu) {
		reply_out_of_memory(req);
		return;
	}
	mu->reg.cluster = cluster;
	mu->reg.name = name;
	mu->reg.addr = addr;
	mu->reg.ha_addr = remoting_ext_get(cmd, "haServerAddr");
	mu->reg.id = id;
	mu->reg.new_style = remoting_ext_get(cmd, "enableActingMaster") != NULL;
	mu->reg.acting_master = remoting_ext_get_bool(cmd, "enableActingMaster");
	mu->reg.zone = remoting_ext_get(cmd, "__ZONE_NAME");
	if (remoting_ext_get_long(cmd, "heartbeatTimeoutMillis", &timeout) && timeout > 0)
		mu->reg.timeout_ms = timeout;
	mu->reg.conn_id = req->conn.id;
	mu->reg.body_id = (struct route_body_id){
		.bytes = cmd->body, .len = cmd->body_len, .hash = hash, .crc = crc, .version = cmd->version,
		.compressed = remoting_ext_get_bool(cmd, "compressed"),
	};

	route_read_lock();
	const struct options *o = config_current(app->config);
	mu->reg.body_id.max_bytes = o->registerInflateMaxBytes > 0 ? (size_t)o->registerInflateMaxBytes
								   : REGBODY_DEFAULT_MAX_BYTES;
	mu->reg.delete_missing_topics = o->deleteTopicWithBrokerRegistration;
	/* the broker's last body again, on the same connection: nothing in
	 * it needs reading (the registrar makes sure, docs/architecture.md) */
	bool same = route_body_is_last(app->route, cluster, addr, req->conn.id, &mu->reg.body_id);
	route_read_unlock();

	if (!same && (rc = register_decode(mu, why, sizeof(why))) != 0) {
		log_warn("route: undecodable registration from %s (%s): %s", addr, req->peer, why);
		snprintf(remark, sizeof(remark), "%s, %s", DECODE_FAILED, why);
		mu->req = NULL;
		mut_free(mu);
		reply_free(req, RSP_SYSTEM_ERROR, remark);
		return;
	}
	if (app->pool) {
		processor_pool_handoff_begin(app->pool);
		mu->handoff = true;
	}
	registrar_submit(app->registrar, &mu->m);
}

static void apply_unregister(struct mutation *m)
{
	struct route_mut *mu = caa_container_of(m, struct route_mut, m);
	const struct remoting_cmd *cmd = &mu->req->cmd;

	if (route_apply_unregister(mu->app->route, remoting_ext_get(cmd, "clusterName"),
				   remoting_ext_get(cmd, "brokerAddr"), remoting_ext_get(cmd, "brokerName"),
				   mu->req->conn.id) > 0)
		metrics_add(MC_BROKER_UNREGISTERED, 1);
	request_reply_code(mu->req, RSP_SUCCESS, NULL);
	mut_free(mu);
}

static void submit_simple(struct app *app, struct request *req, mutation_apply_fn fn)
{
	struct route_mut *mu = mut_new(app, req, fn);

	if (!mu) {
		reply_out_of_memory(req);
		return;
	}
	registrar_submit(app->registrar, &mu->m);
}

static void h_unregister_broker(struct app *app, struct request *req)
{
	if (!need_ext(req, "clusterName") || !need_ext(req, "brokerAddr"))
		return;
	submit_simple(app, req, apply_unregister);
}

static void apply_write_perm(struct mutation *m)
{
	struct route_mut *mu = caa_container_of(m, struct route_mut, m);
	bool add = mu->code == REQ_ADD_WRITE_PERM_OF_BROKER;
	struct remoting_cmd rsp;
	struct remoting_ext_field ext[1];
	char count[16];
	int n;

	n = route_apply_write_perm(mu->app->route, remoting_ext_get(&mu->req->cmd, "brokerName"), add);
	if (n < 0) {
		request_reply_code(mu->req, RSP_SYSTEM_ERROR, rmqns_strerror(n));
		mut_free(mu);
		return;
	}
	snprintf(count, sizeof(count), "%d", n);
	remoting_response_init(&rsp, &mu->req->cmd, RSP_SUCCESS, NULL);
	ext[0].key = add ? "addTopicCount" : "wipeTopicCount";
	ext[0].value = count;
	rsp.ext = ext;
	rsp.ext_count = 1;
	rsp.ext_present = true;
	request_reply(mu->req, &rsp);
	mut_free(mu);
}

static void h_write_perm(struct app *app, struct request *req)
{
	submit_simple(app, req, apply_write_perm);
}

static void apply_delete_topic(struct mutation *m)
{
	struct route_mut *mu = caa_container_of(m, struct route_mut, m);
	int rc = route_apply_delete_topic(mu->app->route, remoting_ext_get(&mu->req->cmd, "topic"),
					  remoting_ext_get(&mu->req->cmd, "clusterName"));

	request_reply_code(mu->req, rc ? RSP_SYSTEM_ERROR : RSP_SUCCESS, rc ? rmqns_strerror(rc) : NULL);
	mut_free(mu);
}

static void h_delete_topic(struct app *app, struct request *req)
{
	submit_simple(app, req, apply_delete_topic);
}

static void apply_register_topic(struct mutation *m)
{
	struct route_mut *mu = caa_container_of(m, struct route_mut, m);
	int rc = route_apply_register_topic(mu->app->route, remoting_ext_get(&mu->req->cmd, "topic"),
					    mu->queues, mu->n_queues);

	request_reply_code(mu->req, rc ? RSP_SYSTEM_ERROR : RSP_SUCCESS, rc ? rmqns_strerror(rc) : NULL);
	mut_free(mu);
}

/* perm, readQueueNums, writeQueueNums, topicSysFlag: an integer (cut to
 * 32 bits) or integer text; anything else is 0. An integer past int64 or
 * a real past a double makes the body unreadable. */
static int topic_int_member(struct jp *j, int32_t *out)
{
	const char *s;
	size_t n;
	char *text;
	int rc = 0;

	*out = 0;
	switch (jp_peek(j)) {
	case JP_STRING:
		if (jp_string(j, &s, &n))
			return j->err;
		*out = (int32_t)strtol(s, NULL, 10);
		return 0;
	case JP_NUMBER:
		if (jp_number(j, &s, &n))
			return j->err;
		text = strndup(s, n);
		if (!text)
			return RMQNS_ENOMEM;
		errno = 0;
		if (strpbrk(text, ".eE")) {
			if (isinf(strtod(text, NULL)))
				rc = RMQNS_EJSON;
		} else {
			long long v = strtoll(text, NULL, 10);
			if (errno == ERANGE)
				rc = RMQNS_EJSON;
			else
				*out = (int32_t)v;
		}
		free(text);
		return rc;
	default:
		return jp_skip(j);
	}
}

/* One QueueData: brokerName (its offset in `names`, or -1 when it is not
 * a string) and the four numbers. topicSysFlag wins over the misspelt
 * topicSynFlag older brokers write, whenever it is present. */
static int topic_queue(struct jp *j, struct buf *names, struct route_queue_in *in, ptrdiff_t *name)
{
	const char *k, *s;
	size_t n;
	int32_t syn = 0;
	bool has_sys = false;
	int rc;

	*name = -1;
	if (jp_peek(j) != JP_OBJECT)
		return jp_skip(j); /* not an object: an empty entry */
	if (jp_obj_begin(j))
		return j->err;
	while ((rc = jp_obj_key(j, &k, NULL)) == 1) {
		if (strcmp(k, "brokerName") == 0) {
			*name = -1;
			if (jp_peek(j) != JP_STRING) {
				rc = jp_skip(j);
			} else if ((rc = jp_string(j, &s, &n)) == 0) {
				*name = (ptrdiff_t)names->len;
				if (buf_append(names, s, n + 1))
					return RMQNS_ENOMEM;
			}
		} else if (strcmp(k, "perm") == 0) {
			rc = topic_int_member(j, &in->perm);
		} else if (strcmp(k, "readQueueNums") == 0) {
			rc = topic_int_member(j, &in->read_queues);
		} else if (strcmp(k, "writeQueueNums") == 0) {
			rc = topic_int_member(j, &in->write_queues);
		} else if (strcmp(k, "topicSysFlag") == 0) {
			has_sys = true;
			rc = topic_int_member(j, &in->sysflag);
		} else if (strcmp(k, "topicSynFlag") == 0) {
			rc = topic_int_member(j, &syn);
		} else {
			rc = jp_skip(j);
		}
		if (rc)
			return rc;
	}
	if (!has_sys)
		in->sysflag = syn;
	return rc;
}

/* Reads a TopicRouteData body's queueDatas into mu (as fastjson would
 * take it, bare integer keys included). RMQNS_EJSON for a body that is not
 * a readable object; mu->n_queues 0 when it has no queue to register. */
static int topic_route_body(const uint8_t *body, size_t len, struct route_mut *mu)
{
	struct jp j;
	struct buf names = BUF_INIT;
	ptrdiff_t *name_at = NULL;
	uint32_t cap = 0, n = 0;
	const char *k;
	int rc;

	jp_init_opts(&j, body, len, JP_MAX_DEPTH, JP_RFC | JP_REFUSE_BAD_TEXT);
	rc = jp_peek(&j) == JP_OBJECT ? jp_obj_begin(&j) : RMQNS_EJSON;
	while (rc == 0 && (rc = jp_obj_key(&j, &k, NULL)) == 1) {
		if (strcmp(k, "queueDatas") != 0 || jp_peek(&j) != JP_ARRAY) {
			if (strcmp(k, "queueDatas") == 0)
				n = 0; /* the last queueDatas counts */
			rc = jp_skip(&j);
			continue;
		}
		n = 0;
		rc = jp_arr_begin(&j);
		while (rc == 0 && (rc = jp_arr_next(&j)) == 1) {
			if (n == cap) {
				uint32_t ncap = cap ? cap * 2 : 8;
				void *q = realloc(mu->queues, ncap * sizeof(*mu->queues));
				void *o = q ? realloc(name_at, ncap * sizeof(*name_at)) : NULL;
				if (q)
					mu->queues = q;
				if (!o) {
					rc = RMQNS_ENOMEM;
					break;
				}
				name_at = o;
				cap = ncap;
			}
			memset(&mu->queues[n], 0, sizeof(mu->queues[n]));
			rc = topic_queue(&j, &names, &mu->queues[n], &name_at[n]);
			n++;
		}
	}
	if (rc == 0)
		rc = jp_end(&j);
	if (rc == 0 && j.err)
		rc = j.err;
	jp_fini(&j);
	if (rc == 0 && n > 0) {
		mu->names = (char *)names.data; /* the queues point into it from here on */
		names = (struct buf)BUF_INIT;
		for (uint32_t i = 0; i < n; i++)
			mu->queues[i].group = name_at[i] < 0 ? NULL : mu->names + name_at[i];
		mu->n_queues = n;
	}
	buf_free(&names);
	free(name_at);
	return rc == RMQNS_ENOMEM ? rc : rc ? RMQNS_EJSON : 0;
}

static void h_register_topic(struct app *app, struct request *req)
{
	struct route_mut *mu;
	int rc;

	if (!need_ext(req, "topic"))
		return;
	if (!req->cmd.body || req->cmd.body_len == 0) {
		reply_free(req, RSP_SYSTEM_ERROR, "REGISTER_TOPIC_IN_NAMESRV needs a TopicRouteData body");
		return;
	}
	mu = mut_new(app, req, apply_register_topic);
	if (!mu) {
		reply_out_of_memory(req);
		return;
	}
	rc = topic_route_body(req->cmd.body, req->cmd.body_len, mu);
	if (rc || mu->n_queues == 0) {
		mu->req = NULL;
		mut_free(mu);
		if (rc == RMQNS_ENOMEM)
			reply_out_of_memory(req);
		else if (rc)
			reply_free(req, RSP_SYSTEM_ERROR, "REGISTER_TOPIC_IN_NAMESRV body is not a TopicRouteData");
		else
			reply_free(req, RSP_SUCCESS, NULL); /* nothing to register */
		return;
	}
	registrar_submit(app->registrar, &mu->m);
}

const struct handler handlers_route[] = {
	{ REQ_REGISTER_BROKER, h_register_broker, LANE_BROKER, false },
	{ REQ_UNREGISTER_BROKER, h_unregister_broker, LANE_BROKER, false },
	{ REQ_GET_ROUTEINFO_BY_TOPIC, h_get_route, LANE_ROUTE, true },
	{ REQ_GET_BROKER_CLUSTER_INFO, h_cluster_info, LANE_DEFAULT, false },
	{ REQ_WIPE_WRITE_PERM_OF_BROKER, h_write_perm, LANE_DEFAULT, false },
	{ REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, h_all_topics, LANE_DEFAULT, false },
	{ REQ_DELETE_TOPIC_IN_NAMESRV, h_delete_topic, LANE_DEFAULT, false },
	{ REQ_REGISTER_TOPIC_IN_NAMESRV, h_register_topic, LANE_DEFAULT, false },
	{ REQ_GET_TOPICS_BY_CLUSTER, h_cluster_topics, LANE_DEFAULT, false },
	{ REQ_GET_SYSTEM_TOPIC_LIST_FROM_NS, h_system_topics, LANE_DEFAULT, false },
	{ REQ_GET_UNIT_TOPIC_LIST, h_unit_topics, LANE_DEFAULT, false },
	{ REQ_GET_HAS_UNIT_SUB_TOPIC_LIST, h_unit_topics, LANE_DEFAULT, false },
	{ REQ_GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, h_unit_topics, LANE_DEFAULT, false },
	/* broker liveness: one store on the live entry (322, 904) or a short
	 * read (901); run inline, or on the liveness lane, never behind client
	 * reads or registrations */
	{ REQ_QUERY_DATA_VERSION, h_query_data_version, LANE_LIVENESS, true },
	{ REQ_ADD_WRITE_PERM_OF_BROKER, h_write_perm, LANE_DEFAULT, false },
	{ REQ_GET_BROKER_MEMBER_GROUP, h_member_group, LANE_LIVENESS, true },
	{ REQ_BROKER_HEARTBEAT, h_heartbeat, LANE_LIVENESS, true },
	{ 0, NULL, LANE_DEFAULT, false },
};
