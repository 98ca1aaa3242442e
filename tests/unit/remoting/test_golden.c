/* Golden tests: every frame captured between real Java peers decodes to
 * what its index.jsonl records, and re-encodes to the same bytes. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/err.h"
#include "rmqns/remoting.h"
#include "test_util.h"

#ifndef TESTDATA_DIR
#error "TESTDATA_DIR must name tests/data"
#endif

static void expect_ext_equals(const struct remoting_cmd *cmd, const json_t *ext, const char *file)
{
	size_t want = json_is_object(ext) ? json_object_size(ext) : 0;
	cr_expect_eq(cmd->ext_count, want, "%s: %u ext fields, index has %zu", file,
		     cmd->ext_count, want);
	if (!json_is_object(ext))
		return;
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)ext, k, v) {
		const char *got = remoting_ext_get(cmd, k);
		cr_expect(got != NULL, "%s: ext %s missing", file, k);
		if (got)
			cr_expect_str_eq(got, json_string_value(v), "%s: ext %s", file, k);
	}
}

/* Fields two commands must share after a trip through a serialization;
 * ext fields compared as a map. */
static void expect_same_cmd(const struct remoting_cmd *a, const struct remoting_cmd *b,
			    const char *file)
{
	cr_expect_eq(a->code, b->code, "%s", file);
	cr_expect_eq(a->opaque, b->opaque, "%s", file);
	cr_expect_eq(a->flag, b->flag, "%s", file);
	cr_expect_eq(a->language, b->language, "%s", file);
	cr_expect_eq(a->version, b->version, "%s", file);
	if (a->remark && *a->remark)
		cr_expect(b->remark && strcmp(a->remark, b->remark) == 0, "%s: remark", file);
	else
		cr_expect(!b->remark || !*b->remark, "%s: remark", file);
	cr_expect_eq(a->ext_count, b->ext_count, "%s", file);
	for (uint32_t i = 0; i < a->ext_count; i++) {
		const char *v = remoting_ext_get(b, a->ext[i].key);
		cr_expect(v && strcmp(v, a->ext[i].value) == 0, "%s: ext %s", file, a->ext[i].key);
	}
}

static void check_frame(const char *dir, const json_t *rec, int *checked)
{
	const char *rel = json_string_value(json_object_get(rec, "file"));
	cr_assert(rel);
	char path[2048];
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	size_t len;
	uint8_t *frame = tu_load(path, &len);

	size_t cut = 0;
	cr_expect_eq(remoting_frame_cut(frame, len, 0, &cut), RMQNS_OK, "%s", rel);
	cr_expect_eq(cut, len, "%s", rel);
	cr_expect_eq(remoting_frame_cut(frame, len - 1, 0, &cut), RMQNS_EAGAIN, "%s", rel);

	struct remoting_cmd cmd;
	int rc = remoting_decode(frame, len, &cmd);
	cr_assert_eq(rc, RMQNS_OK, "%s: decode %d", rel, rc);

	cr_expect_eq(cmd.code, json_integer_value(json_object_get(rec, "code")), "%s", rel);
	cr_expect_eq(cmd.opaque, json_integer_value(json_object_get(rec, "opaque")), "%s", rel);
	cr_expect_eq(cmd.flag, json_integer_value(json_object_get(rec, "flag")), "%s", rel);
	cr_expect_eq(cmd.version, json_integer_value(json_object_get(rec, "version")), "%s", rel);
	cr_expect_str_eq(remoting_language_name(cmd.language),
			 json_string_value(json_object_get(rec, "language")), "%s", rel);
	cr_expect_eq((int)cmd.serialize, json_integer_value(json_object_get(rec, "serialize_type")),
		     "%s", rel);
	cr_expect_eq(remoting_is_response(&cmd), json_is_true(json_object_get(rec, "is_response")),
		     "%s", rel);
	cr_expect_eq(remoting_is_oneway(&cmd), json_is_true(json_object_get(rec, "is_oneway")),
		     "%s", rel);

	const json_t *remark = json_object_get(rec, "remark");
	if (json_is_string(remark))
		cr_expect(cmd.remark && strcmp(cmd.remark, json_string_value(remark)) == 0,
			  "%s: remark", rel);
	else
		cr_expect_null(cmd.remark, "%s: remark", rel);

	const json_t *ext = json_object_get(rec, "ext_fields");
	expect_ext_equals(&cmd, ext, rel);
	if (cmd.serialize == REMOTING_JSON)
		cr_expect_eq(cmd.ext_present, json_is_object(ext), "%s: extFields presence", rel);

	size_t hlen = rd_be32(frame + 4) & 0xFFFFFF;
	cr_expect_eq((json_int_t)hlen, json_integer_value(json_object_get(rec, "header_len")), "%s", rel);
	cr_expect_eq((json_int_t)cmd.body_len, json_integer_value(json_object_get(rec, "body_len")),
		     "%s", rel);
	if (cmd.body_len)
		cr_expect_eq(cmd.body, frame + 8 + hlen, "%s: body points into the frame", rel);
	else
		cr_expect_null(cmd.body, "%s", rel);

	/* Re-encoding: header and whole frame byte for byte. Ext fields keep
	 * their wire order, so even Java's hash order comes back unchanged. */
	struct buf out = BUF_INIT;
	cr_assert_eq(remoting_encode_header(&cmd, cmd.serialize, &out), RMQNS_OK);
	cr_expect_eq(out.len, hlen, "%s: header length %zu vs %zu", rel, out.len, hlen);
	cr_expect(out.len == hlen && memcmp(out.data, frame + 8, hlen) == 0,
		  "%s: header bytes differ:\n%.*s\n%.*s", rel, (int)out.len, out.data, (int)hlen,
		  frame + 8);
	buf_reset(&out);
	cr_assert_eq(remoting_encode(&cmd, &out), RMQNS_OK);
	cr_expect(out.len == len && memcmp(out.data, frame, len) == 0, "%s: frame bytes differ", rel);

	/* Through the other serialization and back: same command. */
	buf_reset(&out);
	enum remoting_serialize other = cmd.serialize == REMOTING_JSON ? REMOTING_ROCKETMQ : REMOTING_JSON;
	cr_assert_eq(remoting_encode_header(&cmd, other, &out), RMQNS_OK);
	struct remoting_cmd back;
	cr_assert_eq(remoting_decode_header(out.data, out.len, other, &back), RMQNS_OK, "%s", rel);
	expect_same_cmd(&cmd, &back, rel);
	remoting_cmd_release(&back);

	buf_free(&out);
	remoting_cmd_release(&cmd);
	free(frame);
	(*checked)++;
}

static int check_capture(const char *sub)
{
	char dir[1024], index[1100];
	snprintf(dir, sizeof(dir), "%s/%s", TESTDATA_DIR, sub);
	snprintf(index, sizeof(index), "%s/index.jsonl", dir);
	FILE *f = fopen(index, "r");
	cr_assert(f, "cannot open %s", index);
	char *line = NULL;
	size_t cap = 0;
	int checked = 0;
	while (getline(&line, &cap, f) > 0) {
		json_error_t e;
		json_t *rec = json_loads(line, 0, &e);
		cr_assert(rec, "%s: %s", index, e.text);
		check_frame(dir, rec, &checked);
		json_decref(rec);
	}
	free(line);
	fclose(f);
	return checked;
}

Test(golden, java_4_9_8)
{
	cr_expect_eq(check_capture("java-4.9.8"), 153);
}

Test(golden, java_5_1_4_basic)
{
	cr_expect_eq(check_capture("java-5.1.4/s1-basic"), 76);
}

Test(golden, java_5_1_4_acting_master)
{
	cr_expect_eq(check_capture("java-5.1.4/s2-acting-master"), 575);
}

Test(golden, java_5_1_4_compressed)
{
	cr_expect_eq(check_capture("java-5.1.4/s3-compressed"), 36);
}

/* The hex examples of protocol.md §2.3, decoded and rebuilt. */
Test(golden, protocol_examples)
{
	static const char json_hdr[] =
		"{\"code\":105,\"extFields\":{\"topic\":\"TopicTest\"},\"flag\":0,\"language\":\"JAVA\","
		"\"opaque\":7,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":479}";
	static const uint8_t bin_frame[] = {
		0x00, 0x00, 0x00, 0x2d, 0x01, 0x00, 0x00, 0x29, 0x00, 0x69, 0x00, 0x01, 0xdf, 0x00,
		0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x14, 0x00, 0x05, 't', 'o', 'p', 'i', 'c', 0x00, 0x00, 0x00, 0x09, 'T', 'o', 'p',
		'i', 'c', 'T', 'e', 's', 't',
	};
	struct remoting_ext_field ext = { "topic", "TopicTest" };
	struct remoting_cmd cmd = {
		.code = 105, .language = LANG_JAVA, .version = 479, .opaque = 7,
		.ext = &ext, .ext_count = 1, .serialize = REMOTING_JSON,
	};
	struct buf out = BUF_INIT;
	cr_assert_eq(remoting_encode(&cmd, &out), 0);
	cr_assert_eq(out.len, 139);
	cr_expect_eq(rd_be32(out.data), 0x87);
	cr_expect_eq(rd_be32(out.data + 4), 0x83);
	cr_expect_eq(memcmp(out.data + 8, json_hdr, sizeof(json_hdr) - 1), 0);

	buf_reset(&out);
	cmd.serialize = REMOTING_ROCKETMQ;
	cr_assert_eq(remoting_encode(&cmd, &out), 0);
	cr_assert_eq(out.len, sizeof(bin_frame));
	cr_expect_eq(memcmp(out.data, bin_frame, sizeof(bin_frame)), 0);
	buf_free(&out);

	struct remoting_cmd d;
	cr_assert_eq(remoting_decode(bin_frame, sizeof(bin_frame), &d), 0);
	cr_expect_eq(d.code, 105);
	cr_expect_eq(d.version, 479);
	cr_expect_eq(d.opaque, 7);
	cr_expect_str_eq(remoting_ext_get(&d, "topic"), "TopicTest");
	remoting_cmd_release(&d);
}

/* Every captured JSON frame with ext fields, changed the two ways Java
 * takes in stride: an ext value holding an integer past int64 inside a
 * container, and a byte that is not UTF-8 at the start of the first ext
 * value. Each must decode to the original command plus that entry, with
 * U+FFFD for the byte. */
static bool widen_header(const uint8_t *frame, size_t len, struct buf *out, size_t *first_value)
{
	static const char ext_key[] = "\"extFields\":{\"";
	static const char extra[] = "\"zbig\":{\"n\":[12345678901234567890,-99999999999999999999]},";
	uint32_t word = rd_be32(frame + 4);
	size_t hlen = word & 0xFFFFFF;
	if (word >> 24 != REMOTING_JSON)
		return false;
	const uint8_t *h = frame + 8;
	const uint8_t *at = memmem(h, hlen, ext_key, sizeof(ext_key) - 1);
	if (!at)
		return false;
	size_t ins = (size_t)(at - h) + sizeof(ext_key) - 2; /* at the first key's quote */
	const uint8_t *sep = memmem(h + ins, hlen - ins, "\":\"", 3);
	if (!sep || sep[3] == '"' || sep[3] == '\\')
		return false;
	size_t val = (size_t)(sep - h) + 3; /* the first value's first byte */
	size_t blen = len - 8 - hlen;
	buf_reset(out);
	cr_assert_eq(buf_put_be32(out, (uint32_t)(4 + hlen + sizeof(extra) - 1 + blen)), 0);
	cr_assert_eq(buf_put_be32(out, (uint32_t)(hlen + sizeof(extra) - 1)), 0);
	cr_assert_eq(buf_append(out, h, ins), 0);
	cr_assert_eq(buf_append(out, extra, sizeof(extra) - 1), 0);
	cr_assert_eq(buf_append(out, h + ins, val - ins), 0);
	cr_assert_eq(buf_putc(out, 0xFF), 0);
	cr_assert_eq(buf_append(out, h + val + 1, hlen - val - 1 + blen), 0);
	*first_value = val;
	return true;
}

Test(golden, java_frames_with_big_integers_and_bad_utf8_in_ext)
{
	char dir[1024];
	snprintf(dir, sizeof(dir), "%s/java-4.9.8/frames", TESTDATA_DIR);
	DIR *d = opendir(dir);
	cr_assert(d, "%s", dir);
	struct dirent *e;
	struct buf wide = BUF_INIT;
	int checked = 0;
	while ((e = readdir(d))) {
		if (!strstr(e->d_name, ".bin"))
			continue;
		char path[2048];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		size_t len, first;
		uint8_t *frame = tu_load(path, &len);
		if (!widen_header(frame, len, &wide, &first)) {
			free(frame);
			continue;
		}
		struct remoting_cmd a, b;
		cr_assert_eq(remoting_decode(frame, len, &a), RMQNS_OK, "%s", e->d_name);
		int rc = remoting_decode(wide.data, wide.len, &b);
		cr_assert_eq(rc, RMQNS_OK, "%s changed: %d", e->d_name, rc);
		cr_expect_eq(b.code, a.code, "%s", e->d_name);
		cr_expect_eq(b.opaque, a.opaque, "%s", e->d_name);
		cr_expect_eq(b.flag, a.flag, "%s", e->d_name);
		cr_expect_eq(b.version, a.version, "%s", e->d_name);
		cr_expect_eq(b.language, a.language, "%s", e->d_name);
		cr_expect_eq(b.body_len, a.body_len, "%s", e->d_name);
		cr_assert_eq(b.ext_count, a.ext_count + 1, "%s", e->d_name);
		cr_expect_str_eq(b.ext[0].key, "zbig", "%s", e->d_name);
		cr_expect_str_eq(b.ext[0].value, "{\"n\":[12345678901234567890,-99999999999999999999]}",
				 "%s", e->d_name);
		char want[512];
		snprintf(want, sizeof(want), "\xEF\xBF\xBD%s", a.ext[0].value + 1);
		cr_expect_str_eq(b.ext[1].value, want, "%s", e->d_name);
		for (uint32_t i = 1; i < a.ext_count; i++) {
			cr_expect_str_eq(b.ext[i + 1].key, a.ext[i].key, "%s", e->d_name);
			cr_expect_str_eq(b.ext[i + 1].value, a.ext[i].value, "%s", e->d_name);
		}
		remoting_cmd_release(&a);
		remoting_cmd_release(&b);
		free(frame);
		checked++;
	}
	closedir(d);
	buf_free(&wide);
	cr_expect_gt(checked, 50, "only %d frames with ext fields", checked);
}
