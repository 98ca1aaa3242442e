/* Types and calls shared by the files of src/net. Calls go one way, from
 * the top down: server.c (lifecycle) → boss.c (accepts) and reactor.c (the
 * thread) → inbox.c (what other threads hand a reactor) → outbound.c,
 * transport_tls.c, transport_plain.c → conn_read.c (frames) → budget.c →
 * conn.c (a connection's slot and state) → loop.c; send.c and share.c are
 * called from outside the folder and call inbox.c and conn.c. Nothing outside src/net
 * includes this. */
#ifndef RMQNS_NET_INTERNAL_H
#define RMQNS_NET_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <urcu/list.h>
#include <urcu/wfcqueue.h>

#include "rmqns/buf.h"
#include "rmqns/net.h"

/* Fairness and memory bounds of one reactor turn. */
#define NET_FRAMES_PER_TURN 64      /* frames cut per connection per wake-up */
#define NET_READS_PER_TURN 4        /* read() calls per connection per wake-up */
#define NET_READ_BYTES_PER_TURN (1u << 18) /* bytes read per connection per wake-up */
#define NET_TLS_READS_PER_TURN 16   /* SSL_read calls (a record, <= 16 KiB, each) */
#define NET_RBUF_INITIAL 16384u     /* read buffer of a fresh connection */
#define NET_RBUF_KEEP (1u << 18)    /* an emptied buffer above this shrinks back */
#define NET_HANDOVER_MIN (1u << 18) /* a frame this big may leave with its buffer */
#define NET_WRITEV_MAX 64           /* iovecs per writev */
#define NET_COALESCE_MAX 65536u     /* inline answers join a waiting buffer up to this */
#define NET_COALESCE_CHUNK 4096u    /* first size of such a buffer */

struct conn;
struct loop;
struct reactor;
struct tls_server;
struct tls_settings;

enum net_msg_kind {
	NET_MSG_DATA = 0,    /* bytes for conn_id */
	NET_MSG_CLOSE = 1,   /* no bytes: close conn_id (its broker expired) */
	NET_MSG_SEND_TO = 2, /* bytes for the outbound connection to `to` */
	NET_MSG_RESUME = 3,  /* no bytes: conn_id's requests drained below the in-flight cap */
};

/* net.h's share of a connection (see there). */
struct net_conn_share {
	atomic_uint refs;
	atomic_uint inflight;    /* requests queued and not yet finished */
	atomic_uint barriers;    /* of which barriers: reads wait for them */
	atomic_bool closed;
	atomic_bool waiting;     /* the reactor stopped reading at the cap */
	_Atomic uint64_t bytes;  /* frame bytes those requests hold */
	struct reactor *r;
	uint64_t conn_id;
};

/* A peer to connect to. */
struct net_dest {
	struct sockaddr_storage addr;
	socklen_t addrlen;
	char name[NET_PEER_LEN]; /* as given: the key connections are reused by */
};

/* Bytes travelling to a connection: first through a reactor's inbound
 * queue, then on the connection's outbound list. */
struct net_msg {
	struct cds_wfcq_node node;
	struct net_msg *next;
	uint64_t conn_id;
	struct buf data;
	enum net_msg_kind kind;
	struct net_dest *to; /* NET_MSG_SEND_TO only; owned */
};

/* A socket accepted by the boss, on its way to a reactor. */
struct net_accepted {
	struct cds_wfcq_node node;
	int fd;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	const struct net_callbacks *cb; /* its listener's */
};

enum reactor_phase {
	REACTOR_RUN = 0,
	REACTOR_QUIESCE = 1, /* no more reads; answers still flow */
	REACTOR_EXIT = 2,    /* flush, close everything, leave */
};

struct reactor {
	struct server *srv;
	unsigned index;
	struct loop *loop; /* and its thread */

	/* Written by other threads. */
	struct __cds_wfcq_head in_head; /* struct net_msg: answers */
	struct cds_wfcq_tail in_tail;
	struct __cds_wfcq_head acc_head; /* struct net_accepted: new sockets */
	struct cds_wfcq_tail acc_tail;
	atomic_int phase;      /* enum reactor_phase */
	atomic_uint conn_count;
	_Atomic uint64_t turn_ms; /* the reactor's clock at its latest turn */

	/* Private to the reactor thread from here on. */
	struct conn **conns;   /* by slot */
	uint32_t *gens;        /* generation of each slot */
	uint32_t *free_slots;  /* stack of unused slots */
	uint32_t nfree, nslots, cap;
	struct cds_list_head dirty;   /* connections with answers to write or closing */
	struct cds_list_head backlog; /* connections with whole frames left to cut */
	struct cds_list_head outbound; /* connections this reactor opened */
	uint64_t now_ms, now_ns;
	int seen_phase;
	bool reading;          /* false once quiesced */
	uint64_t exit_deadline_ms; /* relative when set by server_stop */
	uint64_t budget_log_ms;    /* last budget-closing log line */
	unsigned budget_closed;    /* connections closed for the budget since then */
	_Atomic uint64_t largest_held; /* this reactor's biggest holder, while over budget */
};

/* The reactor whose thread this is; NULL on any other thread. */
extern __thread struct reactor *reactor_self;

/* A listening socket and the callbacks of the connections it accepts. */
struct listener {
	struct server *srv;
	int fd;
	int port;
	char bind[64];
	const char *what; /* the option naming the address, for log lines */
	const struct net_callbacks *cb; /* on_frame and on_closed of its connections */
	struct net_callbacks own_cb;     /* a second port's (server_add_listener) */
};

/* The protocol port, and the embedded controller's. */
#define NET_MAX_LISTENERS 2u

/* The boss's accept back-off; the boss thread's alone. */
struct accept_backoff {
	uint64_t until_ms;  /* 0: the listener is watched */
	uint64_t logged_ms; /* when the last pause line went out; 0: never */
	uint64_t unlogged;  /* pauses since that line */
	uint64_t outage;    /* pauses since accepting last worked */
};

struct server {
	struct server_params params;
	struct net_callbacks cb; /* the reactors' hooks, and the protocol port's */
	/* The transport accepted connections start on, and its state
	 * (transport_tls.c's alone). */
	const struct conn_ops *accept_ops;
	struct tls_server *tls;
	struct listener listeners[NET_MAX_LISTENERS]; /* [0]: the protocol port */
	unsigned nlisteners;
	struct loop *boss_loop;
	struct accept_backoff backoff; /* the boss's */
	unsigned next_reactor;
	unsigned nreactors;
	struct reactor *reactors;
	atomic_bool notify_closes; /* registrar notices still wanted */
	atomic_bool reactors_gone; /* answers can no longer be delivered */
	/* Bytes held for connections: partial frames, unsent answers, frames
	 * of queued requests (server_params.memory_budget). */
	_Atomic int64_t held_bytes;

	pthread_mutex_t ack_lock; /* reactors acknowledging a phase change */
	pthread_cond_t ack_cond;
	unsigned acks;
};

/* The reactor owning a connection, or NULL when there is none to reach. */
static inline struct reactor *server_reactor_of(struct server *s, uint64_t conn_id)
{
	uint32_t ri = net_conn_reactor(conn_id);
	if (!s || conn_id == 0 || ri >= s->nreactors ||
	    atomic_load_explicit(&s->reactors_gone, memory_order_acquire))
		return NULL;
	return &s->reactors[ri];
}

/* ---- a connection ---- */

/* What a connection's transport does; swapped as the connection learns
 * what it is (a TLS sniff turning plaintext, a handshake done, a connect
 * done), as nginx swaps recv/send. Only the transport's own file knows
 * which it is. */
struct conn_ops {
	/* sets the transport up on an accepted connection; < 0 closes it */
	int (*open)(struct reactor *r, struct conn *c);
	/* the loop reported events */
	void (*on_event)(struct reactor *r, struct conn *c, uint32_t events);
	/* whole frames (or bytes the transport holds) left by an earlier turn;
	 * NULL: none */
	void (*read_more)(struct reactor *r, struct conn *c);
	/* writes what waits, as much as the socket takes; NULL: not yet */
	void (*flush)(struct reactor *r, struct conn *c);
	/* the events to watch given what the connection asks for; NULL: those */
	uint32_t (*interest)(const struct reactor *r, const struct conn *c, uint32_t want);
	/* the idle scan's look at the transport's deadlines; NULL: none */
	void (*tick)(struct reactor *r, struct conn *c);
	/* frees the transport's state at close; NULL: none */
	void (*release)(struct conn *c);
};

struct conn {
	uint64_t id;
	int fd;
	struct reactor *r;
	const struct conn_ops *ops;
	void *xport;             /* the transport's state */
	const struct net_callbacks *cb; /* accepted connections: their listener's */
	uint32_t events;         /* the events the loop watches for it */
	char peer[NET_PEER_LEN];
	uint8_t *rbuf;           /* bytes received, [rpos, rlen) not yet cut */
	size_t rpos, rlen, rcap;
	struct net_msg *out_head, *out_tail;
	size_t out_off;          /* bytes of out_head already written */
	uint64_t out_bytes;      /* queued and not yet written (nor taken by the transport) */
	uint64_t last_active_ms; /* last successful read or write */
	bool paused;             /* reads stopped: the peer is not reading its answers */
	bool inflight_paused;    /* reads stopped: max_inflight requests queued */
	int64_t held_acct;       /* partial frame and unsent bytes counted in held_bytes */
	struct net_conn_share *share; /* accepted connections only */
	bool out_blocked;        /* the socket is full: waiting for writability */
	bool closing;            /* destroyed at the end of this turn */
	bool outbound;           /* opened by the reactor (net_send_to): nothing is read */
	bool connecting;         /* outbound, connect() in progress */
	uint64_t connect_deadline_ms;
	struct cds_list_head dirty_node;
	struct cds_list_head backlog_node;
	struct cds_list_head outbound_node; /* on r->outbound */
};

/* conn.c: slots, opening and closing, and a connection's watched events */
struct conn *conn_find(struct reactor *r, uint64_t id);
int conn_grow_slots(struct reactor *r);
struct conn *conn_new(struct reactor *r, int fd, uint32_t events, const char *peer,
		      const struct conn_ops *ops);
void conn_accept(struct reactor *r, struct net_accepted *a);
void conn_destroy(struct reactor *r, struct conn *c, const char *why);
void conn_fail(struct reactor *r, struct conn *c);
void conn_update_events(struct reactor *r, struct conn *c);
/* c has bytes to write or is closing: looked at before the turn ends. */
static inline void conn_mark_dirty(struct reactor *r, struct conn *c)
{
	if (cds_list_empty(&c->dirty_node))
		cds_list_add_tail(&c->dirty_node, &r->dirty);
}
/* c has whole frames (or transport bytes) left: read on next turn. */
static inline void conn_mark_backlog(struct reactor *r, struct conn *c)
{
	if (cds_list_empty(&c->backlog_node))
		cds_list_add_tail(&c->backlog_node, &r->backlog);
}
/* Appends m to c's outbound list; counts len more bytes waiting. */
void conn_queue_msg(struct reactor *r, struct conn *c, struct net_msg *m);
void conn_account_out(struct reactor *r, struct conn *c, size_t len);
/* n bytes of the outbound list went out (or to the transport): the
 * messages they end are freed. */
void conn_out_consumed(struct conn *c, size_t n);
/* After a write: resumes reads that waited for the peer to catch up. */
void conn_after_flush(struct reactor *r, struct conn *c);
void conn_format_peer(char *out, size_t n, const struct sockaddr_storage *ss);
struct net_msg *net_msg_new(uint64_t conn_id, enum net_msg_kind kind);
void net_msg_free(struct net_msg *m);

/* budget.c: the process's memory budget */
void conn_sync_held(struct reactor *r, struct conn *c);
void reactor_enforce_budget(struct reactor *r);

/* conn_read.c: bytes in, frames cut and handed to on_frame */
typedef ssize_t (*conn_recv_fn)(struct reactor *r, struct conn *c, uint8_t *buf, size_t room);
/* Cuts what is buffered, then reads with recv (> 0: bytes; 0: nothing
 * more now; < 0: the connection failed, already closed by recv) at most
 * `reads` times while the turn's budgets allow. short_read_drains: a read
 * shorter than asked for means the socket is empty. */
void conn_read_frames(struct reactor *r, struct conn *c, conn_recv_fn recv, int reads,
		      bool short_read_drains);
/* Cuts and handles whole frames from rbuf, at most *budget of them. */
void conn_cut_frames(struct reactor *r, struct conn *c, int *budget);
bool conn_share_full(const struct net_conn_share *sh, uint32_t cap);
void conn_inflight_resume(struct reactor *r, struct conn *c);
/* True when the connection's reads may go on this turn. */
static inline bool conn_reading(const struct reactor *r, const struct conn *c)
{
	return !c->closing && !c->paused && !c->inflight_paused && r->reading;
}

/* transport_plain.c */
extern const struct conn_ops conn_plain_ops;
/* Writes c's outbound list with writev (plaintext and outbound). */
void conn_plain_flush(struct reactor *r, struct conn *c);

/* transport_tls.c: the TLS context, and the ops of accepted connections */
int net_transport_init(struct server *s, const struct tls_settings *ts);
/* How often the boss looks at the certificate files (0: never), and the look. */
uint64_t net_transport_watch_ms(const struct server *s);
void net_transport_watch(struct server *s);
/* After every connection is gone. */
void net_transport_destroy(struct server *s);

/* outbound.c: connections the reactor opens */
void outbound_deliver(struct reactor *r, struct net_msg *m);
/* Fails connects past their deadline; the wait until the next (-1: none). */
int outbound_check_connects(struct reactor *r);

/* inbox.c: what other threads hand a reactor */
void inbox_post(struct reactor *r, struct net_msg *m);
int inbox_post_close(struct reactor *r, uint64_t conn_id);
int inbox_post_resume(struct reactor *r, uint64_t conn_id);
void inbox_post_accepted(struct reactor *r, struct net_accepted *a);
void inbox_take_accepted(struct reactor *r);
void inbox_take_answers(struct reactor *r);
/* Frees what is still queued (no thread left to take it). */
void inbox_drop_all(struct reactor *r);

/* Drops a reference to a share (the reactor's at close, a request's
 * when done). */
static inline void net_share_unref(struct net_conn_share *sh)
{
	if (atomic_fetch_sub(&sh->refs, 1) == 1)
		free(sh);
}

/* reactor.c: the thread */
int reactor_init(struct reactor *r, struct server *srv, unsigned index);
int reactor_start(struct reactor *r);
void reactor_cleanup(struct reactor *r);
/* Tells the reactors to move to phase (any thread but theirs). */
void reactors_set_phase(struct server *s, enum reactor_phase phase);

/* boss.c: the accepting thread. boss_start listens and sets the loop up,
 * boss_run starts the thread; boss_stop ends it and closes the listener. */
int boss_start(struct server *s);
int boss_run(struct server *s);
void boss_stop(struct server *s);
void boss_destroy(struct server *s);

#endif
