/* A consistency check of the whole registry, for tests and fuzzers: run
 * on the registrar thread (or a test standing in for it) while nothing
 * else writes. It recounts everything the registrar keeps incrementally. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "route_writer.h"
#include "rmqns/err.h"

static int fail(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return RMQNS_EINVAL;
}

static bool idset_has(const struct rt_idset *s, uint32_t id)
{
	for (uint32_t i = 0; i < s->cap; i++)
		if (s->slots[i] == id)
			return true;
	return false;
}

int rt_check(struct route_db *db, char *err, size_t len)
{
	uint32_t hwm = db->groups_high_water;
	uint32_t *refs = calloc((size_t)hwm + 1, sizeof(*refs));
	uint32_t *crefs = calloc((size_t)hwm + 1, sizeof(*crefs));
	uint64_t topics = 0, entries = 0, dead = 0, digest = 0;
	struct cds_lfht_iter it;
	struct route_topic *t;
	int rc = 0;

	if (!refs || !crefs) {
		free(refs);
		free(crefs);
		return RMQNS_ENOMEM;
	}
	rcu_read_lock();
	cds_lfht_for_each_entry(db->topics, &it, t, node) {
		const struct route_tq *tq = t->tq;
		topics++;
		digest += rt_names_term(rt_hash_str(t->name), RT_NAMES_TOPIC);
		if (rt_topic_by_id(db, t->tid) != t) {
			rc = fail(err, len, "topic %s: directory slot %u does not hold it", t->name, t->tid);
			goto out;
		}
		if (tq->n == 0) {
			rc = fail(err, len, "topic %s has no queue entry", t->name);
			goto out;
		}
		for (uint32_t i = 0; i < tq->n; i++) {
			uint32_t g = tq->e[i].gidx;
			struct route_group *grp = g < hwm ? db->gdir[g] : NULL;
			if (!grp) {
				rc = fail(err, len, "topic %s names empty group slot %u", t->name, g);
				goto out;
			}
			for (uint32_t k = 0; k < i; k++)
				if (tq->e[k].gidx == g) {
					rc = fail(err, len, "topic %s names group %s twice", t->name, grp->name);
					goto out;
				}
			if (!idset_has(&db->gpriv[g].topics, t->tid)) {
				rc = fail(err, len, "topic %s missing from the index of %s", t->name, grp->name);
				goto out;
			}
			if (grp->dead && !db->gpriv[g].on_dead_list) {
				rc = fail(err, len, "topic %s keeps an entry of dead group %s, which nobody removes",
					  t->name, grp->name);
				goto out;
			}
			dead += grp->dead;
			refs[g]++;
			entries++;
		}
	}
	if (topics != db->n_topics || entries != db->n_entries || dead != db->dead_entries) {
		rc = fail(err, len, "counts: %llu topics (kept %llu), %llu entries (kept %llu), %llu dead (kept %llu)",
			  (unsigned long long)topics, (unsigned long long)db->n_topics,
			  (unsigned long long)entries, (unsigned long long)db->n_entries,
			  (unsigned long long)dead, (unsigned long long)db->dead_entries);
		goto out;
	}
	struct route_live *l;
	cds_lfht_for_each_entry(db->live, &it, l, node)
		digest += rt_names_term(l->hash, RT_NAMES_LIVE);
	if (digest != db->names_digest) {
		rc = fail(err, len, "names digest %llx, kept %llx", (unsigned long long)digest,
			  (unsigned long long)db->names_digest);
		goto out;
	}
	uint64_t lists = 0, refs_sum = 0;
	for (uint32_t b = 0; b < db->tq_buckets; b++)
		for (const struct route_tq *q = db->tq_table[b]; q; q = q->next) {
			lists++;
			refs_sum += q->refs;
			if (q->refs == 0) {
				rc = fail(err, len, "an interned entry list no topic uses");
				goto out;
			}
		}
	if (db->tq_buckets && (lists != db->tq_count || refs_sum != topics)) {
		rc = fail(err, len, "entry lists: %llu interned (kept %u), %llu uses for %llu topics",
			  (unsigned long long)lists, db->tq_count, (unsigned long long)refs_sum,
			  (unsigned long long)topics);
		goto out;
	}
	for (uint32_t i = 0; db->clusters && i < db->clusters->n; i++) {
		const struct route_cluster *c = db->clusters->c[i];
		if (c->n == 0) {
			rc = fail(err, len, "cluster %s has no member", c->name);
			goto out;
		}
		for (uint32_t m = 0; m < c->n; m++) {
			if (c->gidx[m] >= hwm || !db->gdir[c->gidx[m]]) {
				rc = fail(err, len, "cluster %s names empty group slot %u", c->name, c->gidx[m]);
				goto out;
			}
			crefs[c->gidx[m]]++;
		}
	}
	for (uint32_t g = 0; g < hwm; g++) {
		const struct route_group *grp = db->gdir[g];
		const struct route_gpriv *p = &db->gpriv[g];
		if (!grp) {
			if (p->topics.n || refs[g]) {
				rc = fail(err, len, "empty group slot %u still has topics", g);
				goto out;
			}
			continue;
		}
		if (p->topics.n != refs[g] || p->cluster_refs != crefs[g]) {
			rc = fail(err, len, "group %s: index holds %u topics (%u name it), %u cluster refs (%u counted)",
				  grp->name, p->topics.n, refs[g], p->cluster_refs, crefs[g]);
			goto out;
		}
		bool indexed = rt_group_lookup(db, grp->name) == g;
		if (grp->dead == indexed) {
			rc = fail(err, len, "group %s: %s but %sin the name index", grp->name,
				  grp->dead ? "dead" : "living", indexed ? "" : "not ");
			goto out;
		}
		/* A present group may have no address: a broker's refused first
		 * registration (one topic) leaves its group with an empty map,
		 * as Java's brokerAddrTable does. */
	}
out:
	rcu_read_unlock();
	free(refs);
	free(crefs);
	return rc;
}
