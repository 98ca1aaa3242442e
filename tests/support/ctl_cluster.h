/* Three rmqns processes with embedded controllers (enableControllerInNamesrv)
 * on loopback, for the controller's integration tests: their ports, a
 * request to one node's controller port, and the leader they agree on. */
#ifndef RMQNS_TEST_CTL_CLUSTER_H
#define RMQNS_TEST_CTL_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include "harness.h"

#define CTL_CLUSTER_NODES 3
#define CTL_CLUSTER_RAFT_OFFSET 1000
#define CTL_CLUSTER_WAIT_MS 30000

/* Set (to anything) in the environment: the nodes run with peer TLS. */
#define CTL_CLUSTER_PEER_TLS_ENV "RMQNS_TEST_CTL_PEER_TLS"

struct ctl_cluster {
	char dir[256];
	char peers[512];
	bool peer_tls; /* the nodes get controllerPeerTls* (certificates under dir/tls) */
	int ctl_port[CTL_CLUSTER_NODES];
	int http_port[CTL_CLUSTER_NODES];
	struct harness_server node[CTL_CLUSTER_NODES];
};

/* A fresh directory and free ports; host is how controllerDLegerPeers
 * spells the nodes' address. 0 or -1. Nothing started yet. With
 * CTL_CLUSTER_PEER_TLS_ENV set, as ctl_cluster_use_peer_tls. */
int ctl_cluster_init(struct ctl_cluster *cl, const char *host);
/* The nodes started from now on run with mutual peer TLS: a CA
 * (dir/tls/ca.pem), one certificate for the peers naming 127.0.0.1 and
 * localhost (peer.pem, peer.key), and one of the same CA naming only
 * elsewhere.invalid (elsewhere.pem, elsewhere.key), made by openssl. */
int ctl_cluster_use_peer_tls(struct ctl_cluster *cl);
/* Starts node i (group g1, its store under the directory, its HTTP port,
 * brokers' liveness scanned every 500 ms). 0 or -1. */
int ctl_cluster_start(struct ctl_cluster *cl, int i);
/* The same with more arguments (NULL-terminated, up to 15; NULL = none). */
int ctl_cluster_start_with(struct ctl_cluster *cl, int i, const char *const *extra);

/* A JSON request of `code` with ext pairs (key, value, ..., NULL; at most
 * HARNESS_CALL_MAX_EXT, kept in f) and an optional body string. */
void ctl_cluster_request(struct remoting_cmd *req, struct remoting_ext_field *f, int32_t code,
			 const char *const *ext, const char *body);

/* One request to node i's controller port on a connection of its own;
 * the answer's code, or -1 when the node does not answer. ext: key,
 * value, ..., NULL (or NULL). *out (optional) keeps the answer. */
int ctl_cluster_call(const struct ctl_cluster *cl, int i, int32_t code, const char *const *ext,
		     const char *body, struct client_reply **out);

/* The node every live node (alive[i]) names as leader, once they agree
 * and that node serves (answers a leader-only read); -1 after
 * CTL_CLUSTER_WAIT_MS. *serving_ms (optional): how long that took. */
int ctl_cluster_wait_leader(const struct ctl_cluster *cl, const bool *alive, int64_t *serving_ms);

#endif
