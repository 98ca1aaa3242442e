/* java.lang.String.hashCode over UTF-16 units, Long.hashCode, and the
 * iteration order of a java.util.HashMap (javahash.h). */
#include <stdlib.h>
#include <string.h>

#include "rmqns/javahash.h"
#include "rmqns/utf8.h"

int32_t java_string_hash(const char *s)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t left;
	uint32_t h = 0;

	if (!s)
		return 0;
	left = strlen(s);
	while (left) {
		uint32_t cp;
		size_t len = utf8_decode(p, left, &cp);
		if (len == 0) {
			cp = 0xFFFD;
			len = 1;
		}
		p += len;
		left -= len;
		if (cp >= 0x10000) {
			cp -= 0x10000;
			h = h * 31 + (0xD800 + (cp >> 10));
			h = h * 31 + (0xDC00 + (cp & 0x3FF));
		} else {
			h = h * 31 + cp;
		}
	}
	return (int32_t)h;
}

int32_t java_long_hash(int64_t v)
{
	uint64_t u = (uint64_t)v;
	return (int32_t)(uint32_t)(u ^ (u >> 32));
}

uint32_t java_map_cap(uint32_t n)
{
	uint64_t cap = 16;

	while ((uint64_t)n * 4 > cap * 3)
		cap <<= 1;
	return cap > (1u << 30) ? (1u << 30) : (uint32_t)cap;
}

uint32_t java_map_spread(int32_t h)
{
	uint32_t u = (uint32_t)h;
	return u ^ (u >> 16);
}

static uint32_t java_bucket(int32_t h, uint32_t cap)
{
	return java_map_spread(h) & (cap - 1);
}

void java_map_order(const int32_t *hashes, uint32_t n, uint32_t cap, uint32_t *idx)
{
	if (n < 2)
		return;
	if (n <= 32) {
		/* insertion sort: stable, and these lists are short */
		for (uint32_t i = 1; i < n; i++) {
			uint32_t v = idx[i];
			uint32_t b = java_bucket(hashes[v], cap);
			uint32_t k = i;
			while (k > 0 && java_bucket(hashes[idx[k - 1]], cap) > b) {
				idx[k] = idx[k - 1];
				k--;
			}
			idx[k] = v;
		}
		return;
	}
	/* merge sort on a copy, stable */
	uint32_t *tmp = malloc((size_t)n * sizeof(*tmp));
	if (!tmp)
		return; /* keep insertion order: still a consistent order */
	for (uint32_t w = 1; w < n; w *= 2) {
		for (uint32_t lo = 0; lo < n; lo += 2 * w) {
			uint32_t mid = lo + w < n ? lo + w : n;
			uint32_t hi = lo + 2 * w < n ? lo + 2 * w : n;
			uint32_t a = lo, b = mid, o = lo;
			while (a < mid && b < hi) {
				if (java_bucket(hashes[idx[b]], cap) < java_bucket(hashes[idx[a]], cap))
					tmp[o++] = idx[b++];
				else
					tmp[o++] = idx[a++];
			}
			while (a < mid)
				tmp[o++] = idx[a++];
			while (b < hi)
				tmp[o++] = idx[b++];
		}
		memcpy(idx, tmp, (size_t)n * sizeof(*idx));
	}
	free(tmp);
}
