/* java.lang.String.hashCode of a UTF-8 string, computed over its UTF-16
 * units as Java would hold it: the one hash behind every Java HashMap
 * order rmqns reproduces (route answers, cluster info, the KV file). */
#ifndef RMQNS_JAVAHASH_H
#define RMQNS_JAVAHASH_H

#include <stdint.h>

/* An ill-formed sequence counts as one U+FFFD per byte the decoder skips,
 * as Java's UTF-8 decoder reads it. NULL hashes to 0. */
int32_t java_string_hash(const char *s);

#endif
