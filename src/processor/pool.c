/* The processor pool (processor.h): its intake on the reactor threads,
 * general workers serving the liveness lane first, then the broker lane,
 * the route lane and the default lane, plus dedicated route workers
 * (liveness, then route). The route lane is a lock-free ring; the others
 * are fair between connections (fairq.h), so one connection's backlog
 * never holds up another's next request. The mutex and condition variables below are
 * touched only when a worker goes to sleep or somebody must wake one. */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include <urcu.h>

#include "rmqns/acl.h"
#include "rmqns/app.h"
#include "rmqns/err.h"
#include "rmqns/fairq.h"
#include "rmqns/log.h"
#include "rmqns/metrics.h"
#include "rmqns/net.h"
#include "rmqns/yield.h"
#include "rmqns/processor.h"
#include "rmqns/request.h"
#include "rmqns/ring.h"

enum pool_role { POOL_GENERAL, POOL_ROUTE_ONLY };
/* Which running slot a taken request holds. */
enum pool_slot { SLOT_NONE, SLOT_BROKER, SLOT_DEFAULT };

struct pool_thread {
	struct processor_pool *pool;
	enum pool_role role;
	unsigned index;
	pthread_t thread;
};

struct processor_pool {
	struct app *app;
	const struct handler *(*lookup)(int32_t code);
	struct ring route_lane;
	struct fairq liveness_lane, broker_lane, default_lane;
	unsigned nthreads;
	unsigned started;
	struct pool_thread *threads;

	pthread_mutex_t lock;
	pthread_cond_t wake_general;
	pthread_cond_t wake_route;
	/* Sleepers announce themselves here before their last look at the
	 * lanes; wakers look here after pushing (a Dekker pair, hence the
	 * seq_cst fences on both sides). */
	atomic_uint sleep_general;
	atomic_uint sleep_route;
	atomic_bool stopping;
	/* Broker-lane and default-lane requests running now, and how many of
	 * each may run at once (0 = no cap): registrations and lists are big,
	 * and a cap leaves the other CPUs to the reactors answering route
	 * queries. Separate counts: a client's reads never take the slot a
	 * broker's registration needs. */
	atomic_uint broker_busy, default_busy;
	struct handoff_count handoffs; /* given to each request taken in */
	unsigned default_max;
	/* Shutdown: requests taken after this CLOCK_MONOTONIC time are
	 * dropped unanswered (0 = none). */
	_Atomic uint64_t drop_after_ns;
	int default_nice;
	bool run_inline;
	uint32_t lane_capacity;
};

static struct fairq *pool_fair_lane(struct processor_pool *pool, enum handler_lane lane)
{
	return lane == LANE_LIVENESS ? &pool->liveness_lane
	       : lane == LANE_BROKER ? &pool->broker_lane
				     : &pool->default_lane;
}

/* Requests the calling (reactor) thread queued since its last turn end. */
static __thread unsigned intake_route, intake_default;

/* handoff_count.reopened: the cap lets a registration through again */
static void pool_handoff_reopened(void *arg)
{
	struct processor_pool *pool = arg;

	if (!fairq_looks_empty(&pool->broker_lane))
		processor_pool_wake(pool, 0, 1);
}

struct processor_pool *processor_pool_create(struct app *app, const struct processor_params *p,
					     int *err)
{
	int dummy;
	if (!err)
		err = &dummy;
	if (p->workers < 1 || p->lane_capacity < 1) {
		*err = RMQNS_EINVAL;
		return NULL;
	}
	struct processor_pool *pool = calloc(1, sizeof *pool);
	if (!pool) {
		*err = RMQNS_ENOMEM;
		return NULL;
	}
	pool->app = app;
	pool->lookup = p->lookup ? p->lookup : processor_handler_for;
	pool->nthreads = p->workers + p->route_workers;
	pool->default_max = p->default_max;
	pool->default_nice = p->default_nice;
	pool->run_inline = p->run_inline;
	pool->lane_capacity = p->lane_capacity;
	pool->handoffs.reopened = pool_handoff_reopened;
	pool->handoffs.arg = pool;
	pool->threads = calloc(pool->nthreads, sizeof *pool->threads);
	int rc = pool->threads ? RMQNS_OK : RMQNS_ENOMEM;
	int done = 0; /* lanes made */
	if (rc == 0 && (rc = ring_init(&pool->route_lane, p->lane_capacity)) == 0)
		done++;
	if (rc == 0 && (rc = fairq_init(&pool->broker_lane, p->lane_capacity)) == 0)
		done++;
	if (rc == 0 && (rc = fairq_init(&pool->default_lane, p->lane_capacity)) == 0)
		done++;
	if (rc == 0 && (rc = fairq_init(&pool->liveness_lane, p->lane_capacity)) == 0)
		done++;
	if (rc < 0) {
		if (done > 2)
			fairq_destroy(&pool->default_lane);
		if (done > 1)
			fairq_destroy(&pool->broker_lane);
		if (done > 0)
			ring_destroy(&pool->route_lane);
		free(pool->threads);
		free(pool);
		*err = rc;
		return NULL;
	}
	for (unsigned i = 0; i < pool->nthreads; i++) {
		pool->threads[i].pool = pool;
		pool->threads[i].role = i < p->workers ? POOL_GENERAL : POOL_ROUTE_ONLY;
		pool->threads[i].index = i < p->workers ? i : i - p->workers;
	}
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->wake_general, NULL);
	pthread_cond_init(&pool->wake_route, NULL);
	*err = RMQNS_OK;
	return pool;
}

/* Claims one of a lane's running slots. */
static bool pool_claim(struct processor_pool *pool, atomic_uint *busy_count)
{
	if (!pool->default_max)
		return true;
	unsigned busy = atomic_load(busy_count);
	do {
		if (busy >= pool->default_max)
			return false;
	} while (!atomic_compare_exchange_weak(busy_count, &busy, busy + 1));
	return true;
}

/* The next request of a fair lane, its running slot claimed. */
static struct request *pool_take_fair(struct processor_pool *pool, struct fairq *lane,
				      atomic_uint *busy_count)
{
	if (fairq_looks_empty(lane) || !pool_claim(pool, busy_count))
		return NULL;
	struct fairq_item *it = fairq_pop(lane);
	if (!it) {
		if (pool->default_max)
			atomic_fetch_sub(busy_count, 1);
		return NULL;
	}
	return caa_container_of(it, struct request, queued);
}

/* A request, and which running slot it holds (*slot). A worker giving a
 * slot back looks at the lanes again before it sleeps, so a request left
 * behind by a worker refused a slot is never stranded. */
static struct request *pool_take(struct processor_pool *pool, enum pool_role role,
				 enum pool_slot *slot)
{
	struct request *req;
	*slot = SLOT_NONE;
	if (!fairq_looks_empty(&pool->liveness_lane)) {
		struct fairq_item *it = fairq_pop(&pool->liveness_lane);
		if (it)
			return caa_container_of(it, struct request, queued);
	}
	/* the cap on registrations waiting for the registrar holds until the
	 * pool stops: then what is queued is run (or dropped) before the
	 * workers leave */
	if (role == POOL_GENERAL &&
	    (atomic_load_explicit(&pool->handoffs.n, memory_order_relaxed) < PROCESSOR_HANDOFF_MAX ||
	     atomic_load_explicit(&pool->stopping, memory_order_relaxed)) &&
	    (req = pool_take_fair(pool, &pool->broker_lane, &pool->broker_busy))) {
		*slot = pool->default_max ? SLOT_BROKER : SLOT_NONE;
		return req;
	}
	if ((req = ring_pop(&pool->route_lane)))
		return req;
	if (role == POOL_GENERAL &&
	    (req = pool_take_fair(pool, &pool->default_lane, &pool->default_busy))) {
		*slot = pool->default_max ? SLOT_DEFAULT : SLOT_NONE;
		return req;
	}
	return NULL;
}

static void pool_release(struct processor_pool *pool, enum pool_slot slot)
{
	if (slot == SLOT_BROKER)
		atomic_fetch_sub(&pool->broker_busy, 1);
	else if (slot == SLOT_DEFAULT)
		atomic_fetch_sub(&pool->default_busy, 1);
}

/* Blocks until there is a request or the pool stops with its lanes empty
 * (then NULL). */
static struct request *pool_wait(struct processor_pool *pool, enum pool_role role,
				 enum pool_slot *slot)
{
	atomic_uint *sleepers = role == POOL_GENERAL ? &pool->sleep_general : &pool->sleep_route;
	pthread_cond_t *cond = role == POOL_GENERAL ? &pool->wake_general : &pool->wake_route;
	struct request *req;

	pthread_mutex_lock(&pool->lock);
	atomic_fetch_add(sleepers, 1);
	atomic_thread_fence(memory_order_seq_cst);
	while (!(req = pool_take(pool, role, slot)) && !atomic_load(&pool->stopping))
		pthread_cond_wait(cond, &pool->lock);
	atomic_fetch_sub(sleepers, 1);
	pthread_mutex_unlock(&pool->lock);
	return req;
}

/* A queued request that nobody will read the answer of (its connection
 * closed), or taken past the shutdown deadline, is dropped unrun. */
static bool pool_drop_unrun(struct processor_pool *pool, struct request *req)
{
	if (request_is_stale(req)) {
		metrics_add(MC_REQ_DROPPED_CLOSED, 1);
		return true;
	}
	uint64_t after = atomic_load_explicit(&pool->drop_after_ns, memory_order_relaxed);
	if (after && metrics_now_ns() >= after) {
		metrics_add(MC_REQ_DROPPED_SHUTDOWN, 1);
		return true;
	}
	return false;
}

/* Runs a request's handler, or answers its ACL refusal: the one place
 * both the intake (inline) and the workers pass, right before the
 * handler, so a big body is only ever hashed on a worker. */
static void pool_run(struct processor_pool *pool, const struct handler *h, struct request *req)
{
	if (req->share && pool_drop_unrun(pool, req)) {
		request_free(req);
		return;
	}
	char remark[256];
	if (pool->app && !acl_authorize(pool->app->acl, &req->cmd, req->peer, remark, sizeof remark)) {
		int rc = request_reply_code(req, RSP_NO_PERMISSION, remark);
		if (rc < 0 && rc != RMQNS_ECLOSED)
			log_debug("%s: ACL refusal not sent: %s", req->peer, rmqns_strerror(rc));
		request_free(req);
		return;
	}
	h->fn(pool->app, req);
}

static void *pool_thread_main(void *arg)
{
	struct pool_thread *t = arg;
	struct processor_pool *pool = t->pool;
	char name[16];

	snprintf(name, sizeof name, "%s-%u", t->role == POOL_GENERAL ? "proc" : "route", t->index);
	log_set_thread_name(name);
	pthread_setname_np(pthread_self(), name);
	if (t->role == POOL_GENERAL && pool->default_nice > 0 &&
	    setpriority(PRIO_PROCESS, (id_t)gettid(), pool->default_nice) < 0)
		log_warn("%s: cannot lower its priority: %s", name, strerror(errno));
	/* registration parsing gives the CPU up to waiting reactors */
	yield_enable(t->role == POOL_GENERAL);
	rcu_register_thread();
	for (;;) {
		enum pool_slot slot;
		struct request *req = pool_take(pool, t->role, &slot);
		if (!req)
			req = pool_wait(pool, t->role, &slot);
		if (!req)
			break; /* stopping and nothing left */
		yield_restart(); /* a short request never yields; a long one after YIELD_AFTER_NS */
		pool_run(pool, req->handler, req);
		pool_release(pool, slot);
	}
	rcu_unregister_thread();
	return NULL;
}

int processor_pool_start(struct processor_pool *pool)
{
	for (unsigned i = 0; i < pool->nthreads; i++) {
		int rc = pthread_create(&pool->threads[i].thread, NULL, pool_thread_main,
					&pool->threads[i]);
		if (rc != 0) {
			log_error("cannot start processor thread %u: error %d", i, rc);
			processor_pool_stop(pool);
			return RMQNS_ENOMEM;
		}
		pool->started++;
	}
	return RMQNS_OK;
}

int processor_pool_submit(struct processor_pool *pool, const struct handler *h, struct request *req)
{
	if (atomic_load_explicit(&pool->stopping, memory_order_relaxed))
		return RMQNS_ECLOSED;
	req->handler = h;
	req->handoffs = &pool->handoffs;
	if (h->lane == LANE_ROUTE)
		return ring_push(&pool->route_lane, req);
	/* one flow per connection; 0 (a request made without one) is a flow too */
	return fairq_push(pool_fair_lane(pool, h->lane), req->conn.id, &req->queued);
}

int processor_pool_take_frame(struct processor_pool *pool, const struct net_frame *f)
{
	int err;
	struct request *req;
	if (f->block) {
		req = request_adopt(f->block, f->len, f->conn, f->peer, f->recv_ns, &err);
		if (req)
			*f->kept = true;
	} else {
		req = request_create(f->data, f->len, f->conn, f->peer, f->recv_ns, &err);
	}
	if (!req)
		return err;
	if (remoting_is_response(&req->cmd)) {
		log_warn_limited("connection %s: dropping a response frame nobody asked for (code %d, opaque %d)",
			 req->peer, req->cmd.code, req->cmd.opaque);
		request_free(req);
		return RMQNS_OK;
	}
	const struct handler *h = pool->lookup(req->cmd.code);
	if (pool->run_inline && h->may_run_inline) {
		req->handler = h;
		req->handoffs = &pool->handoffs;
		pool_run(pool, h, req);
		return RMQNS_OK;
	}
	/* Held before the push: a worker may finish the request at once. The
	 * connection's reads stop at serverMaxInflight such requests. */
	if (f->share) {
		req->share = f->share;
		/* a one-way registration is applied before the connection's next
		 * request is read: the broker's later requests see it */
		req->share_barrier = h->lane == LANE_BROKER && remoting_is_oneway(&req->cmd);
		net_share_hold(req->share, req->frame_len, req->share_barrier);
	}
	if (processor_pool_submit(pool, h, req) == 0) {
		if (h->lane == LANE_ROUTE || h->lane == LANE_LIVENESS)
			intake_route++; /* a route worker may take it */
		else
			intake_default++;
		return RMQNS_OK;
	}
	if (req->share) {
		net_share_release(req->share, req->frame_len, req->share_barrier);
		req->share = NULL;
	}
	/* Full (or stopping): say so at once rather than queue without bound. */
	enum metrics_counter busy = h->lane == LANE_ROUTE     ? MC_BUSY_ROUTE
				    : h->lane == LANE_DEFAULT ? MC_BUSY_DEFAULT
							      : MC_BUSY_BROKER;
	metrics_add(busy, 1);
	int rc = request_reply_code(req, RSP_SYSTEM_BUSY, PROCESSOR_BUSY_REMARK);
	if (rc < 0 && rc != RMQNS_ECLOSED)
		log_debug("connection %s: busy answer not sent: %s", req->peer, rmqns_strerror(rc));
	request_free(req);
	return RMQNS_OK;
}

void processor_pool_turn_end(struct processor_pool *pool)
{
	if (intake_route | intake_default)
		processor_pool_wake(pool, intake_route, intake_default);
	intake_route = intake_default = 0;
}

void processor_pool_wake(struct processor_pool *pool, unsigned n_route, unsigned n_default)
{
	if (n_route + n_default == 0)
		return;
	atomic_thread_fence(memory_order_seq_cst);
	unsigned route_sleeping = n_route ? atomic_load(&pool->sleep_route) : 0;
	unsigned general_sleeping = atomic_load(&pool->sleep_general);
	if (!route_sleeping && !general_sleeping)
		return;

	pthread_mutex_lock(&pool->lock);
	if (route_sleeping) {
		/* A dedicated route worker drains the whole lane once awake. */
		pthread_cond_signal(&pool->wake_route);
		n_route = 0;
	}
	unsigned want = n_route + n_default;
	if (want > general_sleeping)
		want = general_sleeping;
	for (unsigned i = 0; i < want; i++)
		pthread_cond_signal(&pool->wake_general);
	pthread_mutex_unlock(&pool->lock);
}

void processor_pool_stop(struct processor_pool *pool)
{
	pthread_mutex_lock(&pool->lock);
	atomic_store(&pool->stopping, true);
	pthread_cond_broadcast(&pool->wake_general);
	pthread_cond_broadcast(&pool->wake_route);
	pthread_mutex_unlock(&pool->lock);
	for (unsigned i = 0; i < pool->started; i++)
		pthread_join(pool->threads[i].thread, NULL);
	pool->started = 0;

	/* A request pushed after the workers looked for the last time (only
	 * possible if a caller ignored the shutdown order) is answered busy:
	 * running its handler here would need an RCU-registered thread. */
	struct request *req;
	unsigned late = 0;
	pool->default_max = 0; /* the workers are gone: no slots to share */
	while ((req = pool_take(pool, POOL_GENERAL, &(enum pool_slot){ SLOT_NONE }))) {
		(void)request_reply_code(req, RSP_SYSTEM_BUSY, PROCESSOR_BUSY_REMARK);
		request_free(req);
		late++;
	}
	if (late)
		log_warn("processor pool: %u requests queued after the workers stopped, answered busy",
			 late);
}

void processor_pool_set_deadline(struct processor_pool *pool, uint64_t drop_after_ns)
{
	atomic_store(&pool->drop_after_ns, drop_after_ns);
}

size_t processor_pool_lane_depth(struct processor_pool *pool, enum handler_lane lane)
{
	if (lane == LANE_ROUTE)
		return ring_count(&pool->route_lane);
	return fairq_count(pool_fair_lane(pool, lane));
}

uint32_t processor_pool_lane_capacity(const struct processor_pool *pool)
{
	return pool->lane_capacity;
}

void processor_pool_destroy(struct processor_pool *pool)
{
	if (!pool)
		return;
	if (pool->started)
		processor_pool_stop(pool);
	ring_destroy(&pool->route_lane);
	fairq_destroy(&pool->broker_lane);
	fairq_destroy(&pool->default_lane);
	fairq_destroy(&pool->liveness_lane);
	pthread_cond_destroy(&pool->wake_general);
	pthread_cond_destroy(&pool->wake_route);
	pthread_mutex_destroy(&pool->lock);
	free(pool->threads);
	free(pool);
}
