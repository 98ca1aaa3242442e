/* Three rmqns processes with embedded controllers (ctl_cluster.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_cluster.h"
#include "rmqns/client.h"
#include "rmqns/remoting.h"

int ctl_cluster_init(struct ctl_cluster *cl, const char *host)
{
	size_t off = 0;

	memset(cl, 0, sizeof *cl);
	if (harness_mkdtemp(cl->dir, sizeof cl->dir, "rmqns-test-ctlc") != 0)
		return -1;
	for (int i = 0; i < CTL_CLUSTER_NODES; i++) {
		cl->ctl_port[i] = harness_free_port_pair(CTL_CLUSTER_RAFT_OFFSET);
		cl->http_port[i] = harness_free_port();
		if (cl->ctl_port[i] <= 0 || cl->http_port[i] <= 0)
			return -1;
		off += (size_t)snprintf(cl->peers + off, sizeof cl->peers - off, "%sn%d-%s:%d",
					i ? ";" : "", i, host, cl->ctl_port[i]);
	}
	return getenv(CTL_CLUSTER_PEER_TLS_ENV) ? ctl_cluster_use_peer_tls(cl) : 0;
}

int ctl_cluster_use_peer_tls(struct ctl_cluster *cl)
{
	static const char *const steps[] = {
		"openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key "
		"-out ca.pem -days 2 -subj /CN=rmqns-peer-ca",
		"openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout peer.key "
		"-out peer.csr -subj /CN=peer -addext subjectAltName=IP:127.0.0.1,DNS:localhost",
		"openssl x509 -req -in peer.csr -CA ca.pem -CAkey ca.key -set_serial 1 -days 2 "
		"-copy_extensions copy -out peer.pem",
		/* 127.0.0.1 in the subject only: the name must be in the subjectAltName */
		"openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout elsewhere.key "
		"-out elsewhere.csr -subj /CN=127.0.0.1 -addext subjectAltName=DNS:elsewhere.invalid",
		"openssl x509 -req -in elsewhere.csr -CA ca.pem -CAkey ca.key -set_serial 2 -days 2 "
		"-copy_extensions copy -out elsewhere.pem",
	};
	char cmd[1024];

	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		snprintf(cmd, sizeof cmd, "mkdir -p '%s/tls' && cd '%s/tls' && { %s ; } >/dev/null 2>&1",
			 cl->dir, cl->dir, steps[i]);
		if (system(cmd) != 0) {
			fprintf(stderr, "cannot make the peer certificates: %s\n", steps[i]);
			return -1;
		}
	}
	cl->peer_tls = true;
	return 0;
}

int ctl_cluster_start(struct ctl_cluster *cl, int i)
{
	return ctl_cluster_start_with(cl, i, NULL);
}

int ctl_cluster_start_with(struct ctl_cluster *cl, int i, const char *const *extra)
{
	char a_peers[600], a_self[64], a_store[400], a_http[64], a_tls[3][400];
	const char *args[24] = { "--enableControllerInNamesrv=true", "--controllerDLegerGroup=g1",
				 a_peers, a_self, a_store, a_http, "--scanNotActiveBrokerInterval=500",
				 "--scanInactiveMasterInterval=500" };
	size_t n = 8;
	static const char *const tls_opts[3][2] = { { "controllerPeerTlsCertPath", "peer.pem" },
						    { "controllerPeerTlsKeyPath", "peer.key" },
						    { "controllerPeerTlsTrustCertPath", "ca.pem" } };

	snprintf(a_peers, sizeof a_peers, "--controllerDLegerPeers=%s", cl->peers);
	snprintf(a_self, sizeof a_self, "--controllerDLegerSelfId=n%d", i);
	snprintf(a_store, sizeof a_store, "--controllerStorePath=%s/n%d", cl->dir, i);
	snprintf(a_http, sizeof a_http, "--httpPort=%d", cl->http_port[i]);
	for (int k = 0; cl->peer_tls && k < 3; k++) {
		snprintf(a_tls[k], sizeof a_tls[k], "--%s=%s/tls/%s", tls_opts[k][0], cl->dir,
			 tls_opts[k][1]);
		args[n++] = a_tls[k];
	}
	for (; extra && *extra && n + 1 < sizeof args / sizeof *args; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	memset(&cl->node[i], 0, sizeof cl->node[i]);
	return harness_start(&cl->node[i], args);
}

void ctl_cluster_request(struct remoting_cmd *req, struct remoting_ext_field *f, int32_t code,
			 const char *const *ext, const char *body)
{
	uint32_t n = 0;

	harness_request_init(req, code, REMOTING_JSON);
	for (; ext && ext[2 * n] && n < HARNESS_CALL_MAX_EXT; n++)
		f[n] = (struct remoting_ext_field){ ext[2 * n], ext[2 * n + 1] };
	harness_request_fields(req, f, n, body);
}

int ctl_cluster_call(const struct ctl_cluster *cl, int i, int32_t code, const char *const *ext,
		     const char *body, struct client_reply **out)
{
	struct remoting_ext_field f[HARNESS_CALL_MAX_EXT];
	struct remoting_cmd req;
	int err;

	if (out)
		*out = NULL;
	struct client *c = client_connect("127.0.0.1", cl->ctl_port[i], 1000, &err);
	if (!c)
		return -1;
	ctl_cluster_request(&req, f, code, ext, body);
	struct client_reply *r = NULL;
	int rc = client_call(c, &req, &r, 3000);
	client_close(c);
	if (rc < 0)
		return -1;
	int answer = r->cmd.code;
	if (out)
		*out = r;
	else
		client_reply_free(r);
	return answer;
}

int ctl_cluster_wait_leader(const struct ctl_cluster *cl, const bool *alive, int64_t *serving_ms)
{
	int64_t t0 = harness_now_ms();
	const char *const next_id[] = { "clusterName", "C1", "brokerName", "probe", NULL };
	while (harness_now_ms() - t0 < CTL_CLUSTER_WAIT_MS) {
		int leader = -1;
		bool agree = true;
		for (int i = 0; i < CTL_CLUSTER_NODES && agree; i++) {
			if (!alive[i])
				continue;
			struct client_reply *r;
			if (ctl_cluster_call(cl, i, 1005, NULL, NULL, &r) != 0) {
				if (r)
					client_reply_free(r);
				agree = false;
				continue;
			}
			const char *id = remoting_ext_get(&r->cmd, "controllerLeaderId");
			int named = id && id[0] == 'n' ? atoi(id + 1) : -1;
			if (named < 0 || named >= CTL_CLUSTER_NODES || !alive[named] ||
			    (leader >= 0 && named != leader))
				agree = false;
			leader = named;
			client_reply_free(r);
		}
		if (agree && leader >= 0 && ctl_cluster_call(cl, leader, 1012, next_id, NULL, NULL) == 0) {
			if (serving_ms)
				*serving_ms = harness_now_ms() - t0;
			return leader;
		}
		harness_sleep_ms(20);
	}
	return -1;
}
