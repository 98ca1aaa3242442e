/* Private to src/remoting: the two header codecs behind the dispatch in
 * command.c. Decoders fill a zeroed cmd and leave nothing to release on
 * error; encoders append to out and leave it unchanged on error. */
#ifndef RMQNS_REMOTING_INT_H
#define RMQNS_REMOTING_INT_H

#include "rmqns/remoting.h"

int remoting_decode_json_header(const uint8_t *hdr, size_t len, struct remoting_cmd *cmd);
int remoting_encode_json_header(const struct remoting_cmd *cmd, struct buf *out);

int remoting_decode_binary_header(const uint8_t *hdr, size_t len, struct remoting_cmd *cmd);
int remoting_encode_binary_header(const struct remoting_cmd *cmd, struct buf *out);

/* Language name lookup by length, for decoders holding unterminated text. */
int32_t remoting_language_parse_n(const char *name, size_t n);

/* Length (1-4) of the well-formed UTF-8 sequence at s (n > 0 bytes
 * available) and its code point, or 0 when it is not one: stray or
 * truncated sequences, overlong forms, surrogates, past U+10FFFF. The same
 * rules jansson applies, so the fast header path and jansson agree. */
static inline size_t remoting_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp)
{
	uint8_t c = s[0];
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	size_t len;
	uint32_t v, min;
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2; v = c & 0x1Fu; min = 0x80;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3; v = c & 0x0Fu; min = 0x800;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4; v = c & 0x07u; min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		v = (v << 6) | (s[i] & 0x3Fu);
	}
	if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return 0;
	*cp = v;
	return len;
}

#endif
