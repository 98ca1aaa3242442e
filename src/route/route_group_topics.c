/* What a change to one broker group does to its topics, in proportion to
 * the group's topics (the group -> topics index): a leaving group's queue
 * entries removed in slices between other work, so a broker with 40,000
 * topics leaving never holds up a registration; a group's write
 * permission; its topics' cached answers. Registrar only. */
#include <stdlib.h>
#include <string.h>

#include "route_writer.h"
#include "rmqns/err.h"
#include "rmqns/log.h"

/* Removes up to *budget of gidx's entries; 0 when all are gone, 1 when
 * the budget ran out, or RMQNS_ENOMEM. */
static int reap_group(struct route_db *db, uint32_t gidx, uint32_t *budget)
{
	struct route_gpriv *p = &db->gpriv[gidx];
	struct route_group *g = db->gdir[gidx];
	int rc;

	if (p->cluster_refs && g->cluster && (rc = rt_cluster_remove_member(db, g->cluster, gidx)) != 0)
		return rc;
	/* Removing a member shifts the run back into its slot: look at the
	 * same slot again until it is empty. */
	for (uint32_t i = 0; i < p->topics.cap;) {
		uint32_t tid = p->topics.slots[i];
		if (tid == RT_ID_NONE) {
			i++;
			continue;
		}
		if (*budget == 0)
			return 1;
		struct route_topic *t = rt_topic_by_id(db, tid);
		if (!t) {
			rt_idset_del(&p->topics, tid); /* cannot happen: keep going */
			continue;
		}
		if ((rc = rt_topic_remove_entry(db, t, gidx)) != 0)
			return rc;
		(*budget)--;
	}
	return 0;
}

bool rt_group_reap(struct route_db *db, uint32_t budget)
{
	int rc = 0;

	if (db->dead_head == RT_ID_NONE)
		return false;
	if (!db->reap_started_ms)
		db->reap_started_ms = route_now_ms();

	rcu_read_lock();
	while (db->dead_head != RT_ID_NONE) {
		uint32_t gidx = db->dead_head;
		rc = reap_group(db, gidx, &budget);
		if (rc != 0)
			break;
		db->dead_head = db->gpriv[gidx].next_dead;
		db->gpriv[gidx].on_dead_list = 0;
		rt_group_maybe_retire(db, gidx);
	}
	rcu_read_unlock();
	if (rc == RMQNS_ENOMEM)
		log_error("route: out of memory removing the topics of a broker group that left; "
			  "they stay hidden and are retried");
	if (!rcu_read_ongoing())
		rt_topics_fit(db);
	if (db->dead_head != RT_ID_NONE)
		return true;
	log_info("route: the queue entries of the broker groups that left are removed (%llu ms)",
		 (unsigned long long)(route_now_ms() - db->reap_started_ms));
	db->reap_started_ms = 0;
	return false;
}

/* ---- per-group changes, in proportion to the group's topics ---- */

int rt_group_perm_prepare(struct route_db *db, uint32_t gidx, bool add, bool only_if_writable,
			  struct rt_perm_change *pc)
{
	struct rt_idset *s = &db->gpriv[gidx].topics;
	int count = 0;

	memset(pc, 0, sizeof(*pc));
	if (s->n) {
		pc->t = rt_malloc(s->n * sizeof(*pc->t));
		pc->tq = rt_malloc(s->n * sizeof(*pc->tq));
		if (!pc->t || !pc->tq) {
			rt_group_perm_discard(pc);
			return RMQNS_ENOMEM;
		}
	}
	for (uint32_t k = 0; k < s->cap; k++) {
		struct route_topic *t = s->slots[k] == RT_ID_NONE ? NULL : rt_topic_by_id(db, s->slots[k]);
		if (!t)
			continue;
		struct route_tq *tq = t->tq, *ntq;
		int i = rt_tq_find(tq, gidx);
		int32_t perm;
		if (i < 0)
			continue;
		if (only_if_writable && !(tq->e[i].perm & ROUTE_PERM_WRITE))
			continue;
		count++;
		perm = add ? (ROUTE_PERM_READ | ROUTE_PERM_WRITE) : (tq->e[i].perm & ~ROUTE_PERM_WRITE);
		if (perm == tq->e[i].perm)
			continue;
		ntq = rt_tq_alloc(tq->n, tq->map_cap);
		if (!ntq) {
			rt_group_perm_discard(pc);
			return RMQNS_ENOMEM;
		}
		memcpy(ntq->e, tq->e, tq->n * sizeof(tq->e[0]));
		ntq->e[i].perm = perm;
		pc->t[pc->n] = t;
		pc->tq[pc->n++] = ntq;
	}
	return count;
}

void rt_group_perm_commit(struct route_db *db, struct rt_perm_change *pc)
{
	for (uint32_t i = 0; i < pc->n; i++)
		rt_topic_publish_tq(db, pc->t[i], pc->tq[i]);
	pc->n = 0;
	rt_group_perm_discard(pc);
}

void rt_group_perm_discard(struct rt_perm_change *pc)
{
	for (uint32_t i = 0; i < pc->n; i++)
		free(pc->tq[i]);
	free(pc->t);
	free(pc->tq);
	memset(pc, 0, sizeof(*pc));
}

int rt_group_set_perm(struct route_db *db, uint32_t gidx, bool add, bool only_if_writable)
{
	struct rt_perm_change pc;
	int count = rt_group_perm_prepare(db, gidx, add, only_if_writable, &pc);

	if (count >= 0)
		rt_group_perm_commit(db, &pc);
	return count;
}
