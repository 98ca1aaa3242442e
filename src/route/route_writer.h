/* The registrar's side of the route module, shared by its files: each
 * declares here what the others may call. Registrar thread only (or a test
 * thread standing in for it), inside a read-side section unless a function
 * says otherwise. Private to src/route/. */
#ifndef RMQNS_ROUTE_WRITER_H
#define RMQNS_ROUTE_WRITER_H

#include "route_priv.h"

/* ---- route_reclaim.c: frees after a grace period ---- */

/* Runs cb(head) once no reader can hold the object (call_rcu; ThreadSanitizer
 * builds keep it until the teardown, see route_reclaim.c). */
void rt_defer_free(struct route_db *db, struct rcu_head *head, void (*cb)(struct rcu_head *));

/* ---- route_idset.c: the group -> topics index ---- */

int rt_idset_add(struct rt_idset *s, uint32_t id);
bool rt_idset_del(struct rt_idset *s, uint32_t id);
void rt_idset_free(struct rt_idset *s);

/* ---- route_group.c: group slots, the name index, dead groups ---- */

/* The slot of `name`, interning it (not in brokerAddrTable) when new. */
int rt_group_intern(struct route_db *db, const char *name, uint32_t *out);
/* A private copy of a published group, to change and commit. */
struct route_group *rt_group_clone(const struct route_group *g);
int rt_group_addr_index(const struct route_group *g, int64_t id);
void rt_group_remove_addr_at(struct route_group *g, uint32_t i);
/* Publishes ng in place of its slot's group when it differs, and
 * invalidates the group's topics (unless invalidate is false); frees
 * whichever is not kept. */
int rt_group_commit(struct route_db *db, struct route_group *ng, bool invalidate);
/* The group leaves brokerAddrTable with its last address: from now on
 * readers see neither it nor its queue entries; the entries go later in
 * rt_group_reap. Allocates nothing. */
void rt_group_kill(struct route_db *db, uint32_t gidx);
/* Frees the slot of a group that is gone and named by nothing. */
void rt_group_maybe_retire(struct route_db *db, uint32_t gidx);
/* Invalidates the cached routes of every topic of gidx. */
void rt_group_invalidate_topics(struct route_db *db, uint32_t gidx);

/* ---- route_group_topics.c: a group's changes across its topics ---- */

/* Removes up to `budget` queue entries of dead groups; returns true while
 * some remain. Outside any read-side section. */
bool rt_group_reap(struct route_db *db, uint32_t budget);
/* WIPE (add=false) or ADD the write bits of gidx's entries, all or
 * nothing; returns the count touched or RMQNS_ENOMEM. */
int rt_group_set_perm(struct route_db *db, uint32_t gidx, bool add, bool only_if_writable);
/* The same in two steps: every new entry list allocated first (nothing
 * changes when that fails), then published, which cannot fail. */
struct rt_perm_change {
	uint32_t n;
	struct route_topic **t;
	struct route_tq **tq;
};
int rt_group_perm_prepare(struct route_db *db, uint32_t gidx, bool add, bool only_if_writable,
			  struct rt_perm_change *pc);
void rt_group_perm_commit(struct route_db *db, struct rt_perm_change *pc);
void rt_group_perm_discard(struct rt_perm_change *pc);

/* ---- route_topic.c: topics and their queue entries ---- */

int rt_tq_find(const struct route_tq *tq, uint32_t gidx);
/* Sets the topic's entry for qd->gidx (creating the topic); a no-op when
 * an equal entry is there. */
int rt_topic_put_entry(struct route_db *db, const char *name, const struct route_qd *qd);
/* Drops the topic's entry for gidx, and the topic when none remain. */
int rt_topic_remove_entry(struct route_db *db, struct route_topic *t, uint32_t gidx);
/* Unlinks t (with its entries); RMQNS_ENOMEM, nothing changed, when no
 * room to retire it could be had. */
int rt_topic_unlink(struct route_db *db, struct route_topic *t);
/* Replaces the entries of t with the list ntq (not yet interned). */
void rt_topic_publish_tq(struct route_db *db, struct route_topic *t, struct route_tq *ntq);

/* ---- route_arena.c: topic records and their reclamation ---- */

/* A zeroed record, with its id set, for a topic whose name has name_len
 * bytes. */
struct route_topic *rt_topic_alloc(struct route_db *db, size_t name_len);
/* The record with id tid (a linked topic's, or one still retired). */
struct route_topic *rt_topic_by_id(struct route_db *db, uint32_t tid);
/* A record never linked (a creation that failed half-way). */
void rt_topic_free_unlinked(struct route_db *db, struct route_topic *t);
/* Makes room for one more retired topic: call before unlinking one, so
 * that the unlink itself cannot fail. */
int rt_topic_retire_reserve(struct route_db *db);
/* An unlinked topic, freed once no reader can hold it. */
void rt_topic_retire(struct route_db *db, struct route_topic *t);
/* Starts the grace period of the topics retired so far. */
void rt_topic_retire_flush(struct route_db *db);
/* Frees the records of batches whose grace period has passed. */
void rt_topic_reclaim(struct route_db *db);
/* Teardown: every chunk at once. */
void rt_arena_free_all(struct route_db *db);

/* ---- route_queues.c: interned queue-entry lists ---- */

/* A fresh list to fill (free() it if it goes no further). */
struct route_tq *rt_tq_alloc(uint32_t n, uint32_t map_cap);
/* The table of interned lists, made with the db (RMQNS_ENOMEM). */
int rt_tq_table_init(struct route_db *db);
/* The shared list equal to cand (cand is freed) or cand itself, counted
 * once more; never fails. */
struct route_tq *rt_tq_intern(struct route_db *db, struct route_tq *cand);
/* One topic fewer points at tq: freed after a grace period with the last. */
void rt_tq_release(struct route_db *db, struct route_tq *tq);
/* Teardown: frees every list. */
void rt_tq_table_free(struct route_db *db);
/* Grows the topic table to fit; outside any read-side section. */
void rt_topics_fit(struct route_db *db);
/* Called with a running count i inside long loops: every so often leaves
 * the read-side section for a moment (see route_topic.c). */
void rt_read_breathe(struct route_db *db, uint32_t i);

/* ---- route_sets.c: clusters, filter servers, static-topic mappings ---- */

struct route_cluster *rt_cluster_find(struct route_clusters *cs, const char *name, uint32_t *pos);
int rt_cluster_add_member(struct route_db *db, const char *name, uint32_t gidx);
int rt_cluster_remove_member(struct route_db *db, const char *name, uint32_t gidx);
/* Stores (n > 0) or drops (n == 0) the filter-server list of (cluster, addr). */
int rt_filter_set(struct route_db *db, const char *cluster, const char *addr, const char *const *list,
		  uint32_t n);
/* Files the body's static-topic mappings. */
int rt_maps_merge(struct route_db *db, const struct regbody *rb);

/* ---- route_live.c: the live-broker table ---- */

/* A registration's live entry is allocated before anything changes
 * (*out NULL: the present one is refreshed in place) and published at the
 * end, which cannot fail; free(*out) if the registration goes no further.
 * topics_key: the key of the topic apply just made (0: none). */
int rt_live_prepare(struct route_db *db, const struct route_broker_reg *reg, struct route_live **out);
void rt_live_commit(struct route_db *db, const struct route_broker_reg *reg, struct route_live *l,
		    uint32_t gidx, uint64_t now_ms, uint64_t topics_key);
bool rt_live_remove(struct route_db *db, const char *cluster, const char *addr);

#endif
