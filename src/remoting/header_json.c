/* The JSON header codec (protocol.md §2.1). Decoding runs a hand-written
 * parser for the shapes real peers send and falls back to the general
 * path (header_json_general.c, the streaming JSON reader) for anything
 * else: the fast path need not be complete, only never disagree with the
 * general path on what it does accept (tests/fuzz/fuzz_frame checks
 * that). Encoding writes the exact bytes Java writes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/err.h"
#include "rmqns/json_body.h"
#include "rmqns/json_reader.h"
#include "rmqns/remoting.h"
#include "remoting_int.h"

/* ======================= fast path ======================= */

#define JSON_HEADER_BAIL REMOTING_JSON_BAIL
#define JSON_HEADER_FAST_MAX_EXT 64u

struct jh {
	const uint8_t *p, *end;
	char *strs;      /* next free byte of the string area */
	char *strs_end;
};

static inline void json_header_ws(struct jh *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
		j->p++;
}

static inline int json_header_hex(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static bool json_header_hex4(const uint8_t *p, const uint8_t *end, uint32_t *u)
{
	if (end - p < 4)
		return false;
	uint32_t v = 0;
	for (int i = 0; i < 4; i++) {
		int h = json_header_hex(p[i]);
		if (h < 0)
			return false;
		v = (v << 4) | (uint32_t)h;
	}
	*u = v;
	return true;
}

static size_t json_header_utf8_put(uint32_t u, char *o)
{
	if (u < 0x80) {
		o[0] = (char)u;
		return 1;
	}
	if (u < 0x800) {
		o[0] = (char)(0xC0 | (u >> 6));
		o[1] = (char)(0x80 | (u & 0x3F));
		return 2;
	}
	if (u < 0x10000) {
		o[0] = (char)(0xE0 | (u >> 12));
		o[1] = (char)(0x80 | ((u >> 6) & 0x3F));
		o[2] = (char)(0x80 | (u & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | (u >> 18));
	o[1] = (char)(0x80 | ((u >> 12) & 0x3F));
	o[2] = (char)(0x80 | ((u >> 6) & 0x3F));
	o[3] = (char)(0x80 | (u & 0x3F));
	return 4;
}

/* Bytes a JSON string may hold as they are: printable ASCII but '"' and '\\'. */
static const bool json_header_plain[256] = {
	[0x20 ... 0x21] = true, [0x23 ... 0x5B] = true, [0x5D ... 0x7F] = true,
};

/* Whether any of the 8 bytes at p is '"', '\\', a control or non-ASCII:
 * the usual has-zero-byte and has-less-than word tricks, exact for the
 * question "is there any". */
static inline bool json_header_word_special(const uint8_t *p)
{
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
	uint64_t w;
	memcpy(&w, p, 8);
	uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
	uint64_t hit = ((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w) | w;
	return (hit & highs) != 0;
}

/* The string area holds at most as many bytes as the header has consumed so
 * far (an escaped or quoted token never grows when decoded, and a number's
 * NUL is paid for by the key before it). Checked at each token anyway so a
 * mistake in that reasoning costs a fallback, not an overflow. */
static inline bool json_header_room(const struct jh *j)
{
	return (size_t)(j->strs_end - j->strs) >= (size_t)(j->end - j->p) + 1;
}

/* Decodes the string starting at the quote at j->p into the string area
 * without claiming the space, NUL-terminated. Returns its length, or -1 for
 * anything to leave to the general path (including what it rejects). */
/* Aligned, as is the decoder's entry point: where the linker happened to
 * place these loops moved the header decode time by 5% between builds
 * whose code for them was identical. */
__attribute__((aligned(64))) static ptrdiff_t json_header_string(struct jh *j)
{
	if (!json_header_room(j))
		return -1;
	const uint8_t *p = j->p + 1, *end = j->end;
	char *o = j->strs;
	for (;;) {
		/* Copy the run of plain ASCII in one go, finding its end eight
		 * bytes at a time. */
		const uint8_t *run = p;
		while (end - p >= 8 && !json_header_word_special(p))
			p += 8;
		while (p < end && json_header_plain[*p])
			p++;
		memcpy(o, run, (size_t)(p - run));
		o += p - run;
		if (p >= end)
			return -1;
		uint8_t c = *p;
		if (c == '"')
			break;
		if (c < 0x20)
			return -1;
		if (c >= 0x80) {
			uint32_t cp;
			size_t n = utf8_decode(p, (size_t)(end - p), &cp);
			if (!n)
				return -1;
			memcpy(o, p, n);
			o += n;
			p += n;
			continue;
		}
		if (end - p < 2)
			return -1;
		switch (p[1]) {
		case '"': *o++ = '"'; p += 2; continue;
		case '\\': *o++ = '\\'; p += 2; continue;
		case '/': *o++ = '/'; p += 2; continue;
		case 'b': *o++ = '\b'; p += 2; continue;
		case 'f': *o++ = '\f'; p += 2; continue;
		case 'n': *o++ = '\n'; p += 2; continue;
		case 'r': *o++ = '\r'; p += 2; continue;
		case 't': *o++ = '\t'; p += 2; continue;
		case 'u': break;
		default: return -1;
		}
		uint32_t u, lo;
		if (!json_header_hex4(p + 2, end, &u))
			return -1;
		p += 6;
		if (u >= 0xD800 && u <= 0xDBFF && end - p >= 6 && p[0] == '\\' && p[1] == 'u' &&
		    json_header_hex4(p + 2, end, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
			u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
			p += 6;
		} else if (u == 0 || (u >= 0xD800 && u <= 0xDFFF)) {
			/* U+0000 cannot live in a C string and a lone surrogate
			 * is not UTF-8: both read as U+FFFD (remoting.h). */
			u = 0xFFFD;
		}
		o += json_header_utf8_put(u, o);
	}
	j->p = p + 1;
	*o = 0;
	return o - j->strs;
}


/* A JSON integer within int64, limited to 18 digits so it cannot
 * overflow; fractions and exponents are left to the general path. */
static bool json_header_int(struct jh *j, int64_t *v)
{
	const uint8_t *p = j->p, *end = j->end;
	bool neg = false;
	if (p < end && *p == '-') {
		neg = true;
		p++;
	}
	const uint8_t *digits = p;
	int64_t x = 0;
	while (p < end && *p >= '0' && *p <= '9') {
		if (p - digits == 18)
			return false;
		x = x * 10 + (*p - '0');
		p++;
	}
	if (p == digits || (*digits == '0' && p - digits > 1))
		return false;
	if (p < end && (*p == '.' || *p == 'e' || *p == 'E'))
		return false;
	j->p = p;
	*v = neg ? -x : x;
	return true;
}

/* code, flag, version, opaque: an integer, or an integral decimal such as
 * 100.0 (fastjson converts it), within int32. Anything else (exponents,
 * other fractions, too many digits) is left to the general path, which
 * takes integral reals and refuses the rest. */
static inline bool json_header_int32(struct jh *j, int32_t *out)
{
	const uint8_t *p = j->p, *end = j->end;
	bool neg = p < end && *p == '-';
	p += neg;
	const uint8_t *digits = p;
	int64_t x = 0;
	while (p < end && *p >= '0' && *p <= '9') {
		if (p - digits == 10)
			return false;
		x = x * 10 + (*p++ - '0');
	}
	if (p == digits || (*digits == '0' && p - digits > 1))
		return false;
	if (p < end && *p == '.') {
		const uint8_t *f = ++p;
		while (p < end && *p == '0')
			p++;
		if (p == f || (p < end && *p >= '1' && *p <= '9'))
			return false;
	}
	if (p < end && (*p == 'e' || *p == 'E'))
		return false;
	if (neg)
		x = -x;
	if (x < INT32_MIN || x > INT32_MAX)
		return false;
	j->p = p;
	*out = (int32_t)x;
	return true;
}

static bool json_header_lit(struct jh *j, const char *lit, size_t n)
{
	if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n) != 0)
		return false;
	j->p += n;
	return true;
}

/* Copies a scalar ext value's text into the string area and claims it. */
static inline const char *json_header_ext_value(struct jh *j)
{
	char *s = j->strs;
	uint8_t c = *j->p;
	if (c == '"') {
		ptrdiff_t n = json_header_string(j);
		if (n < 0)
			return NULL;
		j->strs += n + 1;
		return s;
	}
	if (!json_header_room(j))
		return NULL;
	const uint8_t *start = j->p;
	if (c == '-' || (c >= '0' && c <= '9')) {
		/* A number keeps the text the client wrote, digit for digit:
		 * fastjson hands a String field an integer's own text, and a
		 * JavaScript client's 12345678901234567000 must not be cut to
		 * int64 or rewritten as a double. */
		size_t len = json_number_len(start, j->end);
		if (!len)
			return NULL;
		j->p += len;
	} else if (!json_header_lit(j, "true", 4) && !json_header_lit(j, "false", 5)) {
		return NULL;
	}
	size_t n = (size_t)(j->p - start);
	memcpy(s, start, n);
	s[n] = 0;
	j->strs += n + 1;
	return s;
}

static int json_header_ext(struct jh *j, struct remoting_ext_field *ext, uint32_t slots, uint32_t *count)
{
	uint32_t keylen[JSON_HEADER_FAST_MAX_EXT];
	uint32_t n = 0;
	j->p++; /* '{' */
	json_header_ws(j);
	if (j->p < j->end && *j->p == '}') {
		j->p++;
		*count = 0;
		return 0;
	}
	for (;;) {
		if (j->p >= j->end || *j->p != '"' || n == slots)
			return JSON_HEADER_BAIL;
		char *key = j->strs;
		ptrdiff_t kl = json_header_string(j);
		if (kl < 0)
			return JSON_HEADER_BAIL;
		/* a repeated key keeps its first position and its last value;
		 * rather than mimic that here, let the general path decide. */
		for (uint32_t i = 0; i < n; i++)
			if (keylen[i] == (uint32_t)kl && memcmp(ext[i].key, key, (size_t)kl) == 0)
				return JSON_HEADER_BAIL;
		j->strs += kl + 1;
		json_header_ws(j);
		if (j->p >= j->end || *j->p != ':')
			return JSON_HEADER_BAIL;
		j->p++;
		json_header_ws(j);
		if (j->p >= j->end)
			return JSON_HEADER_BAIL;
		const char *val = json_header_ext_value(j);
		if (!val)
			return JSON_HEADER_BAIL;
		ext[n].key = key;
		ext[n].value = val;
		keylen[n++] = (uint32_t)kl;
		json_header_ws(j);
		if (j->p >= j->end)
			return JSON_HEADER_BAIL;
		if (*j->p == '}') {
			j->p++;
			*count = n;
			return 0;
		}
		if (*j->p != ',')
			return JSON_HEADER_BAIL;
		j->p++;
		json_header_ws(j);
	}
}

/* Skips the value of a member we ignore; only scalars stay on this path. */
static bool json_header_skip_value(struct jh *j)
{
	uint8_t c = *j->p;
	if (c == '"')
		return json_header_string(j) >= 0;
	if (c == '-' || (c >= '0' && c <= '9')) {
		size_t len = json_number_len(j->p, j->end);
		j->p += len;
		return len > 0;
	}
	return json_header_lit(j, "true", 4) || json_header_lit(j, "false", 5) || json_header_lit(j, "null", 4);
}

static int json_header_member_value(struct jh *j, enum json_header_member m, struct remoting_cmd *cmd,
			   struct remoting_ext_field *ext, uint32_t slots)
{
	uint8_t c = *j->p;
	switch (m) {
	case JSON_HEADER_CODE: return json_header_int32(j, &cmd->code) ? 0 : JSON_HEADER_BAIL;
	case JSON_HEADER_FLAG: return json_header_int32(j, &cmd->flag) ? 0 : JSON_HEADER_BAIL;
	case JSON_HEADER_VERSION: return json_header_int32(j, &cmd->version) ? 0 : JSON_HEADER_BAIL;
	case JSON_HEADER_OPAQUE: return json_header_int32(j, &cmd->opaque) ? 0 : JSON_HEADER_BAIL;
	case JSON_HEADER_LANGUAGE:
		if (c == '"') {
			ptrdiff_t n = json_header_string(j);
			if (n < 0)
				return JSON_HEADER_BAIL;
			cmd->language = remoting_language_parse_n(j->strs, (size_t)n);
			return 0;
		}
		/* an ordinal is an integer; the general path judges the rest */
		int64_t ord;
		if (!json_header_int(j, &ord) || ord < 0 || ord > LANG_NODE_JS)
			return JSON_HEADER_BAIL;
		cmd->language = (int32_t)ord;
		return 0;
	case JSON_HEADER_REMARK:
		if (json_header_lit(j, "null", 4))
			return 0;
		/* a scalar remark is its text, as for an ext value */
		return (cmd->remark = json_header_ext_value(j)) ? 0 : JSON_HEADER_BAIL;
	case JSON_HEADER_EXT:
		if (c != '{')
			return json_header_lit(j, "null", 4) ? 0 : JSON_HEADER_BAIL;
		cmd->ext_present = true;
		cmd->ext = ext;
		return json_header_ext(j, ext, slots, &cmd->ext_count);
	case JSON_HEADER_OTHER:
		return json_header_skip_value(j) ? 0 : JSON_HEADER_BAIL;
	}
	return JSON_HEADER_BAIL;
}

static int json_header_fast_decode(const uint8_t *hdr, size_t len, struct remoting_cmd *cmd)
{
	uint32_t slots = len / 4 + 1 < JSON_HEADER_FAST_MAX_EXT ? (uint32_t)(len / 4 + 1) : JSON_HEADER_FAST_MAX_EXT;
	size_t ext_bytes = (size_t)slots * sizeof(struct remoting_ext_field);
	uint8_t *storage = malloc(ext_bytes + len + 1);
	if (!storage)
		return RMQNS_ENOMEM;
	struct remoting_ext_field *ext = (struct remoting_ext_field *)storage;
	struct jh j = {
		.p = hdr, .end = hdr + len,
		.strs = (char *)storage + ext_bytes, .strs_end = (char *)storage + ext_bytes + len + 1,
	};
	unsigned seen = 0;

	json_header_ws(&j);
	if (j.p >= j.end || *j.p != '{')
		goto bail;
	j.p++;
	json_header_ws(&j);
	if (j.p < j.end && *j.p == '}') {
		j.p++;
		goto done;
	}
	for (;;) {
		if (j.p >= j.end || *j.p != '"')
			goto bail;
		ptrdiff_t kl = json_header_string(&j);
		if (kl < 0)
			goto bail;
		enum json_header_member m = json_header_member_of(j.strs, (size_t)kl);
		if (m & seen)
			goto bail; /* repeated member: the general path's last-wins rule decides */
		seen |= m;
		json_header_ws(&j);
		if (j.p >= j.end || *j.p != ':')
			goto bail;
		j.p++;
		json_header_ws(&j);
		if (j.p >= j.end || json_header_member_value(&j, m, cmd, ext, slots))
			goto bail;
		json_header_ws(&j);
		if (j.p >= j.end)
			goto bail;
		if (*j.p == '}') {
			j.p++;
			break;
		}
		if (*j.p != ',')
			goto bail;
		j.p++;
		json_header_ws(&j);
	}
done:
	json_header_ws(&j);
	if (j.p != j.end)
		goto bail;
	if (cmd->ext_count == 0)
		cmd->ext = NULL;
	if (!cmd->remark && cmd->ext_count == 0) {
		free(storage);
		storage = NULL;
	}
	cmd->storage = storage;
	return RMQNS_OK;
bail:
	free(storage);
	memset(cmd, 0, sizeof(*cmd));
	return JSON_HEADER_BAIL;
}

int remoting_decode_json_header_fast(const uint8_t *hdr, size_t len, struct remoting_cmd *cmd)
{
	return json_header_fast_decode(hdr, len, cmd);
}

__attribute__((aligned(64))) int remoting_decode_json_header(const uint8_t *hdr, size_t len, struct remoting_cmd *cmd)
{
	int rc = json_header_fast_decode(hdr, len, cmd);
	if (rc != JSON_HEADER_BAIL)
		return rc;
	return remoting_decode_json_header_general(hdr, len, cmd);
}

/* ======================= encoding ======================= */

static size_t json_header_fmt_int(char *out, int32_t v)
{
	char tmp[12];
	size_t n = 0;
	uint32_t u = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	size_t k = 0;
	if (v < 0)
		out[k++] = '-';
	while (n)
		out[k++] = tmp[--n];
	return k;
}

static int json_header_put_member_int(struct buf *out, const char *prefix, size_t plen, int32_t v)
{
	int rc = buf_reserve(out, plen + 11);
	if (rc)
		return rc;
	memcpy(out->data + out->len, prefix, plen);
	out->len += plen;
	out->len += json_header_fmt_int((char *)out->data + out->len, v);
	return RMQNS_OK;
}

static int json_header_put_string(struct buf *out, const char *s)
{
	size_t n = strlen(s);
	int rc = buf_reserve(out, n + 2);
	if (rc)
		return rc;
	out->data[out->len++] = '"';
	/* Most keys and values need no escaping: copy them straight. */
	size_t i = 0;
	while (i < n && json_header_plain[(uint8_t)s[i]] && s[i] != 0x7F)
		i++;
	if (i == n) {
		memcpy(out->data + out->len, s, n);
		out->len += n;
	} else if ((rc = json_escape(out, s, n, JW_DEFAULT))) {
		return rc;
	}
	return buf_putc(out, '"');
}

#define JSON_HEADER_LIT(s) s, sizeof(s) - 1

static int json_header_encode(const struct remoting_cmd *cmd, struct buf *out)
{
	int rc;
	if ((rc = json_header_put_member_int(out, JSON_HEADER_LIT("{\"code\":"), cmd->code)))
		return rc;
	if (cmd->ext_present || cmd->ext_count > 0) {
		if ((rc = buf_append(out, JSON_HEADER_LIT(",\"extFields\":{"))))
			return rc;
		bool first = true;
		for (uint32_t i = 0; i < cmd->ext_count; i++) {
			const struct remoting_ext_field *f = &cmd->ext[i];
			if (!f->key || !f->value)
				continue;
			if ((!first && (rc = buf_putc(out, ','))) ||
			    (rc = json_header_put_string(out, f->key)) ||
			    (rc = buf_putc(out, ':')) ||
			    (rc = json_header_put_string(out, f->value)))
				return rc;
			first = false;
		}
		if ((rc = buf_putc(out, '}')))
			return rc;
	}
	if ((rc = json_header_put_member_int(out, JSON_HEADER_LIT(",\"flag\":"), cmd->flag)) ||
	    (rc = buf_append(out, JSON_HEADER_LIT(",\"language\":\""))) ||
	    (rc = buf_append_str(out, remoting_language_name(cmd->language))) ||
	    (rc = json_header_put_member_int(out, JSON_HEADER_LIT("\",\"opaque\":"), cmd->opaque)))
		return rc;
	if (cmd->remark &&
	    ((rc = buf_append(out, JSON_HEADER_LIT(",\"remark\":"))) || (rc = json_header_put_string(out, cmd->remark))))
		return rc;
	if ((rc = buf_append(out, JSON_HEADER_LIT(",\"serializeTypeCurrentRPC\":\""))) ||
	    (rc = buf_append_str(out, cmd->serialize == REMOTING_ROCKETMQ ? "ROCKETMQ" : "JSON")) ||
	    (rc = json_header_put_member_int(out, JSON_HEADER_LIT("\",\"version\":"), cmd->version)) ||
	    (rc = buf_putc(out, '}')))
		return rc;
	return RMQNS_OK;
}

int remoting_encode_json_header(const struct remoting_cmd *cmd, struct buf *out)
{
	size_t start = out->len;
	int rc = buf_reserve(out, 160);
	if (!rc)
		rc = json_header_encode(cmd, out);
	if (rc)
		out->len = start;
	return rc;
}
