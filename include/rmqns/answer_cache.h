/* A small cache of answer bodies as bytes, keyed by (kind, argument) and
 * tagged with the generation of the data they were built from. The owner
 * of the data (route lists, KV namespaces) moves its generation on every
 * change; an entry of another generation is never served. Readers look up
 * and install inside an RCU read-side section without a lock: an install
 * is a compare-and-swap, the replaced entry is freed after a grace period.
 * Bounded in entries (a fixed table, two candidate slots per key) and in
 * bytes. */
#ifndef RMQNS_ANSWER_CACHE_H
#define RMQNS_ANSWER_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "rmqns/buf.h"
#include "rmqns/metrics.h"

struct answer_cache;

/* Slots of an owner's cache and the bytes of answers it keeps at most. */
#define ANSWER_CACHE_SLOTS_DEFAULT 64u
#define ANSWER_CACHE_MAX_BYTES_DEFAULT ((size_t)64 << 20)

/* slots is rounded up to a power of two (at least 2); lookups count into
 * the counters hit and built. NULL on ENOMEM. */
struct answer_cache *answer_cache_create(uint32_t slots, size_t max_bytes, enum metrics_counter hit,
					 enum metrics_counter built);
/* Once no reader can be inside the cache any more; waits for the frees
 * still pending. */
void answer_cache_destroy(struct answer_cache *ac);

/* Writes the answer into out (appending to an empty buf): 0, or an error
 * that is passed back to the caller and nothing is cached. */
typedef int (*answer_build_fn)(void *ctx, struct buf *out);

/* Inside rcu_read_lock(): the answer for (kind, arg) as of generation gen
 * (arg NULL is a key of its own, apart from ""). A cached entry of that
 * generation is served as is; otherwise build(ctx, scratch) writes it into
 * scratch (emptied first) and it is installed for the next reader. *body
 * is valid until rcu_read_unlock() and points into scratch exactly when the
 * answer was built (counted as hit or built). gen must be
 * read before the data the builder reads, so that an entry never carries
 * a generation newer than its content. */
int answer_cache_get(struct answer_cache *ac, uint32_t kind, const char *arg, uint64_t gen,
		     answer_build_fn build, void *ctx, struct buf *scratch, const uint8_t **body,
		     size_t *len);

/* Entries and their bytes now (tests, once nothing runs). */
void answer_cache_usage(struct answer_cache *ac, uint32_t *entries, uint64_t *bytes);

#endif
