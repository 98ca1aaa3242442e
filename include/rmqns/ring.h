/* A bounded MPMC queue of pointers (Vyukov's sequence-numbered cells).
 * Any capacity >= 1 (not only powers of two). Push and pop never block
 * and never take a lock; push fails when the ring is full. Owns no threads
 * and no wake-ups: whoever uses it decides who sleeps. */
#ifndef RMQNS_RING_H
#define RMQNS_RING_H

#include <stdatomic.h>
#include <stddef.h>

struct ring_cell {
	_Atomic size_t seq;
	void *item;
};

struct ring {
	struct ring_cell *cells;
	size_t cap;    /* items the ring holds */
	size_t ncells; /* cap, but at least 2 (see ring_push) */
	_Alignas(64) _Atomic size_t head; /* next push position */
	_Alignas(64) _Atomic size_t tail; /* next pop position */
};

int ring_init(struct ring *r, size_t cap);
void ring_destroy(struct ring *r);
/* 0, or RMQNS_EFULL. item must not be NULL. */
int ring_push(struct ring *r, void *item);
/* The oldest item, or NULL when the ring is empty. */
void *ring_pop(struct ring *r);
/* A snapshot; exact only when no other thread is using the ring. */
size_t ring_count(struct ring *r);

#endif
