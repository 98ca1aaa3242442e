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
enum jh_member {
	JH_CODE = 1 << 0, JH_FLAG = 1 << 1, JH_VERSION = 1 << 2, JH_OPAQUE = 1 << 3,
	JH_LANGUAGE = 1 << 4, JH_REMARK = 1 << 5, JH_EXT = 1 << 6, JH_OTHER = 0,
};

static inline enum jh_member jh_member_of(const char *k, size_t n)
{
	switch (n) {
	case 4:
		if (!memcmp(k, "code", 4)) return JH_CODE;
		if (!memcmp(k, "flag", 4)) return JH_FLAG;
		break;
	case 6:
		if (!memcmp(k, "opaque", 6)) return JH_OPAQUE;
		if (!memcmp(k, "remark", 6)) return JH_REMARK;
		break;
	case 7:
		if (!memcmp(k, "version", 7)) return JH_VERSION;
		break;
	case 8:
		if (!memcmp(k, "language", 8)) return JH_LANGUAGE;
		break;
	case 9:
		if (!memcmp(k, "extFields", 9)) return JH_EXT;
		break;
	}
	return JH_OTHER;
}

/* Language name lookup by length, for decoders holding unterminated text. */
int32_t remoting_language_parse_n(const char *name, size_t n);

#endif
