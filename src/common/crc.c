/* CRC-32 (crc.h): on x86-64 CPUs with PCLMULQDQ, 64-byte blocks are folded
 * with carry-less multiplication (Intel's "Fast CRC Computation for
 * Generic Polynomials Using PCLMULQDQ", the reflected IEEE polynomial), 2-3
 * times zlib's speed; the tail, and any other CPU, go through zlib. */
#include "rmqns/crc.h"

#include <limits.h>
#include <stdbool.h>
#include <zlib.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define CRC_FOLD 1
#endif

#ifdef CRC_FOLD
/* x's two 64-bit halves times the constants k, added to the next 16 bytes */
__attribute__((target("pclmul,sse2"))) static inline __m128i crc_fold16(__m128i x, __m128i k, __m128i next)
{
	__m128i lo = _mm_clmulepi64_si128(x, k, 0x00), hi = _mm_clmulepi64_si128(x, k, 0x11);
	return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

static inline __m128i crc_load(const uint8_t *p)
{
	return _mm_loadu_si128((const __m128i *)(const void *)p);
}

/* reg: the CRC register (zlib's value, inverted); n >= 64, a multiple of 16 */
__attribute__((target("pclmul,sse2"))) static uint32_t crc_fold(uint32_t reg, const uint8_t *p, size_t n)
{
	/* x^(4*128+32), x^(4*128-32) mod P; the same for 128; x^64; P and
	 * its Barrett constant (all bit-reflected) */
	const __m128i k4x = _mm_set_epi64x(0x1c6e41596LL, 0x154442bd4LL);
	const __m128i k1x = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL);
	const __m128i k64 = _mm_set_epi64x(0, 0x163cd6124LL);
	const __m128i poly = _mm_set_epi64x(0x1F7011641LL, 0x1DB710641LL);
	const __m128i low32 = _mm_set_epi32(0, 0, 0, -1);
	__m128i x1 = _mm_xor_si128(crc_load(p), _mm_cvtsi32_si128((int)reg));
	__m128i x2 = crc_load(p + 16), x3 = crc_load(p + 32), x4 = crc_load(p + 48);

	for (p += 64, n -= 64; n >= 64; p += 64, n -= 64) {
		x1 = crc_fold16(x1, k4x, crc_load(p));
		x2 = crc_fold16(x2, k4x, crc_load(p + 16));
		x3 = crc_fold16(x3, k4x, crc_load(p + 32));
		x4 = crc_fold16(x4, k4x, crc_load(p + 48));
	}
	x1 = crc_fold16(x1, k1x, x2);
	x1 = crc_fold16(x1, k1x, x3);
	x1 = crc_fold16(x1, k1x, x4);
	for (; n >= 16; p += 16, n -= 16)
		x1 = crc_fold16(x1, k1x, crc_load(p));
	/* 128 bits to 64, to 32, then the Barrett reduction */
	__m128i t = _mm_clmulepi64_si128(k1x, x1, 0x01);
	x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), t);
	t = _mm_clmulepi64_si128(_mm_and_si128(x1, low32), k64, 0x00);
	x1 = _mm_xor_si128(_mm_srli_si128(x1, 4), t);
	t = _mm_clmulepi64_si128(_mm_and_si128(x1, low32), poly, 0x10);
	t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), poly, 0x00);
	x1 = _mm_xor_si128(x1, t);
	return (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(x1, 4));
}

static bool crc_has_fold(void)
{
	static int have = -1; /* a benign race: every thread finds the same */
	int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
	if (h < 0) {
		__builtin_cpu_init();
		h = __builtin_cpu_supports("pclmul") ? 1 : 0;
		__atomic_store_n(&have, h, __ATOMIC_RELAXED);
	}
	return h == 1;
}
#endif

uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t n)
{
#ifdef CRC_FOLD
	if (n >= 64 && crc_has_fold()) {
		size_t bulk = n & ~(size_t)15;
		crc = ~crc_fold(~crc, p, bulk);
		p += bulk;
		n -= bulk;
	}
#endif
	while (n) {
		uInt piece = n > UINT_MAX ? UINT_MAX : (uInt)n;
		crc = (uint32_t)crc32(crc, p, piece);
		p += piece;
		n -= piece;
	}
	return crc;
}
