/* The embedded controller's parameters from the options
 * (controller_params.h). */
#include <stdio.h>
#include <string.h>

#include <urcu.h>

#include "rmqns/config.h"
#include "rmqns/controller.h"
#include "rmqns/controller_params.h"
#include "rmqns/err.h"
#include "rmqns/properties.h"

int controller_params_from_options(struct ctl_node_config *p, struct properties *shown,
				   const struct config *cfg, const struct options *o,
				   const char *store_path, char *err, size_t errlen)
{
	char port[16] = "";
	int rc;

	*p = (struct ctl_node_config){
		.group = o->controllerDLegerGroup,
		.peers = o->controllerDLegerPeers,
		.self_id = o->controllerDLegerSelfId,
		.store_path = o->controllerStorePath,
		/* Java binds the controller on bindAddress, not the peer's host */
		.bind_host = o->bindAddress && *o->bindAddress ? o->bindAddress : "0.0.0.0",
		.raft_port_offset = o->controllerRaftPortOffset,
		.raft_max_message = (uint64_t)o->controllerRaftMaxMessageBytes,
		.peer_tls_cert = o->controllerPeerTlsCertPath,
		.peer_tls_key = o->controllerPeerTlsKeyPath,
		.peer_tls_trust = o->controllerPeerTlsTrustCertPath,
		.election_timeout_ms = (unsigned)o->controllerElectionTimeoutMillis,
		.heartbeat_timeout_ms = (unsigned)o->controllerHeartbeatTimeoutMillis,
		.scan_not_active_ms = o->scanNotActiveBrokerInterval,
		.scan_inactive_master_ms = o->scanInactiveMasterInterval,
		.adopt_wait_ms = o->controllerAdoptWaitMs > 0 ? o->controllerAdoptWaitMs : -1,
		.import_file = o->controllerImportFile,
		.max_live_brokers = (uint32_t)o->controllerMaxLiveBrokers,
		.max_heartbeat_timeout_ms = o->controllerMaxHeartbeatTimeoutMillis,
		.options = shown,
		.config_store_path = store_path,
	};
	int self_port = ctl_peers_self_port(o->controllerDLegerPeers, o->controllerDLegerSelfId, err,
					    errlen);
	if (self_port < 0)
		return RMQNS_EINVAL;
	snprintf(port, sizeof port, "%d", self_port);

	rcu_register_thread();
	rcu_read_lock();
	rc = config_properties(cfg, shown);
	rcu_read_unlock();
	rcu_unregister_thread();
	/* 1010 shows the port the controller serves, as Java's copy of the
	 * network options does */
	if (rc == 0)
		rc = properties_set(shown, "listenPort", port);
	/* where 1009 writes, as Java's controller: its own file, not the -c one */
	if (rc == 0 && store_path)
		rc = properties_set(shown, "configStorePath", store_path);
	if (rc < 0)
		snprintf(err, errlen, "the controller's option set: %s", rmqns_strerror(rc));
	return rc;
}
