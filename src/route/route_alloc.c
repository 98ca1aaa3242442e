/* The route module's allocations, with a failure switch for tests: every
 * writer path must leave the tables consistent when memory runs out, and
 * tests prove it by making allocation number N fail. */
#include <stdlib.h>
#include <string.h>

#include "route_priv.h"

int64_t rt_fail_after = -1;

static bool rt_alloc_fails(void)
{
	int64_t n = __atomic_load_n(&rt_fail_after, __ATOMIC_RELAXED);

	if (__builtin_expect(n < 0, 1))
		return false;
	/* counts down to 0, fails there and stays failing until reset */
	if (n == 0)
		return true;
	__atomic_store_n(&rt_fail_after, n - 1, __ATOMIC_RELAXED);
	return false;
}

void *rt_malloc(size_t n)
{
	return rt_alloc_fails() ? NULL : malloc(n);
}

void *rt_calloc(size_t n, size_t size)
{
	return rt_alloc_fails() ? NULL : calloc(n, size);
}

void *rt_realloc(void *p, size_t n)
{
	return rt_alloc_fails() ? NULL : realloc(p, n);
}

char *rt_strdup(const char *s)
{
	return rt_alloc_fails() ? NULL : strdup(s);
}
