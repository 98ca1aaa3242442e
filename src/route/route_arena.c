/* Topic records: their memory, their ids and their reclamation. A record
 * is small (about 70 bytes with its name) and there may be millions, so
 * they are carved from 256 KiB chunks in 8-byte size classes, without
 * malloc's per-block header and rounding; a record's 32-bit id is where it
 * lies (chunk, offset / 8), which the group -> topics index stores instead
 * of a pointer. A record past RT_ARENA_MAX gets a chunk of its own. They
 * carry no RCU head: unlinked records wait in batches of 1,024 for one
 * grace period per batch. Registrar only: the grace-period callback just
 * hands a batch back, and the registrar puts its records on the free
 * lists. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "route_writer.h"
#include "rmqns/err.h"

#define ARENA_CHUNK (256u << 10)
#define ARENA_GRAIN 8u

#define ID_OFFSET_BITS 15 /* ARENA_CHUNK / ARENA_GRAIN offsets */
#define ID_MAX_CHUNKS (1u << (32 - ID_OFFSET_BITS))

/* A free record: the link where the lfht node was, the id kept where a
 * record keeps it. */
struct arena_free {
	struct arena_free *next;
	uint8_t pad[offsetof(struct route_topic, tid) - sizeof(struct arena_free *)];
	uint32_t tid;
};

struct rt_tbatch {
	struct rcu_head rcu;
	struct cds_lfs_node node;
	struct route_db *db;
	uint32_t n;
	struct route_topic *t[RT_TBATCH];
};

static size_t record_size(size_t name_len)
{
	size_t sz = offsetof(struct route_topic, name) + name_len + 1;
	return (sz + ARENA_GRAIN - 1) & ~(size_t)(ARENA_GRAIN - 1);
}

/* A new slot in the chunk directory (a freed one first). */
static int chunk_slot(struct rt_arena *a, uint32_t *out)
{
	if (a->nfree_slots) {
		*out = a->free_slots[--a->nfree_slots];
		return 0;
	}
	if (a->nchunks == a->cap) {
		uint32_t nc = a->cap ? a->cap * 2 : 64;
		uint8_t **d;
		uint32_t *f;
		if (nc > ID_MAX_CHUNKS)
			return RMQNS_ETOOBIG;
		d = rt_realloc(a->chunks, nc * sizeof(*d));
		if (!d)
			return RMQNS_ENOMEM;
		a->chunks = d;
		/* room for every slot to come back, so freeing never fails */
		f = rt_realloc(a->free_slots, nc * sizeof(*f));
		if (!f)
			return RMQNS_ENOMEM;
		a->free_slots = f;
		a->cap = nc;
	}
	*out = a->nchunks++;
	return 0;
}

struct route_topic *rt_topic_alloc(struct route_db *db, size_t name_len)
{
	struct rt_arena *a = &db->arena;
	size_t sz = record_size(name_len);
	struct route_topic *t;
	uint32_t slot;

	if (sz > RT_ARENA_MAX) {
		/* a rare long name: a chunk of its own */
		if (chunk_slot(a, &slot))
			return NULL;
		t = rt_calloc(1, sz);
		if (!t) {
			a->free_slots[a->nfree_slots++] = slot;
			return NULL;
		}
		a->chunks[slot] = (uint8_t *)t;
		t->tid = slot << ID_OFFSET_BITS;
		return t;
	}
	struct arena_free *f = a->free[sz / ARENA_GRAIN];
	uint32_t tid;
	if (f) {
		a->free[sz / ARENA_GRAIN] = f->next;
		tid = f->tid;
		t = (struct route_topic *)f;
	} else {
		if (!a->has_cur || a->used + sz > ARENA_CHUNK) {
			uint8_t *c;
			if (chunk_slot(a, &slot))
				return NULL;
			c = rt_malloc(ARENA_CHUNK);
			if (!c) {
				a->free_slots[a->nfree_slots++] = slot;
				return NULL;
			}
			/* the tail of the chunk left is lost: under one record */
			a->chunks[slot] = c;
			a->cur = slot;
			a->used = 0;
			a->has_cur = true;
		}
		t = (struct route_topic *)(a->chunks[a->cur] + a->used);
		tid = a->cur << ID_OFFSET_BITS | (uint32_t)(a->used / ARENA_GRAIN);
		a->used += sz;
	}
	memset(t, 0, sz);
	t->tid = tid;
	return t;
}

struct route_topic *rt_topic_by_id(struct route_db *db, uint32_t tid)
{
	uint32_t slot = tid >> ID_OFFSET_BITS;

	if (tid == RT_ID_NONE || slot >= db->arena.nchunks || !db->arena.chunks[slot])
		return NULL;
	return (struct route_topic *)(db->arena.chunks[slot] + (size_t)(tid & ((1u << ID_OFFSET_BITS) - 1)) * ARENA_GRAIN);
}

/* Back to its free list (or malloc); the caller knows no reader can see it. */
static void topic_release_memory(struct route_db *db, struct route_topic *t)
{
	size_t sz = record_size(strlen(t->name));

	free(t->cache[0]);
	free(t->cache[1]);
	if (sz > RT_ARENA_MAX) {
		uint32_t slot = t->tid >> ID_OFFSET_BITS;
		db->arena.chunks[slot] = NULL;
		db->arena.free_slots[db->arena.nfree_slots++] = slot;
		free(t);
		return;
	}
	struct arena_free *f = (struct arena_free *)t;
	f->next = db->arena.free[sz / ARENA_GRAIN];
	db->arena.free[sz / ARENA_GRAIN] = f;
}

void rt_topic_free_unlinked(struct route_db *db, struct route_topic *t)
{
	topic_release_memory(db, t);
}

int rt_topic_retire_reserve(struct route_db *db)
{
	if (db->tbatch && db->tbatch->n < RT_TBATCH)
		return 0;
	rt_topic_retire_flush(db);
	db->tbatch = rt_malloc(sizeof(*db->tbatch));
	if (!db->tbatch)
		return RMQNS_ENOMEM;
	db->tbatch->db = db;
	db->tbatch->n = 0;
	cds_lfs_node_init(&db->tbatch->node);
	return 0;
}

void rt_topic_retire(struct route_db *db, struct route_topic *t)
{
	/* rt_topic_retire_reserve made the room */
	db->tbatch->t[db->tbatch->n++] = t;
}

static void batch_expired_cb(struct rcu_head *h)
{
	struct rt_tbatch *b = caa_container_of(h, struct rt_tbatch, rcu);

	rt_tsan_before_free();
	struct route_db *db = b->db;

	/* no reader can hold its records any more: the registrar frees them
	 * (b is not touched after the release but by the push, whose stores
	 * ThreadSanitizer does not see) */
	race_release(b);
	cds_lfs_push(&db->expired, &b->node);
}

void rt_topic_retire_flush(struct route_db *db)
{
	struct rt_tbatch *b = db->tbatch;

	if (!b)
		return;
	db->tbatch = NULL;
	if (b->n == 0) {
		free(b);
		return;
	}
	rt_defer_free(db, &b->rcu, batch_expired_cb);
}

void rt_topic_reclaim(struct route_db *db)
{
	struct cds_lfs_head *head = __cds_lfs_pop_all(&db->expired);
	struct cds_lfs_node *n, *next;

	if (!head)
		return;
	for (n = &head->node; n; n = next) {
		struct rt_tbatch *b = caa_container_of(n, struct rt_tbatch, node);
		race_acquire(b); /* the callback's push (TSan cannot see urcu's stack) */
		next = n->next;
		for (uint32_t i = 0; i < b->n; i++)
			topic_release_memory(db, b->t[i]);
		free(b);
	}
}

void rt_arena_free_all(struct route_db *db)
{
	struct rt_arena *a = &db->arena;

	for (uint32_t i = 0; i < a->nchunks; i++)
		free(a->chunks[i]);
	free(a->chunks);
	free(a->free_slots);
	memset(a, 0, sizeof(*a));
}
