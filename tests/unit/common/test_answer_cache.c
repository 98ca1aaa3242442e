/* The answer cache (src/common/answer_cache.c): one build per key and
 * generation, keys kept apart, no answer of another generation served,
 * and the bounds in entries and bytes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <urcu.h>

#include "rmqns/answer_cache.h"
#include "rmqns/err.h"

static void setup(void)
{
	rcu_register_thread();
}

static void teardown(void)
{
	rcu_unregister_thread();
}

TestSuite(answer_cache, .init = setup, .fini = teardown);

/* A builder that writes "<text>#<builds so far>", so that every build is
 * told apart from a cached copy; size pads it to that many bytes. */
struct fake {
	const char *text;
	size_t size;
	int builds;
	int fail;
};

static int fake_build(void *ctx, struct buf *out)
{
	struct fake *f = ctx;

	f->builds++;
	if (f->fail)
		return f->fail;
	cr_assert_eq(buf_printf(out, "%s#%d", f->text, f->builds), 0);
	while (out->len < f->size)
		cr_assert_eq(buf_putc(out, '.'), 0);
	return 0;
}

/* The answer as a string; *hit tells whether it came from the cache. */
static char *get(struct answer_cache *ac, uint32_t kind, const char *arg, uint64_t gen, struct fake *f,
		 bool *hit)
{
	struct buf scratch = BUF_INIT;
	const uint8_t *body = NULL;
	size_t len = 0;
	char *s = NULL;

	rcu_read_lock();
	int rc = answer_cache_get(ac, kind, arg, gen, fake_build, f, &scratch, &body, &len);
	if (rc == 0) {
		s = strndup((const char *)body, len);
		if (hit)
			*hit = body != scratch.data;
	}
	rcu_read_unlock();
	buf_free(&scratch);
	return s;
}

/* The answer must come from the cache and read want. */
static void expect_hit(struct answer_cache *ac, uint32_t kind, const char *arg, uint64_t gen, struct fake *f,
		       const char *want)
{
	bool hit = false;
	char *s = get(ac, kind, arg, gen, f, &hit);

	cr_expect(hit, "(%u, %s) at %llu was built again", kind, arg ? arg : "NULL", (unsigned long long)gen);
	cr_expect_str_eq(s, want);
	free(s);
}

/* Asks for keys k0 .. k<keys-1> at gen, each answered in full, and the
 * cache within its bounds (slots, max bytes) after each. */
static void fill(struct answer_cache *ac, struct fake *f, int keys, uint64_t gen, uint32_t slots, uint64_t max)
{
	char key[32];
	uint32_t n;
	uint64_t bytes;

	for (int i = 0; i < keys; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		char *s = get(ac, 1, key, gen, f, NULL);
		cr_assert_not_null(s);
		cr_assert_eq(strlen(s), f->size);
		free(s);
		answer_cache_usage(ac, &n, &bytes);
		cr_assert_leq(n, slots);
		cr_assert_leq(bytes, max);
		cr_assert_eq(bytes, (uint64_t)n * f->size, "the byte count follows the entries");
	}
}

static struct answer_cache *make(uint32_t slots, size_t max)
{
	struct answer_cache *ac = answer_cache_create(slots, max, MC_LIST_CACHE_HITS, MC_LIST_CACHE_BUILDS);
	cr_assert_not_null(ac);
	return ac;
}

Test(answer_cache, one_build_per_key_and_generation)
{
	struct answer_cache *ac = make(8, 1 << 20);
	struct fake f = { "A", 0, 0, 0 };
	bool hit = true;

	char *s = get(ac, 1, "ns", 7, &f, &hit);
	cr_expect_str_eq(s, "A#1");
	cr_expect(!hit);
	free(s);
	for (int i = 0; i < 1000; i++) {
		s = get(ac, 1, "ns", 7, &f, &hit);
		cr_assert_str_eq(s, "A#1", "identical bytes every time");
		cr_assert(hit);
		free(s);
	}
	cr_expect_eq(f.builds, 1, "a thousand lookups, one build");
	s = get(ac, 1, "ns", 8, &f, &hit);
	cr_expect_str_eq(s, "A#2", "a new generation is built again");
	cr_expect(!hit);
	free(s);
	expect_hit(ac, 1, "ns", 8, &f, "A#2");
	answer_cache_destroy(ac);
}

Test(answer_cache, kinds_and_arguments_are_separate_keys)
{
	struct answer_cache *ac = make(16, 1 << 20);
	struct fake a = { "a", 0, 0, 0 }, b = { "b", 0, 0, 0 }, c = { "c", 0, 0, 0 }, d = { "d", 0, 0, 0 };

	free(get(ac, 1, NULL, 1, &a, NULL));
	free(get(ac, 1, "", 1, &b, NULL));
	free(get(ac, 2, NULL, 1, &c, NULL));
	free(get(ac, 1, "x", 1, &d, NULL));
	expect_hit(ac, 1, NULL, 1, &a, "a#1");
	expect_hit(ac, 1, "", 1, &b, "b#1"); /* no argument is not the empty one */
	expect_hit(ac, 2, NULL, 1, &c, "c#1");
	expect_hit(ac, 1, "x", 1, &d, "d#1");
	answer_cache_destroy(ac);
}

Test(answer_cache, an_older_reader_does_not_replace_a_newer_answer)
{
	struct answer_cache *ac = make(8, 1 << 20);
	struct fake f = { "A", 0, 0, 0 };
	bool hit;

	free(get(ac, 1, "k", 5, &f, NULL));
	/* a reader that read the generation just before the change */
	char *s = get(ac, 1, "k", 4, &f, &hit);
	cr_expect(!hit, "never served from another generation");
	free(s);
	expect_hit(ac, 1, "k", 5, &f, "A#1");
	answer_cache_destroy(ac);
}

Test(answer_cache, a_failed_build_is_passed_back_and_not_cached)
{
	struct answer_cache *ac = make(8, 1 << 20);
	struct fake f = { "A", 0, 0, RMQNS_ENOTFOUND };
	struct buf scratch = BUF_INIT;
	const uint8_t *body;
	size_t len;

	for (int i = 0; i < 2; i++) {
		rcu_read_lock();
		cr_expect_eq(answer_cache_get(ac, 1, "k", 1, fake_build, &f, &scratch, &body, &len),
			     RMQNS_ENOTFOUND);
		rcu_read_unlock();
	}
	cr_expect_eq(f.builds, 2);
	uint32_t n;
	uint64_t bytes;
	answer_cache_usage(ac, &n, &bytes);
	cr_expect_eq(n, 0);
	cr_expect_eq(bytes, 0);
	buf_free(&scratch);
	answer_cache_destroy(ac);
}

Test(answer_cache, bounded_in_entries_and_bytes)
{
	struct answer_cache *ac = make(8, 10000);
	struct fake f = { "x", 1000, 0, 0 };

	/* more keys than slots and than the budget holds: always answered */
	fill(ac, &f, 200, 1, 8, 10000);

	/* an answer larger than the whole budget goes out uncached */
	struct fake big = { "big", 20000, 0, 0 };
	bool hit;
	free(get(ac, 2, NULL, 1, &big, NULL));
	char *s = get(ac, 2, NULL, 1, &big, &hit);
	cr_expect(!hit);
	cr_expect_eq(strlen(s), 20000);
	cr_expect_eq(big.builds, 2);
	free(s);
	answer_cache_destroy(ac);
}

Test(answer_cache, a_full_cache_makes_room_by_dropping_older_generations)
{
	struct answer_cache *ac = make(64, 10000);
	struct fake f = { "x", 2400, 0, 0 };
	uint32_t n;
	uint64_t bytes;
	bool hit;

	fill(ac, &f, 4, 1, 64, 10000);
	answer_cache_usage(ac, &n, &bytes);
	cr_assert_eq(n, 4);
	/* the data changed: the four can never be served again */
	free(get(ac, 1, "new", 2, &f, NULL));
	char *s = get(ac, 1, "new", 2, &f, &hit);
	cr_expect(hit, "installed once the stale answers went");
	free(s);
	answer_cache_usage(ac, &n, &bytes);
	cr_expect_eq(n, 1);
	cr_expect_eq(bytes, 2400);
	answer_cache_destroy(ac);
}
