/* A small pull parser for the JSON of registration bodies: walks the text
 * once, hands out members, and never builds a tree, so a body with tens of
 * thousands of topic configs costs no more memory than the result. Accepts
 * fastjson's bare integer object keys. Private to src/route/. */
#ifndef RMQNS_ROUTE_JPULL_H
#define RMQNS_ROUTE_JPULL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rmqns/buf.h"

enum jp_type { JP_NONE = 0, JP_OBJECT, JP_ARRAY, JP_STRING, JP_NUMBER, JP_TRUE, JP_FALSE, JP_NULL };

#define JP_MAX_DEPTH 64

struct jp {
	const uint8_t *p;
	const uint8_t *end;
	const uint8_t *start;
	int depth;
	int max_depth;
	int err;                        /* first error, sticky (negative rmqns_err) */
	const char *why;                /* short reason for err */
	bool comma[JP_MAX_DEPTH + 1];   /* per open container: a value came already */
	struct buf str;                 /* scratch for decoded strings and keys */
};

/* max_depth is clamped to JP_MAX_DEPTH. */
void jp_init(struct jp *j, const uint8_t *text, size_t len, int max_depth);
void jp_fini(struct jp *j);

/* The type of the next value (skipping whitespace), JP_NONE on error. */
enum jp_type jp_peek(struct jp *j);

/* Object iteration: jp_obj_begin consumes '{'; jp_obj_key returns 1 with the
 * key in *key (NUL-terminated, valid until the next call that reads a
 * string) and the parser positioned at the value, 0 at '}' (consumed), or
 * a negative error. Bare integer keys come back as their digits. */
int jp_obj_begin(struct jp *j);
int jp_obj_key(struct jp *j, const char **key, size_t *keylen);

/* Array iteration: 1 when an element follows, 0 at ']' (consumed). */
int jp_arr_begin(struct jp *j);
int jp_arr_next(struct jp *j);

/* Scalars. jp_string decodes escapes into the scratch buffer; strings with
 * an embedded NUL are refused. jp_int64 takes an integer number (also a
 * quoted one, as fastjson does for numeric fields). */
int jp_string(struct jp *j, const char **s, size_t *len);
int jp_int64(struct jp *j, int64_t *v);
int jp_int32(struct jp *j, int32_t *v);
int jp_bool(struct jp *j, bool *v);
/* Skips one value of any type (bounded by max_depth). */
int jp_skip(struct jp *j);
/* After the top value: only whitespace may remain. */
int jp_end(struct jp *j);

#endif
