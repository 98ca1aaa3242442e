/* A reactor: one thread, one epoll set, and the connections it owns
 * outright. It reads, cuts frames and hands each to the on_frame callback,
 * takes bytes sent from other threads from its inbound queue and writes
 * each connection's bytes with one writev. No other thread ever touches a
 * struct conn; they name connections by id. A TLS connection (c->tls set)
 * runs its handshake and records here too, non-blocking, through the
 * conn_tls_* functions; a plaintext one pays one pointer test for it. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <urcu.h>

#include "rmqns/err.h"
#include "rmqns/log.h"
#include "rmqns/metrics.h"
#include "rmqns/race.h"
#include "rmqns/remoting.h"
#include "rmqns/tls.h"

#include "net_internal.h"

/* epoll ids of the reactor's own descriptors; a connection id never has
 * the reactor byte 0xff. */
#define REACTOR_WAKE_ID UINT64_MAX
#define REACTOR_TIMER_ID (UINT64_MAX - 1)

struct conn {
	uint64_t id;
	int fd;
	uint32_t events;         /* epoll interest currently registered */
	char peer[NET_PEER_LEN];
	uint8_t *rbuf;           /* bytes received, [rpos, rlen) not yet cut */
	size_t rpos, rlen, rcap;
	struct net_msg *out_head, *out_tail;
	size_t out_off;          /* bytes of out_head already written */
	uint64_t out_bytes;      /* queued and not yet written */
	uint64_t last_active_ms; /* last successful read or write */
	bool paused;             /* reads stopped: the peer is not reading its answers */
	bool inflight_paused;    /* reads stopped: max_inflight requests queued */
	int64_t held_acct;       /* partial frame and unsent bytes counted in held_bytes */
	struct net_conn_share *share; /* accepted connections only */
	bool out_blocked;        /* the socket is full: waiting for EPOLLOUT */
	bool closing;            /* destroyed at the end of this turn */
	bool outbound;           /* opened by the reactor (net_send_to): nothing is read */
	bool connecting;         /* outbound, connect() in progress */
	uint64_t connect_deadline_ms;
	struct cds_list_head dirty_node;
	struct cds_list_head backlog_node;
	struct cds_list_head outbound_node; /* on r->outbound */
	struct conn_tls *tls;    /* NULL: plaintext (decided, or TLS disabled) */
};

enum conn_tls_state {
	CONN_TLS_SNIFF = 0,     /* waiting for the first byte: TLS or plaintext? */
	CONN_TLS_HANDSHAKE = 1,
	CONN_TLS_OPEN = 2,
};

/* The TLS side of a connection. Answers leave c's outbound list for
 * `stage` a record's worth at a time, so that many small answers become
 * one record and one write; a blocked SSL_write is retried on the same
 * (possibly grown, possibly moved) stage. */
struct conn_tls {
	SSL *ssl;
	enum conn_tls_state state;
	bool hs_wants_write;    /* the handshake waits for the socket to drain */
	bool read_wants_write;  /* SSL_read waits for writability */
	bool write_wants_read;  /* SSL_write waits for readability */
	uint64_t deadline_ms;   /* for the handshake */
	struct buf stage;
	size_t stage_off;       /* bytes of stage already written */
};

static __thread struct reactor *reactor_self;

static void reactor_clock(struct reactor *r)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	r->now_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	r->now_ms = r->now_ns / 1000000u;
	atomic_store_explicit(&r->turn_ms, r->now_ms, memory_order_relaxed);
}

/* ---- slots ---- */

static int reactor_grow_slots(struct reactor *r)
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

static struct conn *reactor_find(struct reactor *r, uint64_t id)
{
	uint32_t slot = net_conn_slot(id);
	if (net_conn_reactor(id) != r->index || slot >= r->cap)
		return NULL;
	struct conn *c = r->conns[slot];
	return c && c->id == id ? c : NULL;
}

/* ---- connection state ---- */

static void conn_update_events(struct reactor *r, struct conn *c)
{
	uint32_t want = 0;
	if (c->connecting)
		want = c->closing ? 0 : EPOLLOUT; /* writable = connected (or failed) */
	else if ((r->reading || c->outbound) && !c->paused && !c->inflight_paused && !c->closing)
		want |= EPOLLIN; /* an outbound peer's close shows up as readable */
	else if ((c->paused || c->inflight_paused) && !c->closing)
		want |= EPOLLRDHUP; /* not read, but its close is seen: its queued work is dropped */
	if (!c->connecting && c->out_blocked && !c->closing)
		want |= EPOLLOUT;
	if (c->tls && !c->closing) {
		const struct conn_tls *t = c->tls;
		if (t->state != CONN_TLS_OPEN)
			want = !r->reading ? 0 : t->hs_wants_write ? EPOLLOUT : EPOLLIN;
		else
			want |= (t->read_wants_write ? EPOLLOUT : 0) | (t->write_wants_read ? EPOLLIN : 0);
	}
	if (want == c->events)
		return;
	struct epoll_event ev = { .events = want, .data.u64 = c->id };
	if (epoll_ctl(r->epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0)
		log_error("connection %s: epoll_ctl: %s", c->peer, strerror(errno));
	else
		c->events = want;
}

static void conn_mark_dirty(struct reactor *r, struct conn *c)
{
	if (cds_list_empty(&c->dirty_node))
		cds_list_add_tail(&c->dirty_node, &r->dirty);
}

static void conn_mark_backlog(struct reactor *r, struct conn *c)
{
	if (cds_list_empty(&c->backlog_node))
		cds_list_add_tail(&c->backlog_node, &r->backlog);
}

/* Closing is deferred to the end of the turn so that nothing up the call
 * stack (a frame loop, an inline handler) is left holding a freed conn. */
static void conn_fail(struct reactor *r, struct conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	conn_mark_dirty(r, c);
}

static void conn_tls_free(struct conn *c)
{
	struct conn_tls *t = c->tls;
	if (t->ssl) {
		if (t->state == CONN_TLS_OPEN)
			(void)SSL_shutdown(t->ssl); /* one try at close_notify, never waited for */
		SSL_free(t->ssl);
	}
	ERR_clear_error();
	buf_free(&t->stage);
	free(t);
	c->tls = NULL;
}

static void conn_destroy(struct reactor *r, struct conn *c, const char *why)
{
	struct server *s = r->srv;
	uint32_t slot = net_conn_slot(c->id);

	if (c->tls)
		conn_tls_free(c);
	epoll_ctl(r->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	while (c->out_head) {
		struct net_msg *m = c->out_head;
		c->out_head = m->next;
		buf_free(&m->data);
		free(m);
	}
	cds_list_del_init(&c->dirty_node);
	cds_list_del_init(&c->backlog_node);
	cds_list_del_init(&c->outbound_node);
	free(c->rbuf);
	if (c->held_acct)
		atomic_fetch_sub_explicit(&s->held_bytes, c->held_acct, memory_order_relaxed);
	if (c->share)
		net_share_close(c->share); /* its queued requests are dropped */
	r->conns[slot] = NULL;
	if (++r->gens[slot] == 0)
		r->gens[slot] = 1;
	r->free_slots[r->nfree++] = slot;
	if (why)
		log_debug("connection %s%s closed: %s", c->outbound ? "to " : "", c->peer, why);
	if (!c->outbound) {
		atomic_fetch_sub(&r->conn_count, 1);
		if (atomic_load(&s->notify_closes) && s->cb.on_closed)
			s->cb.on_closed(s->cb.arg, c->id);
	}
	free(c);
}

static void conn_format_peer(char *out, size_t n, const struct sockaddr_storage *ss)
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

/* A connection in a free slot, registered with epoll for `events`; NULL
 * (logged, fd left open) when there is no room. */
static struct conn *conn_new(struct reactor *r, int fd, uint32_t events, const char *peer)
{
	if (r->nfree == 0 && reactor_grow_slots(r) < 0) {
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
	c->rbuf = rbuf;
	c->rcap = NET_RBUF_INITIAL;
	c->last_active_ms = r->now_ms;
	CDS_INIT_LIST_HEAD(&c->dirty_node);
	CDS_INIT_LIST_HEAD(&c->backlog_node);
	CDS_INIT_LIST_HEAD(&c->outbound_node);
	snprintf(c->peer, sizeof c->peer, "%s", peer);
	c->events = events;
	struct epoll_event ev = { .events = c->events, .data.u64 = c->id };
	if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		log_error("connection %s: epoll_ctl: %s", c->peer, strerror(errno));
		free(rbuf);
		free(c);
		return NULL;
	}
	r->nfree--;
	r->conns[slot] = c;
	return c;
}

static void conn_open(struct reactor *r, struct net_accepted *a)
{
	char peer[NET_PEER_LEN];
	if (!r->reading) {
		close(a->fd); /* stopping: the socket arrived too late */
		atomic_fetch_sub(&r->conn_count, 1);
		return;
	}
	conn_format_peer(peer, sizeof peer, &a->addr);
	struct conn *c = conn_new(r, a->fd, EPOLLIN, peer);
	if (!c) {
		close(a->fd);
		atomic_fetch_sub(&r->conn_count, 1);
		return;
	}
	c->share = net_share_new(r, c->id);
	if (!c->share) {
		log_error("closing connection %s: out of memory for its state", c->peer);
		conn_fail(r, c);
		return;
	}
	metrics_add(MC_CONN_ACCEPTED, 1);
	log_debug("connection %s accepted", c->peer);
	if (!r->srv->tls) {
		metrics_add(MC_CONN_PLAINTEXT, 1);
		return;
	}
	c->tls = calloc(1, sizeof *c->tls);
	if (!c->tls) {
		log_error("closing connection %s: out of memory for its TLS state", c->peer);
		conn_fail(r, c);
		return;
	}
	c->tls->state = CONN_TLS_SNIFF;
	c->tls->deadline_ms = r->now_ms + TLS_HANDSHAKE_TIMEOUT_MS;
	c->tls->stage = (struct buf)BUF_INIT;
}

/* The reactor's connection to a peer, opened now if there is none. */
static struct conn *conn_outbound(struct reactor *r, const struct net_dest *to)
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
	c = conn_new(r, fd, pending ? EPOLLOUT : EPOLLIN, to->name);
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

/* An outbound connect finished (writable or in error). */
static void conn_connected(struct reactor *r, struct conn *c)
{
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
	c->last_active_ms = r->now_ms;
	conn_update_events(r, c);
	conn_mark_dirty(r, c); /* write what waited */
}

/* Outbound connects past their deadline fail; returns the epoll timeout
 * until the next deadline (-1: none). */
static int reactor_check_connects(struct reactor *r)
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

/* ---- answers ---- */

/* Counts len more bytes waiting for c; pauses its reads or closes it past
 * the limits. */
static void conn_account_out(struct reactor *r, struct conn *c, size_t len)
{
	const struct server_params *p = &r->srv->params;

	c->out_bytes += len;
	conn_mark_dirty(r, c);
	if (c->outbound)
		return; /* bounded where frames are queued (reactor_deliver) */

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

/* Brings the process's count of held bytes up to date with c's partial
 * frame and unsent answers. Called where those settle (after a read, after
 * a flush), so a query answered within the turn touches no shared counter. */
static void conn_sync_held(struct reactor *r, struct conn *c)
{
	int64_t held = (int64_t)(c->rlen + c->out_bytes);
	if (held != c->held_acct) {
		atomic_fetch_add_explicit(&r->srv->held_bytes, held - c->held_acct,
					  memory_order_relaxed);
		c->held_acct = held;
	}
}

static void conn_queue_msg(struct reactor *r, struct conn *c, struct net_msg *m)
{
	m->next = NULL;
	if (c->out_tail)
		c->out_tail->next = m;
	else
		c->out_head = m;
	c->out_tail = m;
	conn_account_out(r, c, m->data.len);
}

/* Encodes head and body into b (room for a head this size is made first). */
#define NET_HEAD_GUESS 256u
static int net_fill(struct buf *b, net_head_fn head, void *head_arg, const void *body,
		    size_t body_len)
{
	size_t old = b->len;
	int rc = buf_reserve(b, NET_HEAD_GUESS + body_len);
	if (rc == 0 && head)
		rc = head(head_arg, b);
	if (rc == 0 && body_len)
		rc = buf_append(b, body, body_len);
	if (rc < 0)
		b->len = old;
	return rc;
}

static struct net_msg *net_msg_new(uint64_t conn_id, enum net_msg_kind kind)
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

static void net_msg_free(struct net_msg *m)
{
	buf_free(&m->data);
	free(m->to);
	free(m);
}

/* On the owning reactor: the frame joins the bytes already waiting in the
 * connection's last buffer (no allocation per answer, one write per turn),
 * or starts a new one. */
static int conn_send_local(struct reactor *r, struct conn *c, net_head_fn head, void *head_arg,
			   const void *body, size_t body_len)
{
	struct net_msg *t = c->out_tail;
	if (t && t->data.len + NET_HEAD_GUESS + body_len <= NET_COALESCE_MAX) {
		/* the flush takes the buffer's address afresh: it may move */
		size_t before = t->data.len;
		int rc = net_fill(&t->data, head, head_arg, body, body_len);
		if (rc == 0)
			conn_account_out(r, c, t->data.len - before);
		return rc;
	}
	struct net_msg *m = net_msg_new(c->id, NET_MSG_DATA);
	if (!m)
		return RMQNS_ENOMEM;
	int rc = buf_reserve(&m->data, NET_COALESCE_CHUNK);
	if (rc == 0)
		rc = net_fill(&m->data, head, head_arg, body, body_len);
	if (rc < 0) {
		net_msg_free(m);
		return rc;
	}
	conn_queue_msg(r, c, m);
	return RMQNS_OK;
}

void reactor_wake(struct reactor *r)
{
	/* Pairs with the fence in the loop before epoll_wait: either the loop
	 * sees our work, or we see it asleep. Only one waker writes. */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&r->sleeping, memory_order_relaxed) &&
	    atomic_exchange(&r->sleeping, 0)) {
		uint64_t one = 1;
		if (write(r->wakefd, &one, sizeof one) < 0 && errno != EAGAIN)
			log_error("reactor %u: eventfd write: %s", r->index, strerror(errno));
	}
}

static void reactor_enqueue(struct reactor *r, struct net_msg *m)
{
	cds_wfcq_node_init(&m->node);
	race_release(m);
	cds_wfcq_enqueue(&r->in_head, &r->in_tail, &m->node);
	reactor_wake(r);
}

int reactor_send(struct reactor *r, uint64_t conn_id, net_head_fn head, void *head_arg,
		 const void *body, size_t body_len)
{
	if (reactor_self == r) {
		struct conn *c = reactor_find(r, conn_id);
		if (!c || c->closing)
			return RMQNS_OK; /* gone: dropped */
		return conn_send_local(r, c, head, head_arg, body, body_len);
	}
	struct net_msg *m = net_msg_new(conn_id, NET_MSG_DATA);
	if (!m)
		return RMQNS_ENOMEM;
	int rc = net_fill(&m->data, head, head_arg, body, body_len);
	if (rc < 0 || m->data.len == 0) {
		net_msg_free(m);
		return rc;
	}
	reactor_enqueue(r, m);
	return RMQNS_OK;
}

static int reactor_post(struct reactor *r, uint64_t conn_id, enum net_msg_kind kind)
{
	struct net_msg *m = net_msg_new(conn_id, kind);
	if (!m)
		return RMQNS_ENOMEM;
	reactor_enqueue(r, m);
	return RMQNS_OK;
}

int reactor_post_close(struct reactor *r, uint64_t conn_id)
{
	return reactor_post(r, conn_id, NET_MSG_CLOSE);
}

int reactor_post_resume(struct reactor *r, uint64_t conn_id)
{
	return reactor_post(r, conn_id, NET_MSG_RESUME);
}

/* A frame for an outbound connection: queued behind what waits, or
 * dropped past the bound. */
static void reactor_deliver_to(struct reactor *r, struct net_msg *m)
{
	struct conn *c = conn_outbound(r, m->to);
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

int reactor_post_send_to(struct reactor *r, struct net_dest *to, const void *frame, size_t len)
{
	struct net_msg *m = net_msg_new(0, NET_MSG_SEND_TO);
	if (!m || buf_append(&m->data, frame, len) < 0) {
		if (m)
			net_msg_free(m);
		free(to);
		return RMQNS_ENOMEM;
	}
	m->to = to;
	reactor_enqueue(r, m);
	return RMQNS_OK;
}

static void conn_inflight_resume(struct reactor *r, struct conn *c);

/* A message taken from the inbound queue. */
static void reactor_deliver(struct reactor *r, struct net_msg *m)
{
	if (m->kind == NET_MSG_SEND_TO) {
		reactor_deliver_to(r, m);
		return;
	}
	struct conn *c = reactor_find(r, m->conn_id);
	if (c && !c->closing && m->kind == NET_MSG_DATA) {
		conn_queue_msg(r, c, m);
		return;
	}
	/* A close request for a connection that is gone, or whose slot now
	 * serves another peer (the generation differs), finds nothing here:
	 * ignored. So are bytes for such a connection. */
	if (c && !c->closing && m->kind == NET_MSG_CLOSE) {
		log_info("closing connection %s: expired", c->peer);
		conn_fail(r, c);
	}
	if (c && !c->closing && m->kind == NET_MSG_RESUME)
		conn_inflight_resume(r, c);
	net_msg_free(m);
}

void reactor_post_accepted(struct reactor *r, struct net_accepted *a)
{
	/* counted now, not when the reactor takes it: a burst of connects
	 * would otherwise all go to the reactor slowest to take them */
	atomic_fetch_add(&r->conn_count, 1);
	cds_wfcq_node_init(&a->node);
	race_release(a);
	cds_wfcq_enqueue(&r->acc_head, &r->acc_tail, &a->node);
	reactor_wake(r);
}

static void reactor_take_answers(struct reactor *r)
{
	struct __cds_wfcq_head head;
	struct cds_wfcq_tail tail;
	struct cds_wfcq_node *node, *next;

	__cds_wfcq_init(&head, &tail);
	if (__cds_wfcq_splice_blocking(&head, &tail, &r->in_head, &r->in_tail) ==
	    CDS_WFCQ_RET_SRC_EMPTY)
		return;
	__cds_wfcq_for_each_blocking_safe(&head, &tail, node, next) {
		struct net_msg *m = caa_container_of(node, struct net_msg, node);
		race_acquire(m);
		reactor_deliver(r, m);
	}
}

static void reactor_take_accepted(struct reactor *r)
{
	struct __cds_wfcq_head head;
	struct cds_wfcq_tail tail;
	struct cds_wfcq_node *node, *next;

	__cds_wfcq_init(&head, &tail);
	if (__cds_wfcq_splice_blocking(&head, &tail, &r->acc_head, &r->acc_tail) ==
	    CDS_WFCQ_RET_SRC_EMPTY)
		return;
	__cds_wfcq_for_each_blocking_safe(&head, &tail, node, next) {
		struct net_accepted *a = caa_container_of(node, struct net_accepted, node);
		race_acquire(a);
		conn_open(r, a);
		free(a);
	}
}

/* After a write: resume reads that waited for the peer to catch up. */
static void conn_after_flush(struct reactor *r, struct conn *c)
{
	const struct server_params *p = &r->srv->params;

	if (c->paused && c->out_bytes <= p->outbound_pause_bytes / 2) {
		c->paused = false;
		conn_mark_backlog(r, c); /* frames may be waiting in rbuf */
	}
	conn_update_events(r, c);
}

static void conn_tls_flush(struct reactor *r, struct conn *c);

/* Writes as much of the connection's answers as the socket takes. */
static void conn_flush(struct reactor *r, struct conn *c)
{
	if (c->tls) {
		conn_tls_flush(r, c);
		return;
	}
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
		size_t left = (size_t)w;
		while (c->out_head && left >= c->out_head->data.len - c->out_off) {
			struct net_msg *m = c->out_head;
			left -= m->data.len - c->out_off;
			c->out_off = 0;
			c->out_head = m->next;
			buf_free(&m->data);
			free(m);
		}
		if (!c->out_head)
			c->out_tail = NULL;
		else
			c->out_off += left;
		if ((size_t)w < total) {
			c->out_blocked = true; /* the socket took less: it is full */
			break;
		}
	}
	if (!c->out_head)
		c->out_blocked = false;
	conn_after_flush(r, c);
}

/* ---- requests ---- */

/* Hands a frame to the callback; a big one alone at the front of the read
 * buffer is offered with the buffer (net_frame.block), so that megabytes
 * of registration are not copied (and faulted in twice) on the reactor,
 * which answers heartbeats and route queries meanwhile. True when the
 * callback kept the buffer: c->rbuf is then a new one, holding what
 * followed the frame. */
static bool reactor_handle_frame(struct reactor *r, struct conn *c, const uint8_t *frame,
				 size_t len)
{
	struct server *s = r->srv;
	bool kept = false;
	uint8_t *next_buf = NULL;
	size_t next_cap = 0, tail = 0;
	struct net_frame f = {
		.conn = { s, c->id },
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
	int rc = s->cb.on_frame(s->cb.arg, &f);
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
static bool conn_share_full(const struct net_conn_share *sh, uint32_t cap)
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

/* Lets a connection stopped at its in-flight cap be read again. */
static void conn_inflight_resume(struct reactor *r, struct conn *c)
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

/* Cuts and handles whole frames from rbuf, at most *budget of them. */
static void conn_cut_frames(struct reactor *r, struct conn *c, int *budget)
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
		if (!reactor_handle_frame(r, c, c->rbuf + c->rpos, size))
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

/* An outbound peer sends nothing we wait for (one-way requests): what
 * comes is read and dropped; its close closes the connection. */
static void conn_discard_input(struct reactor *r, struct conn *c)
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

/* Room for the next read of a connection, plaintext or TLS: 0 when this
 * turn must stop reading it (frame budget spent, closing, paused,
 * quiescing, or no memory for its buffer, which closes it). */
static size_t conn_read_room(struct reactor *r, struct conn *c, int budget)
{
	if (budget == 0 || c->closing || c->paused || c->inflight_paused || !r->reading)
		return 0;
	if (conn_make_room(r, c) < 0) {
		log_error("closing connection %s: out of memory for its read buffer", c->peer);
		conn_fail(r, c);
		return 0;
	}
	return c->rcap - c->rlen;
}

static void conn_on_readable(struct reactor *r, struct conn *c)
{
	int budget = NET_FRAMES_PER_TURN;

	if (c->outbound) {
		conn_discard_input(r, c);
		return;
	}

	conn_cut_frames(r, c, &budget); /* what a paused or cut-short turn left */
	/* A registration of megabytes is read over several turns, so that the
	 * heartbeats and route queries of the reactor's other connections are
	 * read between its parts (level-triggered: the rest shows up again). */
	size_t bytes_left = NET_READ_BYTES_PER_TURN;
	for (int reads = 0; reads < NET_READS_PER_TURN && bytes_left; reads++) {
		size_t room = conn_read_room(r, c, budget);
		if (room == 0)
			break;
		if (room > bytes_left)
			room = bytes_left;
		ssize_t n = read(c->fd, c->rbuf + c->rlen, room);
		if (n > 0) {
			c->rlen += (size_t)n;
			bytes_left -= (size_t)n;
			c->last_active_ms = r->now_ms;
			conn_cut_frames(r, c, &budget);
			if ((size_t)n < room)
				break; /* drained the socket */
			continue;
		}
		if (n == 0) {
			log_debug("connection %s: closed by the peer", c->peer);
			conn_fail(r, c);
			break;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			log_info("closing connection %s: read: %s", c->peer, strerror(errno));
			conn_fail(r, c);
		}
		break;
	}
	if (budget == 0 && !c->closing)
		conn_mark_backlog(r, c);
	conn_sync_held(r, c);
}

/* ---- TLS ---- */

/* OpenSSL's reason for the last failure, for a log line. */
static const char *tls_reason(SSL *ssl, int rc, char *buf, size_t n)
{
	int e = SSL_get_error(ssl, rc);
	unsigned long code = ERR_get_error();
	if (code)
		ERR_error_string_n(code, buf, n);
	else if (e == SSL_ERROR_SYSCALL)
		snprintf(buf, n, "%s", errno ? strerror(errno) : "connection closed");
	else
		snprintf(buf, n, "SSL error %d", e);
	ERR_clear_error();
	return buf;
}

static void conn_tls_read(struct reactor *r, struct conn *c);

static void conn_tls_handshake(struct reactor *r, struct conn *c)
{
	struct conn_tls *t = c->tls;
	char why[256];

	ERR_clear_error();
	int rc = SSL_do_handshake(t->ssl);
	if (rc == 1) {
		t->state = CONN_TLS_OPEN;
		t->hs_wants_write = false;
		c->last_active_ms = r->now_ms;
		metrics_add(MC_TLS_HANDSHAKES, 1);
		metrics_add(MC_CONN_TLS, 1);
		log_debug("connection %s: %s, %s", c->peer, SSL_get_version(t->ssl),
			  SSL_get_cipher_name(t->ssl));
		conn_update_events(r, c);
		conn_tls_read(r, c); /* the first request may have come with the handshake */
		return;
	}
	switch (SSL_get_error(t->ssl, rc)) {
	case SSL_ERROR_WANT_READ:
		t->hs_wants_write = false;
		break;
	case SSL_ERROR_WANT_WRITE:
		t->hs_wants_write = true;
		break;
	default:
		metrics_add(MC_TLS_HANDSHAKE_FAILURES, 1);
		log_info("closing connection %s: TLS handshake failed: %s", c->peer,
			 tls_reason(t->ssl, rc, why, sizeof why));
		conn_fail(r, c);
		return;
	}
	c->last_active_ms = r->now_ms;
	conn_update_events(r, c);
}

/* Peeks at the first byte, as Java does: 0x16 starts a TLS handshake,
 * anything else is plaintext (refused when enforcing). Returns false when
 * the connection turned plaintext: the caller goes on as for any other. */
static bool conn_tls_sniff(struct reactor *r, struct conn *c)
{
	struct conn_tls *t = c->tls;
	uint8_t first;
	ssize_t n = recv(c->fd, &first, 1, MSG_PEEK);

	if (n == 0) {
		log_debug("connection %s: closed by the peer before a byte", c->peer);
		conn_fail(r, c);
		return true;
	}
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			log_info("closing connection %s: read: %s", c->peer, strerror(errno));
			conn_fail(r, c);
		}
		return true;
	}
	if (first != TLS_HANDSHAKE_BYTE) {
		if (tls_server_mode(r->srv->tls) == TLS_MODE_ENFORCING) {
			metrics_add(MC_CONN_PLAINTEXT_REFUSED, 1);
			log_info("closing connection %s: plaintext refused (tls.server.mode=enforcing)", c->peer);
			conn_fail(r, c);
			return true;
		}
		conn_tls_free(c);
		metrics_add(MC_CONN_PLAINTEXT, 1);
		conn_update_events(r, c);
		return false;
	}
	t->ssl = tls_server_new_ssl(r->srv->tls);
	if (!t->ssl || SSL_set_fd(t->ssl, c->fd) != 1) {
		log_error("closing connection %s: out of memory for its TLS session", c->peer);
		conn_fail(r, c);
		return true;
	}
	SSL_set_accept_state(t->ssl);
	t->state = CONN_TLS_HANDSHAKE;
	conn_tls_handshake(r, c);
	return true;
}

/* conn_on_readable over TLS: records in, frames cut as usual. */
static void conn_tls_read(struct reactor *r, struct conn *c)
{
	struct conn_tls *t = c->tls;
	int budget = NET_FRAMES_PER_TURN;
	char why[256];

	t->read_wants_write = false;
	conn_cut_frames(r, c, &budget);
	for (int reads = 0; reads < NET_TLS_READS_PER_TURN; reads++) {
		size_t room = conn_read_room(r, c, budget);
		if (room == 0)
			break;
		ERR_clear_error();
		int n = SSL_read(t->ssl, c->rbuf + c->rlen, room > INT32_MAX ? INT32_MAX : (int)room);
		if (n > 0) {
			c->rlen += (size_t)n;
			c->last_active_ms = r->now_ms;
			conn_cut_frames(r, c, &budget);
			continue;
		}
		int e = SSL_get_error(t->ssl, n);
		if (e == SSL_ERROR_WANT_READ)
			break;
		if (e == SSL_ERROR_WANT_WRITE) {
			t->read_wants_write = true;
			break;
		}
		if (e == SSL_ERROR_ZERO_RETURN) {
			log_debug("connection %s: closed by the peer", c->peer);
		} else {
			log_info("closing connection %s: TLS read: %s", c->peer,
				 tls_reason(t->ssl, n, why, sizeof why));
		}
		conn_fail(r, c);
		break;
	}
	/* Decrypted bytes left in OpenSSL raise no epoll event: come back. */
	if (!c->closing && (budget == 0 || (SSL_has_pending(t->ssl) && !c->paused &&
					    !c->inflight_paused && r->reading)))
		conn_mark_backlog(r, c);
	conn_update_events(r, c);
	conn_sync_held(r, c);
}

/* conn_flush over TLS: up to a record's worth of answers staged, one
 * SSL_write (one record, one write) for it, until the socket is full. */
static void conn_tls_flush(struct reactor *r, struct conn *c)
{
	struct conn_tls *t = c->tls;
	char why[256];

	if (t->state != CONN_TLS_OPEN)
		return; /* nothing to answer yet */
	t->write_wants_read = false;
	c->out_blocked = false;
	for (;;) {
		if (t->stage_off == t->stage.len)
			t->stage.len = t->stage_off = 0; /* nothing pending in OpenSSL: restart */
		while (c->out_head && t->stage.len - t->stage_off < TLS_RECORD_BYTES) {
			struct net_msg *m = c->out_head;
			size_t take = m->data.len - c->out_off;
			size_t room = TLS_RECORD_BYTES - (t->stage.len - t->stage_off);
			if (take > room)
				take = room;
			if (buf_append(&t->stage, m->data.data + c->out_off, take) < 0) {
				log_error("closing connection %s: out of memory for its answers", c->peer);
				conn_fail(r, c);
				return;
			}
			c->out_off += take;
			if (c->out_off == m->data.len) {
				c->out_off = 0;
				c->out_head = m->next;
				buf_free(&m->data);
				free(m);
			}
		}
		if (!c->out_head)
			c->out_tail = NULL;
		size_t len = t->stage.len - t->stage_off;
		if (len == 0)
			break;
		ERR_clear_error();
		int n = SSL_write(t->ssl, t->stage.data + t->stage_off, (int)len);
		if (n > 0) {
			t->stage_off += (size_t)n;
			c->out_bytes -= (uint64_t)n;
			c->last_active_ms = r->now_ms;
			continue;
		}
		int e = SSL_get_error(t->ssl, n);
		if (e == SSL_ERROR_WANT_WRITE) {
			c->out_blocked = true;
			break;
		}
		if (e == SSL_ERROR_WANT_READ) {
			t->write_wants_read = true;
			break;
		}
		log_info("closing connection %s: TLS write: %s", c->peer, tls_reason(t->ssl, n, why, sizeof why));
		conn_fail(r, c);
		return;
	}
	if (t->stage_off == t->stage.len && !c->out_head)
		buf_free(&t->stage); /* an idle connection keeps no staging memory */
	conn_after_flush(r, c);
}

/* An epoll event on a TLS connection. Returns false when it turned out to
 * be plaintext: the caller handles the event as for any other. */
static bool conn_tls_on_event(struct reactor *r, struct conn *c, uint32_t events)
{
	struct conn_tls *t = c->tls;

	if (t->state == CONN_TLS_SNIFF) {
		if (!conn_tls_sniff(r, c))
			return false;
		return true; /* the handshake, if any, took its first step */
	}
	if (t->state == CONN_TLS_HANDSHAKE) {
		conn_tls_handshake(r, c);
		return true;
	}
	if ((events & EPOLLOUT) || (t->write_wants_read && (events & EPOLLIN)))
		conn_mark_dirty(r, c);
	if ((events & EPOLLIN) || (t->read_wants_write && (events & EPOLLOUT)))
		conn_tls_read(r, c);
	else if (events & (EPOLLERR | EPOLLHUP)) {
		log_debug("connection %s: hang-up or error", c->peer);
		conn_fail(r, c);
	}
	return true;
}

/* Connections that used up their turn's budget get another turn. */
static void reactor_run_backlog(struct reactor *r)
{
	struct cds_list_head todo;

	if (cds_list_empty(&r->backlog))
		return;
	cds_list_replace_init(&r->backlog, &todo);
	while (!cds_list_empty(&todo)) {
		struct conn *c = cds_list_first_entry(&todo, struct conn, backlog_node);
		cds_list_del_init(&c->backlog_node);
		if (c->closing)
			continue;
		if (c->tls) {
			if (c->tls->state == CONN_TLS_OPEN)
				conn_tls_read(r, c); /* frames cut, then what OpenSSL holds */
			continue;
		}
		int budget = NET_FRAMES_PER_TURN;
		conn_cut_frames(r, c, &budget);
		if (budget == 0 && !c->closing)
			conn_mark_backlog(r, c);
		/* More bytes in its socket show up as EPOLLIN (level-triggered). */
	}
}

static void reactor_flush_dirty(struct reactor *r)
{
	while (!cds_list_empty(&r->dirty)) {
		struct conn *c = cds_list_first_entry(&r->dirty, struct conn, dirty_node);
		cds_list_del_init(&c->dirty_node);
		if (!c->closing && !c->connecting) {
			conn_flush(r, c);
			conn_sync_held(r, c);
		}
		if (c->closing)
			conn_destroy(r, c, "closed");
	}
}

static void reactor_scan_idle(struct reactor *r)
{
	uint64_t idle = r->srv->params.idle_close_ms;
	uint64_t expirations;

	if (read(r->timerfd, &expirations, sizeof expirations) < 0)
		return;
	for (uint32_t i = 0; i < r->cap; i++) {
		struct conn *c = r->conns[i];
		if (c && !c->closing && c->tls && c->tls->state != CONN_TLS_OPEN &&
		    r->now_ms >= c->tls->deadline_ms) {
			if (c->tls->state == CONN_TLS_HANDSHAKE)
				metrics_add(MC_TLS_HANDSHAKE_FAILURES, 1);
			log_info("closing connection %s: no TLS handshake within %u ms", c->peer,
				 TLS_HANDSHAKE_TIMEOUT_MS);
			conn_fail(r, c);
		}
		/* a resume whose message could not be allocated */
		if (c && c->inflight_paused && c->share &&
		    !conn_share_full(c->share, r->srv->params.max_inflight))
			conn_inflight_resume(r, c);
		if (c && !c->closing && idle && r->now_ms - c->last_active_ms >= idle) {
			log_info("closing connection %s: idle for %llu ms", c->peer,
				 (unsigned long long)(r->now_ms - c->last_active_ms));
			conn_fail(r, c);
		}
	}
}

static void reactor_on_event(struct reactor *r, const struct epoll_event *ev)
{
	uint64_t id = ev->data.u64;

	if (id == REACTOR_WAKE_ID) {
		uint64_t count;
		if (read(r->wakefd, &count, sizeof count) < 0 && errno != EAGAIN)
			log_error("reactor %u: eventfd read: %s", r->index, strerror(errno));
		return;
	}
	if (id == REACTOR_TIMER_ID) {
		reactor_scan_idle(r);
		return;
	}
	struct conn *c = reactor_find(r, id);
	if (!c || c->closing)
		return; /* closed earlier in this turn */
	if (c->connecting) {
		conn_connected(r, c);
		return;
	}
	if (c->tls && conn_tls_on_event(r, c, ev->events))
		return;
	if (ev->events & EPOLLOUT)
		conn_mark_dirty(r, c);
	if ((ev->events & EPOLLRDHUP) && !(ev->events & EPOLLIN)) {
		/* a stopped connection's peer closed (or shut its side, which
		 * Netty takes for a close as well): what it queued goes too */
		log_debug("connection %s: closed by the peer while its reads were stopped", c->peer);
		conn_fail(r, c);
	} else if (ev->events & EPOLLIN) {
		conn_on_readable(r, c);
	} else if (ev->events & (EPOLLERR | EPOLLHUP)) {
		log_debug("connection %s: hang-up or error", c->peer);
		conn_fail(r, c);
	}
}

/* ---- the memory budget ---- */

/* What c holds: its partial frame, its unsent answers and the frames of
 * its queued requests. */
static uint64_t conn_held(const struct conn *c)
{
	uint64_t held = (uint64_t)c->held_acct;
	if (c->share)
		held += atomic_load_explicit(&c->share->bytes, memory_order_relaxed);
	return held;
}

#define NET_BUDGET_LOG_MS 10000u /* one log line per this long while closing */

/* Past the budget, the reactor holding the biggest connection closes it,
 * one a turn, until the process is under budget again: an attacker's
 * stalled frames go first, the brokers' small ones stay. Each reactor
 * publishes its biggest so that only the one holding the most acts. */
static void reactor_enforce_budget(struct reactor *r)
{
	struct server *s = r->srv;
	uint64_t budget = s->params.memory_budget;
	int64_t held = atomic_load_explicit(&s->held_bytes, memory_order_relaxed);

	if (!budget || held <= (int64_t)budget) {
		if (atomic_load_explicit(&r->largest_held, memory_order_relaxed))
			atomic_store_explicit(&r->largest_held, 0, memory_order_relaxed);
		return;
	}
	struct conn *big = NULL;
	uint64_t big_held = 0;
	for (uint32_t i = 0; i < r->cap; i++) {
		struct conn *c = r->conns[i];
		if (!c || c->closing || c->outbound)
			continue;
		uint64_t h = conn_held(c);
		if (h > big_held) {
			big = c;
			big_held = h;
		}
	}
	atomic_store_explicit(&r->largest_held, big_held, memory_order_relaxed);
	if (!big)
		return;
	for (unsigned i = 0; i < s->nreactors; i++)
		if (&s->reactors[i] != r &&
		    atomic_load_explicit(&s->reactors[i].largest_held, memory_order_relaxed) > big_held)
			return; /* another reactor holds a bigger one: its turn */
	metrics_add(MC_CONN_BUDGET_CLOSED, 1);
	r->budget_closed++;
	if (r->now_ms - r->budget_log_ms >= NET_BUDGET_LOG_MS || !r->budget_log_ms) {
		log_warn("closing connection %s: it holds %llu bytes and the process %lld, past "
			 "connectionMemoryBudget %llu (%u connections closed for it in %u s)",
			 big->peer, (unsigned long long)big_held, (long long)held,
			 (unsigned long long)budget, r->budget_closed, NET_BUDGET_LOG_MS / 1000u);
		r->budget_log_ms = r->now_ms;
		r->budget_closed = 0;
	}
	conn_fail(r, big);
}

/* ---- phases ---- */

static void reactor_turn_end(struct reactor *r)
{
	const struct net_callbacks *cb = &r->srv->cb;
	if (cb->on_turn_end)
		cb->on_turn_end(cb->arg);
}

static void reactor_stop_reading(struct reactor *r)
{
	r->reading = false;
	for (uint32_t i = 0; i < r->cap; i++)
		if (r->conns[i])
			conn_update_events(r, r->conns[i]);
	reactor_turn_end(r);
	server_ack_phase(r->srv);
}

static bool reactor_all_flushed(struct reactor *r)
{
	for (uint32_t i = 0; i < r->cap; i++)
		if (r->conns[i] && !r->conns[i]->closing &&
		    (r->conns[i]->out_head ||
		     (r->conns[i]->tls && r->conns[i]->tls->stage_off < r->conns[i]->tls->stage.len)))
			return false;
	return true;
}

static void reactor_close_all(struct reactor *r)
{
	for (uint32_t i = 0; i < r->cap; i++)
		if (r->conns[i])
			conn_destroy(r, r->conns[i], "server stopping");
}

static bool reactor_has_work(struct reactor *r)
{
	return !cds_wfcq_empty(&r->in_head, &r->in_tail) ||
	       !cds_wfcq_empty(&r->acc_head, &r->acc_tail) ||
	       atomic_load(&r->phase) != r->seen_phase;
}

static void *reactor_main(void *arg)
{
	struct reactor *r = arg;
	struct epoll_event evs[NET_EVENTS_PER_WAIT];
	const struct net_callbacks *cb = &r->srv->cb;
	char name[16];

	reactor_self = r;
	snprintf(name, sizeof name, "reactor-%u", r->index);
	log_set_thread_name(name);
	rcu_register_thread();
	if (cb->on_thread_start)
		cb->on_thread_start(cb->arg);
	metrics_defer_clock(); /* one clock read per turn for the answers' latency */
	reactor_clock(r);
	for (;;) {
		int phase = atomic_load(&r->phase);
		if (phase != r->seen_phase) {
			r->seen_phase = phase;
			if (phase >= REACTOR_QUIESCE && r->reading)
				reactor_stop_reading(r);
			if (phase == REACTOR_EXIT)
				r->exit_deadline_ms += r->now_ms;
		}
		/* Nothing produces answers any more at EXIT, but the last ones may
		 * still sit in the inbound queue: take and write them first. */
		if (phase == REACTOR_EXIT &&
		    ((cds_wfcq_empty(&r->in_head, &r->in_tail) && reactor_all_flushed(r)) ||
		     r->now_ms >= r->exit_deadline_ms))
			break;

		int timeout = reactor_check_connects(r);
		if (!cds_list_empty(&r->backlog) || !cds_list_empty(&r->dirty))
			timeout = 0; /* more frames to cut, or a connect that just failed */
		else if (phase == REACTOR_EXIT && (timeout < 0 || timeout > 10))
			timeout = 10;
		atomic_store(&r->sleeping, 1);
		atomic_thread_fence(memory_order_seq_cst);
		if (timeout != 0 && reactor_has_work(r))
			timeout = 0;
		int n = epoll_wait(r->epfd, evs, NET_EVENTS_PER_WAIT, timeout);
		atomic_store_explicit(&r->sleeping, 0, memory_order_relaxed);
		if (n < 0 && errno != EINTR)
			log_error("reactor %u: epoll_wait: %s", r->index, strerror(errno));
		reactor_clock(r);
		for (int i = 0; i < n; i++)
			reactor_on_event(r, &evs[i]);
		reactor_take_accepted(r);
		reactor_take_answers(r);
		reactor_run_backlog(r);
		reactor_turn_end(r);
		reactor_enforce_budget(r); /* before the flush, which destroys what it closes */
		reactor_flush_dirty(r);
		metrics_turn_end();
	}
	reactor_take_answers(r); /* nothing should be left; free what is */
	reactor_close_all(r);
	metrics_turn_end();
	if (cb->on_thread_end)
		cb->on_thread_end(cb->arg);
	rcu_unregister_thread();
	reactor_self = NULL;
	return NULL;
}

/* ---- setup ---- */

int reactor_init(struct reactor *r, struct server *srv, unsigned index)
{
	memset(r, 0, sizeof *r);
	r->srv = srv;
	r->index = index;
	r->reading = true;
	r->epfd = r->wakefd = r->timerfd = -1;
	__cds_wfcq_init(&r->in_head, &r->in_tail);
	__cds_wfcq_init(&r->acc_head, &r->acc_tail);
	CDS_INIT_LIST_HEAD(&r->dirty);
	CDS_INIT_LIST_HEAD(&r->backlog);
	CDS_INIT_LIST_HEAD(&r->outbound);
	atomic_init(&r->sleeping, 0);
	atomic_init(&r->phase, REACTOR_RUN);
	atomic_init(&r->conn_count, 0);
	r->seen_phase = REACTOR_RUN;

	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	r->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->epfd < 0 || r->wakefd < 0) {
		log_error("reactor %u: %s", index, strerror(errno));
		return RMQNS_EIO;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = REACTOR_WAKE_ID };
	if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->wakefd, &ev) < 0) {
		log_error("reactor %u: epoll_ctl: %s", index, strerror(errno));
		return RMQNS_EIO;
	}
	uint64_t idle = srv->params.idle_close_ms;
	{
		/* Scan a few times per idle period: closes land within 1.25x of it.
		 * The timer runs without an idle limit too: a reactor turns at
		 * least every NET_TURN_MAX_MS, which is how health checks tell a
		 * stalled one from an idle one. */
		uint64_t tick = idle ? idle / 4 : NET_TURN_MAX_MS;
		if (tick < 50)
			tick = 50;
		if (tick > NET_TURN_MAX_MS)
			tick = NET_TURN_MAX_MS;
		r->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		struct itimerspec its = { 0 };
		its.it_interval.tv_sec = tick / 1000;
		its.it_interval.tv_nsec = (long)(tick % 1000) * 1000000L;
		its.it_value = its.it_interval;
		ev.data.u64 = REACTOR_TIMER_ID;
		if (r->timerfd < 0 || timerfd_settime(r->timerfd, 0, &its, NULL) < 0 ||
		    epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->timerfd, &ev) < 0) {
			log_error("reactor %u: idle timer: %s", index, strerror(errno));
			return RMQNS_EIO;
		}
	}
	return reactor_grow_slots(r);
}

/* The CPU for reactor i: the i-th the process may use (round the set when
 * there are more reactors than CPUs); -1 when the set is unknown. Pinned,
 * two busy reactors never share a CPU waiting for each other while the
 * other CPU parses registrations. */
static int reactor_cpu(const struct reactor *r)
{
	cpu_set_t allowed;
	if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
		log_warn("reactor %u: not pinned: sched_getaffinity: %s", r->index, strerror(errno));
		return -1;
	}
	int n = CPU_COUNT(&allowed), k = 0;
	if (n <= 0)
		return -1;
	int want = (int)(r->index % (unsigned)n);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &allowed) && k++ == want)
			return c;
	return -1;
}

int reactor_start(struct reactor *r)
{
	pthread_attr_t attr, *ap = NULL;
	int cpu = r->srv->params.cpu_affinity ? reactor_cpu(r) : -1;
	if (cpu >= 0 && pthread_attr_init(&attr) == 0) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		ap = &attr;
		int rc = pthread_attr_setaffinity_np(ap, sizeof one, &one);
		if (rc != 0)
			log_warn("reactor %u: not pinned to CPU %d: %s", r->index, cpu, strerror(rc));
		else
			log_debug("reactor %u on CPU %d", r->index, cpu);
	}
	reactor_clock(r); /* its start counts as a turn for health checks */
	int rc = pthread_create(&r->thread, ap, reactor_main, r);
	if (ap)
		pthread_attr_destroy(ap);
	if (rc != 0) {
		log_error("cannot start reactor %u: %s", r->index, strerror(rc));
		return RMQNS_ENOMEM;
	}
	/* named here, not in the thread: named before start-up is reported */
	char name[16];
	snprintf(name, sizeof name, "reactor-%u", r->index);
	pthread_setname_np(r->thread, name); /* for top -H and the tests */
	r->started = true;
	return RMQNS_OK;
}

void reactor_join(struct reactor *r)
{
	if (!r->started)
		return;
	pthread_join(r->thread, NULL);
	r->started = false;
}

void reactor_cleanup(struct reactor *r)
{
	struct cds_wfcq_node *node, *next;

	if (r->epfd >= 0 || r->conns) {
		/* Never started, or stopped: only this thread is left. */
		reactor_close_all(r);
		__cds_wfcq_for_each_blocking_safe(&r->in_head, &r->in_tail, node, next) {
			struct net_msg *m = caa_container_of(node, struct net_msg, node);
			race_acquire(m);
			net_msg_free(m);
		}
		__cds_wfcq_init(&r->in_head, &r->in_tail);
		__cds_wfcq_for_each_blocking_safe(&r->acc_head, &r->acc_tail, node, next) {
			struct net_accepted *a = caa_container_of(node, struct net_accepted, node);
			race_acquire(a);
			close(a->fd);
			free(a);
		}
		__cds_wfcq_init(&r->acc_head, &r->acc_tail);
	}
	if (r->timerfd >= 0)
		close(r->timerfd);
	if (r->wakefd >= 0)
		close(r->wakefd);
	if (r->epfd >= 0)
		close(r->epfd);
	r->epfd = r->wakefd = r->timerfd = -1;
	free(r->conns);
	free(r->gens);
	free(r->free_slots);
	r->conns = NULL;
	r->gens = r->free_slots = NULL;
	r->cap = r->nfree = 0;
}
