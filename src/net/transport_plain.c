/* The plaintext transport: read() into the connection's read buffer and
 * one writev() of its outbound list. Accepted connections start on it when
 * TLS is off, and turn to it when the TLS sniff sees plaintext. */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "rmqns/log.h"
#include "rmqns/loop.h"
#include "rmqns/metrics.h"

#include "net_internal.h"

static ssize_t plain_recv(struct reactor *r, struct conn *c, uint8_t *buf, size_t room)
{
	for (;;) {
		ssize_t n = read(c->fd, buf, room);
		if (n > 0)
			return n;
		if (n == 0) {
			log_debug("connection %s: closed by the peer", c->peer);
			conn_fail(r, c);
			return -1;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		log_info("closing connection %s: read: %s", c->peer, strerror(errno));
		conn_fail(r, c);
		return -1;
	}
}

void conn_plain_flush(struct reactor *r, struct conn *c)
{
	while (c->out_head) {
		struct iovec iov[NET_WRITEV_MAX];
		int n = 0;
		size_t off = c->out_off, total = 0;
		for (struct net_msg *m = c->out_head; m && n < NET_WRITEV_MAX; m = m->next) {
			iov[n].iov_base = m->data.data + off;
			iov[n].iov_len = m->data.len - off;
			total += iov[n].iov_len;
			off = 0;
			n++;
		}
		ssize_t w = writev(c->fd, iov, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				c->out_blocked = true;
				break;
			}
			log_info("closing connection %s: write: %s", c->peer, strerror(errno));
			conn_fail(r, c);
			return;
		}
		c->last_active_ms = r->now_ms;
		c->out_bytes -= (uint64_t)w;
		conn_out_consumed(c, (size_t)w);
		if ((size_t)w < total) {
			c->out_blocked = true; /* the socket took less: it is full */
			break;
		}
	}
	if (!c->out_head)
		c->out_blocked = false;
	conn_after_flush(r, c);
}

static int plain_open(struct reactor *r, struct conn *c)
{
	(void)r;
	(void)c;
	metrics_add(MC_CONN_PLAINTEXT, 1);
	return 0;
}

static void plain_on_event(struct reactor *r, struct conn *c, uint32_t events)
{
	if (events & LOOP_OUT)
		conn_mark_dirty(r, c);
	if ((events & LOOP_RDHUP) && !(events & LOOP_IN)) {
		/* a stopped connection's peer closed (or shut its side, which
		 * Netty takes for a close as well): what it queued goes too */
		log_debug("connection %s: closed by the peer while its reads were stopped", c->peer);
		conn_fail(r, c);
	} else if (events & LOOP_IN) {
		conn_read_frames(r, c, plain_recv, NET_READS_PER_TURN, true);
	} else if (events & (LOOP_ERR | LOOP_HUP)) {
		log_debug("connection %s: hang-up or error", c->peer);
		conn_fail(r, c);
	}
}

/* Frames left by a turn cut short; more bytes in the socket show up as
 * readable (level-triggered). */
static void plain_read_more(struct reactor *r, struct conn *c)
{
	int budget = NET_FRAMES_PER_TURN;
	conn_cut_frames(r, c, &budget);
	if (budget == 0 && !c->closing)
		conn_mark_backlog(r, c);
}

const struct conn_ops conn_plain_ops = {
	.open = plain_open,
	.on_event = plain_on_event,
	.read_more = plain_read_more,
	.flush = conn_plain_flush,
};
