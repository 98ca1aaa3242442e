/* The controller's port (controller_port.h): frames cut by the reactors on
 * the controllerDLegerPeers address pass the ACL check there and are
 * handed to the node; the node's answers travel back through net_send on
 * the node's thread. Each queued request holds its connection's share, so
 * the in-flight cap and the memory budget count it as they count the
 * NameServer's own requests; the bytes the node's Raft links hold are
 * counted in that budget too (ctl_port_hold). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_internal.h"
#include "rmqns/acl.h"
#include "rmqns/controller_port.h"
#include "rmqns/err.h"
#include "rmqns/log.h"
#include "rmqns/metrics.h"
#include "rmqns/net.h"
#include "rmqns/remoting.h"

struct ctl_port {
	struct server *srv;
	struct acl *acl;
	struct ctl_node *node;
	int port;
};

/* A request on its way to the node and back. */
struct ctl_port_call {
	struct net_conn conn;
	struct net_conn_share *share;
	size_t bytes;
};

static void ctl_port_send(struct net_conn conn, const uint8_t *frame, size_t len)
{
	struct net_send s;
	int rc = net_send_begin(&s, conn, len);

	if (rc == 0 && s.out) {
		rc = buf_append(s.out, frame, len);
		if (rc == 0)
			rc = net_send_commit(&s);
		else
			net_send_abort(&s);
	}
	if (rc < 0 && rc != RMQNS_ECLOSED)
		log_debug("controller: answer not sent: %s", rmqns_strerror(rc));
}

/* On the node's thread. */
static void ctl_port_on_reply(void *arg, const uint8_t *frame, size_t len)
{
	struct ctl_port_call *call = arg;

	if (frame && !net_share_closed(call->share))
		ctl_port_send(call->conn, frame, len);
	net_share_release(call->share, call->bytes, false);
	free(call);
}

/* The ACL's refusal, answered on the reactor: code 16 and why. */
static void ctl_port_refuse(const struct net_frame *f, const struct remoting_cmd *req,
			    const char *remark)
{
	struct ctl_answer ans = { 0 };
	struct buf out = BUF_INIT;

	metrics_controller_request(req->code, RSP_NO_PERMISSION, metrics_now_ns());
	if (ctl_answer_set(&ans, RSP_NO_PERMISSION, "%s", remark) == 0 &&
	    ctl_answer_encode(&ans, req, &out) == 0)
		ctl_port_send(f->conn, out.data, out.len);
	ctl_answer_clear(&ans);
	buf_free(&out);
}

/* A negative return closes the connection: the frame does not decode. */
static int ctl_port_on_frame(void *arg, const struct net_frame *f)
{
	struct ctl_port *p = arg;
	struct remoting_cmd req;
	char remark[256];

	if (remoting_decode(f->data, f->len, &req) != 0) {
		log_warn_limited("%s: controller port: a frame that does not decode; closing", f->peer);
		return -1;
	}
	bool allowed = acl_authorize(p->acl, &req, f->peer, remark, sizeof remark);
	if (!allowed && !remoting_is_oneway(&req)) /* a one-way request gets no answer */
		ctl_port_refuse(f, &req, remark);
	remoting_cmd_release(&req);
	if (!allowed)
		return 0;

	struct ctl_port_call *call = malloc(sizeof *call);
	if (!call) {
		log_warn_limited("%s: controller port: no memory for a request; closing", f->peer);
		return -1;
	}
	*call = (struct ctl_port_call){ .conn = f->conn, .share = f->share, .bytes = f->len };
	net_share_hold(f->share, f->len, false);
	int rc = ctl_node_submit(p->node, f->data, f->len, f->conn.id, ctl_port_on_reply, call);
	if (rc < 0) {
		net_share_release(f->share, f->len, false);
		free(call);
		if (rc == RMQNS_ECLOSED)
			return 0; /* stopping: no answer, as for any request at shutdown */
		log_warn_limited("%s: controller port: request not queued: %s; closing", f->peer,
			 rmqns_strerror(rc));
		return -1;
	}
	return 0;
}

static void ctl_port_on_closed(void *arg, uint64_t conn_id)
{
	struct ctl_port *p = arg;

	if (ctl_node_conn_closed(p->node, conn_id) == RMQNS_ENOMEM)
		log_error_limited("controller: no memory to tell of a closed connection; its brokers expire "
			  "by their heartbeat timeout instead");
}

/* NOTIFY_BROKER_ROLE_CHANGED to a broker, on the node's thread. */
static void ctl_port_notify(void *arg, const char *address, const uint8_t *frame, size_t len)
{
	struct ctl_port *p = arg;
	int rc = net_send_to(p->srv, address, frame, len);

	if (rc < 0 && rc != RMQNS_ECLOSED)
		log_warn_limited("controller: role change notice to %s not sent: %s", address,
			 rmqns_strerror(rc));
}

/* The bytes the Raft links hold, into the server's connection memory. */
static void ctl_port_hold(void *arg, int64_t delta)
{
	struct ctl_port *p = arg;

	server_hold_external(p->srv, delta);
}

struct ctl_port *ctl_port_start(struct server *srv, struct acl *acl,
				const struct ctl_node_config *cfg, const char *bind_address,
				char *err, size_t errlen)
{
	int port = ctl_peers_self_port(cfg, err, errlen);
	if (port < 0)
		return NULL;
	struct ctl_port *p = calloc(1, sizeof *p);
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	*p = (struct ctl_port){ .srv = srv, .acl = acl, .port = port };
	struct ctl_node_config nc = *cfg;
	nc.notify = ctl_port_notify;
	nc.notify_arg = p;
	nc.hold = ctl_port_hold;
	nc.hold_arg = p;
	p->node = ctl_node_start(&nc, err, errlen);
	if (!p->node) {
		free(p);
		return NULL;
	}
	const struct net_callbacks cb = {
		.on_frame = ctl_port_on_frame,
		.on_closed = ctl_port_on_closed,
		.arg = p,
	};
	int rc = server_add_listener(srv, bind_address, port,
				     cfg->jraft ? "jRaftControllerRPCAddr" : "controllerDLegerPeers", &cb);
	if (rc < 0) {
		snprintf(err, errlen, "cannot add the controller's port %d: %s", port,
			 rmqns_strerror(rc));
		ctl_port_stop(p);
		return NULL;
	}
	return p;
}

struct ctl_node *ctl_port_node(struct ctl_port *p)
{
	return p ? p->node : NULL;
}

void ctl_port_stop(struct ctl_port *p)
{
	if (!p)
		return;
	ctl_node_stop(p->node);
	free(p);
}
