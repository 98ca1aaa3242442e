/* The live brokers and the topics as an operator sees them (route_brokers
 * and route_topic_names in route.h): each live entry with the group that
 * lists its address, its id there and the number of topics with a queue
 * entry for that group; each routed topic with a digest of its entries. Reader side only,
 * inside the caller's read-side section: published objects are read as
 * published, and the few fields written in place (last_ms, the live
 * entry's group hint, a group's topic count) atomically. */
#include <string.h>

#include "route_priv.h"
#include "rmqns/err.h"

static struct route_group *group_listing(struct route_group *g, const char *cluster, const char *addr,
					  int64_t *id)
{
	if (!g || !g->present || !rt_str_eq(g->cluster, cluster))
		return NULL;
	for (uint32_t a = 0; a < g->n_addrs; a++)
		if (strcmp(g->addrs[a].addr, addr) == 0) {
			*id = g->addrs[a].id;
			return g;
		}
	return NULL;
}

/* The visible present group of `cluster` listing addr, and the id there:
 * the one it registered in when that still lists it, else the first. */
static struct route_group *brokers_group_of(struct route_db *db, const struct route_live *l, int64_t *id)
{
	uint32_t hwm = __atomic_load_n(&db->groups_high_water, __ATOMIC_ACQUIRE);
	uint32_t hint = __atomic_load_n(&l->gidx, __ATOMIC_RELAXED);
	struct route_group *g = group_listing(rt_group_visible(db, hint), l->cluster, l->addr, id);

	for (uint32_t i = 0; !g && i < hwm; i++)
		g = group_listing(rt_group_visible(db, i), l->cluster, l->addr, id);
	return g;
}

int route_brokers(struct route_db *db, route_broker_fn fn, void *arg)
{
	struct cds_lfht_iter it;
	struct route_live *l;
	int rc = 0;

	cds_lfht_for_each_entry(db->live, &it, l, node) {
		struct route_broker_view v = { 0 };
		struct route_group *g;

		/* the acquire that pairs with rt_live_commit's release of the
		 * hash, as rt_live_find's match does: the fields are complete */
		(void)rt_deref(l->hash);
		v.cluster = l->cluster;
		v.addr = l->addr;
		v.id = -1;
		v.last_ms = __atomic_load_n(&l->last_ms, __ATOMIC_RELAXED);
		v.timeout_ms = l->timeout_ms;
		g = brokers_group_of(db, l, &v.id);
		v.name = g ? g->name : "";
		v.acting_master = g && g->acting_master;
		v.topics = g ? __atomic_load_n(&db->gpriv[g->gidx].topics.n, __ATOMIC_RELAXED) : 0;
		v.dv = l->dv;
		rc = fn(arg, &v);
		if (rc)
			break;
	}
	return rc;
}

/* A 64-bit mix (splitmix64's finaliser): digests add these up, so the
 * order entries or topics are visited in does not matter. */
static uint64_t names_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

int route_topic_names(struct route_db *db, route_topic_name_fn fn, void *arg)
{
	struct cds_lfht_iter it;
	struct route_topic *t;
	int rc = 0;

	cds_lfht_for_each_entry(db->topics, &it, t, node) {
		struct route_tq *tq = rt_deref(t->tq);
		uint64_t digest = 0;
		bool visible = false;

		for (uint32_t i = 0; tq && i < tq->n; i++) {
			const struct route_qd *q = &tq->e[i];
			struct route_group *g = rt_group_visible(db, q->gidx);
			if (!g)
				continue;
			visible = true;
			uint64_t e = rt_hash_str(g->name);
			e = names_mix(e ^ (uint32_t)q->perm);
			e = names_mix(e ^ (uint32_t)q->read_queues);
			e = names_mix(e ^ (uint32_t)q->write_queues);
			digest += names_mix(e ^ (uint32_t)q->sysflag);
		}
		if (!visible)
			continue; /* a route query would not find it */
		rc = fn(arg, t->name, names_mix(digest ^ rt_hash_str(t->name)));
		if (rc)
			break;
	}
	return rc;
}
