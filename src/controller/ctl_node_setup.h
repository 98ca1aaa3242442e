/* What ctl_node_setup.c gives ctl_node.c: the configuration turned into a
 * node, its first Raft configuration, and its teardown. */
#ifndef RMQNS_CONTROLLER_CTL_NODE_SETUP_H
#define RMQNS_CONTROLLER_CTL_NODE_SETUP_H

#include "ctl_node.h"

int ctl_node_configure(struct ctl_node *n, const struct ctl_node_config *cfg, char *err,
		       size_t errlen);
/* Bootstraps the Raft configuration of a node without a log. */
int ctl_node_bootstrap(struct ctl_node *n, char *err, size_t errlen);
void ctl_node_free(struct ctl_node *n);

#endif
