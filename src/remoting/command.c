/* The command model of remoting.h: whole-frame decode and encode around the
 * two header codecs, responses (§2.6) and typed ext-field reads (§2.7). The
 * header byte formats live in header_*.c, the language table in
 * language.c. */
#include <stdlib.h>
#include <string.h>

#include "rmqns/err.h"
#include "rmqns/remoting.h"
#include "remoting_int.h"

/* ---- decoding ---- */

int remoting_decode_header(const uint8_t *hdr, size_t len, enum remoting_serialize ser,
			   struct remoting_cmd *cmd)
{
	memset(cmd, 0, sizeof(*cmd));
	int rc;
	switch (ser) {
	case REMOTING_JSON:
		rc = remoting_decode_json_header(hdr, len, cmd);
		break;
	case REMOTING_ROCKETMQ:
		rc = remoting_decode_binary_header(hdr, len, cmd);
		break;
	default:
		return RMQNS_EPROTO;
	}
	if (rc) {
		memset(cmd, 0, sizeof(*cmd));
		return rc;
	}
	cmd->serialize = ser;
	return RMQNS_OK;
}

int remoting_decode(const uint8_t *frame, size_t frame_size, struct remoting_cmd *cmd)
{
	memset(cmd, 0, sizeof(*cmd));
	if (frame_size < 8)
		return RMQNS_EPROTO;
	/* The caller normally passes what remoting_frame_cut measured; check
	 * again so a frame that lies about its own length is never trusted. */
	uint32_t flen = rd_be32(frame);
	if (flen > INT32_MAX || flen < REMOTING_MIN_FRAME_LENGTH || (size_t)flen + 4 != frame_size)
		return RMQNS_EPROTO;
	uint32_t word = rd_be32(frame + 4);
	uint32_t ser = word >> 24;
	size_t hlen = word & 0x00FFFFFFu;
	if (hlen > flen - 4)
		return RMQNS_EPROTO;
	if (ser != REMOTING_JSON && ser != REMOTING_ROCKETMQ)
		return RMQNS_EPROTO;

	int rc = remoting_decode_header(frame + 8, hlen, (enum remoting_serialize)ser, cmd);
	if (rc)
		return rc;
	size_t blen = frame_size - 8 - hlen;
	if (blen > 0) {
		cmd->body = frame + 8 + hlen;
		cmd->body_len = (uint32_t)blen;
	}
	return RMQNS_OK;
}

void remoting_cmd_release(struct remoting_cmd *cmd)
{
	if (!cmd)
		return;
	free(cmd->storage);
	memset(cmd, 0, sizeof(*cmd));
}

/* ---- encoding ---- */

int remoting_encode_header(const struct remoting_cmd *cmd, enum remoting_serialize ser,
			   struct buf *out)
{
	switch (ser) {
	case REMOTING_JSON:
		return remoting_encode_json_header(cmd, out);
	case REMOTING_ROCKETMQ:
		return remoting_encode_binary_header(cmd, out);
	}
	return RMQNS_EINVAL;
}

int remoting_encode_head(const struct remoting_cmd *cmd, uint32_t body_len, struct buf *out)
{
	size_t start = out->len;
	static const uint8_t zero[8];
	int rc = buf_append(out, zero, sizeof(zero));
	if (rc)
		return rc;
	rc = remoting_encode_header(cmd, cmd->serialize, out);
	if (rc) {
		out->len = start;
		return rc;
	}
	size_t hlen = out->len - start - 8;
	uint64_t flen = 4 + (uint64_t)hlen + body_len;
	if (hlen > 0x00FFFFFFu || flen > INT32_MAX) {
		out->len = start;
		return RMQNS_ETOOBIG;
	}
	wr_be32(out->data + start, (uint32_t)flen);
	wr_be32(out->data + start + 4, ((uint32_t)cmd->serialize << 24) | (uint32_t)hlen);
	return RMQNS_OK;
}

int remoting_encode(const struct remoting_cmd *cmd, struct buf *out)
{
	uint32_t blen = cmd->body ? cmd->body_len : 0;
	size_t start = out->len;
	int rc = remoting_encode_head(cmd, blen, out);
	if (rc)
		return rc;
	rc = buf_append(out, cmd->body, blen);
	if (rc)
		out->len = start;
	return rc;
}

/* ---- ext fields ---- */

const char *remoting_ext_get(const struct remoting_cmd *cmd, const char *key)
{
	for (uint32_t i = 0; i < cmd->ext_count; i++) {
		const struct remoting_ext_field *f = &cmd->ext[i];
		if (f->key && f->value && strcmp(f->key, key) == 0)
			return f->value;
	}
	return NULL;
}

/* Java's Long.parseLong: optional sign, at least one ASCII digit, nothing
 * else (no spaces), and the value must fit in [min, max]. */
static bool remoting_parse_integer(const char *s, int64_t min, int64_t max, int64_t *out)
{
	bool neg = false;
	if (*s == '-' || *s == '+') {
		neg = *s == '-';
		s++;
	}
	if (!*s)
		return false;
	/* Accumulate negatively so INT64_MIN parses without overflow. */
	int64_t v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		int d = *s - '0';
		if (v < (INT64_MIN + d) / 10)
			return false;
		v = v * 10 - d;
	}
	if (!neg) {
		if (v == INT64_MIN)
			return false;
		v = -v;
	}
	if (v < min || v > max)
		return false;
	*out = v;
	return true;
}

bool remoting_ext_get_long(const struct remoting_cmd *cmd, const char *key, int64_t *out)
{
	const char *v = remoting_ext_get(cmd, key);
	return v && remoting_parse_integer(v, INT64_MIN, INT64_MAX, out);
}

bool remoting_ext_get_int(const struct remoting_cmd *cmd, const char *key, int32_t *out)
{
	int64_t v;
	const char *s = remoting_ext_get(cmd, key);
	if (!s || !remoting_parse_integer(s, INT32_MIN, INT32_MAX, &v))
		return false;
	*out = (int32_t)v;
	return true;
}

bool remoting_ext_get_bool(const struct remoting_cmd *cmd, const char *key)
{
	const char *v = remoting_ext_get(cmd, key);
	return v && strcasecmp(v, "true") == 0;
}

void remoting_ext_read(const struct remoting_cmd *cmd, struct remoting_field *fields, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		struct remoting_field *f = &fields[k];
		f->value = remoting_ext_get(cmd, f->key);
		f->num = 0;
		switch (f->kind) {
		case REMOTING_FIELD_LONG:
			f->ok = f->value && remoting_parse_integer(f->value, INT64_MIN, INT64_MAX, &f->num);
			break;
		case REMOTING_FIELD_BOOL:
			f->ok = f->value && strcasecmp(f->value, "true") == 0;
			break;
		default:
			f->ok = f->value != NULL;
			break;
		}
	}
}

/* ---- request codes ---- */

static const struct {
	int32_t code;
	const char *name;
} remoting_request_names[] = {
	{ REQ_PUT_KV_CONFIG, "PUT_KV_CONFIG" },
	{ REQ_GET_KV_CONFIG, "GET_KV_CONFIG" },
	{ REQ_DELETE_KV_CONFIG, "DELETE_KV_CONFIG" },
	{ REQ_REGISTER_BROKER, "REGISTER_BROKER" },
	{ REQ_UNREGISTER_BROKER, "UNREGISTER_BROKER" },
	{ REQ_GET_ROUTEINFO_BY_TOPIC, "GET_ROUTEINFO_BY_TOPIC" },
	{ REQ_GET_BROKER_CLUSTER_INFO, "GET_BROKER_CLUSTER_INFO" },
	{ REQ_WIPE_WRITE_PERM_OF_BROKER, "WIPE_WRITE_PERM_OF_BROKER" },
	{ REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, "GET_ALL_TOPIC_LIST_FROM_NAMESERVER" },
	{ REQ_DELETE_TOPIC_IN_NAMESRV, "DELETE_TOPIC_IN_NAMESRV" },
	{ REQ_REGISTER_TOPIC_IN_NAMESRV, "REGISTER_TOPIC_IN_NAMESRV" },
	{ REQ_GET_KVLIST_BY_NAMESPACE, "GET_KVLIST_BY_NAMESPACE" },
	{ REQ_GET_TOPICS_BY_CLUSTER, "GET_TOPICS_BY_CLUSTER" },
	{ REQ_GET_SYSTEM_TOPIC_LIST_FROM_NS, "GET_SYSTEM_TOPIC_LIST_FROM_NS" },
	{ REQ_GET_UNIT_TOPIC_LIST, "GET_UNIT_TOPIC_LIST" },
	{ REQ_GET_HAS_UNIT_SUB_TOPIC_LIST, "GET_HAS_UNIT_SUB_TOPIC_LIST" },
	{ REQ_GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST" },
	{ REQ_UPDATE_NAMESRV_CONFIG, "UPDATE_NAMESRV_CONFIG" },
	{ REQ_GET_NAMESRV_CONFIG, "GET_NAMESRV_CONFIG" },
	{ REQ_QUERY_DATA_VERSION, "QUERY_DATA_VERSION" },
	{ REQ_ADD_WRITE_PERM_OF_BROKER, "ADD_WRITE_PERM_OF_BROKER" },
	{ REQ_GET_BROKER_MEMBER_GROUP, "GET_BROKER_MEMBER_GROUP" },
	{ REQ_BROKER_HEARTBEAT, "BROKER_HEARTBEAT" },
	{ REQ_NOTIFY_MIN_BROKER_ID_CHANGE, "NOTIFY_MIN_BROKER_ID_CHANGE" },
	/* the controller's (controller.md §3), by number: remoting knows no controller */
	{ 1001, "CONTROLLER_ALTER_SYNC_STATE_SET" },
	{ 1002, "CONTROLLER_ELECT_MASTER" },
	{ 1003, "CONTROLLER_REGISTER_BROKER" },
	{ 1004, "CONTROLLER_GET_REPLICA_INFO" },
	{ 1005, "CONTROLLER_GET_METADATA_INFO" },
	{ 1006, "CONTROLLER_GET_SYNC_STATE_DATA" },
	{ 1007, "GET_BROKER_EPOCH_CACHE" },
	{ 1008, "NOTIFY_BROKER_ROLE_CHANGED" },
	{ 1009, "UPDATE_CONTROLLER_CONFIG" },
	{ 1010, "GET_CONTROLLER_CONFIG" },
	{ 1011, "CLEAN_BROKER_DATA" },
	{ 1012, "CONTROLLER_GET_NEXT_BROKER_ID" },
	{ 1013, "CONTROLLER_APPLY_BROKER_ID" },
};

const char *remoting_request_name(int32_t code)
{
	for (size_t i = 0; i < sizeof remoting_request_names / sizeof remoting_request_names[0]; i++)
		if (remoting_request_names[i].code == code)
			return remoting_request_names[i].name;
	return NULL;
}
