/* The route registry (protocol.md §6): topics, broker groups, clusters,
 * live brokers, filter servers and static-topic mappings, read through RCU
 * by any registered thread and changed only by the registrar thread. Route
 * answers are cached as bytes per topic and form; the registrar invalidates
 * exactly the topics a change touches.
 *
 * Read functions (route_topic_body ... route_query_data_version) must be
 * called inside state_read_lock() (race.h); what they return by pointer is
 * valid until state_read_unlock(). Writer functions (route_apply_*,
 * route_hook_*, route_change_apply) must be called from the registrar
 * thread only (or a test thread standing in for it), registered with urcu,
 * outside any read-side section. */
#ifndef RMQNS_ROUTE_H
#define RMQNS_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rmqns/json_body_types.h"
#include "rmqns/regbody_types.h"

struct buf;

struct route_db;

/* Liveness timeout of a broker that sends no heartbeatTimeoutMillis. */
#define ROUTE_BROKER_TIMEOUT_MS 120000
/* Bytes of cached route answers kept at most (both forms together). */
#define ROUTE_CACHE_MAX_BYTES_DEFAULT (48u << 20)
/* Broker group names held at once (interned; a queue entry names its group
 * by a small index). A registration that would pass it is refused. */
#define ROUTE_MAX_GROUPS 65535u
/* Topics that never get the acting-master rewrite. */
#define ROUTE_SYNC_MEMBER_PREFIX "rmq_sys_SYNC_BROKER_MEMBER_"

/* PermName and TopicSysFlag bits (§5.7). */
#define ROUTE_PERM_INHERIT 1
#define ROUTE_PERM_WRITE 2
#define ROUTE_PERM_READ 4
#define ROUTE_SYSFLAG_UNIT 1
#define ROUTE_SYSFLAG_UNIT_SUB 2

/* cache_max_bytes 0 = ROUTE_CACHE_MAX_BYTES_DEFAULT. NULL on ENOMEM. */
struct route_db *route_db_create(size_t cache_max_bytes);
/* Once no thread reads or writes any more; from any thread (the teardown
 * runs on a registered thread of its own). Waits for pending RCU frees. */
void route_db_destroy(struct route_db *db);

/* The clock of last-seen times and expiry: CLOCK_MONOTONIC in ms, the
 * registrar's now_ms. */
uint64_t route_now_ms(void);
/* Milliseconds since the db was created (needWaitForService). */
uint64_t route_uptime_ms(const struct route_db *db, uint64_t now_ms);
/* The tables were restored from a route snapshot at start (route_snapshot.h):
 * routes are known at once, so needWaitForService does not wait. */
bool route_db_warm(const struct route_db *db);
/* A count that moves on every change the writer makes (registrations,
 * removals, admin changes): the snapshot writer compares it. Any thread. */
uint64_t route_db_changes(const struct route_db *db);

/* Asked to close the connection an expired broker registered on (the Java
 * NameServer closes it, so the broker reconnects and registers again).
 * Called on the registrar thread; must not block. */
typedef void (*route_close_fn)(void *arg, uint64_t conn_id);
/* Installs fn (NULL: none); may be called while the registrar runs. */
void route_db_set_close_hook(struct route_db *db, route_close_fn fn, void *arg);

/* NOTIFY_MIN_BROKER_ID_CHANGE (905, protocol.md §6): the minimum broker id
 * of a group registered with enableActingMaster changed. The route module
 * decides when and whom (targets); the hook sends. Strings are valid only
 * during the call. */
struct route_min_id_change {
	const char *cluster;
	const char *group;            /* brokerName */
	int64_t min_id;               /* minBrokerId */
	const char *min_addr;         /* minBrokerAddr */
	const char *offline_addr;     /* offlineBrokerAddr, NULL when none */
	const char *ha_addr;          /* haBrokerAddr, NULL when none */
	uint32_t n_targets;
	const char *const *targets;   /* broker addresses to notify */
};
/* Called on the registrar thread; must not block. */
typedef void (*route_notify_fn)(void *arg, const struct route_min_id_change *c);
/* Installs fn (NULL: none; nothing is computed then); may be called while
 * the registrar runs. */
void route_db_set_notify_hook(struct route_db *db, route_notify_fn fn, void *arg);

/* ---- registrar hooks (arg is the route_db) ---- */

/* Expiry scan, retirement of replaced cache entries, cache trimming. */
void route_hook_tick(void *db, uint64_t now_ms);
/* Removes every broker whose latest registration came on conn_id. */
void route_hook_conn_closed(void *db, uint64_t conn_id);
/* Queue entries of broker groups that left are removed in slices of this
 * many between other work: a mutation waits for one slice at most. */
#define ROUTE_REAP_SLICE 2048u
/* Background work when no mutation waits: removes one slice of the
 * entries of groups that left; true while more remains. */
bool route_hook_idle(void *db);

/* ---- writer side ---- */

/* What identifies a registration body without decoding it: an identical
 * re-send of the last body applied on the same connection is applied from
 * what that one left (docs/architecture.md, "The identical-body
 * shortcut"). hash 0: no identity (never shortcut). */
struct route_body_id {
	const uint8_t *bytes; /* the body (compared when len <= ROUTE_BODY_KEEP) */
	uint64_t len;
	uint64_t hash;        /* regbody_fingerprint */
	uint32_t crc;         /* regbody_fingerprint: the bodyCrc32 value */
	int32_t version;      /* the request's version: it picks the layout */
	uint64_t max_bytes;   /* the inflate bound it is decoded under */
	bool compressed;      /* the request's flag */
};

/* Bodies up to this length are kept and compared byte for byte. */
#define ROUTE_BODY_KEEP 512

struct route_broker_reg {
	const char *cluster;
	const char *name;
	const char *addr;
	const char *ha_addr;        /* NULL when absent */
	int64_t id;
	bool new_style;             /* enableActingMaster ext present (5.x broker) */
	bool acting_master;         /* its value */
	const char *zone;           /* __ZONE_NAME, NULL when absent */
	int64_t timeout_ms;         /* heartbeatTimeoutMillis, <= 0 = default */
	uint64_t conn_id;
	bool delete_missing_topics; /* deleteTopicWithBrokerRegistration */
	/* NULL: the caller found the body identical to the last one applied
	 * (route_body_is_last); route_apply_register then answers
	 * RMQNS_ENOTFOUND, changing nothing, unless that still holds. */
	const struct regbody *body;
	struct route_body_id body_id;
};

enum route_reg_outcome {
	ROUTE_REG_DONE = 0,       /* applied */
	ROUTE_REG_SUPERSEDED = 1, /* the id maps to another live address with a newer
				   * stateVersion: code 0, nothing applied */
	ROUTE_REG_REFUSED = 2,    /* first registration of an id with one topic:
				   * code 1 "register broker failed" */
};

struct route_reg_result {
	enum route_reg_outcome outcome;
	char *master_addr; /* a slave's live master, or NULL (malloc'd) */
	char *ha_addr;     /* that master's haServerAddr, or NULL (malloc'd) */
};

/* REGISTER_BROKER (§6.2, 5.x rules). RMQNS_ENOMEM leaves the tables
 * consistent but possibly partly updated; RMQNS_ETOOBIG when the group
 * table is full. */
int route_apply_register(struct route_db *db, const struct route_broker_reg *reg, uint64_t now_ms,
			 struct route_reg_result *res);
void route_reg_result_free(struct route_reg_result *res);
/* Any thread, in a read-side section: true when the live broker
 * (cluster, addr) was last registered on conn_id with a body of this
 * identity (a hint: the registrar checks it again, and the bytes). */
bool route_body_is_last(struct route_db *db, const char *cluster, const char *addr, uint64_t conn_id,
			const struct route_body_id *id);

/* UNREGISTER_BROKER (5.x: by address). conn_id is the connection the
 * request came on: when the broker registered again on another connection
 * after registering on this one, the request is stale and nothing changes
 * (returns 0); from any other connection it applies; conn_id 0 skips that
 * check. Returns 1 when something was removed. */
int route_apply_unregister(struct route_db *db, const char *cluster, const char *addr,
			   const char *name, uint64_t conn_id);
/* Connection closed: unregisters every broker registered on it; returns
 * how many. */
int route_apply_conn_closed(struct route_db *db, uint64_t conn_id);
/* Unregisters every broker whose last-seen + timeout < now; returns how many. */
int route_apply_expire(struct route_db *db, uint64_t now_ms);
/* WIPE (add=false) / ADD (add=true) write permission: returns the number
 * of topics touched, or a negative rmqns_err. */
int route_apply_write_perm(struct route_db *db, const char *name, bool add);
/* DELETE_TOPIC_IN_NAMESRV: cluster NULL or "" removes the topic entirely. */
int route_apply_delete_topic(struct route_db *db, const char *topic, const char *cluster);

struct route_queue_in {
	const char *group;
	int32_t read_queues, write_queues, perm, sysflag;
};
/* REGISTER_TOPIC_IN_NAMESRV (§6.8). */
int route_apply_register_topic(struct route_db *db, const char *topic,
			       const struct route_queue_in *q, uint32_t n);

/* A TopicRouteData body's queueDatas, as REGISTER_TOPIC_IN_NAMESRV sends
 * them: the queues' group names point into `names`. */
struct route_topic_queues {
	struct route_queue_in *items;
	uint32_t n;
	char *names;
};
/* Reads the queueDatas of a TopicRouteData body (as fastjson would take it,
 * bare integer keys included); q->n is 0 when it has none. RMQNS_EJSON for
 * a body that is not a readable object, RMQNS_ENOMEM. */
int route_decode_topic_queues(const uint8_t *body, size_t len, struct route_topic_queues *q);
void route_topic_queues_free(struct route_topic_queues *q);

/* ---- reader side (inside rcu_read_lock) ---- */

/* Readers enclose these in state_read_lock()/state_read_unlock() (race.h). */

struct route_query {
	const char *topic;
	enum jw_form form;
	bool support_acting_master; /* the option */
	const char *order_conf;     /* orderTopicConf to include, or NULL */
	const char *zone;           /* zone filter (non-blank __ZONE_NAME with
				     * __ZONE_MODE true), or NULL; forces the default form */
};

/* The TopicRouteData answer. RMQNS_OK with *body and *len pointing at cached
 * bytes or into scratch; RMQNS_ENOTFOUND when the topic has no route. */
int route_topic_body(struct route_db *db, const struct route_query *q,
		     const uint8_t **body, size_t *len, struct buf *scratch);

/* ClusterInfo (default form). */
int route_cluster_info(struct route_db *db, struct buf *out);
/* TopicList bodies. */
int route_topics_all(struct route_db *db, struct buf *out);
int route_topics_by_cluster(struct route_db *db, const char *cluster, struct buf *out);
int route_topics_system(struct route_db *db, struct buf *out);

enum route_unit_kind {
	ROUTE_UNIT = 0,            /* 311 */
	ROUTE_UNIT_SUB = 1,        /* 312 */
	ROUTE_UNIT_SUB_NOT_UNIT = 2, /* 313 */
};
int route_topics_unit(struct route_db *db, enum route_unit_kind kind, struct buf *out);

/* The list answers above as the handlers send them: cached as bytes until
 * anything they are built from changes (every change the registrar
 * publishes to groups, clusters or topics moves one generation), so that
 * identical queries between two changes cost one build. */
enum route_list {
	ROUTE_LIST_CLUSTER_INFO = 0,         /* 106 */
	ROUTE_LIST_TOPICS_ALL = 1,           /* 206 */
	ROUTE_LIST_TOPICS_BY_CLUSTER = 2,    /* 224: arg is the cluster (NULL = absent) */
	ROUTE_LIST_TOPICS_SYSTEM = 3,        /* 304 */
	ROUTE_LIST_TOPICS_UNIT = 4,          /* 311 */
	ROUTE_LIST_TOPICS_UNIT_SUB = 5,      /* 312 */
	ROUTE_LIST_TOPICS_UNIT_SUB_NOT_UNIT = 6, /* 313 */
};
/* The body of list `kind` (arg ignored but for ROUTE_LIST_TOPICS_BY_CLUSTER),
 * from the cache or built into scratch; *body is valid until
 * rcu_read_unlock() and points into scratch when it was built. */
int route_list_body(struct route_db *db, enum route_list kind, const char *arg, const uint8_t **body,
		    size_t *len, struct buf *scratch);

/* GET_BROKER_MEMBER_GROUP body; cluster and name as requested (NULL = absent). */
int route_member_group(struct route_db *db, const char *cluster, const char *name, struct buf *out);

/* BROKER_HEARTBEAT: refreshes last-seen of (cluster, addr). false if unknown. */
bool route_heartbeat(struct route_db *db, const char *cluster, const char *addr, uint64_t now_ms);

/* QUERY_DATA_VERSION (5.x): *known = a live entry exists (its last-seen is
 * refreshed and *stored receives its DataVersion); *changed = !known or
 * the versions differ. */
void route_query_data_version(struct route_db *db, const char *cluster, const char *addr,
			      const struct data_version *dv, uint64_t now_ms,
			      bool *known, bool *changed, struct data_version *stored);

struct route_stats {
	uint64_t topics;
	uint64_t queue_entries;
	uint32_t groups;      /* present in brokerAddrTable */
	uint32_t live;
	uint64_t cache_bytes;
	uint64_t dead_entries; /* queue entries of groups that left, not yet removed */
	/* A digest of the topic names and live brokers' (cluster, address):
	 * equal on two NameServers that hold the same ones, whatever the order
	 * they came in (rmqns_route_digest). */
	uint32_t names_digest;
};
/* Counts (approximate while the registrar writes). */
void route_stats(struct route_db *db, struct route_stats *st);


/* ==== live brokers for operators (route_brokers.c) ==== */

/* One live broker; strings valid until rcu_read_unlock(). */
struct route_broker_view {
	const char *cluster;
	const char *name;      /* brokerName of the group listing addr; "" if none */
	const char *addr;
	int64_t id;            /* its brokerId there; -1 if no group lists it */
	bool acting_master;    /* the group registered with enableActingMaster */
	uint64_t last_ms;      /* last registration or heartbeat (route_now_ms) */
	int64_t timeout_ms;    /* expires past last_ms + timeout_ms */
	uint32_t topics;       /* topics with a queue entry for its group */
	struct data_version dv; /* of its last registration */
};
typedef int (*route_broker_fn)(void *arg, const struct route_broker_view *b);
/* Calls fn for every live broker (reader side, inside rcu_read_lock);
 * stops at fn's first non-zero return and returns it. One pass over the
 * topic table: an admin view, not for request paths. RMQNS_ENOMEM. */
int route_brokers(struct route_db *db, route_broker_fn fn, void *arg);

/* One topic with a route for operators: its name and a digest of its
 * visible queue entries (group name, queues, perm, sysflag; the same for
 * equal routes whatever the order they were registered in). */
typedef int (*route_topic_name_fn)(void *arg, const char *name, uint64_t digest);
/* Calls fn for every topic a route query would find (reader side, inside
 * rcu_read_lock), in no particular order; stops at fn's first non-zero
 * return and returns it. One pass over the topic table: an admin view. */
int route_topic_names(struct route_db *db, route_topic_name_fn fn, void *arg);

#endif
