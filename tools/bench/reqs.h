/* The requests rmqns-bench sends: GET_ROUTEINFO_BY_TOPIC from a template
 * the project's encoder produced once (so per-request cost is a few
 * copies), REGISTER_BROKER heads and bodies in the plain JSON (§5.5) and
 * compressed (§5.6) layouts, and the small probe used by `startup`.
 * Topic and broker naming lives here too, so every scenario agrees. The
 * request codes are the project's own (enum request_code, remoting.h). */
#ifndef BENCH_REQS_H
#define BENCH_REQS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rmqns/buf.h"
#include "rmqns/remoting.h"
#include "opts.h"

#define REQS_NAME_MAX 160

/* Topic j of broker b: PREFIX-b<b>-t<j> (distinct) or PREFIX-t<j> (shared). */
int reqs_topic_name(char *out, size_t cap, const char *prefix, enum bench_layout layout,
		    uint32_t broker, uint32_t topic);

/* A route request cut around its topic and opaque, so a request is the
 * template's pieces with the topic and the opaque's digits in between. */
struct reqs_route_tpl {
	int32_t version;
	int serialize;    /* 0 JSON, 1 ROCKETMQ */
	bool spliced;     /* false: encode every request (binary headers) */
	struct buf head;  /* the whole template frame */
	size_t topic_off, topic_len;   /* sentinel topic within head */
	size_t opaque_off, opaque_len; /* sentinel opaque digits within head */
	size_t signed_off; /* the Signature value within head; 0 = unsigned */
};

/* Signs every request built from now on as an ACL 1.0 client does
 * (AccessKey and Signature ext fields). NULL: unsigned (the default).
 * Call before building any request; the strings must outlive them. */
void reqs_set_credentials(const char *access_key, const char *secret_key);

int reqs_route_tpl_init(struct reqs_route_tpl *t, int32_t version, int serialize);
void reqs_route_tpl_free(struct reqs_route_tpl *t);
/* Appends one whole GET_ROUTEINFO_BY_TOPIC frame. The topic must be a
 * name that needs no JSON escaping (bench names always are). */
int reqs_route_append(const struct reqs_route_tpl *t, const char *topic, int32_t opaque,
		      struct buf *out);

/* One fake broker: its identity and its registration body. */
struct reqs_broker {
	char name[REQS_NAME_MAX];
	char addr[64];
	char ha_addr[64];
	char cluster[64];
	char id[12];         /* brokerId, decimal */
	bool compressed;
	int32_t version;
	int serialize;
	struct buf body[2];  /* two data versions, alternated when the version changes */
	uint32_t crc[2];     /* masked CRC-32 of each body as sent */
	int64_t dv_timestamp[2]; /* the data version of each body: counter v + 1, this timestamp */
	uint32_t nbodies;
};

struct reqs_body_spec {
	const char *topic_prefix;
	enum bench_layout layout;
	uint32_t topics;     /* topics in the body */
	uint32_t queues;
	bool compressed;
	int32_t version;     /* sender version: >= 413 adds the mapping section (compressed) */
	int64_t state_version; /* the data version's stateVersion (a controller-mode broker's master epoch) */
};

/* Appends the registration body of broker `broker` with the given data
 * version counter: plain RegisterBrokerBody JSON, or the zlib stream of
 * the compressed layout. */
int reqs_register_body(struct buf *out, const struct reqs_body_spec *spec, uint32_t broker,
		       int64_t counter, int64_t timestamp);
/* CRC-32 (zlib) of the bytes as sent, masked with 0x7FFFFFFF (§4, 103). */
uint32_t reqs_body_crc(const uint8_t *p, size_t n);

/* Names the broker and builds its bodies (one, or two when dv_change). */
int reqs_broker_init(struct reqs_broker *b, const struct bench_opts *o,
		     const struct reqs_body_spec *spec, const char *broker_prefix,
		     uint32_t index, bool dv_change);
void reqs_broker_free(struct reqs_broker *b);
/* Appends a whole REGISTER_BROKER frame carrying body `variant`. */
int reqs_register_append(const struct reqs_broker *b, uint32_t variant, int32_t opaque,
			 struct buf *out);
/* Appends only its head (length prefix, header word, header): the caller
 * sends b->body[variant] right after, without copying it. */
int reqs_register_head(const struct reqs_broker *b, uint32_t variant, int32_t opaque,
		       struct buf *out);

/* Liveness requests of a registered broker (protocol.md §4): BROKER_HEARTBEAT
 * (904) with the three fields a 5.x broker fills in, and QUERY_DATA_VERSION
 * (322) carrying the data version of body `variant` (so `changed` is false
 * once that body is registered). */
int reqs_heartbeat_append(const struct reqs_broker *b, int32_t opaque, struct buf *out);
int reqs_query_dv_append(const struct reqs_broker *b, uint32_t variant, int32_t opaque,
			 struct buf *out);
/* PUT_KV_CONFIG (100) of (namespace, key, value). */
int reqs_kv_put_append(const char *ns, const char *key, const char *value, int32_t opaque,
		       int32_t version, int serialize, struct buf *out);

/* Any request: its ext fields in order, an optional body, signed when
 * credentials are set. */
struct reqs_request {
	int32_t code;
	bool oneway;
	struct remoting_ext_field *ext;
	uint32_t next;
	const uint8_t *body;   /* NULL: none */
	size_t body_len;
	int32_t opaque;
	int32_t version;
	int serialize;         /* 0 JSON, 1 ROCKETMQ */
};
int reqs_request_append(const struct reqs_request *r, struct buf *out);

/* Appends a request with no ext fields and no body (e.g. code 106). */
int reqs_simple_append(int32_t code, int32_t opaque, int32_t version, int serialize,
		       struct buf *out);

#endif
