/* The table a REGISTER_BROKER body decode builds (regbody_build.h): the
 * name arena, the topics and their open-addressed index, filter servers
 * and mappings, the spare blocks kept between bodies, and the result laid
 * out at the end. Touches no shared state but the spares. */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "regbody_build.h"
#include "rmqns/err.h"
#include "rmqns/yield.h"

int build_fail(struct body_build *b, int err, const char *fmt, const char *arg)
{
	if (b->why && b->whylen && !b->why[0])
		snprintf(b->why, b->whylen, fmt, arg ? arg : "");
	return err;
}

/* An error that replaces the reason given already. */
int build_refail(struct body_build *b, int err, const char *fmt, const char *arg)
{
	if (b->why && b->whylen)
		b->why[0] = 0;
	return build_fail(b, err, fmt, arg);
}

int arena_add(struct body_build *b, const char *s, size_t n, uint32_t *off)
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

void body_spare_give(void *p)
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
int build_reserve(struct body_build *b, size_t n)
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

int build_add_topic_hashed(struct body_build *b, const char *name, size_t n, uint64_t h,
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

int build_add_topic(struct body_build *b, const char *name, size_t n, const struct regbody_topic *vals)
{
	return build_add_topic_hashed(b, name, n, name_hash(name, n), vals);
}

int build_add_filter(struct body_build *b, const char *s, size_t n)
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

int build_push_mapping(struct body_build *b, struct body_mapping *m)
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

void build_free(struct body_build *b)
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

int build_finish(struct body_build *b, struct regbody *out)
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
		struct body_mapping *s = &b->maps[i];
		out->mappings[i] = (struct regbody_mapping){
			.key = arena_str(arena, s->key_off), .bname = arena_str(arena, s->bname_off),
			.scope = arena_str(arena, s->scope_off), .topic = arena_str(arena, s->topic_off),
			.epoch = s->epoch, .total_queues = s->total_queues, .dirty = s->dirty,
			.has_ids = s->has_ids, .n_ids = s->n_ids, .ids = s->ids,
		};
		s->ids = NULL;
	}
	out->arena = arena;
	b->arena.data = NULL;
	out->index = b->index;
	out->index_mask = b->index_mask;
	b->index = NULL;
	return 0;
}
