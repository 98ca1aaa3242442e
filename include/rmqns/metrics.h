/* Process-wide counters and histograms for the /metrics endpoint. Every
 * thread counts into a shard of its own (taken on its first count, handed
 * back when it exits), written with relaxed single-writer stores: no lock
 * and no shared cache line on the request path. A reader sums the shards;
 * the figures it sees are each exact, the set of them a moment's snapshot.
 * Names follow the Prometheus conventions (rmqns_ prefix, _total for
 * counters, seconds and bytes). */
#ifndef RMQNS_METRICS_H
#define RMQNS_METRICS_H

#include <stdint.h>

#include "rmqns/buf.h"

enum metrics_counter {
	MC_CONN_ACCEPTED = 0,
	MC_BUSY_ROUTE,         /* SYSTEM_BUSY answers: the route lane was full */
	MC_BUSY_DEFAULT,       /* ... the default lane */
	MC_REG_DONE,           /* registrations applied */
	MC_REG_SUPERSEDED,     /* ignored: a newer stateVersion holds the id */
	MC_REG_REFUSED,
	MC_REG_FAILED,         /* out of memory, group table full */
	MC_BROKER_EXPIRED,     /* live brokers removed by the expiry scan */
	MC_BROKER_CONN_CLOSED, /* ... because their connection closed */
	MC_BROKER_UNREGISTERED,
	MC_KV_WRITES,          /* KV file writes that reached the disk */
	MC_KV_WRITE_FAILURES,
	MC_ROUTE_CACHE_HITS,   /* route answers sent from cached bytes */
	MC_ROUTE_CACHE_BUILDS, /* ... built for the query */
	MC_LIST_CACHE_HITS,    /* route list answers (cluster info, topic lists) from cached bytes */
	MC_LIST_CACHE_BUILDS,  /* ... built for the query */
	MC_KV_CACHE_HITS,      /* GET_KVLIST_BY_NAMESPACE answers from cached bytes */
	MC_KV_CACHE_BUILDS,    /* ... built for the query */
	MC_HTTP_REQUESTS,
	MC_HTTP_REJECTED,      /* HTTP connections cut: head too large, deadline passed */
	MC_HTTP_EVICTED,       /* ... closed unfinished to make room: every slot taken */
	MC_ACL_UNSIGNED,       /* ACL refusals (code 16), by reason */
	MC_ACL_UNKNOWN_KEY,
	MC_ACL_BAD_SIGNATURE,
	MC_ACL_NOT_ADMIN,
	MC_TLS_HANDSHAKES,     /* TLS handshakes completed */
	MC_TLS_HANDSHAKE_FAILURES, /* ... failed or timed out */
	MC_CONN_TLS,           /* protocol connections by transport: TLS */
	MC_CONN_PLAINTEXT,     /* ... plaintext */
	MC_CONN_PLAINTEXT_REFUSED, /* plaintext closed by tls.server.mode=enforcing */
	MC_BUSY_BROKER,        /* SYSTEM_BUSY answers: the broker lane was full */
	MC_CONN_INFLIGHT_PAUSES, /* reads stopped: serverMaxInflight requests queued */
	MC_CONN_OUTBOUND_PAUSES, /* reads stopped: outboundPauseBytes of answers unread */
	MC_CONN_BUDGET_CLOSED, /* closed: the process was past connectionMemoryBudget */
	MC_REQ_DROPPED_CLOSED, /* queued requests dropped: their connection had closed */
	MC_REQ_DROPPED_SHUTDOWN, /* ... still queued at the shutdown deadline */
	MC_ACCEPT_PAUSES,      /* accepts stopped for a while: out of descriptors or memory */
	MC_COUNT
};

/* Adds n to a counter. */
void metrics_add(enum metrics_counter c, uint64_t n);

/* One answered request: its request code, the response code, and the time
 * from the frame's arrival (CLOCK_MONOTONIC ns) to the answer. */
void metrics_request(int32_t code, int32_t rsp_code, uint64_t recv_ns);
/* One request answered on the controller's port, handed over at recv_ns:
 * counted and timed apart, shown with port="controller". */
void metrics_controller_request(int32_t code, int32_t rsp_code, uint64_t recv_ns);

/* A thread that runs in turns (a reactor) calls this once: from then on
 * metrics_request counts at once but leaves the latency to
 * metrics_turn_end, so that the answers of one turn share one clock read
 * (which costs as much as the rest of the counting). Their latency then
 * runs to the end of the turn, the answers written. */
void metrics_defer_clock(void);
/* Observes the latencies this thread deferred, against one clock read
 * (nothing to do, no read). */
void metrics_turn_end(void);

/* One mutation applied by the registrar, in ns. */
void metrics_registrar_apply(uint64_t ns);

/* CLOCK_MONOTONIC in ns. */
uint64_t metrics_now_ns(void);

/* The name of a request code (remoting_request_name), or NULL when it has
 * none: the request label. Passed in, so that metrics knows no protocol. */
typedef const char *(*metrics_code_name_fn)(int32_t code);
/* Appends every counter and histogram above in the text exposition
 * format, request codes named by name_of (NULL: by number); 0 or a
 * negative rmqns_err (out of memory). */
int metrics_write(struct buf *out, metrics_code_name_fn name_of);

/* For figures others compute (gauges): a family's HELP and TYPE lines,
 * then its samples; labels is NULL or the inside of the braces
 * ("lane=\"route\""). 0 or RMQNS_ENOMEM. */
int metrics_write_family(struct buf *out, const char *name, const char *type, const char *help);
int metrics_write_value(struct buf *out, const char *name, const char *labels, double value);

/* The process_* families (CPU seconds, start time, virtual and resident
 * memory, open and maximum descriptors), read from /proc now; nothing
 * when /proc cannot be read. 0 or RMQNS_ENOMEM. */
int metrics_write_process(struct buf *out);

/* Appends s to out with the label-value escapes of the text format
 * (backslash, double quote, newline). 0 or RMQNS_ENOMEM. */
int metrics_escape_label(struct buf *out, const char *s);

#endif
