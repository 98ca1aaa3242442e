/* The route answer cache: the bytes of each topic's TopicRouteData per
 * form, installed by readers with a compare-and-swap and invalidated by
 * the registrar. cache_bytes counts exactly the entries installed in
 * topics; an entry leaves the count when it leaves its topic. */
#include <stdlib.h>
#include <string.h>

#include "route_writer.h"

void (*rt_test_before_install)(struct route_db *db, struct route_topic *t);

static void free_cache_cb(struct rcu_head *h)
{
	rt_tsan_before_free();
	free(caa_container_of(h, struct route_cache, rcu));
}

void rt_cache_retire(struct route_db *db, struct route_cache *c)
{
	if (!c)
		return;
	__atomic_sub_fetch(&db->cache_bytes, c->len, __ATOMIC_RELAXED);
	rt_defer_free(db, &c->rcu, free_cache_cb);
}

void rt_topic_invalidate(struct route_db *db, struct route_topic *t)
{
	/* the new state is published before the generation moves, so a reader
	 * that sees the new generation builds from the new state */
	__atomic_add_fetch(&t->gen, 1, __ATOMIC_SEQ_CST);
	for (int f = 0; f < 2; f++)
		rt_cache_retire(db, __atomic_exchange_n(&t->cache[f], NULL, __ATOMIC_ACQ_REL));
}

void rt_drain_retired(struct route_db *db)
{
	struct cds_lfs_head *head = __cds_lfs_pop_all(&db->retired);
	struct cds_lfs_node *n, *next;

	if (!head)
		return;
	for (n = &head->node; n; n = next) {
		struct route_cache *c = caa_container_of(n, struct route_cache, retire);
		race_acquire(c); /* the reader's push (TSan cannot see urcu's stack) */
		next = n->next;
		/* bytes were already uncounted by the reader that replaced it */
		rt_defer_free(db, &c->rcu, free_cache_cb);
	}
}

/* Topics looked at per trim, so that a tick's work stays bounded however
 * big the table. */
#define RT_TRIM_SPAN 65536u

void rt_cache_trim(struct route_db *db)
{
	/* second-chance trimming once three quarters of the budget are used:
	 * entries not read since the topic was last looked at go. The
	 * registrar walks the groups' topic indexes from where it stopped (a
	 * topic of several groups is looked at once for each). */
	if (__atomic_load_n(&db->cache_bytes, __ATOMIC_RELAXED) < db->cache_max / 4 * 3)
		return;
	/* A walk ends where it began at the latest: a table smaller than the
	 * span would otherwise be walked round several times in one trim, and
	 * the second visit would take the entries the first just spared. */
	uint32_t start_gidx = db->trim_gidx, start_slot = db->trim_slot;
	bool wrapped = false;
	rcu_read_lock();
	for (uint32_t k = 0; k < RT_TRIM_SPAN; k++) {
		if (db->trim_gidx >= db->groups_high_water) {
			if (wrapped || !db->groups_high_water)
				break;
			db->trim_gidx = db->trim_slot = 0;
			wrapped = true;
		}
		if (wrapped && (db->trim_gidx > start_gidx ||
				(db->trim_gidx == start_gidx && db->trim_slot >= start_slot)))
			break;
		struct rt_idset *s = &db->gpriv[db->trim_gidx].topics;
		if (db->trim_slot >= s->cap) {
			db->trim_gidx++;
			db->trim_slot = 0;
			continue;
		}
		uint32_t tid = s->slots[db->trim_slot++];
		struct route_topic *t = tid == RT_ID_NONE ? NULL : rt_topic_by_id(db, tid);
		if (!t)
			continue;
		if (__atomic_load_n(&t->hot, __ATOMIC_RELAXED)) {
			__atomic_store_n(&t->hot, 0, __ATOMIC_RELAXED);
			continue;
		}
		for (int f = 0; f < 2; f++)
			if (rt_deref(t->cache[f]))
				rt_cache_retire(db, __atomic_exchange_n(&t->cache[f], NULL, __ATOMIC_ACQ_REL));
	}
	rcu_read_unlock();
}

/* A reader gives back an entry it took out of a topic: the registrar
 * frees it after a grace period. */
static void cache_give_back(struct route_db *db, struct route_cache *c)
{
	__atomic_sub_fetch(&db->cache_bytes, c->len, __ATOMIC_RELAXED);
	race_release(c);
	cds_lfs_push(&db->retired, &c->retire);
}

void rt_cache_install(struct route_db *db, struct route_topic *t, int form, struct route_cache *seen,
		      const uint8_t *bytes, size_t len, uint32_t splice, uint8_t acting, uint32_t tg,
		      uint64_t gg)
{
	struct route_cache *c;

	if (rt_test_before_install)
		rt_test_before_install(db, t);
	if (len > UINT32_MAX || __atomic_load_n(&db->cache_bytes, __ATOMIC_RELAXED) + len > db->cache_max)
		return;
	c = rt_malloc(sizeof(*c) + len);
	if (!c)
		return;
	cds_lfs_node_init(&c->retire);
	c->tgen = tg;
	c->ggen = gg;
	c->len = (uint32_t)len;
	c->splice = splice;
	c->acting = acting;
	memcpy(c->bytes, bytes, len);
	if (!__atomic_compare_exchange_n(&t->cache[form], &seen, c, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		free(c);
		return;
	}
	__atomic_add_fetch(&db->cache_bytes, len, __ATOMIC_RELAXED);
	if (seen)
		cache_give_back(db, seen); /* a stale entry */
	/* The registrar may have unlinked the topic and emptied its slots
	 * before our swap: then nobody would ever take this entry out again
	 * (the topic's free does not count bytes), so take it back. The
	 * registrar's unlink comes before its exchange, which our swap saw. */
	if (cds_lfht_is_node_deleted(&t->node)) {
		struct route_cache *mine = c;
		if (__atomic_compare_exchange_n(&t->cache[form], &mine, NULL, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			cache_give_back(db, c);
	}
}

uint64_t rt_cache_sum(struct route_db *db)
{
	struct cds_lfht_iter it;
	struct route_topic *t;
	uint64_t sum = 0;

	rcu_read_lock();
	cds_lfht_for_each_entry(db->topics, &it, t, node)
		for (int f = 0; f < 2; f++) {
			struct route_cache *c = rt_deref(t->cache[f]);
			if (c)
				sum += c->len;
		}
	rcu_read_unlock();
	return sum;
}
