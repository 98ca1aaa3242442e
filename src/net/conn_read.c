/* Reading a connection, whatever its transport: the read buffer, frame
 * cutting, the hand-over of a big frame's buffer to its request, and the
 * stops (in-flight cap, barriers) that hold further reads back. The
 * transports supply only the call that brings bytes in. */
#include <stdlib.h>
#include <string.h>

#include "rmqns/err.h"
#include "rmqns/log.h"
#include "rmqns/metrics.h"
#include "rmqns/remoting.h"

#include "net_internal.h"

/* Hands a frame to the callback; a big one alone at the front of the read
 * buffer is offered with the buffer (net_frame.block), so that megabytes
 * of registration are not copied (and faulted in twice) on the reactor,
 * which answers heartbeats and route queries meanwhile. True when the
 * callback kept the buffer: c->rbuf is then a new one, holding what
 * followed the frame. */
static bool conn_handle_frame(struct reactor *r, struct conn *c, const uint8_t *frame, size_t len)
{
	bool kept = false;
	uint8_t *next_buf = NULL;
	size_t next_cap = 0, tail = 0;
	struct net_frame f = {
		.conn = { r->srv, c->id },
		.peer = c->peer,
		.data = frame,
		.len = len,
		.recv_ns = r->now_ns,
		.share = c->share,
	};
	if (frame == c->rbuf && len >= NET_HANDOVER_MIN) {
		/* The next buffer is ready before the offer: once kept, the old
		 * one may be freed by another thread at any moment. */
		tail = c->rlen - len;
		next_cap = tail > NET_RBUF_INITIAL ? tail : NET_RBUF_INITIAL;
		next_buf = malloc(next_cap);
		if (next_buf) {
			memcpy(next_buf, c->rbuf + len, tail);
			f.block = c->rbuf;
			f.kept = &kept;
		}
	}
	int rc = c->cb->on_frame(c->cb->arg, &f);
	if (kept) {
		c->rbuf = next_buf;
		c->rcap = next_cap;
		c->rpos = 0;
		c->rlen = tail;
	} else {
		free(next_buf);
	}
	if (rc < 0) {
		if (rc == RMQNS_ENOMEM)
			log_error("closing connection %s: out of memory for a request", c->peer);
		else
			log_warn_limited("closing connection %s: undecodable command header: %s", c->peer,
				 rmqns_strerror(rc));
		conn_fail(r, c);
	}
	return kept;
}

/* An emptied buffer that grew for a big frame (a broker registration of
 * several MB) shrinks back at once: the frame was copied into its request,
 * and the broker's next registration is 30 s away, so keeping the buffer
 * would cost its size per broker connection for nothing. */
static void conn_shrink_rbuf(struct conn *c)
{
	if (c->rcap <= NET_RBUF_KEEP)
		return;
	uint8_t *small = realloc(c->rbuf, NET_RBUF_INITIAL);
	if (small) {
		c->rbuf = small;
		c->rcap = NET_RBUF_INITIAL;
	}
}

/* Whether c's reads must wait: max_inflight requests queued, or a barrier
 * (a one-way registration) not yet applied. */
bool conn_share_full(const struct net_conn_share *sh, uint32_t cap)
{
	return (cap && atomic_load(&sh->inflight) >= cap) || atomic_load(&sh->barriers) > 0;
}

/* True when c has max_inflight requests queued, or a barrier: its reads
 * stop until a request finishes (NET_MSG_RESUME). The connection is not
 * closed; its unread bytes wait in the socket, as behind Netty's auto-read
 * off. */
static bool conn_inflight_full(struct reactor *r, struct conn *c)
{
	uint32_t cap = r->srv->params.max_inflight;
	if (c->inflight_paused)
		return true;
	if (!c->share ||
	    ((!cap || atomic_load_explicit(&c->share->inflight, memory_order_relaxed) < cap) &&
	     !atomic_load_explicit(&c->share->barriers, memory_order_relaxed)))
		return false;
	atomic_store(&c->share->waiting, true);
	/* a request may have finished before it saw `waiting`: look again */
	if (!conn_share_full(c->share, cap) && atomic_exchange(&c->share->waiting, false))
		return false;
	c->inflight_paused = true;
	metrics_add(MC_CONN_INFLIGHT_PAUSES, 1);
	conn_update_events(r, c);
	return true;
}

void conn_inflight_resume(struct reactor *r, struct conn *c)
{
	if (!c->inflight_paused)
		return;
	if (conn_share_full(c->share, r->srv->params.max_inflight)) {
		/* another request still holds it (a barrier, or the cap): wait on */
		atomic_store(&c->share->waiting, true);
		if (conn_share_full(c->share, r->srv->params.max_inflight) ||
		    !atomic_exchange(&c->share->waiting, false))
			return;
	}
	c->inflight_paused = false;
	conn_mark_backlog(r, c); /* whole frames may wait in rbuf */
	conn_update_events(r, c);
}

void conn_cut_frames(struct reactor *r, struct conn *c, int *budget)
{
	uint32_t max_frame = r->srv->params.max_frame;

	while (*budget > 0 && !c->closing && !c->paused && r->reading && !conn_inflight_full(r, c)) {
		size_t size;
		int rc = remoting_frame_cut(c->rbuf + c->rpos, c->rlen - c->rpos, max_frame, &size);
		if (rc == RMQNS_EAGAIN)
			break;
		if (rc < 0) {
			log_warn_limited("closing connection %s: bad frame: %s", c->peer, rmqns_strerror(rc));
			conn_fail(r, c);
			return;
		}
		if (!conn_handle_frame(r, c, c->rbuf + c->rpos, size))
			c->rpos += size;
		(*budget)--;
	}
	if (c->rpos == c->rlen) {
		c->rpos = c->rlen = 0;
		conn_shrink_rbuf(c);
	}
}

/* Makes room to read into: the unprocessed tail moves to the front and the
 * buffer grows to hold the whole frame being received. */
static int conn_make_room(struct reactor *r, struct conn *c)
{
	size_t have = c->rlen - c->rpos;
	size_t need = NET_RBUF_INITIAL;

	if (have >= 4) {
		/* frame_cut has vetted the length already (EAGAIN, not an error). */
		size_t frame = (size_t)rd_be32(c->rbuf + c->rpos) + 4;
		if (frame > r->srv->params.max_frame)
			frame = r->srv->params.max_frame;
		if (frame > need)
			need = frame;
	}
	if (c->rpos > 0) {
		/* Only a partial frame is left when we read: a cheap move. */
		memmove(c->rbuf, c->rbuf + c->rpos, have);
		c->rpos = 0;
		c->rlen = have;
	}
	if (need >= NET_HANDOVER_MIN && c->rcap < need) {
		/* a big frame: read into a spare whose pages are in memory */
		size_t cap;
		uint8_t *spare = net_block_take(need, &cap);
		if (spare) {
			memcpy(spare, c->rbuf, have);
			net_block_free(c->rbuf);
			c->rbuf = spare;
			c->rcap = cap;
		}
	}
	if (c->rcap < need || c->rcap == c->rlen) {
		size_t ncap = c->rcap;
		while (ncap < need || ncap == c->rlen)
			ncap *= 2;
		uint8_t *nb = realloc(c->rbuf, ncap);
		if (!nb)
			return RMQNS_ENOMEM;
		c->rbuf = nb;
		c->rcap = ncap;
	}
	return RMQNS_OK;
}

/* Room for the next read: 0 when this turn must stop reading c (frame
 * budget spent, closing, paused, quiescing, or no memory for its buffer,
 * which closes it). */
static size_t conn_read_room(struct reactor *r, struct conn *c, int budget)
{
	if (budget == 0 || !conn_reading(r, c))
		return 0;
	if (conn_make_room(r, c) < 0) {
		log_error("closing connection %s: out of memory for its read buffer", c->peer);
		conn_fail(r, c);
		return 0;
	}
	return c->rcap - c->rlen;
}

void conn_read_frames(struct reactor *r, struct conn *c, conn_recv_fn recv, int reads,
		      bool short_read_drains)
{
	int budget = NET_FRAMES_PER_TURN;

	conn_cut_frames(r, c, &budget); /* what a paused or cut-short turn left */
	/* A registration of megabytes is read over several turns, so that the
	 * heartbeats and route queries of the reactor's other connections are
	 * read between its parts (level-triggered: the rest shows up again). */
	size_t bytes_left = NET_READ_BYTES_PER_TURN;
	for (int i = 0; i < reads && bytes_left; i++) {
		size_t room = conn_read_room(r, c, budget);
		if (room == 0)
			break;
		if (room > bytes_left)
			room = bytes_left;
		ssize_t n = recv(r, c, c->rbuf + c->rlen, room);
		if (n <= 0)
			break;
		c->rlen += (size_t)n;
		bytes_left -= (size_t)n;
		c->last_active_ms = r->now_ms;
		conn_cut_frames(r, c, &budget);
		if (short_read_drains && (size_t)n < room)
			break; /* drained the socket */
	}
	if (budget == 0 && !c->closing)
		conn_mark_backlog(r, c);
	conn_sync_held(r, c);
}
