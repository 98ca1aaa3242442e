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
int jp_obj_key_view(struct jp *j, const char **key, size_t *keylen);

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

#endif
