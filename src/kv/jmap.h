/* Private to src/kv: a string-keyed hash map that iterates in exactly the
 * order java.util.HashMap does (String.hashCode, the h ^ (h >>> 16)
 * spread, power-of-two tables doubled past 0.75 load or when a bucket
 * reaches 9 entries below 64 buckets, insertion order within a bucket), so
 * the KV file and GET_KVLIST_BY_NAMESPACE bodies match Java's bytes.
 * Not emulated: Java turns a bucket of 9+ entries in a table of 64+
 * buckets into a tree, after which later insertions into that one bucket
 * may iterate differently; that takes many colliding keys. */
#ifndef RMQNS_KV_JMAP_H
#define RMQNS_KV_JMAP_H

#include <stddef.h>
#include <stdint.h>

struct jmap_entry {
	struct jmap_entry *next; /* in the bucket, insertion order */
	uint32_t hash;           /* spread String.hashCode of key */
	char *key;               /* owned */
	void *val;               /* owned by whoever owns the map */
};

struct jmap {
	uint32_t cap;       /* buckets (0 until the first insertion) */
	uint32_t size;
	uint32_t threshold; /* pre-sizing target while cap is 0 */
	struct jmap_entry **tab;
};

#define JMAP_INIT { 0, 0, 0, NULL }

/* String.hashCode over the UTF-16 units of a UTF-8 string, spread. */
uint32_t jmap_hash(const char *key);

struct jmap_entry *jmap_find(const struct jmap *m, const char *key);

/* Java's HashMap.put: replaces the value of an existing key (*old gets the
 * previous value, the key is kept) or appends a new entry (copies key;
 * *old = NULL). RMQNS_ENOMEM leaves the map unchanged. */
int jmap_put(struct jmap *m, const char *key, void *val, void **old);

/* Java's HashMap.remove: unlinks the entry, frees its key, returns its
 * value (NULL when absent, *found false). */
void *jmap_remove(struct jmap *m, const char *key, int *found);

/* HashMap.putAll's pre-sizing of an empty map for s entries. */
void jmap_presize(struct jmap *m, size_t s);

/* Copies src into an empty dst with the same buckets in the same order;
 * dup_val copies a value (NULL return = out of memory). On failure dst is
 * empty and free_val was called on the values already copied. */
int jmap_clone(struct jmap *dst, const struct jmap *src, void *(*dup_val)(const void *),
	       void (*free_val)(void *));

/* Frees buckets and keys; calls free_val on each value when not NULL. */
void jmap_free(struct jmap *m, void (*free_val)(void *));

/* Iteration in Java order. */
#define jmap_for_each(m, e)                                              \
	for (uint32_t jm_b_ = 0; jm_b_ < (m)->cap; jm_b_++)                 \
		for (struct jmap_entry *e = (m)->tab[jm_b_]; e; e = e->next)

#endif
