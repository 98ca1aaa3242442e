/* REGISTER_BROKER body decoder (protocol.md §5.3-§5.6): plain JSON, the
 * bare wrapper of senders below version 37, the zlib-compressed layout
 * (with the static-topic section from version 413) and bodies flagged plain
 * that are really zlib. Pure functions over bytes: runs on processor
 * threads, in parallel; the result is what the registrar applies. */
#ifndef RMQNS_REGBODY_H
#define RMQNS_REGBODY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rmqns/regbody_types.h"

/* Sender versions that change the body layout (§2.5). */
#define REGBODY_VERSION_WRAPPER_ONLY 37 /* below: the body is a bare wrapper */
#define REGBODY_VERSION_MAPPINGS 413    /* from: compressed bodies carry mappings */

/* Default cap on an inflated (or plain) body: registerInflateMaxBytes. */
#define REGBODY_DEFAULT_MAX_BYTES (64u << 20)
/* Nesting allowed in the JSON of a body; deeper is refused, not recursed. */
#define REGBODY_MAX_DEPTH 64

/* One TopicConfig, reduced to what the NameServer keeps. */
struct regbody_topic {
	const char *name;   /* into the body's arena */
	int32_t read_queues;
	int32_t write_queues;
	int32_t perm;
	int32_t sysflag;    /* 0 for compressed bodies */
	/* private: the decoder's, while it builds the table in place */
	uint32_t name_len;
	uint32_t name_off;
	uint64_t hash;
};

/* One TopicQueueMappingInfo (5.x static topics), as the route answer
 * writes it back. */
struct regbody_mapping {
	const char *key;    /* the topic it was filed under */
	const char *bname;  /* NULL when absent */
	const char *scope;  /* NULL when absent */
	const char *topic;  /* NULL when absent */
	int64_t epoch;
	int32_t total_queues;
	bool dirty;
	bool has_ids;       /* currIdMap present (possibly empty) */
	uint32_t n_ids;
	int32_t (*ids)[2];  /* currIdMap entries in arrival order: {key, value} */
};

struct regbody {
	struct data_version dv;
	uint32_t n_topics;              /* distinct names; the last of duplicates wins */
	struct regbody_topic *topics;   /* in body order */
	uint64_t topics_fp;             /* hash of every topic's name and values, in order */
	bool has_filters;               /* false: list absent, leave stored list alone */
	uint32_t n_filters;
	const char **filters;
	uint32_t n_mappings;
	struct regbody_mapping *mappings;
	/* private */
	char *arena;
	uint32_t *index;                /* open-addressed name index into topics */
	uint32_t index_mask;
};

/* Decodes a body. `compressed` is the request's flag; a body flagged plain
 * that starts with a zlib header is inflated anyway. `version` is the
 * sender's version. `max_bytes` bounds the inflated size (and a plain
 * body's size). body may be NULL/len 0: no topics, DataVersion {0,0,0},
 * an empty filter list. On failure returns a negative rmqns_err, writes a
 * short reason into why, and leaves *out empty (safe to free). */
int regbody_decode(const uint8_t *body, size_t len, bool compressed, int32_t version,
		   size_t max_bytes, struct regbody *out, char *why, size_t whylen);
void regbody_free(struct regbody *rb);

/* The bodyCrc32 check (§4 code 103): true when want is 0 (unchecked) or
 * equals the CRC-32 of the body masked with 0x7FFFFFFF (a missing body
 * has CRC 0). */
bool regbody_crc_matches(const uint8_t *body, size_t len, int64_t want);

/* In one walk over the body: its CRC-32 masked as bodyCrc32 carries it
 * (0 for no body) and a 64-bit hash independent of the CRC. Together with
 * the length they tell an identical re-send from a changed body. */
void regbody_fingerprint(const uint8_t *body, size_t len, uint32_t *crc31, uint64_t *hash);

/* The topic named `name`, or NULL. */
const struct regbody_topic *regbody_find_topic(const struct regbody *rb, const char *name);

/* Parses a DataVersion JSON object (the QUERY_DATA_VERSION body). Missing
 * members are 0. */
int regbody_parse_data_version(const uint8_t *json, size_t len, struct data_version *out);

/* Writes `dv` the way 5.x does: {"counter":N,"stateVersion":S,"timestamp":T}.
 * Returns the length written (at most 96 bytes with the NUL). */
int data_version_format(const struct data_version *dv, char *out, size_t outlen);

#endif
