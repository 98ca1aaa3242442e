/* The registration rules (protocol.md §6.2-§6.8): what REGISTER_BROKER,
 * UNREGISTER_BROKER, expiry, a closed connection and the admin requests
 * do to the tables. The tables themselves live in route_topic.c,
 * route_group.c, route_live.c and route_sets.c. Registrar thread only;
 * never reads the network, never blocks on a reader. */
#include <stdlib.h>
#include <string.h>

#include "route_writer.h"
#include "rmqns/err.h"
#include "rmqns/javahash.h"
#include "rmqns/log.h"

/* ---- NOTIFY_MIN_BROKER_ID_CHANGE ---- */

static int64_t group_min_id(const struct route_group *g)
{
	int64_t m = INT64_MAX;

	for (uint32_t i = 0; i < g->n_addrs; i++)
		if (g->addrs[i].id < m)
			m = g->addrs[i].id;
	return m;
}

/* Tells the hook that g's minimum id changed: with a broker gone
 * (offline) or a group of one, every broker of g hears it; after a
 * registration, every broker but the new minimum. */
static void notify_min_id(struct route_db *db, const struct route_group *g, const char *offline,
			  const char *ha_addr)
{
	route_notify_fn fn = __atomic_load_n(&db->notify_fn, __ATOMIC_ACQUIRE);
	const char *small[16], **targets;
	struct route_min_id_change c;
	int64_t min_id;
	uint32_t n = 0;
	int mi;

	if (!fn || !g || g->n_addrs == 0)
		return;
	targets = g->n_addrs <= 16 ? small : rt_malloc(g->n_addrs * sizeof(*targets));
	if (!targets) {
		log_error("route: out of memory: no NOTIFY_MIN_BROKER_ID_CHANGE for %s", g->name);
		return;
	}
	min_id = group_min_id(g);
	mi = rt_group_addr_index(g, min_id);
	for (uint32_t i = 0; i < g->n_addrs; i++)
		if (offline || g->n_addrs == 1 || g->addrs[i].id != min_id)
			targets[n++] = g->addrs[i].addr;
	c.cluster = g->cluster;
	c.group = g->name;
	c.min_id = min_id;
	c.min_addr = g->addrs[mi].addr;
	c.offline_addr = offline;
	c.ha_addr = ha_addr;
	c.n_targets = n;
	c.targets = targets;
	fn(__atomic_load_n(&db->notify_arg, __ATOMIC_RELAXED), &c);
	if (targets != small)
		free(targets);
}

/* ---- REGISTER_BROKER ---- */

void route_reg_result_free(struct route_reg_result *res)
{
	free(res->master_addr);
	free(res->ha_addr);
	res->master_addr = res->ha_addr = NULL;
}

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
		return dv_changed ? rt_maps_merge(db, rb) : 0;

	if (reg->delete_missing_topics && rb->n_mappings == 0) {
		/* the group's own topics, through its index; a removal shifts
		 * the set's run back, so the same slot is looked at again */
		struct rt_idset *s = &db->gpriv[gidx].topics;
		uint32_t seen = 0;
		for (uint32_t i = 0; i < s->cap;) {
			struct route_topic *t = s->slots[i] == RT_ID_NONE ? NULL : rt_topic_by_id(db, s->slots[i]);
			if (!t || regbody_find_topic(rb, t->name)) {
				i++;
				continue;
			}
			if ((rc = rt_topic_remove_entry(db, t, gidx)) != 0)
				return rc;
			rt_read_breathe(db, seen++); /* holds no topic across it */
		}
	}
	for (uint32_t i = 0; i < rb->n_topics; i++) {
		const struct regbody_topic *tc = &rb->topics[i];
		struct route_qd qd = { gidx, tc->perm, tc->read_queues, tc->write_queues, tc->sysflag };
		rt_read_breathe(db, i);
		if (!register_first && !dv_changed) {
			/* unchanged DataVersion: only topics with no entry for
			 * this group yet are taken (5.x) */
			struct route_topic *t = rt_topic_find(db, tc->name);
			if (t && rt_tq_find(t->tq, gidx) >= 0)
				continue;
		}
		if (prime_slave && acting)
			qd.perm &= ~ROUTE_PERM_WRITE;
		if ((rc = rt_topic_put_entry(db, tc->name, &qd)) != 0)
			return rc;
	}
	if (dv_changed || register_first)
		return rt_maps_merge(db, rb);
	return 0;
}

/* A 5.x slave with the smallest id of its group takes topics too. */
static bool is_prime_slave(const struct route_group *g, const struct route_broker_reg *reg)
{
	if (!reg->new_style || reg->id == 0)
		return false;
	for (uint32_t i = 0; i < g->n_addrs; i++)
		if (g->addrs[i].id < reg->id)
			return false;
	return true;
}

/* live: the broker's prepared live entry (rt_live_prepare); set to
 * RT_LIVE_USED once published. */
#define RT_LIVE_USED ((struct route_live *)1)

static int register_apply(struct route_db *db, const struct route_broker_reg *reg, uint64_t now_ms,
			  struct route_live **live, struct route_reg_result *res)
{
	const struct regbody *rb = reg->body;
	struct route_group *g, *ng;
	uint32_t gidx;
	bool register_first;
	int rc, at;

	if ((rc = rt_group_intern(db, reg->name, &gidx)) != 0)
		return rc;
	if ((rc = rt_cluster_add_member(db, reg->cluster, gidx)) != 0)
		return rc;

	g = db->gdir[gidx];
	ng = rt_group_clone(g);
	if (!ng)
		return RMQNS_ENOMEM;
	register_first = !g->present;
	if (!ng->present) {
		ng->present = true;
		ng->cluster = rt_strdup(reg->cluster); /* an existing group keeps its cluster */
		ng->map_cap = 16;
		if (!ng->cluster) {
			rt_group_free(ng);
			return RMQNS_ENOMEM;
		}
	}
	ng->acting_master = reg->new_style && reg->acting_master;
	free(ng->zone);
	ng->zone = reg->zone ? rt_strdup(reg->zone) : NULL;
	if (reg->zone && !ng->zone) {
		rt_group_free(ng);
		return RMQNS_ENOMEM;
	}
	bool had_addrs = ng->n_addrs > 0;
	int64_t prev_min = group_min_id(ng);
	/* one address, one id: a slave promoted at the same address leaves
	 * its old id */
	for (uint32_t i = 0; i < ng->n_addrs;) {
		if (ng->addrs[i].id != reg->id && strcmp(ng->addrs[i].addr, reg->addr) == 0)
			rt_group_remove_addr_at(ng, i);
		else
			i++;
	}
	at = rt_group_addr_index(ng, reg->id);
	if (at >= 0 && strcmp(ng->addrs[at].addr, reg->addr) != 0) {
		struct route_live *ol = rt_live_find(db, reg->cluster, ng->addrs[at].addr);
		if (ol && ol->dv.state_version > rb->dv.state_version) {
			/* the id's current holder is newer: refuse quietly */
			if ((rc = rt_group_commit(db, ng, true)) != 0)
				return rc;
			rt_live_remove(db, reg->cluster, reg->addr);
			res->outcome = ROUTE_REG_SUPERSEDED;
			return 0;
		}
	}
	if (at < 0 && rb->n_topics == 1) {
		/* an incremental registration may not be a broker's first */
		if ((rc = rt_group_commit(db, ng, true)) != 0)
			return rc;
		res->outcome = ROUTE_REG_REFUSED;
		return 0;
	}
	if (at >= 0) {
		char *a = rt_strdup(reg->addr);
		if (!a) {
			rt_group_free(ng);
			return RMQNS_ENOMEM;
		}
		free(ng->addrs[at].addr);
		ng->addrs[at].addr = a;
	} else {
		struct route_addr *na = rt_realloc(ng->addrs, (ng->n_addrs + 1) * sizeof(*na));
		if (!na) {
			rt_group_free(ng);
			return RMQNS_ENOMEM;
		}
		ng->addrs = na;
		na[ng->n_addrs].id = reg->id;
		na[ng->n_addrs].addr = rt_strdup(reg->addr);
		if (!na[ng->n_addrs].addr) {
			rt_group_free(ng);
			return RMQNS_ENOMEM;
		}
		ng->n_addrs++;
		uint32_t cap = java_map_cap(ng->n_addrs);
		if (cap > ng->map_cap)
			ng->map_cap = cap;
		register_first = true;
	}
	bool is_master = reg->id == 0;
	bool prime_slave = is_prime_slave(ng, reg);
	bool acting = ng->acting_master;
	if ((rc = rt_group_commit(db, ng, true)) != 0)
		return rc;
	if (acting && had_addrs && reg->id < prev_min)
		notify_min_id(db, db->gdir[gidx], NULL, reg->ha_addr);

	struct route_live *prev = rt_live_find(db, reg->cluster, reg->addr);
	/* a broker restored from a snapshot sends its full registration once:
	 * the snapshot's topics may be older than its DataVersion */
	bool dv_changed = !prev || prev->restored || !data_version_equal(&prev->dv, &rb->dv);
	uint64_t key = 0;
	if (is_master || prime_slave) {
		rc = register_topics(db, reg, gidx, register_first, dv_changed, prime_slave, acting, prev, &key);
	}
	/* the broker is registered even if its topics could not all be
	 * taken (out of memory): its next registration brings the rest,
	 * since an unchanged data version still adds missing topics */
	if (!prev)
		log_info("route: broker registered: cluster %s, name %s, id %lld, address %s, %u topics", reg->cluster,
			 reg->name, (long long)reg->id, reg->addr, rb->n_topics);
	else if (dv_changed)
		log_info("route: broker %s (%s, id %lld) data version %lld/%lld/%lld -> %lld/%lld/%lld, %u topics",
			 reg->addr, reg->name, (long long)reg->id, (long long)prev->dv.counter,
			 (long long)prev->dv.timestamp, (long long)prev->dv.state_version, (long long)rb->dv.counter,
			 (long long)rb->dv.timestamp, (long long)rb->dv.state_version, rb->n_topics);
	rt_live_commit(db, reg, *live, gidx, now_ms, rc ? 0 : key);
	*live = RT_LIVE_USED;
	if (rc)
		return rc;
	if (rb->has_filters &&
	    (rc = rt_filter_set(db, reg->cluster, reg->addr, rb->filters, rb->n_filters)) != 0)
		return rc;
	if (!is_master) {
		g = db->gdir[gidx];
		int m = rt_group_addr_index(g, 0);
		struct route_live *ml = m >= 0 ? rt_live_find(db, reg->cluster, g->addrs[m].addr) : NULL;
		if (ml) {
			res->master_addr = rt_strdup(g->addrs[m].addr);
			res->ha_addr = ml->ha_addr ? rt_strdup(ml->ha_addr) : NULL;
			if (!res->master_addr || (ml->ha_addr && !res->ha_addr)) {
				route_reg_result_free(res);
				return RMQNS_ENOMEM;
			}
		}
	}
	res->outcome = ROUTE_REG_DONE;
	return 0;
}

/* ---- the identical-body shortcut ---- */

static uint64_t body_stamp(const struct route_body_id *id)
{
	uint64_t k = id->hash ^ ((uint64_t)id->crc << 32 | (uint32_t)id->version);
	k = (k ^ id->len) * 0x100000001b3ULL;
	k = (k ^ id->max_bytes) * 0x100000001b3ULL;
	k = (k ^ id->compressed) * 0x100000001b3ULL;
	return k ? k : 1;
}

/* hash 0: the caller gave no identity */
static bool body_id_usable(const struct route_body_id *id)
{
	return id->hash && (id->bytes || id->len == 0);
}

static bool body_id_equal(const struct route_body_id *a, const struct route_body_id *b)
{
	if (a->len != b->len || a->crc != b->crc || a->hash != b->hash || a->version != b->version ||
	    a->max_bytes != b->max_bytes || a->compressed != b->compressed)
		return false;
	/* a short body is kept whole: a CRC collision cannot pass for it */
	return a->len > ROUTE_BODY_KEEP || a->len == 0 || memcmp(a->bytes, b->bytes, a->len) == 0;
}

bool route_body_is_last(struct route_db *db, const char *cluster, const char *addr, uint64_t conn_id,
			const struct route_body_id *id)
{
	const struct route_live *l = rt_live_find(db, cluster, addr);

	return l && l->conn_id == conn_id && rt_load_relaxed(l->body_stamp) == body_stamp(id);
}

/* Whether a re-send of l's last body on the same connection would change
 * no topic (the topic table is as that apply left it, the broker holds
 * the same place in its group, and its topics would be taken the same
 * way): then everything else is applied from `reg` and what the last body
 * left (sum). */
static bool body_same_holds(struct route_db *db, const struct route_broker_reg *reg,
			    const struct route_live *l, const struct regbody *sum)
{
	if (!l || l->conn_id != reg->conn_id || !rt_load_relaxed(l->body_stamp) ||
	    !body_id_usable(&reg->body_id) || !body_id_equal(&l->body_id, &reg->body_id))
		return false;
	uint32_t gidx = rt_group_lookup(db, reg->name);
	const struct route_group *g = gidx == UINT32_MAX ? NULL : db->gdir[gidx];
	if (!g || !g->present || rt_group_is_dead(g))
		return false;
	int at = rt_group_addr_index(g, reg->id);
	if (at < 0 || strcmp(g->addrs[at].addr, reg->addr) != 0)
		return false;
	bool prime_slave = is_prime_slave(g, reg);
	if (reg->id != 0 && !prime_slave)
		return true; /* a slave's topics are not taken */
	struct route_broker_reg r = *reg;
	r.body = sum;
	return l->topics_epoch == db->topic_epoch && l->topics_key && l->topics_key == topics_key(&r, gidx, prime_slave, reg->new_style && reg->acting_master);
}

/* After an apply: the live entry remembers the body it applied in full,
 * or forgets any (a failure, or a body with static-topic mappings). */
static void body_note(struct route_db *db, const struct route_broker_reg *reg, bool applied)
{
	struct route_live *l = rt_live_find(db, reg->cluster, reg->addr);
	const struct route_body_id *id = &reg->body_id;

	if (!l)
		return;
	if (!applied || !body_id_usable(id) || reg->body->n_mappings || l->conn_id != reg->conn_id) {
		rt_store_relaxed(l->body_stamp, 0);
		return;
	}
	if (id->bytes != l->body_kept && id->len && id->len <= ROUTE_BODY_KEEP)
		memcpy(l->body_kept, id->bytes, id->len);
	l->body_id = *id;
	l->body_id.bytes = l->body_kept;
	l->body_n_topics = reg->body->n_topics;
	l->body_topics_fp = reg->body->topics_fp;
	rt_store_relaxed(l->body_stamp, body_stamp(id));
}

int route_apply_register(struct route_db *db, const struct route_broker_reg *reg, uint64_t now_ms,
			 struct route_reg_result *res)
{
	struct route_broker_reg same;
	struct regbody sum;
	int rc;

	memset(res, 0, sizeof(*res));
	if (!reg->cluster || !reg->name || !reg->addr)
		return RMQNS_EINVAL;
	rt_changed(db);
	rcu_read_lock();
	if (!reg->body) {
		/* what the last body left: the topics as a count and a hash
		 * (enough to know they would be taken the same way), its data
		 * version, and its filter list already stored */
		const struct route_live *l = rt_live_find(db, reg->cluster, reg->addr);
		memset(&sum, 0, sizeof(sum));
		if (l) {
			sum.dv = l->dv;
			sum.n_topics = l->body_n_topics;
			sum.topics_fp = l->body_topics_fp;
		}
		if (!body_same_holds(db, reg, l, &sum)) {
			rcu_read_unlock();
			return RMQNS_ENOTFOUND;
		}
		same = *reg;
		same.body = &sum;
		reg = &same;
	}
	struct route_live *live;
	rc = rt_live_prepare(db, reg, &live);
	if (rc == 0) {
		rc = register_apply(db, reg, now_ms, &live, res);
		if (live != RT_LIVE_USED)
			free(live);
	}
	body_note(db, reg, rc == 0 && res->outcome == ROUTE_REG_DONE);
	rcu_read_unlock();
	if (!rcu_read_ongoing())
		rt_topics_fit(db);
	return rc;
}


/* ---- unregistering ---- */

/* 5.x unregister of (cluster, addr) from group gidx (UINT32_MAX: none).
 * The live entry goes last, once the group change is published: when
 * memory runs out nothing is removed, and expiry tries again later.
 * Returns 1 when something was removed, 0 when nothing was there. */
static int unregister_apply(struct route_db *db, const char *cluster, const char *addr, uint32_t gidx)
{
	struct route_group *g = gidx == UINT32_MAX ? NULL : db->gdir[gidx];
	bool any = false;
	int rc;

	if (g && g->present && !g->dead) {
		uint32_t keep = 0;
		bool removed_min = false;
		int64_t min_id = group_min_id(g);
		for (uint32_t i = 0; i < g->n_addrs; i++) {
			if (strcmp(g->addrs[i].addr, addr) != 0)
				keep++;
			else if (g->addrs[i].id == min_id)
				removed_min = true;
		}
		if (keep == 0) {
			/* the group leaves brokerAddrTable with its last address,
			 * and its queue entries with it (hidden now, removed in
			 * slices by rt_group_reap) */
			rt_group_kill(db, gidx);
			any = true;
		} else if (keep < g->n_addrs) {
			struct rt_perm_change pc = { 0, NULL, NULL };
			struct route_group *ng = rt_group_clone(g);
			if (!ng)
				return RMQNS_ENOMEM;
			for (uint32_t i = 0; i < ng->n_addrs;)
				if (strcmp(ng->addrs[i].addr, addr) == 0)
					rt_group_remove_addr_at(ng, i);
				else
					i++;
			/* no master left in an acting-master group: its queues go
			 * read-only, prepared first so that both changes happen or
			 * neither */
			if (ng->acting_master && rt_group_addr_index(ng, 0) < 0 &&
			    (rc = rt_group_perm_prepare(db, gidx, false, true, &pc)) < 0) {
				rt_group_free(ng);
				return rc;
			}
			if ((rc = rt_group_commit(db, ng, true)) != 0) {
				rt_group_perm_discard(&pc);
				return rc;
			}
			rt_group_perm_commit(db, &pc);
			any = true;
			g = db->gdir[gidx];
			if (removed_min && g->acting_master)
				notify_min_id(db, g, addr, NULL);
		}
	}
	if (rt_filter_set(db, cluster, addr, NULL, 0) != 0)
		log_error("route: out of memory dropping the filter servers of %s (unused from now on)", addr);
	any |= rt_live_remove(db, cluster, addr);
	return any;
}

/* The living group of cluster listing addr: the one l registered in when
 * it still does, else the first found (as Java looks it up). */
static uint32_t group_of_addr(struct route_db *db, const char *cluster, const char *addr, uint32_t hint)
{
	uint32_t hwm = db->groups_high_water;

	for (uint32_t pass = 0; pass < 2; pass++) {
		for (uint32_t i = pass ? 0 : hint; i < (pass ? hwm : hint + 1) && i < hwm; i++) {
			struct route_group *g = db->gdir[i];
			if (!g || !g->present || g->dead || !g->cluster || strcmp(g->cluster, cluster) != 0)
				continue;
			for (uint32_t k = 0; k < g->n_addrs; k++)
				if (strcmp(g->addrs[k].addr, addr) == 0)
					return i;
		}
	}
	return UINT32_MAX;
}

int route_apply_unregister(struct route_db *db, const char *cluster, const char *addr,
			   const char *name, uint64_t conn_id)
{
	int rc;

	if (!cluster || !addr)
		return 0;
	rcu_read_lock();
	struct route_live *l = rt_live_find(db, cluster, addr);
	if (conn_id && l && l->conn_id != conn_id && l->prev_conn_id == conn_id) {
		/* sent on the connection the broker left when it reconnected and
		 * registered again: a stale request (Java issue 11043). From any
		 * other connection it applies, as in Java. */
		rcu_read_unlock();
		log_info("route: ignored stale unregister of %s (%s): re-registered on another connection",
			 addr, name ? name : "null");
		return 0;
	}
	rc = unregister_apply(db, cluster, addr, name ? rt_group_lookup(db, name) : UINT32_MAX);
	rcu_read_unlock();
	if (rc != 0)
		rt_changed(db);
	if (rc < 0)
		log_error("route: out of memory unregistering %s; it stays until it expires", addr);
	else if (rc > 0)
		log_info("route: broker %s (%s) of cluster %s removed: unregistered", addr, name ? name : "null",
			 cluster);
	return rc;
}

/* Unregisters every live broker registered on conn_id (by_conn) or expired
 * at now_ms, straight from the live table (deleting from it while walking
 * it is safe under RCU), so that running out of memory cannot stop it.
 * Asks for the connections of expired brokers to be closed. */
static int unregister_matching(struct route_db *db, bool by_conn, uint64_t conn_id, uint64_t now_ms)
{
	route_close_fn close_fn = __atomic_load_n(&db->close_fn, __ATOMIC_ACQUIRE);
	void *close_arg = __atomic_load_n(&db->close_arg, __ATOMIC_RELAXED);
	struct cds_lfht_iter it;
	struct route_live *l;
	int count = 0, failed = 0;

	rcu_read_lock();
	cds_lfht_for_each_entry(db->live, &it, l, node) {
		if (by_conn) {
			if (l->conn_id != conn_id)
				continue;
		} else {
			uint64_t last = __atomic_load_n(&l->last_ms, __ATOMIC_RELAXED);
			if ((int64_t)(last + (uint64_t)l->timeout_ms - now_ms) >= 0)
				continue;
		}
		/* l stays readable until the section ends, though removed */
		uint32_t gidx = group_of_addr(db, l->cluster, l->addr, l->gidx);
		const char *name = gidx == UINT32_MAX ? "null" : db->gdir[gidx]->name;
		int rc = unregister_apply(db, l->cluster, l->addr, gidx);
		if (rc < 0) {
			failed++;
			continue;
		}
		count++;
		if (by_conn)
			log_info("route: broker %s (%s) of cluster %s removed: connection closed", l->addr, name,
				 l->cluster);
		else
			log_warn("route: broker %s (%s) of cluster %s removed: expired, silent for %llu ms (timeout %lld ms)",
				 l->addr, name, l->cluster,
				 (unsigned long long)(now_ms - __atomic_load_n(&l->last_ms, __ATOMIC_RELAXED)),
				 (long long)l->timeout_ms);
		if (!by_conn && close_fn && l->conn_id)
			close_fn(close_arg, l->conn_id);
	}
	rcu_read_unlock();
	if (count || failed)
		rt_changed(db);
	if (failed)
		log_error("route: out of memory unregistering %d broker(s); they stay until the next expiry scan",
			  failed);
	return count;
}

int route_apply_conn_closed(struct route_db *db, uint64_t conn_id)
{
	return unregister_matching(db, true, conn_id, 0);
}

int route_apply_expire(struct route_db *db, uint64_t now_ms)
{
	return unregister_matching(db, false, 0, now_ms);
}

/* ---- admin changes ---- */

int route_apply_write_perm(struct route_db *db, const char *name, bool add)
{
	uint32_t gidx;
	int rc = 0;

	if (!name)
		return 0;
	rt_changed(db);
	rcu_read_lock();
	gidx = rt_group_lookup(db, name);
	if (gidx != UINT32_MAX)
		rc = rt_group_set_perm(db, gidx, add, false);
	rcu_read_unlock();
	if (rc >= 0)
		log_info("route: write permission of %s %s on %d topic(s)", name, add ? "added" : "wiped", rc);
	return rc;
}

int route_apply_delete_topic(struct route_db *db, const char *topic, const char *cluster)
{
	struct route_topic *t;
	int rc = 0;

	if (!topic)
		return 0;
	rt_changed(db);
	rcu_read_lock();
	t = rt_topic_find(db, topic);
	if (t && (!cluster || !cluster[0])) {
		rc = rt_topic_unlink(db, t);
	} else if (t) {
		struct route_cluster *c = rt_cluster_find(db->clusters, cluster, NULL);
		for (uint32_t i = 0; c && i < c->n && rc == 0; i++) {
			/* the topic may be unlinked by the last removal */
			t = rt_topic_find(db, topic);
			if (!t)
				break;
			rc = rt_topic_remove_entry(db, t, c->gidx[i]);
		}
	}
	rcu_read_unlock();
	if (rc == 0)
		log_info("route: topic %s deleted%s%s", topic, cluster && cluster[0] ? " in cluster " : "",
			 cluster && cluster[0] ? cluster : "");
	return rc;
}

int route_apply_register_topic(struct route_db *db, const char *topic, const struct route_queue_in *q,
			       uint32_t n)
{
	int rc = 0;

	if (!topic || n == 0)
		return 0;
	rt_changed(db);
	rcu_read_lock();
	bool exists = rt_topic_find(db, topic) != NULL;
	if (!exists) {
		/* a new topic is created only when every group is known */
		for (uint32_t i = 0; i < n; i++) {
			uint32_t gidx = rt_group_lookup(db, q[i].group);
			if (gidx == UINT32_MAX || !db->gdir[gidx]->present) {
				rcu_read_unlock();
				return 0;
			}
		}
	}
	for (uint32_t i = 0; i < n && rc == 0; i++) {
		uint32_t gidx = rt_group_lookup(db, q[i].group);
		if (gidx == UINT32_MAX || !db->gdir[gidx]->present)
			break; /* entries before an unknown group stay */
		struct route_qd qd = { gidx, q[i].perm, q[i].read_queues, q[i].write_queues, q[i].sysflag };
		rc = rt_topic_put_entry(db, topic, &qd);
	}
	rcu_read_unlock();
	return rc;
}
