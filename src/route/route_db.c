/* The route database object: creation and teardown, hashing and lookups,
 * Java hash-order helpers, the registrar hooks and statistics. The tables'
 * mutations live in route_apply.c, the reads in route_read.c. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "route_writer.h"
#include "rmqns/answer_cache.h"
#include "rmqns/err.h"
#include "rmqns/log.h"

uint64_t route_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t route_uptime_ms(const struct route_db *db, uint64_t now_ms)
{
	return now_ms > db->start_ms ? now_ms - db->start_ms : 0;
}

bool route_db_warm(const struct route_db *db)
{
	return __atomic_load_n(&db->warm, __ATOMIC_ACQUIRE);
}

uint64_t route_db_changes(const struct route_db *db)
{
	return __atomic_load_n(&db->changes, __ATOMIC_ACQUIRE);
}

void route_read_lock(void)
{
	rcu_read_lock();
}

void route_read_unlock(void)
{
	rt_tsan_reader_done();
	rcu_read_unlock();
}

/* ---- hashing ---- */

static uint64_t mix64(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

static uint64_t fnv64(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (uint8_t)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

uint64_t rt_hash_str(const char *s)
{
	return mix64(fnv64(0xcbf29ce484222325ULL, s));
}

uint64_t rt_hash_pair(const char *a, const char *b)
{
	uint64_t h = fnv64(0xcbf29ce484222325ULL, a);
	h ^= 0xff;
	h *= 0x100000001b3ULL;
	return mix64(fnv64(h, b));
}

int32_t rt_java_long_hash(int64_t v)
{
	uint64_t u = (uint64_t)v;
	return (int32_t)(uint32_t)(u ^ (u >> 32));
}

uint32_t rt_java_cap(uint32_t n)
{
	uint64_t cap = 16;

	while ((uint64_t)n * 4 > cap * 3)
		cap <<= 1;
	return cap > (1u << 30) ? (1u << 30) : (uint32_t)cap;
}

static uint32_t java_bucket(int32_t h, uint32_t cap)
{
	uint32_t u = (uint32_t)h;
	return (u ^ (u >> 16)) & (cap - 1);
}

void rt_java_order(const int32_t *hashes, uint32_t n, uint32_t cap, uint32_t *idx)
{
	if (n < 2)
		return;
	if (n <= 32) {
		/* insertion sort: stable, and these lists are short */
		for (uint32_t i = 1; i < n; i++) {
			uint32_t v = idx[i];
			uint32_t b = java_bucket(hashes[v], cap);
			uint32_t k = i;
			while (k > 0 && java_bucket(hashes[idx[k - 1]], cap) > b) {
				idx[k] = idx[k - 1];
				k--;
			}
			idx[k] = v;
		}
		return;
	}
	/* merge sort on a copy, stable */
	uint32_t *tmp = malloc((size_t)n * sizeof(*tmp));
	if (!tmp)
		return; /* keep insertion order: still a consistent order */
	for (uint32_t w = 1; w < n; w *= 2) {
		for (uint32_t lo = 0; lo < n; lo += 2 * w) {
			uint32_t mid = lo + w < n ? lo + w : n;
			uint32_t hi = lo + 2 * w < n ? lo + 2 * w : n;
			uint32_t a = lo, b = mid, o = lo;
			while (a < mid && b < hi) {
				if (java_bucket(hashes[idx[b]], cap) < java_bucket(hashes[idx[a]], cap))
					tmp[o++] = idx[b++];
				else
					tmp[o++] = idx[a++];
			}
			while (a < mid)
				tmp[o++] = idx[a++];
			while (b < hi)
				tmp[o++] = idx[b++];
		}
		memcpy(idx, tmp, (size_t)n * sizeof(*idx));
	}
	free(tmp);
}

/* ---- lookups ---- */

static int topic_match(struct cds_lfht_node *node, const void *key)
{
	struct route_topic *t = caa_container_of(node, struct route_topic, node);
	/* pairs with the release that published the node (its tq) */
	(void)rt_deref(t->tq);
	return strcmp(t->name, (const char *)key) == 0;
}

struct route_topic *rt_topic_find(struct route_db *db, const char *name)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *n;

	if (!name)
		return NULL;
	cds_lfht_lookup(db->topics, rt_hash_str(name), topic_match, name, &it);
	n = cds_lfht_iter_get_node(&it);
	return n ? caa_container_of(n, struct route_topic, node) : NULL;
}

static int live_match(struct cds_lfht_node *node, const void *key)
{
	struct route_live *l = caa_container_of(node, struct route_live, node);
	const struct rt_live_key *k = key;
	(void)rt_deref(l->hash); /* pairs with the registrar's release store */
	return strcmp(l->addr, k->addr) == 0 && strcmp(l->cluster, k->cluster) == 0;
}

struct route_live *rt_live_find(struct route_db *db, const char *cluster, const char *addr)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *n;
	struct rt_live_key k = { cluster, addr };

	if (!cluster || !addr)
		return NULL;
	cds_lfht_lookup(db->live, rt_hash_pair(cluster, addr), live_match, &k, &it);
	n = cds_lfht_iter_get_node(&it);
	if (!n)
		return NULL;
	return caa_container_of(n, struct route_live, node);
}

int rt_live_match(struct cds_lfht_node *node, const void *key)
{
	return live_match(node, key);
}

int rt_topic_match(struct cds_lfht_node *node, const void *key)
{
	return topic_match(node, key);
}

/* ---- lifecycle ---- */

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

void route_stats(struct route_db *db, struct route_stats *st)
{
	st->topics = __atomic_load_n(&db->n_topics, __ATOMIC_RELAXED);
	st->queue_entries = __atomic_load_n(&db->n_entries, __ATOMIC_RELAXED);
	st->groups = __atomic_load_n(&db->n_groups, __ATOMIC_RELAXED);
	st->live = __atomic_load_n(&db->n_live, __ATOMIC_RELAXED);
	st->cache_bytes = __atomic_load_n(&db->cache_bytes, __ATOMIC_RELAXED);
	st->dead_entries = __atomic_load_n(&db->dead_entries, __ATOMIC_RELAXED);
}
