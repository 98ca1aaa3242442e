/* The compressed layout of a REGISTER_BROKER body (protocol.md §5.5,
 * regbody_zlib.h): a zlib stream of length-prefixed items, inflated and
 * read in one pass through a window, never whole, within the cap. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "regbody_zlib.h"
#include "rmqns/buf.h"
#include "rmqns/err.h"
#include "rmqns/yield.h"

/* The inflated stream, read one item at a time through a window that
 * holds the item being read: inflating and parsing are one pass, and the
 * body is never inflated whole. Errors of the stream itself (corrupt,
 * truncated, beyond the cap) win over errors of what it holds, wherever
 * they are in it, as when the whole body was inflated first. */
struct zin {
	z_stream zs;
	uint8_t *buf;
	size_t cap, pos, len;  /* unread: buf[pos, len) */
	size_t total, max;     /* inflated so far; its cap */
	bool end;              /* the stream ended */
	int err;               /* sticky error of the stream */
	struct body_build *b;
};

#define ZIN_WINDOW (64u << 10)

static int zin_fail(struct zin *z, int err, const char *fmt, const char *arg)
{
	if (!z->err) {
		/* the stream's error replaces a reason the items gave */
		if (z->b->why && z->b->whylen)
			z->b->why[0] = 0;
		z->err = build_fail(z->b, err, fmt, arg);
	}
	return z->err;
}

/* Inflates into the window's free room (at most 64 KiB, a yield point
 * before). */
static int zin_fill(struct zin *z)
{
	if (z->err || z->end)
		return z->err;
	size_t room = z->cap - z->len;
	z->zs.next_out = z->buf + z->len;
	z->zs.avail_out = room > ZIN_WINDOW ? ZIN_WINDOW : (uInt)room;
	uInt before = z->zs.avail_out;
	yield_point();
	int zr = inflate(&z->zs, Z_NO_FLUSH);
	size_t got = before - z->zs.avail_out;
	z->len += got;
	z->total += got;
	if (z->total > z->max) {
		char lim[32];
		snprintf(lim, sizeof(lim), "%zu", z->max);
		return zin_fail(z, RMQNS_ETOOBIG, "inflated body exceeds %s bytes", lim);
	}
	if (zr == Z_STREAM_END) {
		z->end = true;
		return 0;
	}
	if (zr == Z_OK || (zr == Z_BUF_ERROR && z->zs.avail_out == 0))
		return 0;
	if (zr == Z_BUF_ERROR)
		return zin_fail(z, RMQNS_EZLIB, "compressed body is truncated%s", NULL);
	return zin_fail(z, zr == Z_MEM_ERROR ? RMQNS_ENOMEM : RMQNS_EZLIB, "zlib: %s",
			z->zs.msg ? z->zs.msg : "bad compressed data");
}

/* n bytes readable at buf + pos: 0; 1 when the stream ended before; or
 * the stream's error. */
static int zin_need(struct zin *z, size_t n)
{
	while (z->len - z->pos < n) {
		if (z->err || z->end)
			return z->err ? z->err : 1;
		if (z->pos) {
			memmove(z->buf, z->buf + z->pos, z->len - z->pos);
			z->len -= z->pos;
			z->pos = 0;
		}
		if (z->cap - z->len < ZIN_WINDOW / 4 && z->cap < n + ZIN_WINDOW) {
			/* an item longer than the window: it grows to hold it
			 * (no further than the cap lets the stream go) */
			size_t ncap = z->cap * 2 > n + ZIN_WINDOW ? z->cap * 2 : n + ZIN_WINDOW;
			if (ncap > z->max + ZIN_WINDOW)
				ncap = z->max + ZIN_WINDOW;
			uint8_t *nb = realloc(z->buf, ncap);
			if (!nb)
				return zin_fail(z, RMQNS_ENOMEM, "out of memory%s", NULL);
			z->buf = nb;
			z->cap = ncap;
		}
		int rc = zin_fill(z);
		if (rc)
			return rc;
	}
	return 0;
}

/* Bytes read from the stream so far. */
static size_t zin_offset(const struct zin *z)
{
	return z->total - (z->len - z->pos);
}

/* Inflates the rest, unread: the stream's own errors show. */
static int zin_drain(struct zin *z)
{
	while (!z->err && !z->end) {
		z->pos = z->len = 0;
		zin_fill(z);
	}
	return z->err;
}

static int zin_i32(struct zin *z, int32_t *v)
{
	int rc = zin_need(z, 4);
	if (rc)
		return rc < 0 ? rc : RMQNS_EINVAL;
	*v = (int32_t)rd_be32(z->buf + z->pos);
	z->pos += 4;
	return 0;
}

/* An int32 length and its bytes, readable until the next read. */
static int zin_slice(struct zin *z, const uint8_t **s, size_t *n)
{
	int32_t len;
	int rc = zin_i32(z, &len);
	if (rc)
		return rc;
	if (len < 0)
		return RMQNS_EINVAL;
	if ((rc = zin_need(z, (size_t)len)) != 0)
		return rc < 0 ? rc : RMQNS_EINVAL;
	*s = z->buf + z->pos;
	*n = (size_t)len;
	z->pos += (size_t)len;
	return 0;
}

static int parse_java_int(const uint8_t *s, size_t n, int32_t *v)
{
	int64_t acc = 0;
	size_t i = 0;
	bool neg = false;

	if (n > 0 && (s[0] == '-' || s[0] == '+')) {
		neg = s[0] == '-';
		i = 1;
	}
	if (i == n || n - i > 11)
		return -1;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		acc = acc * 10 + (s[i] - '0');
	}
	if (neg)
		acc = -acc;
	if (acc < INT32_MIN || acc > INT32_MAX)
		return -1;
	*v = (int32_t)acc;
	return 0;
}

/* `name read write perm filterType [attributes]`, fields split on single
 * spaces. */
static int parse_topic_line(struct body_build *b, const uint8_t *s, size_t n)
{
	const uint8_t *f[5], *p = s, *e = s + n;
	size_t fl[5];
	struct regbody_topic t = { NULL, 0, 0, 0, 0, 0, 0, 0 };

	for (int k = 0; k < 5; k++) {
		const uint8_t *q = p < e ? memchr(p, ' ', (size_t)(e - p)) : NULL;
		if (!q)
			q = e;
		f[k] = p;
		fl[k] = (size_t)(q - p);
		if (q == e && k < 4)
			return build_fail(b, RMQNS_EINVAL, "topic line with fewer than five fields%s", NULL);
		p = q + 1;
	}
	if (fl[4] == 0)
		return build_fail(b, RMQNS_EINVAL, "topic line with fewer than five fields%s", NULL);
	if (memchr(s, 0, fl[0]))
		return build_fail(b, RMQNS_EINVAL, "NUL in a topic name%s", NULL);
	if (parse_java_int(f[1], fl[1], &t.read_queues) || parse_java_int(f[2], fl[2], &t.write_queues) ||
	    parse_java_int(f[3], fl[3], &t.perm))
		return build_fail(b, RMQNS_EINVAL, "bad number in a topic line%s", NULL);
	return build_add_topic(b, (const char *)f[0], fl[0], &t);
}

static int item_mapping(struct body_build *b, const uint8_t *s, size_t n)
{
	return regbody_json_item(b, s, n, REGBODY_ITEM_MAPPING);
}

/* Whether `count` items (4 bytes each at the least) counted at offset
 * `at` are more than the whole stream holds: the count is then the error,
 * whatever failed while reading the items (it was checked first when the
 * whole body was inflated first). Inflates the rest of the stream. */
static bool zin_count_lies(struct zin *z, int32_t count, size_t at)
{
	zin_drain(z);
	return !z->err && (size_t)count > (z->total - at) / 4;
}

/* A count, then that many items, each read by fn; `what` names them in
 * the reasons given. */
static int zin_items(struct body_build *b, struct zin *z, const char *what,
		     int (*fn)(struct body_build *, const uint8_t *, size_t))
{
	const uint8_t *s;
	size_t n;
	int32_t count;
	int rc;

	if ((rc = zin_i32(z, &count)) != 0 || count < 0)
		return rc < 0 && rc != RMQNS_EINVAL ? rc : build_fail(b, RMQNS_EINVAL, "bad %s count in compressed body", what);
	size_t counted_at = zin_offset(z);
	for (int32_t i = 0; i < count; i++) {
		bool ended = false;
		if ((rc = zin_slice(z, &s, &n)) != 0 && rc != RMQNS_EINVAL)
			return rc;
		if (rc == 0)
			rc = fn(b, s, n);
		else
			ended = true;
		if (rc && zin_count_lies(z, count, counted_at))
			return build_refail(b, RMQNS_EINVAL, "bad %s count in compressed body", what);
		if (ended)
			return build_fail(b, rc, "compressed body ends inside its %ss", what);
		if (rc)
			return rc;
	}
	return 0;
}

/* The items of the compressed layout, in order; an error of the stream
 * returned as it is. */
static int decode_compressed_items(struct body_build *b, struct zin *z, int32_t version)
{
	const uint8_t *s;
	size_t n;
	int rc;

	if ((rc = zin_slice(z, &s, &n)) != 0)
		return rc == RMQNS_EINVAL ? build_fail(b, rc, "compressed body too short for its DataVersion%s", NULL) : rc;
	if ((rc = regbody_json_item(b, s, n, REGBODY_ITEM_DATA_VERSION)) != 0)
		return rc;
	if ((rc = zin_items(b, z, "topic", parse_topic_line)) != 0)
		return rc;
	if ((rc = zin_slice(z, &s, &n)) != 0)
		return rc == RMQNS_EINVAL ? build_fail(b, rc, "compressed body ends before its filter-server list%s", NULL) : rc;
	if ((rc = regbody_json_item(b, s, n, REGBODY_ITEM_FILTERS)) != 0)
		return rc;
	b->has_filters = true;
	if (version >= REGBODY_VERSION_MAPPINGS && (rc = zin_items(b, z, "mapping", item_mapping)) != 0)
		return rc;
	/* anything after the last expected item is ignored, as Java does */
	return 0;
}

int regbody_zlib_decode(struct body_build *b, const uint8_t *body, size_t len, int32_t version,
			size_t max)
{
	struct zin z;
	int rc;

	memset(&z, 0, sizeof(z));
	z.b = b;
	z.max = max;
	z.cap = ZIN_WINDOW;
	z.buf = malloc(z.cap);
	if (!z.buf)
		return RMQNS_ENOMEM;
	if (inflateInit(&z.zs) != Z_OK) {
		free(z.buf);
		return RMQNS_ENOMEM;
	}
	z.zs.next_in = (Bytef *)(uintptr_t)body;
	z.zs.avail_in = len > UINT_MAX ? UINT_MAX : (uInt)len;
	rc = decode_compressed_items(b, &z, version);
	/* the rest of the stream must inflate too, within the cap; its error
	 * comes first */
	if (zin_drain(&z))
		rc = z.err;
	inflateEnd(&z.zs);
	free(z.buf);
	return rc;
}

