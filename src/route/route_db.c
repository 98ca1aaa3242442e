/* The bottom of the route database: its clock, the tables' hashes and
 * look-ups, and the counts. Calls no other file of route/; creation, teardown and the registrar hooks are in
 * route_lifecycle.c, the changes in route_apply.c, the reads in
 * route_read.c. */
#include <string.h>
#include <time.h>

#include "route_writer.h"

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

void route_stats(struct route_db *db, struct route_stats *st)
{
	st->topics = __atomic_load_n(&db->n_topics, __ATOMIC_RELAXED);
	st->queue_entries = __atomic_load_n(&db->n_entries, __ATOMIC_RELAXED);
	st->groups = __atomic_load_n(&db->n_groups, __ATOMIC_RELAXED);
	st->live = __atomic_load_n(&db->n_live, __ATOMIC_RELAXED);
	st->cache_bytes = __atomic_load_n(&db->cache_bytes, __ATOMIC_RELAXED);
	st->dead_entries = __atomic_load_n(&db->dead_entries, __ATOMIC_RELAXED);
	uint64_t d = __atomic_load_n(&db->names_digest, __ATOMIC_RELAXED);
	st->names_digest = (uint32_t)(d ^ d >> 32);
}
