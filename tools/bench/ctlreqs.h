/* What a broker in controller mode says and hears (controller.md §3, §4),
 * for rmqns-bench `controller`: the requests it sends to the controllers
 * and, with its master's id, to the NameServers, and the few fields it
 * reads from the answers (the leader's address, the master and its epochs,
 * the sync-state set, the master a route names). Pure: bytes in, bytes out. */
#ifndef BENCH_CTLREQS_H
#define BENCH_CTLREQS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rmqns/buf.h"
#include "rmqns/remoting.h"
#include "reqs.h"

#define CTLREQS_MAX_SSS 16

/* One broker as the controller knows it. */
struct ctlreqs_broker {
	const char *cluster;
	const char *name;     /* the broker set */
	const char *addr;     /* ip:port, where it listens */
	int64_t id;           /* its controller id; 0 before one is applied */
	int32_t version;      /* stamped on requests */
	int serialize;        /* 0 JSON, 1 ROCKETMQ */
};

/* 1005, to any controller. */
int ctlreqs_metadata(int32_t opaque, int32_t version, int serialize, struct buf *out);
/* 1012 and 1013 (registerCheckCode "<addr>;<ms>"). */
int ctlreqs_next_id(const struct ctlreqs_broker *b, int32_t opaque, struct buf *out);
int ctlreqs_apply_id(const struct ctlreqs_broker *b, int64_t id, const char *check_code,
		     int32_t opaque, struct buf *out);
/* 1003, 1004 and 1002 (broker trigger: its own id, not designated). */
int ctlreqs_register(const struct ctlreqs_broker *b, int32_t opaque, struct buf *out);
int ctlreqs_replica_info(const struct ctlreqs_broker *b, int32_t opaque, struct buf *out);
int ctlreqs_elect(const struct ctlreqs_broker *b, int32_t opaque, struct buf *out);
/* 904 to a controller, one-way, with what a broker reports (§3.4). */
struct ctlreqs_beat {
	int32_t epoch;         /* the last master epoch it knows, -1 for none */
	int64_t max_offset;
	int64_t confirm_offset;
	int64_t timeout_ms;    /* heartbeatTimeoutMills */
};
int ctlreqs_heartbeat(const struct ctlreqs_broker *b, const struct ctlreqs_beat *beat,
		      int32_t opaque, struct buf *out);
/* 1001 from the master: the new set, with the set epoch it holds now. */
int ctlreqs_alter_sss(const struct ctlreqs_broker *b, int32_t master_epoch, const int64_t *ids,
		      uint32_t n, int32_t sss_epoch, int32_t opaque, struct buf *out);
/* 1006 for one broker set (what mqadmin getSyncStateSet sends). */
int ctlreqs_sync_state_data(const char *name, int32_t opaque, int32_t version, int serialize,
			    struct buf *out);
/* 103 to a NameServer: brokerId 0 as master, its id as slave; body as
 * built by reqs_register_body (plain JSON), its stateVersion the master epoch. */
int ctlreqs_ns_register(const struct ctlreqs_broker *b, int64_t ns_broker_id, const char *ha_addr,
			const struct buf *body, int32_t opaque, struct buf *out);

/* ---- answers ---- */

/* The master as an answer or a notification names it (1002, 1003, 1004, 1008, 1006). */
struct ctlreqs_master {
	bool has_master;
	int64_t master_id;
	char master_addr[64];
	bool has_epoch;
	int32_t master_epoch;
	bool has_sss_epoch;
	int32_t sss_epoch;
	bool has_sss;           /* the body's set could be read */
	int64_t sss[CTLREQS_MAX_SSS];
	uint32_t nsss;
};

/* ext masterBrokerId, masterAddress, masterEpoch, syncStateSetEpoch and a
 * body {"syncStateSet":[...],"syncStateSetEpoch":N} when there is one that
 * reads (1002's member-group body does not: its keys are bare numbers). */
void ctlreqs_read_master(const struct remoting_cmd *cmd, struct ctlreqs_master *m);
/* 1006's body: the entry of `name` in replicasInfoTable. false when absent. */
bool ctlreqs_read_sync_state_data(const uint8_t *body, size_t len, const char *name,
				  struct ctlreqs_master *m);
/* 1005: controllerLeaderAddress into addr; false when the node knows no leader. */
bool ctlreqs_read_leader(const struct remoting_cmd *cmd, char *addr, size_t cap);
/* A route (105) body: brokerAddrs["0"] of the brokerData of `name` into
 * addr; false when the route has no such set or no id 0. */
bool ctlreqs_read_route_master(const uint8_t *body, size_t len, const char *name, char *addr,
			       size_t cap);

#endif
