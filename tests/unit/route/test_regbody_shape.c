/* The decoder's shortcuts against its general path: the TopicConfig shape
 * brokers write, matched in place, and the inline member-key read must
 * decode every body exactly as the general path does (same result, same
 * error and reason). Bodies: the captured Java 4.9.8 and 5.1.4 ones, the
 * 4.x and 5.x shapes built here, and a fixed-seed run of mutations of
 * them. */
#include "regbody_general.h"
#include "route_test_util.h"

#define WHY_LEN 160

/* Decodes body both ways and fails the test on any difference. Returns
 * the result code. */
static int decode_both(const uint8_t *body, size_t len, bool compressed, int32_t version, size_t max,
		       const char *what)
{
	struct regbody fast, general;
	char why_fast[WHY_LEN], why_general[WHY_LEN], diff[128];
	int rc_fast = regbody_decode(body, len, compressed, version, max, &fast, why_fast, WHY_LEN);
	int rc_general = regbody_decode_general(body, len, compressed, version, max, &general, why_general,
						WHY_LEN);

	cr_assert_eq(rc_fast, rc_general, "%s: %d (%s) against %d (%s)", what, rc_fast,
		     rc_fast ? why_fast : "", rc_general, rc_general ? why_general : "");
	if (rc_fast)
		cr_assert_str_eq(why_fast, why_general, "%s", what);
	else
		cr_assert(regbody_same(&fast, &general, diff, sizeof(diff)), "%s: %s", what, diff);
	regbody_free(&fast);
	regbody_free(&general);
	return rc_fast;
}

/* A body of n topics as a 4.x (attributes = false) or 5.x broker writes it. */
static char *shape_body(uint32_t n, bool attributes, size_t *len)
{
	struct buf b = BUF_INIT;

	buf_printf(&b, "{\"filterServerList\":[\"10.0.0.1:7000\"],\"topicConfigSerializeWrapper\":{"
		       "\"dataVersion\":{\"counter\":7,\"stateVersion\":0,\"timestamp\":1700000000000},"
		       "\"topicConfigTable\":{");
	for (uint32_t i = 0; i < n; i++)
		buf_printf(&b, "%s\"T-%u\":{%s\"order\":%s,\"perm\":%u,\"readQueueNums\":%u,"
			       "\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"T-%u\",\"topicSysFlag\":%u,"
			       "\"writeQueueNums\":%u}",
			   i ? "," : "", i, attributes ? "\"attributes\":{}," : "", i % 3 ? "false" : "true",
			   i % 8, 1 + i % 16, i, i % 2, 16 - i % 16);
	buf_printf(&b, "}}}");
	cr_assert_not_null(b.data);
	*len = b.len;
	return (char *)b.data;
}

/* The plain-JSON registration bodies the Java brokers sent. */
static const char *const captured[] = {
	"java-4.9.8/frames/00001-c001-c2s-req-code103.bin",
	"java-4.9.8/frames/00082-c001-c2s-req-code103.bin",
	"java-4.9.8/frames/00122-c001-c2s-req-code103.bin",
	"java-5.1.4/s1-basic/frames/00029-c001-c2s-req-code103.bin",
	"java-5.1.4/s2-acting-master/frames/00478-c005-c2s-req-code103.bin",
	"java-5.1.4/s2-acting-master/frames/00363-c004-c2s-req-code103.bin",
};

Test(regbody_shape, captured_bodies_decode_as_by_the_general_path)
{
	for (size_t i = 0; i < sizeof(captured) / sizeof(captured[0]); i++) {
		struct tu_frame f;
		tu_frame_load(&f, captured[i]);
		cr_assert_eq(decode_both(f.cmd.body, f.cmd.body_len, false, f.cmd.version, 0, captured[i]), 0);
		tu_frame_free(&f);
	}
}

Test(regbody_shape, both_broker_shapes_decode_as_by_the_general_path)
{
	for (int attributes = 0; attributes < 2; attributes++) {
		size_t len;
		char *body = shape_body(300, attributes, &len);
		struct regbody rb;
		char why[WHY_LEN];
		cr_assert_eq(decode_both((const uint8_t *)body, len, false, 441, 0, "shape"), 0);
		cr_assert_eq(regbody_decode((const uint8_t *)body, len, false, 441, 0, &rb, why, WHY_LEN), 0);
		cr_expect_eq(rb.n_topics, 300);
		const struct regbody_topic *t = regbody_find_topic(&rb, "T-21");
		cr_assert_not_null(t);
		cr_expect(t->perm == 5 && t->read_queues == 6 && t->sysflag == 1 && t->write_queues == 11);
		regbody_free(&rb);
		free(body);
	}
}

/* Bodies big enough for the decoder to reserve its tables ahead (and to
 * reuse the tables of bodies freed before), one with more topics than its
 * length suggests (the tables grow), decoded in turn. */
Test(regbody_shape, big_bodies_in_turn_decode_as_by_the_general_path, .timeout = 120)
{
	static const uint32_t counts[] = { 20000, 3000, 20000, 40000 };

	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		size_t len;
		char *body = shape_body(counts[i], i % 2, &len);
		cr_assert_eq(decode_both((const uint8_t *)body, len, false, 441, 0, "big"), 0);
		free(body);
	}
	/* short names in long entries: more topics than the length suggests */
	struct buf b = BUF_INIT;
	cr_assert_eq(buf_printf(&b, "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{"), 0);
	for (uint32_t i = 0; i < 30000; i++)
		cr_assert_eq(buf_printf(&b, "%s\"%x\":{}", i ? "," : "", i), 0);
	cr_assert_eq(buf_printf(&b, "}}}"), 0);
	struct regbody rb;
	char why[WHY_LEN];
	cr_assert_eq(decode_both(b.data, b.len, false, 441, 0, "dense"), 0);
	cr_assert_eq(regbody_decode(b.data, b.len, false, 441, 0, &rb, why, WHY_LEN), 0);
	cr_expect_eq(rb.n_topics, 30000);
	cr_expect_not_null(regbody_find_topic(&rb, "752f"));
	regbody_free(&rb);
	buf_free(&b);
}

/* Near misses of the shape, each read by the general path: whitespace,
 * escapes, other member orders, numbers the shortcut does not take,
 * non-empty attributes, a name other than the key, nulls, and errors
 * inside and after the entry. */
Test(regbody_shape, near_misses_decode_as_by_the_general_path)
{
	static const char *const entries[] = {
		"{\"order\":false,\"perm\":6,\"readQueueNums\":8,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"A\",\"topicSysFlag\":0,\"writeQueueNums\":8}",
		"{ \"order\":false,\"perm\":6,\"readQueueNums\":8,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"A\",\"topicSysFlag\":0,\"writeQueueNums\":8}",
		"{\"order\":false,\"perm\":6,\"readQueueNums\":8,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"B\",\"topicSysFlag\":0,\"writeQueueNums\":8}",
		"{\"order\":false,\"perm\":6,\"readQueueNums\":8,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"\\u0041\",\"topicSysFlag\":0,\"writeQueueNums\":8}",
		"{\"order\":false,\"perm\":6,\"readQueueNums\":8,\"topicFilterType\":\"MULTI\\\"TAG\",\"topicName\":\"A\",\"topicSysFlag\":0,\"writeQueueNums\":8}",
		"{\"order\":true,\"perm\":-6,\"readQueueNums\":8,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"A\",\"topicSysFlag\":0,\"writeQueueNums\":8}",
		"{\"order\":false,\"perm\":006,\"readQueueNums\":0000000008,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"A\",\"topicSysFlag\":0,\"writeQueueNums\":8}",
		"{\"order\":false,\"perm\":6,\"readQueueNums\":2147483647,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"A\",\"topicSysFlag\":0,\"writeQueueNums\":2147483648}",
		"{\"order\":false,\"perm\":6,\"readQueueNums\":8.0,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"A\",\"topicSysFlag\":0,\"writeQueueNums\":8}",
		"{\"order\":false,\"perm\":6,\"readQueueNums\":8,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"A\",\"topicSysFlag\":0,\"writeQueueNums\":8e1}",
		"{\"order\":false,\"perm\":\"6\",\"readQueueNums\":8,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"A\",\"topicSysFlag\":0,\"writeQueueNums\":8}",
		"{\"attributes\":{\"+message.type\":\"FIFO\"},\"order\":false,\"perm\":6,\"readQueueNums\":8,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"A\",\"topicSysFlag\":0,\"writeQueueNums\":8}",
		"{\"attributes\":{ },\"order\":false,\"perm\":6,\"readQueueNums\":8,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"A\",\"topicSysFlag\":0,\"writeQueueNums\":8}",
		"{\"perm\":6,\"order\":false,\"readQueueNums\":8,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"A\",\"topicSysFlag\":0,\"writeQueueNums\":8}",
		"{\"order\":false,\"perm\":6,\"readQueueNums\":8,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":null,\"topicSysFlag\":0,\"writeQueueNums\":8}",
		"{\"order\":false,\"perm\":6,\"readQueueNums\":8,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"A\",\"topicSysFlag\":0,\"writeQueueNums\":8,\"extra\":[1,2]}",
		"{\"order\":false,\"perm\":6,\"readQueueNums\":8,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"A\",\"topicSysFlag\":0,\"writeQueueNums\":8",
		"{\"order\":false,\"perm\":6,\"readQueueNums\":8,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"A\",\"topicSysFlag\":0,\"writeQueueNums\":}",
		"{\"order\":fals,\"perm\":6,\"readQueueNums\":8,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"A\",\"topicSysFlag\":0,\"writeQueueNums\":8}",
		"{\"order\":false,\"perm\":6,\"readQueueNums\":8,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"A\xc3\xa9\",\"topicSysFlag\":0,\"writeQueueNums\":8}",
		"{\"order\":false,\"perm\":6,\"readQueueNums\":8,\"topicFilterType\":\"SINGLE_TAG\",\"topicName\":\"A\tB\",\"topicSysFlag\":0,\"writeQueueNums\":8}",
		"null",
	};
	/* after the entry: another member (read by the inline key shortcut),
	 * one with whitespace, one whose key has an escape, a stray byte, the end */
	static const char *const tails[] = {
		",\"Z\":{\"perm\":6}}}}", ", \"Z\":{\"perm\":6}}}}", ",\"\\u005A\":{\"perm\":6}}}}",
		",\"Z\" :{\"perm\":6}}}}", ",\"Z\":{\"perm\":6}}}}x", "}}}", ",}}}", "x}}}", "",
	};
	static const char *const keys[] = { "A", "\\u0041", "B" };

	for (size_t e = 0; e < sizeof(entries) / sizeof(entries[0]); e++)
		for (size_t t = 0; t < sizeof(tails) / sizeof(tails[0]); t++)
			for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
				char body[1024], what[64];
				int n = snprintf(body, sizeof(body),
						 "{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":"
						 "{\"Y\":{\"topicName\":\"Y\"},\"%s\":%s%s",
						 keys[k], entries[e], tails[t]);
				cr_assert(n > 0 && (size_t)n < sizeof(body));
				snprintf(what, sizeof(what), "entry %zu, tail %zu, key %zu", e, t, k);
				decode_both((const uint8_t *)body, (size_t)n, false, 441, 0, what);
			}
}

/* A small deterministic generator (xorshift64*): the same bodies on
 * every run. */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

/* One to three edits of body: a byte replaced, deleted or inserted (from
 * the bytes that matter to JSON and to the shape), a piece of JSON
 * inserted, a span duplicated, or the end cut. */
static void mutate(struct buf *out, const uint8_t *body, size_t len, uint64_t *rng)
{
	static const char bytes[] = "{}[]\":,\\ \t\n0123456789-+.eEtfnulasrqTSG_";
	static const char *const pieces[] = {
		" ", "\\u0041", "\\n", "\"x\":1,", "null", "{}", "00", "2147483648", "-1", "\"attributes\":{},",
		"\"order\":false,", ",\"perm\":7", "\xc3\xa9", "\xff", "\"topicName\":\"Q\",", "1e2", "\"\"",
	};
	int edits = 1 + (int)(rng_next(rng) % 3);

	out->len = 0;
	cr_assert_eq(buf_append(out, body, len), 0);
	for (int i = 0; i < edits; i++) {
		size_t at = out->len ? (size_t)(rng_next(rng) % out->len) : 0;
		switch (rng_next(rng) % 6) {
		case 0:
			if (out->len)
				out->data[at] = (uint8_t)bytes[rng_next(rng) % (sizeof(bytes) - 1)];
			break;
		case 1:
			if (out->len) {
				memmove(out->data + at, out->data + at + 1, out->len - at - 1);
				out->len--;
			}
			break;
		case 2:
		case 3: {
			const char *p = pieces[rng_next(rng) % (sizeof(pieces) / sizeof(pieces[0]))];
			char one[2] = { bytes[rng_next(rng) % (sizeof(bytes) - 1)], 0 };
			const char *ins = (rng_next(rng) & 1) ? p : one;
			size_t n = strlen(ins);
			cr_assert_eq(buf_reserve(out, n), 0);
			memmove(out->data + at + n, out->data + at, out->len - at);
			memcpy(out->data + at, ins, n);
			out->len += n;
			break;
		}
		case 4: {
			size_t n = (size_t)(rng_next(rng) % 160);
			if (n > out->len - at)
				n = out->len - at;
			size_t to = (size_t)(rng_next(rng) % (out->len + 1));
			cr_assert_eq(buf_reserve(out, n), 0);
			memmove(out->data + to + n, out->data + to, out->len - to);
			/* the span, taken from where it is now */
			size_t from = at >= to ? at + n : at;
			memmove(out->data + to, out->data + from, n);
			out->len += n;
			break;
		}
		default:
			out->len = at;
			break;
		}
	}
}

Test(regbody_shape, mutated_bodies_decode_as_by_the_general_path, .timeout = 120)
{
	struct buf bases[4] = { BUF_INIT, BUF_INIT, BUF_INIT, BUF_INIT };
	struct buf m = BUF_INIT;
	uint64_t rng = 0x5EED0F5AFE5EEDULL;
	int ok = 0, failed = 0;

	for (int attributes = 0; attributes < 2; attributes++) {
		size_t len;
		char *body = shape_body(12, attributes, &len);
		cr_assert_eq(buf_append(&bases[attributes], body, len), 0);
		free(body);
	}
	for (int i = 0; i < 2; i++) {
		struct tu_frame f;
		tu_frame_load(&f, captured[i == 0 ? 2 : 4]);
		cr_assert_eq(buf_append(&bases[2 + i], f.cmd.body, f.cmd.body_len), 0);
		tu_frame_free(&f);
	}
	for (int i = 0; i < 50000; i++) {
		const struct buf *base = &bases[i % 4];
		static const int32_t versions[] = { 441, 36 };
		char what[64];
		mutate(&m, base->data, base->len, &rng);
		snprintf(what, sizeof(what), "mutation %d", i);
		/* version 36: the body is the bare wrapper (most read as errors) */
		if (decode_both(m.data, m.len, false, versions[(i / 4) % 7 == 6], 0, what) == 0)
			ok++;
		else
			failed++;
	}
	/* both outcomes were compared, and often */
	cr_expect_gt(ok, 5000, "%d decoded", ok);
	cr_expect_gt(failed, 5000, "%d refused", failed);
	for (int i = 0; i < 4; i++)
		buf_free(&bases[i]);
	buf_free(&m);
}
