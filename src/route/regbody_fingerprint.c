/* A REGISTER_BROKER body's identity (regbody.h): the bodyCrc32 check and
 * the CRC-32 with a 64-bit hash that tell an identical re-send from a
 * changed body, in one pass over the bytes. */
#include <string.h>

#include <zlib.h>

#include "rmqns/crc.h"
#include "rmqns/regbody.h"
#include "rmqns/yield.h"

bool regbody_crc_matches(const uint8_t *body, size_t len, int64_t want)
{
	uLong crc = 0;

	if (want == 0)
		return true;
	if (body && len) {
		/* in 64 KiB pieces (zlib takes uInt lengths; and a yield point
		 * between them: megabytes take a few hundred microseconds) */
		while (len) {
			size_t n = len > (1u << 16) ? (1u << 16) : len;
			yield_point();
			crc = crc32_update((uint32_t)crc, body, n);
			body += n;
			len -= n;
		}
	}
	return (int64_t)(crc & 0x7FFFFFFFu) == want;
}

/* 4 lanes of xor-multiply over 8-byte words: about 25 GB/s, a tenth of
 * the CRC's cost; the lanes and the length fold together at the end. */
static uint64_t fp_hash_piece(uint64_t lane[4], const uint8_t *p, size_t n)
{
	static const uint64_t k[4] = { 0x9E3779B97F4A7C15ULL, 0xC2B2AE3D27D4EB4FULL, 0x165667B19E3779F9ULL,
				       0x27D4EB2F165667C5ULL };
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		for (int l = 0; l < 4; l++) {
			uint64_t w;
			memcpy(&w, p + i + 8 * l, 8);
			lane[l] = (lane[l] ^ w) * k[l];
			lane[l] ^= lane[l] >> 29;
		}
	}
	return i;
}

static uint64_t fp_mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xFF51AFD7ED558CCDULL;
	h ^= h >> 33;
	h *= 0xC4CEB9FE1A85EC53ULL;
	return h ^ (h >> 33);
}

void regbody_fingerprint(const uint8_t *body, size_t len, uint32_t *crc31, uint64_t *hash)
{
	uint64_t lane[4] = { 1, 2, 3, 4 }, tail = 0;
	uLong crc = 0;
	size_t total = len;

	if (body && len) {
		/* in 64 KiB pieces: zlib takes uInt lengths, the hash reads
		 * the piece while it is in the cache, and a yield point
		 * between pieces (a megabyte takes a few hundred us) */
		while (len) {
			size_t n = len > (1u << 16) ? (1u << 16) : len;
			yield_point();
			crc = crc32_update((uint32_t)crc, body, n);
			size_t done = fp_hash_piece(lane, body, n);
			if (done < n) { /* only the last piece is not a multiple of 32 */
				for (size_t i = done; i < n; i++)
					tail = (tail ^ body[i]) * 0x100000001B3ULL;
			}
			body += n;
			len -= n;
		}
	}
	*crc31 = (uint32_t)(crc & 0x7FFFFFFFu);
	*hash = fp_mix(fp_mix(lane[0] ^ fp_mix(lane[1] + (uint64_t)total)) ^ fp_mix(lane[2] ^ tail) ^
		       fp_mix(lane[3]));
}
