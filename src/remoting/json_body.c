/* fastjson-compatible JSON bodies (protocol.md §5.1-§5.2): the streaming
 * writer with its two escaping forms. */
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
