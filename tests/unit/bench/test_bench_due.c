/* rmqns-bench's due-time heap: entries come out earliest first, ties by
 * connection index, however they went in. */
#include <stdlib.h>

#include <criterion/criterion.h>

#include "due.h"

Test(bench_due, empty)
{
	struct due_heap h;
	due_init(&h);
	struct due_entry e;
	cr_assert(!due_peek(&h, &e));
	cr_assert(!due_pop(&h, &e));
	due_free(&h);
}

Test(bench_due, earliest_first_ties_by_index)
{
	struct due_heap h;
	due_init(&h);
	cr_assert_eq(due_push(&h, 30, 1), 0);
	cr_assert_eq(due_push(&h, 10, 7), 0);
	cr_assert_eq(due_push(&h, 20, 2), 0);
	cr_assert_eq(due_push(&h, 10, 3), 0);
	struct due_entry e;
	cr_assert(due_peek(&h, &e));
	cr_assert_eq(e.at_ns, 10);
	cr_assert_eq(e.idx, 3);
	static const struct due_entry want[] = { { 10, 3 }, { 10, 7 }, { 20, 2 }, { 30, 1 } };
	for (size_t i = 0; i < 4; i++) {
		cr_assert(due_pop(&h, &e));
		cr_assert_eq(e.at_ns, want[i].at_ns, "entry %zu", i);
		cr_assert_eq(e.idx, want[i].idx, "entry %zu", i);
	}
	cr_assert(!due_pop(&h, &e));
	due_free(&h);
}

/* A schedule like the engine's: 50,000 connections, each popped and
 * pushed one period later, in pseudo-random order; every pop is the
 * smallest left. */
Test(bench_due, many_connections_rescheduled)
{
	struct due_heap h;
	due_init(&h);
	uint64_t x = 88172645463325252ull;
	for (uint32_t i = 0; i < 50000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		cr_assert_eq(due_push(&h, x % 30000000000ull, i), 0);
	}
	cr_assert_eq(h.n, 50000);
	uint64_t last = 0;
	struct due_entry e;
	for (uint32_t k = 0; k < 200000; k++) {
		cr_assert(due_pop(&h, &e));
		cr_assert_geq(e.at_ns, last, "pop %u went back in time", k);
		last = e.at_ns;
		cr_assert_eq(due_push(&h, e.at_ns + 30000000000ull, e.idx), 0);
	}
	cr_assert_eq(h.n, 50000);
	due_free(&h);
	cr_assert_eq(h.n, 0);
}
