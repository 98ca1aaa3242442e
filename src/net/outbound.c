/* Outbound connections (net_send_to): a reactor opens one to each peer
 * address it is given frames for, writes them as they come, reads and
 * drops whatever the peer sends, and drops what waits when the connect
 * fails, takes too long or the connection closes. Plaintext writev. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rmqns/log.h"
#include "rmqns/loop.h"

#include "net_internal.h"

static const struct conn_ops outbound_connecting_ops, outbound_open_ops;

/* The reactor's connection to a peer, opened now if there is none. */
static struct conn *outbound_conn(struct reactor *r, const struct net_dest *to)
{
	struct conn *c;
	cds_list_for_each_entry(c, &r->outbound, outbound_node)
		if (!c->closing && strcmp(c->peer, to->name) == 0)
			return c;

	int fd = socket(to->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_warn("cannot connect to %s: socket: %s", to->name, strerror(errno));
		return NULL;
	}
	int one = 1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	bool pending = false;
	if (connect(fd, (const struct sockaddr *)&to->addr, to->addrlen) < 0) {
		if (errno != EINPROGRESS) {
			log_warn("cannot connect to %s: %s", to->name, strerror(errno));
			close(fd);
			return NULL;
		}
		pending = true;
	}
	c = conn_new(r, fd, pending ? LOOP_OUT : LOOP_IN, to->name,
		     pending ? &outbound_connecting_ops : &outbound_open_ops);
	if (!c) {
		close(fd);
		return NULL;
	}
	c->outbound = true;
	c->connecting = pending;
	c->connect_deadline_ms = r->now_ms + NET_CONNECT_TIMEOUT_MS;
	cds_list_add_tail(&c->outbound_node, &r->outbound);
	log_debug("connecting to %s", c->peer);
	return c;
}

/* A frame for an outbound connection: queued behind what waits, or
 * dropped past the bound. */
void outbound_deliver(struct reactor *r, struct net_msg *m)
{
	struct conn *c = outbound_conn(r, m->to);
	if (!c) {
		net_msg_free(m);
		return;
	}
	if (c->out_bytes + m->data.len > NET_OUTBOUND_MAX_BYTES) {
		log_warn("connection to %s: %llu bytes already waiting, dropping a %zu-byte request",
			 c->peer, (unsigned long long)c->out_bytes, m->data.len);
		net_msg_free(m);
		return;
	}
	free(m->to);
	m->to = NULL;
	conn_queue_msg(r, c, m);
}

/* The connect finished (writable or in error). */
static void outbound_connected(struct reactor *r, struct conn *c, uint32_t events)
{
	(void)events;
	int e = 0;
	socklen_t el = sizeof e;
	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
		e = errno;
	if (e) {
		log_warn("cannot connect to %s: %s; dropping %llu bytes for it", c->peer, strerror(e),
			 (unsigned long long)c->out_bytes);
		conn_fail(r, c);
		return;
	}
	c->connecting = false;
	c->ops = &outbound_open_ops;
	c->last_active_ms = r->now_ms;
	conn_update_events(r, c);
	conn_mark_dirty(r, c); /* write what waited */
}

int outbound_check_connects(struct reactor *r)
{
	struct conn *c;
	uint64_t next = UINT64_MAX;
	cds_list_for_each_entry(c, &r->outbound, outbound_node) {
		if (!c->connecting || c->closing)
			continue;
		if (r->now_ms >= c->connect_deadline_ms) {
			log_warn("cannot connect to %s: no answer within %u ms; dropping %llu bytes for it",
				 c->peer, NET_CONNECT_TIMEOUT_MS, (unsigned long long)c->out_bytes);
			conn_fail(r, c);
		} else if (c->connect_deadline_ms < next) {
			next = c->connect_deadline_ms;
		}
	}
	return next == UINT64_MAX ? -1 : (int)(next - r->now_ms);
}

/* The peer sends nothing we wait for (one-way requests): what comes is
 * read and dropped; its close closes the connection. */
static void outbound_discard_input(struct reactor *r, struct conn *c)
{
	for (int reads = 0; reads < NET_READS_PER_TURN; reads++) {
		ssize_t n = read(c->fd, c->rbuf, c->rcap);
		if (n > 0)
			continue;
		if (n == 0) {
			log_info("connection to %s: closed by the peer", c->peer);
			conn_fail(r, c);
		} else if (errno == EINTR) {
			continue;
		} else if (errno != EAGAIN && errno != EWOULDBLOCK) {
			log_info("closing connection to %s: read: %s", c->peer, strerror(errno));
			conn_fail(r, c);
		}
		return;
	}
}

static void outbound_on_event(struct reactor *r, struct conn *c, uint32_t events)
{
	if (events & LOOP_OUT)
		conn_mark_dirty(r, c);
	if (events & LOOP_IN) {
		outbound_discard_input(r, c);
	} else if (events & (LOOP_ERR | LOOP_HUP)) {
		log_debug("connection %s: hang-up or error", c->peer);
		conn_fail(r, c);
	}
}

/* Writable means connected (or failed). */
static uint32_t outbound_connecting_interest(const struct reactor *r, const struct conn *c,
					     uint32_t want)
{
	(void)r;
	(void)want;
	return c->closing ? 0 : LOOP_OUT;
}

/* Read whatever the reactor's phase: a peer's close shows up as readable. */
static uint32_t outbound_interest(const struct reactor *r, const struct conn *c, uint32_t want)
{
	(void)r;
	return c->closing ? want : want | LOOP_IN;
}

static const struct conn_ops outbound_connecting_ops = {
	.on_event = outbound_connected,
	.interest = outbound_connecting_interest,
};

static const struct conn_ops outbound_open_ops = {
	.on_event = outbound_on_event,
	.flush = conn_plain_flush,
	.interest = outbound_interest,
};
