/* Unit tests of src/remoting: frame cutting, the JSON and ROCKETMQ header
 * codecs, responses, ext-field reads, random round trips and malformed
 * input. Inputs are copied into exact-size heap blocks so AddressSanitizer
 * sees any read past their end. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/err.h"
#include "rmqns/json_body.h"
#include "rmqns/remoting.h"

/* ---- helpers ---- */

static uint8_t *dup_exact(const void *p, size_t n)
{
	uint8_t *q = malloc(n ? n : 1);
	cr_assert(q);
	if (n)
		memcpy(q, p, n);
	return q;
}

static int decode_hdr(const void *hdr, size_t len, enum remoting_serialize ser,
		      struct remoting_cmd *cmd)
{
	uint8_t *copy = dup_exact(hdr, len);
	int rc = remoting_decode_header(copy, len, ser, cmd);
	free(copy);
	return rc;
}

static int decode_json(const char *json, struct remoting_cmd *cmd)
{
	return decode_hdr(json, strlen(json), REMOTING_JSON, cmd);
}

/* Decodes, asserts success and returns the command. */
/* The fields every header carries. */
static void expect_head(const struct remoting_cmd *c, int32_t code, int32_t opaque, int16_t version)
{
	cr_expect_eq(c->code, code);
	cr_expect_eq(c->opaque, opaque);
	cr_expect_eq(c->version, version);
}

static struct remoting_cmd json_ok(const char *json)
{
	struct remoting_cmd c;
	int rc = decode_json(json, &c);
	cr_assert_eq(rc, RMQNS_OK, "decode of %s gave %d", json, rc);
	return c;
}

static void json_fails(const char *json, int want)
{
	struct remoting_cmd c;
	memset(&c, 0xA5, sizeof(c));
	int rc = decode_json(json, &c);
	cr_expect_eq(rc, want, "decode of %s gave %d, want %d", json, rc, want);
	cr_expect_null(c.storage, "failed decode leaves storage");
	cr_expect_eq(c.ext_count, 0);
}

static char *encode_json_str(const struct remoting_cmd *c)
{
	struct buf b = BUF_INIT;
	cr_assert_eq(remoting_encode_header(c, REMOTING_JSON, &b), RMQNS_OK);
	cr_assert_eq(buf_terminate(&b), RMQNS_OK);
	return (char *)b.data;
}

static struct buf frame_of(const void *hdr, size_t hlen, uint8_t ser, const void *body, size_t blen)
{
	struct buf b = BUF_INIT;
	cr_assert_eq(buf_put_be32(&b, (uint32_t)(4 + hlen + blen)), 0);
	cr_assert_eq(buf_put_be32(&b, ((uint32_t)ser << 24) | (uint32_t)hlen), 0);
	cr_assert_eq(buf_append(&b, hdr, hlen), 0);
	cr_assert_eq(buf_append(&b, body, blen), 0);
	return b;
}

/* ---- frame cutting ---- */

Test(frame, needs_prefix_and_header_word)
{
	uint8_t d[8] = { 0, 0, 0, 10, 0, 0, 0, 2 };
	size_t fs = 99;
	for (size_t n = 0; n < 8; n++) {
		uint8_t *c = dup_exact(d, n);
		cr_expect_eq(remoting_frame_cut(c, n, 0, &fs), RMQNS_EAGAIN, "len %zu", n);
		free(c);
	}
	cr_expect_eq(fs, 99, "frame_size untouched until a frame is whole");
}

Test(frame, negative_and_tiny_lengths)
{
	static const uint32_t bad[] = { 0x80000000u, 0xFFFFFFFFu, 0xFFFFFFF0u, 0, 1, 2, 3 };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint8_t d[4];
		wr_be32(d, bad[i]);
		size_t fs;
		cr_expect_eq(remoting_frame_cut(d, 4, 0, &fs), RMQNS_EPROTO, "length %08x", bad[i]);
	}
	/* Length 4: an empty header and no body is a legal frame. */
	uint8_t ok[8] = { 0, 0, 0, 4, 0, 0, 0, 0 };
	size_t fs = 0;
	cr_expect_eq(remoting_frame_cut(ok, 8, 0, &fs), RMQNS_OK);
	cr_expect_eq(fs, 8);
}

Test(frame, maximum_size_counts_the_prefix)
{
	uint8_t d[8] = { 0 };
	size_t fs;
	wr_be32(d, REMOTING_DEFAULT_MAX_FRAME - 4);
	cr_expect_eq(remoting_frame_cut(d, 8, REMOTING_DEFAULT_MAX_FRAME, &fs), RMQNS_EAGAIN);
	cr_expect_eq(remoting_frame_cut(d, 8, 0, &fs), RMQNS_EAGAIN, "0 means the default");
	wr_be32(d, REMOTING_DEFAULT_MAX_FRAME - 3);
	cr_expect_eq(remoting_frame_cut(d, 4, REMOTING_DEFAULT_MAX_FRAME, &fs), RMQNS_ETOOBIG);
	cr_expect_eq(remoting_frame_cut(d, 8, 0, &fs), RMQNS_ETOOBIG);
	wr_be32(d, 0x7FFFFFFF);
	cr_expect_eq(remoting_frame_cut(d, 4, 0, &fs), RMQNS_ETOOBIG);

	/* A small configured limit: 100 bytes in all. */
	wr_be32(d, 96);
	cr_expect_eq(remoting_frame_cut(d, 8, 100, &fs), RMQNS_EAGAIN);
	wr_be32(d, 97);
	cr_expect_eq(remoting_frame_cut(d, 8, 100, &fs), RMQNS_ETOOBIG);
}

Test(frame, header_word_checked_before_the_body_arrives)
{
	uint8_t d[8] = { 0, 0, 0x10, 0, 2, 0, 0, 10 }; /* serialize type 2 */
	size_t fs;
	cr_expect_eq(remoting_frame_cut(d, 8, 0, &fs), RMQNS_EPROTO);
	d[4] = 0xFF;
	cr_expect_eq(remoting_frame_cut(d, 8, 0, &fs), RMQNS_EPROTO);
	d[4] = 1;
	cr_expect_eq(remoting_frame_cut(d, 8, 0, &fs), RMQNS_EAGAIN);
	/* Header length beyond the frame: frameLength 10 leaves 6 for H. */
	uint8_t e[8] = { 0, 0, 0, 10, 0, 0, 0, 7 };
	cr_expect_eq(remoting_frame_cut(e, 8, 0, &fs), RMQNS_EPROTO);
	e[7] = 6;
	cr_expect_eq(remoting_frame_cut(e, 8, 0, &fs), RMQNS_EAGAIN);
	uint8_t f[8] = { 0, 0, 0, 10, 0, 0xFF, 0xFF, 0xFF };
	cr_expect_eq(remoting_frame_cut(f, 8, 0, &fs), RMQNS_EPROTO);
}

Test(frame, every_prefix_waits_then_many_frames_cut_in_order)
{
	const char *hdr = "{\"code\":105,\"flag\":0,\"language\":\"JAVA\",\"opaque\":%d,"
			  "\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}";
	struct buf all = BUF_INIT;
	size_t sizes[20];
	for (int i = 0; i < 20; i++) {
		char h[200];
		int n = snprintf(h, sizeof(h), hdr, i);
		char body[40];
		int bn = snprintf(body, sizeof(body), "body-%d", i * 7);
		struct buf f = frame_of(h, (size_t)n, 0, body, i % 3 ? (size_t)bn : 0);
		sizes[i] = f.len;
		cr_assert_eq(buf_append(&all, f.data, f.len), 0);
		buf_free(&f);
	}
	/* Every prefix shorter than the first frame asks for more. */
	for (size_t n = 0; n < sizes[0]; n++) {
		uint8_t *c = dup_exact(all.data, n);
		size_t fs;
		cr_expect_eq(remoting_frame_cut(c, n, 0, &fs), RMQNS_EAGAIN, "prefix %zu", n);
		free(c);
	}
	uint8_t *c = dup_exact(all.data, all.len);
	size_t off = 0;
	for (int i = 0; i < 20; i++) {
		size_t fs;
		cr_assert_eq(remoting_frame_cut(c + off, all.len - off, 0, &fs), RMQNS_OK);
		cr_assert_eq(fs, sizes[i]);
		struct remoting_cmd cmd;
		cr_assert_eq(remoting_decode(c + off, fs, &cmd), RMQNS_OK);
		cr_expect_eq(cmd.opaque, i);
		cr_expect_eq(cmd.code, 105);
		if (i % 3) {
			char body[40];
			int bn = snprintf(body, sizeof(body), "body-%d", i * 7);
			cr_expect_eq(cmd.body_len, (uint32_t)bn);
			cr_expect_eq(memcmp(cmd.body, body, (size_t)bn), 0);
		} else {
			cr_expect_null(cmd.body);
			cr_expect_eq(cmd.body_len, 0);
		}
		remoting_cmd_release(&cmd);
		off += fs;
	}
	size_t fs;
	cr_expect_eq(remoting_frame_cut(c + off, 0, 0, &fs), RMQNS_EAGAIN);
	free(c);
	buf_free(&all);
}

Test(frame, decode_refuses_a_frame_that_lies)
{
	const char *h = "{\"code\":1,\"opaque\":2}";
	struct buf f = frame_of(h, strlen(h), 0, "xy", 2);
	struct remoting_cmd cmd;
	uint8_t *c = dup_exact(f.data, f.len);
	cr_expect_eq(remoting_decode(c, f.len - 1, &cmd), RMQNS_EPROTO, "size shorter than prefix says");
	cr_expect_eq(remoting_decode(c, 7, &cmd), RMQNS_EPROTO);
	cr_expect_eq(remoting_decode(c, 0, &cmd), RMQNS_EPROTO);
	c[4] = 2;
	cr_expect_eq(remoting_decode(c, f.len, &cmd), RMQNS_EPROTO, "serialize type 2");
	c[4] = 0;
	wr_be32(c + 4, (uint32_t)f.len);
	cr_expect_eq(remoting_decode(c, f.len, &cmd), RMQNS_EPROTO, "header past the frame");
	wr_be32(c, 0x80000000u);
	cr_expect_eq(remoting_decode(c, f.len, &cmd), RMQNS_EPROTO, "negative length");
	free(c);
	c = dup_exact(f.data, f.len);
	cr_expect_eq(remoting_decode(c, f.len, &cmd), RMQNS_OK);
	cr_expect_eq(cmd.body_len, 2);
	cr_expect_eq(cmd.body, c + 8 + strlen(h));
	remoting_cmd_release(&cmd);
	free(c);
	buf_free(&f);
}

/* ---- JSON header: what the server must accept (§2.1) ---- */

Test(json_header, java_request)
{
	struct remoting_cmd c = json_ok(
		"{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"},\"flag\":0,\"language\":\"JAVA\","
		"\"opaque\":7,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}");
	expect_head(&c, 105, 7, 479);
	cr_expect_eq(c.flag, 0);
	cr_expect_eq(c.language, LANG_JAVA);
	cr_expect_null(c.remark);
	cr_expect(c.ext_present);
	cr_expect_eq(c.ext_count, 1);
	cr_expect_str_eq(c.ext[0].key, "topic");
	cr_expect_str_eq(c.ext[0].value, "TopicTest");
	cr_expect_eq(c.serialize, REMOTING_JSON);
	remoting_cmd_release(&c);
	cr_expect_null(c.storage);
	cr_expect_null(c.ext);
}

Test(json_header, any_order_unknown_members_and_defaults)
{
	struct remoting_cmd c = json_ok(
		"{\"opaque\":9,\"zzz\":{\"a\":[1,2,{\"b\":null}]},\"extFields\":{\"k\":\"v\"},"
		"\"x\":1.5e3,\"y\":[],\"t\":true,\"n\":null,\"s\":\"str\\\"\",\"code\":-3}");
	cr_expect_eq(c.code, -3);
	cr_expect_eq(c.opaque, 9);
	cr_expect_eq(c.flag, 0);
	cr_expect_eq(c.version, 0);
	cr_expect_eq(c.language, LANG_JAVA);
	cr_expect_str_eq(remoting_ext_get(&c, "k"), "v");
	remoting_cmd_release(&c);

	c = json_ok("{\"code\":103,\"opaque\":0}");
	cr_expect_eq(c.code, 103);
	cr_expect_eq(c.opaque, 0);
	cr_expect(!c.ext_present);
	cr_expect_eq(c.ext_count, 0);
	cr_expect_null(c.ext);
	cr_expect_null(c.storage, "nothing to own");
	remoting_cmd_release(&c);

	c = json_ok("{}");
	cr_expect_eq(c.code, 0);
	remoting_cmd_release(&c);

	c = json_ok("{\"code\":null,\"flag\":null,\"version\":null,\"opaque\":null}");
	cr_expect_eq(c.code, 0);
	cr_expect_eq(c.opaque, 0);
	remoting_cmd_release(&c);
}

Test(json_header, language_forms)
{
	static const struct { const char *json; int32_t lang; } cases[] = {
		{ "{\"language\":\"GO\"}", LANG_GO },
		{ "{\"language\":\"go\"}", LANG_GO },
		{ "{\"language\":\"Cpp\"}", LANG_CPP },
		{ "{\"language\":\"CPP\"}", LANG_CPP },
		{ "{\"language\":\"node_js\"}", LANG_NODE_JS },
		{ "{\"language\":9}", LANG_GO },
		{ "{\"language\":0}", LANG_JAVA },
		{ "{\"language\":13}", LANG_NODE_JS },
		{ "{\"language\":\"FOO\"}", LANG_UNKNOWN },
		{ "{\"language\":\"\"}", LANG_UNKNOWN },
		{ "{\"language\":\"UNKNOWN\"}", LANG_UNKNOWN },
		{ "{\"language\":\"J\\u0041VA\"}", LANG_JAVA },
		{ "{\"language\":null}", LANG_UNKNOWN },
		{ "{\"code\":1}", LANG_JAVA },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct remoting_cmd c = json_ok(cases[i].json);
		cr_expect_eq(c.language, cases[i].lang, "%s", cases[i].json);
		remoting_cmd_release(&c);
	}
	/* An ordinal past the enum closes the connection in Java. */
	json_fails("{\"language\":14}", RMQNS_EPROTO);
	json_fails("{\"language\":-1}", RMQNS_EPROTO);
	json_fails("{\"language\":99999999999}", RMQNS_EPROTO);
	json_fails("{\"language\":1.5}", RMQNS_EJSON);
	json_fails("{\"language\":true}", RMQNS_EJSON);
	json_fails("{\"language\":{}}", RMQNS_EJSON);
}

Test(json_header, remark_forms)
{
	struct remoting_cmd c = json_ok("{\"code\":0,\"remark\":\"\",\"opaque\":1}");
	cr_assert_not_null(c.remark);
	cr_expect_str_eq(c.remark, "");
	/* An empty remark is still a remark: re-encoded as Java would. */
	char *s = encode_json_str(&c);
	cr_expect_not_null(strstr(s, ",\"remark\":\"\","), "%s", s);
	free(s);
	remoting_cmd_release(&c);

	c = json_ok("{\"remark\":null}");
	cr_expect_null(c.remark);
	s = encode_json_str(&c);
	cr_expect_null(strstr(s, "remark"), "%s", s);
	free(s);
	remoting_cmd_release(&c);

	c = json_ok("{\"remark\":\"a\\nb\\u00e9\\ud83d\\ude00\\\"\\/\\\\\"}");
	cr_expect_str_eq(c.remark, "a\nb\xC3\xA9\xF0\x9F\x98\x80\"/\\");
	remoting_cmd_release(&c);

	c = json_ok("{\"remark\":12}");
	cr_expect_str_eq(c.remark, "12");
	remoting_cmd_release(&c);
	c = json_ok("{\"remark\":[1, {\"a\" : 2}]}");
	cr_expect_str_eq(c.remark, "[1,{\"a\":2}]", "containers become compact JSON text");
	remoting_cmd_release(&c);
}

Test(json_header, ext_field_forms)
{
	/* C++ client: empty values; ali-ons: raw scalars (§10 item 17). */
	struct remoting_cmd c = json_ok(
		"{\"extFields\":{\"AccessKey\":\"\",\"Signature\":\"\",\"OnsChannel\":\"ALIYUN\","
		"\"n\":42,\"neg\":-7,\"t\":true,\"f\":false,\"big\":1700000000000,\"zero\":-0,"
		"\"r\":1.5,\"nul\":null,\"obj\":{\"x\":[1, 2]}},\"code\":105}");
	cr_expect(c.ext_present);
	cr_expect_str_eq(remoting_ext_get(&c, "AccessKey"), "");
	cr_expect_str_eq(remoting_ext_get(&c, "Signature"), "");
	cr_expect_str_eq(remoting_ext_get(&c, "OnsChannel"), "ALIYUN");
	cr_expect_str_eq(remoting_ext_get(&c, "n"), "42");
	cr_expect_str_eq(remoting_ext_get(&c, "neg"), "-7");
	cr_expect_str_eq(remoting_ext_get(&c, "t"), "true");
	cr_expect_str_eq(remoting_ext_get(&c, "f"), "false");
	cr_expect_str_eq(remoting_ext_get(&c, "big"), "1700000000000");
	cr_expect_str_eq(remoting_ext_get(&c, "zero"), "-0", "a number keeps its text");
	cr_expect_str_eq(remoting_ext_get(&c, "r"), "1.5");
	cr_expect_null(remoting_ext_get(&c, "nul"), "a null value is no value");
	cr_expect_str_eq(remoting_ext_get(&c, "obj"), "{\"x\":[1,2]}");
	cr_expect_eq(c.ext_count, 11);
	/* Wire order is kept. */
	cr_expect_str_eq(c.ext[0].key, "AccessKey");
	cr_expect_str_eq(c.ext[10].key, "obj");
	remoting_cmd_release(&c);

	c = json_ok("{\"extFields\":{}}");
	cr_expect(c.ext_present);
	cr_expect_eq(c.ext_count, 0);
	remoting_cmd_release(&c);

	c = json_ok("{\"extFields\":null}");
	cr_expect(!c.ext_present);
	remoting_cmd_release(&c);

	c = json_ok("{\"extFields\":{\"a\":\"1\",\"b\":\"x\",\"a\":\"2\"}}");
	cr_expect_eq(c.ext_count, 2, "a repeated key counts once");
	cr_expect_str_eq(remoting_ext_get(&c, "a"), "2", "the last value wins");
	remoting_cmd_release(&c);

	json_fails("{\"extFields\":[]}", RMQNS_EJSON);
	json_fails("{\"extFields\":\"a=b\"}", RMQNS_EJSON);
}

Test(json_header, many_ext_fields)
{
	static const int counts[] = { 63, 64, 65, 200, 1024, 1025 };
	for (size_t t = 0; t < sizeof(counts) / sizeof(counts[0]); t++) {
		int n = counts[t];
		struct buf b = BUF_INIT;
		cr_assert_eq(buf_append_str(&b, "{\"code\":1,\"extFields\":{"), 0);
		for (int i = 0; i < n; i++)
			cr_assert_eq(buf_printf(&b, "%s\"key%d\":\"value%d\"", i ? "," : "", i, i * 3), 0);
		cr_assert_eq(buf_append_str(&b, "},\"opaque\":5}"), 0);
		struct remoting_cmd c;
		int rc = decode_hdr(b.data, b.len, REMOTING_JSON, &c);
		if (n > (int)REMOTING_MAX_EXT_FIELDS) {
			cr_expect_eq(rc, RMQNS_ETOOBIG, "%d fields", n);
		} else {
			cr_assert_eq(rc, RMQNS_OK, "%d fields", n);
			cr_expect_eq(c.ext_count, (uint32_t)n);
			cr_expect_eq(c.opaque, 5);
			char want[32];
			snprintf(want, sizeof(want), "value%d", (n - 1) * 3);
			char key[32];
			snprintf(key, sizeof(key), "key%d", n - 1);
			cr_expect_str_eq(remoting_ext_get(&c, key), want);
			cr_expect_str_eq(c.ext[n - 1].key, key);
			remoting_cmd_release(&c);
		}
		buf_free(&b);
	}
}

Test(json_header, whitespace_and_trailing_bytes)
{
	struct remoting_cmd c = json_ok(" \t\r\n{ \"code\" : 5 ,\n\"opaque\"\t:\r6 } \n");
	cr_expect_eq(c.code, 5);
	cr_expect_eq(c.opaque, 6);
	remoting_cmd_release(&c);
	c = json_ok("{\"code\":105,\"language\":\"CPP\",\"version\":333}\n");
	cr_expect_eq(c.language, LANG_CPP);
	remoting_cmd_release(&c);
	json_fails("{\"code\":1}x", RMQNS_EJSON);
	json_fails("{\"code\":1}{}", RMQNS_EJSON);
	json_fails("{\"code\":1}\f", RMQNS_EJSON);
}

Test(json_header, serialize_member_is_informational)
{
	const char *h = "{\"code\":1,\"opaque\":3,\"serializeTypeCurrentRPC\":\"ROCKETMQ\"}";
	struct buf f = frame_of(h, strlen(h), REMOTING_JSON, NULL, 0);
	struct remoting_cmd c;
	cr_assert_eq(remoting_decode(f.data, f.len, &c), RMQNS_OK);
	cr_expect_eq(c.serialize, REMOTING_JSON);
	remoting_cmd_release(&c);
	buf_free(&f);
	c = json_ok("{\"serializeTypeCurrentRPC\":42}");
	remoting_cmd_release(&c);
}

Test(json_header, numeric_members)
{
	struct remoting_cmd c = json_ok("{\"code\":\"105\",\"opaque\":-2147483648,\"flag\":2147483647,"
					"\"version\":\"-3\"}");
	cr_expect_eq(c.code, 105);
	cr_expect_eq(c.opaque, INT32_MIN);
	cr_expect_eq(c.flag, INT32_MAX);
	cr_expect_eq(c.version, -3);
	remoting_cmd_release(&c);
	json_fails("{\"code\":2147483648}", RMQNS_EJSON);
	json_fails("{\"opaque\":-2147483649}", RMQNS_EJSON);
	json_fails("{\"code\":1.5}", RMQNS_EJSON);
	json_fails("{\"code\":\"abc\"}", RMQNS_EJSON);
	json_fails("{\"code\":\" 1\"}", RMQNS_EJSON);
	json_fails("{\"code\":\"\"}", RMQNS_EJSON);
	json_fails("{\"code\":\"99999999999\"}", RMQNS_EJSON);
	json_fails("{\"code\":true}", RMQNS_EJSON);
	json_fails("{\"code\":[]}", RMQNS_EJSON);
	json_fails("{\"code\":01}", RMQNS_EJSON);
	json_fails("{\"code\":-}", RMQNS_EJSON);
	json_fails("{\"code\":99999999999999999999999}", RMQNS_EJSON);

	c = json_ok("{\"code\":1,\"code\":2}");
	cr_expect_eq(c.code, 2, "the last of a repeated member wins");
	remoting_cmd_release(&c);
}

Test(json_header, not_an_object_or_not_json)
{
	static const char *bad[] = {
		"", " ", "[]", "[{\"code\":1}]", "\"code\"", "5", "null", "{", "}", "{\"code\":1",
		"{\"code\":1,}", "{\"code\" 1}", "{code:1}", "{'code':1}", "{\"code\":1,,\"opaque\":2}",
		"{\"remark\":\"unterminated}", "{\"remark\":\"\\x\"}", "{\"remark\":\"\\u12G4\"}",
		"{\"remark\":\"\\ud800\\u12G4\"}", "{\"remark\":\"\\u000\"}", "{\"remark\":\"tab\there\"}",
		"{\"code\":tru}", "{\"x\":truex}", "\xEF\xBB\xBF{}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		json_fails(bad[i], RMQNS_EJSON);
	/* A NUL byte inside the header is not JSON either. */
	struct remoting_cmd c;
	cr_expect_eq(decode_hdr("{\"code\":1}\0", 11, REMOTING_JSON, &c), RMQNS_EJSON);
	cr_expect_eq(decode_hdr("{\"remark\":\"a\0b\"}", 16, REMOTING_JSON, &c), RMQNS_EJSON);
}

Test(json_header, unicode_text_decodes)
{
	struct remoting_cmd c = json_ok(
		"{\"extFields\":{\"t\\u00f6pic\":\"caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80\x7F\"}}");
	cr_expect_str_eq(remoting_ext_get(&c, "t\xC3\xB6pic"), "caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80\x7F");
	remoting_cmd_release(&c);
}

/* ---- JSON header: exact Java encoding ---- */

Test(json_header, encode_matches_java_bytes)
{
	struct remoting_ext_field ext[] = { { "changed", "false" } };
	struct remoting_cmd c = {
		.code = 0, .language = LANG_JAVA, .version = 479, .opaque = 12,
		.flag = REMOTING_FLAG_RESPONSE, .ext = ext, .ext_count = 1,
	};
	char *s = encode_json_str(&c);
	cr_expect_str_eq(s, "{\"code\":0,\"extFields\":{\"changed\":\"false\"},\"flag\":1,\"language\":"
			    "\"JAVA\",\"opaque\":12,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}");
	free(s);

	struct remoting_cmd r = {
		.code = 22, .language = LANG_JAVA, .version = 409, .opaque = 101, .flag = 1,
		.ext_present = true, .remark = "No config item, Namespace: NSX Key: k",
	};
	s = encode_json_str(&r);
	cr_expect_str_eq(s, "{\"code\":22,\"extFields\":{},\"flag\":1,\"language\":\"JAVA\",\"opaque\":101,"
			    "\"remark\":\"No config item, Namespace: NSX Key: k\","
			    "\"serializeTypeCurrentRPC\":\"JSON\",\"version\":409}");
	free(s);

	struct remoting_cmd m = { .code = INT32_MIN, .opaque = -1, .flag = 3, .version = INT32_MAX,
				  .language = LANG_UNKNOWN, .serialize = REMOTING_ROCKETMQ };
	s = encode_json_str(&m);
	cr_expect_str_eq(s, "{\"code\":-2147483648,\"flag\":3,\"language\":\"UNKNOWN\",\"opaque\":-1,"
			    "\"serializeTypeCurrentRPC\":\"ROCKETMQ\",\"version\":2147483647}");
	free(s);
}

Test(json_header, encode_escapes_and_skips_null_entries)
{
	struct remoting_ext_field ext[] = {
		{ "q\"k", "a\\b/c\n\t\x01\x1F\x7F" },
		{ NULL, "dropped" },
		{ "dropped", NULL },
		{ "u", "\xC2\x80\xC2\x9F\xC2\xA0\xC3\xA9<>&'\xE2\x80\xA8\xE2\x80\xA9\xF0\x9F\x98\x80" },
		{ "e", "" },
	};
	struct remoting_cmd c = { .code = 1, .ext = ext, .ext_count = 5, .remark = "r\"\r" };
	char *s = encode_json_str(&c);
	cr_expect_str_eq(s, "{\"code\":1,\"extFields\":{\"q\\\"k\":\"a\\\\b/c\\n\\t\\u0001\\u001F\\u007F\","
			    "\"u\":\"\\u0080\\u009F\xC2\xA0\xC3\xA9<>&'\\u2028\\u2029\xF0\x9F\x98\x80\","
			    "\"e\":\"\"},\"flag\":0,\"language\":\"JAVA\",\"opaque\":0,\"remark\":\"r\\\"\\r\","
			    "\"serializeTypeCurrentRPC\":\"JSON\",\"version\":0}");
	struct remoting_cmd back = json_ok(s);
	cr_expect_eq(back.ext_count, 3);
	cr_expect_str_eq(remoting_ext_get(&back, "q\"k"), ext[0].value);
	cr_expect_str_eq(remoting_ext_get(&back, "u"), ext[3].value);
	cr_expect_str_eq(remoting_ext_get(&back, "e"), "");
	cr_expect_str_eq(back.remark, "r\"\r");
	remoting_cmd_release(&back);
	free(s);
}

Test(json_header, encode_failure_leaves_buffer_unchanged)
{
	/* A header past 16 MiB - 1 does not fit the header word. */
	size_t n = 0x1000000;
	char *big = malloc(n + 1);
	memset(big, 'r', n);
	big[n] = 0;
	struct remoting_cmd c = { .code = 1, .remark = big };
	struct buf b = BUF_INIT;
	cr_assert_eq(buf_append_str(&b, "prefix"), 0);
	cr_expect_eq(remoting_encode(&c, &b), RMQNS_ETOOBIG);
	cr_expect_eq(b.len, 6);
	c.serialize = REMOTING_ROCKETMQ;
	cr_expect_eq(remoting_encode_head(&c, 0, &b), RMQNS_ETOOBIG);
	cr_expect_eq(b.len, 6);
	cr_expect_eq(memcmp(b.data, "prefix", 6), 0);
	/* Just below the limit it fits. */
	big[n - 40] = 0;
	cr_expect_eq(remoting_encode(&c, &b), RMQNS_OK);
	cr_expect_eq(rd_be32(b.data + 6 + 4) & 0xFFFFFF, 17 + (n - 40) + 4);
	free(big);
	buf_free(&b);
	cr_expect_eq(remoting_encode_header(&c, (enum remoting_serialize)7, &b), RMQNS_EINVAL);
	struct remoting_cmd d;
	cr_expect_eq(remoting_decode_header((const uint8_t *)"{}", 2, (enum remoting_serialize)2, &d),
		     RMQNS_EPROTO);
}

Test(json_header, encode_head_counts_the_body)
{
	struct remoting_cmd c = { .code = 0, .opaque = 4, .flag = 1, .serialize = REMOTING_JSON,
				  .body = (const uint8_t *)"ignored", .body_len = 7 };
	struct buf b = BUF_INIT;
	cr_assert_eq(remoting_encode_head(&c, 1000, &b), RMQNS_OK);
	size_t hlen = rd_be32(b.data + 4) & 0xFFFFFF;
	cr_expect_eq(b.len, 8 + hlen);
	cr_expect_eq(rd_be32(b.data), 4 + hlen + 1000);
	cr_expect_eq(b.data[4], 0);
	buf_reset(&b);
	cr_assert_eq(remoting_encode(&c, &b), RMQNS_OK);
	cr_expect_eq(b.len, 8 + hlen + 7);
	cr_expect_eq(memcmp(b.data + 8 + hlen, "ignored", 7), 0);
	buf_free(&b);
}

/* ---- binary header (§2.2) ---- */

/* Binary header parts; tests assemble them with lengths that may lie. */
static void bin_fixed(struct buf *b, int16_t code, uint8_t lang, int16_t ver, int32_t opaque,
		      int32_t flag)
{
	cr_assert_eq(buf_put_be16(b, (uint16_t)code), 0);
	cr_assert_eq(buf_putc(b, lang), 0);
	cr_assert_eq(buf_put_be16(b, (uint16_t)ver), 0);
	cr_assert_eq(buf_put_be32(b, (uint32_t)opaque), 0);
	cr_assert_eq(buf_put_be32(b, (uint32_t)flag), 0);
}

static void bin_entry(struct buf *b, const char *k, const char *v)
{
	cr_assert_eq(buf_put_be16(b, (uint16_t)strlen(k)), 0);
	cr_assert_eq(buf_append_str(b, k), 0);
	cr_assert_eq(buf_put_be32(b, (uint32_t)strlen(v)), 0);
	cr_assert_eq(buf_append_str(b, v), 0);
}

Test(binary_header, decode_fields_and_signs)
{
	struct buf b = BUF_INIT;
	bin_fixed(&b, -2, 9, -1, -5, 3);
	cr_assert_eq(buf_put_be32(&b, 3), 0);
	cr_assert_eq(buf_append_str(&b, "abc"), 0);
	struct buf e = BUF_INIT;
	bin_entry(&e, "k1", "v1");
	bin_entry(&e, "", "skipped-key");
	bin_entry(&e, "skipped-value", "");
	bin_entry(&e, "k2", "value two");
	cr_assert_eq(buf_put_be32(&b, (uint32_t)e.len), 0);
	cr_assert_eq(buf_append(&b, e.data, e.len), 0);
	cr_assert_eq(buf_append_str(&b, "trailing"), 0); /* ignored, as Java does */

	struct remoting_cmd c;
	cr_assert_eq(decode_hdr(b.data, b.len, REMOTING_ROCKETMQ, &c), RMQNS_OK);
	cr_expect_eq(c.code, -2);
	cr_expect_eq(c.language, LANG_GO);
	cr_expect_eq(c.version, -1);
	cr_expect_eq(c.opaque, -5);
	cr_expect_eq(c.flag, 3);
	cr_expect_str_eq(c.remark, "abc");
	cr_expect_eq(c.ext_count, 2);
	cr_expect_str_eq(c.ext[0].key, "k1");
	cr_expect_str_eq(c.ext[1].value, "value two");
	cr_expect(c.ext_present);
	cr_expect_eq(c.serialize, REMOTING_ROCKETMQ);
	remoting_cmd_release(&c);
	buf_free(&b);
	buf_free(&e);
}

Test(binary_header, empty_remark_and_ext_and_unknown_language)
{
	struct buf b = BUF_INIT;
	bin_fixed(&b, 106, 200, 409, 0, 0);
	cr_assert_eq(buf_put_be32(&b, 0), 0);
	cr_assert_eq(buf_put_be32(&b, 0), 0);
	struct remoting_cmd c;
	cr_assert_eq(decode_hdr(b.data, b.len, REMOTING_ROCKETMQ, &c), RMQNS_OK);
	cr_expect_null(c.remark);
	cr_expect_eq(c.ext_count, 0);
	cr_expect(!c.ext_present);
	cr_expect_eq(c.language, LANG_UNKNOWN);
	cr_expect_null(c.storage);
	/* and it re-encodes to the same bytes except the language byte */
	struct buf out = BUF_INIT;
	cr_assert_eq(remoting_encode_header(&c, REMOTING_ROCKETMQ, &out), 0);
	cr_assert_eq(out.len, b.len);
	cr_expect_eq(out.data[2], 0xFF);
	out.data[2] = 200;
	cr_expect_eq(memcmp(out.data, b.data, b.len), 0);
	remoting_cmd_release(&c);
	buf_free(&b);
	buf_free(&out);
}

static void bin_fails(const struct buf *b, int want, const char *what)
{
	struct remoting_cmd c;
	memset(&c, 0x5A, sizeof(c));
	int rc = decode_hdr(b->data, b->len, REMOTING_ROCKETMQ, &c);
	cr_expect_eq(rc, want, "%s: got %d", what, rc);
	cr_expect_null(c.storage, "%s", what);
}

Test(binary_header, lying_lengths)
{
	struct buf b = BUF_INIT;
	bin_fixed(&b, 1, 0, 1, 1, 0);
	size_t fixed = b.len;

	/* remark length past the header, negative, or leaving no room for E */
	static const int32_t rls[] = { 100, -1, INT32_MIN, 1, 4 };
	for (size_t i = 0; i < sizeof(rls) / sizeof(rls[0]); i++) {
		b.len = fixed;
		cr_assert_eq(buf_put_be32(&b, (uint32_t)rls[i]), 0);
		cr_assert_eq(buf_append(&b, "abcd", 4), 0);
		bin_fails(&b, RMQNS_EPROTO, "remark length");
	}

	/* E past the header or negative */
	static const int32_t els[] = { 1, 100, -1, INT32_MIN, INT32_MAX };
	for (size_t i = 0; i < sizeof(els) / sizeof(els[0]); i++) {
		b.len = fixed;
		cr_assert_eq(buf_put_be32(&b, 0), 0);
		cr_assert_eq(buf_put_be32(&b, (uint32_t)els[i]), 0);
		bin_fails(&b, RMQNS_EPROTO, "ext length");
	}

	/* entries running past the ext section */
	struct {
		const uint8_t *bytes;
		size_t n;
		const char *what;
	} ents[] = {
		{ (const uint8_t *)"\x00", 1, "half a key length" },
		{ (const uint8_t *)"\x00\x05" "ab", 4, "key past the section" },
		{ (const uint8_t *)"\x80\x00" "ab", 4, "negative key length" },
		{ (const uint8_t *)"\xFF\xFF" "ab", 4, "key length -1" },
		{ (const uint8_t *)"\x00\x01" "a\x00\x00", 5, "half a value length" },
		{ (const uint8_t *)"\x00\x01" "a\x00\x00\x00\x05" "xy", 9, "value past the section" },
		{ (const uint8_t *)"\x00\x01" "a\x80\x00\x00\x00" "xy", 9, "negative value length" },
		{ (const uint8_t *)"\x00\x01" "a\x7F\xFF\xFF\xFF" "xy", 9, "huge value length" },
		{ (const uint8_t *)"\x00\x01" "a\x00\x00\x00\x01" "b\x00", 10, "second entry cut" },
	};
	for (size_t i = 0; i < sizeof(ents) / sizeof(ents[0]); i++) {
		b.len = fixed;
		cr_assert_eq(buf_put_be32(&b, 0), 0);
		cr_assert_eq(buf_put_be32(&b, (uint32_t)ents[i].n), 0);
		cr_assert_eq(buf_append(&b, ents[i].bytes, ents[i].n), 0);
		/* Extra header bytes after the section must not rescue it. */
		cr_assert_eq(buf_append(&b, "PADDINGPADDING", 14), 0);
		bin_fails(&b, RMQNS_EPROTO, ents[i].what);
	}

	/* every truncation of a valid header fails */
	b.len = fixed;
	cr_assert_eq(buf_put_be32(&b, 2), 0);
	cr_assert_eq(buf_append(&b, "rk", 2), 0);
	struct buf e = BUF_INIT;
	bin_entry(&e, "topic", "TopicTest");
	cr_assert_eq(buf_put_be32(&b, (uint32_t)e.len), 0);
	cr_assert_eq(buf_append(&b, e.data, e.len), 0);
	for (size_t n = 0; n < b.len; n++) {
		struct buf t = { b.data, n, n };
		bin_fails(&t, RMQNS_EPROTO, "truncated");
	}
	struct remoting_cmd c;
	cr_assert_eq(decode_hdr(b.data, b.len, REMOTING_ROCKETMQ, &c), RMQNS_OK);
	remoting_cmd_release(&c);
	buf_free(&e);
	buf_free(&b);
}

Test(binary_header, nul_inside_text_is_refused)
{
	static const struct { const char *k; size_t kl; const char *v; size_t vl; const char *r; size_t rl; } cases[] = {
		{ "k", 1, "v", 1, "a\0b", 3 },
		{ "k\0", 2, "v", 1, "", 0 },
		{ "k", 1, "\0inKey", 6, "", 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct buf b = BUF_INIT;
		bin_fixed(&b, 1, 0, 1, 1, 0);
		cr_assert_eq(buf_put_be32(&b, (uint32_t)cases[i].rl), 0);
		cr_assert_eq(buf_append(&b, cases[i].r, cases[i].rl), 0);
		cr_assert_eq(buf_put_be32(&b, (uint32_t)(6 + cases[i].kl + cases[i].vl)), 0);
		cr_assert_eq(buf_put_be16(&b, (uint16_t)cases[i].kl), 0);
		cr_assert_eq(buf_append(&b, cases[i].k, cases[i].kl), 0);
		cr_assert_eq(buf_put_be32(&b, (uint32_t)cases[i].vl), 0);
		cr_assert_eq(buf_append(&b, cases[i].v, cases[i].vl), 0);
		bin_fails(&b, RMQNS_EPROTO, "NUL in text");
		buf_free(&b);
	}
}

Test(binary_header, too_many_entries)
{
	for (int n = 1024; n <= 1025; n++) {
		struct buf b = BUF_INIT, e = BUF_INIT;
		bin_fixed(&b, 1, 0, 1, 1, 0);
		cr_assert_eq(buf_put_be32(&b, 0), 0);
		for (int i = 0; i < n; i++) {
			char k[16];
			snprintf(k, sizeof(k), "k%d", i);
			bin_entry(&e, k, "v");
		}
		cr_assert_eq(buf_put_be32(&b, (uint32_t)e.len), 0);
		cr_assert_eq(buf_append(&b, e.data, e.len), 0);
		struct remoting_cmd c;
		int rc = decode_hdr(b.data, b.len, REMOTING_ROCKETMQ, &c);
		if (n == 1024) {
			cr_expect_eq(rc, RMQNS_OK);
			cr_expect_eq(c.ext_count, 1024);
			cr_expect_str_eq(remoting_ext_get(&c, "k1023"), "v");
			remoting_cmd_release(&c);
		} else {
			cr_expect_eq(rc, RMQNS_ETOOBIG);
		}
		buf_free(&b);
		buf_free(&e);
	}
}

Test(binary_header, encode_layout)
{
	struct remoting_ext_field ext[] = {
		{ "topic", "TopicTest" }, { NULL, "x" }, { "y", NULL }, { "empty", "" },
	};
	struct remoting_cmd c = {
		.code = 17, .language = LANG_JAVA, .version = 409, .opaque = 7, .flag = 1,
		.remark = "No", .ext = ext, .ext_count = 4, .serialize = REMOTING_ROCKETMQ,
	};
	struct buf b = BUF_INIT;
	cr_assert_eq(remoting_encode_header(&c, REMOTING_ROCKETMQ, &b), 0);
	static const uint8_t want[] = {
		0x00, 0x11, 0x00, 0x01, 0x99, 0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0, 2, 'N', 'o',
		0, 0, 0, 0x1F,
		0, 5, 't', 'o', 'p', 'i', 'c', 0, 0, 0, 9, 'T', 'o', 'p', 'i', 'c', 'T', 'e', 's', 't',
		0, 5, 'e', 'm', 'p', 't', 'y', 0, 0, 0, 0,
	};
	cr_assert_eq(b.len, sizeof(want));
	cr_expect_eq(memcmp(b.data, want, sizeof(want)), 0);

	/* NULL and "" remarks both go out as length 0. */
	buf_reset(&b);
	c.remark = "";
	c.ext_count = 0;
	cr_assert_eq(remoting_encode_header(&c, REMOTING_ROCKETMQ, &b), 0);
	cr_expect_eq(b.len, 21);
	cr_expect_eq(rd_be32(b.data + 13), 0);
	buf_reset(&b);
	c.remark = NULL;
	cr_assert_eq(remoting_encode_header(&c, REMOTING_ROCKETMQ, &b), 0);
	cr_expect_eq(b.len, 21);
	buf_free(&b);
}

/* ---- responses, ext reads, languages ---- */

Test(command, response_init_follows_java)
{
	struct remoting_ext_field ext[] = { { "a", "b" } };
	struct remoting_cmd req = { .code = 105, .language = LANG_GO, .version = 317, .opaque = 77,
				    .flag = 0, .remark = "x", .ext = ext, .ext_count = 1,
				    .serialize = REMOTING_ROCKETMQ,
				    .body = (const uint8_t *)"b", .body_len = 1 };
	struct remoting_cmd rsp;
	memset(&rsp, 0xEE, sizeof(rsp));
	remoting_response_init(&rsp, &req, RSP_TOPIC_NOT_EXIST, "No topic");
	cr_expect_eq(rsp.code, 17);
	cr_expect_eq(rsp.language, LANG_JAVA);
	cr_expect_eq(rsp.version, RMQNS_SERVER_VERSION);
	cr_expect_eq(rsp.opaque, 77);
	cr_expect_eq(rsp.flag, REMOTING_FLAG_RESPONSE);
	cr_expect_str_eq(rsp.remark, "No topic");
	cr_expect_eq(rsp.ext_count, 0);
	cr_expect_null(rsp.ext);
	cr_expect(!rsp.ext_present);
	cr_expect_null(rsp.body);
	cr_expect_eq(rsp.body_len, 0);
	cr_expect_null(rsp.storage);
	cr_expect_eq(rsp.serialize, REMOTING_ROCKETMQ);
	cr_expect(remoting_is_response(&rsp));
	cr_expect(!remoting_is_oneway(&rsp));

	req.serialize = REMOTING_JSON;
	req.opaque = 0;
	remoting_response_init(&rsp, &req, RSP_SUCCESS, NULL);
	cr_expect_null(rsp.remark);
	cr_expect_eq(rsp.serialize, REMOTING_JSON);
	char *s = encode_json_str(&rsp);
	cr_expect_str_eq(s, "{\"code\":0,\"flag\":1,\"language\":\"JAVA\",\"opaque\":0,"
			    "\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}");
	free(s);
}

Test(command, typed_ext_reads)
{
	struct remoting_ext_field ext[] = {
		{ "zero", "0" }, { "neg", "-1" }, { "plus", "+5" },
		{ "max", "9223372036854775807" }, { "min", "-9223372036854775808" },
		{ "over", "9223372036854775808" }, { "under", "-9223372036854775809" },
		{ "sp", " 1" }, { "sp2", "1 " }, { "empty", "" }, { "sign", "-" }, { "hex", "0x10" },
		{ "i32max", "2147483647" }, { "i32over", "2147483648" }, { "i32min", "-2147483648" },
		{ "t1", "true" }, { "t2", "TRUE" }, { "t3", "tRuE" }, { "f1", "yes" }, { "f2", "1" },
		{ "f3", "true " }, { "lead", "007" },
	};
	struct remoting_cmd c = { .ext = ext, .ext_count = sizeof(ext) / sizeof(ext[0]) };
	int64_t l = 12345;
	int32_t i = 12345;
	cr_expect(remoting_ext_get_long(&c, "zero", &l) && l == 0);
	cr_expect(remoting_ext_get_long(&c, "neg", &l) && l == -1);
	cr_expect(remoting_ext_get_long(&c, "plus", &l) && l == 5);
	cr_expect(remoting_ext_get_long(&c, "max", &l) && l == INT64_MAX);
	cr_expect(remoting_ext_get_long(&c, "min", &l) && l == INT64_MIN);
	cr_expect(remoting_ext_get_long(&c, "lead", &l) && l == 7);
	l = 99;
	static const char *bad[] = { "over", "under", "sp", "sp2", "empty", "sign", "hex", "absent" };
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		cr_expect(!remoting_ext_get_long(&c, bad[k], &l), "%s", bad[k]);
		cr_expect(!remoting_ext_get_int(&c, bad[k], &i), "%s", bad[k]);
	}
	cr_expect_eq(l, 99, "untouched on failure");
	cr_expect(remoting_ext_get_int(&c, "i32max", &i) && i == INT32_MAX);
	cr_expect(remoting_ext_get_int(&c, "i32min", &i) && i == INT32_MIN);
	cr_expect(!remoting_ext_get_int(&c, "i32over", &i));
	cr_expect(!remoting_ext_get_int(&c, "max", &i));
	cr_expect(remoting_ext_get_long(&c, "i32over", &l) && l == 2147483648LL);
	cr_expect(remoting_ext_get_bool(&c, "t1"));
	cr_expect(remoting_ext_get_bool(&c, "t2"));
	cr_expect(remoting_ext_get_bool(&c, "t3"));
	cr_expect(!remoting_ext_get_bool(&c, "f1"));
	cr_expect(!remoting_ext_get_bool(&c, "f2"));
	cr_expect(!remoting_ext_get_bool(&c, "f3"));
	cr_expect(!remoting_ext_get_bool(&c, "absent"));
	cr_expect_str_eq(remoting_ext_get(&c, "zero"), "0");
	cr_expect_null(remoting_ext_get(&c, "Zero"), "names are case-sensitive");
}

Test(command, language_names)
{
	static const char *names[] = { "JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY",
				       "OTHER", "HTTP", "GO", "PHP", "OMS", "RUST", "NODE_JS" };
	for (int i = 0; i < 14; i++) {
		cr_expect_str_eq(remoting_language_name(i), names[i]);
		cr_expect_eq(remoting_language_parse(names[i]), i);
	}
	cr_expect_str_eq(remoting_language_name(LANG_UNKNOWN), "UNKNOWN");
	cr_expect_str_eq(remoting_language_name(14), "UNKNOWN");
	cr_expect_eq(remoting_language_parse("python"), LANG_PYTHON);
	cr_expect_eq(remoting_language_parse("Node_Js"), LANG_NODE_JS);
	cr_expect_eq(remoting_language_parse("JAVAX"), LANG_UNKNOWN);
	cr_expect_eq(remoting_language_parse("JAV"), LANG_UNKNOWN);
	cr_expect_eq(remoting_language_parse(""), LANG_UNKNOWN);
	cr_expect_eq(remoting_language_parse(NULL), LANG_UNKNOWN);
}

Test(command, release_is_idempotent)
{
	struct remoting_cmd c = json_ok("{\"remark\":\"x\",\"extFields\":{\"a\":\"b\"}}");
	cr_expect_not_null(c.storage);
	remoting_cmd_release(&c);
	cr_expect_null(c.storage);
	cr_expect_null(c.remark);
	remoting_cmd_release(&c);
	remoting_cmd_release(NULL);
}

/* ---- random round trips ---- */

static uint64_t rng_state;

static uint64_t rng(void)
{
	/* xorshift64*: fixed seed, so a failure replays exactly. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

/* Random text: ASCII, JSON specials, controls and multi-byte UTF-8. */
static void rand_text(char *out, size_t cap, bool allow_empty)
{
	static const char *pieces[] = {
		"a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\x01", "\x1F", "\x7F", "{", "}",
		":", ",", "\xC3\xA9", "\xC2\x80", "\xE2\x80\xA8", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80",
		"topic", "%RETRY%", "127.0.0.1:10911",
	};
	size_t n = allow_empty ? rng() % 12 : 1 + rng() % 12;
	size_t len = 0;
	for (size_t i = 0; i < n; i++) {
		const char *p = pieces[rng() % (sizeof(pieces) / sizeof(pieces[0]))];
		size_t pl = strlen(p);
		if (len + pl + 1 > cap)
			break;
		memcpy(out + len, p, pl);
		len += pl;
	}
	if (len == 0 && !allow_empty)
		out[len++] = 'k';
	out[len] = 0;
}

struct rand_cmd {
	struct remoting_cmd cmd;
	struct remoting_ext_field ext[12];
	char keys[12][80];
	char vals[12][80];
	char remark[80];
};

static void rand_cmd_make(struct rand_cmd *r, enum remoting_serialize ser)
{
	memset(r, 0, sizeof(*r));
	struct remoting_cmd *c = &r->cmd;
	bool bin = ser == REMOTING_ROCKETMQ;
	c->code = bin ? (int16_t)rng() : (int32_t)rng();
	c->version = bin ? (int16_t)rng() : (int32_t)rng();
	c->language = (int32_t)(rng() % 15) - 1;
	c->opaque = (int32_t)rng();
	c->flag = (int32_t)(rng() % 4);
	c->serialize = ser;
	if (rng() % 3) {
		rand_text(r->remark, sizeof(r->remark), !bin);
		c->remark = r->remark;
	}
	uint32_t n = (uint32_t)(rng() % 12);
	for (uint32_t i = 0; i < n; i++) {
		/* unique keys: a prefix numbering them */
		snprintf(r->keys[i], 8, "%u", i % 100);
		size_t kl = strlen(r->keys[i]);
		rand_text(r->keys[i] + kl, sizeof(r->keys[i]) - kl, true);
		rand_text(r->vals[i], sizeof(r->vals[i]), !bin);
		r->ext[i].key = r->keys[i];
		r->ext[i].value = r->vals[i];
	}
	c->ext = n ? r->ext : NULL;
	c->ext_count = n;
	c->ext_present = n > 0 || rng() % 2;
	if (bin)
		c->ext_present = n > 0;
	if (rng() % 2) {
		c->body = (const uint8_t *)r->vals;
		c->body_len = (uint32_t)(rng() % sizeof(r->vals));
	}
}

static void expect_cmd_equal(const struct remoting_cmd *a, const struct remoting_cmd *b, int iter)
{
	cr_assert_eq(a->code, b->code, "iteration %d", iter);
	cr_assert_eq(a->version, b->version, "iteration %d", iter);
	cr_assert_eq(a->language, b->language, "iteration %d", iter);
	cr_assert_eq(a->opaque, b->opaque, "iteration %d", iter);
	cr_assert_eq(a->flag, b->flag, "iteration %d", iter);
	cr_assert_eq(a->serialize, b->serialize, "iteration %d", iter);
	if (a->remark)
		cr_assert(b->remark && !strcmp(a->remark, b->remark), "iteration %d: remark", iter);
	else
		cr_assert_null(b->remark, "iteration %d", iter);
	cr_assert_eq(a->ext_count, b->ext_count, "iteration %d", iter);
	cr_assert_eq(a->ext_present, b->ext_present, "iteration %d", iter);
	for (uint32_t i = 0; i < a->ext_count; i++) {
		cr_assert_str_eq(a->ext[i].key, b->ext[i].key, "iteration %d", iter);
		cr_assert_str_eq(a->ext[i].value, b->ext[i].value, "iteration %d", iter);
	}
	uint32_t alen = a->body ? a->body_len : 0;
	cr_assert_eq(alen, b->body_len, "iteration %d", iter);
	if (alen)
		cr_assert_eq(memcmp(a->body, b->body, alen), 0, "iteration %d", iter);
}

static void round_trips(enum remoting_serialize ser, uint64_t seed)
{
	rng_state = seed;
	struct buf out = BUF_INIT;
	for (int iter = 0; iter < 3000; iter++) {
		struct rand_cmd r;
		rand_cmd_make(&r, ser);
		buf_reset(&out);
		cr_assert_eq(remoting_encode(&r.cmd, &out), RMQNS_OK);
		uint8_t *f = dup_exact(out.data, out.len);
		size_t fs;
		cr_assert_eq(remoting_frame_cut(f, out.len, 0, &fs), RMQNS_OK);
		cr_assert_eq(fs, out.len);
		struct remoting_cmd d;
		int rc = remoting_decode(f, fs, &d);
		cr_assert_eq(rc, RMQNS_OK, "iteration %d: %d", iter, rc);
		expect_cmd_equal(&r.cmd, &d, iter);

		/* and decoding what we decoded encodes to the same bytes */
		struct buf again = BUF_INIT;
		cr_assert_eq(remoting_encode(&d, &again), RMQNS_OK);
		cr_assert_eq(again.len, out.len, "iteration %d", iter);
		cr_assert_eq(memcmp(again.data, out.data, out.len), 0, "iteration %d", iter);
		buf_free(&again);
		remoting_cmd_release(&d);
		free(f);
	}
	buf_free(&out);
}

Test(round_trip, json_random_commands)
{
	round_trips(REMOTING_JSON, 0x9E3779B97F4A7C15ULL);
}

Test(round_trip, binary_random_commands)
{
	round_trips(REMOTING_ROCKETMQ, 0xD1B54A32D192ED03ULL);
}

/* The fast JSON path and the general path must read every header alike:
 * an ignored member holding an array sends a header down the general path
 * without changing its meaning. */
Test(round_trip, fast_and_general_paths_agree)
{
	rng_state = 0x2545F4914F6CDD1DULL;
	struct buf out = BUF_INIT, slow = BUF_INIT;
	for (int iter = 0; iter < 3000; iter++) {
		struct rand_cmd r;
		rand_cmd_make(&r, REMOTING_JSON);
		buf_reset(&out);
		cr_assert_eq(remoting_encode_header(&r.cmd, REMOTING_JSON, &out), RMQNS_OK);
		buf_reset(&slow);
		cr_assert_eq(buf_append(&slow, out.data, out.len - 1), 0);
		cr_assert_eq(buf_append_str(&slow, ",\"zz\":[0]}"), 0);
		struct remoting_cmd a, b;
		cr_assert_eq(decode_hdr(out.data, out.len, REMOTING_JSON, &a), RMQNS_OK);
		cr_assert_eq(decode_hdr(slow.data, slow.len, REMOTING_JSON, &b), RMQNS_OK);
		r.cmd.body = NULL;
		r.cmd.body_len = 0;
		expect_cmd_equal(&r.cmd, &a, iter);
		expect_cmd_equal(&r.cmd, &b, iter);
		remoting_cmd_release(&a);
		remoting_cmd_release(&b);
	}
	buf_free(&out);
	buf_free(&slow);
}

/* Hand-written headers exercising what the fast path takes on itself;
 * each must read the same once a trailing array member forces the general path. */
Test(round_trip, fast_and_general_paths_agree_on_special_forms)
{
	static const char *hdrs[] = {
		"{\"extFields\":{\"n\":42,\"neg\":-7,\"t\":true,\"f\":false,\"big\":1700000000000,\"z\":0}",
		"{\"extFields\":{\"a\":\"\\u00e9\\ud83d\\ude00\\n\\t\\/\\\\\\\"\",\"\\u0041\":\"\"}",
		"{\"language\":9,\"remark\":null,\"code\":-1,\"opaque\":-0",
		"{\"language\":\"python\",\"remark\":\"\",\"extFields\":{}",
		"{\"x\":\"skip\",\"y\":12,\"z\":true,\"w\":null,\"v\":false,\"extFields\":null",
		" {\n\"code\" : 7 ,\t\"extFields\" : { \"k\" : \"v\" , \"k2\" : 5 } ",
		"{\"remark\":\"caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80 \x7F\"",
		"{\"language\":\"GO\",\"version\":317,\"remark\":\"\",\"opaque\":2147483647,\"flag\":-2147483648",
		"{\"extFields\":{\"v\":12345678901234567000,\"r\":1e-7,\"s\":-0,\"t\":1.0E+21},\"code\":100.0",
		"{\"remark\":1e400,\"extFields\":{\"\\u0000\":\"\\ud800\"},\"x\":-12345678901234567890123",
	};
	for (size_t i = 0; i < sizeof(hdrs) / sizeof(hdrs[0]); i++) {
		char a[512], b[512];
		snprintf(a, sizeof(a), "%s}", hdrs[i]);
		snprintf(b, sizeof(b), "%s,\"zz\":[0]}", hdrs[i]);
		struct remoting_cmd fa = json_ok(a), sl = json_ok(b);
		expect_cmd_equal(&fa, &sl, (int)i);
		remoting_cmd_release(&fa);
		remoting_cmd_release(&sl);
	}
}

/* ---- JSON header: what JavaScript clients write ---- */

/* Decodes "{members}" (fast path) and "{members,"zz":[0]}" (the array
 * sends it down the general path); both must succeed and agree. Returns
 * the first, the second is released. */
static struct remoting_cmd json_ok_both(const char *members)
{
	struct buf a = BUF_INIT, b = BUF_INIT;
	cr_assert_eq(buf_printf(&a, "{%s}", members), 0);
	cr_assert_eq(buf_printf(&b, "{%s%s\"zz\":[0]}", members, *members ? "," : ""), 0);
	struct remoting_cmd fast, slow;
	int rc = decode_hdr(a.data, a.len, REMOTING_JSON, &fast);
	cr_assert_eq(rc, RMQNS_OK, "fast path: %s gave %d", members, rc);
	rc = decode_hdr(b.data, b.len, REMOTING_JSON, &slow);
	cr_assert_eq(rc, RMQNS_OK, "general path: %s gave %d", members, rc);
	expect_cmd_equal(&fast, &slow, 0);
	remoting_cmd_release(&slow);
	buf_free(&a);
	buf_free(&b);
	return fast;
}

static void json_fails_both(const char *members, int want)
{
	char a[512], b[512];
	snprintf(a, sizeof(a), "{%s}", members);
	snprintf(b, sizeof(b), "{%s,\"zz\":[0]}", members);
	json_fails(a, want);
	json_fails(b, want);
}

/* ali-ons sends ext values as raw JSON numbers (§10 item 17); JavaScript
 * writes 12345678901234567890 as 12345678901234567000. Java keeps the
 * digits as text; so does rmqns, whatever the length or form. */
Test(json_text, ext_numbers_keep_their_text)
{
	struct remoting_cmd c = json_ok(
		"{\"code\":100,\"language\":\"JAVA\",\"opaque\":1,\"flag\":0,\"version\":121,"
		"\"extFields\":{\"namespace\":\"N\",\"key\":\"big\",\"value\":12345678901234567000}}");
	expect_head(&c, 100, 1, 121);
	cr_expect_str_eq(remoting_ext_get(&c, "namespace"), "N");
	cr_expect_str_eq(remoting_ext_get(&c, "key"), "big");
	cr_expect_str_eq(remoting_ext_get(&c, "value"), "12345678901234567000");
	int64_t v;
	cr_expect(!remoting_ext_get_long(&c, "value", &v), "past int64 for a typed read");
	remoting_cmd_release(&c);

	static const char *nums[] = {
		"0", "-0", "7", "-7", "9223372036854775807", "9223372036854775808",
		"-9223372036854775809", "12345678901234567890", "1e-7", "1E21", "1e+21", "1e21",
		"1.0", "1.50", "0.1", "-0.0", "2.5E-3", "1e400", "-1e-400", "1E-07",
		"123456789012345678901234567890123456789012345678901234567890",
		"0.000000000000000000000000000000000000000000000000001",
	};
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		char m[512];
		snprintf(m, sizeof(m), "\"u\":%s,\"extFields\":{\"a\":\"x\",\"v\":%s,\"w\":true},"
			 "\"remark\":%s,\"code\":105", nums[i], nums[i], nums[i]);
		c = json_ok_both(m);
		cr_expect_eq(c.code, 105);
		cr_expect_eq(c.ext_count, 3);
		cr_expect_str_eq(remoting_ext_get(&c, "v"), nums[i]);
		cr_expect_str_eq(remoting_ext_get(&c, "a"), "x");
		cr_expect_str_eq(remoting_ext_get(&c, "w"), "true");
		cr_expect_str_eq(c.ext[1].key, "v");
		cr_assert_not_null(c.remark);
		cr_expect_str_eq(c.remark, nums[i]);
		remoting_cmd_release(&c);
	}
}

Test(json_text, bad_number_tokens_still_close)
{
	static const char *bad[] = {
		"01", "-01", "1.", "-", ".5", "+1", "1e", "1e+", "0x1", "1.e5", "--1", "NaN",
		"Infinity", "-Infinity", "1_000", "1 2", "1.5.3", "1e5e6", "-\"1\"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char m[128];
		snprintf(m, sizeof(m), "\"extFields\":{\"v\":%s}", bad[i]);
		json_fails_both(m, RMQNS_EJSON);
		snprintf(m, sizeof(m), "\"remark\":%s", bad[i]);
		json_fails_both(m, RMQNS_EJSON);
		snprintf(m, sizeof(m), "\"u\":%s", bad[i]);
		json_fails_both(m, RMQNS_EJSON);
	}
	/* number text kept as written must not make bad JSON good */
	json_fails_both("\"extFields\":{1:2}", RMQNS_EJSON);
	json_fails_both("\"extFields\":{\"a\":1,2}", RMQNS_EJSON);
	json_fails_both("\"extFields\":{\"a\" 1}", RMQNS_EJSON);
	json_fails_both("\"remark\":1\"x\"", RMQNS_EJSON);
	json_fails_both("\"extFields\":{\"a\":[1,01]}", RMQNS_EJSON);
	json_fails_both("5:1", RMQNS_EJSON);
}

/* code, flag, version, opaque are Java ints: integral decimals are taken,
 * anything past int32 or with a fraction closes the connection. */
Test(json_text, top_level_numbers)
{
	static const struct { const char *m; int32_t code; } ok[] = {
		{ "\"code\":100.0", 100 }, { "\"code\":100.000", 100 }, { "\"code\":-0.0", 0 },
		{ "\"code\":-0", 0 }, { "\"code\":2147483647.0", INT32_MAX },
		{ "\"code\":-2147483648.00", INT32_MIN }, { "\"code\":1e2", 100 },
		{ "\"code\":1.05E2", 105 }, { "\"code\":10500e-2", 105 },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct remoting_cmd c = json_ok_both(ok[i].m);
		cr_expect_eq(c.code, ok[i].code, "%s", ok[i].m);
		remoting_cmd_release(&c);
	}
	struct remoting_cmd c = json_ok_both("\"opaque\":7.0,\"flag\":1.0,\"version\":121.0");
	cr_expect_eq(c.opaque, 7);
	cr_expect_eq(c.flag, 1);
	cr_expect_eq(c.version, 121);
	remoting_cmd_release(&c);

	static const char *bad[] = {
		"\"code\":100.5", "\"code\":2147483648.0", "\"code\":2147483648",
		"\"code\":12345678901234567890", "\"opaque\":-2147483649", "\"code\":1e400",
		"\"code\":1e10", "\"version\":0.5", "\"flag\":-1e-7",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		json_fails_both(bad[i], RMQNS_EJSON);
	/* a language ordinal is an integer, as in Java's enum reader */
	json_fails_both("\"language\":9.0", RMQNS_EJSON);
	json_fails_both("\"language\":12345678901234567890", RMQNS_EJSON);
	json_fails_both("\"language\":14", RMQNS_EPROTO);
}

/* U+0000 (no C string holds it) and lone surrogates (not UTF-8; what
 * JSON.stringify writes for a broken string) read as U+FFFD. */
#define FFFD "\xEF\xBF\xBD"
Test(json_text, nul_and_lone_surrogates_read_as_replacement)
{
	static const struct { const char *esc, *want; } cases[] = {
		{ "a\\u0000b", "a" FFFD "b" }, { "\\u0000", FFFD }, { "\\ud800", FFFD },
		{ "\\uDC00", FFFD }, { "\\udbff", FFFD }, { "\\ud800\\u0041", FFFD "A" },
		{ "x\\ud800", "x" FFFD }, { "\\ud800\\ud800\\udc00", FFFD "\xF0\x90\x80\x80" },
		{ "\\udc00\\ud800", FFFD FFFD }, { "\\ud83d\\ude00", "\xF0\x9F\x98\x80" },
		{ "\\ud800\\n", FFFD "\n" }, { "\\ud800\\\\u0041", FFFD "\\u0041" },
		{ "\\udbff\\udfff\\u0000", "\xF4\x8F\xBF\xBF" FFFD },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char m[256];
		snprintf(m, sizeof(m), "\"extFields\":{\"k\":\"%s\",\"%s\":\"v\"},\"remark\":\"%s\"",
			 cases[i].esc, cases[i].esc, cases[i].esc);
		struct remoting_cmd c = json_ok_both(m);
		cr_assert_eq(c.ext_count, 2, "%s", cases[i].esc);
		cr_expect_str_eq(remoting_ext_get(&c, "k"), cases[i].want, "%s", cases[i].esc);
		cr_expect_str_eq(c.ext[1].key, cases[i].want, "%s", cases[i].esc);
		cr_expect_str_eq(c.remark, cases[i].want, "%s", cases[i].esc);
		remoting_cmd_release(&c);
	}
	/* the language name too */
	struct remoting_cmd c = json_ok_both("\"language\":\"GO\\u0000\"");
	cr_expect_eq(c.language, LANG_UNKNOWN);
	remoting_cmd_release(&c);
}

/* What was read as U+FFFD is written as U+FFFD: raw in the header
 * encoder's (fastjson default) form, \uFFFD in the standard form. */
Test(json_text, replacement_reencodes_as_itself)
{
	struct remoting_cmd c = json_ok("{\"extFields\":{\"value\":\"a\\u0000b\\ud800\"},\"opaque\":3}");
	const char *v = remoting_ext_get(&c, "value");
	cr_assert_str_eq(v, "a" FFFD "b" FFFD);

	char *s = encode_json_str(&c);
	cr_expect_not_null(strstr(s, "\"extFields\":{\"value\":\"a" FFFD "b" FFFD "\"}"), "%s", s);
	struct remoting_cmd back = json_ok(s);
	cr_expect_str_eq(remoting_ext_get(&back, "value"), v);
	remoting_cmd_release(&back);
	free(s);

	struct buf b = BUF_INIT;
	cr_assert_eq(json_escape(&b, v, strlen(v), JW_STANDARD), 0);
	cr_assert_eq(buf_terminate(&b), 0);
	cr_expect_str_eq((char *)b.data, "a\\uFFFDb\\uFFFD");
	buf_reset(&b);
	cr_assert_eq(json_escape(&b, v, strlen(v), JW_DEFAULT), 0);
	cr_assert_eq(buf_terminate(&b), 0);
	cr_expect_str_eq((char *)b.data, v);
	buf_free(&b);
	remoting_cmd_release(&c);
}

/* Java decodes a header's bytes with its UTF-8 decoder before parsing:
 * each ill-formed sequence (its longest well-formed start, at least one
 * byte) becomes U+FFFD instead of closing the connection. */
static const struct { const char *raw, *want; } bad_utf8_cases[] = {
	{ "\xC3", FFFD }, { "a\xFF" "b", "a" FFFD "b" }, { "\x80", FFFD },
	{ "\xC0\xAF", FFFD FFFD }, { "\xED\xA0\x80", FFFD FFFD FFFD },
	{ "\xF5\x80\x80\x80", FFFD FFFD FFFD FFFD }, { "\xE4\xB8" "x", FFFD "x" },
	{ "\xF0\x9F\x98", FFFD }, { "\xF0\x9F\x98\xC3\xA9", FFFD "\xC3\xA9" },
	{ "\xE0\x80\x80", FFFD FFFD FFFD }, { "\xF4\x90\x80\x80", FFFD FFFD FFFD FFFD },
	{ "caf\xC3\xA9\xC3", "caf\xC3\xA9" FFFD },
};
#define BAD_UTF8_CASES (sizeof(bad_utf8_cases) / sizeof(bad_utf8_cases[0]))

Test(json_text, invalid_utf8_reads_as_replacement)
{
	for (size_t i = 0; i < BAD_UTF8_CASES; i++) {
		char h[256];
		snprintf(h, sizeof(h), "{\"code\":105,\"extFields\":{\"topic\":\"%s\",\"%s\":\"v\"},"
			 "\"remark\":\"%s\",\"opaque\":4}", bad_utf8_cases[i].raw, bad_utf8_cases[i].raw, bad_utf8_cases[i].raw);
		struct remoting_cmd c;
		int rc = decode_json(h, &c);
		cr_assert_eq(rc, RMQNS_OK, "case %zu gave %d", i, rc);
		cr_expect_eq(c.code, 105);
		cr_expect_eq(c.opaque, 4);
		cr_assert_eq(c.ext_count, 2, "case %zu", i);
		cr_expect_str_eq(remoting_ext_get(&c, "topic"), bad_utf8_cases[i].want, "case %zu", i);
		cr_expect_str_eq(c.ext[1].key, bad_utf8_cases[i].want, "case %zu", i);
		cr_expect_str_eq(c.remark, bad_utf8_cases[i].want, "case %zu", i);
		/* and it is written back as U+FFFD */
		char *s = encode_json_str(&c);
		struct remoting_cmd back = json_ok(s);
		cr_expect_str_eq(remoting_ext_get(&back, "topic"), bad_utf8_cases[i].want, "case %zu", i);
		remoting_cmd_release(&back);
		free(s);
		remoting_cmd_release(&c);
	}
	struct remoting_cmd c = json_ok("{\"language\":\"GO\xFF\"}");
	cr_expect_eq(c.language, LANG_UNKNOWN);
	remoting_cmd_release(&c);
	/* bytes that are not text outside a string are still not JSON */
	json_fails("{\"code\":1,\xFF:2}", RMQNS_EJSON);
	json_fails("\xC3\xA9{}", RMQNS_EJSON);
}

/* A binary header's text reads as the JSON header's does: each ill-formed
 * sequence becomes U+FFFD (Java decodes both with its UTF-8 decoder). */
Test(binary_header, invalid_utf8_reads_as_replacement_as_in_json)
{
	for (size_t i = 0; i < BAD_UTF8_CASES; i++) {
		const char *raw = bad_utf8_cases[i].raw, *want = bad_utf8_cases[i].want;
		struct remoting_ext_field ext[] = { { "topic", raw }, { raw, "v" } };
		struct remoting_cmd c = {
			.code = 105, .language = LANG_JAVA, .opaque = 4, .remark = raw, .ext = ext,
			.ext_count = 2, .serialize = REMOTING_ROCKETMQ,
		};
		struct buf b = BUF_INIT;
		cr_assert_eq(remoting_encode_header(&c, REMOTING_ROCKETMQ, &b), 0);
		struct remoting_cmd d;
		cr_assert_eq(decode_hdr(b.data, b.len, REMOTING_ROCKETMQ, &d), RMQNS_OK, "case %zu", i);
		cr_assert_eq(d.ext_count, 2, "case %zu", i);
		cr_expect_str_eq(remoting_ext_get(&d, "topic"), want, "case %zu", i);
		cr_expect_str_eq(d.ext[1].key, want, "case %zu", i);
		cr_expect_str_eq(d.remark, want, "case %zu", i);
		remoting_cmd_release(&d);
		buf_free(&b);
	}
}

/* An ext value or remark that is a container keeps its compact text with
 * every number as written: integers past int64 (a JavaScript client's
 * 12345678901234567000, a BigInteger) do not close the connection, as in
 * Java, which hands the String field the container's text. */
Test(json_text, numbers_inside_ext_containers_keep_their_text)
{
	struct remoting_cmd c = json_ok(
		"{\"code\":105,\"extFields\":{\"a\":\"x\",\"m\":{\"big\":12345678901234567890,"
		"\"neg\":-99999999999999999999999, \"l\":[1, 1.50, 1e400, -0, 9223372036854775808]},"
		"\"arr\":[18446744073709551616]},\"remark\":[123456789012345678901234567890],"
		"\"zz\":{\"n\":[99999999999999999999]},\"opaque\":6}");
	cr_expect_eq(c.code, 105);
	cr_expect_eq(c.opaque, 6);
	cr_assert_eq(c.ext_count, 3);
	cr_expect_str_eq(remoting_ext_get(&c, "a"), "x");
	cr_expect_str_eq(remoting_ext_get(&c, "m"),
			 "{\"big\":12345678901234567890,\"neg\":-99999999999999999999999,"
			 "\"l\":[1,1.50,1e400,-0,9223372036854775808]}");
	cr_expect_str_eq(remoting_ext_get(&c, "arr"), "[18446744073709551616]");
	cr_expect_str_eq(c.remark, "[123456789012345678901234567890]");
	remoting_cmd_release(&c);
	/* the container's strings are written in fastjson's form */
	c = json_ok("{\"extFields\":{\"m\":{\"k\\u00e9\":\"a\\\"b\\n\\u0001/\"}}}");
	cr_expect_str_eq(remoting_ext_get(&c, "m"), "{\"k\xC3\xA9\":\"a\\\"b\\n\\u0001/\"}");
	remoting_cmd_release(&c);
	/* a bad number inside is still bad */
	json_fails("{\"extFields\":{\"m\":[12345678901234567890x]}}", RMQNS_EJSON);
	json_fails("{\"extFields\":{\"m\":[1.]}}", RMQNS_EJSON);
}

/* Random numbers of every length and form, as ext values, remark and
 * ignored members, read the same on both paths: as the text sent. */
static void rand_number(char *out, size_t cap)
{
	size_t n = 0;
	if (rng() % 3 == 0)
		out[n++] = '-';
	size_t digits = rng() % 4 == 0 ? 1 : 1 + rng() % 60;
	for (size_t i = 0; i < digits && n + 1 < cap / 2; i++)
		out[n++] = (char)('0' + (i == 0 ? (digits == 1 ? rng() % 10 : 1 + rng() % 9) : rng() % 10));
	if (rng() % 3 == 0) {
		out[n++] = '.';
		for (size_t i = 1 + rng() % 20; i > 0; i--)
			out[n++] = (char)('0' + rng() % 10);
	}
	if (rng() % 3 == 0) {
		out[n++] = rng() % 2 ? 'e' : 'E';
		if (rng() % 2)
			out[n++] = rng() % 2 ? '+' : '-';
		for (size_t i = 1 + rng() % 4; i > 0; i--)
			out[n++] = (char)('0' + rng() % 10);
	}
	out[n] = 0;
}

Test(round_trip, fast_and_general_paths_agree_on_numbers)
{
	rng_state = 0x94D049BB133111EBULL;
	for (int iter = 0; iter < 2000; iter++) {
		char nums[6][128], m[1024];
		for (int i = 0; i < 6; i++)
			rand_number(nums[i], sizeof(nums[i]));
		snprintf(m, sizeof(m),
			 "\"code\":%d,\"x\":%s,\"extFields\":{\"a\":%s,\"b\":\"%s\",\"c\":%s,\"d\":%s},"
			 "\"remark\":%s,\"opaque\":%d", (int)(rng() % 400), nums[0], nums[1], nums[2],
			 nums[3], nums[4], nums[5], iter);
		struct remoting_cmd c = json_ok_both(m);
		cr_assert_eq(c.opaque, iter);
		cr_assert_eq(c.ext_count, 4, "%s", m);
		cr_assert_str_eq(c.ext[0].value, nums[1], "%s", m);
		cr_assert_str_eq(c.ext[1].value, nums[2], "%s", m);
		cr_assert_str_eq(c.ext[2].value, nums[3], "%s", m);
		cr_assert_str_eq(c.ext[3].value, nums[4], "%s", m);
		cr_assert_str_eq(c.remark, nums[5], "%s", m);
		remoting_cmd_release(&c);
	}
}

/* ---- malformed real frames ---- */

#ifdef TESTDATA_DIR
static uint8_t *load_frame(const char *name, size_t *len)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/java-4.9.8/frames/%s", TESTDATA_DIR, name);
	FILE *f = fopen(path, "rb");
	cr_assert(f, "%s", path);
	uint8_t tmp[1 << 16];
	*len = fread(tmp, 1, sizeof(tmp), f);
	fclose(f);
	return dup_exact(tmp, *len);
}

static const char *const sample_frames[] = {
	"00001-c001-c2s-req-code103.bin",      /* JSON, 7 ext fields, body */
	"00022-c005-s2c-rsp-to105-code17.bin", /* JSON with remark */
	"00124-c028-c2s-req-code105.bin",      /* binary request */
	"00127-c029-s2c-rsp-to105-code17.bin", /* binary with remark */
	"00128-c030-c2s-req-code100.bin",      /* binary, 3 ext fields */
	"00151-c037-s2c-rsp-to322-code0.bin",  /* JSON with ext and body */
};

Test(malformed, every_truncation_of_real_headers_fails)
{
	for (size_t s = 0; s < sizeof(sample_frames) / sizeof(sample_frames[0]); s++) {
		size_t len;
		uint8_t *f = load_frame(sample_frames[s], &len);
		uint32_t word = rd_be32(f + 4);
		size_t hlen = word & 0xFFFFFF;
		enum remoting_serialize ser = (enum remoting_serialize)(word >> 24);
		for (size_t n = 0; n < hlen; n++) {
			struct remoting_cmd c;
			int rc = decode_hdr(f + 8, n, ser, &c);
			cr_expect(rc == RMQNS_EJSON || rc == RMQNS_EPROTO, "%s cut at %zu: %d",
				  sample_frames[s], n, rc);
		}
		/* every prefix of the frame is incomplete */
		for (size_t n = 0; n < len; n++) {
			uint8_t *p = dup_exact(f, n);
			size_t fs;
			cr_expect_eq(remoting_frame_cut(p, n, 0, &fs), RMQNS_EAGAIN);
			free(p);
		}
		/* a frame length one short makes the header stick out, or cuts the body */
		uint8_t *p = dup_exact(f, len);
		wr_be32(p, (uint32_t)(4 + hlen - 1));
		size_t fs;
		cr_expect_eq(remoting_frame_cut(p, len, 0, &fs), RMQNS_EPROTO);
		struct remoting_cmd c;
		cr_expect_eq(remoting_decode(p, len, &c), RMQNS_EPROTO);
		free(p);
		free(f);
	}
}

Test(malformed, random_corruption_never_crashes)
{
	rng_state = 0xA0761D6478BD642FULL;
	for (size_t s = 0; s < sizeof(sample_frames) / sizeof(sample_frames[0]); s++) {
		size_t len;
		uint8_t *orig = load_frame(sample_frames[s], &len);
		for (int iter = 0; iter < 1500; iter++) {
			uint8_t *f = dup_exact(orig, len);
			int flips = 1 + (int)(rng() % 4);
			for (int k = 0; k < flips; k++) {
				/* mostly hit the header, where lengths live */
				size_t hl = (rd_be32(orig + 4) & 0xFFFFFF) + 8;
				size_t at = rng() % 4 ? rng() % hl : rng() % len;
				f[at] = (uint8_t)rng();
			}
			size_t fs;
			int rc = remoting_frame_cut(f, len, 0, &fs);
			if (rc == RMQNS_OK) {
				struct remoting_cmd c;
				if (remoting_decode(f, fs, &c) == RMQNS_OK) {
					struct buf b = BUF_INIT;
					cr_expect_eq(remoting_encode(&c, &b), RMQNS_OK);
					buf_free(&b);
					remoting_cmd_release(&c);
				}
			} else {
				cr_expect(rc == RMQNS_EAGAIN || rc == RMQNS_EPROTO || rc == RMQNS_ETOOBIG);
			}
			free(f);
		}
		free(orig);
	}
}
#endif
