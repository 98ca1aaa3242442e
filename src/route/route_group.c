/* Broker groups: slots in a fixed directory (queue entries name a group by
 * its slot), the name -> slot index, a group's copy, publication and
 * retirement. A group that loses its last address is marked dead in place
 * (rt_group_kill): readers stop seeing it and its queue entries at once;
 * route_group_topics.c removes those entries. Registrar only, except
 * rt_group_lookup. */
#include <stdlib.h>
#include <string.h>

#include "rmqns/javahash.h"
#include "route_writer.h"
#include "rmqns/err.h"
#include "rmqns/log.h"

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
	rt_tsan_reader_done(); /* for the teardown after rcu_barrier */
}

static void free_gname_cb(struct rcu_head *h)
{
	rt_tsan_before_free();
	free(caa_container_of(h, struct route_gname, rcu));
}

/* ---- the name index ---- */

static int gname_match(struct cds_lfht_node *node, const void *key)
{
	struct route_gname *n = caa_container_of(node, struct route_gname, node);
	(void)rt_deref(n->gidx); /* pairs with the release before the link */
	return strcmp(n->name, (const char *)key) == 0;
}

uint32_t rt_group_lookup(struct route_db *db, const char *name)
{
	struct cds_lfht_iter it;
	struct cds_lfht_node *node;

	if (!name)
		return UINT32_MAX;
	cds_lfht_lookup(db->gnames, rt_hash_str(name), gname_match, name, &it);
	node = cds_lfht_iter_get_node(&it);
	return node ? caa_container_of(node, struct route_gname, node)->gidx : UINT32_MAX;
}

static void gname_unlink(struct route_db *db, uint32_t gidx)
{
	struct route_gname *n = db->gpriv[gidx].gname;

	if (!n)
		return;
	cds_lfht_del(db->gnames, &n->node);
	db->gpriv[gidx].gname = NULL;
	rt_defer_free(db, &n->rcu, free_gname_cb);
}

/* ---- slots ---- */

/* Retired slots wait in a FIFO: the oldest is the first whose grace
 * period has passed. */
static void slot_free_push(struct route_db *db, uint32_t gidx)
{
	db->gpriv[gidx].next_free = RT_ID_NONE;
	if (db->free_tail == RT_ID_NONE)
		db->free_head = gidx;
	else
		db->gpriv[db->free_tail].next_free = gidx;
	db->free_tail = gidx;
}

static struct route_group *group_new(struct route_db *db, uint32_t gidx, const char *name)
{
	struct route_group *g = rt_calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->db = db;
	g->gidx = gidx;
	g->map_cap = 16;
	g->name = rt_strdup(name);
	g->name_hash = java_string_hash(name);
	if (!g->name) {
		free(g);
		return NULL;
	}
	return g;
}

int rt_group_intern(struct route_db *db, const char *name, uint32_t *out)
{
	uint32_t i = rt_group_lookup(db, name);
	uint32_t hwm = db->groups_high_water;
	struct route_group *g;
	struct route_gname *gn;
	size_t nl;

	if (i != UINT32_MAX) {
		*out = i;
		return 0;
	}
	/* the oldest retired slot once its grace period passed, else a new one */
	i = db->free_head;
	if (i != RT_ID_NONE && __atomic_load_n(&db->gpriv[i].reusable, __ATOMIC_ACQUIRE)) {
		struct route_gpriv *p = &db->gpriv[i];
		if (i == db->free_tail)
			db->free_tail = RT_ID_NONE;
		db->free_head = p->next_free;
		/* given back below if the allocations fail */
	} else if (hwm < ROUTE_MAX_GROUPS) {
		i = hwm;
	} else {
		return RMQNS_ETOOBIG;
	}
	nl = strlen(name);
	gn = rt_malloc(sizeof(*gn) + nl + 1);
	g = group_new(db, i, name);
	if (!gn || !g || rt_group_render(g)) {
		free(gn);
		rt_group_free(g);
		if (i != hwm)
			slot_free_push(db, i);
		return RMQNS_ENOMEM;
	}
	memset(&db->gpriv[i], 0, sizeof(db->gpriv[i]));
	db->gpriv[i].state = RT_SLOT_USED;
	db->gpriv[i].next_dead = RT_ID_NONE;
	db->gpriv[i].gname = gn;
	rt_assign(db->gdir[i], g);
	if (i == hwm)
		__atomic_store_n(&db->groups_high_water, hwm + 1, __ATOMIC_RELEASE);
	rt_lists_changed(db);
	memcpy(gn->name, name, nl + 1);
	cds_lfht_node_init(&gn->node);
	rt_assign(gn->gidx, i); /* orders the node before the link */
	cds_lfht_add(db->gnames, rt_hash_str(name), &gn->node);
	*out = i;
	return 0;
}

void rt_group_maybe_retire(struct route_db *db, uint32_t gidx)
{
	struct route_group *g = db->gdir[gidx];
	struct route_gpriv *p = &db->gpriv[gidx];

	if (!g || (g->present && !g->dead) || p->topics.n || p->cluster_refs || p->on_dead_list)
		return;
	gname_unlink(db, gidx);
	rt_idset_free(&p->topics);
	rt_assign(db->gdir[gidx], NULL);
	rt_lists_changed(db);
	p->state = RT_SLOT_RETIRING;
	__atomic_store_n(&p->reusable, 0, __ATOMIC_RELAXED);
	slot_free_push(db, gidx);
	rt_defer_free(db, &g->rcu, retire_group_cb);
}

void rt_group_free(struct route_group *g)
{
	if (!g)
		return;
	for (uint32_t i = 0; i < g->n_addrs; i++)
		free(g->addrs[i].addr);
	free(g->addrs);
	free(g->name);
	free(g->cluster);
	free(g->zone);
	for (int f = 0; f < 2; f++) {
		free(g->bd[f].s);
		free(g->bd_acting[f].s);
		free(g->qd_head[f].s);
		free(g->name_json[f].s);
	}
	free(g);
}

struct route_group *rt_group_clone(const struct route_group *g)
{
	struct route_group *n = rt_calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->db = g->db;
	n->gidx = g->gidx;
	n->present = g->present;
	n->acting_master = g->acting_master;
	n->map_cap = g->map_cap;
	n->name_hash = g->name_hash;
	n->name = rt_strdup(g->name);
	n->cluster = g->cluster ? rt_strdup(g->cluster) : NULL;
	n->zone = g->zone ? rt_strdup(g->zone) : NULL;
	n->addrs = rt_calloc(g->n_addrs + 1, sizeof(*n->addrs));
	if (!n->name || !n->addrs || (g->cluster && !n->cluster) || (g->zone && !n->zone)) {
		rt_group_free(n);
		return NULL;
	}
	for (uint32_t i = 0; i < g->n_addrs; i++) {
		n->addrs[i].id = g->addrs[i].id;
		n->addrs[i].addr = rt_strdup(g->addrs[i].addr);
		if (!n->addrs[i].addr) {
			n->n_addrs = i;
			rt_group_free(n);
			return NULL;
		}
	}
	n->n_addrs = g->n_addrs;
	return n;
}

static bool group_same(const struct route_group *a, const struct route_group *b)
{
	if (a->present != b->present || a->acting_master != b->acting_master || a->map_cap != b->map_cap ||
	    a->n_addrs != b->n_addrs || !rt_str_eq(a->cluster, b->cluster) || !rt_str_eq(a->zone, b->zone))
		return false;
	for (uint32_t i = 0; i < a->n_addrs; i++)
		if (a->addrs[i].id != b->addrs[i].id || strcmp(a->addrs[i].addr, b->addrs[i].addr) != 0)
			return false;
	return true;
}

int rt_group_addr_index(const struct route_group *g, int64_t id)
{
	for (uint32_t i = 0; i < g->n_addrs; i++)
		if (g->addrs[i].id == id)
			return (int)i;
	return -1;
}

void rt_group_remove_addr_at(struct route_group *g, uint32_t i)
{
	free(g->addrs[i].addr);
	memmove(&g->addrs[i], &g->addrs[i + 1], (g->n_addrs - i - 1) * sizeof(*g->addrs));
	g->n_addrs--;
}

int rt_group_commit(struct route_db *db, struct route_group *ng, bool invalidate)
{
	struct route_group *old = db->gdir[ng->gidx];

	if (old && group_same(old, ng)) {
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
	rt_lists_changed(db);
	if (old)
		rt_defer_free(db, &old->rcu, free_group_cb);
	if (invalidate)
		rt_group_invalidate_topics(db, ng->gidx);
	return 0;
}

void rt_group_invalidate_topics(struct route_db *db, uint32_t gidx)
{
	struct rt_idset *s = &db->gpriv[gidx].topics;

	for (uint32_t i = 0; i < s->cap; i++) {
		struct route_topic *t = s->slots[i] == RT_ID_NONE ? NULL : rt_topic_by_id(db, s->slots[i]);
		if (t)
			rt_topic_invalidate(db, t);
	}
}

/* ---- a group leaving ---- */

void rt_group_kill(struct route_db *db, uint32_t gidx)
{
	struct route_group *g = db->gdir[gidx];
	struct route_gpriv *p = &db->gpriv[gidx];

	if (!g || g->dead)
		return;
	/* the only field of a published group written in place: readers
	 * load it with acquire and then skip the group */
	__atomic_store_n(&g->dead, 1, __ATOMIC_RELEASE);
	if (g->present)
		__atomic_sub_fetch(&db->n_groups, 1, __ATOMIC_RELAXED);
	/* a new registration under the same name takes a fresh slot */
	gname_unlink(db, gidx);
	/* every cached route naming it is stale: one move of the global
	 * generation instead of a walk over its topics */
	__atomic_add_fetch(&db->ggen, 1, __ATOMIC_SEQ_CST);
	rt_lists_changed(db);
	__atomic_add_fetch(&db->dead_entries, p->topics.n, __ATOMIC_RELAXED);
	p->on_dead_list = 1;
	p->next_dead = RT_ID_NONE;
	if (db->dead_head == RT_ID_NONE)
		db->dead_head = gidx;
	else
		db->gpriv[db->dead_tail].next_dead = gidx;
	db->dead_tail = gidx;
}
