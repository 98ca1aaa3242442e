/* The live brokers as an operator sees them (route_brokers in route.h):
 * each live entry with the group that lists its address, its id there and
 * the number of topics with a queue entry for that group. Reader side only,
 * inside the caller's read-side section: published objects are read as
 * published (last_ms atomically), nothing registrar-private is touched.
 * The topic counts take one pass over the topic table, so this is for an
 * admin endpoint, not for a request path. */
#include <stdlib.h>
#include <string.h>

#include "route_priv.h"
#include "rmqns/err.h"

/* The visible present group of `cluster` listing addr, and the id there. */
static struct route_group *brokers_group_of(struct route_db *db, uint32_t hwm, const char *cluster,
					    const char *addr, int64_t *id)
{
	for (uint32_t i = 0; i < hwm; i++) {
		struct route_group *g = rt_group_visible(db, i);
		if (!g || !g->present || !rt_str_eq(g->cluster, cluster))
			continue;
		for (uint32_t a = 0; a < g->n_addrs; a++) {
			if (strcmp(g->addrs[a].addr, addr) == 0) {
				*id = g->addrs[a].id;
				return g;
			}
		}
	}
	return NULL;
}

int route_brokers(struct route_db *db, route_broker_fn fn, void *arg)
{
	uint32_t hwm = __atomic_load_n(&db->g_hwm, __ATOMIC_ACQUIRE);
	uint32_t *topics = calloc((size_t)hwm + 1, sizeof *topics);
	struct cds_lfht_iter it;
	struct route_topic *t;
	struct route_live *l;
	int rc = 0;

	if (!topics)
		return RMQNS_ENOMEM;
	cds_lfht_for_each_entry(db->topics, &it, t, node) {
		struct route_tq *tq = rt_deref(t->tq);
		for (uint32_t i = 0; tq && i < tq->n; i++)
			if (tq->e[i].gidx < hwm)
				topics[tq->e[i].gidx]++;
	}
	cds_lfht_for_each_entry(db->live, &it, l, node) {
		struct route_broker_view v = { 0 };
		struct route_group *g;

		v.cluster = l->cluster;
		v.addr = l->addr;
		v.id = -1;
		v.last_ms = __atomic_load_n(&l->last_ms, __ATOMIC_RELAXED);
		v.timeout_ms = l->timeout_ms;
		g = brokers_group_of(db, hwm, l->cluster, l->addr, &v.id);
		v.name = g ? g->name : "";
		v.acting_master = g && g->acting_master;
		v.topics = g ? topics[g->gidx] : 0;
		rc = fn(arg, &v);
		if (rc)
			break;
	}
	free(topics);
	return rc;
}
