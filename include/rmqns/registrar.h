/* The registrar: the one thread that changes the route tables and the
 * runtime options (KV config has a writer thread of its own, kv.h, so that
 * a disk flush never delays a registration). Everything else reads that
 * state through RCU and sends changes here as mutations, applied one at a
 * time in arrival order. A timer tick drives broker expiry; connection-closed
 * notices arrive as mutations too; background work (the removal of a
 * leaving group's entries) runs in slices between them. The registrar knows
 * nothing of what a mutation does. */
#ifndef RMQNS_REGISTRAR_H
#define RMQNS_REGISTRAR_H

#include <stdbool.h>
#include <stdint.h>

#include "rmqns/mutation.h"

struct registrar_hooks {
	/* Called on the registrar thread every tick_ms (broker expiry scan). */
	void (*on_tick)(void *arg, uint64_t now_ms);
	/* Called on the registrar thread for a connection-closed notice. */
	void (*on_conn_closed)(void *arg, uint64_t conn_id);
	/* Called on the registrar thread when no mutation waits, for
	 * background work in short slices; returns true while work remains
	 * (then it is called again as soon as the queue is empty). */
	bool (*on_idle)(void *arg);
	void *arg;
	uint32_t tick_ms;
};

struct registrar;

struct registrar *registrar_create(const struct registrar_hooks *hooks);
int registrar_start(struct registrar *r);
/* Queues m; never blocks, never fails (the queue is unbounded and
 * wait-free; memory was the caller's to allocate). Safe from any thread. */
void registrar_submit(struct registrar *r, struct mutation *m);
/* Queues a connection-closed notice (dropped once registrar_stop has begun:
 * the state it would clean is never read again). Safe from any thread; returns
 * RMQNS_ENOMEM if the notice could not be allocated (logged). */
int registrar_notify_conn_closed(struct registrar *r, uint64_t conn_id);
/* Shutdown: mutations with a drop function that the thread reaches after
 * drop_after_ns (CLOCK_MONOTONIC) are dropped, not applied. */
void registrar_set_deadline(struct registrar *r, uint64_t drop_after_ns);
/* Applies what is queued (but see registrar_set_deadline), then joins the
 * thread. */
void registrar_stop(struct registrar *r);
void registrar_destroy(struct registrar *r);

/* The thread turns at least this often when it is well, idle or not. */
#define REGISTRAR_TURN_MAX_MS 1000u
/* When it last began a turn or a mutation (CLOCK_MONOTONIC ms; 0 = not
 * yet): a health check sees a stalled registrar by this going stale. */
uint64_t registrar_turn_ms(struct registrar *r);

#endif
