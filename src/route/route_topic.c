/* Topics: the RCU hash table of topic -> queue entries (one per broker
 * group, in Java HashMap order), and every change of a topic's entries, which also keeps the group ->
 * topics index (route_idset.c) up to date. Registrar only. */
#include <stdlib.h>
#include <string.h>

#include "route_writer.h"
#include "rmqns/err.h"
#include "rmqns/javahash.h"

/* ---- queue entries ---- */


int rt_tq_find(const struct route_tq *tq, uint32_t gidx)
{
	for (uint32_t i = 0; i < tq->n; i++)
		if (tq->e[i].gidx == gidx)
			return (int)i;
	return -1;
}

static bool qd_equal(const struct route_qd *a, const struct route_qd *b)
{
	return a->gidx == b->gidx && a->perm == b->perm && a->read_queues == b->read_queues &&
	       a->write_queues == b->write_queues && a->sysflag == b->sysflag;
}

/* Reorders entries into Java HashMap iteration order for the map's
 * capacity; entries keep their relative order within a bucket. */
static void tq_order(struct route_db *db, struct route_tq *tq)
{
	uint32_t idx[64], *ix = tq->n <= 64 ? idx : rt_malloc(tq->n * sizeof(*ix));
	int32_t hs[64], *h = tq->n <= 64 ? hs : rt_malloc(tq->n * sizeof(*h));
	struct route_qd tmp[64], *t = tq->n <= 64 ? tmp : rt_malloc(tq->n * sizeof(*t));

	if (ix && h && t && tq->n > 1) {
		for (uint32_t i = 0; i < tq->n; i++) {
			struct route_group *g = db->gdir[tq->e[i].gidx];
			ix[i] = i;
			h[i] = g ? g->name_hash : 0;
		}
		java_map_order(h, tq->n, tq->map_cap, ix);
		for (uint32_t i = 0; i < tq->n; i++)
			t[i] = tq->e[ix[i]];
		memcpy(tq->e, t, tq->n * sizeof(*t));
	}
	if (ix != idx)
		free(ix);
	if (h != hs)
		free(h);
	if (t != tmp)
		free(t);
}

void rt_topic_publish_tq(struct route_db *db, struct route_topic *t, struct route_tq *ntq)
{
	struct route_tq *old = t->tq;

	db->topic_epoch++;
	rt_assign(t->tq, rt_tq_intern(db, ntq));
	rt_tq_release(db, old);
	rt_topic_invalidate(db, t);
	rt_lists_changed(db);
}

/* The group's entry left t: the index and the counts follow. */
static void entry_gone(struct route_db *db, struct route_topic *t, uint32_t gidx)
{
	struct route_group *g = db->gdir[gidx];

	rt_idset_del(&db->gpriv[gidx].topics, t->tid);
	if (g && g->dead)
		__atomic_sub_fetch(&db->dead_entries, 1, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&db->n_entries, 1, __ATOMIC_RELAXED);
	rt_group_maybe_retire(db, gidx);
}

int rt_topic_unlink(struct route_db *db, struct route_topic *t)
{
	struct route_tq *tq = t->tq;

	if (rt_topic_retire_reserve(db))
		return RMQNS_ENOMEM;
	/* unlinked first: no reader may meet the topic once its groups'
	 * slots can be retired */
	db->topic_epoch++;
	cds_lfht_del(db->topics, &t->node);
	rt_topic_invalidate(db, t);
	rt_lists_changed(db);
	for (uint32_t i = 0; i < tq->n; i++)
		entry_gone(db, t, tq->e[i].gidx);
	rt_tq_release(db, tq); /* readers may still read it: freed after a grace period */
	__atomic_sub_fetch(&db->n_topics, 1, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&db->names_digest, rt_names_term(rt_hash_str(t->name), RT_NAMES_TOPIC),
			   __ATOMIC_RELAXED);
	rt_topic_retire(db, t);
	return 0;
}

static int topic_create(struct route_db *db, const char *name, const struct route_qd *qd)
{
	size_t nl = strlen(name);
	struct route_topic *t = rt_topic_alloc(db, nl);
	struct route_tq *ntq = rt_tq_alloc(1, 16);
	struct rt_idset *s = &db->gpriv[qd->gidx].topics;
	int rc = t && ntq && rt_idset_add(s, t->tid) == 0 ? 0 : RMQNS_ENOMEM;

	if (rc) {
		if (t)
			rt_topic_free_unlinked(db, t);
		free(ntq);
		return rc;
	}
	memcpy(t->name, name, nl + 1);
	ntq->e[0] = *qd;
	cds_lfht_node_init(&t->node);
	/* the release store orders the node's initialisation before the lfht
	 * link that publishes it */
	rt_assign(t->tq, rt_tq_intern(db, ntq));
	uint64_t hash = rt_hash_str(name);
	cds_lfht_add(db->topics, hash, &t->node);
	rt_lists_changed(db);
	db->topic_epoch++;
	__atomic_add_fetch(&db->n_entries, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&db->n_topics, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&db->names_digest, rt_names_term(hash, RT_NAMES_TOPIC), __ATOMIC_RELAXED);
	return 0;
}

int rt_topic_put_entry(struct route_db *db, const char *name, const struct route_qd *qd)
{
	struct route_topic *t = rt_topic_find(db, name);
	struct route_tq *tq, *ntq;
	int i;

	if (!t)
		return topic_create(db, name, qd);
	tq = t->tq;
	i = rt_tq_find(tq, qd->gidx);
	if (i >= 0) {
		if (qd_equal(&tq->e[i], qd))
			return 0;
		ntq = rt_tq_alloc(tq->n, tq->map_cap);
		if (!ntq)
			return RMQNS_ENOMEM;
		memcpy(ntq->e, tq->e, tq->n * sizeof(tq->e[0]));
		ntq->e[i] = *qd; /* a replaced value keeps its place */
	} else {
		uint32_t cap = java_map_cap(tq->n + 1);
		ntq = rt_tq_alloc(tq->n + 1, cap > tq->map_cap ? cap : tq->map_cap);
		if (!ntq || rt_idset_add(&db->gpriv[qd->gidx].topics, t->tid)) {
			free(ntq);
			return RMQNS_ENOMEM;
		}
		memcpy(ntq->e, tq->e, tq->n * sizeof(tq->e[0]));
		ntq->e[tq->n] = *qd;
		tq_order(db, ntq);
		__atomic_add_fetch(&db->n_entries, 1, __ATOMIC_RELAXED);
	}
	rt_topic_publish_tq(db, t, ntq);
	return 0;
}

int rt_topic_remove_entry(struct route_db *db, struct route_topic *t, uint32_t gidx)
{
	struct route_tq *tq = t->tq, *ntq;
	int i = rt_tq_find(tq, gidx);

	if (i < 0)
		return 0;
	if (tq->n == 1)
		return rt_topic_unlink(db, t);
	ntq = rt_tq_alloc(tq->n - 1, tq->map_cap);
	if (!ntq)
		return RMQNS_ENOMEM;
	memcpy(ntq->e, tq->e, (size_t)i * sizeof(tq->e[0]));
	memcpy(&ntq->e[i], &tq->e[i + 1], (tq->n - (uint32_t)i - 1) * sizeof(tq->e[0]));
	rt_topic_publish_tq(db, t, ntq);
	entry_gone(db, t, gidx);
	return 0;
}

/* Grows the topic table to two to four topics a bucket. liburcu's own
 * resizing runs on its worker and, with one registrar adding 40,000
 * topics at a go, sometimes never happened: a table left at 1,024 buckets
 * with 1.28 M topics made the 32 registrations of the big shape take 45 s
 * of CPU instead of 3 (chains of a thousand). Asked for here, it is done
 * on the registrar at once. Outside any read-side section only. */
void rt_topics_fit(struct route_db *db)
{
#ifndef RT_TSAN_KEEP /* TSan builds keep a fixed table (see route_db_create) */
	unsigned long n = (unsigned long)__atomic_load_n(&db->n_topics, __ATOMIC_RELAXED);
	unsigned long want = RT_TOPIC_BUCKETS_MIN;

	/* two to four topics a bucket: a bucket costs 16 bytes, and a chain
	 * of three is still a short walk */
	while (want < n / 4)
		want <<= 1;
	if (want > db->topic_buckets) {
		cds_lfht_resize(db->topics, want);
		db->topic_buckets = want;
	} else if (want < db->topic_buckets / 8) {
		db->topic_buckets = want; /* liburcu shrinks it by itself */
	}
#else
	(void)db;
#endif
}

/* Every RT_READ_SPAN topics of a big registration the registrar leaves
 * its read-side section for a moment and lets the table grow. Safe: between
 * topics it holds no pointer to anything it has retired, and nothing else
 * retires. */
#define RT_READ_SPAN 1024

void rt_read_breathe(struct route_db *db, uint32_t i)
{
	if (i % RT_READ_SPAN == RT_READ_SPAN - 1) {
		rcu_read_unlock();
		if (!rcu_read_ongoing())
			rt_topics_fit(db);
		rcu_read_lock();
	}
}

/* Topics with an entry for gidx (all topics when gidx is UINT32_MAX),
 * collected first so callers may unlink them. */
