/* The answer cache (answer_cache.h): a fixed table of RCU-published
 * entries. Readers install with a compare-and-swap and hand what they
 * replace to call_rcu; nothing ever waits. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <urcu.h>
#include <urcu/lfstack.h>

#include "rmqns/answer_cache.h"
#include "rmqns/race.h"

#define ARG_NULL UINT32_MAX

/* Immutable once published. */
struct answer {
	struct rcu_head rcu;
	struct cds_lfs_node kept; /* ThreadSanitizer builds: freed at destroy */
	uint64_t gen;
	uint64_t hash;
	uint32_t kind;
	uint32_t arg_len;         /* ARG_NULL: no argument */
	size_t len;
	uint8_t *body;            /* inside data, after the argument */
	uint8_t data[];
};

struct answer_cache {
	uint32_t mask;
	size_t max_bytes;
	enum metrics_counter hit, built;
	uint64_t bytes;           /* atomic: of the entries in the table */
	bool deferred;            /* atomic: a free went through call_rcu */
	struct cds_lfs_stack kept;
	struct answer *slot[];    /* stored with release, loaded with acquire */
};

struct answer_key {
	uint64_t hash;
	uint32_t kind;
	uint32_t arg_len;
	const char *arg;
	uint32_t at[2];           /* the two slots the key may live in */
};

struct answer_cache *answer_cache_create(uint32_t slots, size_t max_bytes, enum metrics_counter hit,
					 enum metrics_counter built)
{
	uint32_t n = 2;
	struct answer_cache *ac;

	while (n < slots && n < (1u << 20))
		n <<= 1;
	ac = calloc(1, sizeof(*ac) + (size_t)n * sizeof(ac->slot[0]));
	if (!ac)
		return NULL;
	ac->mask = n - 1;
	ac->max_bytes = max_bytes;
	ac->hit = hit;
	ac->built = built;
	cds_lfs_init(&ac->kept);
	return ac;
}

#ifndef RMQNS_TSAN_KEEP
static void answer_free_cb(struct rcu_head *h)
{
	race_grace_passed();
	free(caa_container_of(h, struct answer, rcu));
}
#endif

void answer_cache_destroy(struct answer_cache *ac)
{
	struct cds_lfs_head *head;
	struct cds_lfs_node *n, *next;

	if (!ac)
		return;
	if (__atomic_load_n(&ac->deferred, __ATOMIC_ACQUIRE)) {
		rcu_barrier();
		race_grace_passed();
	}
	for (uint32_t i = 0; i <= ac->mask; i++)
		free(ac->slot[i]);
	head = __cds_lfs_pop_all(&ac->kept);
	for (n = head ? &head->node : NULL; n; n = next) {
		next = n->next;
		race_acquire(n);
		free(caa_container_of(n, struct answer, kept));
	}
	free(ac);
}

/* FNV-1a over the kind and the argument, then mixed so that both halves
 * of the hash pick a slot. */
static bool key_make(struct answer_cache *ac, uint32_t kind, const char *arg, struct answer_key *k)
{
	size_t n = arg ? strlen(arg) : 0;
	uint64_t h = 1469598103934665603ull;

	if (n >= ARG_NULL)
		return false; /* never cached */
	h = (h ^ kind) * 1099511628211ull;
	h = (h ^ (arg ? 1u : 2u)) * 1099511628211ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)arg[i]) * 1099511628211ull;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	k->hash = h;
	k->kind = kind;
	k->arg = arg;
	k->arg_len = arg ? (uint32_t)n : ARG_NULL;
	k->at[0] = (uint32_t)h & ac->mask;
	k->at[1] = (uint32_t)(h >> 32) & ac->mask;
	if (k->at[1] == k->at[0])
		k->at[1] ^= 1;
	return true;
}

static bool key_eq(const struct answer *a, const struct answer_key *k)
{
	return a->hash == k->hash && a->kind == k->kind && a->arg_len == k->arg_len &&
	       (k->arg_len == ARG_NULL || memcmp(a->data, k->arg, k->arg_len) == 0);
}

static struct answer *slot_load(struct answer_cache *ac, uint32_t i)
{
	return __atomic_load_n(&ac->slot[i], __ATOMIC_ACQUIRE);
}

static void answer_retire(struct answer_cache *ac, struct answer *a)
{
	__atomic_sub_fetch(&ac->bytes, a->len, __ATOMIC_RELAXED);
#ifdef RMQNS_TSAN_KEEP
	race_release(&a->kept);
	cds_lfs_push(&ac->kept, &a->kept);
#else
	__atomic_store_n(&ac->deferred, true, __ATOMIC_RELEASE);
	race_reader_done(); /* this thread's last reads of it, for the callback */
	call_rcu(&a->rcu, answer_free_cb);
#endif
}

/* Takes out every entry of a generation before gen: the owner's
 * generations only grow, so none of them can be served again. */
static void sweep_older(struct answer_cache *ac, uint64_t gen)
{
	for (uint32_t i = 0; i <= ac->mask; i++) {
		struct answer *a = slot_load(ac, i);
		if (a && a->gen < gen &&
		    __atomic_compare_exchange_n(&ac->slot[i], &a, NULL, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			answer_retire(ac, a);
	}
}

/* The slot an answer of k at gen goes to: the key's own, else an empty
 * one, else one of an older generation, else the key's second choice.
 * UINT32_MAX when an answer of the key as new is already there. */
static uint32_t victim(struct answer_cache *ac, const struct answer_key *k, uint64_t gen, struct answer **seen)
{
	struct answer *a[2] = { slot_load(ac, k->at[0]), slot_load(ac, k->at[1]) };

	for (int i = 0; i < 2; i++)
		if (a[i] && key_eq(a[i], k)) {
			*seen = a[i];
			return a[i]->gen >= gen ? UINT32_MAX : k->at[i];
		}
	for (int i = 0; i < 2; i++)
		if (!a[i] || a[i]->gen < gen) {
			*seen = a[i];
			return k->at[i];
		}
	*seen = a[1];
	return k->at[1];
}

static void answer_install(struct answer_cache *ac, const struct answer_key *k, uint64_t gen,
			   const uint8_t *bytes, size_t len)
{
	size_t alen = k->arg_len == ARG_NULL ? 0 : k->arg_len;
	struct answer *seen = NULL, *c;
	uint32_t at;

	if (len > ac->max_bytes)
		return;
	for (int attempt = 0;; attempt++) {
		at = victim(ac, k, gen, &seen);
		if (at == UINT32_MAX)
			return;
		uint64_t now = __atomic_load_n(&ac->bytes, __ATOMIC_RELAXED) - (seen ? seen->len : 0);
		if (now + len <= ac->max_bytes)
			break;
		if (attempt)
			return; /* full of answers of this generation */
		sweep_older(ac, gen);
	}
	c = malloc(sizeof(*c) + alen + len);
	if (!c)
		return; /* the answer still goes out, uncached */
	c->gen = gen;
	c->hash = k->hash;
	c->kind = k->kind;
	c->arg_len = k->arg_len;
	c->len = len;
	c->body = c->data + alen;
	if (alen)
		memcpy(c->data, k->arg, alen);
	memcpy(c->body, bytes, len);
	if (!__atomic_compare_exchange_n(&ac->slot[at], &seen, c, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		free(c); /* another reader was quicker; never published */
		return;
	}
	__atomic_add_fetch(&ac->bytes, len, __ATOMIC_RELAXED);
	if (seen)
		answer_retire(ac, seen);
}

int answer_cache_get(struct answer_cache *ac, uint32_t kind, const char *arg, uint64_t gen,
		     answer_build_fn build, void *ctx, struct buf *scratch, const uint8_t **body,
		     size_t *len)
{
	struct answer_key k;
	bool cacheable = key_make(ac, kind, arg, &k);
	int rc;

	for (int i = 0; cacheable && i < 2; i++) {
		struct answer *a = slot_load(ac, k.at[i]);
		if (a && a->gen == gen && key_eq(a, &k)) {
			metrics_add(ac->hit, 1);
			*body = a->body;
			*len = a->len;
			return 0;
		}
	}
	metrics_add(ac->built, 1);
	scratch->len = 0;
	rc = build(ctx, scratch);
	if (rc)
		return rc;
	if (cacheable)
		answer_install(ac, &k, gen, scratch->data, scratch->len);
	*body = scratch->data;
	*len = scratch->len;
	return 0;
}

void answer_cache_usage(struct answer_cache *ac, uint32_t *entries, uint64_t *bytes)
{
	uint32_t n = 0;

	rcu_read_lock();
	for (uint32_t i = 0; i <= ac->mask; i++)
		n += slot_load(ac, i) != NULL;
	rcu_read_unlock();
	*entries = n;
	*bytes = __atomic_load_n(&ac->bytes, __ATOMIC_RELAXED);
}
