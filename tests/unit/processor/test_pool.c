/* The processor pool: a route query is served while slow work holds every
 * general worker, full lanes refuse at their capacity, a stop runs what is
 * queued, and requests from many threads run exactly once. A plain program
 * (exit 0 = pass) because Criterion cannot start under ThreadSanitizer. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rmqns/err.h"
#include "rmqns/processor.h"
#include "rmqns/remoting.h"
#include "rmqns/request.h"
#include "plain_test.h"

enum { CODE_SLOW = 1, CODE_ROUTE = 2, CODE_COUNT = 3 };

#define MANY_THREADS 4
#define MANY_EACH 5000

static atomic_int slow_started, slow_release, route_done, counted;
static atomic_int running_now, running_max;
static atomic_uchar seen[MANY_THREADS * MANY_EACH];

/* Waits (bounded: 10 s) until *v reaches want. */
static int wait_for(atomic_int *v, int want)
{
	for (int i = 0; i < 10000 && atomic_load(v) < want; i++)
		sleep_ms(1);
	return atomic_load(v) >= want ? 0 : -1;
}

static void handle_slow(struct app *app, struct request *req)
{
	(void)app;
	atomic_fetch_add(&slow_started, 1);
	for (int i = 0; i < 10000 && !atomic_load(&slow_release); i++)
		sleep_ms(1);
	request_free(req);
}

static void handle_route(struct app *app, struct request *req)
{
	(void)app;
	atomic_fetch_add(&route_done, 1);
	request_free(req);
}

static void handle_count(struct app *app, struct request *req)
{
	(void)app;
	int32_t op = req->cmd.opaque;
	int now = atomic_fetch_add(&running_now, 1) + 1;
	int max = atomic_load(&running_max);
	while (now > max && !atomic_compare_exchange_weak(&running_max, &max, now))
		;
	sched_yield(); /* give another worker the chance to overlap */
	atomic_fetch_sub(&running_now, 1);
	if (op >= 0 && op < MANY_THREADS * MANY_EACH)
		atomic_fetch_add(&seen[op], 1);
	atomic_fetch_add(&counted, 1);
	request_free(req);
}

static const struct handler test_handlers[] = {
	{ CODE_SLOW, handle_slow, LANE_DEFAULT, false },
	{ CODE_ROUTE, handle_route, LANE_ROUTE, true },
	{ CODE_COUNT, handle_count, LANE_DEFAULT, false },
};

static const struct handler *test_lookup(int32_t code)
{
	for (size_t i = 0; i < sizeof test_handlers / sizeof test_handlers[0]; i++)
		if (test_handlers[i].code == code)
			return &test_handlers[i];
	return NULL;
}

static struct request *make_request(int32_t code, int32_t opaque)
{
	struct remoting_cmd cmd;
	struct buf b = BUF_INIT;
	memset(&cmd, 0, sizeof cmd);
	cmd.code = code;
	cmd.opaque = opaque;
	cmd.serialize = REMOTING_JSON;
	if (remoting_encode(&cmd, &b) < 0)
		abort();
	int err;
	struct request *req = request_create(b.data, b.len, (struct net_conn){ NULL, 1 }, "test", 0,
					     &err);
	buf_free(&b);
	if (!req)
		abort();
	return req;
}

static int submit(struct processor_pool *p, int32_t code, int32_t opaque)
{
	struct request *req = make_request(code, opaque);
	const struct handler *h = test_lookup(code);
	enum handler_lane lane = h->lane;
	int rc = processor_pool_submit(p, h, req);
	if (rc < 0)
		request_free(req);
	else
		processor_pool_wake(p, lane == LANE_ROUTE, lane != LANE_ROUTE);
	return rc;
}

static void reset(void)
{
	atomic_store(&slow_started, 0);
	atomic_store(&slow_release, 0);
	atomic_store(&route_done, 0);
	atomic_store(&counted, 0);
	atomic_store(&running_now, 0);
	atomic_store(&running_max, 0);
}

static int test_route_lane_not_behind_slow_work(void)
{
	reset();
	struct processor_params pp = { .workers = 2, .route_workers = 1, .lane_capacity = 64,
				       .lookup = test_lookup };
	struct processor_pool *p = processor_pool_create(NULL, &pp, NULL);
	CHECK_RET(p != NULL);
	CHECK_RET(processor_pool_start(p) == 0);
	/* Slow work takes both general workers... */
	CHECK_RET(submit(p, CODE_SLOW, 0) == 0);
	CHECK_RET(submit(p, CODE_SLOW, 1) == 0);
	CHECK_RET(wait_for(&slow_started, 2) == 0);
	/* ...and route queries are still served, by the dedicated worker. */
	for (int i = 0; i < 20; i++)
		CHECK_RET(submit(p, CODE_ROUTE, 100 + i) == 0);
	int served = wait_for(&route_done, 20);
	int still_slow = !atomic_load(&slow_release);
	atomic_store(&slow_release, 1);
	processor_pool_destroy(p);
	CHECK_RET(served == 0);
	CHECK_RET(still_slow);
	return 0;
}

static int test_lanes_bounded_independently(void)
{
	reset();
	struct processor_params pp = { .workers = 1, .route_workers = 0, .lane_capacity = 2,
				       .lookup = test_lookup };
	struct processor_pool *p = processor_pool_create(NULL, &pp, NULL);
	CHECK_RET(p != NULL);
	CHECK_RET(processor_pool_start(p) == 0);
	CHECK_RET(submit(p, CODE_SLOW, 0) == 0);
	CHECK_RET(wait_for(&slow_started, 1) == 0); /* the only worker is busy */
	CHECK_RET(submit(p, CODE_COUNT, 1) == 0);
	CHECK_RET(submit(p, CODE_COUNT, 2) == 0);
	CHECK_RET(submit(p, CODE_COUNT, 3) == RMQNS_EFULL);
	CHECK_RET(submit(p, CODE_ROUTE, 4) == 0);
	CHECK_RET(submit(p, CODE_ROUTE, 5) == 0);
	CHECK_RET(submit(p, CODE_ROUTE, 6) == RMQNS_EFULL);
	atomic_store(&slow_release, 1);
	processor_pool_stop(p); /* runs what is queued */
	CHECK_RET(atomic_load(&counted) == 2);
	CHECK_RET(atomic_load(&route_done) == 2);
	CHECK_RET(submit(p, CODE_COUNT, 7) == RMQNS_ECLOSED);
	processor_pool_destroy(p);
	return 0;
}

struct submitter {
	struct processor_pool *p;
	int id;
	long full;
};

static void *submit_thread(void *arg)
{
	struct submitter *s = arg;
	for (int i = 0; i < MANY_EACH; i++) {
		int32_t op = s->id * MANY_EACH + i;
		struct request *req = make_request(CODE_COUNT, op);
		while (processor_pool_submit(s->p, test_lookup(CODE_COUNT), req) == RMQNS_EFULL) {
			s->full++;
			processor_pool_wake(s->p, 0, 1);
			sched_yield();
		}
		if (i % 8 == 7)
			processor_pool_wake(s->p, 0, 8);
	}
	processor_pool_wake(s->p, 0, 8);
	return NULL;
}

static int many_submitters(unsigned workers, unsigned default_max)
{
	reset();
	memset(seen, 0, sizeof seen);
	struct processor_params pp = { .workers = workers, .route_workers = 1, .lane_capacity = 64,
				       .default_max = default_max, .lookup = test_lookup };
	struct processor_pool *p = processor_pool_create(NULL, &pp, NULL);
	CHECK_RET(p != NULL);
	CHECK_RET(processor_pool_start(p) == 0);
	pthread_t th[MANY_THREADS];
	struct submitter sub[MANY_THREADS];
	for (int i = 0; i < MANY_THREADS; i++) {
		sub[i] = (struct submitter){ p, i, 0 };
		CHECK_RET(pthread_create(&th[i], NULL, submit_thread, &sub[i]) == 0);
	}
	for (int i = 0; i < MANY_THREADS; i++)
		pthread_join(th[i], NULL);
	/* Everything queued runs without a stop to push it. */
	CHECK_RET(wait_for(&counted, MANY_THREADS * MANY_EACH) == 0);
	processor_pool_destroy(p);
	CHECK_RET(atomic_load(&counted) == MANY_THREADS * MANY_EACH);
	for (int i = 0; i < MANY_THREADS * MANY_EACH; i++)
		CHECK_RET(atomic_load(&seen[i]) == 1);
	if (default_max)
		CHECK_RET(atomic_load(&running_max) <= (int)default_max);
	return 0;
}

static int test_many_submitters_exactly_once(void)
{
	return many_submitters(2, 0);
}

/* With the default lane capped, three workers never run two of its
 * requests at once, none is left behind by a worker refused a slot, and
 * route queries still go past a slow one. */
static int test_default_lane_cap(void)
{
	CHECK_RET(many_submitters(3, 1) == 0);
	reset();
	struct processor_params pp = { .workers = 3, .route_workers = 0, .lane_capacity = 64,
				       .default_max = 1, .lookup = test_lookup };
	struct processor_pool *p = processor_pool_create(NULL, &pp, NULL);
	CHECK_RET(p != NULL);
	CHECK_RET(processor_pool_start(p) == 0);
	CHECK_RET(submit(p, CODE_SLOW, 0) == 0);
	CHECK_RET(submit(p, CODE_SLOW, 1) == 0);
	CHECK_RET(wait_for(&slow_started, 1) == 0);
	for (int i = 0; i < 20; i++)
		CHECK_RET(submit(p, CODE_ROUTE, 100 + i) == 0);
	int served = wait_for(&route_done, 20);
	int one_slow = atomic_load(&slow_started) == 1; /* the second waits its turn */
	atomic_store(&slow_release, 1);
	int both = wait_for(&slow_started, 2);
	processor_pool_destroy(p);
	CHECK_RET(served == 0);
	CHECK_RET(one_slow);
	CHECK_RET(both == 0);
	return 0;
}

int main(void)
{
	int failed = 0;
	failed += test_route_lane_not_behind_slow_work() != 0;
	failed += test_lanes_bounded_independently() != 0;
	failed += test_many_submitters_exactly_once() != 0;
	failed += test_default_lane_cap() != 0;
	fprintf(stderr, "%s\n", failed ? "FAIL" : "PASS");
	return failed ? 1 : 0;
}
