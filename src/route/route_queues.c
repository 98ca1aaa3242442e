/* Queue-entry lists, interned: a topic's entries are an immutable list,
 * and topics with equal lists share one. A broker's 40,000 topics with the
 * same queues and permission cost one list instead of 40,000, and so do
 * the topics every group of a cluster carries alike. The registrar keeps
 * a chained table of the lists by content, and a count of the topics
 * pointing at each; a list goes after a grace period once none does. */
#include <stdlib.h>
#include <string.h>

#include "route_writer.h"
#include "rmqns/err.h"

static void free_tq_cb(struct rcu_head *h)
{
	rt_tsan_before_free();
	free(caa_container_of(h, struct route_tq, rcu));
}

struct route_tq *rt_tq_alloc(uint32_t n, uint32_t map_cap)
{
	struct route_tq *tq = rt_malloc(sizeof(*tq) + (size_t)n * sizeof(tq->e[0]));

	if (!tq)
		return NULL;
	tq->n = n;
	tq->map_cap = map_cap;
	tq->refs = 0;
	tq->next = NULL;
	return tq;
}

static uint32_t tq_hash(const struct route_tq *tq)
{
	uint32_t h = 2166136261u;
	const uint8_t *p = (const uint8_t *)tq->e;
	size_t len = (size_t)tq->n * sizeof(tq->e[0]);

	h = (h ^ tq->map_cap) * 16777619u;
	h = (h ^ tq->n) * 16777619u;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 16777619u;
	return h ^ (h >> 15);
}

static bool tq_equal(const struct route_tq *a, const struct route_tq *b)
{
	return a->hash == b->hash && a->n == b->n && a->map_cap == b->map_cap &&
	       memcmp(a->e, b->e, (size_t)a->n * sizeof(a->e[0])) == 0;
}

#define RT_TQ_BUCKETS_MIN 1024u

/* Doubles the bucket array; when that fails chains get longer, nothing else. */
static void tq_table_grow(struct route_db *db)
{
	uint32_t nb = db->tq_buckets * 2;
	struct route_tq **t = rt_calloc(nb, sizeof(*t));

	if (!t)
		return;
	for (uint32_t i = 0; i < db->tq_buckets; i++) {
		struct route_tq *q = db->tq_table[i], *next;
		for (; q; q = next) {
			next = q->next;
			q->next = t[q->hash & (nb - 1)];
			t[q->hash & (nb - 1)] = q;
		}
	}
	free(db->tq_table);
	db->tq_table = t;
	db->tq_buckets = nb;
}

int rt_tq_table_init(struct route_db *db)
{
	/* allocated with the db, so that every list is interned: a list left
	 * out of the table (when a first, lazy allocation failed) would share
	 * with none of its equals and escape every count */
	db->tq_table = calloc(RT_TQ_BUCKETS_MIN, sizeof(*db->tq_table));
	if (!db->tq_table)
		return RMQNS_ENOMEM;
	db->tq_buckets = RT_TQ_BUCKETS_MIN;
	db->tq_count = 0;
	return 0;
}

struct route_tq *rt_tq_intern(struct route_db *db, struct route_tq *cand)
{
	struct route_tq *q;

	cand->hash = tq_hash(cand);
	if (db->tq_count >= db->tq_buckets)
		tq_table_grow(db);
	for (q = db->tq_table[cand->hash & (db->tq_buckets - 1)]; q; q = q->next)
		if (tq_equal(q, cand)) {
			free(cand);
			q->refs++;
			return q;
		}
	cand->refs = 1;
	cand->next = db->tq_table[cand->hash & (db->tq_buckets - 1)];
	db->tq_table[cand->hash & (db->tq_buckets - 1)] = cand;
	db->tq_count++;
	return cand;
}

void rt_tq_release(struct route_db *db, struct route_tq *tq)
{
	if (--tq->refs)
		return;
	struct route_tq **pp = &db->tq_table[tq->hash & (db->tq_buckets - 1)];
	while (*pp && *pp != tq)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = tq->next;
		db->tq_count--;
	}
	rt_defer_free(db, &tq->rcu, free_tq_cb);
}

void rt_tq_table_free(struct route_db *db)
{
	for (uint32_t i = 0; i < db->tq_buckets; i++) {
		struct route_tq *q = db->tq_table[i], *next;
		for (; q; q = next) {
			next = q->next;
			free(q);
		}
	}
	free(db->tq_table);
	db->tq_table = NULL;
	db->tq_buckets = db->tq_count = 0;
}
