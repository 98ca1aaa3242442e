/* fastjson-compatible JSON bodies (protocol.md §5.1-§5.2): the streaming
 * writer with its two escaping forms, and the reader that quotes bare
 * integer keys before handing the text to jansson. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/err.h"
#include "rmqns/json_body.h"
#include "remoting_int.h"

/* ---- escaping ---- */

static const char json_hex[] = "0123456789ABCDEF";

static int json_put_u(struct buf *out, uint32_t unit)
{
	char e[6] = { '\\', 'u', json_hex[(unit >> 12) & 0xF], json_hex[(unit >> 8) & 0xF],
		      json_hex[(unit >> 4) & 0xF], json_hex[unit & 0xF] };
	return buf_append(out, e, sizeof(e));
}

/* Bytes that need a look: controls, '"', '\\', '/', DEL and non-ASCII.
 * Everything else is copied in runs. '/' is only special in the standard
 * form; it is in the table for both and passed through raw by default. */
static const uint8_t json_special[256] = {
	[0 ... 0x1F] = 1, ['"'] = 1, ['\\'] = 1, ['/'] = 1, [0x7F ... 0xFF] = 1,
};

static int json_escape_one(struct buf *out, const uint8_t *s, size_t n, enum jw_form form,
			   size_t *used)
{
	uint8_t c = s[0];
	*used = 1;
	switch (c) {
	case '"': return buf_append(out, "\\\"", 2);
	case '\\': return buf_append(out, "\\\\", 2);
	case '\b': return buf_append(out, "\\b", 2);
	case '\t': return buf_append(out, "\\t", 2);
	case '\n': return buf_append(out, "\\n", 2);
	case '\f': return buf_append(out, "\\f", 2);
	case '\r': return buf_append(out, "\\r", 2);
	case '/': return form == JW_STANDARD ? buf_append(out, "\\/", 2) : buf_putc(out, c);
	}
	if (c < 0x20 || c == 0x7F)
		return json_put_u(out, c);

	uint32_t cp;
	size_t len = utf8_decode(s, n, &cp);
	if (len == 0) /* not UTF-8: one replacement character per bad byte */
		return form == JW_STANDARD ? json_put_u(out, 0xFFFD) : buf_append(out, "\xEF\xBF\xBD", 3);
	*used = len;
	if (form == JW_STANDARD) {
		if (cp < 0x10000)
			return json_put_u(out, cp);
		cp -= 0x10000;
		int rc = json_put_u(out, 0xD800 | (cp >> 10));
		return rc ? rc : json_put_u(out, 0xDC00 | (cp & 0x3FF));
	}
	if (cp <= 0x9F || cp == 0x2028 || cp == 0x2029)
		return json_put_u(out, cp);
	return buf_append(out, s, len);
}

int json_escape(struct buf *out, const char *str, size_t n, enum jw_form form)
{
	const uint8_t *s = (const uint8_t *)str;
	size_t start = out->len;
	size_t i = 0;
	int rc = buf_reserve(out, n + 2);
	while (rc == 0 && i < n) {
		size_t run = i;
		while (run < n && !json_special[s[run]])
			run++;
		if (run > i) {
			rc = buf_append(out, s + i, run - i);
			i = run;
			continue;
		}
		size_t used;
		rc = json_escape_one(out, s + i, n - i, form, &used);
		i += used;
	}
	if (rc)
		out->len = start;
	return rc;
}

/* ---- writer ---- */

void jw_init(struct jw *w, struct buf *out, enum jw_form form)
{
	memset(w, 0, sizeof(*w));
	w->out = out;
	w->form = form;
}

static void jw_fail(struct jw *w, int rc)
{
	if (rc && !w->err)
		w->err = rc;
}

/* Separator before a key or a value: nothing after a key, a comma between
 * siblings. Returns false when the writer is already in error. */
static bool jw_sep(struct jw *w)
{
	if (w->err)
		return false;
	if (w->after_key) {
		w->after_key = false;
		return true;
	}
	if (w->depth > 0) {
		if (w->need_comma[w->depth - 1]) {
			int rc = buf_putc(w->out, ',');
			if (rc) {
				jw_fail(w, rc);
				return false;
			}
		}
		w->need_comma[w->depth - 1] = true;
	}
	return true;
}

static void jw_open(struct jw *w, uint8_t c)
{
	if (!jw_sep(w))
		return;
	if (w->depth >= JW_MAX_DEPTH) {
		jw_fail(w, RMQNS_ETOOBIG);
		return;
	}
	jw_fail(w, buf_putc(w->out, c));
	w->need_comma[w->depth++] = false;
}

static void jw_close(struct jw *w, uint8_t c)
{
	if (w->err)
		return;
	if (w->depth == 0 || w->after_key) {
		jw_fail(w, RMQNS_EINVAL);
		return;
	}
	w->depth--;
	jw_fail(w, buf_putc(w->out, c));
}

void jw_obj_begin(struct jw *w) { jw_open(w, '{'); }
void jw_obj_end(struct jw *w) { jw_close(w, '}'); }
void jw_arr_begin(struct jw *w) { jw_open(w, '['); }
void jw_arr_end(struct jw *w) { jw_close(w, ']'); }

static int json_put_quoted(struct buf *out, const char *s, size_t n, enum jw_form form)
{
	int rc = buf_putc(out, '"');
	if (!rc)
		rc = json_escape(out, s, n, form);
	if (!rc)
		rc = buf_putc(out, '"');
	return rc;
}

void jw_key(struct jw *w, const char *name)
{
	if (!jw_sep(w))
		return;
	int rc = json_put_quoted(w->out, name, strlen(name), w->form);
	if (!rc)
		rc = buf_putc(w->out, ':');
	jw_fail(w, rc);
	w->after_key = true;
}

void jw_key_int(struct jw *w, int64_t key)
{
	if (!jw_sep(w))
		return;
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), w->form == JW_STANDARD ? "\"%" PRId64 "\":" : "%" PRId64 ":",
			 key);
	jw_fail(w, buf_append(w->out, tmp, (size_t)n));
	w->after_key = true;
}

void jw_strn(struct jw *w, const char *s, size_t n)
{
	if (!jw_sep(w))
		return;
	jw_fail(w, json_put_quoted(w->out, s, n, w->form));
}

void jw_str(struct jw *w, const char *s)
{
	if (!s)
		jw_null(w);
	else
		jw_strn(w, s, strlen(s));
}

void jw_int(struct jw *w, int64_t v)
{
	if (!jw_sep(w))
		return;
	char tmp[24];
	int n = snprintf(tmp, sizeof(tmp), "%" PRId64, v);
	jw_fail(w, buf_append(w->out, tmp, (size_t)n));
}

void jw_bool(struct jw *w, bool v)
{
	if (jw_sep(w))
		jw_fail(w, v ? buf_append(w->out, "true", 4) : buf_append(w->out, "false", 5));
}

void jw_null(struct jw *w)
{
	if (jw_sep(w))
		jw_fail(w, buf_append(w->out, "null", 4));
}

void jw_raw(struct jw *w, const char *json, size_t n)
{
	if (jw_sep(w))
		jw_fail(w, buf_append(w->out, json, n));
}

/* ---- reader ---- */

/* jansson refuses deeper nesting anyway; the pre-pass stops at the same
 * depth so its container stack is a fixed bitmap. */
#define JSON_PREPASS_MAX_DEPTH 2048

/* Index of the quote closing the string whose opening quote is at i, or
 * len when the text ends inside it. */
static size_t json_skip_string(const uint8_t *t, size_t len, size_t i)
{
	for (i++; i < len; i++) {
		const uint8_t *q = memchr(t + i, '"', len - i);
		if (!q)
			return len;
		size_t j = (size_t)(q - t);
		/* The quote is escaped when an odd number of backslashes precede it. */
		size_t k = j;
		while (k > i && t[k - 1] == '\\')
			k--;
		if (((j - k) & 1) == 0)
			return j;
		i = j;
	}
	return len;
}

/* Copies text to a new buffer with every bare integer key quoted, or
 * returns NULL with *out_len 0 when there is none (the text is used as is).
 * Keys are only looked for where an object expects one, outside strings. */
static int json_quote_bare_keys(const uint8_t *t, size_t len, uint8_t **out, size_t *out_len)
{
	uint8_t is_obj[JSON_PREPASS_MAX_DEPTH / 8];
	size_t depth = 0;
	bool expect_key = false;
	uint8_t *o = NULL;
	size_t olen = 0, copied = 0;

	*out = NULL;
	*out_len = 0;
	for (size_t i = 0; i < len;) {
		uint8_t c = t[i];
		switch (c) {
		case '"':
			i = json_skip_string(t, len, i) + 1;
			expect_key = false;
			continue;
		case ' ': case '\t': case '\n': case '\r':
			i++;
			continue;
		case '{': case '[':
			if (depth == JSON_PREPASS_MAX_DEPTH) {
				free(o);
				return RMQNS_EJSON;
			}
			if (c == '{')
				is_obj[depth / 8] |= (uint8_t)(1u << (depth % 8));
			else
				is_obj[depth / 8] &= (uint8_t)~(1u << (depth % 8));
			depth++;
			expect_key = c == '{';
			i++;
			continue;
		case '}': case ']':
			if (depth > 0)
				depth--;
			expect_key = false;
			i++;
			continue;
		case ',':
			expect_key = depth > 0 && (is_obj[(depth - 1) / 8] >> ((depth - 1) % 8) & 1);
			i++;
			continue;
		}
		if (expect_key && (c == '-' || (c >= '0' && c <= '9'))) {
			size_t j = i + 1;
			while (j < len && t[j] >= '0' && t[j] <= '9')
				j++;
			if (!o) {
				/* Every inserted quote pair needs at least a separator and
				 * a digit of input, so twice the input always suffices. */
				o = malloc(2 * len + 1);
				if (!o)
					return RMQNS_ENOMEM;
			}
			memcpy(o + olen, t + copied, i - copied);
			olen += i - copied;
			o[olen++] = '"';
			memcpy(o + olen, t + i, j - i);
			olen += j - i;
			o[olen++] = '"';
			copied = i = j;
		} else {
			i++;
		}
		expect_key = false;
	}
	if (o) {
		memcpy(o + olen, t + copied, len - copied);
		*out = o;
		*out_len = olen + len - copied;
	}
	return RMQNS_OK;
}

json_t *json_body_parse(const uint8_t *text, size_t len, int *err)
{
	int dummy;
	if (!err)
		err = &dummy;
	if (len > JSON_BODY_MAX_LEN) {
		*err = RMQNS_ETOOBIG;
		return NULL;
	}
	if (!text)
		len = 0;
	uint8_t *quoted = NULL;
	size_t qlen = 0;
	int rc = len ? json_quote_bare_keys(text, len, &quoted, &qlen) : RMQNS_OK;
	if (rc) {
		*err = rc;
		return NULL;
	}
	json_error_t jerr;
	json_t *v = quoted ? json_loadb((const char *)quoted, qlen, 0, &jerr)
			   : json_loadb((const char *)(text ? text : (const uint8_t *)""), len, 0, &jerr);
	free(quoted);
	if (!v) {
		*err = json_error_code(&jerr) == json_error_out_of_memory ? RMQNS_ENOMEM : RMQNS_EJSON;
		return NULL;
	}
	*err = RMQNS_OK;
	return v;
}

/* ---- scalars ---- */

const char *json_scalar_text(const json_t *v, char *tmp, size_t tmp_len)
{
	int n;
	switch (json_typeof(v)) {
	case JSON_STRING:
		return json_string_value(v);
	case JSON_TRUE:
		return "true";
	case JSON_FALSE:
		return "false";
	case JSON_INTEGER:
		n = snprintf(tmp, tmp_len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return n >= 0 && (size_t)n < tmp_len ? tmp : NULL;
	case JSON_REAL: {
		/* The shortest text that reads back as the same double. */
		double d = json_real_value(v);
		for (int prec = 1; prec <= 17; prec++) {
			n = snprintf(tmp, tmp_len, "%.*g", prec, d);
			if (n < 0 || (size_t)n >= tmp_len)
				return NULL;
			if (strtod(tmp, NULL) == d)
				return tmp;
		}
		return tmp;
	}
	default:
		return NULL;
	}
}
