/* The processor pool: threads running request handlers, fed by reactors
 * through three bounded lanes (LANE_BROKER for broker traffic, LANE_ROUTE
 * for cheap queries clients wait on, LANE_DEFAULT for the rest). General
 * workers serve the broker lane first, then the route lane; dedicated
 * route workers serve only the route lane, so a slow registration never
 * holds up a route query, and no client's reads hold up a broker. The
 * broker and default lanes are fair between connections, and a request
 * whose connection has closed is dropped before it runs (one-way ones
 * excepted). The pool's intake is the processor side of the
 * network's frame callback: it decodes a frame, looks its handler up once
 * and runs it inline, queues it on its lane, or answers SYSTEM_BUSY. Also:
 * the dispatch fallback for unknown codes. The lanes are rings (ring.h). */
#ifndef RMQNS_PROCESSOR_H
#define RMQNS_PROCESSOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rmqns/handlers.h"

struct app;
struct net_frame;
struct request;
struct processor_pool;

struct processor_params {
	unsigned workers;       /* general workers (route lane first), >= 1 */
	unsigned route_workers; /* workers serving only the route lane, >= 0 */
	uint32_t lane_capacity; /* requests each lane holds, >= 1 */
	unsigned default_max;   /* default-lane requests running at once; 0 = workers */
	int default_nice;       /* nice value of the general workers (0 = as started) */
	bool run_inline;        /* the intake runs may_run_inline handlers itself */
	/* Finds a frame's handler, never NULL; NULL = processor_handler_for.
	 * Tests put their own handlers here. */
	const struct handler *(*lookup)(int32_t code);
};

/* The remark of the code-3 answer, " request type N not supported". */
#define PROCESSOR_UNSUPPORTED_FMT " request type %d not supported"
/* The remark of the code-2 answer given when a lane is full. */
#define PROCESSOR_BUSY_REMARK "[OVERLOAD]system busy, start flow control for a while"

struct processor_pool *processor_pool_create(struct app *app, const struct processor_params *p,
					     int *err);
int processor_pool_start(struct processor_pool *p);

/* Queues req for handler h on h's lane; the pool takes ownership on
 * success. RMQNS_EFULL when the lane is full, RMQNS_ECLOSED once the pool
 * is stopping (the caller keeps req). Workers are not woken here: call
 * processor_pool_wake once per batch. Safe from any thread. */
int processor_pool_submit(struct processor_pool *p, const struct handler *h, struct request *req);

/* Registrations parsed and handed to the registrar, not yet applied: past
 * PROCESSOR_HANDOFF_MAX of them no worker takes another from the broker
 * lane, so the registrar's queue (applied in arrival order) never holds
 * more than that ahead of a broker's registration, however many one
 * connection pipelines. The pool owns the count and hands it to every
 * request it takes in (request.handoffs); a handler calls handoff_begin
 * when it submits, and handoff_end when the mutation is freed (applied or
 * dropped); any thread (handoff.c). */
#define PROCESSOR_HANDOFF_MAX 2u
struct handoff_count {
	atomic_uint n;
	/* called when n falls below PROCESSOR_HANDOFF_MAX again: a worker
	 * may sleep with registrations waiting, held back by the cap */
	void (*reopened)(void *arg);
	void *arg;
};
void handoff_begin(struct handoff_count *h);
void handoff_end(struct handoff_count *h);

/* Wakes sleeping workers for n_route + n_default requests just queued. */
void processor_pool_wake(struct processor_pool *p, unsigned n_route, unsigned n_default);

/* Shutdown: queued requests a worker takes after drop_after_ns
 * (CLOCK_MONOTONIC) are dropped unanswered; their connections are closed
 * with the server. Call before processor_pool_stop. */
void processor_pool_set_deadline(struct processor_pool *p, uint64_t drop_after_ns);

/* Refuses new requests, runs every queued one (but see
 * processor_pool_set_deadline), joins the threads. */
void processor_pool_stop(struct processor_pool *p);
void processor_pool_destroy(struct processor_pool *p);

/* Requests waiting on a lane now (approximate while it moves). */
size_t processor_pool_lane_depth(struct processor_pool *p, enum handler_lane lane);
uint32_t processor_pool_lane_capacity(const struct processor_pool *p);

/* The handler for a code: handler_lookup's, or the built-in one answering
 * code 3 (may_run_inline, LANE_DEFAULT). Never NULL. */
const struct handler *processor_handler_for(int32_t code);

/* ---- the intake, on reactor threads (net_callbacks) ---- */

/* One frame from a connection: a request frame is decoded (a negative
 * return when it does not decode: the caller closes the connection), its
 * handler looked up, then run here when it may run inline and the pool
 * allows it, else queued on its lane, else answered SYSTEM_BUSY. A
 * response frame nobody asked for is dropped. Reactor threads are RCU
 * readers (net.h), so inline handlers may read the RCU tables. */
int processor_pool_take_frame(struct processor_pool *p, const struct net_frame *f);
/* Wakes workers for what this thread queued since its last call. */
void processor_pool_turn_end(struct processor_pool *p);

#endif
