/* A controller node's set-up and teardown: the configuration checked and
 * copied into the node, the Raft configuration every node bootstraps, and
 * freeing what the node owns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_node_setup.h"
#include "rmqns/err.h"

int ctl_node_bootstrap(struct ctl_node *n, char *err, size_t errlen)
{
	struct raft_configuration conf;
	char addr[300];
	int rc = 0;

	/* the same configuration on every node; a node with a log keeps its own */
	raft_configuration_init(&conf);
	for (unsigned i = 0; i < n->n_peers && rc == 0; i++) {
		rc = ctl_peer_raft_address(&n->peers[i], addr, sizeof addr);
		if (rc == 0)
			rc = raft_configuration_add(&conf, i + 1, addr, RAFT_VOTER);
	}
	if (rc == 0)
		rc = raft_bootstrap(&n->raft, &conf);
	raft_configuration_close(&conf);
	if (rc != 0 && rc != RAFT_CANTBOOTSTRAP) {
		snprintf(err, errlen, "raft bootstrap in %s: %s", n->dir, raft_errmsg(&n->raft));
		return RMQNS_EIO;
	}
	return 0;
}

void ctl_node_free(struct ctl_node *n)
{
	ctl_peers_free(n->peers, n->n_peers);
	free(n->group);
	free(n->peers_desc);
	free(n->dir);
	free(n->config_store_path);
	free(n->import_file);
	for (int i = 0; i < 3; i++)
		free(n->peer_tls[i]);
	ctl_state_free(&n->state);
	ctl_live_free(&n->live);
	for (uint32_t i = 0; i < n->adopt_wait_count; i++)
		free(n->adopt_waits[i].name);
	free(n->adopt_waits);
	properties_free(&n->options);
	buf_free(&n->out);
	buf_free(&n->view_json);
	buf_free(&n->view_prom);
	pthread_mutex_destroy(&n->lock);
	pthread_cond_destroy(&n->cond);
	free(n);
}

static int node_options(struct ctl_node *n, const struct ctl_node_config *cfg)
{
	int rc = cfg->options ? properties_copy(&n->options, cfg->options) : 0;

	/* the flags 1009 may change must be there to be changed */
	if (!rc && !properties_has(&n->options, "enableElectUncleanMaster"))
		rc = properties_set(&n->options, "enableElectUncleanMaster", "false");
	if (!rc && !properties_has(&n->options, "notifyBrokerRoleChanged"))
		rc = properties_set(&n->options, "notifyBrokerRoleChanged", "true");
	if (!rc && !properties_has(&n->options, "controllerAdoptBrokers"))
		rc = properties_set(&n->options, "controllerAdoptBrokers", "true");
	return rc;
}

int ctl_node_configure(struct ctl_node *n, const struct ctl_node_config *cfg, char *err,
			  size_t errlen)
{
	int rc;

	if (!cfg->store_path || !*cfg->store_path) {
		snprintf(err, errlen, "controllerStorePath must be set");
		return RMQNS_EINVAL;
	}
	if ((rc = ctl_peers_of_config(cfg, &n->peers, &n->n_peers, &n->self, err, errlen)))
		return rc;
	n->raft_max_message = cfg->raft_max_message ? cfg->raft_max_message : CTL_DEFAULT_RAFT_MAX_MESSAGE;
	const struct ctl_peer *me = &n->peers[n->self];
	if (ctl_peer_raft_address(me, n->raft_address, sizeof n->raft_address)) {
		snprintf(err, errlen, "raft address of %s is too long", me->id);
		return RMQNS_EINVAL;
	}
	snprintf(n->bind_address, sizeof n->bind_address, "%s:%d",
		 cfg->bind_host && *cfg->bind_host ? cfg->bind_host : me->raft_host, me->raft_port);
	n->group = strdup(cfg->group ? cfg->group : "");
	n->peers_desc = ctl_peers_describe(n->peers, n->n_peers, !cfg->jraft);
	if (asprintf(&n->dir, "%s/raft-%s", cfg->store_path, me->id) < 0)
		n->dir = NULL;
	if (!n->group || !n->peers_desc || !n->dir || node_options(n, cfg)) {
		snprintf(err, errlen, "out of memory");
		return RMQNS_ENOMEM;
	}
	n->election_timeout_ms = cfg->election_timeout_ms ? cfg->election_timeout_ms : 500;
	n->heartbeat_timeout_ms = cfg->heartbeat_timeout_ms ? cfg->heartbeat_timeout_ms : 100;
	n->snapshot_threshold = cfg->snapshot_threshold ? cfg->snapshot_threshold : 1024;
	n->snapshot_trailing = cfg->snapshot_trailing ? cfg->snapshot_trailing : 128;
	n->scan_not_active_ms = cfg->scan_not_active_ms > 0 ? cfg->scan_not_active_ms : 5000;
	n->scan_inactive_master_ms = cfg->scan_inactive_master_ms > 0 ? cfg->scan_inactive_master_ms : 5000;
	ctl_live_set_bounds(&n->live, cfg->max_live_brokers, cfg->max_heartbeat_timeout_ms);
	n->notify = cfg->notify;
	n->notify_arg = cfg->notify_arg;
	n->hold = cfg->hold;
	n->hold_arg = cfg->hold_arg;
	n->namesrv_code = cfg->namesrv_code;
	n->serving_master = cfg->serving_master;
	n->serving_master_arg = cfg->serving_master_arg;
	n->adopt_wait_ms = cfg->adopt_wait_ms ? cfg->adopt_wait_ms : 3000;
	if (cfg->import_file && *cfg->import_file && !(n->import_file = strdup(cfg->import_file))) {
		snprintf(err, errlen, "out of memory");
		return RMQNS_ENOMEM;
	}
	const char *tls[3] = { cfg->peer_tls_cert, cfg->peer_tls_key, cfg->peer_tls_trust };
	for (int i = 0; tls[0] && *tls[0] && tls[1] && tls[2] && i < 3; i++)
		if (!(n->peer_tls[i] = strdup(tls[i]))) {
			snprintf(err, errlen, "out of memory");
			return RMQNS_ENOMEM;
		}
	if (cfg->config_store_path && !(n->config_store_path = strdup(cfg->config_store_path))) {
		snprintf(err, errlen, "out of memory");
		return RMQNS_ENOMEM;
	}
	return 0;
}
