/* When each of many connections next has something to do: a binary
 * min-heap of (due time, connection index), so an engine holding tens of
 * thousands of mostly idle connections wakes for the next one due without
 * looking at the others. Pure, one thread. */
#ifndef BENCH_DUE_H
#define BENCH_DUE_H

#include <stdbool.h>
#include <stdint.h>

struct due_entry {
	uint64_t at_ns;
	uint32_t idx;
};

struct due_heap {
	struct due_entry *v;
	uint32_t n, cap;
};

void due_init(struct due_heap *h);
void due_free(struct due_heap *h);
/* RMQNS_OK, or RMQNS_ENOMEM (the heap is unchanged). */
int due_push(struct due_heap *h, uint64_t at_ns, uint32_t idx);
/* The earliest entry; false when empty. */
bool due_peek(const struct due_heap *h, struct due_entry *out);
/* Removes the earliest entry into *out; false when empty. */
bool due_pop(struct due_heap *h, struct due_entry *out);

#endif
