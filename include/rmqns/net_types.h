/* The connection reference alone (net.h has the API): for headers that
 * carry one, such as a request, without the whole network API. */
#ifndef RMQNS_NET_TYPES_H
#define RMQNS_NET_TYPES_H

#include <stdint.h>

struct server;
struct net_conn_share;

/* A reference to a connection, for whoever answers on it: the server and
 * the connection's id. Copied freely; it never dangles (net.h). */
struct net_conn {
	struct server *server;
	uint64_t id;
};

/* "ip:port" of a peer, NUL included. */
#define NET_PEER_LEN 64

#endif
