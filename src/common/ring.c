/* The bounded MPMC ring (ring.h): Vyukov's array of sequence-numbered
 * cells, any capacity. The processor lanes are made of it. */
#include <stdint.h>
#include <stdlib.h>

#include "rmqns/err.h"
#include "rmqns/ring.h"

int ring_init(struct ring *r, size_t cap)
{
	if (cap == 0)
		return RMQNS_EINVAL;
	size_t ncells = cap < 2 ? 2 : cap;
	r->cells = calloc(ncells, sizeof *r->cells);
	if (!r->cells)
		return RMQNS_ENOMEM;
	for (size_t i = 0; i < ncells; i++)
		atomic_init(&r->cells[i].seq, i);
	r->cap = cap;
	r->ncells = ncells;
	atomic_init(&r->head, 0);
	atomic_init(&r->tail, 0);
	return RMQNS_OK;
}

void ring_destroy(struct ring *r)
{
	free(r->cells);
	r->cells = NULL;
	r->cap = r->ncells = 0;
}

/* A cell whose seq equals the position is free for the producer at that
 * position; seq == pos + 1 means it holds the item pushed there; the
 * consumer hands it to the next lap by setting seq = pos + ncells. With a
 * single cell "holds pos" and "free for pos + 1" would be the same value,
 * so capacity 1 uses two cells and bounds the count from head and tail. */
int ring_push(struct ring *r, void *item)
{
	size_t pos = atomic_load_explicit(&r->head, memory_order_relaxed);

	for (;;) {
		struct ring_cell *c = &r->cells[pos % r->ncells];
		size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
		intptr_t dif = (intptr_t)seq - (intptr_t)pos;

		/* A stale tail only overstates the count: never over capacity. */
		if (dif == 0 && r->ncells != r->cap &&
		    pos - atomic_load_explicit(&r->tail, memory_order_acquire) >= r->cap)
			return RMQNS_EFULL;
		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(&r->head, &pos, pos + 1,
								  memory_order_relaxed,
								  memory_order_relaxed)) {
				c->item = item;
				atomic_store_explicit(&c->seq, pos + 1, memory_order_release);
				return RMQNS_OK;
			}
		} else if (dif < 0) {
			return RMQNS_EFULL; /* the cell still holds last lap's item */
		} else {
			pos = atomic_load_explicit(&r->head, memory_order_relaxed);
		}
	}
}

void *ring_pop(struct ring *r)
{
	size_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed);

	for (;;) {
		struct ring_cell *c = &r->cells[pos % r->ncells];
		size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
		intptr_t dif = (intptr_t)seq - (intptr_t)(pos + 1);

		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(&r->tail, &pos, pos + 1,
								  memory_order_relaxed,
								  memory_order_relaxed)) {
				void *item = c->item;
				atomic_store_explicit(&c->seq, pos + r->ncells, memory_order_release);
				return item;
			}
		} else if (dif < 0) {
			return NULL; /* nothing pushed here yet */
		} else {
			pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
		}
	}
}

size_t ring_count(struct ring *r)
{
	size_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	size_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	return head >= tail ? head - tail : 0;
}
