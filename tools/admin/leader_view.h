/* One controller node's view of its group: the CONTROLLER_GET_METADATA_INFO
 * (1005) answer, which every node gives, leader or not. The controller
 * subcommands use it to find the leader; clusterDiff compares it across
 * nodes. The strings point into the answer, which the struct owns. */
#ifndef ADMIN_LEADER_VIEW_H
#define ADMIN_LEADER_VIEW_H

#include <stdbool.h>

#include <jansson.h>

#include "target.h"

struct leader_view {
	struct call_result r;
	const char *group;
	const char *leader_id;   /* NULL: this node knows no leader */
	const char *leader_addr; /* likewise */
	const char *peers;       /* "n0:host:port;n1:host:port;" */
	bool is_leader;          /* this node's Raft role */
};

/* Asks t. Returns an enum admin_exit: 0 when it answered code 0 (the
 * fields are then set), else the failure's code with m->r describing it. */
int leader_view_ask(const struct target *t, int timeout_ms, struct leader_view *m);

/* The answer as JSON: server, group, controllerLeaderId,
 * controllerLeaderAddress (null when unknown), isLeader, peers as
 * [{"id","address"}]. */
json_t *leader_view_json(const struct target *t, const struct leader_view *m);

void leader_view_clear(struct leader_view *m);

#endif
