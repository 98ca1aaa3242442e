/* Types shared by the two halves of src/net: server.c (lifecycle, boss
 * thread, routing answers to reactors) and reactor.c (the event loop and
 * the connections it owns). Nothing outside src/net includes this. */
#ifndef RMQNS_NET_INTERNAL_H
#define RMQNS_NET_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <urcu/list.h>
#include <urcu/wfcqueue.h>

#include "rmqns/buf.h"
#include "rmqns/net.h"
#include "rmqns/tls.h"

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
#define NET_EVENTS_PER_WAIT 256

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

/* share.c: a share for a new connection of r (one reference, the
 * reactor's), NULL without memory; and the reactor's side of a close. */
struct net_conn_share *net_share_new(struct reactor *r, uint64_t conn_id);
void net_share_close(struct net_conn_share *sh);

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
};

enum reactor_phase {
	REACTOR_RUN = 0,
	REACTOR_QUIESCE = 1, /* no more reads; answers still flow */
	REACTOR_EXIT = 2,    /* flush, close everything, leave */
};

struct conn;

struct reactor {
	struct server *srv;
	unsigned index;
	pthread_t thread;
	bool started;
	int epfd, wakefd, timerfd;

	/* Written by other threads. */
	struct __cds_wfcq_head in_head; /* struct net_msg: answers */
	struct cds_wfcq_tail in_tail;
	struct __cds_wfcq_head acc_head; /* struct net_accepted: new sockets */
	struct cds_wfcq_tail acc_tail;
	atomic_int sleeping;   /* 1 while the loop may block in epoll_wait */
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

struct server {
	struct server_params params;
	struct tls_server *tls; /* NULL: tls.server.mode=disabled */
	char bind[64];
	struct net_callbacks cb;
	int listenfd;
	int port;
	int boss_stopfd;
	pthread_t boss;
	bool boss_started;
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

/* reactor.c */
int reactor_init(struct reactor *r, struct server *srv, unsigned index);
int reactor_start(struct reactor *r);
void reactor_wake(struct reactor *r);
/* net_send for a connection of r: straight into the connection on r's own
 * thread, through r's inbound queue from any other. */
int reactor_send(struct reactor *r, uint64_t conn_id, net_head_fn head, void *head_arg,
		 const void *body, size_t body_len);
/* Queues a close request for a connection of r (from any thread). */
int reactor_post_close(struct reactor *r, uint64_t conn_id);
/* Tells r that conn_id's requests drained below the in-flight cap. */
int reactor_post_resume(struct reactor *r, uint64_t conn_id);
/* Queues bytes for r's outbound connection to `to` (takes to). */
int reactor_post_send_to(struct reactor *r, struct net_dest *to, const void *frame, size_t len);
void reactor_post_accepted(struct reactor *r, struct net_accepted *a);
void reactor_join(struct reactor *r);
void reactor_cleanup(struct reactor *r);

/* server.c */
void server_ack_phase(struct server *s);

#endif
