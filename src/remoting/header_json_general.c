/* The JSON header's general path (protocol.md §2.1): every header the
 * fast path in header_json.c leaves, read by the streaming JSON reader.
 * It decides what a header means; the fast path only ever agrees with it
 * (tests/fuzz/fuzz_frame checks that). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/err.h"
#include "rmqns/json_body.h"
#include "rmqns/json_reader.h"
#include "rmqns/remoting.h"
#include "remoting_int.h"

/* Everything the fast path leaves goes through the streaming reader. It
 * reads a header as a whole before judging it: bad JSON anywhere is
 * RMQNS_EJSON whatever came before, and a repeated member or ext key keeps
 * its first position and its last value. */

#define GENERAL_NULL SIZE_MAX

struct general_entry {
	size_t key, val; /* offsets into general_parse.text; val GENERAL_NULL for a null value */
};

enum general_int_member { GENERAL_CODE, GENERAL_FLAG, GENERAL_VERSION, GENERAL_OPAQUE, GENERAL_N_INT };

struct general_parse {
	struct jp j;
	struct buf text; /* NUL-terminated keys and values, back to back */
	struct general_entry *ext;
	size_t n_ext, cap_ext;
	uint32_t *index; /* open addressing: entry number + 1, 0 = free */
	size_t index_cap;
	int32_t num[GENERAL_N_INT];
	int num_rc[GENERAL_N_INT];
	int32_t language;
	int language_rc;
	size_t remark; /* GENERAL_NULL: absent */
	int ext_rc;    /* extFields of the wrong type */
	bool ext_present;
};

static int general_nomem(struct general_parse *g)
{
	if (!g->j.err) {
		g->j.err = RMQNS_ENOMEM;
		g->j.why = "out of memory";
	}
	return g->j.err;
}

/* Appends n bytes and a NUL to the text; *off gets where they start. */
static int general_text(struct general_parse *g, const void *s, size_t n, size_t *off)
{
	*off = g->text.len;
	if (buf_append(&g->text, s, n) || buf_putc(&g->text, 0))
		return general_nomem(g);
	return 0;
}

/* A number's value for code/flag/version/opaque/language: integers must
 * fit in int64 and reals in a double, or the header is not JSON we read. */
static int general_number_value(struct general_parse *g, bool *integral, int64_t *iv, double *dv)
{
	const char *s;
	size_t n;
	if (jp_number(&g->j, &s, &n))
		return g->j.err;
	*integral = !memchr(s, '.', n) && !memchr(s, 'e', n) && !memchr(s, 'E', n);
	char tmp[32];
	if (*integral) {
		bool neg = *s == '-';
		uint64_t acc = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
		for (size_t i = neg; i < n; i++) {
			uint64_t d = (uint64_t)(s[i] - '0');
			if (acc > (limit - d) / 10) {
				g->j.err = RMQNS_EJSON;
				g->j.why = "integer out of range in JSON";
				return g->j.err;
			}
			acc = acc * 10 + d;
		}
		*iv = neg ? (int64_t)(0 - acc) : (int64_t)acc;
		return 0;
	}
	char *copy = n < sizeof(tmp) ? tmp : malloc(n + 1);
	if (!copy)
		return general_nomem(g);
	memcpy(copy, s, n);
	copy[n] = 0;
	*dv = strtod(copy, NULL);
	if (copy != tmp)
		free(copy);
	if (isinf(*dv)) {
		g->j.err = RMQNS_EJSON;
		g->j.why = "number out of range in JSON";
		return g->j.err;
	}
	return 0;
}

/* code, flag, version, opaque: null is 0; an integer, an integral real or
 * decimal text (fastjson converts each) within int32. */
static int general_int_member(struct general_parse *g, enum general_int_member m)
{
	struct jp *j = &g->j;
	int32_t *out = &g->num[m];
	int *rc = &g->num_rc[m];
	*out = 0;
	*rc = RMQNS_OK;
	bool integral;
	int64_t x = 0;
	double d = 0;
	switch (jp_peek(j)) {
	case JP_NULL:
		return jp_null(j);
	case JP_NUMBER:
		if (general_number_value(g, &integral, &x, &d))
			return j->err;
		if (!integral) {
			/* 100.0 and 1e2 are 100; a fraction is refused (Java would
			 * truncate it, but no client writes one). */
			if (!(d >= INT32_MIN && d <= INT32_MAX) || (double)(int32_t)d != d) {
				*rc = RMQNS_EJSON;
				return 0;
			}
			x = (int32_t)d;
		}
		break;
	case JP_STRING: {
		const char *s;
		size_t n;
		if (jp_string(j, &s, &n))
			return j->err;
		const char *digits = (*s == '-' || *s == '+') ? s + 1 : s;
		size_t dn = n - (size_t)(digits - s);
		if (!dn || strspn(digits, "0123456789") != dn || dn > 10) {
			*rc = RMQNS_EJSON;
			return 0;
		}
		x = strtoll(s, NULL, 10);
		break;
	}
	default:
		*rc = RMQNS_EJSON;
		return jp_skip(j);
	}
	if (x < INT32_MIN || x > INT32_MAX)
		*rc = RMQNS_EJSON;
	else
		*out = (int32_t)x;
	return 0;
}

static int general_language(struct general_parse *g)
{
	struct jp *j = &g->j;
	const char *s;
	size_t n;
	bool integral;
	int64_t x = 0;
	double d;
	g->language_rc = RMQNS_OK;
	switch (jp_peek(j)) {
	case JP_NULL:
		g->language = LANG_UNKNOWN;
		return jp_null(j);
	case JP_STRING:
		if (jp_string(j, &s, &n))
			return j->err;
		g->language = remoting_language_parse_n(s, n);
		return 0;
	case JP_NUMBER:
		if (general_number_value(g, &integral, &x, &d))
			return j->err;
		if (!integral)
			g->language_rc = RMQNS_EJSON;
		else if (x < 0 || x > LANG_NODE_JS)
			g->language_rc = RMQNS_EPROTO; /* an ordinal past the enum closes the connection in Java */
		else
			g->language = (int32_t)x;
		return 0;
	default:
		g->language_rc = RMQNS_EJSON;
		return jp_skip(j);
	}
}

static int general_quoted(struct general_parse *g, const char *s, size_t n)
{
	if (buf_putc(&g->text, '"') || json_escape(&g->text, s, n, JW_DEFAULT) || buf_putc(&g->text, '"'))
		return general_nomem(g);
	return 0;
}

/* Appends a value as compact JSON text (strings re-escaped in fastjson's
 * default form, numbers as written). */
static int general_compact(struct general_parse *g)
{
	struct jp *j = &g->j;
	const char *s;
	size_t n;
	int rc;
	bool first = true;
	switch (jp_peek(j)) {
	case JP_OBJECT:
		if (jp_obj_begin(j) || buf_putc(&g->text, '{'))
			return j->err ? j->err : general_nomem(g);
		while ((rc = jp_obj_key(j, &s, &n)) == 1) {
			if ((!first && buf_putc(&g->text, ',')) || general_quoted(g, s, n) ||
			    buf_putc(&g->text, ':'))
				return general_nomem(g);
			first = false;
			if (general_compact(g))
				return j->err;
		}
		return rc ? rc : buf_putc(&g->text, '}') ? general_nomem(g) : 0;
	case JP_ARRAY:
		if (jp_arr_begin(j) || buf_putc(&g->text, '['))
			return j->err ? j->err : general_nomem(g);
		while ((rc = jp_arr_next(j)) == 1) {
			if (!first && buf_putc(&g->text, ','))
				return general_nomem(g);
			first = false;
			if (general_compact(g))
				return j->err;
		}
		return rc ? rc : buf_putc(&g->text, ']') ? general_nomem(g) : 0;
	case JP_STRING:
		return jp_string(j, &s, &n) ? j->err : general_quoted(g, s, n);
	case JP_NUMBER:
		if (jp_number(j, &s, &n))
			return j->err;
		return buf_append(&g->text, s, n) ? general_nomem(g) : 0;
	case JP_TRUE:
	case JP_FALSE: {
		bool v;
		if (jp_bool(j, &v))
			return j->err;
		return buf_append_str(&g->text, v ? "true" : "false") ? general_nomem(g) : 0;
	}
	case JP_NULL:
		return jp_null(j) ? j->err : buf_append_str(&g->text, "null") ? general_nomem(g) : 0;
	default:
		return j->err;
	}
}

/* Text of a remark or ext value: scalars as their text (numbers as
 * written), containers as compact JSON; *off GENERAL_NULL for null. */
static int general_value_text(struct general_parse *g, size_t *off)
{
	struct jp *j = &g->j;
	const char *s;
	size_t n;
	switch (jp_peek(j)) {
	case JP_NULL:
		*off = GENERAL_NULL;
		return jp_null(j);
	case JP_STRING:
		return jp_string(j, &s, &n) ? j->err : general_text(g, s, n, off);
	case JP_NUMBER:
		return jp_number(j, &s, &n) ? j->err : general_text(g, s, n, off);
	case JP_NONE:
		return j->err;
	default:
		*off = g->text.len;
		if (general_compact(g))
			return j->err;
		return buf_putc(&g->text, 0) ? general_nomem(g) : 0;
	}
}

static uint64_t general_hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
	return h;
}

/* The slot holding key (n bytes) or the free slot where it goes. */
static uint32_t *general_slot(struct general_parse *g, const char *key, size_t n)
{
	size_t mask = g->index_cap - 1;
	for (size_t i = general_hash(key, n) & mask;; i = (i + 1) & mask) {
		uint32_t e = g->index[i];
		if (!e)
			return &g->index[i];
		const char *k = (const char *)g->text.data + g->ext[e - 1].key;
		if (strlen(k) == n && memcmp(k, key, n) == 0)
			return &g->index[i];
	}
}

static int general_grow_index(struct general_parse *g)
{
	size_t cap = g->index_cap ? g->index_cap * 2 : 64;
	uint32_t *idx = calloc(cap, sizeof(*idx));
	if (!idx)
		return general_nomem(g);
	free(g->index);
	g->index = idx;
	g->index_cap = cap;
	for (size_t e = 0; e < g->n_ext; e++) {
		const char *k = (const char *)g->text.data + g->ext[e].key;
		*general_slot(g, k, strlen(k)) = (uint32_t)(e + 1);
	}
	return 0;
}

static int general_ext(struct general_parse *g)
{
	struct jp *j = &g->j;
	const char *k;
	size_t kl;
	int rc;
	g->n_ext = 0;
	if (g->index)
		memset(g->index, 0, g->index_cap * sizeof(*g->index));
	if (jp_peek(j) == JP_NULL) {
		g->ext_present = false;
		g->ext_rc = RMQNS_OK;
		return jp_null(j);
	}
	if (jp_peek(j) != JP_OBJECT) {
		g->ext_present = false;
		g->ext_rc = RMQNS_EJSON;
		return jp_skip(j);
	}
	g->ext_present = true;
	g->ext_rc = RMQNS_OK;
	if (jp_obj_begin(j))
		return j->err;
	while ((rc = jp_obj_key(j, &k, &kl)) == 1) {
		if ((g->n_ext + 1) * 2 > g->index_cap && general_grow_index(g))
			return j->err;
		uint32_t *slot = general_slot(g, k, kl);
		size_t val;
		if (*slot) {
			if (general_value_text(g, &val))
				return j->err;
			g->ext[*slot - 1].val = val;
			continue;
		}
		if (g->n_ext == g->cap_ext) {
			size_t cap = g->cap_ext ? g->cap_ext * 2 : 16;
			struct general_entry *e = realloc(g->ext, cap * sizeof(*e));
			if (!e)
				return general_nomem(g);
			g->ext = e;
			g->cap_ext = cap;
		}
		size_t key;
		if (general_text(g, k, kl, &key) || general_value_text(g, &val))
			return j->err;
		g->ext[g->n_ext] = (struct general_entry){ .key = key, .val = val };
		*general_slot(g, (const char *)g->text.data + key, kl) = (uint32_t)++g->n_ext;
	}
	return rc;
}

static int general_members(struct general_parse *g)
{
	struct jp *j = &g->j;
	const char *k;
	size_t kl;
	int rc;
	if (jp_obj_begin(j))
		return j->err;
	while ((rc = jp_obj_key(j, &k, &kl)) == 1) {
		switch (json_header_member_of(k, kl)) {
		case JSON_HEADER_CODE: rc = general_int_member(g, GENERAL_CODE); break;
		case JSON_HEADER_FLAG: rc = general_int_member(g, GENERAL_FLAG); break;
		case JSON_HEADER_VERSION: rc = general_int_member(g, GENERAL_VERSION); break;
		case JSON_HEADER_OPAQUE: rc = general_int_member(g, GENERAL_OPAQUE); break;
		case JSON_HEADER_LANGUAGE: rc = general_language(g); break;
		case JSON_HEADER_REMARK: rc = general_value_text(g, &g->remark); break;
		case JSON_HEADER_EXT: rc = general_ext(g); break;
		case JSON_HEADER_OTHER: rc = jp_skip(j); break;
		}
		if (rc)
			return rc;
	}
	return rc ? rc : jp_end(j);
}

/* The command from what general_members gathered, judged in Java's order. */
static int general_fill(struct general_parse *g, struct remoting_cmd *cmd)
{
	for (int m = 0; m < GENERAL_N_INT; m++)
		if (g->num_rc[m])
			return g->num_rc[m];
	if (g->language_rc)
		return g->language_rc;
	if (g->ext_rc)
		return g->ext_rc;
	size_t count = 0;
	for (size_t i = 0; i < g->n_ext; i++)
		count += g->ext[i].val != GENERAL_NULL; /* a null value is no value */
	if (count > REMOTING_MAX_EXT_FIELDS)
		return RMQNS_ETOOBIG;
	cmd->code = g->num[GENERAL_CODE];
	cmd->flag = g->num[GENERAL_FLAG];
	cmd->version = g->num[GENERAL_VERSION];
	cmd->opaque = g->num[GENERAL_OPAQUE];
	cmd->language = g->language;
	cmd->ext_present = g->ext_present;
	if (g->remark == GENERAL_NULL && count == 0)
		return RMQNS_OK;

	size_t ext_bytes = count * sizeof(struct remoting_ext_field);
	uint8_t *storage = malloc(ext_bytes + g->text.len);
	if (!storage)
		return RMQNS_ENOMEM;
	char *text = (char *)storage + ext_bytes;
	memcpy(text, g->text.data, g->text.len);
	if (g->remark != GENERAL_NULL)
		cmd->remark = text + g->remark;
	struct remoting_ext_field *fields = (struct remoting_ext_field *)storage;
	size_t n = 0;
	for (size_t i = 0; i < g->n_ext; i++) {
		if (g->ext[i].val == GENERAL_NULL)
			continue;
		fields[n].key = text + g->ext[i].key;
		fields[n].value = text + g->ext[i].val;
		n++;
	}
	if (count) {
		cmd->ext = fields;
		cmd->ext_count = (uint32_t)count;
	}
	cmd->storage = storage;
	return RMQNS_OK;
}

int remoting_decode_json_header_general(const uint8_t *hdr, size_t len, struct remoting_cmd *cmd)
{
	struct general_parse g = { .language = LANG_JAVA, .remark = GENERAL_NULL };
	/* JP_MAX_DEPTH: the reader's nesting bound, the same for every JSON taken in */
	jp_init_opts(&g.j, hdr, len, JP_MAX_DEPTH, JP_RFC | JP_NO_BARE_KEYS | JP_NUL_AS_FFFD);
	int rc = jp_peek(&g.j) == JP_OBJECT ? general_members(&g) : RMQNS_EJSON;
	if (g.j.err)
		rc = g.j.err == RMQNS_ENOMEM ? RMQNS_ENOMEM : RMQNS_EJSON;
	if (!rc)
		rc = general_fill(&g, cmd);
	jp_fini(&g.j);
	buf_free(&g.text);
	free(g.ext);
	free(g.index);
	if (rc) {
		free(cmd->storage);
		memset(cmd, 0, sizeof(*cmd));
	}
	return rc;
}
