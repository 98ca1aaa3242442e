/* libFuzzer target for the remoting codec: cuts frames out of arbitrary
 * bytes, decodes them, re-encodes them in both serializations and checks
 * that what was written reads back the same. Also feeds the raw input to
 * both header decoders and the JSON body reader, and checks the invariant
 * the JSON header codec rests on: whatever its fast path accepts, the
 * general path reads as the same command. Any crash, over-read, leak,
 * broken round trip or disagreement is a finding. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/err.h"
#include "rmqns/json_body.h"
#include "rmqns/json_tree.h"
#include "rmqns/remoting.h"
#include "remoting_int.h"

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

static bool same_text(const char *a, const char *b)
{
	return (a == NULL) == (b == NULL) && (!a || strcmp(a, b) == 0);
}

/* Differential check: every field of the two decodes, ext entries in the
 * same order with the same key and value text. */
static void require_paths_agree(const struct remoting_cmd *fast, const struct remoting_cmd *gen)
{
	REQUIRE(fast->code == gen->code);
	REQUIRE(fast->flag == gen->flag);
	REQUIRE(fast->version == gen->version);
	REQUIRE(fast->opaque == gen->opaque);
	REQUIRE(fast->language == gen->language);
	REQUIRE(same_text(fast->remark, gen->remark));
	REQUIRE(fast->ext_present == gen->ext_present);
	REQUIRE(fast->ext_count == gen->ext_count);
	for (uint32_t i = 0; i < fast->ext_count; i++) {
		REQUIRE(strcmp(fast->ext[i].key, gen->ext[i].key) == 0);
		REQUIRE(strcmp(fast->ext[i].value, gen->ext[i].value) == 0);
	}
}

/* Decodes a JSON header on both paths. When the fast path takes it, the
 * general path must give the same command; `body` and `body_len` are the
 * frame's, checked against what the whole-frame decode returned. */
static void fuzz_json_paths(const uint8_t *hdr, size_t len, const struct remoting_cmd *whole)
{
	struct remoting_cmd fast, gen;
	memset(&fast, 0, sizeof(fast));
	int rc = remoting_decode_json_header_fast(hdr, len, &fast);
	if (rc == REMOTING_JSON_BAIL) {
		REQUIRE(fast.storage == NULL);
		return;
	}
	if (rc != RMQNS_OK) {
		REQUIRE(rc == RMQNS_ENOMEM);
		return;
	}
	memset(&gen, 0, sizeof(gen));
	REQUIRE(remoting_decode_json_header_general(hdr, len, &gen) == RMQNS_OK);
	require_paths_agree(&fast, &gen);
	if (whole)
		require_paths_agree(whole, &gen);
	remoting_cmd_release(&fast);
	remoting_cmd_release(&gen);
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
		uint32_t word = rd_be32(data + off + 4);
		const uint8_t *hdr = data + off + 8;
		size_t hlen = word & 0xFFFFFF;
		if (remoting_decode(data + off, fs, &cmd) == RMQNS_OK) {
			if (cmd.serialize == REMOTING_JSON) {
				/* the body is what follows the header, whichever path read it */
				size_t blen = fs - 8 - hlen;
				REQUIRE(cmd.body_len == blen);
				REQUIRE(blen == 0 ? cmd.body == NULL : cmd.body == hdr + hlen);
				fuzz_json_paths(hdr, hlen, &cmd);
			}
			check_reencode(&cmd, cmd.serialize);
			check_reencode(&cmd, cmd.serialize == REMOTING_JSON ? REMOTING_ROCKETMQ : REMOTING_JSON);
			remoting_cmd_release(&cmd);
		}
		off += fs;
	}

	fuzz_header(data, size, REMOTING_JSON);
	fuzz_json_paths(data, size, NULL);
	fuzz_header(data, size, REMOTING_ROCKETMQ);

	int err;
	json_t *v = json_body_parse(data, size, &err);
	REQUIRE((v != NULL) == (err == RMQNS_OK));
	json_decref(v);
	return 0;
}
