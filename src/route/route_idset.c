/* A set of 32-bit topic ids: the registrar's index from a broker group to
 * its topics, so that a group's changes cost in proportion to its own
 * topics. Open addressing with linear probing; deletion shifts the run
 * back instead of leaving tombstones, so the set never needs a rebuild.
 * Four bytes a slot, at most three quarters full. */
#include <stdlib.h>

#include "route_writer.h"
#include "rmqns/err.h"

static uint32_t idset_home(uint32_t id, uint32_t cap)
{
	return (id * 0x9E3779B1u) & (cap - 1);
}

static int idset_grow(struct rt_idset *s)
{
	uint32_t ncap = s->cap ? s->cap * 2 : 8;
	uint32_t *ns = rt_malloc((size_t)ncap * sizeof(*ns));

	if (!ns)
		return RMQNS_ENOMEM;
	for (uint32_t i = 0; i < ncap; i++)
		ns[i] = RT_ID_NONE;
	for (uint32_t i = 0; i < s->cap; i++) {
		uint32_t id = s->slots[i];
		if (id == RT_ID_NONE)
			continue;
		uint32_t k = idset_home(id, ncap);
		while (ns[k] != RT_ID_NONE)
			k = (k + 1) & (ncap - 1);
		ns[k] = id;
	}
	free(s->slots);
	s->slots = ns;
	s->cap = ncap;
	return 0;
}

int rt_idset_add(struct rt_idset *s, uint32_t id)
{
	if ((uint64_t)(s->n + 1) * 4 > (uint64_t)s->cap * 3 && idset_grow(s))
		return RMQNS_ENOMEM;
	uint32_t k = idset_home(id, s->cap);
	while (s->slots[k] != RT_ID_NONE) {
		if (s->slots[k] == id)
			return 0;
		k = (k + 1) & (s->cap - 1);
	}
	s->slots[k] = id;
	/* readers may read the count (route_brokers), never the slots */
	__atomic_store_n(&s->n, s->n + 1, __ATOMIC_RELAXED);
	return 0;
}

bool rt_idset_del(struct rt_idset *s, uint32_t id)
{
	uint32_t mask = s->cap - 1, k, hole;

	if (!s->n)
		return false;
	for (k = idset_home(id, s->cap); s->slots[k] != id; k = (k + 1) & mask)
		if (s->slots[k] == RT_ID_NONE)
			return false;
	/* shift back every later member of the run that may sit in the hole */
	hole = k;
	for (k = (k + 1) & mask; s->slots[k] != RT_ID_NONE; k = (k + 1) & mask) {
		uint32_t home = idset_home(s->slots[k], s->cap);
		/* movable unless its home lies cyclically in (hole, k] */
		bool in_between = hole <= k ? (home > hole && home <= k) : (home > hole || home <= k);
		if (!in_between) {
			s->slots[hole] = s->slots[k];
			hole = k;
		}
	}
	s->slots[hole] = RT_ID_NONE;
	__atomic_store_n(&s->n, s->n - 1, __ATOMIC_RELAXED);
	return true;
}

void rt_idset_free(struct rt_idset *s)
{
	free(s->slots);
	s->slots = NULL;
	s->cap = 0;
	__atomic_store_n(&s->n, 0, __ATOMIC_RELAXED);
}
