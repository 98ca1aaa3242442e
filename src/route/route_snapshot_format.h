/* The route snapshot's format, shared by its encoder
 * (route_snapshot_encode.c) and its loader (route_snapshot_load.c).
 * Private to src/route/.
 *
 * File: a 32-byte header (magic "RMQNSRT1", u32 version, u32 CRC32 of
 * everything after the CRC field, u64 content length, u64 wall ms when
 * written), then records: u8 kind, u32 payload length, payload. Integers
 * are little-endian; a string is u32 length, its bytes, a NUL. Kinds come
 * in this order: groups (ordinal = their order), clusters, live brokers,
 * filter servers, static-topic mappings, then queue-entry lists (ordinal =
 * their order) interleaved with the topics naming them, and one end record
 * with the counts. */
#ifndef RMQNS_ROUTE_SNAPSHOT_FORMAT_H
#define RMQNS_ROUTE_SNAPSHOT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "rmqns/crc.h"

static const char snap_magic[8] = { 'R', 'M', 'Q', 'N', 'S', 'R', 'T', '1' };

enum snap_kind {
	SK_GROUP = 1,
	SK_CLUSTER = 2,
	SK_LIVE = 3,
	SK_FILTER = 4,
	SK_MAPPING = 5,
	SK_TQ = 6,
	SK_TOPIC = 7,
	SK_END = 8,
};

/* Group flags. */
#define SG_PRESENT 1u
#define SG_ACTING 2u
#define SG_ZONE 4u
/* Mapping flags. */
#define SM_BNAME 1u
#define SM_SCOPE 2u
#define SM_TOPIC 4u
#define SM_DIRTY 8u
#define SM_IDS 16u

/* Bounds a record may not pass: more is refused as corrupt. */
#define SNAP_MAX_ADDRS 1024u    /* addresses of one group */
#define SNAP_MAX_LIST 65536u    /* filter servers of a broker, ids of a mapping */
#define SNAP_NONE UINT32_MAX

/* The CRC32 the header holds: of everything after its own field (the
 * file from byte 16). */
static inline uint32_t snap_crc(const uint8_t *file, size_t len)
{
	return crc32_update(0, file + 16, len - 16);
}

#endif
