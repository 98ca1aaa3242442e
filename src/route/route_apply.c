/* The registrar's side of the route registry: every change to the tables
 * (protocol.md §6.2-§6.8). Runs on the registrar thread only; publishes new
 * immutable versions and frees old ones after a grace period. Never reads
 * the network, never blocks on a reader. */
#include <stdlib.h>
#include <string.h>

#include "route_priv.h"
#include "rmqns/err.h"
#include "rmqns/log.h"

/* ---- grace-period frees ---- */

#ifdef RMQNS_TSAN
/* ThreadSanitizer cannot see urcu's grace periods (nor its callback
 * thread's hand-offs): its builds keep replaced objects until the db is
 * destroyed, the way the KV store does. */
struct rt_deferred {
	struct rt_deferred *next;
	struct rcu_head *head;
	void (*cb)(struct rcu_head *);
};

static void rt_defer_free(struct route_db *db, struct rcu_head *head, void (*cb)(struct rcu_head *))
{
	struct rt_deferred *d = malloc(sizeof(*d));

	if (!d)
		abort(); /* test builds only */
	d->head = head;
	d->cb = cb;
	d->next = db->deferred;
	db->deferred = d;
}

void rt_run_deferred(struct route_db *db)
{
	while (db->deferred) {
		struct rt_deferred *d = db->deferred;
		db->deferred = d->next;
		d->cb(d->head);
		free(d);
	}
}
#else
#define rt_defer_free(db, head, cb) call_rcu((head), (cb))

void rt_run_deferred(struct route_db *db)
{
	(void)db;
}
#endif

static void free_group_cb(struct rcu_head *h)
{
	rt_tsan_before_free();
	rt_group_free(caa_container_of(h, struct route_group, rcu));
}

static void retire_group_cb(struct rcu_head *h)
{
	struct route_group *g = caa_container_of(h, struct route_group, rcu);
	struct route_db *db = g->db;
	uint32_t gidx = g->gidx;

	rt_tsan_before_free();
	rt_group_free(g);
	/* no reader can see the slot's old group or a queue entry naming it
	 * any more: the slot may take a new name */
	__atomic_store_n(&db->gpriv[gidx].reusable, 1, __ATOMIC_RELEASE);
}

static void free_tq_cb(struct rcu_head *h)
{
	rt_tsan_before_free();
	free(caa_container_of(h, struct route_tq, rcu));
}

static void free_cache_cb(struct rcu_head *h)
{
	rt_tsan_before_free();
	free(caa_container_of(h, struct route_cache, rcu));
}

static void free_topic_cb(struct rcu_head *h)
{
	struct route_topic *t = caa_container_of(h, struct route_topic, rcu);

	rt_tsan_before_free();
	free(t->tq);
	/* a reader may have installed an entry after the topic was unlinked */
	free(t->cache[0]);
	free(t->cache[1]);
	free(t);
}

static void free_live_cb(struct rcu_head *h)
{
	rt_tsan_before_free();
	free(caa_container_of(h, struct route_live, rcu));
}

static void free_clusters_cb(struct rcu_head *h)
{
	rt_tsan_before_free();
	free(caa_container_of(h, struct route_clusters, rcu));
}

static void free_cluster_cb(struct rcu_head *h)
{
	struct route_cluster *c = caa_container_of(h, struct route_cluster, rcu);

	rt_tsan_before_free();
	free(c->gidx);
	free(c);
}

static void free_filters_cb(struct rcu_head *h)
{
	rt_tsan_before_free();
	free(caa_container_of(h, struct route_filters, rcu));
}

static void free_filter_cb(struct rcu_head *h)
{
	rt_tsan_before_free();
	free(caa_container_of(h, struct route_filter, rcu));
}

static void free_maps_cb(struct rcu_head *h)
{
	rt_tsan_before_free();
	free(caa_container_of(h, struct route_maps, rcu));
}

static void free_mapping_cb(struct rcu_head *h)
{
	struct route_mapping *m = caa_container_of(h, struct route_mapping, rcu);

	rt_tsan_before_free();
	free(m->m.ids);
	free(m);
}

/* ---- cache invalidation ---- */

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
		next = n->next;
		/* bytes were already uncounted by the reader that replaced it */
		rt_defer_free(db, &c->rcu, free_cache_cb);
	}
}

void rt_cache_trim(struct route_db *db)
{
	struct cds_lfht_iter it;
	struct route_topic *t;

	/* second-chance trimming once three quarters of the budget are used:
	 * entries not read since the last trim go */
	if (__atomic_load_n(&db->cache_bytes, __ATOMIC_RELAXED) < db->cache_max / 4 * 3)
		return;
	rcu_read_lock();
	cds_lfht_for_each_entry(db->topics, &it, t, node) {
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

/* ---- broker groups ---- */

static char *xstrdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

static bool str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static uint32_t g_find(struct route_db *db, const char *name)
{
	uint32_t hwm = db->g_hwm;
	int32_t h = route_java_hash(name);

	for (uint32_t i = 0; i < hwm; i++) {
		struct route_group *g = db->gdir[i];
		if (g && g->name_hash == h && strcmp(g->name, name) == 0)
			return i;
	}
	return UINT32_MAX;
}

static struct route_group *g_new(struct route_db *db, uint32_t gidx, const char *name)
{
	struct route_group *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->db = db;
	g->gidx = gidx;
	g->map_cap = 16;
	g->name = strdup(name);
	g->name_hash = route_java_hash(name);
	if (!g->name) {
		free(g);
		return NULL;
	}
	return g;
}

/* The slot of `name`, interning it (as a group not in brokerAddrTable)
 * when new. */
static int g_intern(struct route_db *db, const char *name, uint32_t *out)
{
	uint32_t i = g_find(db, name);
	uint32_t hwm = db->g_hwm;
	struct route_group *g;

	if (i != UINT32_MAX) {
		*out = i;
		return 0;
	}
	for (i = 0; i < hwm; i++) {
		struct route_gpriv *p = &db->gpriv[i];
		if (p->state == RT_SLOT_FREE)
			break;
		if (p->state == RT_SLOT_RETIRING && __atomic_load_n(&p->reusable, __ATOMIC_ACQUIRE))
			break;
	}
	if (i == hwm && hwm >= ROUTE_MAX_GROUPS)
		return RMQNS_ETOOBIG;
	g = g_new(db, i, name);
	if (!g || rt_group_render(g)) {
		rt_group_free(g);
		return RMQNS_ENOMEM;
	}
	memset(&db->gpriv[i], 0, sizeof(db->gpriv[i]));
	db->gpriv[i].state = RT_SLOT_USED;
	rt_assign(db->gdir[i], g);
	if (i == hwm)
		__atomic_store_n(&db->g_hwm, hwm + 1, __ATOMIC_RELEASE);
	*out = i;
	return 0;
}

/* Frees the slot of a group that is gone and named by nothing. */
static void g_maybe_retire(struct route_db *db, uint32_t gidx)
{
	struct route_group *g = db->gdir[gidx];
	struct route_gpriv *p = &db->gpriv[gidx];

	if (!g || g->present || p->topic_refs || p->cluster_refs)
		return;
	rt_assign(db->gdir[gidx], NULL);
	p->state = RT_SLOT_RETIRING;
	__atomic_store_n(&p->reusable, 0, __ATOMIC_RELAXED);
	rt_defer_free(db, &g->rcu, retire_group_cb);
}

static struct route_group *g_clone(const struct route_group *g)
{
	struct route_group *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->db = g->db;
	n->gidx = g->gidx;
	n->present = g->present;
	n->acting_master = g->acting_master;
	n->map_cap = g->map_cap;
	n->name_hash = g->name_hash;
	n->name = strdup(g->name);
	n->cluster = xstrdup(g->cluster);
	n->zone = xstrdup(g->zone);
	n->addrs = calloc(g->n_addrs + 1, sizeof(*n->addrs));
	if (!n->name || !n->addrs || (g->cluster && !n->cluster) || (g->zone && !n->zone)) {
		rt_group_free(n);
		return NULL;
	}
	for (uint32_t i = 0; i < g->n_addrs; i++) {
		n->addrs[i].id = g->addrs[i].id;
		n->addrs[i].addr = strdup(g->addrs[i].addr);
		if (!n->addrs[i].addr) {
			n->n_addrs = i;
			rt_group_free(n);
			return NULL;
		}
	}
	n->n_addrs = g->n_addrs;
	return n;
}

static bool g_same(const struct route_group *a, const struct route_group *b)
{
	if (a->present != b->present || a->acting_master != b->acting_master || a->map_cap != b->map_cap ||
	    a->n_addrs != b->n_addrs || !str_eq(a->cluster, b->cluster) || !str_eq(a->zone, b->zone))
		return false;
	for (uint32_t i = 0; i < a->n_addrs; i++)
		if (a->addrs[i].id != b->addrs[i].id || strcmp(a->addrs[i].addr, b->addrs[i].addr) != 0)
			return false;
	return true;
}

static int g_addr_index(const struct route_group *g, int64_t id)
{
	for (uint32_t i = 0; i < g->n_addrs; i++)
		if (g->addrs[i].id == id)
			return (int)i;
	return -1;
}

static void g_remove_at(struct route_group *g, uint32_t i)
{
	free(g->addrs[i].addr);
	memmove(&g->addrs[i], &g->addrs[i + 1], (g->n_addrs - i - 1) * sizeof(*g->addrs));
	g->n_addrs--;
}

static void invalidate_group_topics(struct route_db *db, uint32_t gidx);

/* Publishes ng in place of the slot's group when it differs (then the
 * group's topics are invalidated, unless the caller rewrites every one of
 * them next anyway: that scan of the whole table is what makes a broker's
 * leaving slow); frees whichever is not kept. */
static int g_commit_ex(struct route_db *db, struct route_group *ng, bool invalidate_topics)
{
	struct route_group *old = db->gdir[ng->gidx];

	if (old && g_same(old, ng)) {
		rt_group_free(ng);
		return 0;
	}
	if (rt_group_render(ng)) {
		rt_group_free(ng);
		return RMQNS_ENOMEM;
	}
	if (old && old->present != ng->present)
		__atomic_add_fetch(&db->n_groups, ng->present ? 1 : (uint32_t)-1, __ATOMIC_RELAXED);
	rt_assign(db->gdir[ng->gidx], ng);
	if (old)
		rt_defer_free(db, &old->rcu, free_group_cb);
	if (invalidate_topics && db->gpriv[ng->gidx].topic_refs)
		invalidate_group_topics(db, ng->gidx);
	return 0;
}

static int g_commit(struct route_db *db, struct route_group *ng)
{
	return g_commit_ex(db, ng, true);
}

/* ---- topics ---- */

static struct route_tq *tq_alloc(uint32_t n, uint32_t map_cap)
{
	struct route_tq *tq = malloc(sizeof(*tq) + (size_t)n * sizeof(tq->e[0]));

	if (!tq)
		return NULL;
	tq->n = n;
	tq->map_cap = map_cap;
	return tq;
}

static int tq_find(const struct route_tq *tq, uint32_t gidx)
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
	uint32_t idx[64], *ix = tq->n <= 64 ? idx : malloc(tq->n * sizeof(*ix));
	int32_t hs[64], *h = tq->n <= 64 ? hs : malloc(tq->n * sizeof(*h));
	struct route_qd tmp[64], *t = tq->n <= 64 ? tmp : malloc(tq->n * sizeof(*t));

	if (ix && h && t && tq->n > 1) {
		for (uint32_t i = 0; i < tq->n; i++) {
			struct route_group *g = db->gdir[tq->e[i].gidx];
			ix[i] = i;
			h[i] = g ? g->name_hash : 0;
		}
		rt_java_order(h, tq->n, tq->map_cap, ix);
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

static void topic_publish_tq(struct route_db *db, struct route_topic *t, struct route_tq *ntq)
{
	struct route_tq *old = t->tq;

	db->topic_epoch++;
	rt_assign(t->tq, ntq);
	rt_defer_free(db, &old->rcu, free_tq_cb);
	rt_topic_invalidate(db, t);
}

static void topic_unlink(struct route_db *db, struct route_topic *t)
{
	struct route_tq *tq = t->tq;

	/* unlinked first: no reader may meet the topic once its groups'
	 * slots can be retired */
	db->topic_epoch++;
	cds_lfht_del(db->topics, &t->node);
	rt_topic_invalidate(db, t);
	for (uint32_t i = 0; i < tq->n; i++) {
		db->gpriv[tq->e[i].gidx].topic_refs--;
		g_maybe_retire(db, tq->e[i].gidx);
	}
	__atomic_sub_fetch(&db->n_entries, tq->n, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&db->n_topics, 1, __ATOMIC_RELAXED);
	rt_defer_free(db, &t->rcu, free_topic_cb);
}

/* Sets the topic's entry for qd->gidx (creating the topic); a no-op when
 * an equal entry is there. */
static int topic_put_entry(struct route_db *db, const char *name, const struct route_qd *qd)
{
	struct route_topic *t = rt_topic_find(db, name);
	struct route_tq *tq, *ntq;
	int i;

	if (!t) {
		size_t nl = strlen(name);
		t = calloc(1, sizeof(*t) + nl + 1);
		ntq = tq_alloc(1, 16);
		if (!t || !ntq) {
			free(t);
			free(ntq);
			return RMQNS_ENOMEM;
		}
		memcpy(t->name, name, nl + 1);
		t->hash = rt_hash_str(name);
		ntq->e[0] = *qd;
		t->tq = ntq;
		cds_lfht_node_init(&t->node);
		/* the release store orders the node's initialisation before
		 * the lfht link that publishes it */
		rt_assign(t->tq, ntq);
		cds_lfht_add(db->topics, t->hash, &t->node);
		db->topic_epoch++;
		db->gpriv[qd->gidx].topic_refs++;
		__atomic_add_fetch(&db->n_entries, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&db->n_topics, 1, __ATOMIC_RELAXED);
		return 0;
	}
	tq = t->tq;
	i = tq_find(tq, qd->gidx);
	if (i >= 0) {
		if (qd_equal(&tq->e[i], qd))
			return 0;
		ntq = tq_alloc(tq->n, tq->map_cap);
		if (!ntq)
			return RMQNS_ENOMEM;
		memcpy(ntq->e, tq->e, tq->n * sizeof(tq->e[0]));
		ntq->e[i] = *qd; /* a replaced value keeps its place */
	} else {
		uint32_t cap = rt_java_cap(tq->n + 1);
		ntq = tq_alloc(tq->n + 1, cap > tq->map_cap ? cap : tq->map_cap);
		if (!ntq)
			return RMQNS_ENOMEM;
		memcpy(ntq->e, tq->e, tq->n * sizeof(tq->e[0]));
		ntq->e[tq->n] = *qd;
		tq_order(db, ntq);
		db->gpriv[qd->gidx].topic_refs++;
		__atomic_add_fetch(&db->n_entries, 1, __ATOMIC_RELAXED);
	}
	topic_publish_tq(db, t, ntq);
	return 0;
}

/* Drops the topic's entry for gidx, and the topic when none remain. */
static int topic_remove_entry(struct route_db *db, struct route_topic *t, uint32_t gidx)
{
	struct route_tq *tq = t->tq, *ntq;
	int i = tq_find(tq, gidx);

	if (i < 0)
		return 0;
	if (tq->n == 1) {
		topic_unlink(db, t);
		return 0;
	}
	ntq = tq_alloc(tq->n - 1, tq->map_cap);
	if (!ntq)
		return RMQNS_ENOMEM;
	memcpy(ntq->e, tq->e, (size_t)i * sizeof(tq->e[0]));
	memcpy(&ntq->e[i], &tq->e[i + 1], (tq->n - (uint32_t)i - 1) * sizeof(tq->e[0]));
	topic_publish_tq(db, t, ntq);
	db->gpriv[gidx].topic_refs--;
	__atomic_sub_fetch(&db->n_entries, 1, __ATOMIC_RELAXED);
	g_maybe_retire(db, gidx);
	return 0;
}

/* Grows the topic table to about two topics a bucket. liburcu's own
 * resizing runs on its worker and, with one registrar adding 40,000
 * topics at a go, sometimes never happened: a table left at 1,024 buckets
 * with 1.28 M topics made the 32 registrations of the big shape take 45 s
 * of CPU instead of 3 (chains of a thousand). Asked for here, it is done
 * on the registrar at once. Outside any read-side section only. */
static void rt_topics_fit(struct route_db *db)
{
#ifndef RMQNS_TSAN /* TSan builds keep a fixed table (see route_db_create) */
	unsigned long n = (unsigned long)__atomic_load_n(&db->n_topics, __ATOMIC_RELAXED);
	unsigned long want = RT_TOPIC_BUCKETS_MIN;

	while (want < n / 2)
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

static void rt_read_breathe(struct route_db *db, uint32_t i)
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
static struct route_topic **topics_of(struct route_db *db, uint32_t gidx, uint32_t *count)
{
	struct cds_lfht_iter it;
	struct route_topic *t, **v = NULL;
	uint32_t n = 0, cap = 0;

	cds_lfht_for_each_entry(db->topics, &it, t, node) {
		if (gidx != UINT32_MAX && tq_find(t->tq, gidx) < 0)
			continue;
		if (n == cap) {
			uint32_t nc = cap ? cap * 2 : 256;
			struct route_topic **nv = realloc(v, nc * sizeof(*nv));
			if (!nv) {
				free(v);
				*count = 0;
				return NULL;
			}
			v = nv;
			cap = nc;
		}
		v[n++] = t;
	}
	*count = n;
	return v;
}

static void invalidate_group_topics(struct route_db *db, uint32_t gidx)
{
	struct cds_lfht_iter it;
	struct route_topic *t;

	cds_lfht_for_each_entry(db->topics, &it, t, node)
		if (tq_find(t->tq, gidx) >= 0)
			rt_topic_invalidate(db, t);
}

/* WIPE (clear) or set the write bits of gidx's entries; returns the count
 * touched. add: perm = READ|WRITE. */
static int set_group_perm(struct route_db *db, uint32_t gidx, bool add, bool only_if_writable)
{
	struct cds_lfht_iter it;
	struct route_topic *t;
	int count = 0;

	cds_lfht_for_each_entry(db->topics, &it, t, node) {
		struct route_tq *tq = t->tq, *ntq;
		int i = tq_find(tq, gidx);
		int32_t perm;
		if (i < 0)
			continue;
		if (only_if_writable && !(tq->e[i].perm & ROUTE_PERM_WRITE))
			continue;
		count++;
		perm = add ? (ROUTE_PERM_READ | ROUTE_PERM_WRITE) : (tq->e[i].perm & ~ROUTE_PERM_WRITE);
		if (perm == tq->e[i].perm)
			continue;
		ntq = tq_alloc(tq->n, tq->map_cap);
		if (!ntq)
			return RMQNS_ENOMEM;
		memcpy(ntq->e, tq->e, tq->n * sizeof(tq->e[0]));
		ntq->e[i].perm = perm;
		topic_publish_tq(db, t, ntq);
	}
	return count;
}

/* ---- clusters ---- */

static struct route_cluster *cl_find(struct route_clusters *cs, const char *name, uint32_t *pos)
{
	for (uint32_t i = 0; cs && i < cs->n; i++)
		if (strcmp(cs->c[i]->name, name) == 0) {
			if (pos)
				*pos = i;
			return cs->c[i];
		}
	return NULL;
}

static bool cl_has(const struct route_cluster *c, uint32_t gidx)
{
	for (uint32_t i = 0; c && i < c->n; i++)
		if (c->gidx[i] == gidx)
			return true;
	return false;
}

/* A cluster holding members[0..n) with room for `room` members in all. */
static struct route_cluster *cl_new(const char *name, const uint32_t *members, uint32_t n, uint32_t room)
{
	size_t nl = strlen(name);
	struct route_cluster *c = calloc(1, sizeof(*c) + nl + 1);

	if (!c)
		return NULL;
	c->name = (char *)(c + 1);
	memcpy(c->name, name, nl + 1);
	c->gidx = malloc(((size_t)(room > n ? room : n) + 1) * sizeof(*c->gidx));
	if (!c->gidx) {
		free(c);
		return NULL;
	}
	if (n)
		memcpy(c->gidx, members, n * sizeof(*members));
	c->n = n;
	return c;
}

/* Publishes a cluster snapshot with `nc` in place of entry `pos` (pos ==
 * n: appended; nc NULL: entry removed). */
static int cl_publish(struct route_db *db, uint32_t pos, struct route_cluster *nc)
{
	struct route_clusters *old = db->clusters, *ns;
	uint32_t n = old ? old->n : 0;
	uint32_t nn = nc ? (pos == n ? n + 1 : n) : n - 1;
	uint32_t k = 0;

	ns = calloc(1, sizeof(*ns) + ((size_t)nn + 1) * sizeof(ns->c[0]));
	if (!ns)
		return RMQNS_ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		if (i == pos) {
			if (nc)
				ns->c[k++] = nc;
			continue;
		}
		ns->c[k++] = old->c[i];
	}
	if (nc && pos == n)
		ns->c[k++] = nc;
	ns->n = k;
	rt_assign(db->clusters, ns);
	if (old) {
		if (pos < n)
			rt_defer_free(db, &old->c[pos]->rcu, free_cluster_cb);
		rt_defer_free(db, &old->rcu, free_clusters_cb);
	}
	return 0;
}

static int cl_add_member(struct route_db *db, const char *name, uint32_t gidx)
{
	uint32_t pos = db->clusters ? db->clusters->n : 0;
	struct route_cluster *c = cl_find(db->clusters, name, &pos), *nc;

	if (cl_has(c, gidx))
		return 0;
	nc = cl_new(name, c ? c->gidx : NULL, c ? c->n : 0, c ? c->n + 1 : 1);
	if (!nc)
		return RMQNS_ENOMEM;
	nc->gidx[nc->n++] = gidx;
	if (cl_publish(db, pos, nc)) {
		free(nc->gidx);
		free(nc);
		return RMQNS_ENOMEM;
	}
	db->gpriv[gidx].cluster_refs++;
	return 0;
}

static int cl_remove_member(struct route_db *db, const char *name, uint32_t gidx)
{
	uint32_t pos;
	struct route_cluster *c = name ? cl_find(db->clusters, name, &pos) : NULL, *nc = NULL;

	if (!cl_has(c, gidx))
		return 0;
	if (c->n > 1) {
		nc = cl_new(name, NULL, 0, c->n);
		if (!nc)
			return RMQNS_ENOMEM;
		for (uint32_t i = 0; i < c->n; i++)
			if (c->gidx[i] != gidx)
				nc->gidx[nc->n++] = c->gidx[i];
	}
	if (cl_publish(db, pos, nc)) {
		if (nc) {
			free(nc->gidx);
			free(nc);
		}
		return RMQNS_ENOMEM;
	}
	db->gpriv[gidx].cluster_refs--;
	g_maybe_retire(db, gidx);
	return 0;
}

/* ---- live brokers ---- */

static bool live_remove(struct route_db *db, const char *cluster, const char *addr)
{
	struct route_live *l = rt_live_find(db, cluster, addr);

	if (!l)
		return false;
	if (cds_lfht_del(db->live, &l->node) == 0) {
		__atomic_sub_fetch(&db->n_live, 1, __ATOMIC_RELAXED);
		rt_defer_free(db, &l->rcu, free_live_cb);
	}
	return true;
}

/* topics_key: the key of the topic apply just made (0: none). */
static int live_put(struct route_db *db, const struct route_broker_reg *reg, uint64_t now_ms,
		    uint64_t topics_key)
{
	struct route_live *old = rt_live_find(db, reg->cluster, reg->addr), *l;
	int64_t timeout = reg->timeout_ms > 0 ? reg->timeout_ms : ROUTE_BROKER_TIMEOUT_MS;
	size_t cl = strlen(reg->cluster) + 1, al = strlen(reg->addr) + 1;
	size_t hl = reg->ha_addr ? strlen(reg->ha_addr) + 1 : 0;

	if (old && old->timeout_ms == timeout && old->conn_id == reg->conn_id &&
	    data_version_equal(&old->dv, &reg->body->dv) && str_eq(old->ha_addr, reg->ha_addr)) {
		/* nothing but the time changes: refresh in place */
		__atomic_store_n(&old->last_ms, now_ms, __ATOMIC_RELAXED);
		old->topics_key = topics_key;
		old->topics_epoch = db->topic_epoch;
		return 0;
	}
	l = calloc(1, sizeof(*l) + cl + al + hl);
	if (!l)
		return RMQNS_ENOMEM;
	l->cluster = (char *)(l + 1);
	l->addr = l->cluster + cl;
	memcpy(l->cluster, reg->cluster, cl);
	memcpy(l->addr, reg->addr, al);
	if (reg->ha_addr) {
		l->ha_addr = l->addr + al;
		memcpy(l->ha_addr, reg->ha_addr, hl);
	}
	l->last_ms = now_ms;
	l->timeout_ms = timeout;
	l->dv = reg->body->dv;
	l->conn_id = reg->conn_id;
	l->topics_key = topics_key;
	l->topics_epoch = db->topic_epoch;
	cds_lfht_node_init(&l->node);
	struct rt_live_key k = { reg->cluster, reg->addr };
	/* last, with release: rt_live_find's acquire load of it orders the
	 * fields above for readers */
	rt_assign(l->hash, rt_hash_pair(reg->cluster, reg->addr));
	struct cds_lfht_node *rep = cds_lfht_add_replace(db->live, l->hash, rt_live_match, &k, &l->node);
	if (rep)
		rt_defer_free(db, &caa_container_of(rep, struct route_live, node)->rcu, free_live_cb);
	else
		__atomic_add_fetch(&db->n_live, 1, __ATOMIC_RELAXED);
	return 0;
}

/* ---- filter servers ---- */

static bool filter_list_equal(const struct route_filter *f, const char *const *list, uint32_t n)
{
	if (f->n != n)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(f->list[i], list[i]) != 0)
			return false;
	return true;
}

/* Stores (n > 0) or drops (n == 0) the filter-server list of (cluster,
 * addr). Filter servers are rare: any change flushes every cached route. */
static int filter_set(struct route_db *db, const char *cluster, const char *addr,
		      const char *const *list, uint32_t n)
{
	struct route_filters *old = db->filters, *ns;
	struct route_filter *nf = NULL;
	uint32_t on = old ? old->n : 0, pos = on, k = 0;

	for (uint32_t i = 0; i < on; i++)
		if (strcmp(old->f[i]->cluster, cluster) == 0 && strcmp(old->f[i]->addr, addr) == 0) {
			pos = i;
			break;
		}
	if (pos == on && n == 0)
		return 0;
	if (pos < on && n > 0 && filter_list_equal(old->f[pos], list, n))
		return 0;
	if (n > 0) {
		size_t sz = sizeof(*nf) + (size_t)n * sizeof(char *) + strlen(cluster) + strlen(addr) + 2;
		for (uint32_t i = 0; i < n; i++)
			sz += strlen(list[i]) + 1;
		nf = calloc(1, sz);
		if (!nf)
			return RMQNS_ENOMEM;
		nf->list = (char **)(nf + 1);
		char *p = (char *)(nf->list + n);
		nf->cluster = p;
		p = stpcpy(p, cluster) + 1;
		nf->addr = p;
		p = stpcpy(p, addr) + 1;
		for (uint32_t i = 0; i < n; i++) {
			nf->list[i] = p;
			p = stpcpy(p, list[i]) + 1;
		}
		nf->n = n;
	}
	ns = calloc(1, sizeof(*ns) + ((size_t)on + 1) * sizeof(ns->f[0]));
	if (!ns) {
		free(nf);
		return RMQNS_ENOMEM;
	}
	for (uint32_t i = 0; i < on; i++)
		if (i != pos)
			ns->f[k++] = old->f[i];
		else if (nf)
			ns->f[k++] = nf;
	if (pos == on)
		ns->f[k++] = nf;
	ns->n = k;
	rt_assign(db->filters, ns);
	if (old) {
		if (pos < on)
			rt_defer_free(db, &old->f[pos]->rcu, free_filter_cb);
		rt_defer_free(db, &old->rcu, free_filters_cb);
	}
	__atomic_add_fetch(&db->ggen, 1, __ATOMIC_SEQ_CST);
	return 0;
}

/* ---- static-topic mappings ---- */

static int map_cmp(const char *t1, const char *b1, const char *t2, const char *b2)
{
	int c = strcmp(t1, t2);
	return c ? c : strcmp(b1, b2);
}

static struct route_mapping *mapping_copy(const char *topic, const struct regbody_mapping *src)
{
	const char *strs[5] = { topic, src->bname, src->scope, src->topic, src->bname };
	size_t sz = sizeof(struct route_mapping);
	struct route_mapping *m;
	char *p;

	for (int i = 0; i < 4; i++)
		if (strs[i])
			sz += strlen(strs[i]) + 1;
	m = calloc(1, sz);
	if (!m)
		return NULL;
	p = (char *)(m + 1);
	m->topic = p;
	p = stpcpy(p, topic) + 1;
	m->m = *src;
	m->m.key = m->topic;
	m->m.ids = NULL;
	m->m.bname = m->m.scope = m->m.topic = NULL;
	if (src->bname) {
		m->m.bname = p;
		p = stpcpy(p, src->bname) + 1;
	}
	if (src->scope) {
		m->m.scope = p;
		p = stpcpy(p, src->scope) + 1;
	}
	if (src->topic) {
		m->m.topic = p;
		p = stpcpy(p, src->topic) + 1;
	}
	m->bname = m->m.bname;
	if (src->n_ids) {
		m->m.ids = malloc(src->n_ids * sizeof(*m->m.ids));
		if (!m->m.ids) {
			free(m);
			return NULL;
		}
		memcpy(m->m.ids, src->ids, src->n_ids * sizeof(*m->m.ids));
	}
	return m;
}

static int cmp_mapping_ptr(const void *a, const void *b)
{
	const struct route_mapping *x = *(struct route_mapping *const *)a;
	const struct route_mapping *y = *(struct route_mapping *const *)b;
	return map_cmp(x->topic, x->bname, y->topic, y->bname);
}

/* Files every mapping of the body under (topic, bname), replacing older
 * ones (mappings are never removed, as in Java). */
static int maps_merge(struct route_db *db, const struct regbody *rb)
{
	struct route_maps *old = db->maps, *ns;
	uint32_t on = old ? old->n : 0, n = 0;
	struct route_mapping **fresh;
	int rc = 0;

	if (rb->n_mappings == 0)
		return 0;
	fresh = calloc(rb->n_mappings, sizeof(*fresh));
	ns = calloc(1, sizeof(*ns) + ((size_t)on + rb->n_mappings) * sizeof(ns->e[0]));
	if (!fresh || !ns) {
		free(fresh);
		free(ns);
		return RMQNS_ENOMEM;
	}
	for (uint32_t i = 0; i < rb->n_mappings; i++) {
		if (!rb->mappings[i].bname || !rb->mappings[i].key)
			continue; /* filed under a null broker name: nothing can use it */
		fresh[n] = mapping_copy(rb->mappings[i].key, &rb->mappings[i]);
		if (!fresh[n]) {
			rc = RMQNS_ENOMEM;
			break;
		}
		n++;
	}
	if (rc || n == 0) {
		for (uint32_t i = 0; i < n; i++) {
			free(fresh[i]->m.ids);
			free(fresh[i]);
		}
		free(fresh);
		free(ns);
		return rc;
	}
	/* the last of duplicates in the body wins */
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = i + 1; j < n; j++)
			if (fresh[i] && fresh[j] && map_cmp(fresh[i]->topic, fresh[i]->bname, fresh[j]->topic, fresh[j]->bname) == 0) {
				free(fresh[i]->m.ids);
				free(fresh[i]);
				fresh[i] = NULL;
				break;
			}
	uint32_t k = 0;
	for (uint32_t i = 0; i < on; i++) {
		bool replaced = false;
		for (uint32_t j = 0; j < n && !replaced; j++)
			replaced = fresh[j] && map_cmp(old->e[i]->topic, old->e[i]->bname, fresh[j]->topic, fresh[j]->bname) == 0;
		if (!replaced)
			ns->e[k++] = old->e[i];
	}
	for (uint32_t j = 0; j < n; j++)
		if (fresh[j])
			ns->e[k++] = fresh[j];
	ns->n = k;
	qsort(ns->e, k, sizeof(ns->e[0]), cmp_mapping_ptr);
	rt_assign(db->maps, ns);
	for (uint32_t i = 0; i < on; i++) {
		bool kept = false;
		for (uint32_t j = 0; j < k && !kept; j++)
			kept = ns->e[j] == old->e[i];
		if (!kept)
			rt_defer_free(db, &old->e[i]->rcu, free_mapping_cb);
	}
	if (old)
		rt_defer_free(db, &old->rcu, free_maps_cb);
	for (uint32_t j = 0; j < n; j++) {
		if (!fresh[j])
			continue;
		struct route_topic *t = rt_topic_find(db, fresh[j]->topic);
		if (t)
			rt_topic_invalidate(db, t);
	}
	free(fresh);
	return 0;
}

/* ---- REGISTER_BROKER ---- */

void route_reg_result_free(struct route_reg_result *res)
{
	free(res->master_addr);
	free(res->ha_addr);
	res->master_addr = res->ha_addr = NULL;
}

/* Topics of the body into the table (master or prime slave only). */
/* What decides the outcome of a topic apply besides the table: the body's
 * topics and how they are taken. */
static uint64_t topics_key(const struct route_broker_reg *reg, uint32_t gidx, bool prime_slave, bool acting)
{
	uint64_t k = reg->body->topics_fp ^ ((uint64_t)reg->body->n_topics << 32);
	k = (k ^ gidx) * 0x100000001b3ULL;
	k = (k ^ (uint64_t)(reg->delete_missing_topics | prime_slave << 1 | acting << 2)) * 0x100000001b3ULL;
	return k ? k : 1;
}

static int register_topics(struct route_db *db, const struct route_broker_reg *reg, uint32_t gidx,
			   bool register_first, bool dv_changed, bool prime_slave, bool acting,
			   const struct route_live *prev, uint64_t *key_out)
{
	const struct regbody *rb = reg->body;
	int rc;

	*key_out = rb->n_mappings ? 0 : topics_key(reg, gidx, prime_slave, acting);
	/* The same topics, taken the same way, into a table nobody changed
	 * since this broker's last apply: every entry is already as the body
	 * says (a registration storm re-sends 10,000 unchanged topics with a
	 * new DataVersion each time, 8-14 ms of lookups apiece). */
	if (!register_first && prev && *key_out && prev->topics_key == *key_out &&
	    prev->topics_epoch == db->topic_epoch)
		return dv_changed ? maps_merge(db, rb) : 0;

	if (reg->delete_missing_topics && rb->n_mappings == 0) {
		uint32_t n;
		struct route_topic **v = topics_of(db, gidx, &n);
		if (!v && n)
			return RMQNS_ENOMEM;
		for (uint32_t i = 0; i < n; i++) {
			if (!regbody_find_topic(rb, v[i]->name) && (rc = topic_remove_entry(db, v[i], gidx)) != 0) {
				free(v);
				return rc;
			}
			rt_read_breathe(db, i); /* v[i] is never touched again */
		}
		free(v);
	}
	for (uint32_t i = 0; i < rb->n_topics; i++) {
		const struct regbody_topic *tc = &rb->topics[i];
		struct route_qd qd = { gidx, tc->perm, tc->read_queues, tc->write_queues, tc->sysflag };
		rt_read_breathe(db, i);
		if (!register_first && !dv_changed) {
			/* unchanged DataVersion: only topics with no entry for
			 * this group yet are taken (5.x) */
			struct route_topic *t = rt_topic_find(db, tc->name);
			if (t && tq_find(t->tq, gidx) >= 0)
				continue;
		}
		if (prime_slave && acting)
			qd.perm &= ~ROUTE_PERM_WRITE;
		if ((rc = topic_put_entry(db, tc->name, &qd)) != 0)
			return rc;
	}
	if (dv_changed || register_first)
		return maps_merge(db, rb);
	return 0;
}

static int register_locked(struct route_db *db, const struct route_broker_reg *reg, uint64_t now_ms,
			   struct route_reg_result *res)
{
	const struct regbody *rb = reg->body;
	struct route_group *g, *ng;
	uint32_t gidx;
	bool register_first;
	int rc, at;

	if ((rc = g_intern(db, reg->name, &gidx)) != 0)
		return rc;
	if ((rc = cl_add_member(db, reg->cluster, gidx)) != 0)
		return rc;

	g = db->gdir[gidx];
	ng = g_clone(g);
	if (!ng)
		return RMQNS_ENOMEM;
	register_first = !g->present;
	if (!ng->present) {
		ng->present = true;
		ng->cluster = strdup(reg->cluster); /* an existing group keeps its cluster */
		ng->map_cap = 16;
		if (!ng->cluster) {
			rt_group_free(ng);
			return RMQNS_ENOMEM;
		}
	}
	ng->acting_master = reg->new_style && reg->acting_master;
	free(ng->zone);
	ng->zone = xstrdup(reg->zone);
	if (reg->zone && !ng->zone) {
		rt_group_free(ng);
		return RMQNS_ENOMEM;
	}
	/* one address, one id: a slave promoted at the same address leaves
	 * its old id */
	for (uint32_t i = 0; i < ng->n_addrs;) {
		if (ng->addrs[i].id != reg->id && strcmp(ng->addrs[i].addr, reg->addr) == 0)
			g_remove_at(ng, i);
		else
			i++;
	}
	at = g_addr_index(ng, reg->id);
	if (at >= 0 && strcmp(ng->addrs[at].addr, reg->addr) != 0) {
		struct route_live *ol = rt_live_find(db, reg->cluster, ng->addrs[at].addr);
		if (ol && ol->dv.state_version > rb->dv.state_version) {
			/* the id's current holder is newer: refuse quietly */
			if ((rc = g_commit(db, ng)) != 0)
				return rc;
			live_remove(db, reg->cluster, reg->addr);
			res->outcome = ROUTE_REG_SUPERSEDED;
			return 0;
		}
	}
	if (at < 0 && rb->n_topics == 1) {
		/* an incremental registration may not be a broker's first */
		if ((rc = g_commit(db, ng)) != 0)
			return rc;
		res->outcome = ROUTE_REG_REFUSED;
		return 0;
	}
	if (at >= 0) {
		char *a = strdup(reg->addr);
		if (!a) {
			rt_group_free(ng);
			return RMQNS_ENOMEM;
		}
		free(ng->addrs[at].addr);
		ng->addrs[at].addr = a;
	} else {
		struct route_addr *na = realloc(ng->addrs, (ng->n_addrs + 1) * sizeof(*na));
		if (!na) {
			rt_group_free(ng);
			return RMQNS_ENOMEM;
		}
		ng->addrs = na;
		na[ng->n_addrs].id = reg->id;
		na[ng->n_addrs].addr = strdup(reg->addr);
		if (!na[ng->n_addrs].addr) {
			rt_group_free(ng);
			return RMQNS_ENOMEM;
		}
		ng->n_addrs++;
		uint32_t cap = rt_java_cap(ng->n_addrs);
		if (cap > ng->map_cap)
			ng->map_cap = cap;
		register_first = true;
	}
	bool is_master = reg->id == 0;
	bool prime_slave = false;
	if (reg->new_style && !is_master) {
		prime_slave = true;
		for (uint32_t i = 0; i < ng->n_addrs; i++)
			if (ng->addrs[i].id < reg->id)
				prime_slave = false;
	}
	bool acting = ng->acting_master;
	if ((rc = g_commit(db, ng)) != 0)
		return rc;

	struct route_live *prev = rt_live_find(db, reg->cluster, reg->addr);
	bool dv_changed = !prev || !data_version_equal(&prev->dv, &rb->dv);
	uint64_t key = 0;
	if (is_master || prime_slave) {
		if ((rc = register_topics(db, reg, gidx, register_first, dv_changed, prime_slave, acting,
					  prev, &key)) != 0)
			return rc;
	}
	if ((rc = live_put(db, reg, now_ms, key)) != 0)
		return rc;
	if (rb->has_filters &&
	    (rc = filter_set(db, reg->cluster, reg->addr, rb->filters, rb->n_filters)) != 0)
		return rc;
	if (!is_master) {
		g = db->gdir[gidx];
		int m = g_addr_index(g, 0);
		struct route_live *ml = m >= 0 ? rt_live_find(db, reg->cluster, g->addrs[m].addr) : NULL;
		if (ml) {
			res->master_addr = strdup(g->addrs[m].addr);
			res->ha_addr = xstrdup(ml->ha_addr);
			if (!res->master_addr || (ml->ha_addr && !res->ha_addr)) {
				route_reg_result_free(res);
				return RMQNS_ENOMEM;
			}
		}
	}
	res->outcome = ROUTE_REG_DONE;
	return 0;
}

int route_apply_register(struct route_db *db, const struct route_broker_reg *reg, uint64_t now_ms,
			 struct route_reg_result *res)
{
	int rc;

	memset(res, 0, sizeof(*res));
	if (!reg->cluster || !reg->name || !reg->addr || !reg->body)
		return RMQNS_EINVAL;
	rcu_read_lock();
	rc = register_locked(db, reg, now_ms, res);
	rcu_read_unlock();
	if (!rcu_read_ongoing())
		rt_topics_fit(db);
	return rc;
}

/* ---- unregistering ---- */

/* 5.x unregister of (cluster, addr) from group `name` (NULL: none). */
static int unregister_locked(struct route_db *db, const char *cluster, const char *addr, const char *name)
{
	struct route_group *g, *ng;
	uint32_t gidx;
	bool removed_group = false;
	bool any = false;
	int rc;

	any |= live_remove(db, cluster, addr);
	if ((rc = filter_set(db, cluster, addr, NULL, 0)) != 0)
		return rc;
	if (!name || (gidx = g_find(db, name)) == UINT32_MAX)
		return any;
	g = db->gdir[gidx];
	if (g->present) {
		ng = g_clone(g);
		if (!ng)
			return RMQNS_ENOMEM;
		for (uint32_t i = 0; i < ng->n_addrs;) {
			if (strcmp(ng->addrs[i].addr, addr) == 0) {
				g_remove_at(ng, i);
				any = true;
			} else {
				i++;
			}
		}
		if (ng->n_addrs == 0) {
			/* the group leaves brokerAddrTable with its last address */
			ng->present = false;
			free(ng->cluster);
			ng->cluster = NULL;
			free(ng->zone);
			ng->zone = NULL;
			ng->acting_master = false;
			ng->map_cap = 16;
			removed_group = true;
		}
		/* a removed group's entries all go below, each topic invalidated */
		if ((rc = g_commit_ex(db, ng, !removed_group)) != 0)
			return rc;
	}
	if (removed_group) {
		uint32_t n;
		struct route_topic **v;
		if ((rc = cl_remove_member(db, cluster, gidx)) != 0)
			return rc;
		v = topics_of(db, gidx, &n);
		if (!v && n)
			return RMQNS_ENOMEM;
		for (uint32_t i = 0; i < n; i++) {
			if ((rc = topic_remove_entry(db, v[i], gidx)) != 0)
				break;
			rt_read_breathe(db, i); /* v[i] is never touched again */
		}
		free(v);
		g_maybe_retire(db, gidx);
		return rc ? rc : 1;
	}
	g = db->gdir[gidx];
	if (g && g->present && g->acting_master && g_addr_index(g, 0) < 0) {
		/* the master left an acting-master group: its queues go read-only */
		rc = set_group_perm(db, gidx, false, true);
		if (rc < 0)
			return rc;
	}
	return any;
}

int route_apply_unregister(struct route_db *db, const char *cluster, const char *addr,
			   const char *name, uint64_t conn_id)
{
	int rc;

	if (!cluster || !addr)
		return 0;
	rcu_read_lock();
	struct route_live *l = rt_live_find(db, cluster, addr);
	if (conn_id && l && l->conn_id != conn_id) {
		/* registered again on another connection since: stale request */
		rcu_read_unlock();
		log_info("route: ignored stale unregister of %s (%s): re-registered on another connection",
			 addr, name ? name : "null");
		return 0;
	}
	rc = unregister_locked(db, cluster, addr, name);
	rcu_read_unlock();
	return rc;
}

/* The group of cluster that lists addr (first found), or NULL. */
static const char *group_of_addr(struct route_db *db, const char *cluster, const char *addr)
{
	uint32_t hwm = db->g_hwm;

	for (uint32_t i = 0; i < hwm; i++) {
		struct route_group *g = db->gdir[i];
		if (!g || !g->present || strcmp(g->cluster, cluster) != 0)
			continue;
		for (uint32_t k = 0; k < g->n_addrs; k++)
			if (strcmp(g->addrs[k].addr, addr) == 0)
				return g->name;
	}
	return NULL;
}

struct live_ref {
	char *cluster;
	char *addr;
	uint64_t conn_id; /* the connection it registered on; 0 = none */
};

/* Unregisters the brokers collected in v (their live entries are gone
 * once this returns). */
static int unregister_all(struct route_db *db, struct live_ref *v, uint32_t n)
{
	int count = 0;

	for (uint32_t i = 0; i < n; i++) {
		const char *name = group_of_addr(db, v[i].cluster, v[i].addr);
		char *nm = name ? strdup(name) : NULL;
		if (name && !nm) {
			live_remove(db, v[i].cluster, v[i].addr);
			continue;
		}
		if (unregister_locked(db, v[i].cluster, v[i].addr, nm) >= 0)
			count++;
		free(nm);
	}
	for (uint32_t i = 0; i < n; i++)
		free(v[i].cluster);
	return count;
}

/* Live entries matching (conn_id) or expired at now_ms. */
static struct live_ref *collect_live(struct route_db *db, bool by_conn, uint64_t conn_id, uint64_t now_ms,
				     uint32_t *count)
{
	struct cds_lfht_iter it;
	struct route_live *l;
	struct live_ref *v = NULL;
	uint32_t n = 0, cap = 0;

	cds_lfht_for_each_entry(db->live, &it, l, node) {
		if (by_conn) {
			if (l->conn_id != conn_id)
				continue;
		} else {
			uint64_t last = __atomic_load_n(&l->last_ms, __ATOMIC_RELAXED);
			if ((int64_t)(last + (uint64_t)l->timeout_ms - now_ms) >= 0)
				continue;
		}
		if (n == cap) {
			uint32_t nc = cap ? cap * 2 : 8;
			struct live_ref *nv = realloc(v, nc * sizeof(*nv));
			if (!nv)
				break;
			v = nv;
			cap = nc;
		}
		size_t cl = strlen(l->cluster) + 1;
		v[n].cluster = malloc(cl + strlen(l->addr) + 1);
		if (!v[n].cluster)
			break;
		memcpy(v[n].cluster, l->cluster, cl);
		v[n].addr = v[n].cluster + cl;
		strcpy(v[n].addr, l->addr);
		v[n].conn_id = l->conn_id;
		n++;
	}
	*count = n;
	return v;
}

int route_apply_conn_closed(struct route_db *db, uint64_t conn_id)
{
	uint32_t n;
	struct live_ref *v;
	int count;

	rcu_read_lock();
	v = collect_live(db, true, conn_id, 0, &n);
	count = unregister_all(db, v, n);
	rcu_read_unlock();
	free(v);
	if (count)
		log_info("route: connection closed, %d broker(s) unregistered", count);
	return count;
}

int route_apply_expire(struct route_db *db, uint64_t now_ms)
{
	uint32_t n;
	struct live_ref *v;
	int count;

	rcu_read_lock();
	v = collect_live(db, false, 0, now_ms, &n);
	for (uint32_t i = 0; i < n; i++)
		log_warn("route: broker %s of cluster %s expired", v[i].addr, v[i].cluster);
	count = unregister_all(db, v, n);
	rcu_read_unlock();
	/* As the Java NameServer does, drop the broker's connection too so
	 * that it reconnects and registers afresh. The connection-closed
	 * notice that follows only removes brokers still registered on it. */
	route_close_fn close_fn = __atomic_load_n(&db->close_fn, __ATOMIC_ACQUIRE);
	void *close_arg = __atomic_load_n(&db->close_arg, __ATOMIC_RELAXED);
	for (uint32_t i = 0; close_fn && i < n; i++)
		if (v[i].conn_id)
			close_fn(close_arg, v[i].conn_id);
	free(v);
	return count;
}

/* ---- admin changes ---- */

int route_apply_write_perm(struct route_db *db, const char *name, bool add)
{
	uint32_t gidx;
	int rc = 0;

	if (!name)
		return 0;
	rcu_read_lock();
	gidx = g_find(db, name);
	if (gidx != UINT32_MAX)
		rc = set_group_perm(db, gidx, add, false);
	rcu_read_unlock();
	return rc;
}

int route_apply_delete_topic(struct route_db *db, const char *topic, const char *cluster)
{
	struct route_topic *t;
	int rc = 0;

	if (!topic)
		return 0;
	rcu_read_lock();
	t = rt_topic_find(db, topic);
	if (t && (!cluster || !cluster[0])) {
		topic_unlink(db, t);
	} else if (t) {
		struct route_cluster *c = cl_find(db->clusters, cluster, NULL);
		for (uint32_t i = 0; c && i < c->n && rc == 0; i++) {
			/* the topic may be unlinked by the last removal */
			t = rt_topic_find(db, topic);
			if (!t)
				break;
			rc = topic_remove_entry(db, t, c->gidx[i]);
		}
	}
	rcu_read_unlock();
	return rc;
}

int route_apply_register_topic(struct route_db *db, const char *topic, const struct route_queue_in *q,
			       uint32_t n)
{
	int rc = 0;

	if (!topic || n == 0)
		return 0;
	rcu_read_lock();
	bool exists = rt_topic_find(db, topic) != NULL;
	if (!exists) {
		/* a new topic is created only when every group is known */
		for (uint32_t i = 0; i < n; i++) {
			uint32_t gidx = q[i].group ? g_find(db, q[i].group) : UINT32_MAX;
			if (gidx == UINT32_MAX || !db->gdir[gidx]->present) {
				rcu_read_unlock();
				return 0;
			}
		}
	}
	for (uint32_t i = 0; i < n && rc == 0; i++) {
		uint32_t gidx = q[i].group ? g_find(db, q[i].group) : UINT32_MAX;
		if (gidx == UINT32_MAX || !db->gdir[gidx]->present)
			break; /* entries before an unknown group stay */
		struct route_qd qd = { gidx, q[i].perm, q[i].read_queues, q[i].write_queues, q[i].sysflag };
		rc = topic_put_entry(db, topic, &qd);
	}
	rcu_read_unlock();
	return rc;
}
