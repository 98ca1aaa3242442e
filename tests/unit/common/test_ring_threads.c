/* The bounded MPMC ring (ring.h) under many producers and consumers at once:
 * every item taken exactly once, each producer's items seen in order by
 * any one consumer, pushes refused while full. A plain program (exit 0 =
 * pass) because Criterion cannot start under ThreadSanitizer. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "rmqns/err.h"
#include "rmqns/ring.h"
#include "plain_test.h"

static void *item(uintptr_t v)
{
	return (void *)(v + 1); /* never NULL */
}

static uintptr_t value(void *p)
{
	return (uintptr_t)p - 1;
}

#define PRODUCERS 4
#define CONSUMERS 4
#define PER_PRODUCER 20000
#define CAP 64

struct shared {
	struct ring ring;
	atomic_int producers_left;
	atomic_uchar taken[PRODUCERS * PER_PRODUCER];
	atomic_int disorder;
	atomic_int full_seen;
};

struct worker {
	struct shared *sh;
	int id;
	long count;
};

static void *producer(void *arg)
{
	struct worker *w = arg;
	for (uintptr_t i = 0; i < PER_PRODUCER; i++) {
		uintptr_t v = (uintptr_t)w->id * PER_PRODUCER + i;
		while (ring_push(&w->sh->ring, item(v)) == RMQNS_EFULL) {
			atomic_fetch_add(&w->sh->full_seen, 1);
			sched_yield();
		}
	}
	atomic_fetch_sub(&w->sh->producers_left, 1);
	return NULL;
}

static void *consumer(void *arg)
{
	struct worker *w = arg;
	long last[PRODUCERS];
	for (int p = 0; p < PRODUCERS; p++)
		last[p] = -1;
	for (;;) {
		void *p = ring_pop(&w->sh->ring);
		if (!p) {
			if (atomic_load(&w->sh->producers_left) == 0 && !(p = ring_pop(&w->sh->ring)))
				break;
			if (!p) {
				sched_yield();
				continue;
			}
		}
		uintptr_t v = value(p);
		int prod = (int)(v / PER_PRODUCER);
		long seq = (long)(v % PER_PRODUCER);
		/* One consumer sees each producer's items in the order pushed. */
		if (seq <= last[prod])
			atomic_fetch_add(&w->sh->disorder, 1);
		last[prod] = seq;
		atomic_fetch_add(&w->sh->taken[v], 1);
		w->count++;
	}
	return NULL;
}

static int test_many_producers_many_consumers(void)
{
	static struct shared sh;
	pthread_t pt[PRODUCERS], ct[CONSUMERS];
	struct worker pw[PRODUCERS], cw[CONSUMERS];

	CHECK_RET(ring_init(&sh.ring, CAP) == 0);
	atomic_store(&sh.producers_left, PRODUCERS);
	for (int i = 0; i < CONSUMERS; i++) {
		cw[i] = (struct worker){ &sh, i, 0 };
		CHECK_RET(pthread_create(&ct[i], NULL, consumer, &cw[i]) == 0);
	}
	for (int i = 0; i < PRODUCERS; i++) {
		pw[i] = (struct worker){ &sh, i, 0 };
		CHECK_RET(pthread_create(&pt[i], NULL, producer, &pw[i]) == 0);
	}
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(pt[i], NULL);
	long total = 0;
	for (int i = 0; i < CONSUMERS; i++) {
		pthread_join(ct[i], NULL);
		total += cw[i].count;
	}
	CHECK_RET(total == PRODUCERS * PER_PRODUCER);
	for (long v = 0; v < PRODUCERS * PER_PRODUCER; v++)
		CHECK_RET(atomic_load(&sh.taken[v]) == 1);
	CHECK_RET(atomic_load(&sh.disorder) == 0);
	CHECK_RET(ring_pop(&sh.ring) == NULL);
	ring_destroy(&sh.ring);
	return 0;
}

/* A lane of 1 between two threads: items arrive in order, none lost, none
 * doubled, and the producer meets a full ring. */
#define ONE_N 20000

struct one_lane {
	struct ring r;
	atomic_long full;
	long bad_order;
};

static void *one_producer(void *arg)
{
	struct one_lane *l = arg;
	for (uintptr_t i = 0; i < ONE_N; i++)
		while (ring_push(&l->r, item(i)) == RMQNS_EFULL) {
			atomic_fetch_add(&l->full, 1);
			sched_yield();
		}
	return NULL;
}

static int test_capacity_one_two_threads(void)
{
	static struct one_lane l;
	pthread_t th;
	CHECK_RET(ring_init(&l.r, 1) == 0);
	CHECK_RET(pthread_create(&th, NULL, one_producer, &l) == 0);
	for (uintptr_t next = 0; next < ONE_N;) {
		void *p = ring_pop(&l.r);
		if (!p) {
			sched_yield();
			continue;
		}
		if (value(p) != next)
			l.bad_order++;
		next++;
	}
	pthread_join(th, NULL);
	CHECK_RET(l.bad_order == 0);
	CHECK_RET(ring_pop(&l.r) == NULL);
	CHECK_RET(atomic_load(&l.full) > 0);
	ring_destroy(&l.r);
	return 0;
}

int main(void)
{
	int failed = 0;
	failed += test_many_producers_many_consumers() != 0;
	failed += test_capacity_one_two_threads() != 0;
	fprintf(stderr, "%s\n", failed ? "FAIL" : "PASS");
	return failed ? 1 : 0;
}
