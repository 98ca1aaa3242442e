/* Small tables published whole: cluster -> broker groups, filter servers
 * of (cluster, address), and static-topic mappings. Each is an immutable
 * array swapped with one pointer; their entries are shared between
 * versions and freed once no version holds them. Registrar only. */
#include <stdlib.h>
#include <string.h>

#include "route_writer.h"
#include "rmqns/err.h"

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

/* ---- clusters ---- */

struct route_cluster *rt_cluster_find(struct route_clusters *cs, const char *name, uint32_t *pos)
{
	for (uint32_t i = 0; cs && i < cs->n; i++)
		if (strcmp(cs->c[i]->name, name) == 0) {
			if (pos)
				*pos = i;
			return cs->c[i];
		}
	return NULL;
}

static bool cluster_has(const struct route_cluster *c, uint32_t gidx)
{
	for (uint32_t i = 0; c && i < c->n; i++)
		if (c->gidx[i] == gidx)
			return true;
	return false;
}

/* A cluster holding members[0..n) with room for `room` members in all. */
static struct route_cluster *cluster_new(const char *name, const uint32_t *members, uint32_t n, uint32_t room)
{
	size_t nl = strlen(name);
	struct route_cluster *c = rt_calloc(1, sizeof(*c) + nl + 1);

	if (!c)
		return NULL;
	c->name = (char *)(c + 1);
	memcpy(c->name, name, nl + 1);
	c->gidx = rt_malloc(((size_t)(room > n ? room : n) + 1) * sizeof(*c->gidx));
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
static int cluster_publish(struct route_db *db, uint32_t pos, struct route_cluster *nc)
{
	struct route_clusters *old = db->clusters, *ns;
	uint32_t n = old ? old->n : 0;
	uint32_t nn = nc ? (pos == n ? n + 1 : n) : n - 1;
	uint32_t k = 0;

	ns = rt_calloc(1, sizeof(*ns) + ((size_t)nn + 1) * sizeof(ns->c[0]));
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
	rt_lists_changed(db);
	if (old) {
		if (pos < n)
			rt_defer_free(db, &old->c[pos]->rcu, free_cluster_cb);
		rt_defer_free(db, &old->rcu, free_clusters_cb);
	}
	return 0;
}

int rt_cluster_add_member(struct route_db *db, const char *name, uint32_t gidx)
{
	uint32_t pos = db->clusters ? db->clusters->n : 0;
	struct route_cluster *c = rt_cluster_find(db->clusters, name, &pos), *nc;

	if (cluster_has(c, gidx))
		return 0;
	nc = cluster_new(name, c ? c->gidx : NULL, c ? c->n : 0, c ? c->n + 1 : 1);
	if (!nc)
		return RMQNS_ENOMEM;
	nc->gidx[nc->n++] = gidx;
	if (cluster_publish(db, pos, nc)) {
		free(nc->gidx);
		free(nc);
		return RMQNS_ENOMEM;
	}
	db->gpriv[gidx].cluster_refs++;
	return 0;
}

int rt_cluster_remove_member(struct route_db *db, const char *name, uint32_t gidx)
{
	uint32_t pos;
	struct route_cluster *c = name ? rt_cluster_find(db->clusters, name, &pos) : NULL, *nc = NULL;

	if (!cluster_has(c, gidx))
		return 0;
	if (c->n > 1) {
		nc = cluster_new(name, NULL, 0, c->n);
		if (!nc)
			return RMQNS_ENOMEM;
		for (uint32_t i = 0; i < c->n; i++)
			if (c->gidx[i] != gidx)
				nc->gidx[nc->n++] = c->gidx[i];
	}
	if (cluster_publish(db, pos, nc)) {
		if (nc) {
			free(nc->gidx);
			free(nc);
		}
		return RMQNS_ENOMEM;
	}
	db->gpriv[gidx].cluster_refs--;
	rt_group_maybe_retire(db, gidx);
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
int rt_filter_set(struct route_db *db, const char *cluster, const char *addr, const char *const *list,
		  uint32_t n)
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
		nf = rt_calloc(1, sz);
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
	ns = rt_calloc(1, sizeof(*ns) + ((size_t)on + 1) * sizeof(ns->f[0]));
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
	m = rt_calloc(1, sz);
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
		m->m.ids = rt_malloc(src->n_ids * sizeof(*m->m.ids));
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
int rt_maps_merge(struct route_db *db, const struct regbody *rb)
{
	struct route_maps *old = db->maps, *ns;
	uint32_t on = old ? old->n : 0, n = 0;
	struct route_mapping **fresh;
	int rc = 0;

	if (rb->n_mappings == 0)
		return 0;
	fresh = rt_calloc(rb->n_mappings, sizeof(*fresh));
	ns = rt_calloc(1, sizeof(*ns) + ((size_t)on + rb->n_mappings) * sizeof(ns->e[0]));
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

