/* Types shared by the route module's files: the RCU-published tables and
 * the registrar's private bookkeeping. Private to src/route/ (and the
 * route unit tests). Published objects are immutable; the exceptions are
 * written with atomics and say so. */
#ifndef RMQNS_ROUTE_PRIV_H
#define RMQNS_ROUTE_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <urcu.h>
#include <urcu/lfstack.h>
#include <urcu/rculfhash.h>

#include "rmqns/buf.h"
#include "rmqns/json_body.h"
#include "rmqns/race.h"
#include "rmqns/regbody.h"
#include "rmqns/route.h"

/* RCU pointer reads and publication. Acquire/release atomics order exactly
 * like rcu_dereference/rcu_assign_pointer on every target we build for,
 * and ThreadSanitizer understands them. */
#define rt_deref(p) __atomic_load_n(&(p), __ATOMIC_ACQUIRE)
#define rt_assign(p, v) __atomic_store_n(&(p), (v), __ATOMIC_RELEASE)
#define rt_load_relaxed(p) __atomic_load_n(&(p), __ATOMIC_RELAXED)
#define rt_store_relaxed(p, v) __atomic_store_n(&(p), (v), __ATOMIC_RELAXED)

/* The grace token of race.h (TSan builds also defer every free to the
 * teardown unless built with -DRMQNS_TSAN_RECLAIM, see route_apply.c). */
#define rt_tsan_reader_done() race_reader_done()
#define rt_tsan_before_free() race_grace_passed()

/* TSan builds keep replaced objects until teardown and a fixed topic table
 * (RT_TSAN_KEEP), unless built with -DRMQNS_TSAN_RECLAIM: then they free
 * through call_rcu and resize as production does, the grace token
 * standing for the grace period (the reclamation stage of CI). */
#ifdef RMQNS_TSAN_KEEP
#define RT_TSAN_KEEP 1
#endif

struct rt_str {
	char *s;
	uint32_t len;
};

struct route_addr {
	int64_t id;
	char *addr;
};

/* A broker group as published: immutable, replaced whole on any change.
 * present=false keeps an interned name that topics or cluster sets still
 * use after the group left brokerAddrTable. */
struct route_group {
	struct rcu_head rcu;
	struct route_db *db;     /* for the slot-retiring callback */
	uint32_t gidx;
	bool present;
	/* atomic, set once in place when the group leaves: readers then skip
	 * it and every queue entry naming it, while the registrar removes
	 * those entries in slices (route_group_topics.c) */
	uint8_t dead;
	bool acting_master;      /* enableActingMaster */
	uint32_t map_cap;        /* the Java HashMap capacity of the id map */
	uint32_t n_addrs;
	struct route_addr *addrs; /* in insertion order */
	int32_t name_hash;       /* Java hash of name */
	char *name;
	char *cluster;           /* NULL when not present */
	char *zone;              /* NULL when none */
	/* serialized pieces, per enum jw_form */
	struct rt_str bd[2];        /* the BrokerData object */
	struct rt_str bd_acting[2]; /* the same with its smallest id moved to 0;
				     * s NULL unless the rewrite can apply */
	struct rt_str qd_head[2];   /* {"brokerName":"<name>","perm": */
	struct rt_str name_json[2]; /* "<name>" */
};


/* One QueueData: 20 bytes, the group by index. */
struct route_qd {
	uint32_t gidx;
	int32_t perm;
	int32_t read_queues;
	int32_t write_queues;
	int32_t sysflag;
};

/* A topic's queue entries, in the order Java's HashMap lists them.
 * Immutable and shared: topics with equal entries (every topic a broker
 * registered with the same queues and permission) point at one list,
 * interned by the registrar (route_queues.c). */
struct route_tq {
	struct rcu_head rcu;
	uint32_t map_cap;        /* that HashMap's capacity */
	uint32_t n;
	/* registrar-private */
	uint32_t refs;           /* topics pointing here */
	uint32_t hash;           /* of map_cap, n and the entries */
	struct route_tq *next;   /* in the intern table's bucket */
	struct route_qd e[];
};

/* Cached route answer bytes. */
struct route_cache {
	struct cds_lfs_node retire;
	struct rcu_head rcu;
	uint32_t tgen;      /* topic generation it was built at */
	uint64_t ggen;      /* global generation it was built at */
	uint32_t len;
	uint32_t splice;    /* offset of "queueDatas": where orderTopicConf goes */
	uint8_t acting;     /* 0 = same for both acting settings, 1 = built
			     * without the rewrite, 2 = with it */
	uint8_t bytes[];
};

/* A topic: a record from the registrar's arena (route_arena.c), freed in
 * batches after a grace period, hence no RCU head of its own. */
struct route_topic {
	struct cds_lfht_node node;
	struct route_tq *tq;             /* published; never NULL while linked */
	struct route_cache *cache[2];    /* per form; installed by readers (CAS) */
	uint32_t gen;                    /* atomic: bumped on every change */
	uint32_t tid;                    /* registrar-private: its id (route_arena.c) */
	uint8_t hot;                     /* atomic: read since the last trim */
	char name[];                     /* right after: no padding before it */
};

/* A live broker: key (cluster, addr). last_ms is the one field written in
 * place (atomically, by any thread); the rest is fixed. */
struct route_live {
	struct cds_lfht_node node;
	struct rcu_head rcu;
	uint64_t last_ms;
	int64_t timeout_ms;
	struct data_version dv;
	uint64_t conn_id;
	uint64_t prev_conn_id;   /* registrar-private: the connection it came on before, 0 = none */
	/* restored from a route snapshot (conn_id 0): its DataVersion counts
	 * as changed, so the broker's next check sends a full registration */
	bool restored;
	uint64_t hash;
	/* registrar-private: what its last topic apply saw, to skip the next
	 * when nothing changed (see register_topics) */
	uint64_t topics_key;
	uint64_t topics_epoch;
	uint32_t gidx;           /* atomic: the group it registered in (a hint) */
	/* The body of the last registration applied in full on conn_id
	 * (route_apply.c, the identical-body shortcut). body_stamp is read by
	 * any thread (atomic, 0 = none); the rest is registrar-private. */
	uint64_t body_stamp;
	struct route_body_id body_id; /* bytes point into body_kept */
	uint32_t body_n_topics;
	uint64_t body_topics_fp;
	uint8_t body_kept[ROUTE_BODY_KEEP];
	char *ha_addr;
	char *cluster;
	char *addr;
};

struct route_cluster {
	struct rcu_head rcu;
	char *name;              /* in the same allocation */
	uint32_t n;
	uint32_t *gidx;          /* members, in insertion order */
};

struct route_clusters {
	struct rcu_head rcu;
	uint32_t n;
	struct route_cluster *c[]; /* immutable entries shared across snapshots */
};

struct route_filter {
	struct rcu_head rcu;     /* one allocation, strings inline */
	char *cluster;
	char *addr;
	uint32_t n;
	char **list;
};

struct route_filters {
	struct rcu_head rcu;
	uint32_t n;
	struct route_filter *f[];
};

/* One static-topic mapping, keyed (topic, bname). */
struct route_mapping {
	struct rcu_head rcu;
	char *topic;
	const char *bname;       /* the map key: the mapping's bname ("null" if none) */
	struct regbody_mapping m; /* owned copies of the strings and ids */
};

struct route_maps {
	struct rcu_head rcu;
	uint32_t n;
	struct route_mapping *e[]; /* sorted by (topic, bname) */
};

/* A set of topic ids (open addressing, linear probing, deletion by
 * backward shift): the group -> topics index. */
struct rt_idset {
	uint32_t *slots;         /* RT_ID_NONE = empty */
	uint32_t cap;            /* 0 or a power of two */
	uint32_t n;              /* written atomically: readers may count */
};
#define RT_ID_NONE UINT32_MAX

/* The name -> slot index, readable through RCU (GET_BROKER_MEMBER_GROUP
 * looks names up too). One node per interned, living name. */
struct route_gname {
	struct cds_lfht_node node;
	struct rcu_head rcu;
	uint32_t gidx;
	char name[];
};

/* Registrar-private, per gidx (readers may only count topics.n). */
struct route_gpriv {
	struct rt_idset topics;  /* topics with an entry for this group */
	struct route_gname *gname; /* its node in the name index; NULL once dead */
	uint32_t cluster_refs;   /* cluster sets naming it */
	uint32_t next_dead;      /* the dead list (RT_ID_NONE ends it) */
	uint32_t next_free;      /* the list of retired slots */
	uint8_t state;           /* RT_SLOT_* */
	uint8_t reusable;        /* atomic: set by the grace-period callback */
	uint8_t on_dead_list;
};

enum { RT_SLOT_FREE = 0, RT_SLOT_USED = 1, RT_SLOT_RETIRING = 2 };

/* Topic records above this size (a name past about 440 bytes) come from
 * malloc instead of the arena. */
#define RT_ARENA_MAX 512u
/* Topic records retired under one grace period. */
#define RT_TBATCH 1024u

struct rt_arena {
	uint8_t **chunks;            /* by the id's high bits; NULL = a freed big record's */
	uint32_t nchunks, cap;
	uint32_t *free_slots;        /* chunk slots of freed big records */
	uint32_t nfree_slots;
	uint32_t cur;                /* the chunk carved from now */
	bool has_cur;
	size_t used;
	struct arena_free *free[RT_ARENA_MAX / 8 + 1]; /* by size / 8 */
};

struct rt_tbatch;

struct route_db {
	struct cds_lfht *topics;
	struct cds_lfht *live;
	struct cds_lfht *gnames;     /* struct route_gname by name */
	struct route_group **gdir;   /* ROUTE_MAX_GROUPS published slots */
	uint32_t groups_high_water;              /* atomic: slots in use are below it */
	struct route_clusters *clusters;
	struct route_filters *filters;
	struct route_maps *maps;
	uint64_t ggen;           /* atomic: global cache generation */
	uint64_t lgen;           /* atomic: generation of the list answers (rt_lists_changed) */
	struct answer_cache *lists; /* the list answers (route_lists.c) */
	uint64_t cache_bytes;    /* atomic */
	uint64_t n_topics;       /* atomic (stats) */
	uint64_t n_entries;      /* atomic (stats) */
	uint32_t n_groups;       /* atomic (stats) */
	uint32_t n_live;         /* atomic (stats) */
	uint64_t names_digest;   /* atomic (stats): rt_names_term sum, see route_stats */
	size_t cache_max;
	struct cds_lfs_stack retired; /* cache entries readers replaced */
	uint64_t start_ms;
	uint64_t changes;        /* atomic: moved by every change (route_db_changes) */
	bool warm;               /* atomic: restored from a snapshot */
	/* Set once (atomically) by route_db_set_close_hook, read by expiry. */
	route_close_fn close_fn;
	void *close_arg;
	/* Set by route_db_set_notify_hook (atomically), read by the registrar. */
	route_notify_fn notify_fn;
	void *notify_arg;
	/* registrar-private */
	unsigned long topic_buckets; /* the topic table's size as last asked for */
	uint64_t topic_epoch;        /* bumped by every change of any topic's entries */
	struct route_gpriv *gpriv;   /* ROUTE_MAX_GROUPS entries */
	uint32_t trim_gidx, trim_slot; /* where the cache trim goes on */
	struct rt_arena arena;       /* topic records */
	struct rt_tbatch *tbatch;    /* topics unlinked since the last flush */
	struct cds_lfs_stack expired; /* batches past their grace period */
	struct route_tq **tq_table;  /* interned queue-entry lists */
	uint32_t tq_buckets, tq_count;
	uint32_t dead_head, dead_tail; /* groups whose entries are still being removed */
	uint32_t free_head, free_tail; /* retired slots, oldest first */
	uint64_t reap_started_ms;    /* when the removal under way began (0: none) */
	uint64_t dead_entries;       /* atomic (stats): entries of dead groups left */
	struct rt_deferred *deferred; /* ThreadSanitizer builds: frees kept for the end */
};

/* The topic table's first size (buckets). */
#define RT_TOPIC_BUCKETS_MIN 1024

/* The writer changed something a snapshot holds. */
static inline void rt_changed(struct route_db *db)
{
	__atomic_add_fetch(&db->changes, 1, __ATOMIC_RELEASE);
}

/* Every change of what a list answer is built from (groups, clusters,
 * topics and their entries) calls this once it is published: readers that
 * see the new generation read the new state, so no cached list of an
 * older one is served again. */
static inline void rt_lists_changed(struct route_db *db)
{
	__atomic_add_fetch(&db->lgen, 1, __ATOMIC_SEQ_CST);
}

/* ---- allocation (route_alloc.c) ---- */

/* Tests: >= 0 makes the allocation that many allocations from now fail,
 * and every later one until set back to -1. */
extern int64_t rt_fail_after;
void *rt_malloc(size_t n);
void *rt_calloc(size_t n, size_t size);
void *rt_realloc(void *p, size_t n);
char *rt_strdup(const char *s);

/* ---- helpers shared by the files ---- */

uint64_t rt_hash_str(const char *s);
uint64_t rt_hash_pair(const char *a, const char *b);

/* What one topic name (rt_hash_str) or one live broker (its (cluster,
 * address) rt_hash_pair) adds to names_digest: a sum, so the order of
 * changes does not matter and a removal subtracts what the addition added. */
enum rt_names_kind { RT_NAMES_TOPIC = 1, RT_NAMES_LIVE = 2 };
static inline uint64_t rt_names_term(uint64_t hash, enum rt_names_kind kind)
{
	uint64_t x = hash ^ (uint64_t)kind;
	x ^= x >> 30;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

/* The group in slot gidx, or NULL (readers and the registrar alike). */
static inline struct route_group *rt_group(struct route_db *db, uint32_t gidx)
{
	if (gidx >= ROUTE_MAX_GROUPS)
		return NULL;
	return rt_deref(db->gdir[gidx]);
}

static inline bool rt_group_is_dead(const struct route_group *g)
{
	return __atomic_load_n(&g->dead, __ATOMIC_ACQUIRE) != 0;
}

/* The group in slot gidx as readers see it: NULL when none or dead. */
static inline struct route_group *rt_group_visible(struct route_db *db, uint32_t gidx)
{
	struct route_group *g = rt_group(db, gidx);
	return g && !rt_group_is_dead(g) ? g : NULL;
}

static inline bool rt_str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

/* The living group slot named `name` (readers and registrar), or UINT32_MAX. */
uint32_t rt_group_lookup(struct route_db *db, const char *name);

/* Topic and live lookups (inside a read-side section). */
struct route_topic *rt_topic_find(struct route_db *db, const char *name);
struct route_live *rt_live_find(struct route_db *db, const char *cluster, const char *addr);
int rt_topic_match(struct cds_lfht_node *node, const void *key);
int rt_live_match(struct cds_lfht_node *node, const void *key);
struct rt_live_key {
	const char *cluster;
	const char *addr;
};

/* Serialized pieces of a group (route_json.c). */
int rt_group_render(struct route_group *g);
/* Frees a group and its serialized pieces (route_group.c). */
void rt_group_free(struct route_group *g);
/* An id map {id:addr,...} in w's form: Java HashMap order for the default
 * form (cap = the map's capacity), ascending ids for the standard one. */
void rt_jw_addr_map(struct jw *w, const struct route_addr *a, uint32_t n, uint32_t cap);
/* A TopicQueueMappingInfo object. */
void rt_jw_mapping(struct jw *w, const struct regbody_mapping *m);
/* Indexes 0..n-1 of names in Java HashMap/HashSet order for n entries
 * (standard: ascending byte order). Caller frees; NULL on ENOMEM. */
uint32_t *rt_name_order(const char *const *names, uint32_t n, enum jw_form form);

/* The cache (route_cache.c). */
void rt_topic_invalidate(struct route_db *db, struct route_topic *t);
void rt_cache_retire(struct route_db *db, struct route_cache *c);
void rt_drain_retired(struct route_db *db);
void rt_cache_trim(struct route_db *db);
/* A reader's install of freshly built bytes (seen: the entry it found). */
void rt_cache_install(struct route_db *db, struct route_topic *t, int form, struct route_cache *seen,
		      const uint8_t *bytes, size_t len, uint32_t splice, uint8_t acting, uint32_t tg,
		      uint64_t gg);
/* The bytes of the entries installed in linked topics (tests compare it
 * with cache_bytes once nothing runs). */
uint64_t rt_cache_sum(struct route_db *db);
/* Tests: called by a reader just before it installs an entry. */
extern void (*rt_test_before_install)(struct route_db *db, struct route_topic *t);
/* Recounts the registry and checks that every index and count agrees
 * (route_check.c): 0, or RMQNS_EINVAL with what is wrong in err. Tests and
 * fuzzers, on the writer's thread while nothing else writes. */
int rt_check(struct route_db *db, char *err, size_t len);
/* ThreadSanitizer builds: runs the frees kept back (at teardown). */
void rt_run_deferred(struct route_db *db);

#endif
