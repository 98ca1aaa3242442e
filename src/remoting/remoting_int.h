/* Private to src/remoting: the two header codecs behind the dispatch in
 * command.c. Decoders fill a zeroed cmd and leave nothing to release on
 * error; encoders append to out and leave it unchanged on error. */
#ifndef RMQNS_REMOTING_INT_H
#define RMQNS_REMOTING_INT_H

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

/* Language name lookup by length, for decoders holding unterminated text. */
int32_t remoting_language_parse_n(const char *name, size_t n);

#endif
