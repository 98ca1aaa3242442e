/* The route database's lifecycle: creation and teardown (which free every
 * table), the hooks the embedding installs, and the registrar hooks (expiry,
 * closed connections, background removal). The top of route/: nothing in
 * the module calls it. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "route_writer.h"
#include "rmqns/answer_cache.h"
#include "rmqns/err.h"
#include "rmqns/log.h"

struct route_db *route_db_create(size_t cache_max_bytes)
{
	struct route_db *db = calloc(1, sizeof(*db));

	if (!db)
		return NULL;
	db->cache_max = cache_max_bytes ? cache_max_bytes : ROUTE_CACHE_MAX_BYTES_DEFAULT;
#ifdef RT_TSAN_KEEP
	/* liburcu-cds resizes on a worker thread whose hand-offs TSan cannot
	 * see; the small tables of TSan test runs do not need it */
	int flags = 0;
#else
	int flags = CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING;
#endif
	db->topics = cds_lfht_new(RT_TOPIC_BUCKETS_MIN, RT_TOPIC_BUCKETS_MIN, 0, flags, NULL);
	db->topic_buckets = RT_TOPIC_BUCKETS_MIN;
	db->live = cds_lfht_new(64, 64, 0, flags, NULL);
	db->gnames = cds_lfht_new(64, 64, 0, flags, NULL);
	db->dead_head = db->dead_tail = RT_ID_NONE;
	db->free_head = db->free_tail = RT_ID_NONE;
	/* Fixed-size slot arrays: untouched pages cost no memory, and a fixed
	 * directory never has to be republished. */
	db->gdir = calloc(ROUTE_MAX_GROUPS, sizeof(*db->gdir));
	db->gpriv = calloc(ROUTE_MAX_GROUPS, sizeof(*db->gpriv));
	db->lists = answer_cache_create(ANSWER_CACHE_SLOTS_DEFAULT, ANSWER_CACHE_MAX_BYTES_DEFAULT,
					MC_LIST_CACHE_HITS, MC_LIST_CACHE_BUILDS);
	if (!db->topics || !db->live || !db->gnames || !db->gdir || !db->gpriv || !db->lists ||
	    rt_tq_table_init(db) != 0) {
		if (db->topics)
			cds_lfht_destroy(db->topics, NULL);
		if (db->live)
			cds_lfht_destroy(db->live, NULL);
		if (db->gnames)
			cds_lfht_destroy(db->gnames, NULL);
		free(db->gdir);
		free(db->gpriv);
		answer_cache_destroy(db->lists);
		free(db);
		return NULL;
	}
	cds_lfs_init(&db->retired);
	cds_lfs_init(&db->expired);
	db->start_ms = route_now_ms();
	return db;
}


static void db_teardown(struct route_db *db)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *n;

	/* callbacks queued by the registrar still point into the tables */
	rt_drain_retired(db);
	rt_topic_retire_flush(db);
#ifndef RT_TSAN_KEEP
	rcu_barrier();
	rt_tsan_before_free(); /* TSan cannot see that the barrier waited for the callbacks */
#endif
	rt_run_deferred(db);
	rt_topic_reclaim(db);
	answer_cache_destroy(db->lists);

	rcu_read_lock();
	cds_lfht_first(db->topics, &it);
	while ((n = cds_lfht_iter_get_node(&it)) != NULL) {
		struct route_topic *t = caa_container_of(n, struct route_topic, node);
		cds_lfht_next(db->topics, &it);
		cds_lfht_del(db->topics, n);
		rt_topic_free_unlinked(db, t);
	}
	cds_lfht_first(db->live, &it);
	while ((n = cds_lfht_iter_get_node(&it)) != NULL) {
		struct route_live *l = caa_container_of(n, struct route_live, node);
		cds_lfht_next(db->live, &it);
		cds_lfht_del(db->live, n);
		free(l);
	}
	cds_lfht_first(db->gnames, &it);
	while ((n = cds_lfht_iter_get_node(&it)) != NULL) {
		struct route_gname *gn = caa_container_of(n, struct route_gname, node);
		cds_lfht_next(db->gnames, &it);
		cds_lfht_del(db->gnames, n);
		free(gn);
	}
	rcu_read_unlock();
	cds_lfht_destroy(db->topics, NULL);
	cds_lfht_destroy(db->live, NULL);
	cds_lfht_destroy(db->gnames, NULL);

	for (uint32_t i = 0; i < ROUTE_MAX_GROUPS; i++) {
		if (db->gdir[i])
			rt_group_free(db->gdir[i]);
		rt_idset_free(&db->gpriv[i].topics);
	}
	rt_tq_table_free(db);
	rt_arena_free_all(db);
	if (db->clusters) {
		for (uint32_t i = 0; i < db->clusters->n; i++) {
			free(db->clusters->c[i]->gidx);
			free(db->clusters->c[i]);
		}
		free(db->clusters);
	}
	if (db->filters) {
		for (uint32_t i = 0; i < db->filters->n; i++)
			free(db->filters->f[i]);
		free(db->filters);
	}
	if (db->maps) {
		for (uint32_t i = 0; i < db->maps->n; i++) {
			free(db->maps->e[i]->m.ids);
			free(db->maps->e[i]);
		}
		free(db->maps);
	}
	free(db->gdir);
	free(db->gpriv);
	free(db);
}

/* The teardown runs on a thread of its own, registered with urcu, so that
 * any thread (registered or not, main() included) may destroy the db. */
static void *db_teardown_thread(void *arg)
{
	log_set_thread_name("route-teardown");
	rcu_register_thread();
	db_teardown(arg);
	rcu_unregister_thread();
	return NULL;
}

void route_db_destroy(struct route_db *db)
{
	pthread_t t;

	if (!db)
		return;
	if (pthread_create(&t, NULL, db_teardown_thread, db) == 0)
		pthread_join(t, NULL);
	else
		db_teardown(db); /* only safe from a registered thread */
}

/* ---- hooks ---- */

void route_db_set_close_hook(struct route_db *db, route_close_fn fn, void *arg)
{
	/* arg first: expiry loads fn (acquire), then arg */
	__atomic_store_n(&db->close_arg, arg, __ATOMIC_RELAXED);
	__atomic_store_n(&db->close_fn, fn, __ATOMIC_RELEASE);
}

void route_db_set_notify_hook(struct route_db *db, route_notify_fn fn, void *arg)
{
	__atomic_store_n(&db->notify_arg, arg, __ATOMIC_RELAXED);
	__atomic_store_n(&db->notify_fn, fn, __ATOMIC_RELEASE);
}

void route_hook_tick(void *arg, uint64_t now_ms)
{
	struct route_db *db = arg;
	int n = route_apply_expire(db, now_ms);

	if (n > 0)
		log_info("route: %d broker(s) expired", n);
	rt_group_reap(db, ROUTE_REAP_SLICE); /* in case no idle hook runs */
	rt_topic_retire_flush(db);
	rt_topic_reclaim(db);
	rt_drain_retired(db);
	rt_cache_trim(db);
}

void route_hook_conn_closed(void *arg, uint64_t conn_id)
{
	route_apply_conn_closed(arg, conn_id);
}

bool route_hook_idle(void *arg)
{
	struct route_db *db = arg;
	bool more = rt_group_reap(db, ROUTE_REAP_SLICE);

	rt_topic_retire_flush(db);
	rt_topic_reclaim(db);
	return more;
}
