/* A streaming (pull) JSON reader: walks the text once, hands out members
 * and values, and never builds a tree, so a body with tens of thousands of
 * entries costs no more memory than what the caller keeps. One reader for
 * every JSON rmqns takes in: registration bodies, the JSON header's general
 * path, REGISTER_TOPIC bodies and the KV file.
 *
 * By default it reads as fastjson does: bare integer object keys, raw
 * control characters and \' inside strings, invalid UTF-8 and lone
 * surrogate escapes as U+FFFD; \u0000 is an error. Options make it
 * stricter or change what \u0000 means (enum jp_option). */
#ifndef RMQNS_JSON_READER_H
#define RMQNS_JSON_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "rmqns/buf.h"

enum jp_type { JP_NONE = 0, JP_OBJECT, JP_ARRAY, JP_STRING, JP_NUMBER, JP_TRUE, JP_FALSE, JP_NULL };

enum jp_option {
	/* RFC 8259 strings and numbers: no raw control characters or \' in
	 * strings, every number token checked against the grammar. */
	JP_RFC = 1 << 0,
	/* Object keys must be strings. */
	JP_NO_BARE_KEYS = 1 << 1,
	/* Invalid UTF-8, lone surrogate escapes and \u0000 are errors. */
	JP_REFUSE_BAD_TEXT = 1 << 2,
	/* \u0000 reads as U+FFFD, as lone surrogates do: no C string can hold it. */
	JP_NUL_AS_FFFD = 1 << 3,
};

/* Deepest nesting any reader allows; each caller sets its own bound. */
#define JP_MAX_DEPTH 2048

struct jp {
	const uint8_t *p;
	const uint8_t *end;
	const uint8_t *start;
	int depth;
	int max_depth;
	unsigned opts;                  /* enum jp_option bits */
	int err;                        /* first error, sticky (negative rmqns_err) */
	const char *why;                /* short reason for err */
	uint8_t comma[JP_MAX_DEPTH / 8 + 1]; /* per open container: a value came already */
	struct buf str;                 /* scratch for decoded strings and keys */
};

/* max_depth is clamped to JP_MAX_DEPTH; deeper nesting is RMQNS_ETOOBIG. */
void jp_init(struct jp *j, const uint8_t *text, size_t len, int max_depth);
void jp_init_opts(struct jp *j, const uint8_t *text, size_t len, int max_depth, unsigned opts);
void jp_fini(struct jp *j);

/* The type of the next value (skipping whitespace), JP_NONE on error. */
enum jp_type jp_peek(struct jp *j);

/* Object iteration: jp_obj_begin consumes '{'; jp_obj_key returns 1 with the
 * key in *key (NUL-terminated, valid until the next call that reads a
 * string) and the parser positioned at the value, 0 at '}' (consumed), or
 * a negative error. Bare integer keys come back as their digits. */
int jp_obj_begin(struct jp *j);
int jp_obj_key(struct jp *j, const char **key, size_t *keylen);
/* The same, but the key is not NUL-terminated: it points into the input
 * when it holds no escape or non-ASCII byte (no copy), else into the
 * scratch (*key == (const char *)j->str.data), valid until the next read
 * of a string. keylen must not be NULL. */
static inline int jp_obj_key_view(struct jp *j, const char **key, size_t *keylen);
/* jp_obj_key_view without its inline shortcut. */
int jp_obj_key_view_general(struct jp *j, const char **key, size_t *keylen);

/* Array iteration: 1 when an element follows, 0 at ']' (consumed). */
int jp_arr_begin(struct jp *j);
int jp_arr_next(struct jp *j);

/* Scalars. jp_string decodes escapes into the scratch buffer (never
 * holding a NUL). jp_int64 takes an integer number (also a quoted one, as
 * fastjson does for numeric fields). jp_number hands out a number token's
 * own text, checked against the JSON grammar, pointing into the input
 * (not NUL-terminated): for callers that keep numbers as written. */
int jp_string(struct jp *j, const char **s, size_t *len);
/* jp_string's value as jp_obj_key_view gives a key: not NUL-terminated,
 * into the input or the scratch. */
int jp_string_view(struct jp *j, const char **s, size_t *len);
int jp_number(struct jp *j, const char **text, size_t *len);
int jp_int64(struct jp *j, int64_t *v);
int jp_int32(struct jp *j, int32_t *v);
int jp_bool(struct jp *j, bool *v);
int jp_null(struct jp *j);
/* Skips one value of any type (bounded by max_depth). */
int jp_skip(struct jp *j);
/* After the top value: only whitespace may remain. */
int jp_end(struct jp *j);

/* Length of the JSON number token at p (RFC 8259: -?(0|[1-9]d*)(.d+)?([eE][+-]?d+)?),
 * of any length; 0 when p holds none. What follows it is the caller's
 * business ("01" is the number 0 followed by a stray 1). */
static inline size_t json_number_len(const uint8_t *p, const uint8_t *end)
{
	const uint8_t *q = p;
	if (q < end && *q == '-')
		q++;
	if (q >= end || *q < '0' || *q > '9')
		return 0;
	if (*q++ != '0')
		while (q < end && *q >= '0' && *q <= '9')
			q++;
	if (q < end && *q == '.') {
		const uint8_t *f = ++q;
		while (q < end && *q >= '0' && *q <= '9')
			q++;
		if (q == f)
			return 0;
	}
	if (q < end && (*q == 'e' || *q == 'E')) {
		q++;
		if (q < end && (*q == '+' || *q == '-'))
			q++;
		const uint8_t *e = q;
		while (q < end && *q >= '0' && *q <= '9')
			q++;
		if (q == e)
			return 0;
	}
	return (size_t)(q - p);
}

/* The end of the run of bytes from p that a JSON string holds as they are
 * (no quote, backslash, control character or non-ASCII byte), 16 or 8
 * bytes a step: the names and values of a registration body are such runs. */
static inline const uint8_t *json_plain_run(const uint8_t *p, const uint8_t *end)
{
#ifdef __SSE2__
	/* as signed bytes, the non-ASCII ones are below 0x20 too */
	const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
	while (end - p >= 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
		__m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
					 _mm_cmplt_epi8(v, space));
		unsigned bits = (unsigned)_mm_movemask_epi8(m);
		if (bits)
			return p + __builtin_ctz(bits);
		p += 16;
	}
#endif
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
	while (end - p >= 8) {
		uint64_t w, q, b;
		memcpy(&w, p, 8);
		q = w ^ (ones * '"');
		b = w ^ (ones * '\\');
		/* a byte's high bit: it is 0 in q or b, below 0x20, or >= 0x80
		 * (exact for the first such byte, which is all that is used) */
		uint64_t hit = (((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w) | w) & high;
		if (hit)
			return p + (__builtin_ctzll(hit) >> 3);
		p += 8;
	}
#endif
	while (p < end && *p != '"' && *p != '\\' && *p >= 0x20 && *p < 0x80)
		p++;
	return p;
}

/* A member after the first written without whitespace, `,"key":` with a
 * key holding nothing to decode, is read here without a call: the reader
 * ends where the general path would, in the same state. */
static inline int jp_obj_key_view(struct jp *j, const char **key, size_t *keylen)
{
	const uint8_t *p = j->p;

	if (!j->err && j->end - p > 2 && p[0] == ',' && p[1] == '"' &&
	    (j->comma[j->depth / 8] >> (j->depth % 8) & 1)) {
		const uint8_t *e = json_plain_run(p + 2, j->end);
		if (j->end - e >= 2 && e[0] == '"' && e[1] == ':') {
			*key = (const char *)p + 2;
			*keylen = (size_t)(e - (p + 2));
			j->p = e + 2;
			return 1;
		}
	}
	return jp_obj_key_view_general(j, key, keylen);
}

#endif
