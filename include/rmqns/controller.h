/* The 5.x embedded controller (controller.md): the replicated broker-set
 * state and its events (ctl_state, ctl_event), the binary encodings that
 * go into the Raft log and its snapshots, and the request handlers that
 * read the state and produce events. The ctl_ prefix is the controller
 * module. Nothing here locks: the state belongs to one thread. */
#ifndef RMQNS_CONTROLLER_H
#define RMQNS_CONTROLLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rmqns/buf.h"
#include "rmqns/properties.h"

/* ---- the replicated state (controller.md §2.1) ---- */

/* Longest text an event or a snapshot carries (names, addresses, check
 * codes), and most ids in one id list. */
#define CTL_MAX_TEXT 65535u
#define CTL_MAX_IDS 65536u

struct ctl_replica {
	int64_t id;
	char *address;     /* ip:port */
	char *check_code;  /* registerCheckCode, "<addr>;<millis>" */
};

/* One brokerName: Java's two tables (BrokerReplicaInfo, SyncStateInfo)
 * side by side, since a clean may drop one and keep the other. A set
 * "exists" (answers as registered) only when it has both. Fields of an
 * absent table are kept zero so that two states compare field by field. */
struct ctl_set {
	char *name;                    /* brokerName: the key */
	char *cluster;                 /* from the event that created the set */
	bool has_replicas;             /* the BrokerReplicaInfo table */
	int64_t next_id;               /* nextAssignBrokerId */
	struct ctl_replica *replicas;  /* ascending ids */
	uint32_t replica_count;
	bool has_sync;                 /* the SyncStateInfo table */
	bool has_master;
	int64_t master_id;
	int32_t master_epoch;          /* +1 on every ELECT_MASTER event */
	int32_t sss_epoch;             /* +1 on every sync-state set replacement */
	int64_t *sss;                  /* the sync-state set, ascending ids */
	uint32_t sss_count;
};

struct ctl_state {
	struct ctl_set **sets;         /* ascending names (strcmp) */
	uint32_t count;
	uint32_t cap;
};

void ctl_state_init(struct ctl_state *s);
void ctl_state_free(struct ctl_state *s);
/* The set named `name`, or NULL. */
struct ctl_set *ctl_state_find(const struct ctl_state *s, const char *name);
/* Both tables present: what Java calls a registered broker set. */
static inline bool ctl_set_exists(const struct ctl_set *set)
{
	return set && set->has_replicas && set->has_sync;
}
/* The replica with this id, or NULL (also when the set has no replica table). */
const struct ctl_replica *ctl_set_replica(const struct ctl_set *set, int64_t id);
bool ctl_set_in_sss(const struct ctl_set *set, int64_t id);
/* Field by field, for tests and for comparing nodes. */
bool ctl_state_equal(const struct ctl_state *a, const struct ctl_state *b);

/* ---- events: what the Raft log holds (controller.md §2.2) ---- */

enum ctl_event_type {
	CTL_EV_ALTER_SYNC_STATE_SET = 1,
	CTL_EV_APPLY_BROKER_ID = 2,
	CTL_EV_ELECT_MASTER = 3,
	CTL_EV_CLEAN_BROKER_DATA = 5,
	CTL_EV_UPDATE_BROKER_ADDRESS = 6,
	/* rmqns's own, never in a Java log: a set rebuilt from its brokers */
	CTL_EV_ADOPT_REPLICA = 7,
	CTL_EV_ADOPT_MASTER = 8,
};

/* One event. Strings and ids are owned by the event (ctl_event_clear);
 * unused fields stay NULL / 0. ids is ascending without repeats: the
 * new sync-state set (ALTER, ADOPT_MASTER), or the ids to clean (CLEAN;
 * none = the whole set). broker_id is the new id (APPLY, ADOPT_REPLICA),
 * the new master (ELECT and ADOPT_MASTER, when elected) or the id whose
 * address changes (UPDATE).
 *
 * ADOPT_REPLICA records a replica a broker reported and the store did not
 * know: the set is created when absent (no master, epochs 0), the replica
 * added when absent, and the next id raised to at least max(next_id,
 * broker_id + 1). ADOPT_MASTER sets a set's master (or none), both epochs
 * and the sync-state set to the values it carries, so that a rebuilt set
 * goes on from the epochs its brokers hold. */
struct ctl_event {
	enum ctl_event_type type;
	char *cluster;      /* APPLY, UPDATE, ADOPT_REPLICA */
	char *broker_name;  /* every type */
	char *address;      /* APPLY, UPDATE, ADOPT_REPLICA */
	char *check_code;   /* APPLY */
	int64_t broker_id;
	bool elected;       /* ELECT, ADOPT_MASTER */
	int64_t *ids;
	uint32_t id_count;
	int64_t next_id;        /* ADOPT_REPLICA: the least next id to hand out */
	int32_t master_epoch;   /* ADOPT_MASTER */
	int32_t sss_epoch;      /* ADOPT_MASTER */
};

void ctl_event_clear(struct ctl_event *ev);
/* Sorts ids ascending. */
void ctl_ids_sort(int64_t *ids, uint32_t count);
/* Sorts ids and drops repeats (how events are built from requests). */
void ctl_ids_normalize(int64_t *ids, uint32_t *count);

/* Applies one event. Deterministic: the same events in the same order give
 * the same state on every node. An event about a set that is not there
 * changes nothing and is not an error (Java ignores it too). On
 * RMQNS_ENOMEM the state is unchanged. */
int ctl_state_apply(struct ctl_state *s, const struct ctl_event *ev);

/* Log entry encoding, version 1: u8 version, u8 type, then per type
 *   ALTER  name, ids          APPLY  cluster, name, address, i64 id, check code
 *   ELECT  name, u8 elected, i64 id (0 when not elected)
 *   CLEAN  name, ids          UPDATE cluster, name, address, i64 id
 *   ADOPT_REPLICA  cluster, name, address, i64 id, i64 next id
 *   ADOPT_MASTER   name, u8 elected, i64 id (0 when not), i32 master
 *                  epoch, i32 sss epoch, ids
 * (the two ADOPT types are new in version 1 entries: a node that does not
 * know them refuses the entry, so every node of a group must know them
 * before one of them is written; the snapshot image is unchanged)
 * text = u32 length + bytes (no NUL, at most CTL_MAX_TEXT), ids = u32
 * count + i64 each, all big-endian. */
#define CTL_EVENT_VERSION 1
int ctl_event_encode(const struct ctl_event *ev, struct buf *out);
/* Strict: an unknown version or type, a short or long input, a text with
 * a NUL or too long, ids out of order or repeated, an ELECT id without
 * election: RMQNS_EINVAL. On error *ev holds nothing to clear. */
int ctl_event_decode(const uint8_t *p, size_t len, struct ctl_event *ev);

/* Snapshot image: "RMQC", u8 version 1, u32 set count, then per set in
 * name order: name, cluster, u8 flags (1 replicas, 2 sync, 4 master),
 * i64 next id, u32 replica count and per replica i64 id, address, check
 * code; i64 master id, i32 master epoch, i32 sss epoch, ids. */
#define CTL_SNAPSHOT_VERSION 1
int ctl_state_snapshot(const struct ctl_state *s, struct buf *out);
/* Replaces *s with the image's state; strict as ctl_event_decode (and
 * names in ascending order, flags consistent with the fields). On error
 * *s is unchanged. */
int ctl_state_restore(struct ctl_state *s, const uint8_t *p, size_t len);

/* ---- broker liveness on this node (controller.md §2.3-§2.4) ---- */

/* Not replicated: every node keeps its own, fed by the heartbeats (904)
 * brokers send to every controller. Keyed by (cluster, brokerName, id). */
struct ctl_live_entry {
	char *cluster;
	char *broker_name;
	int64_t broker_id;
	char *address;
	uint64_t conn;           /* the connection of the latest heartbeat */
	int64_t last_ms;         /* when it came */
	int64_t timeout_ms;      /* heartbeatTimeoutMills, 10000 when absent */
	int32_t epoch;           /* -1 until a broker reports one */
	int64_t max_offset;      /* -1 likewise */
	int64_t confirm_offset;
	int32_t priority;        /* electionPriority: lower is preferred */
};

struct ctl_live {
	struct ctl_live_entry *items;
	uint32_t count;
	uint32_t cap;
	/* bounds against heartbeats from anyone (controllerMaxLiveBrokers,
	 * controllerMaxHeartbeatTimeoutMillis): no table past max_entries,
	 * no entry kept past max_timeout_ms without a heartbeat */
	uint32_t max_entries;
	int64_t max_timeout_ms;
	uint64_t refused; /* heartbeats refused for a full table */
};

/* One heartbeat's fields (strings not owned; NULL = absent). */
struct ctl_heartbeat {
	const char *cluster;
	const char *broker_name;
	const char *address;
	int64_t broker_id;
	bool has_epoch, has_max_offset, has_confirm_offset, has_timeout, has_priority;
	int32_t epoch;
	int64_t max_offset;
	int64_t confirm_offset;
	int64_t timeout_ms;
	int32_t priority;
};

#define CTL_DEFAULT_HEARTBEAT_TIMEOUT_MS 10000
#define CTL_DEFAULT_MAX_LIVE_BROKERS 10000
/* six times what brokers ask (Java's controllerHeartBeatTimeoutMills) */
#define CTL_DEFAULT_MAX_HEARTBEAT_TIMEOUT_MS 60000
#define CTL_DEFAULT_ELECTION_PRIORITY INT32_MAX

/* (cluster, brokerName, id) of a broker that stopped being live. */
struct ctl_broker_key {
	char *cluster;
	char *broker_name;
	int64_t broker_id;
};
void ctl_broker_keys_free(struct ctl_broker_key *keys, uint32_t n);

/* An empty table with the default bounds. */
void ctl_live_init(struct ctl_live *l);
/* Sets the bounds (0 = the default): at most max_entries brokers, a
 * heartbeat's timeout cut to max_timeout_ms. */
void ctl_live_set_bounds(struct ctl_live *l, uint32_t max_entries, int64_t max_timeout_ms);
void ctl_live_free(struct ctl_live *l);
/* Records a heartbeat: a new entry, or the known one refreshed (time,
 * timeout, priority, the latest connection and address; epoch and
 * offsets only when (epoch, maxOffset) is greater than the stored pair).
 * The timeout asked for is cut to the table's maximum. A new broker in a
 * full table: RMQNS_EFULL, counted in refused and logged (rate-limited). */
int ctl_live_heartbeat(struct ctl_live *l, const struct ctl_heartbeat *hb, uint64_t conn,
		       int64_t now_ms);
const struct ctl_live_entry *ctl_live_find(const struct ctl_live *l, const char *cluster,
					   const char *broker_name, int64_t id);
/* An entry exists and its last heartbeat is within its timeout. */
bool ctl_live_alive(const struct ctl_live *l, const char *cluster, const char *broker_name,
		    int64_t id, int64_t now_ms);
/* Removes the entries past their timeout (expired) or whose latest
 * heartbeat came on `conn` (closed); the removed brokers are handed back
 * in *gone (the caller frees them with ctl_broker_keys_free). */
int ctl_live_remove_expired(struct ctl_live *l, int64_t now_ms, struct ctl_broker_key **gone,
			    uint32_t *n_gone);
int ctl_live_remove_conn(struct ctl_live *l, uint64_t conn, struct ctl_broker_key **gone,
			 uint32_t *n_gone);

/* ---- request handlers (controller.md §3) ---- */

/* Controller request and response codes. */
enum ctl_code {
	CTL_REQ_BROKER_HEARTBEAT = 904,
	CTL_REQ_ALTER_SYNC_STATE_SET = 1001,
	CTL_REQ_ELECT_MASTER = 1002,
	CTL_REQ_REGISTER_BROKER = 1003,
	CTL_REQ_GET_REPLICA_INFO = 1004,
	CTL_REQ_GET_METADATA_INFO = 1005,
	CTL_REQ_GET_SYNC_STATE_DATA = 1006,
	CTL_REQ_NOTIFY_BROKER_ROLE_CHANGED = 1008,
	CTL_REQ_UPDATE_CONTROLLER_CONFIG = 1009,
	CTL_REQ_GET_CONTROLLER_CONFIG = 1010,
	CTL_REQ_CLEAN_BROKER_DATA = 1011,
	CTL_REQ_GET_NEXT_BROKER_ID = 1012,
	CTL_REQ_APPLY_BROKER_ID = 1013,

	CTL_RSP_FENCED_MASTER_EPOCH = 2000,
	CTL_RSP_FENCED_SYNC_STATE_SET_EPOCH = 2001,
	CTL_RSP_INVALID_MASTER = 2002,
	CTL_RSP_INVALID_REPLICAS = 2003,
	CTL_RSP_MASTER_NOT_AVAILABLE = 2004,
	CTL_RSP_INVALID_REQUEST = 2005,
	CTL_RSP_BROKER_NOT_ALIVE = 2006,
	CTL_RSP_NOT_LEADER = 2007,
	CTL_RSP_BROKER_METADATA_NOT_EXIST = 2008,
	CTL_RSP_INVALID_CLEAN_BROKER_METADATA = 2009,
	CTL_RSP_BROKER_NEED_TO_BE_REGISTERED = 2010,
	CTL_RSP_MASTER_STILL_EXIST = 2011,
	CTL_RSP_ELECT_MASTER_FAILED = 2012,
	CTL_RSP_ALTER_SYNC_STATE_SET_FAILED = 2013,
	CTL_RSP_BROKER_ID_INVALID = 2014,
};

/* What 1005 reports (this node's view of the Raft group). */
struct ctl_meta {
	const char *group;          /* controllerDLegerGroup */
	const char *leader_id;      /* NULL when no leader is known */
	const char *leader_address; /* the leader's entry in the peers list */
	bool is_leader;             /* this node's Raft role */
	const char *peers;          /* "n0:addr;n1:addr;" */
};

/* Everything a handler may look at. */
struct ctl_env {
	const struct ctl_state *state;
	struct ctl_live *live;         /* 904 writes it */
	struct properties *config;     /* this node's controller config; 1009 writes it */
	const struct ctl_meta *meta;
	int64_t now_ms;
	bool serving;                  /* a leader whose no-op of its term is applied */
	uint64_t conn;                 /* the requester's connection */
};

#define CTL_MAX_ANSWER_EXT 8

/* A handler's result: the answer, and the event that must be committed
 * and applied before the answer may be sent (has_event). */
struct ctl_answer {
	int32_t code;
	char *remark;                  /* NULL = none */
	bool ext_present;              /* write extFields even when empty */
	struct { const char *key; char *value; } ext[CTL_MAX_ANSWER_EXT];
	uint32_t ext_count;
	bool has_body;
	struct buf body;
	bool has_event;
	struct ctl_event event;
	/* events committed, in order, before `event` (an adoption's replicas
	 * ahead of its master); owned, freed by ctl_answer_clear */
	struct ctl_event *pre;
	uint32_t pre_count;
	/* CTL_ADOPTED_* bits: what committing the events adopts (counted and
	 * logged once they are applied) */
	unsigned adopted;
	bool notify_role_change;       /* a master was elected: tell the brokers once applied */
	bool config_changed;           /* 1009 changed the config: persist it */
	bool no_answer;                /* a one-way request: nothing to send */
};

void ctl_answer_clear(struct ctl_answer *ans);

struct remoting_cmd;

/* Handles one controller request against env: fills *ans (which the
 * caller clears). Never sends, never blocks. RMQNS_ENOMEM only when even
 * the answer could not be built. */
int ctl_handle(const struct ctl_env *env, const struct remoting_cmd *req, struct ctl_answer *ans);

/* An election for broker_name (controller.md §3.9): by a broker (has_id,
 * !designate), by an operator (has_id, designate) or by the leader itself
 * (!has_id) when a master is gone. */
int ctl_elect_master(const struct ctl_env *env, const char *broker_name, bool has_id, int64_t id,
		     bool designate, struct ctl_answer *ans);

/* ---- adopting brokers the store does not know (ctl_adopt.c) ---- */

enum { CTL_ADOPTED_BROKER = 1, CTL_ADOPTED_SET = 2 };

/* What one replica of a set reported to this node (its heartbeats). */
struct ctl_adopt_report {
	int64_t id;
	int32_t epoch;            /* last epoch of its epoch file; -1 = none */
	int64_t max_offset;
	int64_t confirm_offset;   /* 0 = none */
	int32_t priority;         /* lower is preferred */
	bool known;               /* a replica of the set in the state */
	bool serving;             /* registered as brokerId 0 with this node's NameServer */
};

enum ctl_adopt_verdict {
	CTL_ADOPT_NOTHING,  /* no replica reports an epoch above the set's */
	CTL_ADOPT_WAIT,     /* the one to elect is not a known replica yet */
	CTL_ADOPT_ELECT,
};

struct ctl_adopt_choice {
	int64_t master;
	int32_t master_epoch;     /* above every epoch reported and the set's */
	int32_t sss_epoch;
	int64_t *sss;             /* ascending; room for n ids, given by the caller */
	uint32_t sss_count;
	bool tied;                /* another replica had the same (epoch, offset) */
};

/* The master a set rebuilt from its brokers goes on with: among the
 * replicas that reported an epoch, the greatest (epoch, max offset), so
 * never one behind another; of those tied, the one serving, then the
 * lower priority number, then the lower id. Its epoch is one above every
 * epoch reported and the set's own; its sync-state set is the known
 * replicas at its epoch with at least its confirm offset (its max offset
 * when it reports none). sss_epoch is set_sss_epoch + 1. Pure. */
enum ctl_adopt_verdict ctl_adopt_choose(const struct ctl_adopt_report *r, uint32_t n,
					int32_t set_master_epoch, int32_t set_sss_epoch,
					struct ctl_adopt_choice *out);

/* controllerAdoptBrokers (default true). */
bool ctl_adopt_enabled(const struct ctl_env *env);
/* A set without a master whose live replicas report an epoch above its
 * own: its brokers had a master the state does not hold. */
bool ctl_adopt_pending(const struct ctl_env *env, const struct ctl_set *set);
/* The adoption election of broker_name on the leader: the live replicas
 * the state lacks adopted and the chosen master set, as events in *ans
 * (code 0, notify_role_change), or code 2012 with no event when there is
 * nothing (yet) to elect. serving_address: the address registered as
 * brokerId 0 with this node's NameServer, NULL when unknown; with none
 * and replicas tied for master, wait_for_serving answers 2012 (the
 * NameServer learns it at the brokers' next registration, within 30 s). */
int ctl_adopt_elect(const struct ctl_env *env, const char *broker_name,
		    const char *serving_address, bool wait_for_serving, struct ctl_answer *ans);
/* How long an adoption waits for the NameServer to learn the master when
 * the brokers' reports tie: one 30 s registration period and a margin. */
#define CTL_ADOPT_SERVING_WAIT_MS 35000

/* controllerImportFile (ctl_import.c): the events that rebuild the sets of
 * an exportControllerState file, in order (per set its ADOPT_REPLICAs, then
 * its ADOPT_MASTER); *out owned by the caller (ctl_event_clear each, free).
 * RMQNS_EINVAL with the reason in err for a file that does not read. */
int ctl_import_read(const char *path, struct ctl_event **out, uint32_t *count, char *err,
		    size_t errlen);

/* Encodes the answer to req as a whole frame. */
int ctl_answer_encode(const struct ctl_answer *ans, const struct remoting_cmd *req, struct buf *out);

/* A controller option's boolean value (Java's Boolean.parseBoolean), def
 * when the key is absent. */
bool ctl_config_flag(const struct properties *cfg, const char *key, bool def);

/* ---- the Raft group (ctl_peers.c, ctl_node.c) ---- */

/* One member of the group. address (host:port) is where brokers and
 * mqadmin reach its controller requests; raft_host:raft_port is where its
 * Raft member listens. From controllerDLegerPeers ("n0-127.0.0.1:9878":
 * the id is the text before the first '-', the address the rest, the Raft
 * port the address's + controllerRaftPortOffset) or from jRaft's lists
 * (the id is the member's jRaftInitConf entry, the address its
 * jRaftControllerRPCAddr entry). */
struct ctl_peer {
	char *id;
	char *address;  /* host:port as written */
	char *host;
	int port;
	char *raft_host;
	int raft_port;
};

/* DLedger style: Raft traffic goes to a port of its own on the same host,
 * the peer's port + controllerRaftPortOffset (default 1000, so 9878 ->
 * 10878). */
#define CTL_DEFAULT_RAFT_PORT_OFFSET 1000
/* The largest Raft message a peer may announce: the whole controller
 * state goes in one snapshot message; 10,000 brokers are a few MiB. */
#define CTL_DEFAULT_RAFT_MAX_MESSAGE (32u << 20)

struct ctl_node_config;

/* Parses controllerDLegerPeers (';'-separated, empty entries skipped).
 * RMQNS_EINVAL with a reason for an entry without '-', an empty id, a
 * repeated id, an address that is not host:port, or a Raft port past
 * 65535. */
int ctl_peers_parse(const char *text, int raft_port_offset, struct ctl_peer **out, unsigned *n,
		    char *err, size_t errlen);
/* Parses jRaftInitConf and jRaftControllerRPCAddr (','-separated, empty
 * entries skipped): member i has the i-th entry of each. RMQNS_EINVAL with
 * a reason naming the key for an empty list, an entry that is not
 * host:port, a repeated entry, or lists of different lengths. */
int ctl_peers_parse_jraft(const char *init_conf, const char *rpc_addrs, struct ctl_peer **out,
			  unsigned *n, char *err, size_t errlen);
/* The members of cfg's configuration (either type) and this node's index
 * among them (controllerDLegerSelfId's entry, or jRaftServerId's);
 * RMQNS_EINVAL with a reason naming the key. */
int ctl_peers_of_config(const struct ctl_node_config *cfg, struct ctl_peer **out, unsigned *n,
			unsigned *self, char *err, size_t errlen);
void ctl_peers_free(struct ctl_peer *peers, unsigned n);
/* The port this node's controller listens on, from cfg's members;
 * RMQNS_EINVAL with a reason when they do not parse or self is not one. */
int ctl_peers_self_port(const struct ctl_node_config *cfg, char *err, size_t errlen);
/* "raft_host:raft_port" (IPv6 in brackets). */
int ctl_peer_raft_address(const struct ctl_peer *p, char *out, size_t outlen);
/* 1005's peers text: "n0:addr;n1:addr;", or as Java's jRaft controller
 * gives it (!with_ids) "addr;addr;". Owned by the caller. */
char *ctl_peers_describe(const struct ctl_peer *peers, unsigned n, bool with_ids);
/* Where a peer's Raft port is: raft_host and raft_port. The one place the
 * transport asks; RMQNS_EINVAL when the port is past 65535. */
int ctl_peer_raft_endpoint(const struct ctl_peer *p, const char **host, int *port);

/* A controller node: a thread with its own event loop running one member
 * of the Raft group (log and snapshots under store_path), applying the
 * committed events to its ctl_state and serving controller requests. */
struct ctl_node;

struct ctl_node_config {
	const char *group;             /* controllerDLegerGroup */
	const char *peers;             /* controllerDLegerPeers */
	const char *self_id;           /* controllerDLegerSelfId */
	const char *store_path;        /* controllerStorePath: the Raft log lives here */
	const char *bind_host;         /* where the Raft port listens; NULL = the peer's host */
	int raft_port_offset;          /* 0 = CTL_DEFAULT_RAFT_PORT_OFFSET */
	uint64_t raft_max_message;     /* 0 = CTL_DEFAULT_RAFT_MAX_MESSAGE */
	/* mutual TLS between the peers: all three files, or none (NULL or "") */
	const char *peer_tls_cert, *peer_tls_key, *peer_tls_trust;
	/* controllerType=jRaft: the members come from these three instead of
	 * peers, self_id and raft_port_offset */
	bool jraft;
	const char *jraft_init_conf;   /* jRaftInitConf */
	const char *jraft_rpc_addrs;   /* jRaftControllerRPCAddr */
	const char *jraft_server_id;   /* jRaftServerId */
	unsigned election_timeout_ms;  /* 0 = 500 */
	unsigned heartbeat_timeout_ms; /* 0 = 100 */
	unsigned snapshot_threshold;   /* entries between snapshots; 0 = 1024 */
	unsigned snapshot_trailing;    /* entries kept behind a snapshot; 0 = 128 */
	int64_t scan_not_active_ms;    /* scanNotActiveBrokerInterval; 0 = 5000 */
	int64_t scan_inactive_master_ms; /* scanInactiveMasterInterval; 0 = 5000 */
	uint32_t max_live_brokers;     /* controllerMaxLiveBrokers; 0 = CTL_DEFAULT_MAX_LIVE_BROKERS */
	int64_t max_heartbeat_timeout_ms; /* controllerMaxHeartbeatTimeoutMillis; 0 = the default */
	/* the node's controller options as 1010 shows them (copied) */
	const struct properties *options;
	/* where a 1009 that changed them writes them (Java's configStorePath
	 * of the controller); NULL = kept in memory only */
	const char *config_store_path;
	/* sends a one-way NOTIFY_BROKER_ROLE_CHANGED frame to a broker's
	 * address; called on the node's thread; NULL = no notifications */
	void (*notify)(void *arg, const char *address, const uint8_t *frame, size_t len);
	void *notify_arg;
	/* counts delta bytes (negative: released) held for the Raft
	 * connections into the process's connection memory
	 * (connectionMemoryBudget); called on the node's thread; NULL = not
	 * counted */
	void (*hold)(void *arg, int64_t delta);
	void *hold_arg;
	/* a code this process's NameServer port answers: the code-3 answer
	 * to it here says so (and names the port ctl_node_set_namesrv_port
	 * gave); NULL = no hint */
	bool (*namesrv_code)(int32_t code);
	/* the address registered as brokerId 0 of (cluster, brokerName) with
	 * this process's NameServer, into out; 0 when there is one. Called on
	 * the node's thread for an adoption election; NULL = not known */
	int (*serving_master)(void *arg, const char *cluster, const char *broker_name, char *out,
			      size_t outlen);
	void *serving_master_arg;
	/* controllerAdoptBrokers' wait: how long a set without a master whose
	 * brokers report a higher epoch is heard before its master is adopted;
	 * 0 = 3000 ms, negative = at once */
	int64_t adopt_wait_ms;
	/* controllerImportFile: proposed once by the first leader that finds
	 * the store empty; refused (a log line) on a store with state */
	const char *import_file;
};

/* Starts the node's thread and waits until its Raft member runs (or
 * failed: NULL with a reason in err). */
struct ctl_node *ctl_node_start(const struct ctl_node_config *cfg, char *err, size_t errlen);
/* Stops the Raft member and the thread, frees the node. Requests still
 * waiting get no answer. */
void ctl_node_stop(struct ctl_node *node);

/* Called on the node's thread with the answer frame (NULL, 0 when the
 * request was one-way or could not be read). */
typedef void (*ctl_reply_fn)(void *arg, const uint8_t *frame, size_t len);

/* Hands a whole request frame (copied) to the node; reply is called once.
 * Any thread. RMQNS_ECLOSED once the node stops. */
int ctl_node_submit(struct ctl_node *node, const uint8_t *frame, size_t len, uint64_t conn,
		    ctl_reply_fn reply, void *arg);
/* The port this process's NameServer listens on, once it is bound: named
 * in the hint of namesrv_code. Any thread. */
void ctl_node_set_namesrv_port(struct ctl_node *node, int port);
/* A connection closed: its brokers stop being live on this node. */
int ctl_node_conn_closed(struct ctl_node *node, uint64_t conn);

struct ctl_node_status {
	bool is_leader;      /* Raft role */
	bool serving;        /* leader with its term's no-op applied */
	uint64_t term;
	uint64_t last_applied;
	int leader;          /* index in the peers list, -1 = none known */
	uint64_t turn_ms;    /* CLOCK_MONOTONIC ms of the thread's latest turn (every 20 ms) */
	uint64_t leader_changes;   /* times the leader this node knows changed */
	uint64_t elections_won;    /* master elections this node committed as leader */
	uint64_t elections_failed; /* ... that found no master */
	uint32_t broker_sets;      /* registered sets in the state */
	uint32_t masters;          /* of which with a master */
	uint32_t live_brokers;     /* heart-beating here */
	uint64_t adopted_brokers;  /* replicas adopted from what brokers reported (leader) */
	uint64_t adopted_sets;     /* ... of which created their set */
	uint32_t live_brokers_max; /* controllerMaxLiveBrokers */
	uint64_t heartbeats_refused; /* new brokers refused for a full table */
};
void ctl_node_status(struct ctl_node *node, struct ctl_node_status *out);
/* The peers list entry of index i (ctl_node_status.leader), or NULL. */
const struct ctl_peer *ctl_node_peer(const struct ctl_node *node, int i);
const char *ctl_node_self_id(const struct ctl_node *node);

/* The node's latest published view (rebuilt on its thread at most every
 * CTL_VIEW_MS): the replicated state and this node's liveness as JSON
 * (json, for /controller) and the per-broker heartbeat ages as
 * Prometheus samples (prom). Either may be NULL. Any thread; never waits
 * for the node's thread. */
#define CTL_VIEW_MS 500
int ctl_node_view(struct ctl_node *node, struct buf *json, struct buf *prom);

/* ---- the published view (ctl_view.c) ---- */

struct ctl_view_ctx {
	const struct ctl_state *state;
	const struct ctl_live *live;
	const struct ctl_node_status *status;
	const char *self_id;
	const char *group;
	const struct ctl_peer *leader;  /* NULL = none known */
	int64_t now_ms;
	const char *peer_auth;          /* how Raft peers are recognised ("address") */
	const uint64_t *raft_refused;   /* Raft connections refused, by reason (ctl_raft_verdict) */
};
/* {"self":..,"group":..,"role":..,"serving":..,"term":..,"leader":..,
 *  "leaderAddress":..,"lastApplied":..,"peerAuthentication":..,"raftRefused":{..},
 *  "brokerSets":[..],"liveBrokerCounts":{"total","inBrokerSets","inNoBrokerSet","max",
 *  "refusedTotal","listed"},"liveBrokers":[..]}; liveBrokers is empty
 *  (listed false) past CTL_VIEW_MAX_BROKERS brokers. */
#define CTL_VIEW_MAX_BROKERS 500
int ctl_view_json(const struct ctl_view_ctx *v, struct buf *out);
/* The families rmqns_controller_leader_info{self,leader},
 * rmqns_controller_set_master_id and _set_master_epoch{cluster,broker},
 * rmqns_controller_heartbeat_age_seconds{cluster,broker,id} (of
 * CTL_VIEW_MAX_BROKERS brokers at most, registered sets' first),
 * rmqns_controller_raft_refused_total{reason} and rmqns_controller_peer_tls. */
int ctl_view_prom(const struct ctl_view_ctx *v, struct buf *out);

/* Runs fn on the node's thread with its state, and waits for it. */
int ctl_node_inspect(struct ctl_node *node, void (*fn)(void *arg, const struct ctl_state *s),
		     void *arg);

#endif
