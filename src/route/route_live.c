/* The live-broker table: (cluster, address) -> last seen, timeout, data
 * version, connection, HA address. Replaced whole on a change; last_ms is
 * refreshed in place (atomically) by heartbeats from any thread.
 * Writers here run on the registrar only. */
#include <stdlib.h>
#include <string.h>

#include "route_writer.h"
#include "rmqns/err.h"

static void free_live_cb(struct rcu_head *h)
{
	rt_tsan_before_free();
	free(caa_container_of(h, struct route_live, rcu));
}


bool rt_live_remove(struct route_db *db, const char *cluster, const char *addr)
{
	struct route_live *l = rt_live_find(db, cluster, addr);

	if (!l)
		return false;
	if (cds_lfht_del(db->live, &l->node) == 0) {
		__atomic_sub_fetch(&db->n_live, 1, __ATOMIC_RELAXED);
		__atomic_sub_fetch(&db->names_digest, rt_names_term(l->hash, RT_NAMES_LIVE),
				   __ATOMIC_RELAXED);
		rt_defer_free(db, &l->rcu, free_live_cb);
	}
	return true;
}

static bool live_unchanged(const struct route_live *old, const struct route_broker_reg *reg, int64_t timeout)
{
	return old && !old->restored && old->timeout_ms == timeout && old->conn_id == reg->conn_id &&
	       data_version_equal(&old->dv, &reg->body->dv) && rt_str_eq(old->ha_addr, reg->ha_addr);
}

static int64_t live_timeout(const struct route_broker_reg *reg)
{
	return reg->timeout_ms > 0 ? reg->timeout_ms : ROUTE_BROKER_TIMEOUT_MS;
}

int rt_live_prepare(struct route_db *db, const struct route_broker_reg *reg, struct route_live **out)
{
	struct route_live *old = rt_live_find(db, reg->cluster, reg->addr), *l;
	int64_t timeout = live_timeout(reg);
	size_t cl = strlen(reg->cluster) + 1, al = strlen(reg->addr) + 1;
	size_t hl = reg->ha_addr ? strlen(reg->ha_addr) + 1 : 0;

	*out = NULL;
	if (live_unchanged(old, reg, timeout))
		return 0; /* nothing but the time changes: refreshed in place */
	l = rt_calloc(1, sizeof(*l) + cl + al + hl);
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
	l->timeout_ms = timeout;
	l->dv = reg->body->dv;
	l->conn_id = reg->conn_id;
	/* a broker that reconnected: an unregister still in flight on its old
	 * connection must not remove it (route_apply_unregister) */
	l->prev_conn_id = old ? (old->conn_id != reg->conn_id ? old->conn_id : old->prev_conn_id) : 0;
	cds_lfht_node_init(&l->node);
	*out = l;
	return 0;
}

void rt_live_commit(struct route_db *db, const struct route_broker_reg *reg, struct route_live *l,
		    uint32_t gidx, uint64_t now_ms, uint64_t topics_key)
{
	if (!l) {
		struct route_live *old = rt_live_find(db, reg->cluster, reg->addr);
		if (!old)
			return; /* cannot happen: prepared as unchanged */
		__atomic_store_n(&old->last_ms, now_ms, __ATOMIC_RELAXED);
		old->topics_key = topics_key;
		old->topics_epoch = db->topic_epoch;
		__atomic_store_n(&old->gidx, gidx, __ATOMIC_RELAXED);
		return;
	}
	l->last_ms = now_ms;
	l->topics_key = topics_key;
	l->topics_epoch = db->topic_epoch;
	l->gidx = gidx;
	struct rt_live_key k = { reg->cluster, reg->addr };
	/* last, with release: rt_live_find's acquire load of it orders the
	 * fields above for readers */
	rt_assign(l->hash, rt_hash_pair(reg->cluster, reg->addr));
	struct cds_lfht_node *rep = cds_lfht_add_replace(db->live, l->hash, rt_live_match, &k, &l->node);
	if (rep)
		rt_defer_free(db, &caa_container_of(rep, struct route_live, node)->rcu, free_live_cb);
	else {
		__atomic_add_fetch(&db->n_live, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&db->names_digest, rt_names_term(l->hash, RT_NAMES_LIVE),
				   __ATOMIC_RELAXED);
	}
}
