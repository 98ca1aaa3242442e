/* A connection on its reactor: its slot and id, opening (accepted or
 * outbound) and closing, the events the loop watches for it, and its
 * outbound list. What bytes mean and how they travel (plaintext, TLS) is
 * the transports'; no other thread ever touches a struct conn. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmqns/err.h"
#include "rmqns/log.h"
#include "rmqns/loop.h"
#include "rmqns/metrics.h"

#include "net_internal.h"

/* ---- slots ---- */

int conn_grow_slots(struct reactor *r)
{
	uint32_t ncap = r->cap ? r->cap * 2 : 64;
	if (ncap > NET_MAX_SLOTS)
		ncap = NET_MAX_SLOTS;
	if (ncap == r->cap)
		return RMQNS_ETOOBIG;
	struct conn **conns = realloc(r->conns, ncap * sizeof *conns);
	if (!conns)
		return RMQNS_ENOMEM;
	r->conns = conns;
	uint32_t *gens = realloc(r->gens, ncap * sizeof *gens);
	if (!gens)
		return RMQNS_ENOMEM;
	r->gens = gens;
	uint32_t *free_slots = realloc(r->free_slots, ncap * sizeof *free_slots);
	if (!free_slots)
		return RMQNS_ENOMEM;
	r->free_slots = free_slots;
	for (uint32_t i = r->cap; i < ncap; i++) {
		r->conns[i] = NULL;
		r->gens[i] = 1;
	}
	/* Lowest slots on top of the stack. */
	for (uint32_t i = ncap; i > r->cap; i--)
		r->free_slots[r->nfree++] = i - 1;
	r->cap = ncap;
	return RMQNS_OK;
}

struct conn *conn_find(struct reactor *r, uint64_t id)
{
	uint32_t slot = net_conn_slot(id);
	if (net_conn_reactor(id) != r->index || slot >= r->cap)
		return NULL;
	struct conn *c = r->conns[slot];
	return c && c->id == id ? c : NULL;
}

/* ---- state ---- */

void conn_update_events(struct reactor *r, struct conn *c)
{
	uint32_t want = 0;
	if (!c->closing) {
		if (conn_reading(r, c))
			want = LOOP_IN;
		else if (c->paused || c->inflight_paused)
			want = LOOP_RDHUP; /* not read, but its close is seen: its queued work is dropped */
		if (c->out_blocked)
			want |= LOOP_OUT;
	}
	if (c->ops->interest)
		want = c->ops->interest(r, c, want);
	if (want != c->events && loop_set_events(r->loop, c->fd, want) == 0)
		c->events = want;
}

/* Closing is deferred to the end of the turn so that nothing up the call
 * stack (a frame loop, an inline handler) is left holding a freed conn. */
void conn_fail(struct reactor *r, struct conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	conn_mark_dirty(r, c);
}

void conn_destroy(struct reactor *r, struct conn *c, const char *why)
{
	struct server *s = r->srv;
	uint32_t slot = net_conn_slot(c->id);

	if (c->ops->release)
		c->ops->release(c);
	loop_unwatch(r->loop, c->fd);
	close(c->fd);
	while (c->out_head) {
		struct net_msg *m = c->out_head;
		c->out_head = m->next;
		net_msg_free(m);
	}
	cds_list_del_init(&c->dirty_node);
	cds_list_del_init(&c->backlog_node);
	cds_list_del_init(&c->outbound_node);
	free(c->rbuf);
	if (c->held_acct)
		atomic_fetch_sub_explicit(&s->held_bytes, c->held_acct, memory_order_relaxed);
	if (c->share) {
		atomic_store(&c->share->closed, true); /* its queued requests are dropped */
		net_share_unref(c->share);
	}
	r->conns[slot] = NULL;
	if (++r->gens[slot] == 0)
		r->gens[slot] = 1;
	r->free_slots[r->nfree++] = slot;
	if (why)
		log_debug("connection %s%s closed: %s", c->outbound ? "to " : "", c->peer, why);
	if (!c->outbound) {
		atomic_fetch_sub(&r->conn_count, 1);
		if (atomic_load(&s->notify_closes) && c->cb->on_closed)
			c->cb->on_closed(c->cb->arg, c->id);
	}
	free(c);
}

void conn_format_peer(char *out, size_t n, const struct sockaddr_storage *ss)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
		port = ntohs(a->sin_port);
		snprintf(out, n, "%s:%u", ip, port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
		port = ntohs(a->sin6_port);
		if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
			inet_ntop(AF_INET, &a->sin6_addr.s6_addr[12], ip, sizeof ip);
			snprintf(out, n, "%s:%u", ip, port);
		} else {
			inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
			snprintf(out, n, "[%s]:%u", ip, port);
		}
	} else {
		snprintf(out, n, "unknown");
	}
}

/* The loop's callback for every connection: its transport takes it. */
static void conn_on_event(struct loop *l, int fd, uint32_t events, void *data)
{
	(void)l;
	(void)fd;
	struct conn *c = data;
	if (!c->closing) /* else closed earlier in this turn */
		c->ops->on_event(c->r, c, events);
}

struct conn *conn_new(struct reactor *r, int fd, uint32_t events, const char *peer,
		      const struct conn_ops *ops)
{
	if (r->nfree == 0 && conn_grow_slots(r) < 0) {
		log_error("reactor %u: no room for another connection (%s)", r->index, peer);
		return NULL;
	}
	struct conn *c = calloc(1, sizeof *c);
	uint8_t *rbuf = malloc(NET_RBUF_INITIAL);
	if (!c || !rbuf) {
		log_error("reactor %u: out of memory for a connection (%s)", r->index, peer);
		free(c);
		free(rbuf);
		return NULL;
	}
	uint32_t slot = r->free_slots[r->nfree - 1];
	c->id = net_conn_id(r->index, slot, r->gens[slot]);
	c->fd = fd;
	c->r = r;
	c->ops = ops;
	c->rbuf = rbuf;
	c->rcap = NET_RBUF_INITIAL;
	c->last_active_ms = r->now_ms;
	CDS_INIT_LIST_HEAD(&c->dirty_node);
	CDS_INIT_LIST_HEAD(&c->backlog_node);
	CDS_INIT_LIST_HEAD(&c->outbound_node);
	snprintf(c->peer, sizeof c->peer, "%s", peer);
	c->events = events;
	if (loop_watch(r->loop, fd, events, conn_on_event, c) < 0) {
		log_error("connection %s: cannot watch it", c->peer);
		free(rbuf);
		free(c);
		return NULL;
	}
	r->nfree--;
	r->conns[slot] = c;
	return c;
}

/* The reactor's side of a connection's share: one reference, its own. */
static struct net_conn_share *conn_share_new(struct reactor *r, uint64_t conn_id)
{
	struct net_conn_share *sh = calloc(1, sizeof *sh);
	if (!sh)
		return NULL;
	atomic_init(&sh->refs, 1);
	sh->r = r;
	sh->conn_id = conn_id;
	return sh;
}

void conn_accept(struct reactor *r, struct net_accepted *a)
{
	char peer[NET_PEER_LEN];
	if (!r->reading) {
		close(a->fd); /* stopping: the socket arrived too late */
		atomic_fetch_sub(&r->conn_count, 1);
		return;
	}
	conn_format_peer(peer, sizeof peer, &a->addr);
	struct conn *c = conn_new(r, a->fd, LOOP_IN, peer, r->srv->accept_ops);
	if (!c) {
		close(a->fd);
		atomic_fetch_sub(&r->conn_count, 1);
		return;
	}
	c->cb = a->cb;
	c->share = conn_share_new(r, c->id);
	if (!c->share) {
		log_error("closing connection %s: out of memory for its state", c->peer);
		conn_fail(r, c);
		return;
	}
	metrics_add(MC_CONN_ACCEPTED, 1);
	log_debug("connection %s accepted", c->peer);
	if (c->ops->open && c->ops->open(r, c) < 0)
		conn_fail(r, c);
}

/* ---- the outbound list ---- */

struct net_msg *net_msg_new(uint64_t conn_id, enum net_msg_kind kind)
{
	struct net_msg *m = malloc(sizeof *m);
	if (!m)
		return NULL;
	m->conn_id = conn_id;
	m->next = NULL;
	m->kind = kind;
	m->data = (struct buf)BUF_INIT;
	m->to = NULL;
	return m;
}

void net_msg_free(struct net_msg *m)
{
	buf_free(&m->data);
	free(m->to);
	free(m);
}

/* Pauses c's reads or closes it past the limits of unsent answers. */
void conn_account_out(struct reactor *r, struct conn *c, size_t len)
{
	const struct server_params *p = &r->srv->params;

	c->out_bytes += len;
	conn_mark_dirty(r, c);
	if (c->outbound)
		return; /* bounded where frames are queued (outbound_deliver) */

	if (p->outbound_close_bytes && c->out_bytes > p->outbound_close_bytes) {
		log_warn("closing connection %s: %llu bytes of answers unsent (outboundCloseBytes %llu)",
			 c->peer, (unsigned long long)c->out_bytes,
			 (unsigned long long)p->outbound_close_bytes);
		conn_fail(r, c);
	} else if (p->outbound_pause_bytes && !c->paused && c->out_bytes > p->outbound_pause_bytes) {
		log_info("connection %s: not reading its answers (%llu bytes unsent), pausing its reads",
			 c->peer, (unsigned long long)c->out_bytes);
		c->paused = true;
		metrics_add(MC_CONN_OUTBOUND_PAUSES, 1);
		conn_update_events(r, c);
	}
}

void conn_queue_msg(struct reactor *r, struct conn *c, struct net_msg *m)
{
	m->next = NULL;
	if (c->out_tail)
		c->out_tail->next = m;
	else
		c->out_head = m;
	c->out_tail = m;
	conn_account_out(r, c, m->data.len);
}

void conn_out_consumed(struct conn *c, size_t n)
{
	while (c->out_head && n >= c->out_head->data.len - c->out_off) {
		struct net_msg *m = c->out_head;
		n -= m->data.len - c->out_off;
		c->out_off = 0;
		c->out_head = m->next;
		buf_free(&m->data);
		free(m);
	}
	if (!c->out_head)
		c->out_tail = NULL;
	else
		c->out_off += n;
}

void conn_after_flush(struct reactor *r, struct conn *c)
{
	const struct server_params *p = &r->srv->params;

	if (c->paused && c->out_bytes <= p->outbound_pause_bytes / 2) {
		c->paused = false;
		conn_mark_backlog(r, c); /* frames may be waiting in rbuf */
	}
	conn_update_events(r, c);
}
