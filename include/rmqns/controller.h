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
};

/* One event. Strings and ids are owned by the event (ctl_event_clear);
 * unused fields stay NULL / 0. ids is ascending without repeats: the
 * new sync-state set (ALTER), or the ids to clean (CLEAN; none = the
 * whole set). broker_id is the new id (APPLY), the new master (ELECT,
 * when elected) or the id whose address changes (UPDATE). */
struct ctl_event {
	enum ctl_event_type type;
	char *cluster;      /* APPLY, UPDATE */
	char *broker_name;  /* every type */
	char *address;      /* APPLY, UPDATE */
	char *check_code;   /* APPLY */
	int64_t broker_id;
	bool elected;       /* ELECT */
	int64_t *ids;
	uint32_t id_count;
};

void ctl_event_clear(struct ctl_event *ev);
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

#endif
