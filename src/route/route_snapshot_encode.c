/* The route snapshot's encoding (route_snapshot.h, the format in
 * route_snapshot_format.h): the tables read lock-free like any reader,
 * one record a group, cluster, live broker, filter list, mapping,
 * queue-entry list and topic, within a deadline. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "route_snapshot_format.h"
#include "route_writer.h"
#include "rmqns/err.h"
#include "rmqns/metrics.h"
#include "rmqns/route_snapshot.h"

/* Topics encoded between two looks at the deadline. */
#define SNAP_DEADLINE_EVERY 4096u

uint64_t route_snapshot_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

struct snap_enc {
	struct buf *out;
	bool oom;
	size_t rec;            /* offset of the open record's length */
	uint32_t *gord;        /* gidx -> group ordinal, SNAP_NONE = not written */
	/* queue-entry lists written: pointer -> ordinal (open addressing) */
	const struct route_tq **tq_keys;
	uint32_t *tq_ords;
	uint32_t tq_cap, tq_n, tq_next;
	uint64_t n_groups, n_live, n_topics;
};

static void enc_bytes(struct snap_enc *e, const void *p, size_t n)
{
	if (!e->oom && buf_append(e->out, p, n) < 0)
		e->oom = true;
}

static void enc_u8(struct snap_enc *e, uint8_t v)
{
	enc_bytes(e, &v, 1);
}

static void enc_u32(struct snap_enc *e, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
	enc_bytes(e, b, 4);
}

static void enc_u64(struct snap_enc *e, uint64_t v)
{
	enc_u32(e, (uint32_t)v);
	enc_u32(e, (uint32_t)(v >> 32));
}

static void enc_str(struct snap_enc *e, const char *s)
{
	size_t n = strlen(s);
	enc_u32(e, (uint32_t)n);
	enc_bytes(e, s, n + 1);
}

static void enc_begin(struct snap_enc *e, enum snap_kind k)
{
	enc_u8(e, (uint8_t)k);
	e->rec = e->out->len;
	enc_u32(e, 0);
}

static void enc_end(struct snap_enc *e)
{
	if (e->oom)
		return;
	uint32_t n = (uint32_t)(e->out->len - e->rec - 4);
	uint8_t *p = e->out->data + e->rec;
	p[0] = (uint8_t)n;
	p[1] = (uint8_t)(n >> 8);
	p[2] = (uint8_t)(n >> 16);
	p[3] = (uint8_t)(n >> 24);
}

static void enc_groups(struct snap_enc *e, struct route_db *db)
{
	uint32_t hwm = __atomic_load_n(&db->groups_high_water, __ATOMIC_ACQUIRE);

	for (uint32_t i = 0; i < hwm; i++) {
		struct route_group *g = rt_group_visible(db, i);
		if (!g)
			continue;
		e->gord[i] = (uint32_t)e->n_groups++;
		enc_begin(e, SK_GROUP);
		enc_str(e, g->name);
		enc_u8(e, (uint8_t)((g->present ? SG_PRESENT : 0) | (g->acting_master ? SG_ACTING : 0) |
				    (g->zone ? SG_ZONE : 0)));
		if (g->present)
			enc_str(e, g->cluster ? g->cluster : "");
		if (g->zone)
			enc_str(e, g->zone);
		enc_u32(e, g->map_cap);
		enc_u32(e, g->n_addrs);
		for (uint32_t k = 0; k < g->n_addrs; k++) {
			enc_u64(e, (uint64_t)g->addrs[k].id);
			enc_str(e, g->addrs[k].addr);
		}
		enc_end(e);
	}
}

static void enc_clusters(struct snap_enc *e, struct route_db *db)
{
	struct route_clusters *cs = rt_deref(db->clusters);

	for (uint32_t i = 0; cs && i < cs->n; i++) {
		const struct route_cluster *c = cs->c[i];
		uint32_t n = 0;
		for (uint32_t k = 0; k < c->n; k++)
			n += e->gord[c->gidx[k]] != SNAP_NONE;
		enc_begin(e, SK_CLUSTER);
		enc_str(e, c->name);
		enc_u32(e, n);
		/* members that came after the groups were written are left out */
		for (uint32_t k = 0; k < c->n; k++)
			if (e->gord[c->gidx[k]] != SNAP_NONE)
				enc_u32(e, e->gord[c->gidx[k]]);
		enc_end(e);
	}
}

static void enc_live(struct snap_enc *e, struct route_db *db)
{
	uint64_t now = route_now_ms();
	struct cds_lfht_iter it;
	struct route_live *l;

	cds_lfht_for_each_entry(db->live, &it, l, node) {
		uint64_t last = __atomic_load_n(&l->last_ms, __ATOMIC_RELAXED);
		uint32_t hint = __atomic_load_n(&l->gidx, __ATOMIC_RELAXED);
		e->n_live++;
		enc_begin(e, SK_LIVE);
		enc_str(e, l->cluster);
		enc_str(e, l->addr);
		enc_u8(e, l->ha_addr != NULL);
		if (l->ha_addr)
			enc_str(e, l->ha_addr);
		enc_u64(e, (uint64_t)l->timeout_ms);
		enc_u64(e, (uint64_t)l->dv.counter);
		enc_u64(e, (uint64_t)l->dv.timestamp);
		enc_u64(e, (uint64_t)l->dv.state_version);
		enc_u64(e, (int64_t)(now - last) > 0 ? now - last : 0); /* its age */
		enc_u32(e, hint < ROUTE_MAX_GROUPS ? e->gord[hint] : SNAP_NONE);
		enc_end(e);
	}
}

static void enc_filters(struct snap_enc *e, struct route_db *db)
{
	struct route_filters *fs = rt_deref(db->filters);

	for (uint32_t i = 0; fs && i < fs->n; i++) {
		const struct route_filter *f = fs->f[i];
		enc_begin(e, SK_FILTER);
		enc_str(e, f->cluster);
		enc_str(e, f->addr);
		enc_u32(e, f->n);
		for (uint32_t k = 0; k < f->n; k++)
			enc_str(e, f->list[k]);
		enc_end(e);
	}
}

static void enc_maps(struct snap_enc *e, struct route_db *db)
{
	struct route_maps *ms = rt_deref(db->maps);

	for (uint32_t i = 0; ms && i < ms->n; i++) {
		const struct regbody_mapping *m = &ms->e[i]->m;
		enc_begin(e, SK_MAPPING);
		enc_str(e, ms->e[i]->topic);
		enc_u8(e, (uint8_t)((m->bname ? SM_BNAME : 0) | (m->scope ? SM_SCOPE : 0) | (m->topic ? SM_TOPIC : 0) |
				    (m->dirty ? SM_DIRTY : 0) | (m->has_ids ? SM_IDS : 0)));
		if (m->bname)
			enc_str(e, m->bname);
		if (m->scope)
			enc_str(e, m->scope);
		if (m->topic)
			enc_str(e, m->topic);
		enc_u64(e, (uint64_t)m->epoch);
		enc_u32(e, (uint32_t)m->total_queues);
		enc_u32(e, m->n_ids);
		for (uint32_t k = 0; k < m->n_ids; k++) {
			enc_u32(e, (uint32_t)m->ids[k][0]);
			enc_u32(e, (uint32_t)m->ids[k][1]);
		}
		enc_end(e);
	}
}

static uint32_t tq_slot(const struct snap_enc *e, const struct route_tq *tq)
{
	uint32_t h = (uint32_t)(((uintptr_t)tq >> 4) * 0x9E3779B1u);

	for (uint32_t i = h & (e->tq_cap - 1);; i = (i + 1) & (e->tq_cap - 1))
		if (!e->tq_keys[i] || e->tq_keys[i] == tq)
			return i;
}

static int tq_map_grow(struct snap_enc *e)
{
	uint32_t ocap = e->tq_cap, ncap = ocap ? ocap * 2 : 1024;
	const struct route_tq **ok = e->tq_keys;
	uint32_t *oo = e->tq_ords;

	e->tq_keys = calloc(ncap, sizeof(*e->tq_keys));
	e->tq_ords = malloc(ncap * sizeof(*e->tq_ords));
	if (!e->tq_keys || !e->tq_ords) {
		free(e->tq_keys);
		free(e->tq_ords);
		e->tq_keys = ok;
		e->tq_ords = oo;
		return RMQNS_ENOMEM;
	}
	e->tq_cap = ncap;
	for (uint32_t i = 0; i < ocap; i++)
		if (ok[i]) {
			uint32_t s = tq_slot(e, ok[i]);
			e->tq_keys[s] = ok[i];
			e->tq_ords[s] = oo[i];
		}
	free(ok);
	free(oo);
	return 0;
}

/* The ordinal of tq's list, written first if new; SNAP_NONE when none of
 * its entries names a group written (a topic then left out). An entry of a
 * group that left since, or came after the groups were written, is left
 * out: readers no longer show it, or the snapshot does not know it. */
static uint32_t enc_tq(struct snap_enc *e, struct route_db *db, const struct route_tq *tq)
{
	if (e->tq_n * 2 >= e->tq_cap && tq_map_grow(e) < 0) {
		e->oom = true;
		return SNAP_NONE;
	}
	uint32_t s = tq_slot(e, tq);
	if (e->tq_keys[s])
		return e->tq_ords[s];
	uint32_t n = 0;
	for (uint32_t i = 0; i < tq->n; i++)
		n += e->gord[tq->e[i].gidx] != SNAP_NONE && rt_group_visible(db, tq->e[i].gidx);
	e->tq_keys[s] = tq;
	e->tq_n++;
	e->tq_ords[s] = n ? e->tq_next++ : SNAP_NONE;
	if (!n)
		return SNAP_NONE;
	enc_begin(e, SK_TQ);
	enc_u32(e, tq->map_cap);
	enc_u32(e, n);
	for (uint32_t i = 0; i < tq->n; i++) {
		const struct route_qd *q = &tq->e[i];
		if (e->gord[q->gidx] == SNAP_NONE || !rt_group_visible(db, q->gidx))
			continue;
		enc_u32(e, e->gord[q->gidx]);
		enc_u32(e, (uint32_t)q->perm);
		enc_u32(e, (uint32_t)q->read_queues);
		enc_u32(e, (uint32_t)q->write_queues);
		enc_u32(e, (uint32_t)q->sysflag);
	}
	enc_end(e);
	return e->tq_ords[s];
}

static bool enc_past(const uint64_t *deadline_ns)
{
	uint64_t d = deadline_ns ? __atomic_load_n(deadline_ns, __ATOMIC_RELAXED) : 0;
	return d && metrics_now_ns() > d;
}

static int enc_topics(struct snap_enc *e, struct route_db *db, const uint64_t *deadline_ns)
{
	struct cds_lfht_iter it;
	struct route_topic *t;
	uint32_t seen = 0;

	cds_lfht_for_each_entry(db->topics, &it, t, node) {
		if (++seen % SNAP_DEADLINE_EVERY == 0 && enc_past(deadline_ns))
			return RMQNS_EAGAIN;
		uint32_t ord = enc_tq(e, db, rt_deref(t->tq));
		if (ord == SNAP_NONE)
			continue;
		e->n_topics++;
		enc_begin(e, SK_TOPIC);
		enc_str(e, t->name);
		enc_u32(e, ord);
		enc_end(e);
		if (e->oom)
			return RMQNS_ENOMEM;
	}
	return 0;
}

int route_snapshot_encode(struct route_db *db, uint64_t wall_ms, const uint64_t *deadline_ns, struct buf *out)
{
	struct snap_enc e = { .out = out };
	size_t start = out->len;
	int rc;

	e.gord = malloc(ROUTE_MAX_GROUPS * sizeof(*e.gord));
	if (!e.gord)
		return RMQNS_ENOMEM;
	memset(e.gord, 0xff, ROUTE_MAX_GROUPS * sizeof(*e.gord));
	enc_bytes(&e, snap_magic, sizeof snap_magic);
	enc_u32(&e, ROUTE_SNAPSHOT_VERSION);
	enc_u32(&e, 0);             /* CRC32, below */
	enc_u64(&e, 0);             /* content length, below */
	enc_u64(&e, wall_ms);
	/* One read-side section: every object met stays valid to the end.
	 * Brokers and groups first, topics last: a topic entry is never older
	 * than the broker state written before it (see route_snapshot_restore
	 * for why a newer one is harmless). */
	state_read_lock();
	enc_groups(&e, db);
	enc_clusters(&e, db);
	enc_live(&e, db);
	enc_filters(&e, db);
	enc_maps(&e, db);
	rc = enc_topics(&e, db, deadline_ns);
	state_read_unlock();
	enc_begin(&e, SK_END);
	enc_u64(&e, e.n_groups);
	enc_u64(&e, e.n_live);
	enc_u64(&e, e.n_topics);
	enc_end(&e);
	free(e.gord);
	free(e.tq_keys);
	free(e.tq_ords);
	if (!rc && e.oom)
		rc = RMQNS_ENOMEM;
	if (rc) {
		out->len = start;
		return rc;
	}
	uint8_t *h = out->data + start;
	uint64_t content = out->len - start - ROUTE_SNAPSHOT_HEADER;
	for (int i = 0; i < 8; i++)
		h[16 + i] = (uint8_t)(content >> (8 * i));
	uint32_t crc = snap_crc(h, out->len - start);
	for (int i = 0; i < 4; i++)
		h[12 + i] = (uint8_t)(crc >> (8 * i));
	return 0;
}
