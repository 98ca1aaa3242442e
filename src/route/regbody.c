/* REGISTER_BROKER body decoder (regbody.h): zlib inflate bounded by a cap,
 * the compressed length-prefixed layout, and the JSON layouts read with the
 * pull parser. Produces compact topic records; touches no shared state. */
#include "rmqns/regbody.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "rmqns/buf.h"
#include "rmqns/crc.h"
#include "rmqns/err.h"
#include "rmqns/json_reader.h"
#include "rmqns/route.h"
#include "rmqns/yield.h"

#define NO_OFF UINT32_MAX

/* The tests build this file a second time with REGBODY_GENERAL_ONLY, to
 * compare the shortcut for the common TopicConfig with the general path. */
#ifdef REGBODY_GENERAL_ONLY
#define REGBODY_SHORTCUTS 0
#else
#define REGBODY_SHORTCUTS 1
#endif

struct body_mapping {
	uint32_t key_off, bname_off, scope_off, topic_off;
	int64_t epoch;
	int32_t total_queues;
	bool dirty;
	bool has_ids;
	uint32_t n_ids;
	int32_t (*ids)[2];
};

/* Everything the decoder collects before the final arrays are laid out:
 * strings go to one arena by offset, so the arena may move while it grows. */
struct body_build {
	struct buf arena;
	struct regbody_topic *topics;
	uint32_t n_topics, cap_topics;
	uint32_t *index;      /* open addressing: topic index + 1, 0 = empty */
	uint32_t index_mask;
	uint32_t *filters;    /* arena offsets */
	uint32_t n_filters, cap_filters;
	bool has_filters;
	struct body_mapping *maps;
	uint32_t n_maps, cap_maps;
	struct data_version dv;
	struct buf key, name;  /* scratch for a topic config's map key and name */
	char *why;
	size_t whylen;
};

static int build_fail(struct body_build *b, int err, const char *fmt, const char *arg)
{
	if (b->why && b->whylen && !b->why[0])
		snprintf(b->why, b->whylen, fmt, arg ? arg : "");
	return err;
}

/* The high and low halves of a 64 x 64-bit product, folded. */
static inline uint64_t mul_fold(uint64_t a, uint64_t b)
{
	__uint128_t r = (__uint128_t)a * b;
	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/* A topic name's hash, 8 bytes a step: the low bits index the name, all
 * 64 go into the body's topics fingerprint. */
static uint64_t name_hash(const char *s, size_t n)
{
	uint64_t h = 0x9E3779B97F4A7C15ULL ^ n, w;
	bool long_name = n >= 8;

	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&w, s, 8);
		h = mul_fold(h ^ w, 0xA0761D6478BD642FULL);
	}
	if (n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		/* the last n bytes zero-extended, read with loads that stay
		 * inside the name (bytes copied into a zeroed word stall on
		 * the store) */
		if (long_name) {
			memcpy(&w, s + n - 8, 8);
			w >>= 64 - 8 * n;
		} else if (n >= 4) {
			uint32_t lo, hi;
			memcpy(&lo, s, 4);
			memcpy(&hi, s + n - 4, 4);
			w = lo | (uint64_t)hi << (8 * (n - 4));
		} else {
			w = (uint64_t)(uint8_t)s[0] | (uint64_t)(uint8_t)s[n / 2] << (8 * (n / 2)) |
			    (uint64_t)(uint8_t)s[n - 1] << (8 * (n - 1));
		}
#else
		(void)long_name;
		w = 0;
		memcpy(&w, s, n);
#endif
		h = mul_fold(h ^ w, 0xE7037ED1A0B428DBULL);
	}
	return mul_fold(h, 0x8EBC6AF09C88C6E3ULL);
}

static int arena_add(struct body_build *b, const char *s, size_t n, uint32_t *off)
{
	if (b->arena.len > UINT32_MAX - n - 1)
		return RMQNS_ETOOBIG;
	*off = (uint32_t)b->arena.len;
	if (b->arena.cap - b->arena.len > n) { /* the common case, reserved ahead */
		memcpy(b->arena.data + b->arena.len, s, n);
		b->arena.data[b->arena.len + n] = 0;
		b->arena.len += n + 1;
		return 0;
	}
	if (buf_append(&b->arena, s, n) || buf_putc(&b->arena, 0))
		return RMQNS_ENOMEM;
	return 0;
}

static int index_grow(struct body_build *b)
{
	uint32_t cap = b->index ? (b->index_mask + 1) * 2 : 64;
	uint32_t *idx;

	if (cap == 0 || cap > (UINT32_MAX >> 2))
		return RMQNS_ETOOBIG;
	idx = calloc(cap, sizeof(*idx));
	if (!idx)
		return RMQNS_ENOMEM;
	for (uint32_t i = 0; i < b->n_topics; i++) {
		uint32_t h = (uint32_t)b->topics[i].hash & (cap - 1);
		while (idx[h])
			h = (h + 1) & (cap - 1);
		idx[h] = i + 1;
	}
	free(b->index);
	b->index = idx;
	b->index_mask = cap - 1;
	return 0;
}

/* The topic tables and name arenas of decoded bodies, kept when freed for
 * the next body: a fresh mapping of half a megabyte costs a page fault per
 * 4 KiB where it is first written and a TLB shootdown where it is
 * unmapped, more than reading the topics into it. Bounded in count and
 * in size. */
#define BODY_SPARES 8
#define BODY_SPARE_MIN (64u << 10)
#define BODY_SPARE_MAX (4u << 20)
#define BODY_SPARE_TOTAL (16u << 20)

static pthread_mutex_t body_spare_lock = PTHREAD_MUTEX_INITIALIZER;
static void *body_spare[BODY_SPARES];
static size_t body_spare_size[BODY_SPARES];
static size_t body_spare_total;

/* A block of at least n bytes: the smallest spare that fits, or a new one. */
static void *body_spare_take(size_t n, size_t *cap)
{
	int best = -1;

	if (n >= BODY_SPARE_MIN && n <= BODY_SPARE_MAX) {
		pthread_mutex_lock(&body_spare_lock);
		for (int i = 0; i < BODY_SPARES; i++)
			if (body_spare[i] && body_spare_size[i] >= n &&
			    (best < 0 || body_spare_size[i] < body_spare_size[best]))
				best = i;
		if (best >= 0) {
			void *p = body_spare[best];
			*cap = body_spare_size[best];
			body_spare[best] = NULL;
			body_spare_total -= *cap;
			pthread_mutex_unlock(&body_spare_lock);
			return p;
		}
		pthread_mutex_unlock(&body_spare_lock);
	}
	*cap = n;
	return malloc(n);
}

static void body_spare_give(void *p)
{
	size_t n = p ? malloc_usable_size(p) : 0;

	if (n >= BODY_SPARE_MIN && n <= BODY_SPARE_MAX) {
		pthread_mutex_lock(&body_spare_lock);
		for (int i = 0; i < BODY_SPARES && body_spare_total + n <= BODY_SPARE_TOTAL; i++)
			if (!body_spare[i]) {
				body_spare[i] = p;
				body_spare_size[i] = n;
				body_spare_total += n;
				p = NULL;
				break;
			}
		pthread_mutex_unlock(&body_spare_lock);
	}
	free(p);
}

/* Room for n topics before any is added (an estimate from the body's
 * length: growing the index rehashes every topic). */
static int build_reserve(struct body_build *b, size_t n)
{
	uint32_t cap = 64;

	if (n > (1u << 22))
		n = 1u << 22;
	while ((size_t)cap < n * 2)
		cap *= 2;
	size_t got;
	b->index = calloc(cap, sizeof(*b->index));
	b->topics = body_spare_take(n * sizeof(*b->topics), &got);
	if (!b->index || !b->topics)
		return RMQNS_ENOMEM;
	b->cap_topics = (uint32_t)(got / sizeof(*b->topics));
	if (b->arena.cap - b->arena.len < n * 32) { /* it may hold filter servers already */
		uint8_t *arena = body_spare_take(b->arena.len + n * 32, &got);
		if (!arena)
			return RMQNS_ENOMEM;
		if (b->arena.len)
			memcpy(arena, b->arena.data, b->arena.len);
		free(b->arena.data);
		b->arena.data = arena;
		b->arena.cap = got;
	}
	b->index_mask = cap - 1;
	return 0;
}

/* Adds a topic or, for a name seen before, replaces its values (a JSON map
 * keeps the last of duplicate keys). */
static int build_add_topic_hashed(struct body_build *b, const char *name, size_t n, uint64_t h,
			       const struct regbody_topic *vals)
{
	uint32_t slot;

	if ((b->n_topics & 7) == 0) /* a topic takes tens of nanoseconds */
		yield_point();
	if (n > UINT32_MAX)
		return RMQNS_ETOOBIG;
	if (!b->index || (uint64_t)(b->n_topics + 1) * 2 > (uint64_t)b->index_mask + 1) {
		int rc = index_grow(b);
		if (rc)
			return rc;
	}
	slot = (uint32_t)h & b->index_mask;
	while (b->index[slot]) {
		struct regbody_topic *t = &b->topics[b->index[slot] - 1];
		if (t->hash == h && t->name_len == n &&
		    memcmp((const char *)b->arena.data + t->name_off, name, n) == 0) {
			t->read_queues = vals->read_queues;
			t->write_queues = vals->write_queues;
			t->perm = vals->perm;
			t->sysflag = vals->sysflag;
			return 0;
		}
		slot = (slot + 1) & b->index_mask;
	}
	if (b->n_topics == b->cap_topics) {
		uint32_t cap = b->cap_topics ? b->cap_topics * 2 : 64;
		struct regbody_topic *nt;
		if (cap < b->cap_topics || cap > UINT32_MAX / 2)
			return RMQNS_ETOOBIG;
		nt = realloc(b->topics, (size_t)cap * sizeof(*nt));
		if (!nt)
			return RMQNS_ENOMEM;
		b->topics = nt;
		b->cap_topics = cap;
	}
	struct regbody_topic *t = &b->topics[b->n_topics];
	*t = *vals;
	t->name_len = (uint32_t)n;
	t->hash = h;
	if (arena_add(b, name, n, &t->name_off))
		return RMQNS_ENOMEM;
	b->index[slot] = ++b->n_topics;
	return 0;
}

static int build_add_topic(struct body_build *b, const char *name, size_t n, const struct regbody_topic *vals)
{
	return build_add_topic_hashed(b, name, n, name_hash(name, n), vals);
}

/* The index slot a name of hash h starts at, fetched into the cache
 * while the rest of its topic is parsed (a random read of the index is
 * most of what adding a topic costs). */
static void build_prefetch(const struct body_build *b, uint64_t h)
{
	if (b->index)
		__builtin_prefetch(&b->index[(uint32_t)h & b->index_mask]);
}

static int build_add_filter(struct body_build *b, const char *s, size_t n)
{
	if (b->n_filters == b->cap_filters) {
		uint32_t cap = b->cap_filters ? b->cap_filters * 2 : 8;
		uint32_t *nf;
		if (cap > UINT32_MAX / 8)
			return RMQNS_ETOOBIG;
		nf = realloc(b->filters, (size_t)cap * sizeof(*nf));
		if (!nf)
			return RMQNS_ENOMEM;
		b->filters = nf;
		b->cap_filters = cap;
	}
	if (arena_add(b, s, n, &b->filters[b->n_filters]))
		return RMQNS_ENOMEM;
	b->n_filters++;
	return 0;
}

static int build_jp_fail(struct body_build *b, struct jp *j)
{
	return build_fail(b, j->err ? j->err : RMQNS_EJSON, "%s", j->why ? j->why : "bad JSON");
}

/* ---- JSON pieces ---- */

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

/* The members of a TopicConfig (REGISTER_BROKER) and of a QueueData
 * (REGISTER_TOPIC_IN_NAMESRV) the NameServer keeps: the one table both
 * readers go by. Told apart by length first (keys are compared without a
 * copy or a terminator). topicSynFlag is the misspelling older brokers
 * write in a QueueData. */
enum tc_member { TC_OTHER, TC_NAME, TC_BROKER_NAME, TC_READ, TC_WRITE, TC_PERM, TC_SYSFLAG, TC_SYNFLAG };

static enum tc_member tc_member_of(const char *k, size_t n)
{
#define TC_IS(lit) (n == sizeof(lit) - 1 && memcmp(k, lit, sizeof(lit) - 1) == 0)
	switch (n) {
	case 4: return TC_IS("perm") ? TC_PERM : TC_OTHER;
	case 9: return TC_IS("topicName") ? TC_NAME : TC_OTHER;
	case 10: return TC_IS("brokerName") ? TC_BROKER_NAME : TC_OTHER;
	case 12: return TC_IS("topicSysFlag") ? TC_SYSFLAG : TC_IS("topicSynFlag") ? TC_SYNFLAG : TC_OTHER;
	case 13: return TC_IS("readQueueNums") ? TC_READ : TC_OTHER;
	case 14: return TC_IS("writeQueueNums") ? TC_WRITE : TC_OTHER;
	default: return TC_OTHER;
	}
#undef TC_IS
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
	if (REGBODY_SHORTCUTS && tc_read_common(j, &common, &name, &name_len)) {
		t = common;
		goto add;
	}
	if (jp_obj_begin(j))
		return j->err;
	while ((rc = jp_obj_key_view(j, &k, &kl)) == 1) {
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
	while ((rc = jp_obj_key_view(j, &k, &kl)) == 1) {
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

static int build_push_mapping(struct body_build *b, struct body_mapping *m)
{
	if (b->n_maps == b->cap_maps) {
		uint32_t cap = b->cap_maps ? b->cap_maps * 2 : 4;
		struct body_mapping *nm;
		if (cap > (1u << 24))
			return RMQNS_ETOOBIG;
		nm = realloc(b->maps, (size_t)cap * sizeof(*nm));
		if (!nm)
			return RMQNS_ENOMEM;
		b->maps = nm;
		b->cap_maps = cap;
	}
	b->maps[b->n_maps++] = *m;
	return 0;
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

static int decode_json(struct body_build *b, const uint8_t *text, size_t len, int32_t version)
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

/* ---- compressed layout ---- */

/* The inflated stream, read one item at a time through a window that
 * holds the item being read: inflating and parsing are one pass, and the
 * body is never inflated whole. Errors of the stream itself (corrupt,
 * truncated, beyond the cap) win over errors of what it holds, wherever
 * they are in it, as when the whole body was inflated first. */
struct zin {
	z_stream zs;
	uint8_t *buf;
	size_t cap, pos, len;  /* unread: buf[pos, len) */
	size_t total, max;     /* inflated so far; its cap */
	bool end;              /* the stream ended */
	int err;               /* sticky error of the stream */
	struct body_build *b;
};

#define ZIN_WINDOW (64u << 10)

static int zin_fail(struct zin *z, int err, const char *fmt, const char *arg)
{
	if (!z->err) {
		/* the stream's error replaces a reason the items gave */
		if (z->b->why && z->b->whylen)
			z->b->why[0] = 0;
		z->err = build_fail(z->b, err, fmt, arg);
	}
	return z->err;
}

/* An error that replaces the reason given already. */
static int build_refail(struct body_build *b, int err, const char *fmt, const char *arg)
{
	if (b->why && b->whylen)
		b->why[0] = 0;
	return build_fail(b, err, fmt, arg);
}

/* Inflates into the window's free room (at most 64 KiB, a yield point
 * before). */
static int zin_fill(struct zin *z)
{
	if (z->err || z->end)
		return z->err;
	size_t room = z->cap - z->len;
	z->zs.next_out = z->buf + z->len;
	z->zs.avail_out = room > ZIN_WINDOW ? ZIN_WINDOW : (uInt)room;
	uInt before = z->zs.avail_out;
	yield_point();
	int zr = inflate(&z->zs, Z_NO_FLUSH);
	size_t got = before - z->zs.avail_out;
	z->len += got;
	z->total += got;
	if (z->total > z->max) {
		char lim[32];
		snprintf(lim, sizeof(lim), "%zu", z->max);
		return zin_fail(z, RMQNS_ETOOBIG, "inflated body exceeds %s bytes", lim);
	}
	if (zr == Z_STREAM_END) {
		z->end = true;
		return 0;
	}
	if (zr == Z_OK || (zr == Z_BUF_ERROR && z->zs.avail_out == 0))
		return 0;
	if (zr == Z_BUF_ERROR)
		return zin_fail(z, RMQNS_EZLIB, "compressed body is truncated%s", NULL);
	return zin_fail(z, zr == Z_MEM_ERROR ? RMQNS_ENOMEM : RMQNS_EZLIB, "zlib: %s",
			z->zs.msg ? z->zs.msg : "bad compressed data");
}

/* n bytes readable at buf + pos: 0; 1 when the stream ended before; or
 * the stream's error. */
static int zin_need(struct zin *z, size_t n)
{
	while (z->len - z->pos < n) {
		if (z->err || z->end)
			return z->err ? z->err : 1;
		if (z->pos) {
			memmove(z->buf, z->buf + z->pos, z->len - z->pos);
			z->len -= z->pos;
			z->pos = 0;
		}
		if (z->cap - z->len < ZIN_WINDOW / 4 && z->cap < n + ZIN_WINDOW) {
			/* an item longer than the window: it grows to hold it
			 * (no further than the cap lets the stream go) */
			size_t ncap = z->cap * 2 > n + ZIN_WINDOW ? z->cap * 2 : n + ZIN_WINDOW;
			if (ncap > z->max + ZIN_WINDOW)
				ncap = z->max + ZIN_WINDOW;
			uint8_t *nb = realloc(z->buf, ncap);
			if (!nb)
				return zin_fail(z, RMQNS_ENOMEM, "out of memory%s", NULL);
			z->buf = nb;
			z->cap = ncap;
		}
		int rc = zin_fill(z);
		if (rc)
			return rc;
	}
	return 0;
}

/* Bytes read from the stream so far. */
static size_t zin_offset(const struct zin *z)
{
	return z->total - (z->len - z->pos);
}

/* Inflates the rest, unread: the stream's own errors show. */
static int zin_drain(struct zin *z)
{
	while (!z->err && !z->end) {
		z->pos = z->len = 0;
		zin_fill(z);
	}
	return z->err;
}

static int zin_i32(struct zin *z, int32_t *v)
{
	int rc = zin_need(z, 4);
	if (rc)
		return rc < 0 ? rc : RMQNS_EINVAL;
	*v = (int32_t)rd_be32(z->buf + z->pos);
	z->pos += 4;
	return 0;
}

/* An int32 length and its bytes, readable until the next read. */
static int zin_slice(struct zin *z, const uint8_t **s, size_t *n)
{
	int32_t len;
	int rc = zin_i32(z, &len);
	if (rc)
		return rc;
	if (len < 0)
		return RMQNS_EINVAL;
	if ((rc = zin_need(z, (size_t)len)) != 0)
		return rc < 0 ? rc : RMQNS_EINVAL;
	*s = z->buf + z->pos;
	*n = (size_t)len;
	z->pos += (size_t)len;
	return 0;
}

static int parse_java_int(const uint8_t *s, size_t n, int32_t *v)
{
	int64_t acc = 0;
	size_t i = 0;
	bool neg = false;

	if (n > 0 && (s[0] == '-' || s[0] == '+')) {
		neg = s[0] == '-';
		i = 1;
	}
	if (i == n || n - i > 11)
		return -1;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		acc = acc * 10 + (s[i] - '0');
	}
	if (neg)
		acc = -acc;
	if (acc < INT32_MIN || acc > INT32_MAX)
		return -1;
	*v = (int32_t)acc;
	return 0;
}

/* `name read write perm filterType [attributes]`, fields split on single
 * spaces. */
static int parse_topic_line(struct body_build *b, const uint8_t *s, size_t n)
{
	const uint8_t *f[5], *p = s, *e = s + n;
	size_t fl[5];
	struct regbody_topic t = { NULL, 0, 0, 0, 0, 0, 0, 0 };

	for (int k = 0; k < 5; k++) {
		const uint8_t *q = p < e ? memchr(p, ' ', (size_t)(e - p)) : NULL;
		if (!q)
			q = e;
		f[k] = p;
		fl[k] = (size_t)(q - p);
		if (q == e && k < 4)
			return build_fail(b, RMQNS_EINVAL, "topic line with fewer than five fields%s", NULL);
		p = q + 1;
	}
	if (fl[4] == 0)
		return build_fail(b, RMQNS_EINVAL, "topic line with fewer than five fields%s", NULL);
	if (memchr(s, 0, fl[0]))
		return build_fail(b, RMQNS_EINVAL, "NUL in a topic name%s", NULL);
	if (parse_java_int(f[1], fl[1], &t.read_queues) || parse_java_int(f[2], fl[2], &t.write_queues) ||
	    parse_java_int(f[3], fl[3], &t.perm))
		return build_fail(b, RMQNS_EINVAL, "bad number in a topic line%s", NULL);
	return build_add_topic(b, (const char *)f[0], fl[0], &t);
}

/* A JSON item of the compressed layout, read by `fn` whole. */
static int zin_json_item(struct body_build *b, const uint8_t *s, size_t n, int (*fn)(struct body_build *, struct jp *))
{
	struct jp j;
	jp_init(&j, s, n, REGBODY_MAX_DEPTH);
	int rc = fn(b, &j);
	if (rc == 0)
		rc = jp_end(&j);
	if (rc)
		rc = j.err ? build_jp_fail(b, &j) : rc;
	jp_fini(&j);
	return rc;
}

static int item_dv(struct body_build *b, struct jp *j)
{
	return parse_dv(j, &b->dv);
}

static int mapping_json(struct body_build *b, struct jp *j)
{
	return parse_mapping(b, j, NO_OFF);
}

static int item_mapping(struct body_build *b, const uint8_t *s, size_t n)
{
	return zin_json_item(b, s, n, mapping_json);
}

/* Whether `count` items (4 bytes each at the least) counted at offset
 * `at` are more than the whole stream holds: the count is then the error,
 * whatever failed while reading the items (it was checked first when the
 * whole body was inflated first). Inflates the rest of the stream. */
static bool zin_count_lies(struct zin *z, int32_t count, size_t at)
{
	zin_drain(z);
	return !z->err && (size_t)count > (z->total - at) / 4;
}

/* A count, then that many items, each read by fn; `what` names them in
 * the reasons given. */
static int zin_items(struct body_build *b, struct zin *z, const char *what,
		     int (*fn)(struct body_build *, const uint8_t *, size_t))
{
	const uint8_t *s;
	size_t n;
	int32_t count;
	int rc;

	if ((rc = zin_i32(z, &count)) != 0 || count < 0)
		return rc < 0 && rc != RMQNS_EINVAL ? rc : build_fail(b, RMQNS_EINVAL, "bad %s count in compressed body", what);
	size_t counted_at = zin_offset(z);
	for (int32_t i = 0; i < count; i++) {
		bool ended = false;
		if ((rc = zin_slice(z, &s, &n)) != 0 && rc != RMQNS_EINVAL)
			return rc;
		if (rc == 0)
			rc = fn(b, s, n);
		else
			ended = true;
		if (rc && zin_count_lies(z, count, counted_at))
			return build_refail(b, RMQNS_EINVAL, "bad %s count in compressed body", what);
		if (ended)
			return build_fail(b, rc, "compressed body ends inside its %ss", what);
		if (rc)
			return rc;
	}
	return 0;
}

/* The items of the compressed layout, in order; an error of the stream
 * returned as it is. */
static int decode_compressed_items(struct body_build *b, struct zin *z, int32_t version)
{
	const uint8_t *s;
	size_t n;
	int rc;

	if ((rc = zin_slice(z, &s, &n)) != 0)
		return rc == RMQNS_EINVAL ? build_fail(b, rc, "compressed body too short for its DataVersion%s", NULL) : rc;
	if ((rc = zin_json_item(b, s, n, item_dv)) != 0)
		return rc;
	if ((rc = zin_items(b, z, "topic", parse_topic_line)) != 0)
		return rc;
	if ((rc = zin_slice(z, &s, &n)) != 0)
		return rc == RMQNS_EINVAL ? build_fail(b, rc, "compressed body ends before its filter-server list%s", NULL) : rc;
	if ((rc = zin_json_item(b, s, n, parse_filter_list)) != 0)
		return rc;
	b->has_filters = true;
	if (version >= REGBODY_VERSION_MAPPINGS && (rc = zin_items(b, z, "mapping", item_mapping)) != 0)
		return rc;
	/* anything after the last expected item is ignored, as Java does */
	return 0;
}

static int decode_compressed(struct body_build *b, const uint8_t *body, size_t len, int32_t version,
			     size_t max)
{
	struct zin z;
	int rc;

	memset(&z, 0, sizeof(z));
	z.b = b;
	z.max = max;
	z.cap = ZIN_WINDOW;
	z.buf = malloc(z.cap);
	if (!z.buf)
		return RMQNS_ENOMEM;
	if (inflateInit(&z.zs) != Z_OK) {
		free(z.buf);
		return RMQNS_ENOMEM;
	}
	z.zs.next_in = (Bytef *)(uintptr_t)body;
	z.zs.avail_in = len > UINT_MAX ? UINT_MAX : (uInt)len;
	rc = decode_compressed_items(b, &z, version);
	/* the rest of the stream must inflate too, within the cap; its error
	 * comes first */
	if (zin_drain(&z))
		rc = z.err;
	inflateEnd(&z.zs);
	free(z.buf);
	return rc;
}

/* ---- result ---- */

static void build_free(struct body_build *b)
{
	buf_free(&b->key);
	buf_free(&b->name);
	body_spare_give(b->arena.data);
	body_spare_give(b->topics);
	free(b->index);
	free(b->filters);
	for (uint32_t i = 0; i < b->n_maps; i++)
		free(b->maps[i].ids);
	free(b->maps);
}

static const char *arena_str(const char *arena, uint32_t off)
{
	return off == NO_OFF ? NULL : arena + off;
}

/* A topic's name hash and values, chained in body order: two bodies with
 * the same fingerprint list the same topics with the same values (a
 * 64-bit collision aside). */
static uint64_t build_fp_topic(uint64_t h, const struct regbody_topic *t)
{
	uint64_t v = (uint64_t)(uint32_t)t->read_queues << 32 | (uint32_t)t->write_queues;
	uint64_t w = (uint64_t)(uint32_t)t->perm << 32 | (uint32_t)t->sysflag;

	h = mul_fold(h ^ t->hash, 0xA0761D6478BD642FULL);
	h = mul_fold(h ^ v, 0xE7037ED1A0B428DBULL);
	return mul_fold(h ^ w, 0x8EBC6AF09C88C6E3ULL) + 1;
}

static int build_finish(struct body_build *b, struct regbody *out)
{
	char *arena;

	if (buf_putc(&b->arena, 0))
		return RMQNS_ENOMEM;
	arena = (char *)b->arena.data;
	out->dv = b->dv;
	out->n_topics = b->n_topics;
	/* the table built is the table handed out: its names found in the
	 * arena, now that it moves no more */
	out->topics = b->topics ? b->topics : calloc(1, sizeof(*out->topics));
	b->topics = NULL;
	out->filters = calloc(b->n_filters ? b->n_filters : 1, sizeof(*out->filters));
	out->mappings = calloc(b->n_maps ? b->n_maps : 1, sizeof(*out->mappings));
	if (!out->topics || !out->filters || !out->mappings) {
		free(out->topics);
		free(out->filters);
		free(out->mappings);
		memset(out, 0, sizeof(*out));
		return RMQNS_ENOMEM;
	}
	for (uint32_t i = 0; i < out->n_topics; i++) {
		struct regbody_topic *t = &out->topics[i];
		t->name = arena + t->name_off;
		out->topics_fp = build_fp_topic(out->topics_fp, t);
	}
	out->has_filters = b->has_filters;
	out->n_filters = b->n_filters;
	for (uint32_t i = 0; i < b->n_filters; i++)
		out->filters[i] = arena + b->filters[i];
	out->n_mappings = b->n_maps;
	for (uint32_t i = 0; i < b->n_maps; i++) {
		struct regbody_mapping *m = &out->mappings[i];
		struct body_mapping *s = &b->maps[i];
		m->key = arena_str(arena, s->key_off);
		m->bname = arena_str(arena, s->bname_off);
		m->scope = arena_str(arena, s->scope_off);
		m->topic = arena_str(arena, s->topic_off);
		m->epoch = s->epoch;
		m->total_queues = s->total_queues;
		m->dirty = s->dirty;
		m->has_ids = s->has_ids;
		m->n_ids = s->n_ids;
		m->ids = s->ids;
		s->ids = NULL;
	}
	out->arena = arena;
	b->arena.data = NULL;
	out->index = b->index;
	out->index_mask = b->index_mask;
	b->index = NULL;
	return 0;
}

static bool looks_zlib(const uint8_t *p, size_t len)
{
	return len >= 2 && p[0] == 0x78 && (p[1] == 0x01 || p[1] == 0x5E || p[1] == 0x9C || p[1] == 0xDA);
}

int regbody_decode(const uint8_t *body, size_t len, bool compressed, int32_t version,
		   size_t max_bytes, struct regbody *out, char *why, size_t whylen)
{
	struct body_build b;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&b, 0, sizeof(b));
	b.why = why;
	b.whylen = whylen;
	if (why && whylen)
		why[0] = 0;
	if (max_bytes == 0)
		max_bytes = REGBODY_DEFAULT_MAX_BYTES;

	if (!body || len == 0) {
		/* no body: no topics, DataVersion {0,0,0}, an empty filter list */
		b.has_filters = true;
	} else if (compressed || looks_zlib(body, len)) {
		/* 5.x brokers flag compressed bodies as plain; a JSON body never
		 * starts with 0x78 ('x'), so the zlib header decides. */
		rc = decode_compressed(&b, body, len, version, max_bytes);
		if (rc)
			goto fail;
	} else {
		if (len > max_bytes) {
			char lim[32];
			snprintf(lim, sizeof(lim), "%zu", max_bytes);
			rc = build_fail(&b, RMQNS_ETOOBIG, "body exceeds %s bytes", lim);
			goto fail;
		}
		rc = decode_json(&b, body, len, version);
		if (rc)
			goto fail;
	}
	rc = build_finish(&b, out);
	if (rc)
		goto fail;
	build_free(&b);
	return 0;
fail:
	if (rc == RMQNS_ENOMEM)
		build_fail(&b, rc, "out of memory%s", NULL);
	build_fail(&b, rc, "undecodable body%s", NULL);
	build_free(&b);
	regbody_free(out);
	return rc;
}

void regbody_free(struct regbody *rb)
{
	if (!rb)
		return;
	for (uint32_t i = 0; rb->mappings && i < rb->n_mappings; i++)
		free(rb->mappings[i].ids);
	free(rb->mappings);
	body_spare_give(rb->topics);
	free(rb->filters);
	body_spare_give(rb->arena);
	free(rb->index);
	memset(rb, 0, sizeof(*rb));
}

bool regbody_crc_matches(const uint8_t *body, size_t len, int64_t want)
{
	uLong crc = 0;

	if (want == 0)
		return true;
	if (body && len) {
		/* in 64 KiB pieces (zlib takes uInt lengths; and a yield point
		 * between them: megabytes take a few hundred microseconds) */
		while (len) {
			size_t n = len > (1u << 16) ? (1u << 16) : len;
			yield_point();
			crc = crc32_update((uint32_t)crc, body, n);
			body += n;
			len -= n;
		}
	}
	return (int64_t)(crc & 0x7FFFFFFFu) == want;
}

/* 4 lanes of xor-multiply over 8-byte words: about 25 GB/s, a tenth of
 * the CRC's cost; the lanes and the length fold together at the end. */
static uint64_t fp_hash_piece(uint64_t lane[4], const uint8_t *p, size_t n)
{
	static const uint64_t k[4] = { 0x9E3779B97F4A7C15ULL, 0xC2B2AE3D27D4EB4FULL, 0x165667B19E3779F9ULL,
				       0x27D4EB2F165667C5ULL };
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		for (int l = 0; l < 4; l++) {
			uint64_t w;
			memcpy(&w, p + i + 8 * l, 8);
			lane[l] = (lane[l] ^ w) * k[l];
			lane[l] ^= lane[l] >> 29;
		}
	}
	return i;
}

static uint64_t fp_mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xFF51AFD7ED558CCDULL;
	h ^= h >> 33;
	h *= 0xC4CEB9FE1A85EC53ULL;
	return h ^ (h >> 33);
}

void regbody_fingerprint(const uint8_t *body, size_t len, uint32_t *crc31, uint64_t *hash)
{
	uint64_t lane[4] = { 1, 2, 3, 4 }, tail = 0;
	uLong crc = 0;
	size_t total = len;

	if (body && len) {
		/* in 64 KiB pieces: zlib takes uInt lengths, the hash reads
		 * the piece while it is in the cache, and a yield point
		 * between pieces (a megabyte takes a few hundred us) */
		while (len) {
			size_t n = len > (1u << 16) ? (1u << 16) : len;
			yield_point();
			crc = crc32_update((uint32_t)crc, body, n);
			size_t done = fp_hash_piece(lane, body, n);
			if (done < n) { /* only the last piece is not a multiple of 32 */
				for (size_t i = done; i < n; i++)
					tail = (tail ^ body[i]) * 0x100000001B3ULL;
			}
			body += n;
			len -= n;
		}
	}
	*crc31 = (uint32_t)(crc & 0x7FFFFFFFu);
	*hash = fp_mix(fp_mix(lane[0] ^ fp_mix(lane[1] + (uint64_t)total)) ^ fp_mix(lane[2] ^ tail) ^
		       fp_mix(lane[3]));
}

const struct regbody_topic *regbody_find_topic(const struct regbody *rb, const char *name)
{
	size_t n;
	uint32_t slot;

	if (!rb->index || !name)
		return NULL;
	n = strlen(name);
	slot = (uint32_t)name_hash(name, n) & rb->index_mask;
	while (rb->index[slot]) {
		const struct regbody_topic *t = &rb->topics[rb->index[slot] - 1];
		if (strcmp(t->name, name) == 0)
			return t;
		slot = (slot + 1) & rb->index_mask;
	}
	return NULL;
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

int data_version_format(const struct data_version *dv, char *out, size_t outlen)
{
	return snprintf(out, outlen, "{\"counter\":%" PRId64 ",\"stateVersion\":%" PRId64 ",\"timestamp\":%" PRId64 "}",
			dv->counter, dv->state_version, dv->timestamp);
}

/* perm, readQueueNums, writeQueueNums, topicSysFlag: an integer (cut to
 * 32 bits) or integer text; anything else is 0. An integer past int64 or
 * a real past a double makes the body unreadable. */
static int queue_number(struct jp *j, int32_t *out)
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
 * a string) and the four numbers, read more leniently than a TopicConfig's
 * (queue_number). topicSysFlag wins over the misspelt topicSynFlag
 * whenever it is present. */
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
		switch (tc_member_of(k, strlen(k))) {
		case TC_BROKER_NAME:
			*name = -1;
			if (jp_peek(j) != JP_STRING) {
				rc = jp_skip(j);
			} else if ((rc = jp_string(j, &s, &n)) == 0) {
				*name = (ptrdiff_t)names->len;
				if (buf_append(names, s, n + 1))
					return RMQNS_ENOMEM;
			}
			break;
		case TC_PERM: rc = queue_number(j, &in->perm); break;
		case TC_READ: rc = queue_number(j, &in->read_queues); break;
		case TC_WRITE: rc = queue_number(j, &in->write_queues); break;
		case TC_SYSFLAG:
			has_sys = true;
			rc = queue_number(j, &in->sysflag);
			break;
		case TC_SYNFLAG: rc = queue_number(j, &syn); break;
		case TC_NAME:
		case TC_OTHER: rc = jp_skip(j); break;
		}
		if (rc)
			return rc;
	}
	if (!has_sys)
		in->sysflag = syn;
	return rc;
}

int route_decode_topic_queues(const uint8_t *body, size_t len, struct route_topic_queues *q)
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
				void *grown = realloc(q->items, ncap * sizeof(*q->items));
				void *o = grown ? realloc(name_at, ncap * sizeof(*name_at)) : NULL;
				if (grown)
					q->items = grown;
				if (!o) {
					rc = RMQNS_ENOMEM;
					break;
				}
				name_at = o;
				cap = ncap;
			}
			memset(&q->items[n], 0, sizeof(q->items[n]));
			rc = topic_queue(&j, &names, &q->items[n], &name_at[n]);
			n++;
		}
	}
	if (rc == 0)
		rc = jp_end(&j);
	if (rc == 0 && j.err)
		rc = j.err;
	jp_fini(&j);
	if (rc == 0 && n > 0) {
		q->names = (char *)names.data; /* the queues point into it from here on */
		names = (struct buf)BUF_INIT;
		for (uint32_t i = 0; i < n; i++)
			q->items[i].group = name_at[i] < 0 ? NULL : q->names + name_at[i];
		q->n = n;
	}
	buf_free(&names);
	free(name_at);
	return rc == RMQNS_ENOMEM ? rc : rc ? RMQNS_EJSON : 0;
}

void route_topic_queues_free(struct route_topic_queues *q)
{
	free(q->items);
	free(q->names);
	*q = (struct route_topic_queues){ 0 };
}
