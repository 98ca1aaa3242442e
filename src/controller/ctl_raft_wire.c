/* libraft 0.15's wire format as the Raft port checks it (ctl_internal.h):
 * every length a peer announces is checked here before anything of that
 * length is allocated, and every header is checked to be exactly what
 * libraft will read of it, since libraft decodes headers without bounds.
 *
 * Integers are little-endian 64-bit words unless said otherwise.
 * Connection handshake: protocol (1), the sender's server id, the length
 * of the address buffer, then that many bytes holding the sender's address
 * with its NUL, padded to 8. Then messages: type, header length, header,
 * and for AppendEntries (the entries' data) or InstallSnapshot (the
 * snapshot's data) a payload whose length the header gives. Both of those
 * headers announce 8 bytes more than libraft writes and reads in them (a
 * leader id that is counted, not sent): they end in 8 unused bytes. */
#include <endian.h>
#include <string.h>

#include "ctl_internal.h"

#define RAFT_HANDSHAKE_PROTOCOL 1
#define ENTRY_HEADER_BYTES 16        /* term, type (1 byte), 3 unused, length (4 bytes) */
#define APPEND_FIXED_BYTES 48        /* term, prev index, prev term, commit, entry count, unused */
#define APPEND_ENTRIES_AT 40         /* the entry headers follow the count */
#define SNAPSHOT_FIXED_BYTES 56      /* term, last index, last term, conf index, conf length, data length, unused */
#define SNAPSHOT_MAX_CONF_BYTES 65536 /* a configuration of a few peers is well under 1 KiB */
#define CONF_FORMAT 1
#define CONF_MAX_SERVERS 256

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof v);
	return le64toh(v);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof v);
}

const char *ctl_raft_refusal_name(enum ctl_raft_verdict v)
{
	static const char *const names[CTL_RAFT_VERDICTS] = {
		[CTL_RAFT_OK] = "ok",
		[CTL_REFUSED_ADDRESS] = "address",
		[CTL_REFUSED_ID] = "id",
		[CTL_REFUSED_HANDSHAKE] = "handshake",
		[CTL_REFUSED_MALFORMED] = "malformed",
		[CTL_REFUSED_OVERSIZE] = "oversize",
		[CTL_REFUSED_STALLED] = "stalled",
		[CTL_REFUSED_LIMIT] = "limit",
		[CTL_REFUSED_TLS] = "tls",
	};
	return (unsigned)v < CTL_RAFT_VERDICTS ? names[v] : "?";
}

enum ctl_raft_verdict ctl_raft_handshake_check(const uint8_t pre[CTL_RAFT_HANDSHAKE_PREAMBLE],
					       uint64_t *id, size_t *address_len)
{
	uint64_t len = get64(pre + 16);

	if (get64(pre) != RAFT_HANDSHAKE_PROTOCOL || len == 0 || len > CTL_RAFT_HANDSHAKE_MAX_ADDRESS)
		return CTL_REFUSED_HANDSHAKE;
	*id = get64(pre + 8);
	*address_len = (size_t)len;
	return CTL_RAFT_OK;
}

size_t ctl_raft_handshake_encode(uint8_t *out, size_t cap, uint64_t id, const char *address)
{
	size_t alen = strlen(address) + 1;
	size_t padded = (alen + 7) & ~(size_t)7;

	if (padded > CTL_RAFT_HANDSHAKE_MAX_ADDRESS || CTL_RAFT_HANDSHAKE_PREAMBLE + padded > cap)
		return 0;
	put64(out, RAFT_HANDSHAKE_PROTOCOL);
	put64(out + 8, id);
	put64(out + 16, padded);
	memset(out + CTL_RAFT_HANDSHAKE_PREAMBLE, 0, padded);
	memcpy(out + CTL_RAFT_HANDSHAKE_PREAMBLE, address, alen);
	return CTL_RAFT_HANDSHAKE_PREAMBLE + padded;
}

enum ctl_raft_verdict ctl_raft_preamble_check(const uint8_t pre[CTL_RAFT_MESSAGE_PREAMBLE],
					      uint64_t max_message, uint64_t *type,
					      size_t *header_len)
{
	uint64_t len = get64(pre + 8);
	bool fits;

	*type = get64(pre);
	switch (*type) {
	case RAFT_IO_REQUEST_VOTE:
		fits = len == 32 || len == 40; /* with or without the flags word */
		break;
	case RAFT_IO_REQUEST_VOTE_RESULT:
		fits = len == 16 || len == 24;
		break;
	case RAFT_IO_APPEND_ENTRIES_RESULT:
	case RAFT_IO_TIMEOUT_NOW:
		fits = len == 24;
		break;
	case RAFT_IO_APPEND_ENTRIES:
		if (len > max_message)
			return CTL_REFUSED_OVERSIZE;
		fits = len >= APPEND_FIXED_BYTES && (len - APPEND_FIXED_BYTES) % ENTRY_HEADER_BYTES == 0;
		break;
	case RAFT_IO_INSTALL_SNAPSHOT:
		fits = len > SNAPSHOT_FIXED_BYTES && len <= SNAPSHOT_FIXED_BYTES + SNAPSHOT_MAX_CONF_BYTES;
		break;
	default:
		fits = false;
	}
	if (!fits)
		return CTL_REFUSED_MALFORMED;
	*header_len = (size_t)len;
	return CTL_RAFT_OK;
}

/* A configuration as libraft encodes it: format byte, server count, then
 * per server its id, its address with a NUL and its role byte; padded. */
static bool conf_well_formed(const uint8_t *p, size_t len)
{
	if (len < 9 || p[0] != CONF_FORMAT)
		return false;
	uint64_t n = get64(p + 1);
	size_t at = 9;
	if (n == 0 || n > CONF_MAX_SERVERS)
		return false;
	for (uint64_t i = 0; i < n; i++) {
		if (len - at < 8)
			return false;
		at += 8;
		const uint8_t *nul = memchr(p + at, 0, len - at);
		if (!nul || nul == p + at)
			return false;
		at = (size_t)(nul - p) + 1;
		if (at >= len || p[at] > RAFT_SPARE)
			return false;
		at++;
	}
	return len - at < 8;
}

static enum ctl_raft_verdict append_check(const uint8_t *h, size_t len, uint64_t max_message,
					  uint64_t *payload)
{
	uint64_t n = get64(h + 32), sum = 0;

	if (n != (len - APPEND_FIXED_BYTES) / ENTRY_HEADER_BYTES)
		return CTL_REFUSED_MALFORMED;
	for (uint64_t i = 0; i < n; i++) {
		const uint8_t *e = h + APPEND_ENTRIES_AT + i * ENTRY_HEADER_BYTES;
		uint32_t elen = (uint32_t)e[12] | (uint32_t)e[13] << 8 | (uint32_t)e[14] << 16 |
				(uint32_t)e[15] << 24;
		/* libraft steps over each entry's data padded to 8, but counts
		 * the payload unpadded: an unpadded length would be read past */
		if ((e[8] != RAFT_COMMAND && e[8] != RAFT_BARRIER && e[8] != RAFT_CHANGE) || elen % 8)
			return CTL_REFUSED_MALFORMED;
		sum += elen;
		if (sum > max_message)
			return CTL_REFUSED_OVERSIZE;
	}
	*payload = sum;
	return CTL_RAFT_OK;
}

enum ctl_raft_verdict ctl_raft_header_check(uint64_t type, const uint8_t *h, size_t len,
					    uint64_t sender, uint64_t max_message,
					    uint64_t *payload)
{
	enum ctl_raft_verdict v = CTL_RAFT_OK;

	*payload = 0;
	if (type == RAFT_IO_APPEND_ENTRIES) {
		v = append_check(h, len, max_message, payload);
	} else if (type == RAFT_IO_INSTALL_SNAPSHOT) {
		uint64_t conf_len = get64(h + 32);
		if (conf_len != len - SNAPSHOT_FIXED_BYTES || !conf_well_formed(h + 40, (size_t)conf_len))
			return CTL_REFUSED_MALFORMED;
		*payload = get64(h + 40 + conf_len);
	} else if (type == RAFT_IO_REQUEST_VOTE && get64(h + 8) != sender) {
		return CTL_REFUSED_ID; /* a vote asked for another server than the sender */
	}
	if (v == CTL_RAFT_OK && (*payload > max_message ||
				 CTL_RAFT_MESSAGE_PREAMBLE + len + *payload > max_message))
		v = CTL_REFUSED_OVERSIZE;
	return v;
}
