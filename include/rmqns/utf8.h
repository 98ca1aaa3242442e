/* UTF-8 decoding shared by the header codec, the body parsers and the
 * properties reader, so that every part of rmqns accepts the same text. */
#ifndef RMQNS_UTF8_H
#define RMQNS_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Length (1-4) of the well-formed UTF-8 sequence at s (n > 0 bytes
 * available) and its code point, or 0 when it is not one: stray or
 * truncated sequences, overlong forms, surrogates, past U+10FFFF. The same
 * rules the general JSON reader applies, so both header paths agree. */
static inline size_t utf8_decode(const uint8_t *s, size_t n, uint32_t *cp)
{
	uint8_t c = s[0];
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	size_t len;
	uint32_t v, min;
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2; v = c & 0x1Fu; min = 0x80;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3; v = c & 0x0Fu; min = 0x800;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4; v = c & 0x07u; min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		v = (v << 6) | (s[i] & 0x3Fu);
	}
	if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return 0;
	*cp = v;
	return len;
}

/* Length of the well-formed sequence at s, 0 if none. */
static inline size_t utf8_seq_len(const uint8_t *s, size_t n)
{
	uint32_t cp;
	return utf8_decode(s, n, &cp);
}

/* Bytes of the ill-formed sequence at s (n > 0) that one U+FFFD replaces:
 * the longest start of a well-formed sequence there, at least one byte
 * (Unicode's "maximal subpart", which Java's UTF-8 decoder follows). */
static inline size_t utf8_bad_len(const uint8_t *s, size_t n)
{
	uint8_t c = s[0], lo = 0x80, hi = 0xBF;
	size_t len;
	if (c >= 0xC2 && c <= 0xDF)
		len = 2;
	else if (c >= 0xE0 && c <= 0xEF)
		len = 3;
	else if (c >= 0xF0 && c <= 0xF4)
		len = 4;
	else
		return 1;
	if (c == 0xE0)
		lo = 0xA0;
	else if (c == 0xED)
		hi = 0x9F;
	else if (c == 0xF0)
		lo = 0x90;
	else if (c == 0xF4)
		hi = 0x8F;
	size_t i = 1;
	for (; i < len && i < n; i++) {
		if (s[i] < lo || s[i] > hi)
			break;
		lo = 0x80;
		hi = 0xBF;
	}
	return i;
}

/* Text as Java's UTF-8 decoder reads it: each ill-formed sequence (cut as
 * utf8_bad_len cuts it) becomes U+FFFD. utf8_repair writes it to out (no
 * NUL added) and returns its length; out NULL only measures it. */
static inline size_t utf8_repair(char *out, const uint8_t *s, size_t n)
{
	size_t len = 0, i = 0;
	while (i < n) {
		size_t run = i;
		for (size_t l; run < n; run += l) {
			l = s[run] < 0x80 ? 1 : utf8_seq_len(s + run, n - run);
			if (!l)
				break;
		}
		if (out)
			memcpy(out + len, s + i, run - i);
		len += run - i;
		i = run;
		if (i < n) {
			if (out)
				memcpy(out + len, "\xEF\xBF\xBD", 3);
			len += 3;
			i += utf8_bad_len(s + i, n - i);
		}
	}
	return len;
}

/* Whether s[0..n) is all ASCII (then nothing needs repair), eight bytes
 * at a time. */
static inline bool utf8_all_ascii(const uint8_t *s, size_t n)
{
	uint64_t acc = 0, w;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		memcpy(&w, s + i, 8);
		acc |= w;
	}
	for (; i < n; i++)
		acc |= s[i];
	return !(acc & 0x8080808080808080ull);
}

static inline bool utf8_valid(const uint8_t *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t l = utf8_seq_len(s + i, n - i);
		if (l == 0)
			return false;
		i += l;
	}
	return true;
}

#endif
