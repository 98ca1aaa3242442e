/* A bounded queue that is fair between flows (connections): items of one
 * flow leave in their order, and the flows with items take turns, one item
 * each, so that one flow's backlog delays another's next item by at most
 * one item per other busy flow, not by its whole length. Items are
 * intrusive; a mutex guards the queue (it carries registrations and admin
 * reads, hundreds a second, never the route-query path). */
#ifndef RMQNS_FAIRQ_H
#define RMQNS_FAIRQ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fairq_item {
	struct fairq_item *next;
};

struct fairq_flow;

struct fairq {
	pthread_mutex_t lock;
	struct fairq_flow **buckets; /* flows with items, by key */
	size_t nbuckets;             /* a power of two */
	struct fairq_flow *turn_head, *turn_tail; /* flows with items, in turn order */
	struct fairq_flow *spare;    /* emptied flows, reused */
	_Atomic size_t count; /* changed under the lock; read without it as a hint */
	size_t cap;
};

/* 0, RMQNS_EINVAL (cap 0) or RMQNS_ENOMEM. */
int fairq_init(struct fairq *q, size_t cap);
void fairq_destroy(struct fairq *q);
/* Appends item to flow key's items: 0, RMQNS_EFULL past cap items in all,
 * or RMQNS_ENOMEM. */
int fairq_push(struct fairq *q, uint64_t key, struct fairq_item *item);
/* The next item in turn, or NULL when empty. */
struct fairq_item *fairq_pop(struct fairq *q);
/* Items queued now (a snapshot, without the lock). */
size_t fairq_count(struct fairq *q);
static inline bool fairq_looks_empty(struct fairq *q)
{
	return atomic_load_explicit(&q->count, memory_order_relaxed) == 0;
}

#endif
