/* What ctl_node_publish.c gives ctl_node.c: the status, leader and view
 * the node publishes for other threads, called on the node's thread. */
#ifndef RMQNS_CONTROLLER_CTL_NODE_PUBLISH_H
#define RMQNS_CONTROLLER_CTL_NODE_PUBLISH_H

#include <stdbool.h>

#include "ctl_node.h"

/* A leader whose no-op of its term is applied. */
bool ctl_node_serving(struct ctl_node *n);
/* The leader's index in the peers list, -1 = none known. */
int ctl_node_leader_index(struct ctl_node *n);
void ctl_node_publish_status(struct ctl_node *n);
/* Notes (and logs) a change of the leader this node knows. */
void ctl_node_watch_leader(struct ctl_node *n);
/* Rebuilds the view at most every CTL_VIEW_MS. */
void ctl_node_publish_view(struct ctl_node *n);

#endif
