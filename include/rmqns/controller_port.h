/* The embedded controller served by the NameServer's process: its node
 * (controller.h) started with the parameters main built from the options,
 * and a second listening port on the reactors whose frames go to the node
 * and whose answers and NOTIFY_BROKER_ROLE_CHANGED frames go back out
 * through net. The route tables and the controller share nothing else. */
#ifndef RMQNS_CONTROLLER_PORT_H
#define RMQNS_CONTROLLER_PORT_H

#include <stddef.h>

struct acl;
struct ctl_node;
struct ctl_node_config;
struct server;

struct ctl_port;

/* Starts the node (its Raft member running) and adds the controller's
 * listener to srv, which must not be started yet: bind_address (NULL =
 * every address) at the port of this node's controllerDLegerPeers entry.
 * Requests pass acl first (NULL = none). cfg->notify is replaced by
 * net_send_to on srv. NULL with a reason in err. */
struct ctl_port *ctl_port_start(struct server *srv, struct acl *acl,
				const struct ctl_node_config *cfg, const char *bind_address,
				char *err, size_t errlen);
/* The running node (status, inspection). */
struct ctl_node *ctl_port_node(struct ctl_port *p);
/* Stops the node; after the server stopped reading and before it is
 * destroyed (answers to requests still queued are dropped). NULL is fine. */
void ctl_port_stop(struct ctl_port *p);

#endif
