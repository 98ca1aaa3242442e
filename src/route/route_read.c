/* The reader's side of the route registry: TopicRouteData answers (built
 * from pre-serialized group pieces and cached per topic and form), cluster
 * info, topic lists, member groups and liveness refreshes. Runs on any
 * registered thread inside a read-side section; never waits for the
 * registrar and never frees what another thread may still read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "route_priv.h"
#include "rmqns/err.h"
#include "rmqns/javahash.h"

#define NOMEM(x) do { if (x) return RMQNS_ENOMEM; } while (0)

static int put_int(struct buf *out, int64_t v)
{
	char tmp[24];
	char *p = tmp + sizeof(tmp);
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	return buf_append(out, p, (size_t)(tmp + sizeof(tmp) - p));
}

static bool group_has_master(const struct route_group *g)
{
	for (uint32_t i = 0; i < g->n_addrs; i++)
		if (g->addrs[i].id == 0)
			return true;
	return false;
}

struct built {
	uint32_t splice;
	uint8_t acting;
};

struct fs_item {
	const char *addr;
	const struct route_filter *f;
};

/* filterServerTable: the filter-server lists of the answer's addresses. */
static int write_filter_table(struct route_db *db, struct route_group **gs, const uint8_t *skip,
			      uint32_t n, enum jw_form form, struct buf *out)
{
	struct route_filters *fs = rt_deref(db->filters);
	struct fs_item *items = NULL;
	uint32_t ni = 0, cap = 0;
	struct jw w;

	for (uint32_t i = 0; fs && fs->n && i < n; i++) {
		struct route_group *g = gs[i];
		if (!g || !g->present || skip[i])
			continue;
		for (uint32_t a = 0; a < g->n_addrs; a++) {
			for (uint32_t k = 0; k < fs->n; k++) {
				const struct route_filter *f = fs->f[k];
				if (strcmp(f->addr, g->addrs[a].addr) || strcmp(f->cluster, g->cluster))
					continue;
				bool dup = false;
				for (uint32_t d = 0; d < ni && !dup; d++)
					dup = strcmp(items[d].addr, f->addr) == 0;
				if (dup)
					break;
				if (ni == cap) {
					uint32_t nc = cap ? cap * 2 : 8;
					struct fs_item *nv = realloc(items, nc * sizeof(*nv));
					if (!nv) {
						free(items);
						return RMQNS_ENOMEM;
					}
					items = nv;
					cap = nc;
				}
				items[ni].addr = f->addr;
				items[ni].f = f;
				ni++;
				break;
			}
		}
	}
	jw_init(&w, out, form);
	jw_obj_begin(&w);
	if (ni) {
		const char **names = malloc(ni * sizeof(*names));
		uint32_t *ord = NULL;
		if (names) {
			for (uint32_t i = 0; i < ni; i++)
				names[i] = items[i].addr;
			ord = rt_name_order(names, ni, form);
		}
		if (!ord) {
			free(names);
			free(items);
			return RMQNS_ENOMEM;
		}
		for (uint32_t i = 0; i < ni; i++) {
			const struct route_filter *f = items[ord[i]].f;
			jw_key(&w, f->addr);
			jw_arr_begin(&w);
			for (uint32_t k = 0; k < f->n; k++)
				jw_str(&w, f->list[k]);
			jw_arr_end(&w);
		}
		free(ord);
		free(names);
	}
	jw_obj_end(&w);
	free(items);
	return jw_error(&w);
}

static int write_mappings(struct route_db *db, const char *topic, enum jw_form form, struct buf *out)
{
	struct route_maps *ms = rt_deref(db->maps);
	uint32_t lo = 0, hi, first, n;
	struct jw w;

	if (!ms || ms->n == 0)
		return 0;
	hi = ms->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (strcmp(ms->e[mid]->topic, topic) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	first = lo;
	for (n = 0; first + n < ms->n && strcmp(ms->e[first + n]->topic, topic) == 0; n++)
		;
	if (n == 0)
		return 0;
	const char **names = malloc(n * sizeof(*names));
	uint32_t *ord;
	if (!names)
		return RMQNS_ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		names[i] = ms->e[first + i]->bname;
	ord = rt_name_order(names, n, form);
	if (!ord) {
		free(names);
		return RMQNS_ENOMEM;
	}
	if (buf_append_str(out, ",\"topicQueueMappingByBroker\":")) {
		free(ord);
		free(names);
		return RMQNS_ENOMEM;
	}
	jw_init(&w, out, form);
	jw_obj_begin(&w);
	for (uint32_t i = 0; i < n; i++) {
		jw_key(&w, names[ord[i]]);
		rt_jw_mapping(&w, &ms->e[first + ord[i]]->m);
	}
	jw_obj_end(&w);
	free(ord);
	free(names);
	return jw_error(&w);
}

/* Builds the TopicRouteData of t into out (appending). RMQNS_ENOTFOUND
 * when no queue entry names a group in brokerAddrTable. */
static int build_route(struct route_db *db, const struct route_topic *t, const struct route_tq *tq,
		       enum jw_form form, bool support_acting, const char *zone, struct buf *out,
		       struct built *bo)
{
	struct route_group *gsmall[32], **gs;
	uint8_t ssmall[32], *skip;
	bool rewrite_ok = strncmp(t->name, ROUTE_SYNC_MEMBER_PREFIX, sizeof(ROUTE_SYNC_MEMBER_PREFIX) - 1) != 0;
	bool sensitive = false;
	uint32_t nbd = 0, nqd = 0;
	int rc = 0;

	gs = tq->n <= 32 ? gsmall : malloc(tq->n * sizeof(*gs));
	skip = tq->n <= 32 ? ssmall : calloc(tq->n, 1);
	if (!gs || !skip) {
		if (gs != gsmall)
			free(gs);
		if (skip != ssmall)
			free(skip);
		return RMQNS_ENOMEM;
	}
	memset(skip, 0, tq->n);
	if (buf_append_str(out, "{\"brokerDatas\":[")) {
		rc = RMQNS_ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < tq->n; i++) {
		struct route_group *g = rt_group_visible(db, tq->e[i].gidx);
		const struct rt_str *frag;
		bool master;

		gs[i] = g;
		if (!g) {
			/* dead (its entries are being removed), or its removal
			 * is being published right now */
			skip[i] = 1;
			continue;
		}
		if (!g->present)
			continue;
		nbd++;
		frag = &g->bd[form];
		master = group_has_master(g);
		if (rewrite_ok && g->bd_acting[form].s && !(tq->e[i].perm & ROUTE_PERM_WRITE)) {
			sensitive = true;
			if (support_acting) {
				frag = &g->bd_acting[form];
				master = true;
			}
		}
		if (zone && master && !(g->zone && strcasecmp(g->zone, zone) == 0)) {
			skip[i] = 1; /* another zone's group with a master */
			continue;
		}
		if ((nqd++ && buf_putc(out, ',')) || buf_append(out, frag->s, frag->len)) {
			rc = RMQNS_ENOMEM;
			goto out;
		}
	}
	if (nbd == 0 || tq->n == 0) {
		rc = RMQNS_ENOTFOUND;
		goto out;
	}
	if (buf_append_str(out, "],\"filterServerTable\":") ||
	    (rc = write_filter_table(db, gs, skip, tq->n, form, out)) != 0 || buf_putc(out, ',')) {
		rc = rc ? rc : RMQNS_ENOMEM;
		goto out;
	}
	bo->splice = (uint32_t)out->len;
	if (buf_append_str(out, "\"queueDatas\":[")) {
		rc = RMQNS_ENOMEM;
		goto out;
	}
	nqd = 0;
	for (uint32_t i = 0; i < tq->n; i++) {
		const struct route_qd *e = &tq->e[i];
		const struct route_group *g = gs[i];
		if (skip[i])
			continue;
		if ((nqd++ && buf_putc(out, ',')) || buf_append(out, g->qd_head[form].s, g->qd_head[form].len) ||
		    put_int(out, e->perm) || buf_append_str(out, ",\"readQueueNums\":") ||
		    put_int(out, e->read_queues) || buf_append_str(out, ",\"topicSysFlag\":") ||
		    put_int(out, e->sysflag) || buf_append_str(out, ",\"writeQueueNums\":") ||
		    put_int(out, e->write_queues) || buf_putc(out, '}')) {
			rc = RMQNS_ENOMEM;
			goto out;
		}
	}
	if (buf_putc(out, ']') || (rc = write_mappings(db, t->name, form, out)) != 0 || buf_putc(out, '}')) {
		rc = rc ? rc : RMQNS_ENOMEM;
		goto out;
	}
	bo->acting = sensitive ? (support_acting ? 2 : 1) : 0;
out:
	if (gs != gsmall)
		free(gs);
	if (skip != ssmall)
		free(skip);
	return rc;
}

/* `"orderTopicConf":"<conf>",` */
static int order_conf_member(const char *conf, enum jw_form form, struct buf *out)
{
	NOMEM(buf_append_str(out, "\"orderTopicConf\":\""));
	NOMEM(json_escape(out, conf, strlen(conf), form));
	NOMEM(buf_append_str(out, "\","));
	return 0;
}

/* Puts the orderTopicConf member at `splice` of the answer in scratch (or
 * of src, copied to scratch). */
static int splice_order_conf(struct buf *scratch, const uint8_t *src, size_t len, uint32_t splice,
			     const char *conf, enum jw_form form)
{
	struct buf mem = BUF_INIT;
	int rc = order_conf_member(conf, form, &mem);

	if (rc == 0) {
		if (src == scratch->data) {
			if (buf_reserve(scratch, mem.len))
				rc = RMQNS_ENOMEM;
			else {
				memmove(scratch->data + splice + mem.len, scratch->data + splice, len - splice);
				memcpy(scratch->data + splice, mem.data, mem.len);
				scratch->len = len + mem.len;
			}
		} else {
			scratch->len = 0;
			if (buf_append(scratch, src, splice) || buf_append(scratch, mem.data, mem.len) ||
			    buf_append(scratch, src + splice, len - splice))
				rc = RMQNS_ENOMEM;
		}
	}
	buf_free(&mem);
	return rc;
}

int route_topic_body(struct route_db *db, const struct route_query *q, const uint8_t **body, size_t *len,
		     struct buf *scratch)
{
	struct route_topic *t = rt_topic_find(db, q->topic);
	enum jw_form form = q->zone ? JW_DEFAULT : q->form;
	uint8_t want = q->support_acting_master ? 2 : 1;
	struct route_cache *c = NULL;
	struct route_tq *tq;
	struct built bo = { 0, 0 };
	uint32_t tg = 0;
	uint64_t gg = 0;
	int rc;

	if (!t)
		return RMQNS_ENOTFOUND;
	if (!q->zone) {
		tg = __atomic_load_n(&t->gen, __ATOMIC_ACQUIRE);
		gg = __atomic_load_n(&db->ggen, __ATOMIC_ACQUIRE);
		c = rt_deref(t->cache[form]);
		if (c && c->tgen == tg && c->ggen == gg && (c->acting == 0 || c->acting == want)) {
			if (!__atomic_load_n(&t->hot, __ATOMIC_RELAXED))
				__atomic_store_n(&t->hot, 1, __ATOMIC_RELAXED);
			if (q->order_conf) {
				rc = splice_order_conf(scratch, c->bytes, c->len, c->splice, q->order_conf, form);
				if (rc)
					return rc;
				*body = scratch->data;
				*len = scratch->len;
			} else {
				*body = c->bytes;
				*len = c->len;
			}
			return 0;
		}
	}
	tq = rt_deref(t->tq);
	scratch->len = 0;
	rc = build_route(db, t, tq, form, q->support_acting_master, q->zone, scratch, &bo);
	if (rc)
		return rc;
	if (!q->zone)
		rt_cache_install(db, t, form, c, scratch->data, scratch->len, bo.splice, bo.acting, tg, gg);
	if (q->order_conf && (rc = splice_order_conf(scratch, scratch->data, scratch->len, bo.splice,
						     q->order_conf, form)) != 0)
		return rc;
	*body = scratch->data;
	*len = scratch->len;
	return 0;
}

/* ---- cluster info and lists ---- */

/* Present groups (or all interned slots when all=true) as a vector. */
static struct route_group **groups_vec(struct route_db *db, bool all, uint32_t *count)
{
	uint32_t hwm = __atomic_load_n(&db->groups_high_water, __ATOMIC_ACQUIRE), n = 0;
	struct route_group **v = malloc(((size_t)hwm + 1) * sizeof(*v));

	*count = 0;
	if (!v)
		return NULL;
	for (uint32_t i = 0; i < hwm; i++) {
		struct route_group *g = rt_group_visible(db, i);
		if (g && (all || g->present))
			v[n++] = g;
	}
	*count = n;
	return v;
}

static uint32_t *groups_order(struct route_group **v, uint32_t n)
{
	const char **names = malloc(((size_t)n + 1) * sizeof(*names));
	uint32_t *ord;

	if (!names)
		return NULL;
	for (uint32_t i = 0; i < n; i++)
		names[i] = v[i]->name;
	ord = rt_name_order(names, n, JW_DEFAULT);
	free(names);
	return ord;
}

int route_cluster_info(struct route_db *db, struct buf *out)
{
	struct route_clusters *cs = rt_deref(db->clusters);
	uint32_t n, *ord;
	struct route_group **v = groups_vec(db, false, &n);
	struct jw w;
	int rc = 0;

	if (!v)
		return RMQNS_ENOMEM;
	ord = groups_order(v, n);
	if (!ord) {
		free(v);
		return RMQNS_ENOMEM;
	}
	jw_init(&w, out, JW_DEFAULT);
	jw_obj_begin(&w);
	jw_key(&w, "brokerAddrTable");
	jw_obj_begin(&w);
	for (uint32_t i = 0; i < n; i++) {
		struct route_group *g = v[ord[i]];
		jw_key(&w, g->name);
		jw_raw(&w, g->bd[JW_DEFAULT].s, g->bd[JW_DEFAULT].len);
	}
	jw_obj_end(&w);
	free(ord);
	free(v);

	jw_key(&w, "clusterAddrTable");
	jw_obj_begin(&w);
	uint32_t nc = cs ? cs->n : 0;
	const char **cnames = malloc(((size_t)nc + 1) * sizeof(*cnames));
	uint32_t *cord = NULL;
	if (cnames) {
		for (uint32_t i = 0; i < nc; i++)
			cnames[i] = cs->c[i]->name;
		cord = rt_name_order(cnames, nc, JW_DEFAULT);
	}
	if (!cord) {
		free(cnames);
		return RMQNS_ENOMEM;
	}
	for (uint32_t i = 0; i < nc && rc == 0; i++) {
		const struct route_cluster *c = cs->c[cord[i]];
		const char **mn = malloc(((size_t)c->n + 1) * sizeof(*mn));
		uint32_t k = 0, *mord;
		if (!mn) {
			rc = RMQNS_ENOMEM;
			break;
		}
		for (uint32_t m = 0; m < c->n; m++) {
			struct route_group *g = rt_group_visible(db, c->gidx[m]);
			if (g)
				mn[k++] = g->name;
		}
		if (k == 0) {
			/* every member left: the cluster is gone for readers */
			free(mn);
			continue;
		}
		mord = rt_name_order(mn, k, JW_DEFAULT);
		if (!mord) {
			free(mn);
			rc = RMQNS_ENOMEM;
			break;
		}
		jw_key(&w, c->name);
		jw_arr_begin(&w);
		for (uint32_t m = 0; m < k; m++)
			jw_str(&w, mn[mord[m]]);
		jw_arr_end(&w);
		free(mord);
		free(mn);
	}
	free(cord);
	free(cnames);
	jw_obj_end(&w);
	jw_obj_end(&w);
	return rc ? rc : jw_error(&w);
}

/* {"topicList":[...]} (with "brokerAddr" first when given), names in
 * Java HashSet order. */
static int write_topic_list(const char **names, uint32_t n, const char *broker_addr, struct buf *out)
{
	uint32_t *ord = rt_name_order(names, n, JW_DEFAULT);
	struct jw w;

	if (!ord)
		return RMQNS_ENOMEM;
	jw_init(&w, out, JW_DEFAULT);
	jw_obj_begin(&w);
	if (broker_addr) {
		jw_key(&w, "brokerAddr");
		jw_str(&w, broker_addr);
	}
	jw_key(&w, "topicList");
	jw_arr_begin(&w);
	for (uint32_t i = 0; i < n; i++)
		jw_str(&w, names[ord[i]]);
	jw_arr_end(&w);
	jw_obj_end(&w);
	free(ord);
	return jw_error(&w);
}

struct name_vec {
	const char **v;
	uint32_t n, cap;
	int err;
};

static void nv_push(struct name_vec *nv, const char *s)
{
	if (nv->err)
		return;
	if (nv->n == nv->cap) {
		uint32_t nc = nv->cap ? nv->cap * 2 : 64;
		const char **x = realloc(nv->v, nc * sizeof(*x));
		if (!x) {
			nv->err = RMQNS_ENOMEM;
			return;
		}
		nv->v = x;
		nv->cap = nc;
	}
	nv->v[nv->n++] = s;
}

/* The first entry of tq readers may see (naming one of gidx[0..n) when
 * gidx is given), or NULL. */
static const struct route_qd *tq_first_visible(struct route_db *db, const struct route_tq *tq,
					       const uint32_t *gidx, uint32_t n)
{
	for (uint32_t i = 0; i < tq->n; i++) {
		bool member = !gidx;
		for (uint32_t k = 0; k < n && !member; k++)
			member = tq->e[i].gidx == gidx[k];
		if (member && rt_group_visible(db, tq->e[i].gidx))
			return &tq->e[i];
	}
	return NULL;
}

/* Topics matching: all (cluster NULL, kind < 0), a cluster's, or a unit kind. */
static int topics_select(struct route_db *db, const struct route_cluster *c, int kind, struct buf *out)
{
	struct cds_lfht_iter it;
	struct route_topic *t;
	struct name_vec nv = { NULL, 0, 0, 0 };
	int rc;

	cds_lfht_for_each_entry(db->topics, &it, t, node) {
		struct route_tq *tq = rt_deref(t->tq);
		const struct route_qd *first = tq ? tq_first_visible(db, tq, NULL, 0) : NULL;
		if (!first)
			continue;
		if (c && !tq_first_visible(db, tq, c->gidx, c->n))
			continue;
		if (kind >= 0) {
			int32_t f = first->sysflag;
			bool unit = f & ROUTE_SYSFLAG_UNIT, sub = f & ROUTE_SYSFLAG_UNIT_SUB;
			if ((kind == ROUTE_UNIT && !unit) || (kind == ROUTE_UNIT_SUB && !sub) ||
			    (kind == ROUTE_UNIT_SUB_NOT_UNIT && (!sub || unit)))
				continue;
		}
		nv_push(&nv, t->name);
	}
	rc = nv.err ? nv.err : write_topic_list(nv.v, nv.n, NULL, out);
	free(nv.v);
	return rc;
}

int route_topics_all(struct route_db *db, struct buf *out)
{
	return topics_select(db, NULL, -1, out);
}

int route_topics_by_cluster(struct route_db *db, const char *cluster, struct buf *out)
{
	struct route_clusters *cs = rt_deref(db->clusters);
	const struct route_cluster *c = NULL;

	for (uint32_t i = 0; cluster && cs && i < cs->n; i++)
		if (strcmp(cs->c[i]->name, cluster) == 0)
			c = cs->c[i];
	if (!c)
		return write_topic_list(NULL, 0, NULL, out);
	return topics_select(db, c, -1, out);
}

int route_topics_unit(struct route_db *db, enum route_unit_kind kind, struct buf *out)
{
	return topics_select(db, NULL, (int)kind, out);
}

int route_topics_system(struct route_db *db, struct buf *out)
{
	struct route_clusters *cs = rt_deref(db->clusters);
	struct name_vec nv = { NULL, 0, 0, 0 };
	const char *addr = NULL;
	uint32_t n, *ord;
	struct route_group **v;
	int rc;

	for (uint32_t i = 0; cs && i < cs->n; i++) {
		bool any = false;
		for (uint32_t m = 0; m < cs->c[i]->n && !any; m++)
			any = rt_group_visible(db, cs->c[i]->gidx[m]) != NULL;
		if (!any)
			continue; /* every member left */
		nv_push(&nv, cs->c[i]->name);
		for (uint32_t m = 0; m < cs->c[i]->n; m++) {
			struct route_group *g = rt_group_visible(db, cs->c[i]->gidx[m]);
			bool dup = false;
			if (!g)
				continue;
			for (uint32_t d = 0; d < nv.n && !dup; d++)
				dup = strcmp(nv.v[d], g->name) == 0;
			if (!dup)
				nv_push(&nv, g->name);
		}
	}
	/* a set: a cluster named like a group appears once */
	for (uint32_t i = 0; i < nv.n; i++)
		for (uint32_t k = i + 1; k < nv.n;)
			if (strcmp(nv.v[i], nv.v[k]) == 0)
				nv.v[k] = nv.v[--nv.n];
			else
				k++;
	v = groups_vec(db, false, &n);
	ord = v ? groups_order(v, n) : NULL;
	if (!v || !ord) {
		free(v);
		free(nv.v);
		return RMQNS_ENOMEM;
	}
	/* the first address of the first group (table order) that has one */
	for (uint32_t i = 0; i < n && !addr; i++) {
		struct route_group *g = v[ord[i]];
		if (g->n_addrs == 0)
			continue;
		uint32_t best = 0;
		uint32_t bb = UINT32_MAX;
		for (uint32_t k = 0; k < g->n_addrs; k++) {
			uint32_t h = (uint32_t)java_long_hash(g->addrs[k].id);
			uint32_t b = (h ^ (h >> 16)) & (g->map_cap - 1);
			if (b < bb) {
				bb = b;
				best = k;
			}
		}
		addr = g->addrs[best].addr;
	}
	rc = nv.err ? nv.err : write_topic_list(nv.v, nv.n, addr, out);
	free(ord);
	free(v);
	free(nv.v);
	return rc;
}

int route_member_group(struct route_db *db, const char *cluster, const char *name, struct buf *out)
{
	struct route_group *g = rt_group_visible(db, rt_group_lookup(db, name));
	struct jw w;

	if (g && !g->present)
		g = NULL;
	jw_init(&w, out, JW_DEFAULT);
	jw_obj_begin(&w);
	jw_key(&w, "brokerMemberGroup");
	jw_obj_begin(&w);
	jw_key(&w, "brokerAddrs");
	if (g)
		rt_jw_addr_map(&w, g->addrs, g->n_addrs, java_map_cap(g->n_addrs));
	else
		rt_jw_addr_map(&w, NULL, 0, 16);
	if (name) {
		jw_key(&w, "brokerName");
		jw_str(&w, name);
	}
	if (cluster) {
		jw_key(&w, "cluster");
		jw_str(&w, cluster);
	}
	jw_obj_end(&w);
	jw_obj_end(&w);
	return jw_error(&w);
}

/* ---- liveness ---- */

bool route_heartbeat(struct route_db *db, const char *cluster, const char *addr, uint64_t now_ms)
{
	struct route_live *l = rt_live_find(db, cluster, addr);

	if (!l)
		return false;
	__atomic_store_n(&l->last_ms, now_ms, __ATOMIC_RELAXED);
	return true;
}

void route_query_data_version(struct route_db *db, const char *cluster, const char *addr,
			      const struct data_version *dv, uint64_t now_ms, bool *known, bool *changed,
			      struct data_version *stored)
{
	struct route_live *l = rt_live_find(db, cluster, addr);

	*known = l != NULL;
	*changed = true;
	if (!l)
		return;
	*stored = l->dv;
	/* restored from a snapshot: the broker re-sends everything once */
	*changed = l->restored || !data_version_equal(&l->dv, dv);
	/* 5.x refreshes whenever the broker is known */
	__atomic_store_n(&l->last_ms, now_ms, __ATOMIC_RELAXED);
}
