/* Java properties text, read as java.util.Properties.load reads it and
 * written as the Java NameServer writes its config. Owns the property set
 * (sorted, one entry per key); knows nothing of what the keys mean. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rmqns/durable.h"
#include "rmqns/err.h"
#include "rmqns/properties.h"
#include "rmqns/utf8.h"

/* Largest properties file read at start; config files are a few KiB. */
#define PROPERTIES_MAX_FILE (16u << 20)

/* ---- character decoding ---- */

static int put_utf8(struct buf *b, uint32_t cp)
{
	uint8_t u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (uint8_t)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (uint8_t)(0xC0 | (cp >> 6));
		u[1] = (uint8_t)(0x80 | (cp & 0x3F));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (uint8_t)(0xE0 | (cp >> 12));
		u[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
		u[2] = (uint8_t)(0x80 | (cp & 0x3F));
		n = 3;
	} else {
		u[0] = (uint8_t)(0xF0 | (cp >> 18));
		u[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
		u[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
		u[3] = (uint8_t)(0x80 | (cp & 0x3F));
		n = 4;
	}
	return buf_append(b, u, n);
}

/* Turns the input into valid UTF-8: invalid bytes become U+FFFD (UTF8),
 * or the whole text is taken byte for character (FILE, not UTF-8). */
static int text_normalize(const uint8_t *s, size_t n, enum properties_charset cs, struct buf *out)
{
	bool latin1 = cs == PROPERTIES_FILE && !utf8_valid(s, n);

	if (buf_reserve(out, n + 1) < 0)
		return RMQNS_ENOMEM;
	for (size_t i = 0; i < n;) {
		size_t l = latin1 ? (s[i] < 0x80) : utf8_seq_len(s + i, n - i);
		int rc;

		if (l > 0) {
			rc = buf_append(out, s + i, l);
			i += l;
		} else {
			rc = put_utf8(out, latin1 ? s[i] : 0xFFFD);
			i++;
		}
		if (rc < 0)
			return RMQNS_ENOMEM;
	}
	return RMQNS_OK;
}

/* ---- the property set ---- */

static ssize_t props_find(const struct properties *p, const char *key, bool *found)
{
	size_t lo = 0, hi = p->count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(p->items[mid].key, key);
		if (c == 0) {
			*found = true;
			return (ssize_t)mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return (ssize_t)lo;
}

const char *properties_get(const struct properties *p, const char *key)
{
	bool found;
	ssize_t i = props_find(p, key, &found);

	return found ? p->items[i].value : NULL;
}

bool properties_has(const struct properties *p, const char *key)
{
	return properties_get(p, key) != NULL;
}

bool properties_list_names(const char *list, const char *key)
{
	size_t len = strlen(key);

	for (const char *p = list; p && *p && len;) {
		const char *end = strchr(p, ';');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		while (n && (*p == ' ' || *p == '\t'))
			p++, n--;
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n == len && memcmp(p, key, len) == 0)
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

/* Takes ownership of key and value (frees them on failure). */
static int props_put_owned(struct properties *p, char *key, char *value)
{
	bool found;
	size_t i = (size_t)props_find(p, key, &found);

	if (found) {
		free(key);
		free(p->items[i].value);
		p->items[i].value = value;
		return RMQNS_OK;
	}
	if (p->count == p->cap) {
		size_t ncap = p->cap ? p->cap * 2 : 16;
		struct property *n = realloc(p->items, ncap * sizeof(*n));
		if (!n) {
			free(key);
			free(value);
			return RMQNS_ENOMEM;
		}
		p->items = n;
		p->cap = ncap;
	}
	memmove(p->items + i + 1, p->items + i, (p->count - i) * sizeof(*p->items));
	p->items[i].key = key;
	p->items[i].value = value;
	p->count++;
	return RMQNS_OK;
}

int properties_set(struct properties *p, const char *key, const char *value)
{
	char *k = strdup(key);
	char *v = strdup(value);

	if (!k || !v) {
		free(k);
		free(v);
		return RMQNS_ENOMEM;
	}
	return props_put_owned(p, k, v);
}

void properties_remove(struct properties *p, const char *key)
{
	bool found;
	size_t i = (size_t)props_find(p, key, &found);

	if (!found)
		return;
	free(p->items[i].key);
	free(p->items[i].value);
	memmove(p->items + i, p->items + i + 1, (p->count - i - 1) * sizeof(*p->items));
	p->count--;
}

int properties_copy(struct properties *dst, const struct properties *src)
{
	if (src->count == 0)
		return RMQNS_OK;
	dst->items = calloc(src->count, sizeof(*dst->items));
	if (!dst->items)
		return RMQNS_ENOMEM;
	dst->cap = src->count;
	for (size_t i = 0; i < src->count; i++) {
		dst->items[i].key = strdup(src->items[i].key);
		dst->items[i].value = strdup(src->items[i].value);
		dst->count++;
		if (!dst->items[i].key || !dst->items[i].value) {
			properties_free(dst);
			return RMQNS_ENOMEM;
		}
	}
	return RMQNS_OK;
}

void properties_free(struct properties *p)
{
	for (size_t i = 0; i < p->count; i++) {
		free(p->items[i].key);
		free(p->items[i].value);
	}
	free(p->items);
	p->items = NULL;
	p->count = p->cap = 0;
}

/* ---- reading ---- */

struct line_reader {
	const char *s;
	size_t n;
	size_t pos;
	size_t line_no;    /* physical lines consumed so far */
	size_t start_line; /* 1-based line where the last logical line began */
};

static bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\f';
}

/* The next logical line (comments and blank lines skipped, continuations
 * joined, the leading whitespace of each physical line dropped), into
 * `line`. Returns false at the end of the text. */
static bool reader_next(struct line_reader *r, struct buf *line, int *err)
{
	bool skip_ws = true, is_comment = false, at_start = true;
	bool appended = false, backslash = false, skip_lf = false;

	line->len = 0;
	r->start_line = r->line_no + 1;
	for (;;) {
		char c;

		if (r->pos >= r->n) {
			if (line->len == 0 || is_comment)
				return false;
			if (backslash)
				line->len--; /* a lone backslash at the very end is dropped */
			return true;
		}
		c = r->s[r->pos++];
		if (skip_lf) {
			skip_lf = false;
			if (c == '\n')
				continue;
		}
		if (skip_ws) {
			if (is_ws(c))
				continue;
			if (!appended && (c == '\r' || c == '\n')) {
				r->line_no++;
				if (c == '\r')
					skip_lf = true;
				r->start_line = r->line_no + 1;
				continue;
			}
			skip_ws = false;
			appended = false;
		}
		if (at_start) {
			at_start = false;
			if (c == '#' || c == '!') {
				is_comment = true;
				continue;
			}
		}
		if (c != '\n' && c != '\r') {
			if (!is_comment) {
				if (buf_putc(line, (uint8_t)c) < 0) {
					*err = RMQNS_ENOMEM;
					return false;
				}
				backslash = c == '\\' ? !backslash : false;
			}
			continue;
		}
		r->line_no++;
		if (c == '\r')
			skip_lf = true;
		if (is_comment || line->len == 0) {
			is_comment = false;
			at_start = true;
			skip_ws = true;
			backslash = false;
			line->len = 0;
			r->start_line = r->line_no + 1;
			continue;
		}
		if (backslash) {
			line->len--;
			skip_ws = true;
			appended = true;
			backslash = false;
			continue;
		}
		return true;
	}
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Resolves escapes of s[0..n) into a new NUL-terminated string. \uXXXX
 * yields UTF-16 units; a surrogate pair becomes one character and a lone
 * surrogate becomes '?', as Java's UTF-8 encoder writes it. */
static int unescape(const char *s, size_t n, char **out)
{
	struct buf b = BUF_INIT;
	uint32_t high = 0; /* pending high surrogate */
	int rc = RMQNS_OK;

	if (buf_reserve(&b, n + 1) < 0)
		return RMQNS_ENOMEM;
	for (size_t i = 0; i < n && rc == RMQNS_OK;) {
		char c = s[i++];
		uint32_t unit;

		if (c != '\\' || i >= n) {
			if (c == '\\')
				break; /* a trailing lone backslash means nothing */
			if (high) {
				rc = buf_putc(&b, '?');
				high = 0;
			}
			if (rc == RMQNS_OK)
				rc = buf_putc(&b, (uint8_t)c);
			continue;
		}
		c = s[i++];
		if (c != 'u') {
			char r = c == 't' ? '\t' : c == 'n' ? '\n' : c == 'r' ? '\r' : c == 'f' ? '\f' : c;
			if (high) {
				rc = buf_putc(&b, '?');
				high = 0;
			}
			if (rc == RMQNS_OK)
				rc = buf_putc(&b, (uint8_t)r);
			continue;
		}
		if (n - i < 4) {
			rc = RMQNS_EINVAL;
			break;
		}
		unit = 0;
		for (int k = 0; k < 4; k++) {
			int h = hexval(s[i + (size_t)k]);
			if (h < 0) {
				rc = RMQNS_EINVAL;
				break;
			}
			unit = (unit << 4) | (uint32_t)h;
		}
		if (rc != RMQNS_OK)
			break;
		i += 4;
		if (unit == 0) {
			rc = RMQNS_EINVAL; /* a NUL cannot live in a C string */
			break;
		}
		if (unit >= 0xDC00 && unit <= 0xDFFF && high) {
			rc = put_utf8(&b, 0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00));
			high = 0;
			continue;
		}
		if (high) {
			rc = buf_putc(&b, '?');
			high = 0;
			if (rc < 0)
				break;
		}
		if (unit >= 0xD800 && unit <= 0xDBFF)
			high = unit;
		else if (unit >= 0xDC00 && unit <= 0xDFFF)
			rc = buf_putc(&b, '?');
		else
			rc = put_utf8(&b, unit);
	}
	if (rc == RMQNS_OK && high)
		rc = buf_putc(&b, '?');
	if (rc == RMQNS_OK)
		rc = buf_terminate(&b);
	if (rc != RMQNS_OK) {
		buf_free(&b);
		return rc < 0 ? rc : RMQNS_ENOMEM;
	}
	*out = (char *)b.data;
	return RMQNS_OK;
}

/* Splits a logical line into key and value the way Properties.load does:
 * the key ends at the first unescaped '=', ':' or whitespace; then
 * whitespace and at most one '=' or ':' are skipped. */
static int line_split(const char *s, size_t n, char **key, char **value)
{
	size_t klen = 0, vstart = n;
	bool backslash = false, has_sep = false;
	int rc;

	while (klen < n) {
		char c = s[klen];
		if ((c == '=' || c == ':') && !backslash) {
			vstart = klen + 1;
			has_sep = true;
			break;
		}
		if (is_ws(c) && !backslash) {
			vstart = klen + 1;
			break;
		}
		backslash = c == '\\' ? !backslash : false;
		klen++;
	}
	while (vstart < n) {
		char c = s[vstart];
		if (!is_ws(c)) {
			if (!has_sep && (c == '=' || c == ':'))
				has_sep = true;
			else
				break;
		}
		vstart++;
	}
	rc = unescape(s, klen, key);
	if (rc < 0)
		return rc;
	rc = unescape(s + vstart, n - vstart, value);
	if (rc < 0) {
		free(*key);
		*key = NULL;
	}
	return rc;
}

int properties_parse(struct properties *p, const char *text, size_t len,
		     enum properties_charset cs, size_t *bad_line)
{
	struct buf norm = BUF_INIT, line = BUF_INIT;
	struct properties parsed = PROPERTIES_INIT;
	struct line_reader r;
	int rc;

	rc = text_normalize((const uint8_t *)text, len, cs, &norm);
	if (rc < 0)
		goto out;
	if (memchr(norm.data, 0, norm.len)) {
		/* A raw NUL: find its line for the message. */
		const char *z = memchr(norm.data, 0, norm.len);
		size_t ln = 1;
		for (const char *q = (const char *)norm.data; q < z; q++)
			ln += *q == '\n';
		if (bad_line)
			*bad_line = ln;
		rc = RMQNS_EINVAL;
		goto out;
	}
	r = (struct line_reader){ .s = (const char *)norm.data, .n = norm.len };
	/* Parse into a separate set first: a bad line merges nothing. */
	for (;;) {
		char *key = NULL, *value = NULL;
		int rerr = RMQNS_OK;

		if (!reader_next(&r, &line, &rerr)) {
			rc = rerr;
			break;
		}
		rc = line_split((const char *)line.data, line.len, &key, &value);
		if (rc < 0) {
			if (bad_line)
				*bad_line = r.start_line;
			break;
		}
		rc = props_put_owned(&parsed, key, value);
		if (rc < 0)
			break;
	}
	if (rc == RMQNS_OK) {
		for (size_t i = 0; i < parsed.count && rc == RMQNS_OK; i++) {
			rc = props_put_owned(p, parsed.items[i].key, parsed.items[i].value);
			parsed.items[i].key = parsed.items[i].value = NULL;
		}
		free(parsed.items);
		parsed = (struct properties)PROPERTIES_INIT;
	}
out:
	properties_free(&parsed);
	buf_free(&norm);
	buf_free(&line);
	return rc;
}

int properties_load_file(struct properties *p, const char *path, char *err, size_t errlen)
{
	struct buf text = BUF_INIT;
	size_t bad_line = 0;
	int rc = durable_read(path, PROPERTIES_MAX_FILE, &text, err, errlen);

	if (rc == RMQNS_ENOTFOUND)
		rc = RMQNS_EIO; /* a -c file that is missing is an I/O error here */
	if (rc == RMQNS_OK) {
		rc = properties_parse(p, (const char *)text.data, text.len, PROPERTIES_FILE, &bad_line);
		if (rc == RMQNS_EINVAL)
			snprintf(err, errlen, "%s:%zu: malformed \\uxxxx escape or NUL character", path,
				 bad_line);
		else if (rc < 0)
			snprintf(err, errlen, "out of memory parsing %s", path);
	}
	buf_free(&text);
	return rc;
}

/* ---- writing ---- */

static int format_str(struct buf *out, const char *s, bool is_key)
{
	static const char hex[] = "0123456789ABCDEF";
	int rc = RMQNS_OK;

	for (size_t i = 0; s[i] && rc == RMQNS_OK; i++) {
		unsigned char c = (unsigned char)s[i];

		switch (c) {
		case '\\': rc = buf_append(out, "\\\\", 2); break;
		case '\t': rc = buf_append(out, "\\t", 2); break;
		case '\n': rc = buf_append(out, "\\n", 2); break;
		case '\r': rc = buf_append(out, "\\r", 2); break;
		case '\f': rc = buf_append(out, "\\f", 2); break;
		case ' ':
			/* in a key a space ends it; at the start of a value it
			 * would be skipped */
			rc = (is_key || i == 0) ? buf_append(out, "\\ ", 2) : buf_putc(out, c);
			break;
		case '=':
		case ':':
			rc = is_key ? buf_putc(out, '\\') : RMQNS_OK;
			if (rc == RMQNS_OK)
				rc = buf_putc(out, c);
			break;
		case '#':
		case '!':
			rc = (is_key && i == 0) ? buf_putc(out, '\\') : RMQNS_OK;
			if (rc == RMQNS_OK)
				rc = buf_putc(out, c);
			break;
		default:
			if (c < 0x20 || c == 0x7F) {
				char u[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
				rc = buf_append(out, u, sizeof(u));
			} else {
				rc = buf_putc(out, c);
			}
		}
	}
	return rc;
}

int properties_format(const struct properties *p, struct buf *out)
{
	size_t keep = out->len;

	for (size_t i = 0; i < p->count; i++) {
		if (format_str(out, p->items[i].key, true) < 0 || buf_putc(out, '=') < 0 ||
		    format_str(out, p->items[i].value, false) < 0 || buf_putc(out, '\n') < 0) {
			out->len = keep;
			return RMQNS_ENOMEM;
		}
	}
	return RMQNS_OK;
}
