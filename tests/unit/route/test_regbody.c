/* The REGISTER_BROKER body decoder: captured Java bodies (plain, honest
 * compressed, compressed flagged plain), the bare wrapper, the crc32 check,
 * and one test per malformed-input class. */
#include <zlib.h>

#include "rmqns/yield.h"

#include "route_test_util.h"

static int decode(const void *body, size_t len, bool compressed, int32_t version, size_t max,
		  struct regbody *rb, char *why)
{
	return regbody_decode(body, len, compressed, version, max, rb, why, 160);
}

/* A compressed body of this version is refused, its reason naming what;
 * returns the refusal's code. */
static int refused(const uint8_t *z, size_t len, int32_t version, const char *what)
{
	struct regbody rb;
	char why[160];
	int rc = decode(z, len, true, version, 0, &rb, why);
	cr_expect_neq(rc, 0, "refused for %s", what);
	cr_expect(strstr(why, what) != NULL, "%s", why);
	return rc;
}

static const struct regbody_topic *topic(const struct regbody *rb, const char *name)
{
	const struct regbody_topic *t = regbody_find_topic(rb, name);
	cr_assert_not_null(t, "topic %s missing", name);
	return t;
}

Test(regbody, plain_json_from_a_java_broker)
{
	struct tu_frame f;
	struct regbody rb;
	char why[160];

	tu_frame_load(&f, "java-4.9.8/frames/00001-c001-c2s-req-code103.bin");
	cr_assert_eq(decode(f.cmd.body, f.cmd.body_len, false, f.cmd.version, 0, &rb, why), 0, "%s", why);
	cr_expect_eq(rb.dv.counter, 0);
	cr_expect_eq(rb.dv.timestamp, 1795940457587LL);
	cr_expect(rb.has_filters && rb.n_filters == 0, "an empty filter list is a list");
	const struct regbody_topic *t = topic(&rb, "SCHEDULE_TOPIC_XXXX");
	cr_expect_eq(t->read_queues, 18);
	cr_expect_eq(t->write_queues, 18);
	cr_expect_eq(t->perm, 6);
	t = topic(&rb, "TBW102");
	cr_expect_eq(t->perm, 7);
	cr_expect_eq(t->read_queues, 8);
	int64_t crc;
	cr_assert(remoting_ext_get_long(&f.cmd, "bodyCrc32", &crc));
	cr_expect(regbody_crc_matches(f.cmd.body, f.cmd.body_len, crc), "the broker's own crc32 matches");
	cr_expect(!regbody_crc_matches(f.cmd.body, f.cmd.body_len, crc ^ 1), "crc32 not match");
	cr_expect(regbody_crc_matches(f.cmd.body, f.cmd.body_len, 0), "0 means unchecked");
	cr_expect(!regbody_crc_matches(NULL, 0, 5), "a missing body has crc 0");
	regbody_free(&rb);
	tu_frame_free(&f);
}

Test(regbody, compressed_body_from_a_4x_broker)
{
	struct tu_frame f;
	struct regbody rb;
	char why[160];

	tu_frame_load(&f, "java-4.9.8/frames/00148-c037-c2s-req-code103.bin");
	cr_assert(remoting_ext_get_bool(&f.cmd, "compressed"));
	cr_assert_eq(decode(f.cmd.body, f.cmd.body_len, true, f.cmd.version, 0, &rb, why), 0, "%s", why);
	cr_expect_eq(rb.n_topics, 8);
	cr_expect_eq(rb.dv.timestamp, 1795940550545LL);
	const struct regbody_topic *t = topic(&rb, "BenchmarkTest");
	cr_expect_eq(t->read_queues, 1024);
	cr_expect_eq(t->perm, 6);
	cr_expect_eq(t->sysflag, 0);
	t = topic(&rb, "broker-cap2");
	cr_expect_eq(t->perm, 7);
	int64_t crc;
	cr_assert(remoting_ext_get_long(&f.cmd, "bodyCrc32", &crc));
	cr_expect(regbody_crc_matches(f.cmd.body, f.cmd.body_len, crc), "crc covers the compressed bytes");
	regbody_free(&rb);
	tu_frame_free(&f);
}

Test(regbody, compressed_body_flagged_plain_is_sniffed)
{
	struct tu_frame f;
	struct regbody rb;
	char why[160];

	tu_frame_load(&f, "java-5.1.4/s3-compressed/frames/00013-c003-c2s-req-code103.bin");
	cr_assert(!remoting_ext_get_bool(&f.cmd, "compressed"), "5.x brokers say plain");
	cr_assert_eq(decode(f.cmd.body, f.cmd.body_len, false, f.cmd.version, 0, &rb, why), 0, "%s", why);
	cr_expect_eq(rb.n_topics, 12);
	cr_expect_eq(rb.n_mappings, 0, "the static-topic section is there and empty");
	cr_expect_eq(topic(&rb, "rmq_sys_SYNC_BROKER_MEMBER_b5c")->perm, 1);
	regbody_free(&rb);
	tu_frame_free(&f);
}

Test(regbody, no_body)
{
	struct regbody rb;
	char why[160];

	cr_assert_eq(decode(NULL, 0, false, 441, 0, &rb, why), 0);
	cr_expect_eq(rb.n_topics, 0);
	cr_expect(rb.dv.counter == 0 && rb.dv.timestamp == 0 && rb.dv.state_version == 0);
	cr_expect(rb.has_filters && rb.n_filters == 0);
	regbody_free(&rb);
}

Test(regbody, bare_wrapper_below_version_37)
{
	const char *b = "{\"dataVersion\":{\"counter\":3,\"timestamp\":9},\"topicConfigTable\":"
			"{\"T\":{\"perm\":6,\"readQueueNums\":2,\"topicName\":\"T\",\"writeQueueNums\":2}}}";
	struct regbody rb;
	char why[160];

	cr_assert_eq(decode(b, strlen(b), false, 36, 0, &rb, why), 0, "%s", why);
	cr_expect_eq(rb.dv.counter, 3);
	cr_expect_eq(rb.n_topics, 1);
	cr_expect(!rb.has_filters, "old senders have no filter-server list");
	regbody_free(&rb);
	/* from version 37 the same text is a RegisterBrokerBody without a wrapper */
	cr_assert_eq(decode(b, strlen(b), false, 37, 0, &rb, why), 0, "%s", why);
	cr_expect_eq(rb.n_topics, 0);
	regbody_free(&rb);
}

Test(regbody, fastjson_habits_accepted)
{
	/* bare integer keys, a quoted number, unknown members, escapes, and a
	 * duplicate topic (the last wins) */
	const char *b = "{ \"topicConfigSerializeWrapper\" : {\"x\":[1,{\"y\":null}],\"dataVersion\":"
			"{\"counter\":\"5\",\"stateVersion\":2,\"timestamp\":1},\"topicConfigTable\":{"
			"\"A\\u00e9\":{\"perm\":6,\"readQueueNums\":1,\"topicName\":\"A\\u00e9\",\"writeQueueNums\":1},"
			"\"B\":{\"perm\":6,\"readQueueNums\":1,\"topicName\":\"B\",\"writeQueueNums\":1},"
			"\"B\":{\"perm\":4,\"readQueueNums\":3,\"topicName\":\"B\",\"writeQueueNums\":3}},"
			"\"topicQueueMappingInfoMap\":{\"B\":{\"bname\":\"g\",\"currIdMap\":{0:0,1:1},\"epoch\":7}}},"
			"\"filterServerList\":[\"f:1\"]}\n";
	struct regbody rb;
	char why[160];

	cr_assert_eq(decode(b, strlen(b), false, 441, 0, &rb, why), 0, "%s", why);
	cr_expect_eq(rb.dv.counter, 5);
	cr_expect_eq(rb.dv.state_version, 2);
	cr_expect_eq(rb.n_topics, 2);
	topic(&rb, "A\xc3\xa9");
	cr_expect_eq(topic(&rb, "B")->perm, 4);
	cr_expect_eq(topic(&rb, "B")->read_queues, 3);
	cr_assert_eq(rb.n_mappings, 1);
	cr_expect_str_eq(rb.mappings[0].key, "B");
	cr_expect_eq(rb.mappings[0].n_ids, 2);
	cr_expect_eq(rb.mappings[0].ids[1][0], 1);
	cr_expect_eq(rb.mappings[0].epoch, 7);
	cr_assert_eq(rb.n_filters, 1);
	cr_expect_str_eq(rb.filters[0], "f:1");
	regbody_free(&rb);
}

/* zlib-compresses src with a zlib header. */
static uint8_t *zip(const void *src, size_t len, size_t *out_len)
{
	uLongf n = compressBound((uLong)len);
	uint8_t *out = malloc(n);
	cr_assert_eq(compress2(out, &n, src, (uLong)len, 9), Z_OK);
	*out_len = n;
	return out;
}

static void put32(struct buf *b, uint32_t v)
{
	buf_put_be32(b, v);
}

static void put_item(struct buf *b, const char *s)
{
	put32(b, (uint32_t)strlen(s));
	buf_append_str(b, s);
}

/* The layout of protocol.md §5.6. */
static uint8_t *compressed_body(const char *const *topics, int n, const char *filters, int32_t n_maps,
				const char *mapping, size_t *len)
{
	struct buf b = BUF_INIT;
	put_item(&b, "{\"counter\":3,\"stateVersion\":0,\"timestamp\":1700000000000}");
	put32(&b, (uint32_t)n);
	for (int i = 0; i < n; i++)
		put_item(&b, topics[i]);
	put_item(&b, filters);
	if (n_maps >= 0) {
		put32(&b, (uint32_t)n_maps);
		if (mapping)
			put_item(&b, mapping);
	}
	uint8_t *z = zip(b.data, b.len, len);
	buf_free(&b);
	return z;
}

Test(regbody, compressed_layout_with_static_topics)
{
	const char *topics[] = { "TopicTest 4 4 6 SINGLE_TAG {}", "TBW102 8 8 7 SINGLE_TAG {}" };
	size_t len;
	uint8_t *z = compressed_body(topics, 2, "[\"f:1\"]", 1,
				     "{\"bname\":\"broker-a\",\"currIdMap\":{0:0},\"dirty\":false,\"epoch\":1,"
				     "\"scope\":\"__global__\",\"topic\":\"StaticTopic\",\"totalQueues\":1}",
				     &len);
	struct regbody rb;
	char why[160];

	cr_assert_eq(decode(z, len, true, 441, 0, &rb, why), 0, "%s", why);
	cr_expect_eq(rb.dv.counter, 3);
	cr_expect_eq(rb.n_topics, 2);
	cr_expect_eq(topic(&rb, "TBW102")->perm, 7);
	cr_expect_eq(rb.n_filters, 1);
	cr_assert_eq(rb.n_mappings, 1);
	cr_expect_str_eq(rb.mappings[0].key, "StaticTopic");
	regbody_free(&rb);
	/* below version 413 the mapping section is not read (trailing data ignored) */
	cr_assert_eq(decode(z, len, true, 409, 0, &rb, why), 0, "%s", why);
	cr_expect_eq(rb.n_mappings, 0);
	regbody_free(&rb);
	free(z);
}

Test(regbody, compressed_short_stream_refused)
{
	size_t len;
	uint8_t *z = compressed_body((const char *const[]){ "T 4 4 6 SINGLE_TAG" }, 1, "[]", -1, NULL, &len);
	struct regbody rb;
	char why[160];

	cr_expect_eq(decode(z, len, true, 409, 0, &rb, why), 0, "%s", why);
	regbody_free(&rb);
	refused(z, len, 441, "mapping"); /* the 5.x layout needs the mapping count */
	free(z);
}

Test(regbody, compressed_lying_topic_count_refused)
{
	struct buf b = BUF_INIT;
	put_item(&b, "{\"counter\":1,\"timestamp\":1}");
	put32(&b, 0x7FFFFFFF);
	put_item(&b, "T 4 4 6 SINGLE_TAG");
	size_t len;
	uint8_t *z = zip(b.data, b.len, &len);

	cr_expect_eq(refused(z, len, 409, "topic count"), RMQNS_EINVAL);
	buf_free(&b);
	free(z);
}

Test(regbody, compressed_short_topic_line_refused)
{
	size_t len;
	uint8_t *z = compressed_body((const char *const[]){ "T 4 4 6" }, 1, "[]", -1, NULL, &len);

	refused(z, len, 409, "five fields");
	free(z);
}

Test(regbody, inflate_bomb_fails_cleanly)
{
	size_t raw = 8u << 20, len;
	uint8_t *zeros = calloc(1, raw);
	uint8_t *z = zip(zeros, raw, &len);
	struct regbody rb;
	char why[160];

	cr_assert_lt(len, 64u << 10, "a small body ...");
	cr_expect_eq(decode(z, len, true, 409, 1u << 20, &rb, why), RMQNS_ETOOBIG);
	cr_expect(strstr(why, "exceeds 1048576 bytes") != NULL, "%s", why);
	cr_expect_eq(rb.n_topics, 0);
	regbody_free(&rb);
	free(zeros);
	free(z);
}

Test(regbody, truncated_zlib_refused)
{
	const char *topics[] = { "T 4 4 6 SINGLE_TAG" };
	size_t len;
	uint8_t *z = compressed_body(topics, 1, "[]", 0, NULL, &len);
	struct regbody rb;
	char why[160];

	cr_expect_eq(decode(z, len / 2, true, 441, 0, &rb, why), RMQNS_EZLIB, "%s", why);
	z[len / 2] ^= 0xFF;
	cr_expect_neq(decode(z, len, true, 441, 0, &rb, why), 0);
	free(z);
}

Test(regbody, malformed_json_refused)
{
	static const char *bad[] = {
		"{",
		"{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"T\":{\"perm\":\"x\"}}}}",
		"{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"T\":{\"perm\":1.5}}}}",
		"{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"T\":{\"perm\":99999999999}}}}",
		"{\"topicConfigSerializeWrapper\":null}",
		"{\"a\":1} trailing",
		"{\"a\":\"\\u0000\"}",
		"{\"a\":\"unterminated}",
		"[1,2]",
		"{\"a\" 1}",
		"{\"a\":1,}",
	};
	struct regbody rb;
	char why[160];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_neq(decode(bad[i], strlen(bad[i]), false, 441, 0, &rb, why), 0, "accepted: %s", bad[i]);
		cr_expect(why[0] != 0, "no reason for %s", bad[i]);
	}
}

Test(regbody, deep_nesting_refused_without_recursion)
{
	struct buf b = BUF_INIT;
	buf_append_str(&b, "{\"x\":");
	for (int i = 0; i < 100000; i++)
		buf_putc(&b, '[');
	struct regbody rb;
	char why[160];
	cr_expect_eq(decode(b.data, b.len, false, 441, 0, &rb, why), RMQNS_ETOOBIG, "%s", why);
	buf_free(&b);
}

Test(regbody, plain_body_over_the_cap_refused)
{
	const char *b = "{\"filterServerList\":[]}";
	struct regbody rb;
	char why[160];
	cr_expect_eq(decode(b, strlen(b), false, 441, 8, &rb, why), RMQNS_ETOOBIG);
}

Test(regbody, data_version_parse_and_format)
{
	struct data_version dv;
	char out[128];
	const char *s = "{\"counter\":2,\"timestamp\":1795940550545}";

	cr_assert_eq(regbody_parse_data_version((const uint8_t *)s, strlen(s), &dv), 0);
	cr_expect_eq(dv.counter, 2);
	cr_expect_eq(dv.state_version, 0);
	data_version_format(&dv, out, sizeof(out));
	cr_expect_str_eq(out, "{\"counter\":2,\"stateVersion\":0,\"timestamp\":1795940550545}");
	cr_expect_neq(regbody_parse_data_version((const uint8_t *)"nope", 4, &dv), 0);
	cr_expect_neq(regbody_parse_data_version((const uint8_t *)"[]", 2, &dv), 0);
}

/* A thread that opts in yields while it decodes a big body (plain and
 * compressed); one that does not never does. */
Test(regbody, big_bodies_yield_the_cpu_on_threads_that_opt_in)
{
	struct buf spec = BUF_INIT;
	for (int i = 0; i < 40000; i++)
		buf_printf(&spec, "%sYieldTopic-%05d/8/8/6/0", i ? " " : "", i);
	buf_terminate(&spec);
	char *body = tu_body(1, 1, 0, (const char *)spec.data);
	size_t len = strlen(body), zlen = 0;
	char **lines = calloc(40000, sizeof *lines);
	cr_assert_not_null(lines);
	for (int i = 0; i < 40000; i++)
		cr_assert(asprintf(&lines[i], "YieldTopic-%05d 8 8 6 SINGLE_TAG {}", i) > 0);
	uint8_t *z = compressed_body((const char *const *)lines, 40000, "[]", -1, NULL, &zlen);
	for (int i = 0; i < 40000; i++)
		free(lines[i]);
	free(lines);
	char why[160];

	for (int on = 0; on < 2; on++) {
		yield_enable(on);
		uint64_t before = yield_count();
		for (int compressed = 0; compressed < 2; compressed++) {
			struct regbody rb;
			/* a decode of 40,000 topics takes milliseconds: dozens of 100 us periods */
			int rc = decode(compressed ? (const void *)z : body, compressed ? zlen : len, compressed,
					400, 64u << 20, &rb, why);
			cr_assert_eq(rc, 0, "%s", why);
			cr_assert_eq(rb.n_topics, 40000u);
			regbody_free(&rb);
		}
		uint64_t made = yield_count() - before;
		cr_log_info("yield points %s: %llu yields", on ? "on" : "off", (unsigned long long)made);
		if (on)
			cr_assert_gt(made, 0, "no yield in two decodes of 40,000 topics");
		else
			cr_assert_eq(made, 0, "yielded without opting in");
	}
	yield_enable(false);
	free(z);
	free(body);
	buf_free(&spec);
}

/* Compressed bodies are inflated as they are parsed: items longer than the
 * window read whole, thousands of lines across its edges, and the cap
 * counted over the whole stream (trailing bytes too). */
Test(regbody, compressed_items_across_and_beyond_the_window)
{
	enum { LINES = 5000, NAME = 100000 };
	char **lines = calloc(LINES + 1, sizeof(*lines));
	cr_assert_not_null(lines);
	for (int i = 0; i < LINES; i++) {
		lines[i] = malloc(64);
		snprintf(lines[i], 64, "Topic-%d %d %d 6 SINGLE_TAG {}", i, i % 16, (i + 1) % 16);
	}
	char *big = malloc(NAME + 32);
	memset(big, 'n', NAME);
	snprintf(big + NAME, 32, " 4 4 6 SINGLE_TAG");
	lines[LINES] = big;
	struct buf fl = BUF_INIT;
	buf_append_str(&fl, "[");
	for (int i = 0; i < 20000; i++)
		buf_printf(&fl, "%s\"10.0.%d.%d:9999\"", i ? "," : "", i / 256, i % 256);
	buf_append_str(&fl, "]");
	buf_terminate(&fl);
	size_t len;
	uint8_t *z = compressed_body((const char *const *)lines, LINES + 1, (const char *)fl.data, 0, NULL, &len);
	struct regbody rb;
	char why[160];
	cr_assert_eq(decode(z, len, true, 441, 0, &rb, why), 0, "%s", why);
	cr_expect_eq(rb.n_topics, LINES + 1);
	cr_expect_eq(rb.n_filters, 20000);
	cr_expect_str_eq(rb.filters[19999], "10.0.78.31:9999");
	const struct regbody_topic *t = regbody_find_topic(&rb, "Topic-4321");
	cr_assert_not_null(t);
	cr_expect(t->read_queues == 4321 % 16 && t->write_queues == 4322 % 16);
	cr_expect_eq(strlen(rb.topics[LINES].name), NAME, "the long name read whole");
	regbody_free(&rb);
	/* a cap just below the inflated size refuses it, just above takes it */
	size_t raw = 0;
	cr_assert_eq(decode(z, len, true, 441, 1u << 30, &rb, why), 0);
	regbody_free(&rb);
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	uint8_t *out = malloc(8u << 20);
	cr_assert_eq(inflateInit(&zs), Z_OK);
	zs.next_in = z;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = 8u << 20;
	cr_assert_eq(inflate(&zs, Z_FINISH), Z_STREAM_END);
	raw = zs.total_out;
	inflateEnd(&zs);
	cr_expect_eq(decode(z, len, true, 441, raw - 1, &rb, why), RMQNS_ETOOBIG, "%s", why);
	cr_expect_eq(decode(z, len, true, 441, raw, &rb, why), 0, "%s", why);
	regbody_free(&rb);
	free(out);
	buf_free(&fl);
	free(z);
	for (int i = 0; i <= LINES; i++)
		free(lines[i]);
	free(lines);
}
