/* The bounded MPMC ring (ring.h), one thread: FIFO order and exact
 * capacity (any size, 1 included). Concurrent use: test_ring_threads.c. */
#include <stdint.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "rmqns/err.h"
#include "rmqns/ring.h"

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
