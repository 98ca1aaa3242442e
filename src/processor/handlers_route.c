/* Handlers for the route requests (protocol.md §4): reads answered here
 * inside a read-side section; changes decoded and checked here (the costly
 * part of a registration runs on the processor thread), made by the route
 * module on the registrar thread (route_change.h) and answered from their
 * outcome. Knows the wire; the route module knows the tables. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <urcu/compiler.h>

#include "rmqns/app.h"
#include "rmqns/config.h"
#include "rmqns/err.h"
#include "rmqns/handlers.h"
#include "rmqns/json_body.h"
#include "rmqns/kv.h"
#include "rmqns/log.h"
#include "rmqns/metrics.h"
#include "rmqns/processor.h"
#include "rmqns/race.h"
#include "rmqns/regbody.h"
#include "rmqns/registrar.h"
#include "rmqns/remoting.h"
#include "rmqns/request.h"
#include "rmqns/route.h"
#include "rmqns/route_change.h"

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

/* Answers code 1 naming a required ext field the request lacks. */
static void reply_missing(struct request *req, const char *key)
{
	char remark[128];

	snprintf(remark, sizeof(remark), "the request has no %s", key);
	reply_free(req, RSP_SYSTEM_ERROR, remark);
}

/* A required ext field, or NULL after answering code 1 naming it. */
static const char *need_ext(struct request *req, const char *key)
{
	const char *v = remoting_ext_get(&req->cmd, key);

	if (!v)
		reply_missing(req, key);
	return v;
}

/* ---- 105 GET_ROUTEINFO_BY_TOPIC ---- */

static bool is_blank(const char *s)
{
	for (; s && *s; s++)
		if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r' && *s != '\f' && *s != '\v')
			return false;
	return true;
}

static void handle_get_route(struct app *app, struct request *req)
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

	state_read_lock();
	const struct options *o = config_current(app->config);
	if (o->needWaitForService && !route_db_warm(app->route) &&
	    route_uptime_ms(app->route, route_now_ms()) < (uint64_t)(o->waitSecondsForService > 0 ? o->waitSecondsForService : 0) * 1000u) {
		state_read_unlock();
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
	state_read_unlock();
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

	state_read_lock();
	rc = fn(app, req, &scratch, &body, &len);
	if (rc == 0) {
		remoting_response_init(&rsp, &req->cmd, RSP_SUCCESS, remark);
		rsp.body = body;
		rsp.body_len = (uint32_t)len;
		request_reply(req, &rsp);
	}
	state_read_unlock();
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

	state_read_lock();
	const struct options *o = config_current(app->config);
	off = all ? !o->enableAllTopicList : !o->enableTopicList;
	state_read_unlock();
	return off;
}

/* The list of a request code (cached by the route module). */
static int list_body(struct app *app, struct request *req, struct buf *scratch, const uint8_t **body,
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

static int member_group_body(struct app *app, struct request *req, struct buf *scratch, const uint8_t **body,
			  size_t *len)
{
	int rc = route_member_group(app->route, remoting_ext_get(&req->cmd, "clusterName"),
				    remoting_ext_get(&req->cmd, "brokerName"), scratch);

	*body = scratch->data;
	*len = scratch->len;
	return rc;
}

static void handle_cluster_info(struct app *app, struct request *req)
{
	reply_read(app, req, list_body, NULL);
}

static void handle_all_topics(struct app *app, struct request *req)
{
	if (list_disabled(app, true))
		reply_free(req, RSP_SYSTEM_ERROR, "disable");
	else
		reply_read(app, req, list_body, NULL);
}

static void handle_cluster_topics(struct app *app, struct request *req)
{
	if (list_disabled(app, false))
		reply_free(req, RSP_SYSTEM_ERROR, "disable");
	else
		reply_read(app, req, list_body, NULL);
}

static void handle_system_topics(struct app *app, struct request *req)
{
	reply_read(app, req, list_body, NULL);
}

static void handle_unit_topics(struct app *app, struct request *req)
{
	if (list_disabled(app, false))
		reply_free(req, RSP_SYSTEM_ERROR, "disable");
	else
		reply_read(app, req, list_body, NULL);
}

static void handle_member_group(struct app *app, struct request *req)
{
	/* 5.x leaves the code unset, so the default remark goes out with 0 */
	reply_read(app, req, member_group_body, "not set any response code");
}

/* ---- liveness: 904, 322 ---- */

static void handle_heartbeat(struct app *app, struct request *req)
{
	state_read_lock();
	route_heartbeat(app->route, remoting_ext_get(&req->cmd, "clusterName"),
			remoting_ext_get(&req->cmd, "brokerAddr"), route_now_ms());
	state_read_unlock();
	reply_free(req, RSP_SUCCESS, NULL);
}

static void handle_query_data_version(struct app *app, struct request *req)
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
	state_read_lock();
	route_query_data_version(app->route, remoting_ext_get(&req->cmd, "clusterName"),
				 remoting_ext_get(&req->cmd, "brokerAddr"), &dv, route_now_ms(), &known, &changed,
				 &stored);
	state_read_unlock();
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

/* ---- changes: decoded and checked here, made by the route module on the
 * registrar thread (route_change.h), answered from its outcome ---- */

struct route_request {
	struct route_change change;
	struct handoff_count *handoffs; /* counted (handoff_begin) until freed, or NULL */
	struct app *app;
	struct request *req;
};

static struct route_request *route_request_of(struct route_change *c)
{
	return caa_container_of(c, struct route_request, change);
}

/* Frees the request's side of a change (route_change_fini frees the rest). */
static void route_request_release(struct route_change *c)
{
	struct route_request *rr = route_request_of(c);

	if (rr->handoffs)
		handoff_end(rr->handoffs);
	if (rr->req)
		request_free(rr->req);
	free(rr);
}

/* A change given up before it was submitted, or dropped at the shutdown
 * deadline: both sides freed, nothing answered. */
static void route_request_free(struct route_request *rr)
{
	route_change_fini(&rr->change);
	route_request_release(&rr->change);
}

static void route_request_drop(struct mutation *m)
{
	route_request_free(route_request_of(caa_container_of(m, struct route_change, m)));
}

/* A change whose connection closed while it waited is dropped; a one-way
 * registration still applies (request_is_stale). */
static bool route_request_cancelled(const struct route_change *c)
{
	const struct route_request *rr = caa_container_of(c, struct route_request, change);

	return rr->req && request_is_stale(rr->req);
}

/* The requester's callbacks of an initialised change. */
static void route_request_wire(struct route_request *rr, void (*done)(struct route_change *c))
{
	rr->change.m.drop = route_request_drop;
	rr->change.cancelled = route_request_cancelled;
	rr->change.done = done;
	rr->change.release = route_request_release;
	rr->change.peer = rr->req->peer;
}

static struct route_request *route_request_new(struct app *app, struct request *req,
					       enum route_change_kind kind, void (*done)(struct route_change *c))
{
	struct route_request *rr = calloc(1, sizeof(*rr));

	if (!rr)
		return NULL;
	rr->app = app;
	rr->req = req;
	route_change_init(&rr->change, app->route, kind);
	route_request_wire(rr, done);
	return rr;
}

/* Answers code 0, or code 1 with the error's text. */
static void reply_change_rc(struct route_change *c)
{
	struct route_request *rr = route_request_of(c);

	request_reply_code(rr->req, c->rc ? RSP_SYSTEM_ERROR : RSP_SUCCESS, c->rc ? rmqns_strerror(c->rc) : NULL);
}

static void reply_register_broker(struct route_change *c)
{
	struct route_request *rr = route_request_of(c);
	struct app *app = rr->app;
	const struct route_reg_result *res = &c->res;
	struct remoting_cmd rsp;
	struct remoting_ext_field ext[2];
	struct buf kv = BUF_INIT;

	if (c->rc) {
		char remark[96];
		snprintf(remark, sizeof(remark), "register broker failed: %s", rmqns_strerror(c->rc));
		remoting_response_init(&rsp, &rr->req->cmd, RSP_SYSTEM_ERROR, remark);
		rsp.ext_present = true;
		request_reply(rr->req, &rsp);
		return;
	}
	if (res->outcome == ROUTE_REG_REFUSED) {
		remoting_response_init(&rsp, &rr->req->cmd, RSP_SYSTEM_ERROR, "register broker failed");
		rsp.ext_present = true;
		request_reply(rr->req, &rsp);
		return;
	}
	remoting_response_init(&rsp, &rr->req->cmd, RSP_SUCCESS, NULL);
	rsp.ext = ext;
	rsp.ext_present = true;
	if (res->master_addr) {
		ext[rsp.ext_count].key = "masterAddr";
		ext[rsp.ext_count++].value = res->master_addr;
	}
	if (res->ha_addr) {
		ext[rsp.ext_count].key = "haServerAddr";
		ext[rsp.ext_count++].value = res->ha_addr;
	}
	state_read_lock();
	const struct options *o = config_current(app->config);
	if (o->returnOrderTopicConfigToBroker && !remoting_is_oneway(&rr->req->cmd) &&
	    kv_table_json(app->kv, KV_NAMESPACE_ORDER_TOPIC_CONFIG, &kv) == 0) {
		rsp.body = kv.data;
		rsp.body_len = (uint32_t)kv.len;
	}
	state_read_unlock();
	request_reply(rr->req, &rsp);
	buf_free(&kv);
}

/* The header fields of a REGISTER_BROKER, read in one call. */
enum {
	RB_NAME, RB_ADDR, RB_CLUSTER, /* required, in the order a missing one is named */
	RB_ID, RB_CRC, RB_HA, RB_ACTING, RB_ZONE, RB_TIMEOUT, RB_COMPRESSED, RB_FIELDS
};

static void handle_register_broker(struct app *app, struct request *req)
{
	const struct remoting_cmd *cmd = &req->cmd;
	struct remoting_field f[RB_FIELDS] = {
		[RB_NAME] = { .key = "brokerName" },
		[RB_ADDR] = { .key = "brokerAddr" },
		[RB_CLUSTER] = { .key = "clusterName" },
		[RB_ID] = { .key = "brokerId", .kind = REMOTING_FIELD_LONG },
		[RB_CRC] = { .key = "bodyCrc32", .kind = REMOTING_FIELD_LONG },
		[RB_HA] = { .key = "haServerAddr" },
		[RB_ACTING] = { .key = "enableActingMaster", .kind = REMOTING_FIELD_BOOL },
		[RB_ZONE] = { .key = "__ZONE_NAME" },
		[RB_TIMEOUT] = { .key = "heartbeatTimeoutMillis", .kind = REMOTING_FIELD_LONG },
		[RB_COMPRESSED] = { .key = "compressed", .kind = REMOTING_FIELD_BOOL },
	};
	char why[160], remark[sizeof(why) + sizeof(DECODE_FAILED) + 8];
	struct route_request *rr;
	int rc;

	remoting_ext_read(cmd, f, RB_FIELDS);
	for (int i = RB_NAME; i <= RB_CLUSTER; i++) {
		if (!f[i].value) {
			reply_missing(req, f[i].key);
			return;
		}
	}
	if (!f[RB_ID].ok) {
		reply_free(req, RSP_SYSTEM_ERROR, "the request has no brokerId");
		return;
	}
	if (cmd->version < 0) {
		reply_free(req, RSP_SYSTEM_ERROR, "REGISTER_BROKER with a negative version");
		return;
	}
	struct route_broker_reg reg = {
		.cluster = f[RB_CLUSTER].value,
		.name = f[RB_NAME].value,
		.addr = f[RB_ADDR].value,
		.ha_addr = f[RB_HA].value,
		.id = f[RB_ID].num,
		.new_style = f[RB_ACTING].value != NULL,
		.acting_master = f[RB_ACTING].ok,
		.zone = f[RB_ZONE].value,
		.timeout_ms = f[RB_TIMEOUT].ok && f[RB_TIMEOUT].num > 0 ? f[RB_TIMEOUT].num : 0,
		.conn_id = req->conn.id,
		.body_id = { .bytes = cmd->body, .len = cmd->body_len, .version = cmd->version,
			     .compressed = f[RB_COMPRESSED].ok },
	};
	state_read_lock();
	const struct options *o = config_current(app->config);
	reg.body_id.max_bytes = o->registerInflateMaxBytes > 0 ? (size_t)o->registerInflateMaxBytes
							       : REGBODY_DEFAULT_MAX_BYTES;
	reg.delete_missing_topics = o->deleteTopicWithBrokerRegistration;
	state_read_unlock();

	rr = calloc(1, sizeof(*rr));
	if (!rr) {
		reply_out_of_memory(req);
		return;
	}
	rr->app = app;
	rr->req = req;
	rc = route_change_register_prepare(&rr->change, app->route, &reg, f[RB_CRC].ok ? f[RB_CRC].num : 0, why,
					   sizeof(why));
	if (rc) {
		rr->req = NULL;
		route_request_free(rr);
		if (rc == RMQNS_ECRC) {
			struct remoting_cmd rsp;
			remoting_response_init(&rsp, cmd, RSP_SYSTEM_ERROR, "crc32 not match");
			rsp.ext_present = true;
			request_reply(req, &rsp);
			request_free(req);
			return;
		}
		log_warn("route: undecodable registration from %s (%s): %s", reg.addr, req->peer, why);
		snprintf(remark, sizeof(remark), "%s, %s", DECODE_FAILED, why);
		reply_free(req, RSP_SYSTEM_ERROR, remark);
		return;
	}
	route_request_wire(rr, reply_register_broker);
	if (req->handoffs) {
		handoff_begin(req->handoffs);
		rr->handoffs = req->handoffs;
	}
	registrar_submit(app->registrar, &rr->change.m);
}

static void reply_unregister_broker(struct route_change *c)
{
	struct route_request *rr = route_request_of(c);

	request_reply_code(rr->req, RSP_SUCCESS, NULL);
}

static void submit_change(struct route_request *rr)
{
	registrar_submit(rr->app->registrar, &rr->change.m);
}

static void handle_unregister_broker(struct app *app, struct request *req)
{
	struct route_request *rr;

	if (!need_ext(req, "clusterName") || !need_ext(req, "brokerAddr"))
		return;
	rr = route_request_new(app, req, ROUTE_CHANGE_UNREGISTER_BROKER, reply_unregister_broker);
	if (!rr) {
		reply_out_of_memory(req);
		return;
	}
	rr->change.cluster = remoting_ext_get(&req->cmd, "clusterName");
	rr->change.addr = remoting_ext_get(&req->cmd, "brokerAddr");
	rr->change.name = remoting_ext_get(&req->cmd, "brokerName");
	rr->change.conn_id = req->conn.id;
	submit_change(rr);
}

static void reply_write_perm(struct route_change *c)
{
	struct route_request *rr = route_request_of(c);
	struct remoting_cmd rsp;
	struct remoting_ext_field ext[1];
	char count[16];

	if (c->rc) {
		request_reply_code(rr->req, RSP_SYSTEM_ERROR, rmqns_strerror(c->rc));
		return;
	}
	snprintf(count, sizeof(count), "%d", c->count);
	remoting_response_init(&rsp, &rr->req->cmd, RSP_SUCCESS, NULL);
	ext[0].key = c->add ? "addTopicCount" : "wipeTopicCount";
	ext[0].value = count;
	rsp.ext = ext;
	rsp.ext_count = 1;
	rsp.ext_present = true;
	request_reply(rr->req, &rsp);
}

static void handle_write_perm(struct app *app, struct request *req)
{
	struct route_request *rr = route_request_new(app, req, ROUTE_CHANGE_WRITE_PERM, reply_write_perm);

	if (!rr) {
		reply_out_of_memory(req);
		return;
	}
	rr->change.name = remoting_ext_get(&req->cmd, "brokerName");
	rr->change.add = req->cmd.code == REQ_ADD_WRITE_PERM_OF_BROKER;
	submit_change(rr);
}

static void handle_delete_topic(struct app *app, struct request *req)
{
	struct route_request *rr = route_request_new(app, req, ROUTE_CHANGE_DELETE_TOPIC, reply_change_rc);

	if (!rr) {
		reply_out_of_memory(req);
		return;
	}
	rr->change.topic = remoting_ext_get(&req->cmd, "topic");
	rr->change.cluster = remoting_ext_get(&req->cmd, "clusterName");
	submit_change(rr);
}

static void handle_register_topic(struct app *app, struct request *req)
{
	struct route_request *rr;
	int rc;

	if (!need_ext(req, "topic"))
		return;
	if (!req->cmd.body || req->cmd.body_len == 0) {
		reply_free(req, RSP_SYSTEM_ERROR, "REGISTER_TOPIC_IN_NAMESRV needs a TopicRouteData body");
		return;
	}
	rr = route_request_new(app, req, ROUTE_CHANGE_REGISTER_TOPIC, reply_change_rc);
	if (!rr) {
		reply_out_of_memory(req);
		return;
	}
	rr->change.topic = remoting_ext_get(&req->cmd, "topic");
	rc = route_decode_topic_queues(req->cmd.body, req->cmd.body_len, &rr->change.queues);
	if (rc || rr->change.queues.n == 0) {
		rr->req = NULL;
		route_request_free(rr);
		if (rc == RMQNS_ENOMEM)
			reply_out_of_memory(req);
		else if (rc)
			reply_free(req, RSP_SYSTEM_ERROR, "REGISTER_TOPIC_IN_NAMESRV body is not a TopicRouteData");
		else
			reply_free(req, RSP_SUCCESS, NULL); /* nothing to register */
		return;
	}
	submit_change(rr);
}

const struct handler handlers_route[] = {
	{ REQ_REGISTER_BROKER, handle_register_broker, LANE_BROKER, false },
	{ REQ_UNREGISTER_BROKER, handle_unregister_broker, LANE_BROKER, false },
	{ REQ_GET_ROUTEINFO_BY_TOPIC, handle_get_route, LANE_ROUTE, true },
	{ REQ_GET_BROKER_CLUSTER_INFO, handle_cluster_info, LANE_DEFAULT, false },
	{ REQ_WIPE_WRITE_PERM_OF_BROKER, handle_write_perm, LANE_DEFAULT, false },
	{ REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, handle_all_topics, LANE_DEFAULT, false },
	{ REQ_DELETE_TOPIC_IN_NAMESRV, handle_delete_topic, LANE_DEFAULT, false },
	{ REQ_REGISTER_TOPIC_IN_NAMESRV, handle_register_topic, LANE_DEFAULT, false },
	{ REQ_GET_TOPICS_BY_CLUSTER, handle_cluster_topics, LANE_DEFAULT, false },
	{ REQ_GET_SYSTEM_TOPIC_LIST_FROM_NS, handle_system_topics, LANE_DEFAULT, false },
	{ REQ_GET_UNIT_TOPIC_LIST, handle_unit_topics, LANE_DEFAULT, false },
	{ REQ_GET_HAS_UNIT_SUB_TOPIC_LIST, handle_unit_topics, LANE_DEFAULT, false },
	{ REQ_GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, handle_unit_topics, LANE_DEFAULT, false },
	/* broker liveness: one store on the live entry (322, 904) or a short
	 * read (901); run inline, or on the liveness lane, never behind client
	 * reads or registrations */
	{ REQ_QUERY_DATA_VERSION, handle_query_data_version, LANE_LIVENESS, true },
	{ REQ_ADD_WRITE_PERM_OF_BROKER, handle_write_perm, LANE_DEFAULT, false },
	{ REQ_GET_BROKER_MEMBER_GROUP, handle_member_group, LANE_LIVENESS, true },
	{ REQ_BROKER_HEARTBEAT, handle_heartbeat, LANE_LIVENESS, true },
	{ 0, NULL, LANE_DEFAULT, false },
};
