/* CRC-32 (the zlib / java.util.zip.CRC32 one) that REGISTER_BROKER's
 * bodyCrc32 carries. */
#ifndef RMQNS_CRC_H
#define RMQNS_CRC_H

#include <stddef.h>
#include <stdint.h>

/* crc continued over p[0..n): the value zlib's crc32(crc, p, n) gives
 * (start with 0). */
uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t n);

#endif
