/* Private to src/remoting: the two header codecs behind the dispatch in
 * command.c. Decoders fill a zeroed cmd and leave nothing to release on
 * error; encoders append to out and leave it unchanged on error. */
#ifndef RMQNS_REMOTING_INT_H
#define RMQNS_REMOTING_INT_H

#include <string.h>

#include "rmqns/remoting.h"
#include "rmqns/utf8.h"

int remoting_decode_json_header(const uint8_t *hdr, size_t len, struct remoting_cmd *cmd);
/* The two paths behind it, apart for the fuzz target's differential check:
 * the fast one returns REMOTING_JSON_BAIL for whatever it leaves to the
 * other; whatever it accepts, the general one must read the same. */
#define REMOTING_JSON_BAIL 1
int remoting_decode_json_header_fast(const uint8_t *hdr, size_t len, struct remoting_cmd *cmd);
int remoting_decode_json_header_general(const uint8_t *hdr, size_t len, struct remoting_cmd *cmd);
int remoting_encode_json_header(const struct remoting_cmd *cmd, struct buf *out);

int remoting_decode_binary_header(const uint8_t *hdr, size_t len, struct remoting_cmd *cmd);
int remoting_encode_binary_header(const struct remoting_cmd *cmd, struct buf *out);

/* The members of a JSON header rmqns reads, by name (n bytes). */
enum json_header_member {
	JSON_HEADER_CODE = 1 << 0, JSON_HEADER_FLAG = 1 << 1, JSON_HEADER_VERSION = 1 << 2, JSON_HEADER_OPAQUE = 1 << 3,
	JSON_HEADER_LANGUAGE = 1 << 4, JSON_HEADER_REMARK = 1 << 5, JSON_HEADER_EXT = 1 << 6, JSON_HEADER_OTHER = 0,
};

static inline enum json_header_member json_header_member_of(const char *k, size_t n)
{
	switch (n) {
	case 4:
		if (!memcmp(k, "code", 4)) return JSON_HEADER_CODE;
		if (!memcmp(k, "flag", 4)) return JSON_HEADER_FLAG;
		break;
	case 6:
		if (!memcmp(k, "opaque", 6)) return JSON_HEADER_OPAQUE;
		if (!memcmp(k, "remark", 6)) return JSON_HEADER_REMARK;
		break;
	case 7:
		if (!memcmp(k, "version", 7)) return JSON_HEADER_VERSION;
		break;
	case 8:
		if (!memcmp(k, "language", 8)) return JSON_HEADER_LANGUAGE;
		break;
	case 9:
		if (!memcmp(k, "extFields", 9)) return JSON_HEADER_EXT;
		break;
	}
	return JSON_HEADER_OTHER;
}

/* Language name lookup by length, for decoders holding unterminated text. */
int32_t remoting_language_parse_n(const char *name, size_t n);

#endif
