/* The fair queue (fairq.h): a hash of flows by key, each flow a list of
 * its items, and a turn list of the flows that have items. A pop takes the
 * first item of the flow whose turn it is and sends that flow to the back
 * of the turns; an emptied flow leaves the hash and is kept for reuse. */
#include <stdlib.h>

#include "rmqns/err.h"
#include "rmqns/fairq.h"

struct fairq_flow {
	uint64_t key;
	struct fairq_item *head, *tail;
	struct fairq_flow *hash_next;
	struct fairq_flow *turn_next;
};

#define FAIRQ_MAX_BUCKETS 65536u

int fairq_init(struct fairq *q, size_t cap)
{
	if (cap == 0)
		return RMQNS_EINVAL;
	size_t n = 64;
	while (n < cap && n < FAIRQ_MAX_BUCKETS)
		n *= 2;
	*q = (struct fairq){ .nbuckets = n, .cap = cap };
	atomic_init(&q->count, 0);
	q->buckets = calloc(n, sizeof *q->buckets);
	if (!q->buckets)
		return RMQNS_ENOMEM;
	pthread_mutex_init(&q->lock, NULL);
	return RMQNS_OK;
}

void fairq_destroy(struct fairq *q)
{
	struct fairq_flow *f, *next;
	for (f = q->turn_head; f; f = next) {
		next = f->turn_next;
		free(f);
	}
	for (f = q->spare; f; f = next) {
		next = f->turn_next;
		free(f);
	}
	free(q->buckets);
	q->buckets = NULL;
	pthread_mutex_destroy(&q->lock);
}

static size_t fairq_bucket(const struct fairq *q, uint64_t key)
{
	key ^= key >> 33;
	key *= UINT64_C(0xff51afd7ed558ccd);
	key ^= key >> 33;
	return (size_t)key & (q->nbuckets - 1);
}

int fairq_push(struct fairq *q, uint64_t key, struct fairq_item *item)
{
	item->next = NULL;
	pthread_mutex_lock(&q->lock);
	if (atomic_load_explicit(&q->count, memory_order_relaxed) >= q->cap) {
		pthread_mutex_unlock(&q->lock);
		return RMQNS_EFULL;
	}
	size_t b = fairq_bucket(q, key);
	struct fairq_flow *f = q->buckets[b];
	while (f && f->key != key)
		f = f->hash_next;
	if (!f) {
		f = q->spare;
		if (f)
			q->spare = f->turn_next;
		else if (!(f = malloc(sizeof *f))) {
			pthread_mutex_unlock(&q->lock);
			return RMQNS_ENOMEM;
		}
		*f = (struct fairq_flow){ .key = key, .hash_next = q->buckets[b] };
		q->buckets[b] = f;
		if (q->turn_tail)
			q->turn_tail->turn_next = f;
		else
			q->turn_head = f;
		q->turn_tail = f;
	}
	if (f->tail)
		f->tail->next = item;
	else
		f->head = item;
	f->tail = item;
	atomic_store_explicit(&q->count, atomic_load_explicit(&q->count, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	pthread_mutex_unlock(&q->lock);
	return RMQNS_OK;
}

struct fairq_item *fairq_pop(struct fairq *q)
{
	pthread_mutex_lock(&q->lock);
	struct fairq_flow *f = q->turn_head;
	if (!f) {
		pthread_mutex_unlock(&q->lock);
		return NULL;
	}
	struct fairq_item *item = f->head;
	f->head = item->next;
	atomic_store_explicit(&q->count, atomic_load_explicit(&q->count, memory_order_relaxed) - 1,
			      memory_order_relaxed);
	q->turn_head = f->turn_next;
	if (!q->turn_head)
		q->turn_tail = NULL;
	f->turn_next = NULL;
	if (f->head) {
		/* its next item waits for every other flow's turn */
		if (q->turn_tail)
			q->turn_tail->turn_next = f;
		else
			q->turn_head = f;
		q->turn_tail = f;
	} else {
		struct fairq_flow **pp = &q->buckets[fairq_bucket(q, f->key)];
		while (*pp != f)
			pp = &(*pp)->hash_next;
		*pp = f->hash_next;
		f->tail = NULL;
		f->turn_next = q->spare;
		q->spare = f;
	}
	pthread_mutex_unlock(&q->lock);
	item->next = NULL;
	return item;
}

size_t fairq_count(struct fairq *q)
{
	return atomic_load_explicit(&q->count, memory_order_relaxed);
}
