/* JSON bodies as jansson trees, for the tests and the benchmark tools that
 * want a tree to look into: built by the streaming reader (json_reader.h),
 * so they accept what fastjson writes that jansson does not, bare integer
 * object keys. The server itself reads JSON with the streaming reader
 * alone and does not link this. */
#ifndef RMQNS_JSON_TREE_H
#define RMQNS_JSON_TREE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Largest body json_body_parse takes. */
#define JSON_BODY_MAX_LEN ((size_t)256 << 20)

/* Parses a body written by fastjson (bare integer keys allowed, quoted
 * ones too). Returns a new reference, or NULL with *err set (EJSON, ENOMEM,
 * ETOOBIG past JSON_BODY_MAX_LEN). Integers within int64 are integers
 * (json_int_t); integers beyond it, nesting past JP_MAX_DEPTH, "\u0000",
 * lone surrogate escapes and invalid UTF-8 are EJSON, as in jansson. A
 * repeated key keeps its last value. The top level must be an object or
 * an array. */
json_t *json_body_parse(const uint8_t *text, size_t len, int *err);

/* Java-style text of a scalar JSON value (strings as is, numbers in
 * decimal, true/false); NULL for null, objects and arrays. The result is
 * written into `tmp` when it is not a string. */
const char *json_scalar_text(const json_t *v, char *tmp, size_t tmp_len);

#endif
