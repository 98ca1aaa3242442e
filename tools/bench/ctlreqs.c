/* Controller-mode broker requests and the answer fields rmqns-bench reads. */
#include "ctlreqs.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "rmqns/controller.h"
#include "rmqns/err.h"
#include "rmqns/json_tree.h"

#define EXT(k, v) { (k), (v) }
#define NEXT(a) ((uint32_t)(sizeof(a) / sizeof((a)[0])))

static int ctlreqs_send(const struct ctlreqs_broker *b, int32_t code, bool oneway,
			struct remoting_ext_field *ext, uint32_t next, const struct buf *body,
			int32_t opaque, struct buf *out)
{
	struct reqs_request r = {
		.code = code, .oneway = oneway, .ext = ext, .next = next,
		.body = body ? body->data : NULL, .body_len = body ? body->len : 0,
		.opaque = opaque, .version = b->version, .serialize = b->serialize,
	};
	return reqs_request_append(&r, out);
}

int ctlreqs_metadata(int32_t opaque, int32_t version, int serialize, struct buf *out)
{
	return reqs_simple_append(CTL_REQ_GET_METADATA_INFO, opaque, version, serialize, out);
}

int ctlreqs_next_id(const struct ctlreqs_broker *b, int32_t opaque, struct buf *out)
{
	struct remoting_ext_field ext[] = { EXT("clusterName", b->cluster), EXT("brokerName", b->name) };
	return ctlreqs_send(b, CTL_REQ_GET_NEXT_BROKER_ID, false, ext, NEXT(ext), NULL, opaque, out);
}

/* A request whose header is the broker's cluster and name, an id and one
 * more field, in that order. */
static int ctlreqs_send_id(const struct ctlreqs_broker *b, int32_t code, const char *id_key,
			   int64_t id, const char *key, const char *value, int32_t opaque,
			   struct buf *out)
{
	char idt[24];
	snprintf(idt, sizeof idt, "%" PRId64, id);
	struct remoting_ext_field ext[] = {
		EXT("clusterName", b->cluster), EXT("brokerName", b->name),
		EXT(id_key, idt), EXT(key, value),
	};
	return ctlreqs_send(b, code, false, ext, NEXT(ext), NULL, opaque, out);
}

int ctlreqs_apply_id(const struct ctlreqs_broker *b, int64_t id, const char *check_code,
		     int32_t opaque, struct buf *out)
{
	return ctlreqs_send_id(b, CTL_REQ_APPLY_BROKER_ID, "appliedBrokerId", id, "registerCheckCode",
			       check_code, opaque, out);
}

int ctlreqs_register(const struct ctlreqs_broker *b, int32_t opaque, struct buf *out)
{
	return ctlreqs_send_id(b, CTL_REQ_REGISTER_BROKER, "brokerId", b->id, "brokerAddress",
			       b->addr, opaque, out);
}

int ctlreqs_replica_info(const struct ctlreqs_broker *b, int32_t opaque, struct buf *out)
{
	struct remoting_ext_field ext[] = { EXT("brokerName", b->name) };
	return ctlreqs_send(b, CTL_REQ_GET_REPLICA_INFO, false, ext, NEXT(ext), NULL, opaque, out);
}

int ctlreqs_elect(const struct ctlreqs_broker *b, int32_t opaque, struct buf *out)
{
	return ctlreqs_send_id(b, CTL_REQ_ELECT_MASTER, "brokerId", b->id, "designateElect", "false",
			       opaque, out);
}

int ctlreqs_heartbeat(const struct ctlreqs_broker *b, const struct ctlreqs_beat *beat,
		      int32_t opaque, struct buf *out)
{
	char idt[24], epoch[16], maxo[24], conf[24], tmo[24];
	snprintf(idt, sizeof idt, "%" PRId64, b->id);
	snprintf(epoch, sizeof epoch, "%" PRId32, beat->epoch);
	snprintf(maxo, sizeof maxo, "%" PRId64, beat->max_offset);
	snprintf(conf, sizeof conf, "%" PRId64, beat->confirm_offset);
	snprintf(tmo, sizeof tmo, "%" PRId64, beat->timeout_ms);
	struct remoting_ext_field ext[] = {
		EXT("clusterName", b->cluster), EXT("brokerName", b->name), EXT("brokerAddr", b->addr),
		EXT("brokerId", idt), EXT("epoch", epoch), EXT("maxOffset", maxo),
		EXT("confirmOffset", conf), EXT("heartbeatTimeoutMills", tmo),
		EXT("electionPriority", "2147483647"),
	};
	return ctlreqs_send(b, CTL_REQ_BROKER_HEARTBEAT, true, ext, NEXT(ext), NULL, opaque, out);
}

int ctlreqs_alter_sss(const struct ctlreqs_broker *b, int32_t master_epoch, const int64_t *ids,
		      uint32_t n, int32_t sss_epoch, int32_t opaque, struct buf *out)
{
	char idt[24], epoch[16];
	snprintf(idt, sizeof idt, "%" PRId64, b->id);
	snprintf(epoch, sizeof epoch, "%" PRId32, master_epoch);
	struct buf body = BUF_INIT;
	int rc = buf_append_str(&body, "{\"syncStateSet\":[");
	for (uint32_t i = 0; !rc && i < n; i++)
		rc = buf_printf(&body, "%s%" PRId64, i ? "," : "", ids[i]);
	if (!rc)
		rc = buf_printf(&body, "],\"syncStateSetEpoch\":%" PRId32 "}", sss_epoch);
	struct remoting_ext_field ext[] = {
		EXT("brokerName", b->name), EXT("masterBrokerId", idt), EXT("masterEpoch", epoch),
	};
	if (!rc)
		rc = ctlreqs_send(b, CTL_REQ_ALTER_SYNC_STATE_SET, false, ext, NEXT(ext), &body, opaque,
				  out);
	buf_free(&body);
	return rc;
}

int ctlreqs_sync_state_data(const char *name, int32_t opaque, int32_t version, int serialize,
			    struct buf *out)
{
	struct buf body = BUF_INIT;
	int rc = buf_printf(&body, "[\"%s\"]", name); /* bench names need no escaping */
	struct reqs_request r = {
		.code = CTL_REQ_GET_SYNC_STATE_DATA, .body = body.data, .body_len = body.len,
		.opaque = opaque, .version = version, .serialize = serialize,
	};
	if (!rc)
		rc = reqs_request_append(&r, out);
	buf_free(&body);
	return rc;
}

int ctlreqs_ns_register(const struct ctlreqs_broker *b, int64_t ns_broker_id, const char *ha_addr,
			const struct buf *body, int32_t opaque, struct buf *out)
{
	char idt[24], crc[16];
	snprintf(idt, sizeof idt, "%" PRId64, ns_broker_id);
	snprintf(crc, sizeof crc, "%u", reqs_body_crc(body->data, body->len));
	struct remoting_ext_field ext[] = {
		EXT("brokerAddr", b->addr), EXT("brokerId", idt), EXT("brokerName", b->name),
		EXT("clusterName", b->cluster), EXT("compressed", "false"),
		EXT("enableActingMaster", "false"), EXT("haServerAddr", ha_addr), EXT("bodyCrc32", crc),
	};
	return ctlreqs_send(b, REQ_REGISTER_BROKER, false, ext, NEXT(ext), body, opaque, out);
}

/* ---- answers ---- */

static void ctlreqs_sss_from(json_t *arr, struct ctlreqs_master *m)
{
	size_t i;
	json_t *v;
	if (!json_is_array(arr))
		return;
	m->nsss = 0;
	json_array_foreach(arr, i, v) {
		if (!json_is_integer(v) || m->nsss == CTLREQS_MAX_SSS)
			return;
		m->sss[m->nsss++] = (int64_t)json_integer_value(v);
	}
	m->has_sss = true;
}

void ctlreqs_read_master(const struct remoting_cmd *cmd, struct ctlreqs_master *m)
{
	memset(m, 0, sizeof(*m));
	const char *addr = remoting_ext_get(cmd, "masterAddress");
	m->has_master = remoting_ext_get_long(cmd, "masterBrokerId", &m->master_id) && addr &&
			strlen(addr) < sizeof(m->master_addr);
	if (m->has_master)
		memcpy(m->master_addr, addr, strlen(addr) + 1);
	m->has_epoch = remoting_ext_get_int(cmd, "masterEpoch", &m->master_epoch);
	m->has_sss_epoch = remoting_ext_get_int(cmd, "syncStateSetEpoch", &m->sss_epoch);
	if (!cmd->body || !cmd->body_len)
		return;
	int err;
	json_t *doc = json_body_parse(cmd->body, cmd->body_len, &err);
	json_t *e = json_object_get(doc, "syncStateSetEpoch");
	if (json_is_integer(e) && !m->has_sss_epoch) {
		m->has_sss_epoch = true;
		m->sss_epoch = (int32_t)json_integer_value(e);
	}
	ctlreqs_sss_from(json_object_get(doc, "syncStateSet"), m);
	json_decref(doc);
}

bool ctlreqs_read_sync_state_data(const uint8_t *body, size_t len, const char *name,
				  struct ctlreqs_master *m)
{
	memset(m, 0, sizeof(*m));
	int err;
	json_t *doc = body && len ? json_body_parse(body, len, &err) : NULL;
	json_t *set = json_object_get(json_object_get(doc, "replicasInfoTable"), name);
	if (!json_is_object(set)) {
		json_decref(doc);
		return false;
	}
	json_t *id = json_object_get(set, "masterBrokerId");
	json_t *addr = json_object_get(set, "masterAddress");
	if (json_is_integer(id) && json_is_string(addr) &&
	    strlen(json_string_value(addr)) < sizeof(m->master_addr)) {
		m->has_master = true;
		m->master_id = (int64_t)json_integer_value(id);
		snprintf(m->master_addr, sizeof(m->master_addr), "%s", json_string_value(addr));
	}
	json_t *e = json_object_get(set, "masterEpoch");
	if ((m->has_epoch = json_is_integer(e)))
		m->master_epoch = (int32_t)json_integer_value(e);
	e = json_object_get(set, "syncStateSetEpoch");
	if ((m->has_sss_epoch = json_is_integer(e)))
		m->sss_epoch = (int32_t)json_integer_value(e);
	json_t *in = json_object_get(set, "inSyncReplicas");
	if (json_is_array(in)) {
		size_t i;
		json_t *r;
		m->has_sss = true;
		json_array_foreach(in, i, r) {
			json_t *rid = json_object_get(r, "brokerId");
			if (json_is_integer(rid) && m->nsss < CTLREQS_MAX_SSS)
				m->sss[m->nsss++] = (int64_t)json_integer_value(rid);
		}
	}
	json_decref(doc);
	return true;
}

bool ctlreqs_read_leader(const struct remoting_cmd *cmd, char *addr, size_t cap)
{
	const char *a = remoting_ext_get(cmd, "controllerLeaderAddress");
	if (cmd->code != RSP_SUCCESS || !a || !*a || strlen(a) >= cap)
		return false;
	memcpy(addr, a, strlen(a) + 1);
	return true;
}

bool ctlreqs_read_route_master(const uint8_t *body, size_t len, const char *name, char *addr,
			       size_t cap)
{
	int err;
	json_t *doc = body && len ? json_body_parse(body, len, &err) : NULL;
	json_t *bd = json_object_get(doc, "brokerDatas");
	size_t i;
	json_t *d;
	bool found = false;
	json_array_foreach(bd, i, d) {
		json_t *n = json_object_get(d, "brokerName");
		if (!json_is_string(n) || strcmp(json_string_value(n), name) != 0)
			continue;
		json_t *a = json_object_get(json_object_get(d, "brokerAddrs"), "0");
		if (json_is_string(a) && strlen(json_string_value(a)) < cap) {
			snprintf(addr, cap, "%s", json_string_value(a));
			found = true;
		}
		break;
	}
	json_decref(doc);
	return found;
}
