/* JSON pieces of the route module: a group's pre-serialized BrokerData and
 * QueueData head in both forms, id maps in Java HashMap order, static-topic
 * mappings and name ordering. Writes through the fastjson-form writer. */
#include <stdlib.h>
#include <string.h>

#include "rmqns/javahash.h"
#include "route_priv.h"
#include "rmqns/err.h"

static int cmp_u32_by_id(const void *a, const void *b, void *ctx)
{
	const struct route_addr *v = ctx;
	int64_t x = v[*(const uint32_t *)a].id, y = v[*(const uint32_t *)b].id;
	return x < y ? -1 : x > y;
}

void rt_jw_addr_map(struct jw *w, const struct route_addr *a, uint32_t n, uint32_t cap)
{
	uint32_t small[16];
	uint32_t *idx = n <= 16 ? small : malloc((size_t)n * sizeof(*idx));
	int32_t hsmall[16];
	int32_t *h = n <= 16 ? hsmall : malloc((size_t)n * sizeof(*h));

	if (!idx || !h) {
		if (idx != small)
			free(idx);
		if (h != hsmall)
			free(h);
		w->err = w->err ? w->err : RMQNS_ENOMEM;
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		idx[i] = i;
		h[i] = java_long_hash(a[i].id);
	}
	if (w->form == JW_STANDARD)
		qsort_r(idx, n, sizeof(*idx), cmp_u32_by_id, (void *)a);
	else
		java_map_order(h, n, cap < 16 ? 16 : cap, idx);
	jw_obj_begin(w);
	for (uint32_t i = 0; i < n; i++) {
		jw_key_int(w, a[idx[i]].id);
		jw_str(w, a[idx[i]].addr);
	}
	jw_obj_end(w);
	if (idx != small)
		free(idx);
	if (h != hsmall)
		free(h);
}

static void jw_broker_data(struct jw *w, const struct route_group *g, const struct route_addr *a,
			   uint32_t n)
{
	jw_obj_begin(w);
	jw_key(w, "brokerAddrs");
	rt_jw_addr_map(w, a, n, g->map_cap);
	jw_key(w, "brokerName");
	jw_str(w, g->name);
	jw_key(w, "cluster");
	jw_str(w, g->cluster);
	jw_key(w, "enableActingMaster");
	jw_bool(w, g->acting_master);
	if (g->zone) {
		jw_key(w, "zoneName");
		jw_str(w, g->zone);
	}
	jw_obj_end(w);
}

static int take(struct buf *b, struct jw *w, struct rt_str *dst)
{
	int err = jw_error(w);

	if (err) {
		buf_free(b);
		return err;
	}
	if (buf_terminate(b)) {
		buf_free(b);
		return RMQNS_ENOMEM;
	}
	dst->s = (char *)b->data;
	dst->len = (uint32_t)b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	return 0;
}

/* The acting-master rewrite applies to a group with addresses, no master
 * and enableActingMaster (protocol.md §6.6). */
static bool acting_candidate(const struct route_group *g)
{
	if (!g->present || !g->acting_master || g->n_addrs == 0)
		return false;
	for (uint32_t i = 0; i < g->n_addrs; i++)
		if (g->addrs[i].id == 0)
			return false;
	return true;
}

int rt_group_render(struct route_group *g)
{
	for (int f = 0; f < 2; f++) {
		struct buf b = BUF_INIT;
		struct jw w;
		int rc;

		jw_init(&w, &b, (enum jw_form)f);
		jw_str(&w, g->name);
		if ((rc = take(&b, &w, &g->name_json[f])) != 0)
			return rc;

		jw_init(&w, &b, (enum jw_form)f);
		jw_obj_begin(&w);
		jw_key(&w, "brokerName");
		jw_str(&w, g->name);
		jw_key(&w, "perm");
		if ((rc = take(&b, &w, &g->qd_head[f])) != 0)
			return rc;

		if (!g->present)
			continue;
		jw_init(&w, &b, (enum jw_form)f);
		jw_broker_data(&w, g, g->addrs, g->n_addrs);
		if ((rc = take(&b, &w, &g->bd[f])) != 0)
			return rc;

		if (acting_candidate(g)) {
			/* as Java does it: remove the smallest id, put its
			 * address under id 0 */
			struct route_addr *a = malloc((size_t)g->n_addrs * sizeof(*a));
			uint32_t min = 0, k = 0;
			if (!a)
				return RMQNS_ENOMEM;
			for (uint32_t i = 1; i < g->n_addrs; i++)
				if (g->addrs[i].id < g->addrs[min].id)
					min = i;
			for (uint32_t i = 0; i < g->n_addrs; i++)
				if (i != min)
					a[k++] = g->addrs[i];
			a[k].id = 0;
			a[k].addr = g->addrs[min].addr;
			jw_init(&w, &b, (enum jw_form)f);
			jw_broker_data(&w, g, a, g->n_addrs);
			free(a);
			if ((rc = take(&b, &w, &g->bd_acting[f])) != 0)
				return rc;
		}
	}
	return 0;
}

static int cmp_pair_key(const void *a, const void *b, void *ctx)
{
	const int32_t (*ids)[2] = ctx;
	int32_t x = ids[*(const uint32_t *)a][0], y = ids[*(const uint32_t *)b][0];
	return x < y ? -1 : x > y;
}

void rt_jw_mapping(struct jw *w, const struct regbody_mapping *m)
{
	jw_obj_begin(w);
	if (m->bname) {
		jw_key(w, "bname");
		jw_str(w, m->bname);
	}
	if (m->has_ids) {
		uint32_t *idx = malloc(((size_t)m->n_ids + 1) * sizeof(*idx));
		int32_t *h = malloc(((size_t)m->n_ids + 1) * sizeof(*h));
		if (!idx || !h) {
			free(idx);
			free(h);
			w->err = w->err ? w->err : RMQNS_ENOMEM;
			return;
		}
		for (uint32_t i = 0; i < m->n_ids; i++) {
			idx[i] = i;
			h[i] = m->ids[i][0]; /* Integer.hashCode */
		}
		if (w->form == JW_STANDARD)
			qsort_r(idx, m->n_ids, sizeof(*idx), cmp_pair_key, (void *)m->ids);
		else
			java_map_order(h, m->n_ids, java_map_cap(m->n_ids), idx);
		jw_key(w, "currIdMap");
		jw_obj_begin(w);
		for (uint32_t i = 0; i < m->n_ids; i++) {
			jw_key_int(w, m->ids[idx[i]][0]);
			jw_int(w, m->ids[idx[i]][1]);
		}
		jw_obj_end(w);
		free(idx);
		free(h);
	}
	jw_key(w, "dirty");
	jw_bool(w, m->dirty);
	jw_key(w, "epoch");
	jw_int(w, m->epoch);
	if (m->scope) {
		jw_key(w, "scope");
		jw_str(w, m->scope);
	}
	if (m->topic) {
		jw_key(w, "topic");
		jw_str(w, m->topic);
	}
	jw_key(w, "totalQueues");
	jw_int(w, m->total_queues);
	jw_obj_end(w);
}

static int cmp_name_idx(const void *a, const void *b, void *ctx)
{
	const char *const *names = ctx;
	return strcmp(names[*(const uint32_t *)a], names[*(const uint32_t *)b]);
}

uint32_t *rt_name_order(const char *const *names, uint32_t n, enum jw_form form)
{
	uint32_t *idx = malloc(((size_t)n + 1) * sizeof(*idx));
	int32_t *h;

	if (!idx)
		return NULL;
	for (uint32_t i = 0; i < n; i++)
		idx[i] = i;
	if (form == JW_STANDARD) {
		qsort_r(idx, n, sizeof(*idx), cmp_name_idx, (void *)names);
		return idx;
	}
	h = malloc(((size_t)n + 1) * sizeof(*h));
	if (!h) {
		free(idx);
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++)
		h[i] = java_string_hash(names[i]);
	java_map_order(h, n, java_map_cap(n), idx);
	free(h);
	return idx;
}
