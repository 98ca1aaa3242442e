/* JSON bodies as fastjson writes them (protocol.md §5.1-§5.2).
 *
 * The writer is a streaming emitter: callers write members in the order
 * Java sorts them (by name) and map entries in the order they want, and the
 * writer handles commas, escaping and the two forms:
 *   JW_DEFAULT  - fastjson's default: integer map keys unquoted, only
 *                 control characters escaped (upper-case \uXXXX);
 *   JW_STANDARD - standard JSON: integer keys quoted, "/" as "\/", every
 *                 character >= U+007F as \uXXXX (UTF-16 units).
 * Reading JSON is json_reader.h's; jansson trees for tests are json_tree.h's. */
#ifndef RMQNS_JSON_BODY_H
#define RMQNS_JSON_BODY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rmqns/buf.h"

#include "rmqns/json_body_types.h"

#define JW_MAX_DEPTH 32

struct jw {
	struct buf *out;
	enum jw_form form;
	int depth;
	bool need_comma[JW_MAX_DEPTH];
	bool after_key;
	int err; /* first error (ENOMEM or nesting), sticky */
};

void jw_init(struct jw *w, struct buf *out, enum jw_form form);
void jw_obj_begin(struct jw *w);
void jw_obj_end(struct jw *w);
void jw_arr_begin(struct jw *w);
void jw_arr_end(struct jw *w);
void jw_key(struct jw *w, const char *name);        /* "name": */
void jw_key_int(struct jw *w, int64_t key);         /* 0: (default) or "0": (standard) */
void jw_str(struct jw *w, const char *s);           /* NULL writes null */
void jw_strn(struct jw *w, const char *s, size_t n);
void jw_int(struct jw *w, int64_t v);
void jw_bool(struct jw *w, bool v);
void jw_null(struct jw *w);
/* Appends already-serialized JSON as one value. */
void jw_raw(struct jw *w, const char *json, size_t n);
/* A member of an object: "name": value. */
static inline void jw_member_str(struct jw *w, const char *name, const char *s)
{
	jw_key(w, name);
	jw_str(w, s);
}
static inline void jw_member_int(struct jw *w, const char *name, int64_t v)
{
	jw_key(w, name);
	jw_int(w, v);
}
static inline void jw_member_bool(struct jw *w, const char *name, bool v)
{
	jw_key(w, name);
	jw_bool(w, v);
}

/* 0, or the first error met while writing. */
static inline int jw_error(const struct jw *w) { return w->err; }

/* Escapes s as a JSON string body (without quotes) in the given form.
 * Input that is not valid UTF-8 (stray or truncated sequences, overlong
 * forms, encoded surrogates, code points past U+10FFFF) never reaches the
 * output: each offending byte becomes U+FFFD (raw in the default form,
 * \uFFFD in the standard form). On error the buffer is left as it was. */
int json_escape(struct buf *out, const char *s, size_t n, enum jw_form form);

#endif
