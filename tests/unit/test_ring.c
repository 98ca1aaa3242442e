/* The processor lanes' bounded MPMC ring: FIFO order, exact capacity
 * (any size, 1 included), and many producers and consumers at once with
 * every item taken exactly once. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "rmqns/err.h"
#include "rmqns/processor.h"

static void *item(uintptr_t v)
{
	return (void *)(v + 1); /* never NULL */
}

static uintptr_t value(void *p)
{
	return (uintptr_t)p - 1;
}

Test(ring, fifo_and_exact_capacity)
{
	struct ring r;
	cr_assert_eq(ring_init(&r, 3), 0);
	cr_assert_null(ring_pop(&r));
	for (uintptr_t i = 0; i < 3; i++)
		cr_assert_eq(ring_push(&r, item(i)), 0);
	cr_assert_eq(ring_push(&r, item(99)), RMQNS_EFULL);
	cr_assert_eq(ring_count(&r), 3);
	for (uintptr_t i = 0; i < 3; i++)
		cr_assert_eq(value(ring_pop(&r)), i);
	cr_assert_null(ring_pop(&r));
	cr_assert_eq(ring_count(&r), 0);
	ring_destroy(&r);
}

Test(ring, capacity_one_wraps_many_laps)
{
	struct ring r;
	cr_assert_eq(ring_init(&r, 1), 0);
	for (uintptr_t i = 0; i < 10000; i++) {
		cr_assert_eq(ring_push(&r, item(i)), 0);
		cr_assert_eq(ring_push(&r, item(i)), RMQNS_EFULL);
		cr_assert_eq(value(ring_pop(&r)), i);
		cr_assert_null(ring_pop(&r));
	}
	ring_destroy(&r);
}

Test(ring, odd_capacity_interleaved)
{
	struct ring r;
	uintptr_t next_in = 0, next_out = 0;
	cr_assert_eq(ring_init(&r, 7), 0);
	for (int round = 0; round < 1000; round++) {
		int pushes = round % 5 + 1, pops = (round * 3) % 6;
		for (int k = 0; k < pushes; k++) {
			int rc = ring_push(&r, item(next_in));
			if (next_in - next_out < 7) {
				cr_assert_eq(rc, 0);
				next_in++;
			} else {
				cr_assert_eq(rc, RMQNS_EFULL);
			}
		}
		for (int k = 0; k < pops; k++) {
			void *p = ring_pop(&r);
			if (next_out < next_in) {
				cr_assert_eq(value(p), next_out);
				next_out++;
			} else {
				cr_assert_null(p);
			}
		}
	}
	ring_destroy(&r);
}

Test(ring, zero_capacity_refused)
{
	struct ring r;
	cr_assert_eq(ring_init(&r, 0), RMQNS_EINVAL);
}

/* ---- concurrent ---- */

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

Test(ring, many_producers_many_consumers)
{
	static struct shared sh;
	pthread_t pt[PRODUCERS], ct[CONSUMERS];
	struct worker pw[PRODUCERS], cw[CONSUMERS];

	cr_assert_eq(ring_init(&sh.ring, CAP), 0);
	atomic_store(&sh.producers_left, PRODUCERS);
	for (int i = 0; i < CONSUMERS; i++) {
		cw[i] = (struct worker){ &sh, i, 0 };
		cr_assert_eq(pthread_create(&ct[i], NULL, consumer, &cw[i]), 0);
	}
	for (int i = 0; i < PRODUCERS; i++) {
		pw[i] = (struct worker){ &sh, i, 0 };
		cr_assert_eq(pthread_create(&pt[i], NULL, producer, &pw[i]), 0);
	}
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(pt[i], NULL);
	long total = 0;
	for (int i = 0; i < CONSUMERS; i++) {
		pthread_join(ct[i], NULL);
		total += cw[i].count;
	}
	cr_assert_eq(total, PRODUCERS * PER_PRODUCER);
	for (long v = 0; v < PRODUCERS * PER_PRODUCER; v++)
		cr_assert_eq(atomic_load(&sh.taken[v]), 1, "item %ld taken %d times", v,
			     atomic_load(&sh.taken[v]));
	cr_assert_eq(atomic_load(&sh.disorder), 0);
	cr_assert_null(ring_pop(&sh.ring));
	ring_destroy(&sh.ring);
}
