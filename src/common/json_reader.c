/* The streaming JSON reader (json_reader.h). Every read is bounds-checked
 * against the end of the text; errors are sticky so callers may check once
 * after a group of reads. */
#include "rmqns/json_reader.h"

#include <limits.h>
#include <string.h>

#include "rmqns/err.h"
#include "rmqns/utf8.h"

static int jp_fail(struct jp *j, int err, const char *why)
{
	if (!j->err) {
		j->err = err;
		j->why = why;
	}
	return j->err;
}

static bool jp_comma(const struct jp *j)
{
	return j->comma[j->depth / 8] >> (j->depth % 8) & 1;
}

static void jp_set_comma(struct jp *j, bool v)
{
	uint8_t bit = (uint8_t)(1u << (j->depth % 8));
	j->comma[j->depth / 8] = (uint8_t)(v ? j->comma[j->depth / 8] | bit : j->comma[j->depth / 8] & ~bit);
}

void jp_init(struct jp *j, const uint8_t *text, size_t len, int max_depth)
{
	jp_init_opts(j, text, len, max_depth, 0);
}

void jp_init_opts(struct jp *j, const uint8_t *text, size_t len, int max_depth, unsigned opts)
{
	memset(j, 0, sizeof(*j));
	j->opts = opts;
	j->p = text;
	j->start = text;
	j->end = text + len;
	j->max_depth = max_depth > JP_MAX_DEPTH || max_depth <= 0 ? JP_MAX_DEPTH : max_depth;
	if (!text)
		j->p = j->end = j->start = (const uint8_t *)"";
}

void jp_fini(struct jp *j)
{
	buf_free(&j->str);
}

static void jp_ws(struct jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

enum jp_type jp_peek(struct jp *j)
{
	if (j->err)
		return JP_NONE;
	jp_ws(j);
	if (j->p >= j->end) {
		jp_fail(j, RMQNS_EJSON, "unexpected end of JSON");
		return JP_NONE;
	}
	switch (*j->p) {
	case '{': return JP_OBJECT;
	case '[': return JP_ARRAY;
	case '"': return JP_STRING;
	case 't': return JP_TRUE;
	case 'f': return JP_FALSE;
	case 'n': return JP_NULL;
	default:
		if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9'))
			return JP_NUMBER;
		jp_fail(j, RMQNS_EJSON, "unexpected character in JSON");
		return JP_NONE;
	}
}

static int jp_open(struct jp *j, uint8_t c)
{
	if (j->err)
		return j->err;
	jp_ws(j);
	if (j->p >= j->end || *j->p != c)
		return jp_fail(j, RMQNS_EJSON, c == '{' ? "expected a JSON object" : "expected a JSON array");
	if (j->depth >= j->max_depth)
		return jp_fail(j, RMQNS_ETOOBIG, "JSON nested too deeply");
	j->p++;
	j->depth++;
	jp_set_comma(j, false);
	return 0;
}

int jp_obj_begin(struct jp *j) { return jp_open(j, '{'); }
int jp_arr_begin(struct jp *j) { return jp_open(j, '['); }

/* Positions at the next member/element of the open container: 1, or 0
 * when it closes with `close` (consumed). */
static int jp_next(struct jp *j, uint8_t close)
{
	if (j->err)
		return j->err;
	jp_ws(j);
	if (j->p >= j->end)
		return jp_fail(j, RMQNS_EJSON, "unexpected end of JSON");
	if (*j->p == close) {
		j->p++;
		j->depth--;
		return 0;
	}
	if (jp_comma(j)) {
		if (*j->p != ',')
			return jp_fail(j, RMQNS_EJSON, "expected ',' in JSON");
		j->p++;
		jp_ws(j);
	}
	jp_set_comma(j, true);
	return 1;
}

/* Appends code point cp as UTF-8 to the scratch buffer. */
static int jp_put_utf8(struct jp *j, uint32_t cp)
{
	uint8_t b[4];
	size_t n;

	if (cp < 0x80) {
		b[0] = (uint8_t)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (uint8_t)(0xC0 | (cp >> 6));
		b[1] = (uint8_t)(0x80 | (cp & 0x3F));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (uint8_t)(0xE0 | (cp >> 12));
		b[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
		b[2] = (uint8_t)(0x80 | (cp & 0x3F));
		n = 3;
	} else {
		b[0] = (uint8_t)(0xF0 | (cp >> 18));
		b[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
		b[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
		b[3] = (uint8_t)(0x80 | (cp & 0x3F));
		n = 4;
	}
	if (buf_append(&j->str, b, n))
		return jp_fail(j, RMQNS_ENOMEM, "out of memory");
	return 0;
}

static int jp_hex4(const uint8_t *p, uint32_t *out)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++) {
		uint8_t c = p[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

/* Decodes the string at j->p (opening quote included) into j->str.
 * Invalid UTF-8 becomes U+FFFD, as Java's decoder does, unless the
 * options refuse it. */
static int jp_read_string(struct jp *j)
{
	j->str.len = 0;
	if (j->p >= j->end || *j->p != '"')
		return jp_fail(j, RMQNS_EJSON, "expected a JSON string");
	j->p++;
	for (;;) {
		const uint8_t *run = j->p;

		j->p = json_plain_run(j->p, j->end);
		if (j->p > run && buf_append(&j->str, run, (size_t)(j->p - run)))
			return jp_fail(j, RMQNS_ENOMEM, "out of memory");
		if (j->p >= j->end)
			return jp_fail(j, RMQNS_EJSON, "unterminated JSON string");
		uint8_t c = *j->p;
		if (c == '"') {
			j->p++;
			break;
		}
		if (c == 0)
			return jp_fail(j, RMQNS_EJSON, "NUL character in a JSON string");
		if (c < 0x20 && (j->opts & JP_RFC))
			return jp_fail(j, RMQNS_EJSON, "control character in a JSON string");
		if (c < 0x20) { /* fastjson lets raw control characters through */
			if (buf_putc(&j->str, c))
				return jp_fail(j, RMQNS_ENOMEM, "out of memory");
			j->p++;
			continue;
		}
		if (c >= 0x80) {
			size_t n = utf8_seq_len(j->p, (size_t)(j->end - j->p));
			if (n == 0) {
				if (j->opts & JP_REFUSE_BAD_TEXT)
					return jp_fail(j, RMQNS_EJSON, "invalid UTF-8 in a JSON string");
				if (jp_put_utf8(j, 0xFFFD))
					return j->err;
				j->p += utf8_bad_len(j->p, (size_t)(j->end - j->p));
			} else {
				if (buf_append(&j->str, j->p, n))
					return jp_fail(j, RMQNS_ENOMEM, "out of memory");
				j->p += n;
			}
			continue;
		}
		/* backslash */
		if (j->end - j->p < 2)
			return jp_fail(j, RMQNS_EJSON, "unterminated JSON string");
		uint8_t e = j->p[1];
		uint8_t out;
		j->p += 2;
		switch (e) {
		case '"': out = '"'; break;
		case '\\': out = '\\'; break;
		case '/': out = '/'; break;
		case '\'':
			if (j->opts & JP_RFC)
				return jp_fail(j, RMQNS_EJSON, "bad escape in a JSON string");
			out = '\'';
			break;
		case 'b': out = '\b'; break;
		case 'f': out = '\f'; break;
		case 'n': out = '\n'; break;
		case 'r': out = '\r'; break;
		case 't': out = '\t'; break;
		case 'u': {
			uint32_t cp;
			if (j->end - j->p < 4 || jp_hex4(j->p, &cp))
				return jp_fail(j, RMQNS_EJSON, "bad \\u escape in a JSON string");
			j->p += 4;
			/* A lone surrogate is not a character; U+0000 is one no C
			 * string can hold. */
			bool lone = false;
			if (cp >= 0xD800 && cp <= 0xDBFF) {
				uint32_t lo;
				if (j->end - j->p >= 6 && j->p[0] == '\\' && j->p[1] == 'u' &&
				    !jp_hex4(j->p + 2, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
					j->p += 6;
					cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
				} else {
					lone = true;
				}
			} else if (cp >= 0xDC00 && cp <= 0xDFFF) {
				lone = true;
			}
			if ((lone || cp == 0) && (j->opts & JP_REFUSE_BAD_TEXT))
				return jp_fail(j, RMQNS_EJSON, lone ? "lone surrogate in a JSON string"
								     : "NUL character in a JSON string");
			if (cp == 0 && !(j->opts & JP_NUL_AS_FFFD))
				return jp_fail(j, RMQNS_EJSON, "NUL character in a JSON string");
			if (lone || cp == 0)
				cp = 0xFFFD;
			if (jp_put_utf8(j, cp))
				return j->err;
			continue;
		}
		default:
			return jp_fail(j, RMQNS_EJSON, "bad escape in a JSON string");
		}
		if (buf_putc(&j->str, out))
			return jp_fail(j, RMQNS_ENOMEM, "out of memory");
	}
	if (buf_terminate(&j->str))
		return jp_fail(j, RMQNS_ENOMEM, "out of memory");
	return 0;
}

/* The string at j->p, as a view into the text when it holds nothing to
 * decode (one scan, no copy), else decoded into the scratch. */
static int jp_string_at(struct jp *j, const char **s, size_t *len)
{
	const uint8_t *b = j->p + 1, *e;

	if (j->p >= j->end || *j->p != '"')
		return jp_fail(j, RMQNS_EJSON, "expected a JSON string");
	e = json_plain_run(b, j->end);
	if (e < j->end && *e == '"') {
		*s = (const char *)b;
		*len = (size_t)(e - b);
		j->p = e + 1;
		return 0;
	}
	if (jp_read_string(j))
		return j->err;
	*s = (const char *)j->str.data;
	*len = j->str.len;
	return 0;
}

static int jp_key(struct jp *j, const char **key, size_t *keylen, bool view)
{
	const char *vk = NULL;
	size_t len = 0;
	int rc = jp_next(j, '}');
	if (rc <= 0)
		return rc;
	if (j->p >= j->end)
		return jp_fail(j, RMQNS_EJSON, "unexpected end of JSON");
	if (*j->p == '"' && view) {
		if (jp_string_at(j, &vk, &len))
			return j->err;
		if (vk == (const char *)j->str.data)
			vk = NULL; /* decoded: the scratch, as below */
	} else if (*j->p == '"') {
		if (jp_read_string(j))
			return j->err;
	} else if ((*j->p == '-' || (*j->p >= '0' && *j->p <= '9')) && !(j->opts & JP_NO_BARE_KEYS)) {
		/* fastjson's unquoted integer key */
		const uint8_t *s = j->p;
		if (*j->p == '-')
			j->p++;
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
		if (j->p - s > 20 || (j->p - s == 1 && *s == '-'))
			return jp_fail(j, RMQNS_EJSON, "bad integer key in JSON");
		j->str.len = 0;
		if (buf_append(&j->str, s, (size_t)(j->p - s)) || buf_terminate(&j->str))
			return jp_fail(j, RMQNS_ENOMEM, "out of memory");
	} else {
		return jp_fail(j, RMQNS_EJSON, "expected a key in a JSON object");
	}
	jp_ws(j);
	if (j->p >= j->end || *j->p != ':')
		return jp_fail(j, RMQNS_EJSON, "expected ':' in a JSON object");
	j->p++;
	if (vk) {
		*key = vk;
		if (keylen)
			*keylen = len;
		return 1;
	}
	*key = (const char *)j->str.data;
	if (keylen)
		*keylen = j->str.len;
	return 1;
}

int jp_obj_key(struct jp *j, const char **key, size_t *keylen)
{
	return jp_key(j, key, keylen, false);
}

int jp_obj_key_view_general(struct jp *j, const char **key, size_t *keylen)
{
	return jp_key(j, key, keylen, true);
}

int jp_arr_next(struct jp *j)
{
	return jp_next(j, ']');
}

int jp_string_view(struct jp *j, const char **s, size_t *len)
{
	if (jp_peek(j) != JP_STRING)
		return jp_fail(j, RMQNS_EJSON, "expected a JSON string");
	return jp_string_at(j, s, len);
}

int jp_string(struct jp *j, const char **s, size_t *len)
{
	if (jp_peek(j) != JP_STRING)
		return jp_fail(j, RMQNS_EJSON, "expected a JSON string");
	if (jp_read_string(j))
		return j->err;
	*s = (const char *)j->str.data;
	if (len)
		*len = j->str.len;
	return 0;
}


/* A number token, checked against the grammar; under JP_RFC it must also
 * end where a number can (so "01" and "1x" are refused here, not later). */
static int jp_number_token(struct jp *j, const uint8_t **s, size_t *n)
{
	if (jp_peek(j) != JP_NUMBER)
		return jp_fail(j, RMQNS_EJSON, "expected a number in JSON");
	size_t len = json_number_len(j->p, j->end);
	if (len == 0)
		return jp_fail(j, RMQNS_EJSON, "bad number in JSON");
	const uint8_t *after = j->p + len;
	if (after < j->end && ((*after >= '0' && *after <= '9') || *after == '.' || *after == 'e' ||
			       *after == 'E' || *after == '+' || *after == '-'))
		return jp_fail(j, RMQNS_EJSON, "bad number in JSON");
	*s = j->p;
	*n = len;
	j->p = after;
	return 0;
}

int jp_number(struct jp *j, const char **text, size_t *len)
{
	const uint8_t *s;
	size_t n;
	if (jp_number_token(j, &s, &n))
		return j->err;
	*text = (const char *)s;
	*len = n;
	return 0;
}

static int parse_int64_text(const uint8_t *s, size_t n, int64_t *v)
{
	size_t i = 0;
	bool neg = false;
	uint64_t acc = 0;
	uint64_t limit;

	if (n > 0 && (s[0] == '-' || s[0] == '+')) {
		neg = s[0] == '-';
		i = 1;
	}
	if (i == n)
		return -1;
	limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		uint64_t d = (uint64_t)(s[i] - '0');
		if (acc > (limit - d) / 10)
			return -1;
		acc = acc * 10 + d;
	}
	*v = neg ? (int64_t)(0 - acc) : (int64_t)acc;
	return 0;
}

int jp_int64(struct jp *j, int64_t *v)
{
	enum jp_type t = jp_peek(j);

	if (t == JP_STRING) {
		if (jp_read_string(j))
			return j->err;
		if (parse_int64_text(j->str.data, j->str.len, v))
			return jp_fail(j, RMQNS_EJSON, "expected an integer in JSON");
		return 0;
	}
	if (t != JP_NUMBER)
		return jp_fail(j, RMQNS_EJSON, "expected an integer in JSON");
	const uint8_t *s = j->p;
	if (*j->p == '-')
		j->p++;
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E'))
		return jp_fail(j, RMQNS_EJSON, "expected an integer in JSON");
	if (parse_int64_text(s, (size_t)(j->p - s), v))
		return jp_fail(j, RMQNS_EJSON, "integer out of range in JSON");
	return 0;
}

int jp_int32(struct jp *j, int32_t *v)
{
	int64_t w;

	if (jp_int64(j, &w))
		return j->err;
	if (w < INT32_MIN || w > INT32_MAX)
		return jp_fail(j, RMQNS_EJSON, "integer out of range in JSON");
	*v = (int32_t)w;
	return 0;
}

static int jp_literal(struct jp *j, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n) != 0)
		return jp_fail(j, RMQNS_EJSON, "bad literal in JSON");
	j->p += n;
	return 0;
}

int jp_bool(struct jp *j, bool *v)
{
	switch (jp_peek(j)) {
	case JP_TRUE:
		*v = true;
		return jp_literal(j, "true");
	case JP_FALSE:
		*v = false;
		return jp_literal(j, "false");
	case JP_STRING:
		if (jp_read_string(j))
			return j->err;
		if (j->str.len == 4 && memcmp(j->str.data, "true", 4) == 0)
			*v = true;
		else if (j->str.len == 5 && memcmp(j->str.data, "false", 5) == 0)
			*v = false;
		else
			return jp_fail(j, RMQNS_EJSON, "expected a boolean in JSON");
		return 0;
	default:
		return jp_fail(j, RMQNS_EJSON, "expected a boolean in JSON");
	}
}

int jp_null(struct jp *j)
{
	if (jp_peek(j) != JP_NULL)
		return jp_fail(j, RMQNS_EJSON, "expected null in JSON");
	return jp_literal(j, "null");
}

int jp_skip(struct jp *j)
{
	const char *k;
	int rc;

	switch (jp_peek(j)) {
	case JP_OBJECT:
		if (jp_obj_begin(j))
			return j->err;
		while ((rc = jp_obj_key(j, &k, NULL)) == 1)
			if (jp_skip(j))
				return j->err;
		return rc;
	case JP_ARRAY:
		if (jp_arr_begin(j))
			return j->err;
		while ((rc = jp_arr_next(j)) == 1)
			if (jp_skip(j))
				return j->err;
		return rc;
	case JP_STRING: {
		const char *s;
		size_t n;
		return jp_string_at(j, &s, &n);
	}
	case JP_NUMBER:
		if (j->opts & JP_RFC) {
			const char *s;
			size_t n;
			return jp_number(j, &s, &n);
		}
		if (*j->p == '-')
			j->p++;
		while (j->p < j->end && ((*j->p >= '0' && *j->p <= '9') || *j->p == '.' ||
					 *j->p == 'e' || *j->p == 'E' || *j->p == '+' || *j->p == '-'))
			j->p++;
		return 0;
	case JP_TRUE:
		return jp_literal(j, "true");
	case JP_FALSE:
		return jp_literal(j, "false");
	case JP_NULL:
		return jp_literal(j, "null");
	default:
		return j->err;
	}
}

int jp_end(struct jp *j)
{
	if (j->err)
		return j->err;
	jp_ws(j);
	if (j->p != j->end)
		return jp_fail(j, RMQNS_EJSON, "trailing data after JSON");
	return 0;
}
