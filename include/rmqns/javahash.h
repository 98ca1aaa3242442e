/* java.lang.String.hashCode of a UTF-8 string, computed over its UTF-16
 * units as Java would hold it, Long.hashCode, and java.util.HashMap's
 * iteration order: the one place behind every Java HashMap order rmqns
 * reproduces (route answers, cluster info, the KV file). */
#ifndef RMQNS_JAVAHASH_H
#define RMQNS_JAVAHASH_H

#include <stdint.h>

/* An ill-formed sequence counts as one U+FFFD per byte the decoder skips,
 * as Java's UTF-8 decoder reads it. NULL hashes to 0. */
int32_t java_string_hash(const char *s);
/* Long.hashCode. */
int32_t java_long_hash(int64_t v);
/* The bits of a key's hash a HashMap picks its bucket with (h ^ h >>> 16). */
uint32_t java_map_spread(int32_t h);
/* The capacity a HashMap reaches holding n entries (from 16, doubling
 * past 0.75 load). */
uint32_t java_map_cap(uint32_t n);
/* HashMap iteration order: sorts idx[0..n) (positions in insertion order)
 * by bucket of hashes[idx] in a table of `cap` buckets, stable. Leaves idx
 * as it is when out of memory (still a consistent order). */
void java_map_order(const int32_t *hashes, uint32_t n, uint32_t cap, uint32_t *idx);

#endif
