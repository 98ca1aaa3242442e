/* The JSON layouts of a REGISTER_BROKER body (regbody_json.h): the
 * RegisterBrokerBody, the bare wrapper of old senders, and the JSON items
 * of the compressed layout, read with the pull parser into the table
 * under construction. The common TopicConfig is matched in place; the
 * general loop reads everything else (and everything, when the build
 * asks for the general path). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "regbody_json.h"
#include "rmqns/err.h"
#include "rmqns/json_reader.h"

static int build_jp_fail(struct body_build *b, struct jp *j)
{
	return build_fail(b, j->err ? j->err : RMQNS_EJSON, "%s", j->why ? j->why : "bad JSON");
}

static int parse_dv(struct jp *j, struct data_version *dv)
{
	const char *k;
	int rc;

	memset(dv, 0, sizeof(*dv));
	if (jp_peek(j) == JP_NULL)
		return jp_skip(j);
	if (jp_obj_begin(j))
		return j->err;
	while ((rc = jp_obj_key(j, &k, NULL)) == 1) {
		int64_t *dst = NULL;
		if (strcmp(k, "counter") == 0)
			dst = &dv->counter;
		else if (strcmp(k, "timestamp") == 0)
			dst = &dv->timestamp;
		else if (strcmp(k, "stateVersion") == 0)
			dst = &dv->state_version;
		if (dst && jp_peek(j) != JP_NULL)
			rc = jp_int64(j, dst);
		else
			rc = jp_skip(j);
		if (rc)
			return rc;
	}
	return rc;
}

/* A view handed out by the reader: kept as it is when it points into the
 * body, copied into `keep` when it points into the reader's scratch (the
 * next string read overwrites that). */
static int view_keep(const struct jp *j, struct buf *keep, const char **s, size_t n)
{
	if (*s != (const char *)j->str.data)
		return 0;
	keep->len = 0;
	if (buf_append(keep, *s, n))
		return RMQNS_ENOMEM;
	*s = keep->len ? (const char *)keep->data : "";
	return 0;
}

/* The bytes at *p are lit: true with *p past them. */
static inline bool tc_lit(const uint8_t **p, const uint8_t *end, const char *lit, size_t n)
{
	if ((size_t)(end - *p) < n || memcmp(*p, lit, n) != 0)
		return false;
	*p += n;
	return true;
}
#define TC_LIT(p, end, lit) tc_lit(&(p), end, lit, sizeof(lit) - 1)

/* 1 to 9 digits (a leading zero too, as jp_int32 takes it): what follows
 * is a literal matched next, so a longer number fails there. */
static inline bool tc_digits(const uint8_t **p, const uint8_t *end, int32_t *v)
{
	const uint8_t *q = *p;
	int32_t acc = 0;

	while (q < end && q - *p < 9 && *q >= '0' && *q <= '9')
		acc = acc * 10 + (*q++ - '0');
	if (q == *p)
		return false;
	*v = acc;
	*p = q;
	return true;
}

/* A string holding nothing to decode, from after its opening quote: its
 * bytes in the body, *p past the closing quote. */
static inline bool tc_plain(const uint8_t **p, const uint8_t *end, const char **s, size_t *n)
{
	const uint8_t *e = json_plain_run(*p, end);

	if (e >= end || *e != '"')
		return false;
	*s = (const char *)*p;
	*n = (size_t)(e - *p);
	*p = e + 1;
	return true;
}

/* A TopicConfig exactly as brokers write it (fastjson: members in name
 * order, no whitespace, plain strings; 5.x adds an empty "attributes"):
 *   {"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG",
 *    "topicName":"T","topicSysFlag":0,"writeQueueNums":8}
 * matched byte for byte. On any difference it returns false having
 * changed nothing, and the general loop reads the value; what it takes,
 * the general loop reads the same way (tests/fuzz/fuzz_regbody.c compares
 * the two on every input). */
static bool tc_read_common(struct jp *j, struct regbody_topic *t, const char **name, size_t *name_len)
{
	const uint8_t *p = j->p, *end = j->end;
	const char *filter;
	size_t filter_len;

	/* the general loop opens this object and "attributes" inside it */
	if (j->err || j->depth + 1 >= j->max_depth || !TC_LIT(p, end, "{"))
		return false;
	(void)TC_LIT(p, end, "\"attributes\":{},");
	if (!TC_LIT(p, end, "\"order\":") || !(TC_LIT(p, end, "false,") || TC_LIT(p, end, "true,")) ||
	    !TC_LIT(p, end, "\"perm\":") || !tc_digits(&p, end, &t->perm) ||
	    !TC_LIT(p, end, ",\"readQueueNums\":") || !tc_digits(&p, end, &t->read_queues) ||
	    !TC_LIT(p, end, ",\"topicFilterType\":\"") || !tc_plain(&p, end, &filter, &filter_len) ||
	    !TC_LIT(p, end, ",\"topicName\":\"") || !tc_plain(&p, end, name, name_len) ||
	    !TC_LIT(p, end, ",\"topicSysFlag\":") || !tc_digits(&p, end, &t->sysflag) ||
	    !TC_LIT(p, end, ",\"writeQueueNums\":") || !tc_digits(&p, end, &t->write_queues) ||
	    !TC_LIT(p, end, "}"))
		return false;
	j->p = p;
	return true;
}

/* A member key of a TopicConfig or of the topic table: the reader's inline
 * shortcut, or its general read when the build asks for it. */
static inline int topic_key(const struct body_build *b, struct jp *j, const char **k, size_t *kl)
{
	return b->general ? jp_obj_key_view_general(j, k, kl) : jp_obj_key_view(j, k, kl);
}

/* One TopicConfig value under map key `key` (a reader's view). */
static int parse_topic_config(struct body_build *b, struct jp *j, const char *key, size_t keylen)
{
	struct regbody_topic t = { NULL, 16, 16, 6, 0, 0, 0, 0 }; /* Java's TopicConfig defaults */
	const char *name = NULL, *k;
	size_t name_len = 0, kl;
	int rc;

	/* '{' is what jp_peek finds there, most often, after no whitespace */
	if ((j->p >= j->end || *j->p != '{') && jp_peek(j) == JP_NULL)
		return jp_skip(j);
	if (view_keep(j, &b->key, &key, keylen))
		return RMQNS_ENOMEM;
	uint64_t key_hash = name_hash(key, keylen); /* the topicName, most often */
	build_prefetch(b, key_hash);
	struct regbody_topic common = t;
	if (!b->general && tc_read_common(j, &common, &name, &name_len)) {
		t = common;
		goto add;
	}
	if (jp_obj_begin(j))
		return j->err;
	while ((rc = topic_key(b, j, &k, &kl)) == 1) {
		int32_t *dst = NULL;
		switch (tc_member_of(k, kl)) {
		case TC_NAME:
			if (jp_peek(j) == JP_NULL) {
				rc = jp_skip(j);
			} else if ((rc = jp_string_view(j, &name, &name_len)) == 0) {
				rc = view_keep(j, &b->name, &name, name_len);
			}
			if (rc)
				return rc;
			continue;
		case TC_READ: dst = &t.read_queues; break;
		case TC_WRITE: dst = &t.write_queues; break;
		case TC_PERM: dst = &t.perm; break;
		case TC_SYSFLAG: dst = &t.sysflag; break;
		case TC_BROKER_NAME:
		case TC_SYNFLAG:
		case TC_OTHER: break;
		}
		rc = dst && jp_peek(j) != JP_NULL ? jp_int32(j, dst) : jp_skip(j);
		if (rc)
			return rc;
	}
	if (rc)
		return rc;
add:
	/* The NameServer files a topic under its topicName; the map key
	 * stands in when the name is missing. */
	if (name && (name_len != keylen || memcmp(name, key, keylen) != 0))
		return build_add_topic(b, name, name_len, &t);
	return build_add_topic_hashed(b, key, keylen, key_hash, &t);
}

static int parse_topic_table(struct body_build *b, struct jp *j, size_t body_len)
{
	const char *k;
	size_t kl;
	int rc;

	if (jp_peek(j) == JP_NULL)
		return jp_skip(j);
	if (jp_obj_begin(j))
		return j->err;
	/* room for the topics a body this long holds (a topic takes ~140
	 * bytes of JSON), so the index and the arrays grow seldom */
	if (!b->index && body_len / 256 > 64) {
		int rc2 = build_reserve(b, body_len / 128);
		if (rc2)
			return rc2;
	}
	while ((rc = topic_key(b, j, &k, &kl)) == 1) {
		rc = parse_topic_config(b, j, k, kl);
		if (rc)
			return rc;
	}
	return rc;
}

static int str_member(struct body_build *b, struct jp *j, uint32_t *off)
{
	const char *s;
	size_t n;

	if (jp_peek(j) == JP_NULL) {
		*off = NO_OFF;
		return jp_skip(j);
	}
	if (jp_string(j, &s, &n))
		return j->err;
	return arena_add(b, s, n, off);
}

static int parse_id_map(struct jp *j, struct body_mapping *m)
{
	const char *k;
	size_t kl;
	uint32_t cap = 0;
	int rc;

	m->has_ids = true;
	if (jp_obj_begin(j))
		return j->err;
	while ((rc = jp_obj_key(j, &k, &kl)) == 1) {
		char *end;
		long long key = strtoll(k, &end, 10);
		int32_t val;
		if (kl == 0 || *end || key < INT32_MIN || key > INT32_MAX)
			return RMQNS_EJSON;
		if (jp_int32(j, &val))
			return j->err;
		if (m->n_ids == cap) {
			uint32_t ncap = cap ? cap * 2 : 8;
			int32_t (*nids)[2];
			if (ncap > (1u << 24))
				return RMQNS_ETOOBIG;
			nids = realloc(m->ids, (size_t)ncap * sizeof(*nids));
			if (!nids)
				return RMQNS_ENOMEM;
			m->ids = nids;
			cap = ncap;
		}
		/* a repeated key keeps its first place and takes the new value */
		uint32_t i;
		for (i = 0; i < m->n_ids; i++)
			if (m->ids[i][0] == (int32_t)key)
				break;
		m->ids[i][0] = (int32_t)key;
		m->ids[i][1] = val;
		if (i == m->n_ids)
			m->n_ids++;
	}
	return rc;
}

/* One TopicQueueMappingInfo. key_off is the topic it is filed under, or
 * NO_OFF to use its own "topic" member. */
static int parse_mapping(struct body_build *b, struct jp *j, uint32_t key_off)
{
	struct body_mapping m = { key_off, NO_OFF, NO_OFF, NO_OFF, 0, 0, false, false, 0, NULL };
	const char *k;
	int rc;

	if (jp_peek(j) == JP_NULL)
		return jp_skip(j);
	if (jp_obj_begin(j))
		return j->err;
	while ((rc = jp_obj_key(j, &k, NULL)) == 1) {
		if (strcmp(k, "bname") == 0)
			rc = str_member(b, j, &m.bname_off);
		else if (strcmp(k, "scope") == 0)
			rc = str_member(b, j, &m.scope_off);
		else if (strcmp(k, "topic") == 0)
			rc = str_member(b, j, &m.topic_off);
		else if (strcmp(k, "epoch") == 0 && jp_peek(j) != JP_NULL)
			rc = jp_int64(j, &m.epoch);
		else if (strcmp(k, "totalQueues") == 0 && jp_peek(j) != JP_NULL)
			rc = jp_int32(j, &m.total_queues);
		else if (strcmp(k, "dirty") == 0 && jp_peek(j) != JP_NULL)
			rc = jp_bool(j, &m.dirty);
		else if (strcmp(k, "currIdMap") == 0 && jp_peek(j) != JP_NULL)
			rc = parse_id_map(j, &m);
		else
			rc = jp_skip(j);
		if (rc)
			break;
	}
	if (rc == 0 && m.key_off == NO_OFF)
		m.key_off = m.topic_off;
	if (rc == 0 && m.key_off != NO_OFF)
		rc = build_push_mapping(b, &m);
	else
		free(m.ids);
	return rc;
}

static int parse_mapping_table(struct body_build *b, struct jp *j)
{
	const char *k;
	size_t kl;
	int rc;

	if (jp_peek(j) == JP_NULL)
		return jp_skip(j);
	if (jp_obj_begin(j))
		return j->err;
	while ((rc = jp_obj_key(j, &k, &kl)) == 1) {
		uint32_t off;
		if ((rc = arena_add(b, k, kl, &off)) != 0)
			return rc;
		if ((rc = parse_mapping(b, j, off)) != 0)
			return rc;
	}
	return rc;
}

static int parse_wrapper(struct body_build *b, struct jp *j)
{
	const char *k;
	int rc;

	if (jp_obj_begin(j))
		return j->err;
	while ((rc = jp_obj_key(j, &k, NULL)) == 1) {
		if (strcmp(k, "dataVersion") == 0)
			rc = parse_dv(j, &b->dv);
		else if (strcmp(k, "topicConfigTable") == 0)
			rc = parse_topic_table(b, j, (size_t)(j->end - j->start));
		else if (strcmp(k, "topicQueueMappingInfoMap") == 0)
			rc = parse_mapping_table(b, j);
		else
			rc = jp_skip(j);
		if (rc)
			return rc;
	}
	return rc;
}

static int parse_filter_list(struct body_build *b, struct jp *j)
{
	const char *s;
	size_t n;
	int rc;

	if (jp_peek(j) == JP_NULL)
		return jp_skip(j); /* null: the stored list stays as it is */
	b->has_filters = true;
	if (jp_arr_begin(j))
		return j->err;
	while ((rc = jp_arr_next(j)) == 1) {
		if (jp_peek(j) == JP_NULL) {
			if ((rc = jp_skip(j)) != 0)
				return rc;
			continue;
		}
		if (jp_string(j, &s, &n))
			return j->err;
		if ((rc = build_add_filter(b, s, n)) != 0)
			return rc;
	}
	return rc;
}

int regbody_json_decode(struct body_build *b, const uint8_t *text, size_t len, int32_t version)
{
	struct jp j;
	const char *k;
	int rc;

	jp_init(&j, text, len, REGBODY_MAX_DEPTH);
	if (version < REGBODY_VERSION_WRAPPER_ONLY) {
		rc = parse_wrapper(b, &j);
	} else {
		b->has_filters = true; /* a missing list reads as an empty one */
		rc = jp_obj_begin(&j);
		while (rc == 0 && (rc = jp_obj_key(&j, &k, NULL)) == 1) {
			if (strcmp(k, "filterServerList") == 0) {
				b->has_filters = false;
				rc = parse_filter_list(b, &j);
			} else if (strcmp(k, "topicConfigSerializeWrapper") == 0) {
				if (jp_peek(&j) == JP_NULL) {
					rc = build_fail(b, RMQNS_EJSON, "topicConfigSerializeWrapper is null%s", NULL);
					break;
				}
				rc = parse_wrapper(b, &j);
			} else {
				rc = jp_skip(&j);
			}
		}
	}
	if (rc == 0)
		rc = jp_end(&j);
	if (rc)
		rc = j.err ? build_jp_fail(b, &j) : build_fail(b, rc, "%s", rc == RMQNS_ENOMEM ? "out of memory" : "bad JSON");
	jp_fini(&j);
	return rc;
}

/* A JSON item of the compressed layout, read whole. */
int regbody_json_item(struct body_build *b, const uint8_t *s, size_t n, enum regbody_json_item what)
{
	struct jp j;
	int rc;

	jp_init(&j, s, n, REGBODY_MAX_DEPTH);
	switch (what) {
	case REGBODY_ITEM_DATA_VERSION: rc = parse_dv(&j, &b->dv); break;
	case REGBODY_ITEM_FILTERS: rc = parse_filter_list(b, &j); break;
	case REGBODY_ITEM_MAPPING: rc = parse_mapping(b, &j, NO_OFF); break;
	default: rc = RMQNS_EINVAL; break;
	}
	if (rc == 0)
		rc = jp_end(&j);
	if (rc)
		rc = j.err ? build_jp_fail(b, &j) : rc;
	jp_fini(&j);
	return rc;
}

int regbody_parse_data_version(const uint8_t *json, size_t len, struct data_version *out)
{
	struct jp j;
	int rc;

	jp_init(&j, json, len, REGBODY_MAX_DEPTH);
	if (jp_peek(&j) != JP_OBJECT)
		rc = RMQNS_EJSON;
	else
		rc = parse_dv(&j, out);
	if (rc == 0)
		rc = jp_end(&j);
	jp_fini(&j);
	return rc ? RMQNS_EJSON : 0;
}
