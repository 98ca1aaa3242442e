/* Min-heap of due times for rmqns-bench's many-connection engine. */
#include "due.h"

#include <stdlib.h>

#include "rmqns/err.h"

void due_init(struct due_heap *h)
{
	h->v = NULL;
	h->n = h->cap = 0;
}

void due_free(struct due_heap *h)
{
	free(h->v);
	due_init(h);
}

static bool due_before(const struct due_entry *a, const struct due_entry *b)
{
	return a->at_ns < b->at_ns || (a->at_ns == b->at_ns && a->idx < b->idx);
}

int due_push(struct due_heap *h, uint64_t at_ns, uint32_t idx)
{
	if (h->n == h->cap) {
		uint32_t cap = h->cap ? h->cap * 2 : 64;
		if (cap < h->cap)
			return RMQNS_ENOMEM;
		struct due_entry *v = realloc(h->v, (size_t)cap * sizeof(*v));
		if (!v)
			return RMQNS_ENOMEM;
		h->v = v;
		h->cap = cap;
	}
	struct due_entry e = { .at_ns = at_ns, .idx = idx };
	uint32_t i = h->n++;
	while (i > 0) {
		uint32_t parent = (i - 1) / 2;
		if (!due_before(&e, &h->v[parent]))
			break;
		h->v[i] = h->v[parent];
		i = parent;
	}
	h->v[i] = e;
	return RMQNS_OK;
}

bool due_peek(const struct due_heap *h, struct due_entry *out)
{
	if (h->n == 0)
		return false;
	*out = h->v[0];
	return true;
}

bool due_pop(struct due_heap *h, struct due_entry *out)
{
	if (h->n == 0)
		return false;
	*out = h->v[0];
	struct due_entry last = h->v[--h->n];
	uint32_t i = 0;
	for (;;) {
		uint32_t kid = 2 * i + 1;
		if (kid >= h->n)
			break;
		if (kid + 1 < h->n && due_before(&h->v[kid + 1], &h->v[kid]))
			kid++;
		if (!due_before(&h->v[kid], &last))
			break;
		h->v[i] = h->v[kid];
		i = kid;
	}
	if (h->n)
		h->v[i] = last;
	return true;
}
