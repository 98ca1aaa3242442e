/* libFuzzer target for the remoting codec: cuts frames out of arbitrary
 * bytes, decodes them, re-encodes them in both serializations and checks
 * that what was written reads back the same. Also feeds the raw input to
 * both header decoders and the JSON body reader. Any crash, over-read,
 * leak or broken round trip is a finding. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/err.h"
#include "rmqns/json_body.h"
#include "rmqns/remoting.h"

/* Small, so that lengths near the limit are reachable. */
#define FUZZ_MAX_FRAME (1u << 20)

#define REQUIRE(cond) do { if (!(cond)) abort(); } while (0)

static void require_same(const struct remoting_cmd *a, const struct remoting_cmd *b, bool same_ser)
{
	REQUIRE(a->opaque == b->opaque);
	REQUIRE(a->flag == b->flag);
	if (!same_ser)
		return;
	REQUIRE(a->code == b->code);
	REQUIRE(a->version == b->version);
	REQUIRE(a->language == b->language);
	if (a->serialize == REMOTING_JSON) {
		REQUIRE(a->ext_present == b->ext_present);
		REQUIRE((a->remark == NULL) == (b->remark == NULL));
	}
	if (a->remark && b->remark)
		REQUIRE(strcmp(a->remark, b->remark) == 0);
	REQUIRE(a->ext_count == b->ext_count);
	for (uint32_t i = 0; i < a->ext_count; i++) {
		REQUIRE(strcmp(a->ext[i].key, b->ext[i].key) == 0);
		REQUIRE(strcmp(a->ext[i].value, b->ext[i].value) == 0);
	}
	REQUIRE(a->body_len == b->body_len);
	if (a->body_len)
		REQUIRE(memcmp(a->body, b->body, a->body_len) == 0);
}

/* Encodes cmd in `ser`; whatever the encoder accepts must decode again. */
static void check_reencode(const struct remoting_cmd *cmd, enum remoting_serialize ser)
{
	struct remoting_cmd copy = *cmd;
	copy.serialize = ser;
	struct buf out = BUF_INIT;
	int rc = remoting_encode(&copy, &out);
	if (rc == RMQNS_OK) {
		size_t fs;
		REQUIRE(remoting_frame_cut(out.data, out.len, 0x7FFFFFFF, &fs) == RMQNS_OK);
		REQUIRE(fs == out.len);
		struct remoting_cmd back;
		REQUIRE(remoting_decode(out.data, out.len, &back) == RMQNS_OK);
		/* Text from a binary header may be any bytes; JSON turns bad
		 * UTF-8 into U+FFFD, so only same-serialization trips compare
		 * text. Binary codes are 16 bits wide. */
		require_same(cmd, &back, ser == cmd->serialize);
		remoting_cmd_release(&back);
	} else {
		REQUIRE(rc == RMQNS_ETOOBIG);
	}
	buf_free(&out);
}

static void fuzz_header(const uint8_t *data, size_t size, enum remoting_serialize ser)
{
	struct remoting_cmd cmd;
	if (remoting_decode_header(data, size, ser, &cmd) == RMQNS_OK) {
		check_reencode(&cmd, REMOTING_JSON);
		check_reencode(&cmd, REMOTING_ROCKETMQ);
		remoting_cmd_release(&cmd);
	} else {
		REQUIRE(cmd.storage == NULL);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;
	while (off < size) {
		size_t fs = 0;
		int rc = remoting_frame_cut(data + off, size - off, FUZZ_MAX_FRAME, &fs);
		if (rc != RMQNS_OK) {
			REQUIRE(rc == RMQNS_EAGAIN || rc == RMQNS_EPROTO || rc == RMQNS_ETOOBIG);
			break;
		}
		REQUIRE(fs >= 8 && fs <= size - off);
		struct remoting_cmd cmd;
		if (remoting_decode(data + off, fs, &cmd) == RMQNS_OK) {
			check_reencode(&cmd, cmd.serialize);
			check_reencode(&cmd, cmd.serialize == REMOTING_JSON ? REMOTING_ROCKETMQ : REMOTING_JSON);
			remoting_cmd_release(&cmd);
		}
		off += fs;
	}

	fuzz_header(data, size, REMOTING_JSON);
	fuzz_header(data, size, REMOTING_ROCKETMQ);

	int err;
	json_t *v = json_body_parse(data, size, &err);
	REQUIRE((v != NULL) == (err == RMQNS_OK));
	json_decref(v);
	return 0;
}
