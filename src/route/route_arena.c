/* Topic records: their memory and their reclamation. A record is small
 * (about 70 bytes with its name) and there may be millions, so they are
 * carved from 256 KiB chunks in 8-byte size classes, without malloc's
 * per-block header and rounding, and they carry no RCU head of their own:
 * unlinked records wait in batches of 1,024 for one grace period per
 * batch. Registrar only: the grace-period callback just hands a batch back,
 * and the registrar puts its records on the free lists. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "route_writer.h"
#include "rmqns/err.h"

#define ARENA_CHUNK (256u << 10)
#define ARENA_GRAIN 8u

struct arena_chunk {
	struct arena_chunk *next;
	uint8_t mem[];
};

struct arena_free {
	struct arena_free *next;
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

struct route_topic *rt_topic_alloc(struct route_db *db, size_t name_len)
{
	struct rt_arena *a = &db->arena;
	size_t sz = record_size(name_len);
	struct route_topic *t;

	if (sz > RT_ARENA_MAX) {
		t = rt_calloc(1, sz); /* a rare long name: malloc's */
		return t;
	}
	struct arena_free *f = a->free[sz / ARENA_GRAIN];
	if (f) {
		a->free[sz / ARENA_GRAIN] = f->next;
		t = (struct route_topic *)f;
	} else {
		if (!a->chunk || a->used + sz > ARENA_CHUNK) {
			struct arena_chunk *c = rt_malloc(sizeof(*c) + ARENA_CHUNK);
			if (!c)
				return NULL;
			/* the tail of the chunk left is lost: under one record */
			c->next = a->chunks;
			a->chunks = c;
			a->chunk = c->mem;
			a->used = 0;
		}
		t = (struct route_topic *)(a->chunk + a->used);
		a->used += sz;
	}
	memset(t, 0, sz);
	return t;
}

/* Back to its free list (or malloc); the caller knows no reader can see it. */
static void topic_release_memory(struct route_db *db, struct route_topic *t)
{
	size_t sz = record_size(strlen(t->name));

	free(t->cache[0]);
	free(t->cache[1]);
	if (sz > RT_ARENA_MAX) {
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
	/* no reader can hold its records any more: the registrar frees them */
	cds_lfs_push(&b->db->expired, &b->node);
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
		next = n->next;
		for (uint32_t i = 0; i < b->n; i++)
			topic_release_memory(db, b->t[i]);
		free(b);
	}
}

void rt_arena_free_all(struct route_db *db)
{
	struct arena_chunk *c = db->arena.chunks, *next;

	for (; c; c = next) {
		next = c->next;
		free(c);
	}
	memset(&db->arena, 0, sizeof(db->arena));
}
