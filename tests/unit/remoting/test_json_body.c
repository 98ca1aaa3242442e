/* Unit tests of the fastjson-compatible JSON body writer and reader
 * (protocol.md §5.1-§5.2). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/err.h"
#include "rmqns/json_body.h"
#include "rmqns/json_reader.h"
#include "rmqns/json_tree.h"

static char *escaped(const char *s, size_t n, enum jw_form form)
{
	struct buf b = BUF_INIT;
	cr_assert_eq(json_escape(&b, s, n, form), 0);
	cr_assert_eq(buf_terminate(&b), 0);
	return (char *)b.data;
}

static void expect_escape(const char *in, const char *def, const char *std)
{
	char *d = escaped(in, strlen(in), JW_DEFAULT);
	char *s = escaped(in, strlen(in), JW_STANDARD);
	cr_expect_str_eq(d, def, "default form of %s", in);
	cr_expect_str_eq(s, std, "standard form of %s", in);
	free(d);
	free(s);
}

/* ---- escaping (§5.1 rule 6 and the standard form) ---- */

Test(escape, protocol_examples)
{
	/* a group named g/é"\ (verified against Java) */
	expect_escape("g/\xC3\xA9\"\\", "g/\xC3\xA9\\\"\\\\", "g\\/\\u00E9\\\"\\\\");
	expect_escape("\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80", "\\uD83D\\uDE00");
}

Test(escape, table)
{
	expect_escape("", "", "");
	expect_escape("plain text 123", "plain text 123", "plain text 123");
	expect_escape("\b\t\n\f\r", "\\b\\t\\n\\f\\r", "\\b\\t\\n\\f\\r");
	expect_escape("\x01\x1F\x0B", "\\u0001\\u001F\\u000B", "\\u0001\\u001F\\u000B");
	expect_escape("\x7F", "\\u007F", "\\u007F");
	expect_escape("<>&'", "<>&'", "<>&'");
	/* U+0080..U+009F escaped, U+00A0 raw (default form) */
	expect_escape("\xC2\x80\xC2\x9F\xC2\xA0", "\\u0080\\u009F\xC2\xA0", "\\u0080\\u009F\\u00A0");
	expect_escape("\xE2\x80\xA8\xE2\x80\xA9\xE2\x80\xAA", "\\u2028\\u2029\xE2\x80\xAA",
		      "\\u2028\\u2029\\u202A");
	expect_escape("\xE4\xB8\xAD\xEF\xBF\xBF", "\xE4\xB8\xAD\xEF\xBF\xBF", "\\u4E2D\\uFFFF");
	expect_escape("\xF4\x8F\xBF\xBF", "\xF4\x8F\xBF\xBF", "\\uDBFF\\uDFFF");
	expect_escape("\xF0\x90\x80\x80", "\xF0\x90\x80\x80", "\\uD800\\uDC00");
	expect_escape("a/b", "a/b", "a\\/b");
}

Test(escape, nul_byte_inside_counted_text)
{
	char *d = escaped("a\0b", 3, JW_DEFAULT);
	cr_expect_str_eq(d, "a\\u0000b");
	free(d);
}

Test(escape, invalid_utf8_becomes_replacement_characters)
{
	static const struct { const char *in; const char *def; const char *std; } cases[] = {
		{ "\x80", "\xEF\xBF\xBD", "\\uFFFD" },                     /* stray continuation */
		{ "a\xC3", "a\xEF\xBF\xBD", "a\\uFFFD" },                  /* truncated at the end */
		{ "\xC3" "b", "\xEF\xBF\xBD" "b", "\\uFFFD" "b" },         /* truncated in the middle */
		{ "\xC0\xAF", "\xEF\xBF\xBD\xEF\xBF\xBD", "\\uFFFD\\uFFFD" }, /* overlong '/' */
		{ "\xED\xA0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD", "\\uFFFD\\uFFFD\\uFFFD" }, /* surrogate */
		{ "\xF4\x90\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD",
		  "\\uFFFD\\uFFFD\\uFFFD\\uFFFD" }, /* past U+10FFFF */
		{ "\xFF", "\xEF\xBF\xBD", "\\uFFFD" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_escape(cases[i].in, cases[i].def, cases[i].std);
}

Test(escape, output_is_always_valid_json)
{
	/* Every 1- and 2-byte input, escaped in both forms, must parse back. */
	struct buf b = BUF_INIT;
	for (int form = 0; form < 2; form++) {
		for (int x = 0; x < 256; x++) {
			for (int y = 0; y < 256; y += (x < 0x80 ? 17 : 1)) {
				char in[2] = { (char)x, (char)y };
				buf_reset(&b);
				cr_assert_eq(buf_putc(&b, '['), 0);
				cr_assert_eq(buf_putc(&b, '"'), 0);
				cr_assert_eq(json_escape(&b, in, 2, (enum jw_form)form), 0);
				cr_assert_eq(buf_append(&b, "\"]", 2), 0);
				json_error_t e;
				json_t *v = json_loadb((const char *)b.data, b.len, JSON_ALLOW_NUL, &e);
				cr_assert_not_null(v, "%02x %02x form %d: %s", x, y, form, e.text);
				json_decref(v);
			}
		}
	}
	buf_free(&b);
}

/* ---- writer ---- */

static char *finish(struct jw *w, struct buf *b)
{
	cr_assert_eq(jw_error(w), 0);
	cr_assert_eq(buf_terminate(b), 0);
	return (char *)b->data;
}

Test(writer, default_form_route_shape)
{
	struct buf b = BUF_INIT;
	struct jw w;
	jw_init(&w, &b, JW_DEFAULT);
	jw_obj_begin(&w);
	jw_key(&w, "brokerDatas");
	jw_arr_begin(&w);
	jw_obj_begin(&w);
	jw_key(&w, "brokerAddrs");
	jw_obj_begin(&w);
	jw_key_int(&w, 0);
	jw_str(&w, "127.0.0.1:10911");
	jw_key_int(&w, 1);
	jw_str(&w, "127.0.0.1:10921");
	jw_obj_end(&w);
	jw_key(&w, "brokerName");
	jw_str(&w, "g/\xC3\xA9\"\\");
	jw_key(&w, "enableActingMaster");
	jw_bool(&w, false);
	jw_obj_end(&w);
	jw_arr_end(&w);
	jw_key(&w, "filterServerTable");
	jw_obj_begin(&w);
	jw_obj_end(&w);
	jw_key(&w, "list");
	jw_arr_begin(&w);
	jw_int(&w, -9007199254740993LL);
	jw_null(&w);
	jw_bool(&w, true);
	jw_str(&w, NULL);
	jw_raw(&w, "{\"counter\":3}", 13);
	jw_strn(&w, "abcdef", 3);
	jw_arr_end(&w);
	jw_obj_end(&w);
	char *s = finish(&w, &b);
	cr_expect_str_eq(s, "{\"brokerDatas\":[{\"brokerAddrs\":{0:\"127.0.0.1:10911\",1:\"127.0.0.1:10921\"},"
			    "\"brokerName\":\"g/\xC3\xA9\\\"\\\\\",\"enableActingMaster\":false}],"
			    "\"filterServerTable\":{},\"list\":[-9007199254740993,null,true,null,"
			    "{\"counter\":3},\"abc\"]}");
	buf_free(&b);
}

Test(writer, standard_form_quotes_keys_and_escapes)
{
	struct buf b = BUF_INIT;
	struct jw w;
	jw_init(&w, &b, JW_STANDARD);
	jw_obj_begin(&w);
	jw_key(&w, "brokerAddrs");
	jw_obj_begin(&w);
	jw_key_int(&w, 0);
	jw_str(&w, "a/b");
	jw_key_int(&w, -12);
	jw_str(&w, "\xC3\xA9\xF0\x9F\x98\x80");
	jw_obj_end(&w);
	jw_key(&w, "k/\xC3\xA9");
	jw_arr_begin(&w);
	jw_arr_end(&w);
	jw_obj_end(&w);
	char *s = finish(&w, &b);
	cr_expect_str_eq(s, "{\"brokerAddrs\":{\"0\":\"a\\/b\",\"-12\":\"\\u00E9\\uD83D\\uDE00\"},"
			    "\"k\\/\\u00E9\":[]}");
	buf_free(&b);
}

Test(writer, top_level_array_and_scalars)
{
	struct buf b = BUF_INIT;
	struct jw w;
	jw_init(&w, &b, JW_DEFAULT);
	jw_arr_begin(&w);
	jw_arr_begin(&w);
	jw_arr_end(&w);
	jw_arr_begin(&w);
	jw_int(&w, 1);
	jw_arr_end(&w);
	jw_obj_begin(&w);
	jw_obj_end(&w);
	jw_arr_end(&w);
	cr_expect_str_eq(finish(&w, &b), "[[],[1],{}]");
	buf_free(&b);
}

Test(writer, nesting_limit_and_misuse_are_sticky_errors)
{
	struct buf b = BUF_INIT;
	struct jw w;
	jw_init(&w, &b, JW_DEFAULT);
	for (int i = 0; i < JW_MAX_DEPTH; i++)
		jw_arr_begin(&w);
	cr_expect_eq(jw_error(&w), 0);
	size_t len = b.len;
	jw_arr_begin(&w);
	cr_expect_neq(jw_error(&w), 0);
	int first = jw_error(&w);
	jw_arr_end(&w);
	jw_int(&w, 5);
	cr_expect_eq(jw_error(&w), first, "the first error sticks");
	cr_expect_eq(b.len, len, "nothing written after an error");
	buf_free(&b);

	jw_init(&w, &b, JW_DEFAULT);
	jw_obj_end(&w);
	cr_expect_eq(jw_error(&w), RMQNS_EINVAL, "closing what was never opened");
	buf_free(&b);

	jw_init(&w, &b, JW_DEFAULT);
	jw_obj_begin(&w);
	jw_key(&w, "dangling");
	jw_obj_end(&w);
	cr_expect_eq(jw_error(&w), RMQNS_EINVAL, "a key without a value");
	buf_free(&b);
}

/* ---- reader ---- */

static json_t *parse_ok(const char *s)
{
	size_t n = strlen(s);
	uint8_t *copy = malloc(n ? n : 1);
	memcpy(copy, s, n);
	int err = 12345;
	json_t *v = json_body_parse(copy, n, &err);
	free(copy);
	cr_assert_not_null(v, "parse of %s: %d", s, err);
	cr_expect_eq(err, 0);
	return v;
}

static void parse_fails(const char *s, int want)
{
	size_t n = strlen(s);
	uint8_t *copy = malloc(n ? n : 1);
	memcpy(copy, s, n);
	int err = 0;
	json_t *v = json_body_parse(copy, n, &err);
	free(copy);
	cr_expect_null(v, "parse of %s should fail", s);
	cr_expect_eq(err, want, "parse of %s: %d", s, err);
	json_decref(v);
}

static void expect_dump(json_t *v, const char *want)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
	cr_expect_str_eq(s, want);
	free(s);
	json_decref(v);
}

Test(reader, bare_integer_keys)
{
	expect_dump(parse_ok("{\"currIdMap\":{0:0,1:1}}"), "{\"currIdMap\":{\"0\":0,\"1\":1}}");
	expect_dump(parse_ok("{0:\"a\", -1 : \"b\",\n 16:{7:[{8:9}]}}"),
		    "{\"0\":\"a\",\"-1\":\"b\",\"16\":{\"7\":[{\"8\":9}]}}");
	expect_dump(parse_ok("{\"0\":1,2:3}"), "{\"0\":1,\"2\":3}");
	/* integers as values and in arrays are left alone */
	expect_dump(parse_ok("[0,1,{2:3},[4,5]]"), "[0,1,{\"2\":3},[4,5]]");
	expect_dump(parse_ok("{\"a\":[1,2],\"b\":{3:[4,{5:6}]},7:8}"),
		    "{\"a\":[1,2],\"b\":{\"3\":[4,{\"5\":6}]},\"7\":8}");
}

Test(reader, strings_are_untouched)
{
	expect_dump(parse_ok("{\"a\":\"{0:1}\"}"), "{\"a\":\"{0:1}\"}");
	expect_dump(parse_ok("{\"a\":\"x\\\",0:1\",1:\"\\\\\",2:\"\\\\\\\"{3:4\"}"),
		    "{\"a\":\"x\\\",0:1\",\"1\":\"\\\\\",\"2\":\"\\\\\\\"{3:4\"}");
	expect_dump(parse_ok("{\",5:\":{6:\"]}{7:\"}}"), "{\",5:\":{\"6\":\"]}{7:\"}}");
}

Test(reader, large_integers_and_unicode)
{
	json_t *v = parse_ok("{\"t\":1700000000000,\"m\":9223372036854775807,\"n\":\"\\u00e9\xC3\xA9\"}");
	cr_expect_eq(json_integer_value(json_object_get(v, "t")), 1700000000000LL);
	cr_expect_eq(json_integer_value(json_object_get(v, "m")), INT64_MAX);
	cr_expect_str_eq(json_string_value(json_object_get(v, "n")), "\xC3\xA9\xC3\xA9");
	json_decref(v);
}

Test(reader, errors)
{
	parse_fails("", RMQNS_EJSON);
	parse_fails("5", RMQNS_EJSON);
	parse_fails("\"s\"", RMQNS_EJSON);
	parse_fails("{", RMQNS_EJSON);
	parse_fails("{0:}", RMQNS_EJSON);
	parse_fails("{0 1:2}", RMQNS_EJSON);
	parse_fails("{a:1}", RMQNS_EJSON);
	parse_fails("{null:1}", RMQNS_EJSON);
	parse_fails("{\"a\":1,}", RMQNS_EJSON);
	parse_fails("{\"a\":\"unterminated}", RMQNS_EJSON);
	parse_fails("{\"a\":99999999999999999999}", RMQNS_EJSON);
	parse_fails("{\"a\":\"\xFF\"}", RMQNS_EJSON);
	parse_fails("{\"a\":1} x", RMQNS_EJSON);
	parse_fails("{0:1,0x:2}", RMQNS_EJSON);
	parse_fails("]]]]", RMQNS_EJSON);
	int err = 0;
	cr_expect_null(json_body_parse(NULL, 0, &err));
	cr_expect_eq(err, RMQNS_EJSON);
	cr_expect_null(json_body_parse((const uint8_t *)"{}", JSON_BODY_MAX_LEN + 1, &err));
	cr_expect_eq(err, RMQNS_ETOOBIG);
}

Test(reader, deep_nesting_is_refused_not_crashed)
{
	size_t n = 5000;
	char *s = malloc(2 * n + 1);
	for (size_t i = 0; i < n; i++) {
		s[i] = '[';
		s[n + i] = ']';
	}
	s[2 * n] = 0;
	parse_fails(s, RMQNS_EJSON);
	for (size_t i = 0; i < n; i++) {
		s[i] = '{';
		s[n + i] = '}';
	}
	parse_fails(s, RMQNS_EJSON);
	free(s);
}

Test(reader, big_body_with_many_bare_keys)
{
	/* A registration-sized body: 20000 topics, each with an integer-keyed map. */
	struct buf b = BUF_INIT;
	cr_assert_eq(buf_append_str(&b, "{\"topicQueueMappingInfoMap\":{"), 0);
	for (int i = 0; i < 20000; i++)
		cr_assert_eq(buf_printf(&b, "%s\"topic-%d\":{\"currIdMap\":{%d:%d,%d:\"x\"}}",
					i ? "," : "", i, i, i * 2, i + 1), 0);
	cr_assert_eq(buf_append_str(&b, "}}"), 0);
	int err;
	json_t *v = json_body_parse(b.data, b.len, &err);
	cr_assert_not_null(v, "%d", err);
	json_t *m = json_object_get(v, "topicQueueMappingInfoMap");
	cr_expect_eq(json_object_size(m), 20000);
	json_t *t = json_object_get(json_object_get(m, "topic-19999"), "currIdMap");
	cr_expect_eq(json_integer_value(json_object_get(t, "19999")), 39998);
	cr_expect_str_eq(json_string_value(json_object_get(t, "20000")), "x");
	json_decref(v);
	buf_free(&b);
}

Test(reader, round_trip_with_writer)
{
	struct buf b = BUF_INIT;
	struct jw w;
	jw_init(&w, &b, JW_DEFAULT);
	jw_obj_begin(&w);
	jw_key(&w, "brokerAddrs");
	jw_obj_begin(&w);
	for (int i = 0; i < 20; i++) {
		jw_key_int(&w, i * 16);
		jw_str(&w, "addr\x01\xE2\x80\xA8\"");
	}
	jw_obj_end(&w);
	jw_obj_end(&w);
	cr_assert_eq(jw_error(&w), 0);
	int err;
	json_t *v = json_body_parse(b.data, b.len, &err);
	cr_assert_not_null(v);
	json_t *m = json_object_get(v, "brokerAddrs");
	cr_expect_eq(json_object_size(m), 20);
	cr_expect_str_eq(json_string_value(json_object_get(m, "304")), "addr\x01\xE2\x80\xA8\"");
	json_decref(v);
	buf_free(&b);
}

/* ---- scalar text ---- */

Test(scalar, java_style_text)
{
	char tmp[64];
	json_t *v;
	v = json_string("s");
	cr_expect_str_eq(json_scalar_text(v, tmp, sizeof(tmp)), "s");
	json_decref(v);
	v = json_integer(-1700000000000LL);
	cr_expect_str_eq(json_scalar_text(v, tmp, sizeof(tmp)), "-1700000000000");
	cr_expect_null(json_scalar_text(v, tmp, 5), "does not fit");
	json_decref(v);
	v = json_real(1.5);
	cr_expect_str_eq(json_scalar_text(v, tmp, sizeof(tmp)), "1.5");
	json_decref(v);
	v = json_real(0.1);
	cr_expect_str_eq(json_scalar_text(v, tmp, sizeof(tmp)), "0.1");
	json_decref(v);
	cr_expect_str_eq(json_scalar_text(json_true(), tmp, sizeof(tmp)), "true");
	cr_expect_str_eq(json_scalar_text(json_false(), tmp, sizeof(tmp)), "false");
	cr_expect_null(json_scalar_text(json_null(), tmp, sizeof(tmp)));
	v = json_object();
	cr_expect_null(json_scalar_text(v, tmp, sizeof(tmp)));
	json_decref(v);
	v = json_array();
	cr_expect_null(json_scalar_text(v, tmp, sizeof(tmp)));
	json_decref(v);
}

/* ---- the streaming reader's options ---- */

/* The first string value of {"k":<text>} read with opts, or NULL with
 * *err set. The result is a copy. */
static char *read_k(const char *text, unsigned opts, int *err)
{
	struct jp j;
	const char *k, *s;
	size_t n;
	char *out = NULL;
	size_t len = strlen(text);
	uint8_t *copy = malloc(len + 1);
	memcpy(copy, text, len);
	jp_init_opts(&j, copy, len, 0, opts);
	if (jp_obj_begin(&j) == 0 && jp_obj_key(&j, &k, NULL) == 1 && jp_string(&j, &s, &n) == 0 &&
	    jp_obj_key(&j, &k, NULL) == 0 && jp_end(&j) == 0)
		out = strndup(s, n);
	*err = j.err;
	jp_fini(&j);
	free(copy);
	return out;
}

static void read_k_is(const char *text, unsigned opts, const char *want)
{
	int err;
	char *got = read_k(text, opts, &err);
	cr_assert_not_null(got, "%s (opts %u): %d", text, opts, err);
	cr_expect_str_eq(got, want, "%s (opts %u)", text, opts);
	free(got);
}

static void read_k_fails(const char *text, unsigned opts)
{
	int err;
	char *got = read_k(text, opts, &err);
	cr_expect_null(got, "%s (opts %u) read as %s", text, opts, got ? got : "");
	cr_expect_eq(err, RMQNS_EJSON, "%s (opts %u)", text, opts);
	free(got);
}

#define FFFD "\xEF\xBF\xBD"

Test(json_reader, nul_and_surrogates)
{
	read_k_fails("{\"k\":\"a\\u0000\"}", 0);
	read_k_is("{\"k\":\"a\\u0000\"}", JP_NUL_AS_FFFD, "a" FFFD);
	read_k_is("{\"k\":\"\\ud800x\\udc00\"}", 0, FFFD "x" FFFD);
	read_k_is("{\"k\":\"\\ud83d\\ude00\"}", JP_REFUSE_BAD_TEXT, "\xF0\x9F\x98\x80");
	read_k_is("{\"k\":\"\\uFFFD\"}", JP_REFUSE_BAD_TEXT, FFFD);
	read_k_fails("{\"k\":\"\\ud800\"}", JP_REFUSE_BAD_TEXT);
	read_k_fails("{\"k\":\"\\u0000\"}", JP_REFUSE_BAD_TEXT | JP_NUL_AS_FFFD);
}

/* One U+FFFD per ill-formed sequence, as Java's decoder cuts them. */
Test(json_reader, invalid_utf8)
{
	static const struct { const char *raw, *want; } cases[] = {
		{ "\xFF", FFFD }, { "\xC3", FFFD }, { "\xE4\xB8", FFFD }, { "\xF0\x9F\x98", FFFD },
		{ "\xED\xA0\x80", FFFD FFFD FFFD }, { "\xC0\xAF", FFFD FFFD }, { "\xE0\x9F\x80", FFFD FFFD FFFD },
		{ "\xF4\x90\x80\x80", FFFD FFFD FFFD FFFD }, { "\xF0\x9F\x98\xC3\xA9", FFFD "\xC3\xA9" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[64], want[64];
		snprintf(text, sizeof(text), "{\"k\":\"a%sb\"}", cases[i].raw);
		snprintf(want, sizeof(want), "a%sb", cases[i].want);
		read_k_is(text, 0, want);
		read_k_fails(text, JP_REFUSE_BAD_TEXT);
	}
}

Test(json_reader, rfc_strings_and_keys)
{
	read_k_is("{\"k\":\"a\tb\\'\"}", 0, "a\tb'");
	read_k_fails("{\"k\":\"a\tb\"}", JP_RFC);
	read_k_fails("{\"k\":\"\\'\"}", JP_RFC);
	read_k_is("{7:\"v\"}", JP_RFC, "v");
	read_k_fails("{7:\"v\"}", JP_NO_BARE_KEYS);
}

/* jp_number hands out the token as written; under JP_RFC a skipped
 * number is checked the same way. */
Test(json_reader, number_text)
{
	static const char *good[] = { "0", "-0", "12345678901234567890123", "1.50", "1e400", "-2.5E-3" };
	static const char *bad[] = { "01", "1.", "-", "1e", "1.5.3", "+1", ".5", "1e5e6" };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		char text[64];
		snprintf(text, sizeof(text), "[%s]", good[i]);
		struct jp j;
		const char *s;
		size_t n;
		jp_init_opts(&j, (const uint8_t *)text, strlen(text), 0, JP_RFC);
		cr_assert_eq(jp_arr_begin(&j), 0);
		cr_assert_eq(jp_arr_next(&j), 1);
		cr_assert_eq(jp_number(&j, &s, &n), 0, "%s", good[i]);
		cr_expect_eq(n, strlen(good[i]));
		cr_expect_eq(memcmp(s, good[i], n), 0);
		cr_expect_eq(jp_arr_next(&j), 0);
		cr_expect_eq(jp_end(&j), 0);
		jp_fini(&j);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[64];
		snprintf(text, sizeof(text), "{\"a\":%s}", bad[i]);
		struct jp j;
		jp_init_opts(&j, (const uint8_t *)text, strlen(text), 0, JP_RFC);
		int rc = jp_skip(&j);
		if (rc == 0)
			rc = jp_end(&j);
		cr_expect_eq(rc, RMQNS_EJSON, "%s skipped", bad[i]);
		jp_fini(&j);
	}
}

Test(json_reader, depth_bound)
{
	char text[80];
	memset(text, '[', 40);
	memset(text + 40, ']', 40);
	struct jp j;
	jp_init_opts(&j, (const uint8_t *)text, 80, 39, 0);
	cr_expect_eq(jp_skip(&j), RMQNS_ETOOBIG);
	jp_fini(&j);
	jp_init_opts(&j, (const uint8_t *)text, 80, 40, 0);
	cr_expect_eq(jp_skip(&j), 0);
	cr_expect_eq(jp_end(&j), 0);
	jp_fini(&j);
}

/* Views read what jp_obj_key and jp_string read, pointing into the input
 * exactly when nothing is decoded: one special byte (an escape, a control
 * character, a non-ASCII byte) at every place of strings of every length
 * around the 8- and 16-byte steps of the scan. */
Test(json_reader, views_read_what_copies_read)
{
	static const char *specials[] = { "", "\\\"", "\\\\", "\\n", "\x01", "\xC3\xA9", "\\u00e9", "\x7F", " " };
	for (size_t s = 0; s < sizeof(specials) / sizeof(specials[0]); s++) {
		for (size_t len = 0; len <= 40; len++) {
			for (size_t at = 0; at <= len; at++) {
				char str[128], text[300];
				snprintf(str, sizeof(str), "%.*s%s%.*s", (int)at, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNO",
					 specials[s], (int)(len - at), "0123456789012345678901234567890123456789xx");
				snprintf(text, sizeof(text), "{\"%s\":\"%s\",\"x\":1}", str, str);
				struct jp a, b;
				const char *ka, *kb, *va, *vb;
				size_t kla, klb, vla, vlb;
				jp_init(&a, (const uint8_t *)text, strlen(text), 8);
				jp_init(&b, (const uint8_t *)text, strlen(text), 8);
				cr_assert_eq(jp_obj_begin(&a), 0);
				cr_assert_eq(jp_obj_begin(&b), 0);
				cr_assert_eq(jp_obj_key(&a, &ka, &kla), 1, "%s", text);
				char *kcopy = strndup(ka, kla);
				cr_assert_eq(jp_obj_key_view(&b, &kb, &klb), 1, "%s", text);
				cr_assert_eq(klb, kla, "%s", text);
				cr_assert(memcmp(kb, kcopy, kla) == 0, "%s", text);
				bool plain = s == 0 || s == 7 || s == 8;
				bool into_input = kb >= text && kb < text + strlen(text);
				cr_assert_eq(into_input, plain, "%s: a view into the input iff plain", text);
				cr_assert_eq(jp_string(&a, &va, &vla), 0);
				char *vcopy = strndup(va, vla);
				cr_assert_eq(jp_string_view(&b, &vb, &vlb), 0);
				cr_assert_eq(vlb, vla);
				cr_assert(memcmp(vb, vcopy, vla) == 0, "%s", text);
				cr_assert_eq(jp_obj_key_view(&b, &kb, &klb), 1);
				cr_assert(klb == 1 && kb[0] == 'x');
				cr_assert_eq(jp_skip(&b), 0);
				cr_assert_eq(jp_obj_key_view(&b, &kb, &klb), 0);
				cr_assert_eq(jp_end(&b), 0);
				free(kcopy);
				free(vcopy);
				jp_fini(&a);
				jp_fini(&b);
			}
		}
	}
	/* a string cut off by the end of the text, and a bare integer key */
	struct jp j;
	const char *k;
	size_t kl;
	jp_init(&j, (const uint8_t *)"{\"abcdefghijklmnop", 18, 8);
	cr_assert_eq(jp_obj_begin(&j), 0);
	cr_expect_lt(jp_obj_key_view(&j, &k, &kl), 0);
	jp_fini(&j);
	jp_init(&j, (const uint8_t *)"{12:1}", 6, 8);
	cr_assert_eq(jp_obj_begin(&j), 0);
	cr_assert_eq(jp_obj_key_view(&j, &k, &kl), 1);
	cr_expect(kl == 2 && memcmp(k, "12", 2) == 0);
	jp_fini(&j);
}
