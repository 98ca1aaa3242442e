/* A request in flight: the decoded command, the frame bytes it points into,
 * its handler, and the connection its answer goes back to. Created on a
 * reactor thread by the pool's intake (processor.h), run there or on a
 * worker, possibly handed on to the registrar; whoever holds it last
 * replies (or not, for one-way requests) and frees it. */
#ifndef RMQNS_REQUEST_H
#define RMQNS_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rmqns/fairq.h"
#include "rmqns/net_types.h"
#include "rmqns/remoting.h"

struct handler;
struct handoff_count;

#define REQUEST_PEER_LEN NET_PEER_LEN

struct request {
	struct remoting_cmd cmd;    /* decoded; cmd.body points into frame[] */
	struct net_conn conn;       /* where answers go; conn.id names it to the route registry */
	const struct handler *handler; /* looked up once, when the request was taken in */
	uint64_t recv_ns;           /* CLOCK_MONOTONIC arrival time */
	char peer[REQUEST_PEER_LEN]; /* "ip:port" of the sender */
	size_t frame_len;
	uint8_t *frame;             /* the frame: a copy after the struct, or a kept read buffer */
	uint8_t *kept_block;        /* that read buffer (freed with the request), or NULL */
	/* The connection's share while the request waits in a queue
	 * (processor.h), given back by request_free; NULL when it ran inline. */
	struct net_conn_share *share;
	bool share_barrier;         /* held as a barrier (net_share_hold) */
	struct fairq_item queued;   /* its place in a fair lane */
	/* The pool's count of registrations handed to the registrar
	 * (processor.h); NULL for a request made outside a pool. */
	struct handoff_count *handoffs;
};

/* True when the request's connection has closed and nobody would read its
 * answer: queued work is then dropped. A one-way request is never stale:
 * its sender counted it done when it was sent (a one-way registration
 * must still apply). */
bool request_is_stale(const struct request *req);

/* Copies a frame, decodes it and fills a new request. NULL with *err set
 * when the frame does not decode (the caller closes the connection) or on
 * allocation failure. */
struct request *request_create(const uint8_t *frame, size_t len, struct net_conn conn,
			       const char *peer, uint64_t recv_ns, int *err);
/* The same for a frame the server's reactor hands over with its buffer
 * (net_frame.block, == frame): the request keeps the buffer, no copy.
 * On failure the caller still owns block. */
struct request *request_adopt(uint8_t *block, size_t len, struct net_conn conn, const char *peer,
			      uint64_t recv_ns, int *err);
void request_free(struct request *req);

/* Encodes `rsp` in the request's serialization straight into the
 * connection's outbound bytes (net_send_begin; the body is copied once). Does
 * nothing for a one-way request. Safe from any thread. A closed connection
 * drops the answer silently. Does not free req. */
int request_reply(const struct request *req, const struct remoting_cmd *rsp);

/* Shorthand: an answer with just a code and a remark (NULL for none). */
int request_reply_code(const struct request *req, int32_t code, const char *remark);

/* Shorthand: an answer with a code and a body (copied), no ext fields. */
int request_reply_body(const struct request *req, int32_t code, const void *body, size_t len);

#endif
