/* The bottom rung of the REGISTER_BROKER body decoder (regbody.h is the
 * public surface): the table a decode builds (regbody_build.c) and the
 * TopicConfig and QueueData member names. The layout readers stand above
 * it: regbody_json.h, then regbody_zlib.h, then regbody.c, each calling
 * only down. Private to src/route/ (and the tests of the decoder). */
#ifndef RMQNS_REGBODY_BUILD_H
#define RMQNS_REGBODY_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rmqns/buf.h"
#include "rmqns/regbody.h"

#define NO_OFF UINT32_MAX  /* a string that is absent */

/* A TopicQueueMappingInfo while the body is read: strings by arena
 * offset. */
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
	bool general;          /* read without the shortcuts (the general path) */
};

/* The high and low halves of a 64 x 64-bit product, folded. */
static inline uint64_t mul_fold(uint64_t a, uint64_t b)
{
	__uint128_t r = (__uint128_t)a * b;
	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/* A topic name's hash, 8 bytes a step: the low bits index the name, all
 * 64 go into the body's topics fingerprint. */
static inline uint64_t name_hash(const char *s, size_t n)
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

/* The index slot a name of hash h starts at, fetched into the cache
 * while the rest of its topic is parsed (a random read of the index is
 * most of what adding a topic costs). */
static inline void build_prefetch(const struct body_build *b, uint64_t h)
{
	if (b->index)
		__builtin_prefetch(&b->index[(uint32_t)h & b->index_mask]);
}

/* The table under construction. */

/* Writes the reason (fmt with arg) unless one is there; returns err. */
int build_fail(struct body_build *b, int err, const char *fmt, const char *arg);
/* An error that replaces the reason given already. */
int build_refail(struct body_build *b, int err, const char *fmt, const char *arg);
/* A copy of s[0..n) and a NUL in the arena, at *off. */
int arena_add(struct body_build *b, const char *s, size_t n, uint32_t *off);
/* Room for n topics before any is added. */
int build_reserve(struct body_build *b, size_t n);
/* Adds a topic or, for a name seen before, replaces its values (a JSON map
 * keeps the last of duplicate keys); h is name_hash(name, n). */
int build_add_topic_hashed(struct body_build *b, const char *name, size_t n, uint64_t h,
			   const struct regbody_topic *vals);
int build_add_topic(struct body_build *b, const char *name, size_t n, const struct regbody_topic *vals);
int build_add_filter(struct body_build *b, const char *s, size_t n);
int build_push_mapping(struct body_build *b, struct body_mapping *m);
/* Lays the result out in *out (the build gives its arrays up). */
int build_finish(struct body_build *b, struct regbody *out);
void build_free(struct body_build *b);
/* A topic table or name arena freed, kept for the next body. */
void body_spare_give(void *p);

/* The members of a TopicConfig (REGISTER_BROKER) and of a QueueData
 * (REGISTER_TOPIC_IN_NAMESRV) the NameServer keeps: the one table both
 * readers go by. Told apart by length first (keys are compared without a
 * copy or a terminator). topicSynFlag is the misspelling older brokers
 * write in a QueueData. */
enum tc_member { TC_OTHER, TC_NAME, TC_BROKER_NAME, TC_READ, TC_WRITE, TC_PERM, TC_SYSFLAG, TC_SYNFLAG };

static inline enum tc_member tc_member_of(const char *k, size_t n)
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

#endif
