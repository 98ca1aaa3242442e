/* The network side of the server: one boss thread that accepts connections
 * and N reactor threads, each owning its connections outright (epoll, reads,
 * frame cutting, writev). It knows sockets, frames and connection ids, and
 * nothing of requests: every whole frame goes to the callbacks given to
 * server_create (main.c wires them to the processor and the registrar), and
 * any thread sends encoded bytes back on a connection reference
 * (net_send_begin / net_send_commit). */
#ifndef RMQNS_NET_H
#define RMQNS_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "rmqns/buf.h"

struct conn;
struct net_msg;
struct reactor;
struct server;
struct tls_settings;

/* A connection id: reactor index (8 bits), slot (24 bits), generation
 * (32 bits, never 0). An id whose slot has since been reused no longer
 * matches, so an answer for a closed connection is dropped. 0 is never a
 * connection. */
#define NET_MAX_REACTORS 255u
#define NET_MAX_SLOTS (1u << 24)

static inline uint64_t net_conn_id(uint32_t reactor, uint32_t slot, uint32_t gen)
{
	return ((uint64_t)reactor << 56) | ((uint64_t)slot << 32) | gen;
}
static inline uint32_t net_conn_reactor(uint64_t id) { return (uint32_t)(id >> 56); }
static inline uint32_t net_conn_slot(uint64_t id) { return (uint32_t)(id >> 32) & (NET_MAX_SLOTS - 1); }
static inline uint32_t net_conn_gen(uint64_t id) { return (uint32_t)id; }

/* struct net_conn (a reference to a connection, for whoever answers on
 * it: copied freely, it never dangles, see above) and NET_PEER_LEN. */
#include "rmqns/net_types.h"

/* What an accepted connection shares with the requests it has queued on
 * other threads: how many are in flight (past serverMaxInflight the owning
 * reactor stops reading the connection until answers drain, as Netty turns
 * a channel's auto-read off), the frame bytes they hold (counted against
 * the process's connectionMemoryBudget) and whether the connection has
 * closed (queued work for it is then dropped). Reference-counted: the
 * reactor holds one reference while the connection is open, each queued
 * request another. */
struct net_conn_share;

/* A request queued past the frame callback holds the connection's share
 * for its frame of `bytes`; any thread. A barrier request (a one-way
 * registration) stops the connection's reads until it is finished, so
 * that what the connection sends next sees it applied. */
void net_share_hold(struct net_conn_share *sh, size_t bytes, bool barrier);
/* The request is finished (answered, dropped or freed): gives back what
 * net_share_hold took, and lets a connection stopped at its in-flight cap
 * or behind a barrier be read again. Any thread, while the server exists. */
void net_share_release(struct net_conn_share *sh, size_t bytes, bool barrier);
/* True once the connection has closed. */
bool net_share_closed(const struct net_conn_share *sh);

/* One whole frame cut from a connection. */
struct net_frame {
	struct net_conn conn;
	const char *peer;     /* "ip:port" */
	const uint8_t *data;  /* length prefix included; valid during the call only */
	size_t len;
	uint64_t recv_ns;     /* CLOCK_MONOTONIC time of the read */
	/* A big frame (a broker registration: megabytes) alone at the start of
	 * its read buffer comes with that buffer: block == data, malloc'd. The
	 * callback may keep it instead of copying the frame, and then sets
	 * *kept; the reactor reads on into a new buffer. NULL otherwise. */
	uint8_t *block;
	bool *kept;
	/* The connection's share: a callback that queues the frame's request
	 * for later holds it (net_share_hold) until the request is done. */
	struct net_conn_share *share;
};

/* Spare big read buffers: at most NET_SPARE_BLOCKS of at most
 * NET_SPARE_MAX_BYTES each stay in memory after their frames are done
 * (bodies of some 30,000 topics and more are unmapped at once, as before). */
#define NET_SPARE_BLOCKS 4u
#define NET_SPARE_MAX_BYTES (4u << 20)
#define NET_SPARE_MIN_BYTES (1u << 18) /* smaller ones are freed */
/* Frees a net_frame.block that was kept, or keeps it as a spare. Any thread. */
void net_block_free(uint8_t *block);
/* A spare of at least `need` bytes (its size in *cap), or NULL. */
uint8_t *net_block_take(size_t need, size_t *cap);

/* What the server calls. Every function runs on a reactor thread; reactor
 * threads are registered RCU readers for their whole life, so a callback
 * may take rcu_read_lock (route queries answered inline, the TLS context). */
struct net_callbacks {
	/* A whole frame received on an accepted connection. A negative return
	 * closes the connection (the frame did not decode). */
	int (*on_frame)(void *arg, const struct net_frame *f);
	/* After each reactor turn (frames are batched: wake consumers once
	 * here). NULL = none. */
	void (*on_turn_end)(void *arg);
	/* A reactor thread starts / is about to end. NULL = none. */
	void (*on_thread_start)(void *arg);
	void (*on_thread_end)(void *arg);
	/* An accepted connection closed; not called once server_stop has
	 * begun. NULL = none. */
	void (*on_closed)(void *arg, uint64_t conn_id);
	void *arg;
};

struct server_params {
	const char *bind_address;   /* numeric IPv4 or IPv6; NULL or "" = 0.0.0.0 */
	int port;                   /* 0 = an ephemeral port (see server_port) */
	/* no port of its own (a standalone controller): only the listeners
	 * server_add_listener adds serve, and the first of them is the one
	 * server_port reports */
	bool no_own_port;
	int backlog;
	unsigned reactors;          /* 1 .. NET_MAX_REACTORS */
	uint32_t max_frame;         /* bytes, length prefix included */
	uint64_t idle_close_ms;     /* no read and no write for this long: close; 0 = never */
	uint64_t outbound_pause_bytes; /* unsent answers past this: stop reading the peer */
	uint64_t outbound_close_bytes; /* past this: close it */
	int sndbuf, rcvbuf;         /* SO_SNDBUF / SO_RCVBUF of accepted sockets; 0 = OS default */
	bool cpu_affinity;          /* pin reactor i to the i-th allowed CPU */
	uint32_t max_inflight;      /* queued requests per connection before its reads stop; 0 = no cap */
	/* Bytes of partial frames, unsent answers and queued requests' frames
	 * the whole process holds; past it the connections holding the most
	 * are closed. 0 = no budget. */
	uint64_t memory_budget;
	/* TLS on the port (tls.h; copied by server_create); NULL or
	 * tls.server.mode=disabled: plaintext only. server_create loads the
	 * certificate and fails (logged) when it does not load. Outbound
	 * connections are always plaintext. */
	const struct tls_settings *tls;
};

/* Creates the server; cb (copied) receives frames and closes. */
struct server *server_create(const struct server_params *p, const struct net_callbacks *cb,
			     int *err);

/* A second listening port (the embedded controller's) whose connections
 * are served by the same reactors, limits and transports, but whose frames
 * and closes go to cb's on_frame and on_closed (the thread hooks stay the
 * server's). Before server_start; port 0 = an ephemeral one. `what` names
 * the port in log lines (and must outlive the server). */
int server_add_listener(struct server *s, const char *bind_address, int port, const char *what,
			const struct net_callbacks *cb);

/* Binds and listens (errors are reported here, with a log line), then
 * starts the reactors and the boss. */
int server_start(struct server *s);

/* The port actually bound (the ephemeral one when the port was 0); with
 * no_own_port, the first added listener's. */
int server_port(const struct server *s);

/* Sending on a connection, from any thread, as encoded bytes: net_send_begin
 * gives a buffer (s.out) to append whole frames to, net_send_commit hands
 * them over. Nothing is called back. On the reactor owning the connection
 * (a handler answering inline) s.out is the connection's own outbound
 * buffer, so the frame joins the answers already waiting and is written
 * from there; from any other thread it is a new buffer that travels
 * through the reactor's queue. Either way the caller encodes in place and
 * copies a body once. size: the bytes expected (room is made for them;
 * more may be appended). Between begin and commit nothing else may send
 * on that thread. An answer for a connection that is gone is dropped:
 * begin returns RMQNS_OK with s.out NULL. RMQNS_ECLOSED once the reactors
 * are gone or for a reference without a server, RMQNS_ENOMEM; on any
 * error s.out is NULL too. */
struct net_send {
	struct buf *out;
	/* net's own */
	struct reactor *r;
	struct conn *c;     /* the connection, on its own reactor */
	struct net_msg *m;  /* a new buffer */
	size_t start;       /* where the frame starts in out */
};
int net_send_begin(struct net_send *s, struct net_conn c, size_t size);
/* Hands what was appended over (nothing: nothing is sent); RMQNS_OK. */
int net_send_commit(struct net_send *s);
/* Forgets what was appended (an encoding that failed). */
void net_send_abort(struct net_send *s);

/* Outbound connections (requests the server sends, NOTIFY_MIN_BROKER_ID_CHANGE
 * today): each peer address belongs to one reactor, which opens one
 * connection to it on first use and reuses it. */
#define NET_CONNECT_TIMEOUT_MS 300
#define NET_OUTBOUND_MAX_BYTES (1u << 20) /* waiting for one peer; past it frames are dropped */

/* Queues a copy of one encoded frame (a one-way request: nothing is read
 * back) for the peer at addr, "ip:port" or "[ipv6]:port", numeric only
 * (no name look-ups on a reactor); spellings of one address
 * ("127.0.0.1:05000", "127.0.0.1:5000", "[::ffff:127.0.0.1]:5000") share
 * one connection. Safe from any thread; returns once queued. A connect
 * that fails or takes longer than NET_CONNECT_TIMEOUT_MS, and any later
 * error or close, drops what waits for the peer (logged);
 * the next frame connects again. RMQNS_EINVAL for an address that does not
 * parse, RMQNS_ECLOSED once the reactors are gone. */
int net_send_to(struct server *s, const char *addr, const void *frame, size_t len);

/* Asks the owning reactor to close a connection (the route registry
 * expired its broker); the reactor logs it and the usual connection-closed
 * notice follows. Safe from any thread; an id that is unknown or stale
 * (closed, slot reused) is ignored. Pending answers are not flushed. */
int server_close_conn(struct server *s, uint64_t conn_id);

/* Shutdown, step 1: stop accepting and stop reading requests. Returns once
 * every reactor has stopped reading, so nothing more reaches the pool;
 * answers keep flowing out. */
void server_quiesce(struct server *s);

/* Shutdown, step 2 (after the pool and the registrar have stopped): write
 * what is queued for at most flush_ms, close every connection, join the
 * threads. No connection-closed notices are sent from here on. */
void server_stop(struct server *s, int flush_ms);

void server_destroy(struct server *s);

/* ---- for the health and metrics endpoints (any thread) ---- */

/* Every reactor turns at least this often, idle or not. */
#define NET_TURN_MAX_MS 1000u
/* Accepted connections open now. */
unsigned server_conn_count(struct server *s);
unsigned server_reactor_count(const struct server *s);
/* Bytes held for connections now, against server_params.memory_budget. */
int64_t server_held_bytes(struct server *s);
uint64_t server_memory_budget(const struct server *s);
/* Adds delta (negative: releases) to the bytes held for connections, for
 * connections the reactors do not own (the controller's Raft links). Any
 * thread. Past the budget the reactors still close only their own. */
void server_hold_external(struct server *s, int64_t delta);
/* Connections reactor i owns, those handed to it and not yet taken included. */
unsigned server_reactor_conn_count(struct server *s, unsigned i);
/* When reactor i last began a turn (CLOCK_MONOTONIC ms; 0 = not yet). */
uint64_t server_reactor_turn_ms(struct server *s, unsigned i);

/* A non-blocking listening TCP socket on bind_addr:port (numeric; NULL or
 * "" = every address; port 0 = any free one): *fd_out and the port bound
 * in *port_out. `what` (the option naming the address) goes in the log
 * lines of a failure. */
int net_listen(const char *bind_addr, int port, int backlog, const char *what, int *fd_out, int *port_out);

#endif
