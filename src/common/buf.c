/* The growable byte buffer of buf.h. Owns growth policy and overflow checks;
 * a failed call never changes len or the bytes already held. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/buf.h"
#include "rmqns/err.h"

#define BUF_MIN_CAP 64

int buf_reserve(struct buf *b, size_t extra)
{
	if (extra <= b->cap - b->len)
		return RMQNS_OK;
	/* No allocation can be larger than PTRDIFF_MAX; refuse before asking. */
	if (extra > PTRDIFF_MAX - b->len)
		return RMQNS_ENOMEM;
	size_t need = b->len + extra;
	size_t cap = b->cap ? b->cap : BUF_MIN_CAP;
	while (cap < need) {
		if (cap > PTRDIFF_MAX / 2) {
			cap = need;
			break;
		}
		cap *= 2;
	}
	uint8_t *p = realloc(b->data, cap);
	if (!p)
		return RMQNS_ENOMEM;
	b->data = p;
	b->cap = cap;
	return RMQNS_OK;
}

int buf_append(struct buf *b, const void *p, size_t n)
{
	if (n == 0)
		return RMQNS_OK;
	int rc = buf_reserve(b, n);
	if (rc)
		return rc;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return RMQNS_OK;
}

int buf_append_str(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int buf_putc(struct buf *b, uint8_t c)
{
	if (b->len == b->cap) {
		int rc = buf_reserve(b, 1);
		if (rc)
			return rc;
	}
	b->data[b->len++] = c;
	return RMQNS_OK;
}

int buf_put_be16(struct buf *b, uint16_t v)
{
	uint8_t p[2] = { (uint8_t)(v >> 8), (uint8_t)v };
	return buf_append(b, p, 2);
}

int buf_put_be32(struct buf *b, uint32_t v)
{
	uint8_t p[4];
	wr_be32(p, v);
	return buf_append(b, p, 4);
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	char small[256];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return RMQNS_EINVAL;
	if ((size_t)n < sizeof(small))
		return buf_append(b, small, (size_t)n);

	/* Long output: format straight into the buffer, with room for the NUL
	 * vsnprintf insists on writing, which is not counted in len. */
	int rc = buf_reserve(b, (size_t)n + 1);
	if (rc)
		return rc;
	va_start(ap, fmt);
	int m = vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	if (m != n)
		return RMQNS_EINVAL;
	b->len += (size_t)n;
	return RMQNS_OK;
}

int buf_terminate(struct buf *b)
{
	int rc = buf_reserve(b, 1);
	if (rc)
		return rc;
	b->data[b->len] = 0;
	return RMQNS_OK;
}

void buf_reset(struct buf *b)
{
	b->len = 0;
}

void buf_consume(struct buf *b, size_t n)
{
	if (n < b->len)
		memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
}

void buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}
