/* A growable byte buffer. Owns its memory; every append reports ENOMEM
 * instead of aborting, and a failed append leaves the contents unchanged. */
#ifndef RMQNS_BUF_H
#define RMQNS_BUF_H

#include <stddef.h>
#include <stdint.h>

struct buf {
	uint8_t *data;
	size_t len;
	size_t cap;
};

#define BUF_INIT { NULL, 0, 0 }

int buf_reserve(struct buf *b, size_t extra);
int buf_append(struct buf *b, const void *p, size_t n);
int buf_append_str(struct buf *b, const char *s);
int buf_putc(struct buf *b, uint8_t c);
int buf_put_be16(struct buf *b, uint16_t v);
int buf_put_be32(struct buf *b, uint32_t v);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends a NUL without counting it in len, so data can be used as a C string. */
int buf_terminate(struct buf *b);
void buf_reset(struct buf *b);
/* Drops the first n bytes (n <= len); what follows moves to the front. */
void buf_consume(struct buf *b, size_t n);
void buf_free(struct buf *b);

static inline uint32_t rd_be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint16_t rd_be16(const uint8_t *p)
{
	return (uint16_t)(((uint16_t)p[0] << 8) | p[1]);
}
static inline void wr_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

#endif
