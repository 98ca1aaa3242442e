/* The Raft transport: libraft's TCP transport under a thin layer that
 * dials each peer by its id at the address controllerDLegerPeers gives it
 * now, resolving host names first. libraft 0.15 takes numeric IPv4
 * addresses only and keeps the addresses of its configuration in the log;
 * dialling by id lets peers be names (StatefulSet pods, Compose services)
 * whose address changes across restarts. Runs on the node's loop.
 *
 * libraft 0.15 never reads its outbound connections, so it learns of a
 * dead peer only when a write fails. A peer that comes back at another
 * address (a restarted container or pod) leaves the old connection half
 * closed towards an address nobody answers at, and its writes would be
 * retried by the kernel for many minutes. Outbound connections therefore
 * give up on data unacknowledged for CTL_RAFT_UNACKED_MS; the failed write
 * makes libraft dial again, and the dial resolves the name anew. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "ctl_internal.h"
#include "rmqns/log.h"

struct ctl_resolve {
	uv_getaddrinfo_t gai;
	struct ctl_transport *t;
	struct raft_uv_connect *req;
	raft_uv_connect_cb cb;
	raft_id id;
	int port;
	struct ctl_resolve *prev, *next;
};

/* Well above a heartbeat's round trip (the leader sends every 100 ms), well
 * below the kernel's own give-up time. */
#define CTL_RAFT_UNACKED_MS 5000u

/* One dial handed to libraft's TCP transport on behalf of libraft's own
 * request, so that the connected stream can be set up before it is. */
struct ctl_dial {
	struct raft_uv_connect inner;
	struct raft_uv_connect *req;
	raft_uv_connect_cb cb;
};

static struct ctl_transport *of(struct raft_uv_transport *outer)
{
	return outer->impl;
}

static void tr_on_dialled(struct raft_uv_connect *inner, struct uv_stream_s *stream, int status)
{
	struct ctl_dial *d = inner->data;
	uv_os_fd_t fd;
	unsigned ms = CTL_RAFT_UNACKED_MS;

	/* without the bound the connection still works, with the kernel's */
	if (status == 0 && stream && (uv_fileno((uv_handle_t *)stream, &fd) != 0 ||
				      setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms) != 0))
		log_warn("controller: cannot bound unacknowledged Raft data to %u ms", ms);
	d->cb(d->req, stream, status);
	free(d);
}

/* Dials a numeric address; cb gets req, as libraft expects. Called with the
 * transport open; a dial cancelled by its close still calls back. */
static int tr_dial(struct ctl_transport *t, struct raft_uv_connect *req, raft_id id, const char *addr,
		   raft_uv_connect_cb cb)
{
	struct ctl_dial *d = malloc(sizeof *d);

	if (!d)
		return RAFT_NOMEM;
	*d = (struct ctl_dial){ .inner.data = d, .req = req, .cb = cb };
	req->cb = cb;
	int rc = t->tcp.connect(&t->tcp, &d->inner, id, addr, tr_on_dialled);
	if (rc)
		free(d);
	return rc;
}

static int tr_init(struct raft_uv_transport *outer, raft_id id, const char *address)
{
	struct ctl_transport *t = of(outer);
	int rc = t->tcp.init(&t->tcp, id, address);

	if (rc)
		snprintf(outer->errmsg, sizeof outer->errmsg, "%s", t->tcp.errmsg);
	return rc;
}

static void tr_on_accept(struct raft_uv_transport *tcp, raft_id id, const char *address,
			 struct uv_stream_s *stream)
{
	struct ctl_transport *t = tcp->data;

	t->accept_cb(&t->outer, id, address, stream);
}

static int tr_listen(struct raft_uv_transport *outer, raft_uv_accept_cb cb)
{
	struct ctl_transport *t = of(outer);
	int rc;

	t->accept_cb = cb;
	t->tcp.data = t;
	rc = t->tcp.listen(&t->tcp, tr_on_accept);
	if (rc)
		snprintf(outer->errmsg, sizeof outer->errmsg, "%s", t->tcp.errmsg);
	return rc;
}

static void tr_maybe_closed(struct ctl_transport *t)
{
	if (t->closing && t->tcp_closed && !t->resolving && t->close_cb) {
		raft_uv_transport_close_cb cb = t->close_cb;
		t->close_cb = NULL;
		cb(&t->outer);
	}
}

static void tr_on_resolved(uv_getaddrinfo_t *gai, int status, struct addrinfo *res)
{
	struct ctl_resolve *r = gai->data;
	struct ctl_transport *t = r->t;
	char addr[INET_ADDRSTRLEN + 8], ip[INET_ADDRSTRLEN];
	int rc = RAFT_NOCONNECTION;

	if (r->prev)
		r->prev->next = r->next;
	else
		t->resolving = r->next;
	if (r->next)
		r->next->prev = r->prev;
	if (t->closing) {
		rc = RAFT_CANCELED;
	} else if (status == 0 && res && res->ai_family == AF_INET &&
		   inet_ntop(AF_INET, &((struct sockaddr_in *)res->ai_addr)->sin_addr, ip, sizeof ip)) {
		snprintf(addr, sizeof addr, "%s:%d", ip, r->port);
		rc = tr_dial(t, r->req, r->id, addr, r->cb);
	} else {
		log_debug("controller: raft peer %llu does not resolve: %s", (unsigned long long)r->id,
			  status ? uv_strerror(status) : "no IPv4 address");
	}
	if (res)
		uv_freeaddrinfo(res);
	if (rc)
		r->cb(r->req, NULL, rc);
	free(r);
	tr_maybe_closed(t);
}

static int tr_connect(struct raft_uv_transport *outer, struct raft_uv_connect *req, raft_id id,
		      const char *address, raft_uv_connect_cb cb)
{
	struct ctl_transport *t = of(outer);
	const struct ctl_peer *p = id >= 1 && id <= t->n_peers ? &t->peers[id - 1] : NULL;
	struct in_addr numeric;

	/* an id outside the peers list keeps the address the log gave it */
	if (!p || inet_pton(AF_INET, p->raft_host, &numeric) == 1) {
		char addr[300];
		if (p)
			snprintf(addr, sizeof addr, "%s:%d", p->raft_host, p->raft_port + t->port_offset);
		return tr_dial(t, req, id, p ? addr : address, cb);
	}
	struct ctl_resolve *r = calloc(1, sizeof *r);
	if (!r)
		return RAFT_NOMEM;
	*r = (struct ctl_resolve){ .t = t, .req = req, .cb = cb, .id = id,
				   .port = p->raft_port + t->port_offset, .next = t->resolving };
	r->gai.data = r;
	const struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	if (uv_getaddrinfo(t->loop, &r->gai, tr_on_resolved, p->raft_host, NULL, &hints) != 0) {
		free(r);
		return RAFT_NOCONNECTION;
	}
	if (t->resolving)
		t->resolving->prev = r;
	t->resolving = r;
	return 0;
}

static void tr_on_tcp_closed(struct raft_uv_transport *tcp)
{
	struct ctl_transport *t = tcp->data;

	t->tcp_closed = true;
	tr_maybe_closed(t);
}

static void tr_close(struct raft_uv_transport *outer, raft_uv_transport_close_cb cb)
{
	struct ctl_transport *t = of(outer);

	t->closing = true;
	t->close_cb = cb;
	for (struct ctl_resolve *r = t->resolving; r; r = r->next)
		uv_cancel((uv_req_t *)&r->gai); /* their callbacks still come */
	t->tcp.data = t;
	t->tcp.close(&t->tcp, tr_on_tcp_closed);
}

int ctl_transport_init(struct ctl_transport *t, uv_loop_t *loop, const struct ctl_peer *peers,
		       unsigned n_peers, int port_offset, const char *bind_address, char *err,
		       size_t errlen)
{
	int rc;

	memset(t, 0, sizeof *t);
	t->loop = loop;
	t->peers = peers;
	t->n_peers = n_peers;
	t->port_offset = port_offset;
	if ((rc = raft_uv_tcp_init(&t->tcp, loop)) != 0) {
		snprintf(err, errlen, "raft transport: %s", raft_strerror(rc));
		return rc;
	}
	if ((rc = raft_uv_tcp_set_bind_address(&t->tcp, bind_address)) != 0) {
		snprintf(err, errlen, "raft bind address %s: %s", bind_address, raft_strerror(rc));
		raft_uv_tcp_close(&t->tcp);
		return rc;
	}
	t->outer = (struct raft_uv_transport){ .impl = t, .init = tr_init, .listen = tr_listen,
					       .connect = tr_connect, .close = tr_close };
	return 0;
}

void ctl_transport_free(struct ctl_transport *t)
{
	raft_uv_tcp_close(&t->tcp);
}
