/* A reactor: one thread on one event loop, and the connections it owns
 * outright. Each turn it takes what other threads handed it, lets the
 * connections' transports read, cut frames and write, and then moves
 * through the shutdown phases when told to. Connections are conn.c's;
 * how bytes travel is the transports'. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <urcu.h>

#include "rmqns/err.h"
#include "rmqns/log.h"
#include "rmqns/loop.h"
#include "rmqns/metrics.h"

#include "net_internal.h"

__thread struct reactor *reactor_self;

static void reactor_clock(struct reactor *r)
{
	r->now_ns = loop_clock_ns();
	r->now_ms = r->now_ns / 1000000u;
	atomic_store_explicit(&r->turn_ms, r->now_ms, memory_order_relaxed);
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
		if (!c->closing && c->ops->read_more)
			c->ops->read_more(r, c);
	}
}

static void reactor_flush_dirty(struct reactor *r)
{
	while (!cds_list_empty(&r->dirty)) {
		struct conn *c = cds_list_first_entry(&r->dirty, struct conn, dirty_node);
		cds_list_del_init(&c->dirty_node);
		if (!c->closing && c->ops->flush) {
			c->ops->flush(r, c);
			conn_sync_held(r, c);
		}
		if (c->closing)
			conn_destroy(r, c, "closed");
	}
}

/* The periodic look at every connection: deadlines, idleness, and a
 * resume whose message could not be allocated. */
static void reactor_scan(struct loop *l, void *arg)
{
	(void)l;
	struct reactor *r = arg;
	uint64_t idle = r->srv->params.idle_close_ms;

	for (uint32_t i = 0; i < r->cap; i++) {
		struct conn *c = r->conns[i];
		if (!c)
			continue;
		if (c->ops->tick)
			c->ops->tick(r, c);
		if (c->inflight_paused && c->share &&
		    !conn_share_full(c->share, r->srv->params.max_inflight))
			conn_inflight_resume(r, c);
		if (!c->closing && idle && r->now_ms - c->last_active_ms >= idle) {
			log_info("closing connection %s: idle for %llu ms", c->peer,
				 (unsigned long long)(r->now_ms - c->last_active_ms));
			conn_fail(r, c);
		}
	}
}

/* ---- phases ---- */

static void reactor_turn_end(struct reactor *r)
{
	const struct net_callbacks *cb = &r->srv->cb;
	if (cb->on_turn_end)
		cb->on_turn_end(cb->arg);
}

static void reactor_ack_phase(struct server *s)
{
	pthread_mutex_lock(&s->ack_lock);
	s->acks++;
	pthread_cond_broadcast(&s->ack_cond);
	pthread_mutex_unlock(&s->ack_lock);
}

void reactors_set_phase(struct server *s, enum reactor_phase phase)
{
	pthread_mutex_lock(&s->ack_lock);
	s->acks = 0;
	pthread_mutex_unlock(&s->ack_lock);
	for (unsigned i = 0; i < s->nreactors; i++) {
		atomic_store(&s->reactors[i].phase, (int)phase);
		loop_wake(s->reactors[i].loop);
	}
}

static void reactor_stop_reading(struct reactor *r)
{
	r->reading = false;
	for (uint32_t i = 0; i < r->cap; i++)
		if (r->conns[i])
			conn_update_events(r, r->conns[i]);
	reactor_turn_end(r);
	reactor_ack_phase(r->srv);
}

static bool reactor_all_flushed(struct reactor *r)
{
	for (uint32_t i = 0; i < r->cap; i++)
		if (r->conns[i] && !r->conns[i]->closing && r->conns[i]->out_bytes)
			return false;
	return true;
}

static void reactor_close_all(struct reactor *r)
{
	for (uint32_t i = 0; i < r->cap; i++)
		if (r->conns[i])
			conn_destroy(r, r->conns[i], "server stopping");
}

/* ---- the turn ---- */

static void reactor_after_sleep(struct loop *l, void *arg)
{
	(void)l;
	reactor_clock(arg);
}

/* The end of a turn (the loop has delivered its events), then the phase,
 * then how long the next wait may last. */
static int reactor_before_sleep(struct loop *l, void *arg)
{
	struct reactor *r = arg;

	inbox_take_accepted(r);
	inbox_take_answers(r);
	reactor_run_backlog(r);
	reactor_turn_end(r);
	reactor_enforce_budget(r); /* before the flush, which destroys what it closes */
	reactor_flush_dirty(r);
	metrics_turn_end();

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
	     r->now_ms >= r->exit_deadline_ms)) {
		loop_stop(l);
		return 0;
	}
	int timeout = outbound_check_connects(r);
	if (!cds_list_empty(&r->backlog) || !cds_list_empty(&r->dirty))
		timeout = 0; /* more frames to cut, or a connect that just failed */
	else if (phase == REACTOR_EXIT && (timeout < 0 || timeout > 10))
		timeout = 10;
	return timeout;
}

static void reactor_thread_start(struct loop *l, void *arg)
{
	(void)l;
	struct reactor *r = arg;
	const struct net_callbacks *cb = &r->srv->cb;

	reactor_self = r;
	rcu_register_thread();
	if (cb->on_thread_start)
		cb->on_thread_start(cb->arg);
	metrics_defer_clock(); /* one clock read per turn for the answers' latency */
	reactor_clock(r);
}

static void reactor_thread_end(struct loop *l, void *arg)
{
	(void)l;
	struct reactor *r = arg;
	const struct net_callbacks *cb = &r->srv->cb;

	inbox_take_answers(r); /* nothing should be left; free what is */
	reactor_close_all(r);
	metrics_turn_end();
	if (cb->on_thread_end)
		cb->on_thread_end(cb->arg);
	rcu_unregister_thread();
	reactor_self = NULL;
}

/* ---- set-up ---- */

int reactor_init(struct reactor *r, struct server *srv, unsigned index)
{
	memset(r, 0, sizeof *r);
	r->srv = srv;
	r->index = index;
	r->reading = true;
	__cds_wfcq_init(&r->in_head, &r->in_tail);
	__cds_wfcq_init(&r->acc_head, &r->acc_tail);
	CDS_INIT_LIST_HEAD(&r->dirty);
	CDS_INIT_LIST_HEAD(&r->backlog);
	CDS_INIT_LIST_HEAD(&r->outbound);
	atomic_init(&r->phase, REACTOR_RUN);
	atomic_init(&r->conn_count, 0);
	r->seen_phase = REACTOR_RUN;

	char name[24];
	snprintf(name, sizeof name, "reactor %u", index);
	r->loop = loop_create(name);
	if (!r->loop)
		return RMQNS_EIO;
	/* Scan a few times per idle period: closes land within 1.25x of it.
	 * The scan runs without an idle limit too: a reactor turns at least
	 * every NET_TURN_MAX_MS, which is how health checks tell a stalled
	 * one from an idle one. */
	uint64_t idle = srv->params.idle_close_ms;
	uint64_t tick = idle ? idle / 4 : NET_TURN_MAX_MS;
	if (tick < 50)
		tick = 50;
	if (tick > NET_TURN_MAX_MS)
		tick = NET_TURN_MAX_MS;
	if (loop_every(r->loop, tick, reactor_scan, r) < 0)
		return RMQNS_EIO;
	loop_set_hooks(r->loop, &(struct loop_hooks){ .before_sleep = reactor_before_sleep,
						      .after_sleep = reactor_after_sleep,
						      .thread_start = reactor_thread_start,
						      .thread_end = reactor_thread_end,
						      .data = r });
	return conn_grow_slots(r);
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
	char name[16];
	snprintf(name, sizeof name, "reactor-%u", r->index);
	reactor_clock(r); /* its start counts as a turn for health checks */
	return loop_spawn(r->loop, name, r->srv->params.cpu_affinity ? reactor_cpu(r) : -1);
}

void reactor_cleanup(struct reactor *r)
{
	if (r->loop || r->conns) {
		/* Never started, or stopped: only this thread is left. */
		reactor_close_all(r);
		inbox_drop_all(r);
	}
	loop_destroy(r->loop);
	r->loop = NULL;
	free(r->conns);
	free(r->gens);
	free(r->free_slots);
	r->conns = NULL;
	r->gens = r->free_slots = NULL;
	r->cap = r->nfree = 0;
}
