/* The network side of the server: one boss thread that accepts connections
 * and N reactor threads, each owning its connections outright (epoll, reads,
 * frame cutting, writev of answers). Every other thread reaches a
 * connection only by its 64-bit id, through server_send(). */
#ifndef RMQNS_NET_H
#define RMQNS_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "rmqns/buf.h"

struct app;
struct options;
struct server;

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

struct server_params {
	const char *bind_address;   /* numeric IPv4 or IPv6; NULL or "" = 0.0.0.0 */
	int port;                   /* 0 = an ephemeral port (see server_port) */
	int backlog;
	unsigned reactors;          /* 1 .. NET_MAX_REACTORS */
	uint32_t max_frame;         /* bytes, length prefix included */
	uint64_t idle_close_ms;     /* no read and no write for this long: close; 0 = never */
	uint64_t outbound_pause_bytes; /* unsent answers past this: stop reading the peer */
	uint64_t outbound_close_bytes; /* past this: close it */
	int sndbuf, rcvbuf;         /* SO_SNDBUF / SO_RCVBUF of accepted sockets; 0 = OS default */
	bool route_inline;          /* reactors run may_run_inline handlers themselves */
};

/* Fills p from the start-up options (thread count 0 = number of CPUs). */
void server_params_from_options(struct server_params *p, const struct options *o);

/* Creates the server; app->pool and app->registrar (either may be NULL in
 * tests) receive requests and connection-closed notices. */
struct server *server_create(const struct server_params *p, struct app *app, int *err);

/* Binds and listens (errors are reported here, with a log line), then
 * starts the reactors and the boss. */
int server_start(struct server *s);

/* The port actually bound (the ephemeral one when the port was 0). */
int server_port(const struct server *s);

/* Queues one encoded frame for a connection. Takes ownership of frame's
 * memory (frame is left empty) whatever the outcome. Safe from any thread;
 * an answer for a connection that is gone is dropped. */
int server_send(struct server *s, uint64_t conn_id, struct buf *frame);

/* Asks the owning reactor to close a connection (the route registry
 * expired its broker); the reactor logs it and the usual connection-closed
 * notice follows. Safe from any thread; an id that is unknown or stale
 * (closed, slot reused) is ignored. Pending answers are not flushed. */
int server_close_conn(struct server *s, uint64_t conn_id);

/* Queues a copy of len bytes of encoded frame(s). On the connection's own
 * reactor (a handler answering inline) the bytes join the answers already
 * waiting in one buffer: no allocation per answer, one write per round.
 * Elsewhere as server_send. */
int server_send_copy(struct server *s, uint64_t conn_id, const void *frame, size_t len);

/* Shutdown, step 1: stop accepting and stop reading requests. Returns once
 * every reactor has stopped reading, so nothing more reaches the pool;
 * answers keep flowing out. */
void server_quiesce(struct server *s);

/* Shutdown, step 2 (after the pool and the registrar have stopped): write
 * what is queued for at most flush_ms, close every connection, join the
 * threads. No connection-closed notices are sent from here on. */
void server_stop(struct server *s, int flush_ms);

void server_destroy(struct server *s);

#endif
