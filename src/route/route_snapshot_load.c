/* The route snapshot's loading (route_snapshot.h, the format in
 * route_snapshot_format.h): a check pass over every record that changes
 * nothing, then the rebuild of an empty db through the writer functions a
 * registration uses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "route_snapshot_format.h"
#include "route_writer.h"
#include "rmqns/err.h"
#include "rmqns/route_snapshot.h"

/* A cursor over one record (or the header). Every read checks the room
 * left; the first failure sets bad and every later read returns zeros. */
struct snap_rd {
	const uint8_t *p;
	size_t n, off;
	bool bad;
};

static const uint8_t *rd_take(struct snap_rd *r, size_t n)
{
	if (r->bad || n > r->n - r->off) {
		r->bad = true;
		return NULL;
	}
	const uint8_t *p = r->p + r->off;
	r->off += n;
	return p;
}

static uint8_t rd_u8(struct snap_rd *r)
{
	const uint8_t *p = rd_take(r, 1);
	return p ? p[0] : 0;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t rd_u32(struct snap_rd *r)
{
	const uint8_t *p = rd_take(r, 4);
	return p ? le32(p) : 0;
}

static uint64_t rd_u64(struct snap_rd *r)
{
	uint64_t lo = rd_u32(r);
	return lo | (uint64_t)rd_u32(r) << 32;
}

/* A string: pointed at in place (its NUL is part of the format). */
static const char *rd_str(struct snap_rd *r)
{
	uint32_t n = rd_u32(r);
	const uint8_t *p = rd_take(r, (size_t)n + 1);
	if (!p || p[n] != 0 || memchr(p, 0, n)) {
		r->bad = true;
		return NULL;
	}
	return (const char *)p;
}

/* One decoded record; strings point into the file. */
struct snap_group {
	const char *name, *cluster, *zone;
	uint8_t flags;
	uint32_t map_cap, n_addrs;
	struct snap_rd addrs; /* positioned at the first address */
};

struct snap_tqref {
	uint32_t map_cap, n;
	size_t off;           /* of its first entry in the file */
};

struct snap_load {
	const uint8_t *p;
	size_t len;
	uint64_t now_wall_ms, written_ms;
	char *err;
	size_t errlen;
	/* filled by the check pass */
	uint32_t n_groups, n_tq;
	uint64_t n_live, n_topics;
	int64_t max_timeout;
	struct snap_tqref *tq;   /* by ordinal */
	uint32_t tq_cap;
	uint32_t *gidx;          /* group ordinal -> slot (the apply pass) */
	uint8_t *gpresent;       /* group ordinal -> present (the check pass) */
	const char **gnames;     /* group ordinal -> name (the check pass) */
	uint32_t *gseen;         /* group ordinal -> last list naming it, + 1 */
	uint32_t live_expired;
};

static int snap_bad(struct snap_load *L, size_t at, const char *what)
{
	snprintf(L->err, L->errlen, "%s at byte %zu", what, at);
	return RMQNS_EINVAL;
}

static bool map_cap_ok(uint32_t cap)
{
	return cap >= 16 && cap <= (1u << 30) && (cap & (cap - 1)) == 0;
}

static bool snap_group_read(struct snap_rd *r, struct snap_group *g)
{
	memset(g, 0, sizeof(*g));
	g->name = rd_str(r);
	g->flags = rd_u8(r);
	if (g->flags & SG_PRESENT)
		g->cluster = rd_str(r);
	if (g->flags & SG_ZONE)
		g->zone = rd_str(r);
	g->map_cap = rd_u32(r);
	g->n_addrs = rd_u32(r);
	g->addrs = *r;
	return !r->bad && g->flags < 8 && map_cap_ok(g->map_cap) && g->n_addrs <= SNAP_MAX_ADDRS &&
	       (g->n_addrs == 0 || (g->flags & SG_PRESENT)) && g->name[0];
}

static bool snap_addr_read(struct snap_rd *r, int64_t *id, const char **addr)
{
	*id = (int64_t)rd_u64(r);
	*addr = rd_str(r);
	return !r->bad;
}

/* A group's addresses: well-formed, each id and address once. */
static bool snap_addrs_check(const struct snap_group *g)
{
	struct snap_rd a = g->addrs;
	int64_t ids[SNAP_MAX_ADDRS];
	const char *as[SNAP_MAX_ADDRS];

	for (uint32_t i = 0; i < g->n_addrs; i++) {
		if (!snap_addr_read(&a, &ids[i], &as[i]) || !as[i][0])
			return false;
		for (uint32_t k = 0; k < i; k++)
			if (ids[k] == ids[i] || strcmp(as[k], as[i]) == 0)
				return false;
	}
	return true;
}

static int snap_apply_group(struct route_db *db, struct snap_load *L, uint32_t ord, const struct snap_group *sg)
{
	uint32_t gidx;
	int rc;

	if ((rc = rt_group_intern(db, sg->name, &gidx)) != 0)
		return rc;
	L->gidx[ord] = gidx;
	if (!(sg->flags & SG_PRESENT))
		return 0;
	struct route_group *ng = rt_group_clone(db->gdir[gidx]);
	if (!ng)
		return RMQNS_ENOMEM;
	ng->present = true;
	ng->acting_master = (sg->flags & SG_ACTING) != 0;
	ng->map_cap = sg->map_cap;
	ng->cluster = rt_strdup(sg->cluster);
	ng->zone = sg->zone ? rt_strdup(sg->zone) : NULL;
	struct route_addr *na = rt_calloc(sg->n_addrs + 1, sizeof(*na));
	if (!ng->cluster || (sg->zone && !ng->zone) || !na) {
		free(na);
		rt_group_free(ng);
		return RMQNS_ENOMEM;
	}
	free(ng->addrs);
	ng->addrs = na;
	struct snap_rd a = sg->addrs;
	for (uint32_t i = 0; i < sg->n_addrs; i++) {
		const char *addr;
		(void)snap_addr_read(&a, &na[i].id, &addr); /* checked before */
		na[i].addr = rt_strdup(addr);
		if (!na[i].addr) {
			rt_group_free(ng);
			return RMQNS_ENOMEM;
		}
		ng->n_addrs = i + 1;
	}
	return rt_group_commit(db, ng, false);
}

static int snap_cluster(struct route_db *db, struct snap_load *L, struct snap_rd *r)
{
	const char *name = rd_str(r);
	uint32_t n = rd_u32(r);

	if (r->bad || n > L->n_groups)
		return snap_bad(L, r->off, "a cluster record that does not hold together");
	for (uint32_t i = 0; i < n; i++) {
		uint32_t ord = rd_u32(r);
		if (r->bad || ord >= L->n_groups)
			return snap_bad(L, r->off, "a cluster naming an unknown group");
		int rc = db ? rt_cluster_add_member(db, name, L->gidx[ord]) : 0;
		if (rc)
			return rc;
	}
	return 0;
}

static int snap_live(struct route_db *db, struct snap_load *L, struct snap_rd *r)
{
	struct regbody body;
	struct route_broker_reg reg;
	struct route_live *l;

	memset(&reg, 0, sizeof reg);
	memset(&body, 0, sizeof body);
	reg.cluster = rd_str(r);
	reg.addr = rd_str(r);
	if (rd_u8(r))
		reg.ha_addr = rd_str(r);
	reg.timeout_ms = (int64_t)rd_u64(r);
	body.dv.counter = (int64_t)rd_u64(r);
	body.dv.timestamp = (int64_t)rd_u64(r);
	body.dv.state_version = (int64_t)rd_u64(r);
	uint64_t age = rd_u64(r);
	uint32_t hint = rd_u32(r);
	if (r->bad || reg.timeout_ms <= 0 || age > (uint64_t)INT64_MAX / 4 ||
	    (hint != SNAP_NONE && hint >= L->n_groups))
		return snap_bad(L, r->off, "a broker record that does not hold together");
	if (!db) {
		if (reg.timeout_ms > L->max_timeout)
			L->max_timeout = reg.timeout_ms;
		return 0;
	}
	/* silent for its age when written and for the time since: it keeps
	 * what is left of its timeout, and expires like any other */
	uint64_t silent = age + (L->now_wall_ms > L->written_ms ? L->now_wall_ms - L->written_ms : 0);
	if (silent > (uint64_t)reg.timeout_ms)
		L->live_expired++;
	reg.body = &body;
	reg.conn_id = 0; /* tied to no connection */
	int rc = rt_live_prepare(db, &reg, &l);
	if (rc)
		return rc;
	if (l)
		l->restored = true;
	rt_live_commit(db, &reg, l, hint == SNAP_NONE ? UINT32_MAX : L->gidx[hint], route_now_ms() - silent, 0);
	return 0;
}

static int snap_filter(struct route_db *db, struct snap_load *L, struct snap_rd *r)
{
	const char *cluster = rd_str(r), *addr = rd_str(r);
	uint32_t n = rd_u32(r);
	const char *small[16], **list;
	int rc = 0;

	if (r->bad || n == 0 || n > SNAP_MAX_LIST || n > r->n / 5)
		return snap_bad(L, r->off, "a filter-server record that does not hold together");
	list = n <= 16 ? small : rt_malloc(n * sizeof(*list));
	if (!list)
		return RMQNS_ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		list[i] = rd_str(r);
	if (r->bad)
		rc = snap_bad(L, r->off, "a filter-server record that does not hold together");
	else if (db)
		rc = rt_filter_set(db, cluster, addr, list, n);
	if (list != small)
		free(list);
	return rc;
}

static int snap_mapping(struct route_db *db, struct snap_load *L, struct snap_rd *r)
{
	struct regbody_mapping m;
	struct regbody rb;
	int rc = 0;

	memset(&m, 0, sizeof m);
	m.key = rd_str(r);
	uint8_t f = rd_u8(r);
	if (f & SM_BNAME)
		m.bname = rd_str(r);
	if (f & SM_SCOPE)
		m.scope = rd_str(r);
	if (f & SM_TOPIC)
		m.topic = rd_str(r);
	m.dirty = (f & SM_DIRTY) != 0;
	m.has_ids = (f & SM_IDS) != 0;
	m.epoch = (int64_t)rd_u64(r);
	m.total_queues = (int32_t)rd_u32(r);
	m.n_ids = rd_u32(r);
	if (r->bad || f >= 32 || !m.bname || m.n_ids > SNAP_MAX_LIST || (size_t)m.n_ids * 8 != r->n - r->off)
		return snap_bad(L, r->off, "a static-topic mapping that does not hold together");
	if (!db)
		return 0;
	if (m.n_ids) {
		m.ids = rt_malloc(m.n_ids * sizeof(*m.ids));
		if (!m.ids)
			return RMQNS_ENOMEM;
		for (uint32_t i = 0; i < m.n_ids; i++) {
			m.ids[i][0] = (int32_t)rd_u32(r);
			m.ids[i][1] = (int32_t)rd_u32(r);
		}
	}
	/* one at a time: the merge is quadratic in what it is given */
	memset(&rb, 0, sizeof rb);
	rb.n_mappings = 1;
	rb.mappings = &m;
	rc = rt_maps_merge(db, &rb);
	free(m.ids);
	return rc;
}

static int snap_tq(struct snap_load *L, struct snap_rd *r)
{
	uint32_t cap = rd_u32(r), n = rd_u32(r);

	if (r->bad || !map_cap_ok(cap) || n == 0 || n > L->n_groups || (size_t)n * 20 != r->n - r->off)
		return snap_bad(L, r->off, "a queue-entry list that does not hold together");
	size_t off = (size_t)(r->p - L->p) + r->off;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t ord = rd_u32(r);
		r->off += 16;
		if (ord >= L->n_groups || !L->gpresent[ord])
			return snap_bad(L, r->off, "a queue entry naming an unknown group");
		/* each group once: marked with this list's number */
		if (L->gseen[ord] == L->n_tq + 1)
			return snap_bad(L, r->off, "a queue-entry list naming a group twice");
		L->gseen[ord] = L->n_tq + 1;
	}
	if (L->n_tq == L->tq_cap) {
		uint32_t nc = L->tq_cap ? L->tq_cap * 2 : 64;
		struct snap_tqref *t = realloc(L->tq, nc * sizeof(*t));
		if (!t)
			return RMQNS_ENOMEM;
		L->tq = t;
		L->tq_cap = nc;
	}
	L->tq[L->n_tq++] = (struct snap_tqref){ cap, n, off };
	return 0;
}

static struct route_qd snap_qd(const struct snap_load *L, const struct snap_tqref *q, uint32_t i)
{
	const uint8_t *e = L->p + q->off + (size_t)i * 20;
	struct route_qd qd;

	qd.gidx = L->gidx[le32(e)];
	qd.perm = (int32_t)le32(e + 4);
	qd.read_queues = (int32_t)le32(e + 8);
	qd.write_queues = (int32_t)le32(e + 12);
	qd.sysflag = (int32_t)le32(e + 16);
	return qd;
}

/* The topic's entries as put one by one, then the stored order and map
 * capacity if they differ (a map that once held more keeps its size). */
static int snap_topic_apply(struct route_db *db, const struct snap_load *L, const char *name,
			    const struct snap_tqref *q)
{
	struct route_topic *t;
	int rc;

	if (rt_topic_find(db, name))
		return 0; /* twice in a walk that met a table resize: the first wins */
	for (uint32_t i = 0; i < q->n; i++) {
		struct route_qd qd = snap_qd(L, q, i);
		if ((rc = rt_topic_put_entry(db, name, &qd)) != 0)
			return rc;
	}
	t = rt_topic_find(db, name);
	bool same = t->tq->map_cap == q->map_cap;
	for (uint32_t i = 0; same && i < q->n; i++) {
		struct route_qd qd = snap_qd(L, q, i);
		same = memcmp(&t->tq->e[i], &qd, sizeof qd) == 0;
	}
	if (same)
		return 0;
	struct route_tq *ntq = rt_tq_alloc(q->n, q->map_cap);
	if (!ntq)
		return RMQNS_ENOMEM;
	for (uint32_t i = 0; i < q->n; i++)
		ntq->e[i] = snap_qd(L, q, i);
	rt_topic_publish_tq(db, t, ntq);
	return 0;
}

static int snap_topic(struct route_db *db, struct snap_load *L, struct snap_rd *r)
{
	const char *name = rd_str(r);
	uint32_t ord = rd_u32(r);

	if (r->bad || r->off != r->n || !name[0] || ord >= L->n_tq)
		return snap_bad(L, r->off, "a topic record that does not hold together");
	if (!db) {
		L->n_topics++;
		return 0;
	}
	int rc = snap_topic_apply(db, L, name, &L->tq[ord]);
	rt_read_breathe(db, (uint32_t)L->n_topics++);
	return rc;
}

/* Phase of each kind: records come in non-decreasing phase. */
static int snap_phase(uint8_t k)
{
	static const int ph[] = { [SK_GROUP] = 1, [SK_CLUSTER] = 2, [SK_LIVE] = 3, [SK_FILTER] = 4,
				  [SK_MAPPING] = 5, [SK_TQ] = 6, [SK_TOPIC] = 6, [SK_END] = 7 };
	return k >= SK_GROUP && k <= SK_END ? ph[k] : 0;
}

/* One pass over the records: with db NULL it checks them and counts, with
 * db it applies them (every check passed before). */
static int snap_pass(struct route_db *db, struct snap_load *L)
{
	struct snap_rd top = { L->p, L->len, ROUTE_SNAPSHOT_HEADER, false };
	int phase = 0, rc = 0;
	uint32_t groups = 0;
	bool end = false;

	L->n_tq = 0;
	L->n_topics = 0;
	L->n_live = 0;
	while (top.off < top.n && rc == 0) {
		size_t at = top.off;
		uint8_t kind = rd_u8(&top);
		uint32_t plen = rd_u32(&top);
		const uint8_t *pl = rd_take(&top, plen);
		int ph = snap_phase(kind);
		if (!pl)
			return snap_bad(L, at, "a record cut short");
		if (end || ph == 0 || ph < phase)
			return snap_bad(L, at, "a record out of place");
		phase = ph;
		struct snap_rd r = { pl, plen, 0, false };
		switch (kind) {
		case SK_GROUP: {
			struct snap_group g;
			if (!snap_group_read(&r, &g) || !snap_addrs_check(&g))
				return snap_bad(L, at, "a broker group that does not hold together");
			if (db)
				rc = snap_apply_group(db, L, groups, &g);
			else if (groups < L->n_groups) {
				L->gpresent[groups] = (g.flags & SG_PRESENT) != 0;
				L->gnames[groups] = g.name;
			}
			groups++;
			break;
		}
		case SK_CLUSTER:
			rc = snap_cluster(db, L, &r);
			break;
		case SK_LIVE:
			rc = snap_live(db, L, &r);
			L->n_live++;
			break;
		case SK_FILTER:
			rc = snap_filter(db, L, &r);
			break;
		case SK_MAPPING:
			rc = snap_mapping(db, L, &r);
			break;
		case SK_TQ:
			rc = db ? (L->n_tq++, 0) : snap_tq(L, &r);
			break;
		case SK_TOPIC:
			rc = snap_topic(db, L, &r);
			break;
		case SK_END:
			if (rd_u64(&r) != groups || rd_u64(&r) != L->n_live || rd_u64(&r) != L->n_topics ||
			    r.off != r.n)
				return snap_bad(L, at, "counts that do not match the records");
			end = true;
			break;
		}
	}
	if (rc == 0 && !end)
		return snap_bad(L, top.off, "no end record (truncated)");
	return rc;
}

static int snap_name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Each group name once (the tables intern them). */
static int snap_names_unique(struct snap_load *L)
{
	qsort(L->gnames, L->n_groups, sizeof(*L->gnames), snap_name_cmp);
	for (uint32_t i = 1; i < L->n_groups; i++)
		if (strcmp(L->gnames[i - 1], L->gnames[i]) == 0) {
			snprintf(L->err, L->errlen, "broker group %.200s twice", L->gnames[i]);
			return RMQNS_EINVAL;
		}
	return 0;
}

/* The groups' count, read ahead: the check pass sizes its tables by it. */
static int snap_count_groups(struct snap_load *L)
{
	struct snap_rd top = { L->p, L->len, ROUTE_SNAPSHOT_HEADER, false };

	L->n_groups = 0;
	while (top.off < top.n) {
		uint8_t kind = rd_u8(&top);
		uint32_t plen = rd_u32(&top);
		if (!rd_take(&top, plen) || kind != SK_GROUP)
			break;
		if (++L->n_groups > ROUTE_MAX_GROUPS)
			return snap_bad(L, top.off, "more groups than the tables hold");
	}
	return 0;
}

static int snap_header(struct snap_load *L)
{
	struct snap_rd r = { L->p, L->len, 0, false };
	const uint8_t *magic = rd_take(&r, 8);
	uint32_t version = rd_u32(&r), crc = rd_u32(&r);
	uint64_t content = rd_u64(&r);

	L->written_ms = rd_u64(&r);
	if (r.bad || memcmp(magic, snap_magic, sizeof snap_magic) != 0) {
		snprintf(L->err, L->errlen, "not a route snapshot (%zu bytes)", L->len);
		return RMQNS_EPROTO;
	}
	if (version != ROUTE_SNAPSHOT_VERSION) {
		snprintf(L->err, L->errlen, "format version %u, this build reads %u", version,
			 ROUTE_SNAPSHOT_VERSION);
		return RMQNS_EPROTO;
	}
	if (content != L->len - ROUTE_SNAPSHOT_HEADER) {
		snprintf(L->err, L->errlen, "%llu content bytes announced, %zu there (truncated?)",
			 (unsigned long long)content, L->len - ROUTE_SNAPSHOT_HEADER);
		return RMQNS_EINVAL;
	}
	uint32_t c = snap_crc(L->p, L->len);
	if (c != crc) {
		snprintf(L->err, L->errlen, "CRC32 mismatch (stored %08x, content %08x)", crc, c);
		return RMQNS_ECRC;
	}
	return 0;
}

int route_snapshot_load_bytes(struct route_db *db, const uint8_t *p, size_t len, uint64_t now_wall_ms,
			      struct route_snapshot_info *info, char *err, size_t errlen)
{
	struct snap_load L = { .p = p, .len = len, .now_wall_ms = now_wall_ms, .err = err, .errlen = errlen };
	int rc;

	memset(info, 0, sizeof(*info));
	if (errlen)
		err[0] = 0;
	if ((rc = snap_header(&L)) != 0 || (rc = snap_count_groups(&L)) != 0)
		return rc;
	L.gpresent = calloc(L.n_groups + 1, 1);
	L.gidx = calloc(L.n_groups + 1, sizeof(*L.gidx));
	L.gnames = calloc(L.n_groups + 1, sizeof(*L.gnames));
	L.gseen = calloc(L.n_groups + 1, sizeof(*L.gseen));
	if (!L.gpresent || !L.gidx || !L.gnames || !L.gseen) {
		rc = RMQNS_ENOMEM;
		goto out;
	}
	if ((rc = snap_pass(NULL, &L)) != 0 || (rc = snap_names_unique(&L)) != 0)
		goto out;
	info->age_ms = now_wall_ms > L.written_ms ? now_wall_ms - L.written_ms : 0;
	/* past the longest timeout every broker it names has expired; with
	 * none, the default timeout bounds it */
	int64_t longest = L.max_timeout ? L.max_timeout : ROUTE_BROKER_TIMEOUT_MS;
	if (info->age_ms > (uint64_t)longest) {
		snprintf(err, errlen, "written %llu ms ago, past the longest broker timeout (%lld ms)",
			 (unsigned long long)info->age_ms, (long long)longest);
		rc = RMQNS_ENOTFOUND;
		goto out;
	}
	rcu_read_lock();
	rc = snap_pass(db, &L);
	/* slots interned for nothing (no cluster, no topic) go as usual */
	for (uint32_t i = 0; rc == 0 && i < L.n_groups; i++)
		rt_group_maybe_retire(db, L.gidx[i]);
	rcu_read_unlock();
	if (rc == 0) {
		rt_topics_fit(db);
		info->groups = L.n_groups;
		info->brokers = (uint32_t)L.n_live;
		info->topics = L.n_topics;
		/* those past their timeout go now, through the usual expiry */
		info->expired = L.live_expired ? (uint32_t)route_apply_expire(db, route_now_ms()) : 0;
		__atomic_store_n(&db->warm, true, __ATOMIC_RELEASE);
	} else if (rc == RMQNS_ENOMEM) {
		snprintf(err, errlen, "out of memory");
	}
out:
	free(L.gseen);
	free(L.gnames);
	free(L.gpresent);
	free(L.gidx);
	free(L.tq);
	return rc;
}
