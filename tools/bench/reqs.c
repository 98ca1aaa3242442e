/* Request frames and registration bodies of rmqns-bench, built with the
 * project's own encoder and JSON writer. */
#include "reqs.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <zlib.h>

#include "rmqns/acl.h"
#include "rmqns/err.h"
#include "rmqns/json_body.h"
#include "rmqns/remoting.h"

#define REQS_SENTINEL_TOPIC "RmqnsBenchTopicSentinel"
#define REQS_SENTINEL_OPAQUE 2147483647
#define REQS_SENTINEL_OPAQUE_TEXT "2147483647"

int reqs_topic_name(char *out, size_t cap, const char *prefix, enum bench_layout layout,
		    uint32_t broker, uint32_t topic)
{
	int n = layout == LAYOUT_SHARED
		? snprintf(out, cap, "%s-t%u", prefix, topic)
		: snprintf(out, cap, "%s-b%u-t%u", prefix, broker, topic);
	return n < 0 || (size_t)n >= cap ? RMQNS_ETOOBIG : RMQNS_OK;
}

/* ACL 1.0 credentials: set once before any request is built. */
static const char *reqs_access_key, *reqs_secret_key;

void reqs_set_credentials(const char *access_key, const char *secret_key)
{
	reqs_access_key = access_key && *access_key ? access_key : NULL;
	reqs_secret_key = secret_key;
}

/* remoting_encode, or remoting_encode_head when head_only (the body is
 * then only signed, the caller sends it), signed when credentials are set. */
static int reqs_cmd_encode(struct remoting_cmd *cmd, bool head_only, struct buf *out)
{
	struct acl_signed s = { 0 };
	if (reqs_access_key) {
		int rc = acl_sign_cmd(cmd, reqs_access_key, reqs_secret_key, &s);
		if (rc)
			return rc;
	}
	int rc = head_only ? remoting_encode_head(cmd, cmd->body_len, out) : remoting_encode(cmd, out);
	acl_signed_free(&s);
	return rc;
}

static int reqs_route_encode(int32_t version, int serialize, const char *topic, int32_t opaque,
			     struct buf *out)
{
	struct remoting_ext_field ext = { .key = "topic", .value = topic };
	struct remoting_cmd cmd = {
		.code = REQ_GET_ROUTEINFO_BY_TOPIC, .language = LANG_JAVA, .version = version,
		.opaque = opaque, .flag = 0, .ext = &ext, .ext_count = 1, .ext_present = true,
		.serialize = serialize ? REMOTING_ROCKETMQ : REMOTING_JSON,
	};
	return reqs_cmd_encode(&cmd, false, out);
}

/* The signature of a route request for topic: what the signer computes
 * for the ext fields AccessKey and topic, no body. */
static int reqs_route_signature(const char *topic, char *sig)
{
	struct remoting_ext_field ext[] = {
		{ ACL_EXT_ACCESS_KEY, reqs_access_key },
		{ "topic", topic },
	};
	struct remoting_cmd cmd = { .ext = ext, .ext_count = 2 };
	return acl_signature(&cmd, reqs_secret_key, sig);
}

static const uint8_t *reqs_find(const uint8_t *hay, size_t n, const char *needle)
{
	size_t k = strlen(needle);
	if (k == 0 || k > n)
		return NULL;
	const uint8_t *hit = memmem(hay, n, needle, k);
	/* the sentinel must occur exactly once */
	if (hit && memmem(hit + 1, n - (size_t)(hit + 1 - hay), needle, k))
		return NULL;
	return hit;
}

/* Decimal text of v (what "%d" writes), without printf's cost on the hot path. */
static int reqs_itoa(char *out, int32_t v)
{
	char tmp[12];
	int n = 0, k = 0;
	uint32_t u = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		out[k++] = '-';
	while (n)
		out[k++] = tmp[--n];
	out[k] = '\0';
	return k;
}

/* Builds the spliced request for (topic, opaque) from the template. */
static int reqs_route_splice(const struct reqs_route_tpl *t, const char *topic, int32_t opaque,
			     struct buf *out)
{
	char digits[16];
	int nd = reqs_itoa(digits, opaque);
	size_t tl = strlen(topic);
	size_t total = t->head.len - t->topic_len - t->opaque_len + tl + (size_t)nd;
	int rc = buf_reserve(out, total);
	if (rc)
		return rc;
	const uint8_t *h = t->head.data;
	/* pieces in byte order: the two sentinels may come in either order */
	size_t first_off = t->topic_off, first_len = t->topic_len;
	size_t second_off = t->opaque_off, second_len = t->opaque_len;
	const char *first = topic, *second = digits;
	size_t first_new = tl, second_new = (size_t)nd;
	if (t->opaque_off < t->topic_off) {
		first_off = t->opaque_off; first_len = t->opaque_len; first = digits; first_new = (size_t)nd;
		second_off = t->topic_off; second_len = t->topic_len; second = topic; second_new = tl;
	}
	size_t start = out->len;
	uint8_t *p = out->data + out->len;
	memcpy(p, h, first_off);
	p += first_off;
	memcpy(p, first, first_new);
	p += first_new;
	size_t mid = second_off - (first_off + first_len);
	memcpy(p, h + first_off + first_len, mid);
	p += mid;
	memcpy(p, second, second_new);
	p += second_new;
	size_t tail = t->head.len - (second_off + second_len);
	memcpy(p, h + second_off + second_len, tail);
	out->len += total;
	/* frameLength and the header length of the header word */
	uint8_t *f = out->data + start;
	uint32_t frame_len = (uint32_t)(total - 4);
	uint32_t word = rd_be32(f + 4);
	uint32_t hdr_len = (uint32_t)(total - 8);
	wr_be32(f, frame_len);
	wr_be32(f + 4, (word & 0xFF000000u) | hdr_len);
	/* the signature sits before both spliced pieces (checked at init) */
	if (t->signed_off) {
		char sig[ACL_SIGNATURE_LEN + 1];
		rc = reqs_route_signature(topic, sig);
		if (rc) {
			out->len = start;
			return rc;
		}
		memcpy(f + t->signed_off, sig, ACL_SIGNATURE_LEN);
	}
	return RMQNS_OK;
}

int reqs_route_tpl_init(struct reqs_route_tpl *t, int32_t version, int serialize)
{
	memset(t, 0, sizeof(*t));
	t->version = version;
	t->serialize = serialize;
	if (serialize)
		return RMQNS_OK; /* binary: lengths inside the header too; encode each time */
	int rc = reqs_route_encode(version, 0, REQS_SENTINEL_TOPIC, REQS_SENTINEL_OPAQUE, &t->head);
	if (rc)
		return rc;
	const uint8_t *topic = reqs_find(t->head.data, t->head.len, "\"" REQS_SENTINEL_TOPIC "\"");
	const uint8_t *opaque = reqs_find(t->head.data, t->head.len,
					  "\"opaque\":" REQS_SENTINEL_OPAQUE_TEXT);
	if (!topic || !opaque || t->head.len < 8 || rd_be32(t->head.data) + 4 != t->head.len)
		return RMQNS_OK; /* unexpected shape: stay on per-request encoding */
	t->topic_off = (size_t)(topic + 1 - t->head.data);
	t->topic_len = strlen(REQS_SENTINEL_TOPIC);
	t->opaque_off = (size_t)(opaque - t->head.data) + strlen("\"opaque\":");
	t->opaque_len = strlen(REQS_SENTINEL_OPAQUE_TEXT);
	if (reqs_access_key) {
		char sig[ACL_SIGNATURE_LEN + 1], needle[ACL_SIGNATURE_LEN + 16];
		rc = reqs_route_signature(REQS_SENTINEL_TOPIC, sig);
		if (rc)
			return rc;
		snprintf(needle, sizeof needle, "\"%s\":\"%s\"", ACL_EXT_SIGNATURE, sig);
		const uint8_t *at = reqs_find(t->head.data, t->head.len, needle);
		if (!at)
			return RMQNS_OK;
		t->signed_off = (size_t)(at - t->head.data) + strlen(needle) - 1 - ACL_SIGNATURE_LEN;
		if (t->signed_off > t->topic_off || t->signed_off > t->opaque_off)
			return RMQNS_OK; /* after a spliced piece: stay on per-request encoding */
	}
	/* Trust the splice only if it reproduces the encoder byte for byte. */
	struct buf a = BUF_INIT, b = BUF_INIT;
	t->spliced = true;
	rc = reqs_route_splice(t, "Probe-b1-t2", 3, &a);
	if (!rc)
		rc = reqs_route_encode(version, 0, "Probe-b1-t2", 3, &b);
	if (rc || a.len != b.len || memcmp(a.data, b.data, a.len) != 0)
		t->spliced = false;
	buf_free(&a);
	buf_free(&b);
	return rc == RMQNS_ENOMEM ? rc : RMQNS_OK;
}

void reqs_route_tpl_free(struct reqs_route_tpl *t)
{
	buf_free(&t->head);
}

int reqs_route_append(const struct reqs_route_tpl *t, const char *topic, int32_t opaque,
		      struct buf *out)
{
	if (t->spliced)
		return reqs_route_splice(t, topic, opaque, out);
	return reqs_route_encode(t->version, t->serialize, topic, opaque, out);
}

uint32_t reqs_body_crc(const uint8_t *p, size_t n)
{
	uLong crc = crc32(0L, Z_NULL, 0);
	while (n > 0) {
		uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
		crc = crc32(crc, p, chunk);
		p += chunk;
		n -= chunk;
	}
	return (uint32_t)crc & 0x7FFFFFFFu;
}

static void reqs_write_dv(struct jw *w, int64_t counter, int64_t timestamp, int64_t state_version)
{
	jw_obj_begin(w);
	jw_key(w, "counter");
	jw_int(w, counter);
	jw_key(w, "stateVersion");
	jw_int(w, state_version);
	jw_key(w, "timestamp");
	jw_int(w, timestamp);
	jw_obj_end(w);
}

static int reqs_plain_body(struct buf *out, const struct reqs_body_spec *spec, uint32_t broker,
			   int64_t counter, int64_t timestamp)
{
	struct jw w;
	char name[REQS_NAME_MAX];
	jw_init(&w, out, JW_DEFAULT);
	jw_obj_begin(&w);
	jw_key(&w, "filterServerList");
	jw_arr_begin(&w);
	jw_arr_end(&w);
	jw_key(&w, "topicConfigSerializeWrapper");
	jw_obj_begin(&w);
	jw_key(&w, "dataVersion");
	reqs_write_dv(&w, counter, timestamp, spec->state_version);
	jw_key(&w, "topicConfigTable");
	jw_obj_begin(&w);
	for (uint32_t j = 0; j < spec->topics && !jw_error(&w); j++) {
		int rc = reqs_topic_name(name, sizeof(name), spec->topic_prefix, spec->layout, broker, j);
		if (rc)
			return rc;
		jw_key(&w, name);
		jw_obj_begin(&w);
		jw_key(&w, "attributes");
		jw_obj_begin(&w);
		jw_obj_end(&w);
		jw_key(&w, "order");
		jw_bool(&w, false);
		jw_key(&w, "perm");
		jw_int(&w, 6);
		jw_key(&w, "readQueueNums");
		jw_int(&w, spec->queues);
		jw_key(&w, "topicFilterType");
		jw_str(&w, "SINGLE_TAG");
		jw_key(&w, "topicName");
		jw_str(&w, name);
		jw_key(&w, "topicSysFlag");
		jw_int(&w, 0);
		jw_key(&w, "writeQueueNums");
		jw_int(&w, spec->queues);
		jw_obj_end(&w);
	}
	jw_obj_end(&w);
	jw_obj_end(&w);
	jw_obj_end(&w);
	return jw_error(&w) ? RMQNS_ENOMEM : RMQNS_OK;
}

/* An int32 length and its bytes: the unit of the compressed layout. */
static int reqs_put_chunk(struct buf *b, const void *p, size_t n)
{
	int rc = buf_put_be32(b, (uint32_t)n);
	return rc ? rc : buf_append(b, p, n);
}

static int reqs_compressed_body(struct buf *out, const struct reqs_body_spec *spec,
				uint32_t broker, int64_t counter, int64_t timestamp)
{
	struct buf raw = BUF_INIT, dv = BUF_INIT;
	struct jw w;
	char name[REQS_NAME_MAX], line[REQS_NAME_MAX + 64];
	jw_init(&w, &dv, JW_DEFAULT);
	reqs_write_dv(&w, counter, timestamp, spec->state_version);
	int rc = jw_error(&w) ? RMQNS_ENOMEM : RMQNS_OK;
	if (!rc)
		rc = reqs_put_chunk(&raw, dv.data, dv.len);
	if (!rc)
		rc = buf_put_be32(&raw, spec->topics);
	for (uint32_t j = 0; j < spec->topics && !rc; j++) {
		rc = reqs_topic_name(name, sizeof(name), spec->topic_prefix, spec->layout, broker, j);
		if (rc)
			break;
		int n = snprintf(line, sizeof(line), "%s %u %u 6 SINGLE_TAG {}", name, spec->queues,
				 spec->queues);
		rc = reqs_put_chunk(&raw, line, (size_t)n);
	}
	if (!rc)
		rc = reqs_put_chunk(&raw, "[]", 2);
	if (!rc && spec->version >= 413)
		rc = buf_put_be32(&raw, 0); /* no static-topic mappings */
	if (!rc) {
		uLongf bound = compressBound((uLong)raw.len);
		rc = buf_reserve(out, bound);
		if (!rc) {
			uLongf got = bound;
			/* level 9, as Java's Deflater(BEST_COMPRESSION) writes it (78 DA) */
			if (compress2(out->data + out->len, &got, raw.data, (uLong)raw.len,
				      Z_BEST_COMPRESSION) != Z_OK)
				rc = RMQNS_EZLIB;
			else
				out->len += got;
		}
	}
	buf_free(&raw);
	buf_free(&dv);
	return rc;
}

int reqs_register_body(struct buf *out, const struct reqs_body_spec *spec, uint32_t broker,
		       int64_t counter, int64_t timestamp)
{
	if (spec->compressed)
		return reqs_compressed_body(out, spec, broker, counter, timestamp);
	return reqs_plain_body(out, spec, broker, counter, timestamp);
}

int reqs_broker_init(struct reqs_broker *b, const struct bench_opts *o,
		     const struct reqs_body_spec *spec, const char *broker_prefix,
		     uint32_t index, bool dv_change)
{
	memset(b, 0, sizeof(*b));
	uint32_t port = o->broker_port + index;
	if (snprintf(b->name, sizeof(b->name), "%s-%u", broker_prefix, index) >= (int)sizeof(b->name))
		return RMQNS_ETOOBIG;
	snprintf(b->addr, sizeof(b->addr), "127.0.0.1:%u", port);
	snprintf(b->ha_addr, sizeof(b->ha_addr), "127.0.0.1:%u", port + 1);
	snprintf(b->cluster, sizeof(b->cluster), "%s", o->cluster);
	snprintf(b->id, sizeof(b->id), "%u", o->broker_id);
	b->compressed = spec->compressed;
	b->version = o->version;
	b->serialize = o->serialize;
	b->nbodies = dv_change ? 2 : 1;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	for (uint32_t v = 0; v < b->nbodies; v++) {
		/* counters 1 and 2: each differs from the other, so alternating
		 * them changes the stored data version on every registration */
		b->dv_timestamp[v] = now_ms + v;
		int rc = reqs_register_body(&b->body[v], spec, index, (int64_t)v + 1, b->dv_timestamp[v]);
		if (rc) {
			reqs_broker_free(b);
			return rc;
		}
		b->crc[v] = reqs_body_crc(b->body[v].data, b->body[v].len);
	}
	return RMQNS_OK;
}

void reqs_broker_free(struct reqs_broker *b)
{
	for (int v = 0; v < 2; v++)
		buf_free(&b->body[v]);
	b->nbodies = 0;
}

int reqs_register_head(const struct reqs_broker *b, uint32_t variant, int32_t opaque,
		       struct buf *out)
{
	if (variant >= b->nbodies)
		return RMQNS_EINVAL;
	char crc[16];
	snprintf(crc, sizeof(crc), "%u", b->crc[variant]);
	struct remoting_ext_field ext[] = {
		{ "brokerAddr", b->addr },
		{ "brokerId", b->id },
		{ "brokerName", b->name },
		{ "clusterName", b->cluster },
		{ "compressed", b->compressed ? "true" : "false" },
		{ "enableActingMaster", "false" },
		{ "haServerAddr", b->ha_addr },
		{ "bodyCrc32", crc },
	};
	struct remoting_cmd cmd = {
		.code = REQ_REGISTER_BROKER, .language = LANG_JAVA, .version = b->version,
		.opaque = opaque, .ext = ext, .ext_count = sizeof(ext) / sizeof(ext[0]),
		.ext_present = true, .serialize = b->serialize ? REMOTING_ROCKETMQ : REMOTING_JSON,
		.body = b->body[variant].data, .body_len = (uint32_t)b->body[variant].len,
	};
	size_t before = out->len;
	int rc = reqs_cmd_encode(&cmd, true, out);
	if (rc)
		out->len = before;
	return rc;
}

int reqs_register_append(const struct reqs_broker *b, uint32_t variant, int32_t opaque,
			 struct buf *out)
{
	size_t before = out->len;
	int rc = reqs_register_head(b, variant, opaque, out);
	if (!rc)
		rc = buf_append(out, b->body[variant].data, b->body[variant].len);
	if (rc)
		out->len = before;
	return rc;
}

int reqs_simple_append(int32_t code, int32_t opaque, int32_t version, int serialize,
		       struct buf *out)
{
	struct remoting_cmd cmd = {
		.code = code, .language = LANG_JAVA, .version = version, .opaque = opaque,
		.serialize = serialize ? REMOTING_ROCKETMQ : REMOTING_JSON,
	};
	return reqs_cmd_encode(&cmd, false, out);
}

int reqs_request_append(const struct reqs_request *r, struct buf *out)
{
	struct remoting_cmd cmd = {
		.code = r->code, .language = LANG_JAVA, .version = r->version, .opaque = r->opaque,
		.flag = r->oneway ? REMOTING_FLAG_ONEWAY : 0,
		.ext = r->ext, .ext_count = r->next, .ext_present = true,
		.body = r->body, .body_len = (uint32_t)r->body_len,
		.serialize = r->serialize ? REMOTING_ROCKETMQ : REMOTING_JSON,
	};
	size_t before = out->len;
	int rc = reqs_cmd_encode(&cmd, false, out);
	if (rc)
		out->len = before;
	return rc;
}

static int reqs_encode(int32_t code, struct remoting_ext_field *ext, uint32_t next,
		       const struct buf *body, int32_t opaque, int32_t version, int serialize,
		       struct buf *out)
{
	struct reqs_request r = {
		.code = code, .ext = ext, .next = next, .body = body ? body->data : NULL,
		.body_len = body ? body->len : 0, .opaque = opaque, .version = version,
		.serialize = serialize,
	};
	return reqs_request_append(&r, out);
}

int reqs_heartbeat_append(const struct reqs_broker *b, int32_t opaque, struct buf *out)
{
	struct remoting_ext_field ext[] = {
		{ "clusterName", b->cluster },
		{ "brokerAddr", b->addr },
		{ "brokerName", b->name },
	};
	return reqs_encode(REQ_BROKER_HEARTBEAT, ext, 3, NULL, opaque, b->version, b->serialize, out);
}

int reqs_query_dv_append(const struct reqs_broker *b, uint32_t variant, int32_t opaque,
			 struct buf *out)
{
	if (variant >= b->nbodies)
		return RMQNS_EINVAL;
	struct buf dv = BUF_INIT;
	struct jw w;
	jw_init(&w, &dv, JW_DEFAULT);
	reqs_write_dv(&w, (int64_t)variant + 1, b->dv_timestamp[variant], 0);
	int rc = jw_error(&w) ? RMQNS_ENOMEM : RMQNS_OK;
	struct remoting_ext_field ext[] = {
		{ "brokerName", b->name },
		{ "brokerAddr", b->addr },
		{ "clusterName", b->cluster },
		{ "brokerId", b->id },
	};
	if (!rc)
		rc = reqs_encode(REQ_QUERY_DATA_VERSION, ext, 4, &dv, opaque, b->version, b->serialize,
				 out);
	buf_free(&dv);
	return rc;
}

int reqs_kv_put_append(const char *ns, const char *key, const char *value, int32_t opaque,
		       int32_t version, int serialize, struct buf *out)
{
	struct remoting_ext_field ext[] = {
		{ "namespace", ns },
		{ "key", key },
		{ "value", value },
	};
	return reqs_encode(REQ_PUT_KV_CONFIG, ext, 3, NULL, opaque, version, serialize, out);
}
