/* The registrar thread (registrar.h): applies mutations one at a time in
 * arrival order, runs the tick hook from a periodic timer and turns
 * connection-closed notices into hook calls. It knows nothing of what a
 * mutation changes; it is merely the only thread that changes things. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <urcu.h>
#include <urcu/wfcqueue.h>

#include "rmqns/err.h"
#include "rmqns/log.h"
#include "rmqns/loop.h"
#include "rmqns/metrics.h"
#include "rmqns/race.h"
#include "rmqns/registrar.h"

struct registrar {
	struct __cds_wfcq_head head;
	struct cds_wfcq_tail tail;
	struct registrar_hooks hooks;
	struct loop *loop;
	atomic_bool stop;
	_Atomic uint64_t turn_ms; /* when it last began a turn or a mutation */
	_Atomic uint64_t drop_after_ns; /* shutdown deadline; 0 = none */
};

struct registrar_notice {
	struct mutation m;
	struct registrar *r;
	uint64_t conn_id;
};

static void registrar_mark_turn(struct registrar *r, uint64_t now_ms)
{
	atomic_store_explicit(&r->turn_ms, now_ms, memory_order_relaxed);
}

uint64_t registrar_turn_ms(struct registrar *r)
{
	return atomic_load_explicit(&r->turn_ms, memory_order_relaxed);
}

struct registrar *registrar_create(const struct registrar_hooks *hooks)
{
	struct registrar *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	if (hooks)
		r->hooks = *hooks;
	__cds_wfcq_init(&r->head, &r->tail);
	r->loop = loop_create("registrar");
	if (!r->loop) {
		free(r);
		return NULL;
	}
	atomic_init(&r->stop, false);
	return r;
}

void registrar_submit(struct registrar *r, struct mutation *m)
{
	cds_wfcq_node_init(&m->node);
	race_release(m);
	/* Only the first mutation into an empty queue needs a wake-up: the
	 * thread takes the whole queue at once and rechecks before sleeping. */
	if (!cds_wfcq_enqueue(&r->head, &r->tail, &m->node))
		loop_wake(r->loop);
}

static void registrar_apply_notice(struct mutation *m)
{
	struct registrar_notice *n = (struct registrar_notice *)m;
	if (n->r->hooks.on_conn_closed)
		n->r->hooks.on_conn_closed(n->r->hooks.arg, n->conn_id);
	free(n);
}

int registrar_notify_conn_closed(struct registrar *r, uint64_t conn_id)
{
	/* A notice that comes once the registrar is stopping is dropped: the
	 * server stopped reading requests before, so nobody reads the route
	 * state again, and the mass disconnect of a shutdown (32 brokers with
	 * 40,000 topics each) would otherwise hold the exit up for seconds. */
	if (!r->hooks.on_conn_closed || atomic_load(&r->stop))
		return RMQNS_OK;
	struct registrar_notice *n = malloc(sizeof *n);
	if (!n) {
		log_error("registrar: no memory for the closed-connection notice of %#llx",
			  (unsigned long long)conn_id);
		return RMQNS_ENOMEM;
	}
	n->m.apply = registrar_apply_notice;
	n->m.drop = NULL; /* cheap, and it must not be lost */
	n->r = r;
	n->conn_id = conn_id;
	registrar_submit(r, &n->m);
	return RMQNS_OK;
}

/* Applies everything queued so far; returns how many mutations ran. */
static unsigned registrar_drain(struct registrar *r)
{
	struct __cds_wfcq_head head;
	struct cds_wfcq_tail tail;
	struct cds_wfcq_node *node, *next;
	unsigned n = 0;

	__cds_wfcq_init(&head, &tail);
	if (__cds_wfcq_splice_blocking(&head, &tail, &r->head, &r->tail) == CDS_WFCQ_RET_SRC_EMPTY)
		return 0;
	__cds_wfcq_for_each_blocking_safe(&head, &tail, node, next) {
		struct mutation *m = caa_container_of(node, struct mutation, node);
		race_acquire(m);
		uint64_t t0 = metrics_now_ns();
		registrar_mark_turn(r, t0 / 1000000u);
		uint64_t after = atomic_load_explicit(&r->drop_after_ns, memory_order_relaxed);
		if (m->drop && after && t0 >= after) {
			metrics_add(MC_REQ_DROPPED_SHUTDOWN, 1);
			m->drop(m);
			n++;
			continue;
		}
		m->apply(m);
		metrics_registrar_apply(metrics_now_ns() - t0);
		n++;
	}
	return n;
}

static void registrar_on_timer(struct loop *l, void *arg)
{
	(void)l;
	struct registrar *r = arg;
	if (r->hooks.on_tick)
		r->hooks.on_tick(r->hooks.arg, loop_clock_ms());
}

/* A turn: what is queued, then one slice of background work between
 * mutations; a wait of at most REGISTRAR_TURN_MAX_MS (none while the
 * background work has more). */
static int registrar_turn(struct loop *l, void *arg)
{
	(void)l;
	struct registrar *r = arg;
	registrar_mark_turn(r, loop_clock_ms());
	registrar_drain(r);
	if (atomic_load(&r->stop))
		return 0;
	bool more = r->hooks.on_idle && r->hooks.on_idle(r->hooks.arg);
	return more ? 0 : (int)REGISTRAR_TURN_MAX_MS;
}

static void registrar_thread_start(struct loop *l, void *arg)
{
	(void)l;
	(void)arg;
	rcu_register_thread();
}

static void registrar_thread_end(struct loop *l, void *arg)
{
	(void)l;
	registrar_drain(arg);
	rcu_unregister_thread();
}

int registrar_start(struct registrar *r)
{
	if (r->hooks.tick_ms > 0 && loop_every(r->loop, r->hooks.tick_ms, registrar_on_timer, r) < 0)
		return RMQNS_EIO;
	/* counted as a turn: a health check right after the start must not
	 * find the thread stalled before its first look at the queue */
	registrar_mark_turn(r, loop_clock_ms());
	loop_set_hooks(r->loop, &(struct loop_hooks){ .before_sleep = registrar_turn,
						      .thread_start = registrar_thread_start,
						      .thread_end = registrar_thread_end,
						      .data = r });
	return loop_spawn(r->loop, "registrar", -1);
}

void registrar_set_deadline(struct registrar *r, uint64_t drop_after_ns)
{
	atomic_store(&r->drop_after_ns, drop_after_ns);
}

void registrar_stop(struct registrar *r)
{
	if (!loop_spawned(r->loop))
		return;
	atomic_store(&r->stop, true);
	loop_stop(r->loop);
	loop_join(r->loop);
}

void registrar_destroy(struct registrar *r)
{
	if (!r)
		return;
	registrar_stop(r);
	/* Mutations submitted after the thread's last look still own memory
	 * and may owe an answer: apply them here, where no other thread can
	 * race the registrar any more. */
	unsigned late = registrar_drain(r);
	if (late)
		log_warn("registrar: applied %u mutations submitted after it stopped", late);
	loop_destroy(r->loop);
	free(r);
}
