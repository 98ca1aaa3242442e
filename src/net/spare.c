/* Spare read buffers for big frames (net.h): the buffer a registration
 * body left the reactor in comes back here once its request is done, and
 * the next big frame is read into it, its pages already in memory (a fresh
 * mapping costs a page fault per 4 KiB on the reactor and an unmap on the
 * freeing thread: more than parsing the body). */
#include "rmqns/net.h"

#include <malloc.h>
#include <stdlib.h>

static uint8_t *net_spares[NET_SPARE_BLOCKS];

void net_block_free(uint8_t *block)
{
	if (!block)
		return;
	size_t cap = malloc_usable_size(block);
	if (cap >= NET_SPARE_MIN_BYTES && cap <= NET_SPARE_MAX_BYTES) {
		for (unsigned i = 0; i < NET_SPARE_BLOCKS; i++) {
			uint8_t *none = NULL;
			if (__atomic_compare_exchange_n(&net_spares[i], &none, block, false, __ATOMIC_RELEASE,
							__ATOMIC_RELAXED))
				return;
		}
	}
	free(block);
}

uint8_t *net_block_take(size_t need, size_t *cap)
{
	for (unsigned i = 0; i < NET_SPARE_BLOCKS; i++) {
		uint8_t *b = __atomic_exchange_n(&net_spares[i], NULL, __ATOMIC_ACQUIRE);
		if (!b)
			continue;
		size_t c = malloc_usable_size(b);
		if (c >= need) {
			*cap = c;
			return b;
		}
		net_block_free(b); /* too small for this frame: kept for a smaller one */
	}
	return NULL;
}
