/* Java properties reading and writing (src/config/properties.c): every
 * rule of java.util.Properties.load, the charsets, and the writer's round
 * trip. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmqns/err.h"
#include "rmqns/properties.h"

static struct properties p;

static void setup(void)
{
	p = (struct properties)PROPERTIES_INIT;
}
static void teardown(void)
{
	properties_free(&p);
}

TestSuite(properties, .init = setup, .fini = teardown);

static int parse(const char *text)
{
	return properties_parse(&p, text, strlen(text), PROPERTIES_UTF8, NULL);
}

static void expect(const char *key, const char *value)
{
	const char *v = properties_get(&p, key);
	cr_assert(v != NULL, "key '%s' missing", key);
	cr_assert_str_eq(v, value, "key '%s'", key);
}

/* Exactly these keys, with these values. */
struct want {
	const char *key, *value;
};
static void expect_exactly(const struct want *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		expect(w[i].key, w[i].value);
	cr_assert_eq(p.count, n);
}
#define EXPECT_EXACTLY(...) \
	expect_exactly((const struct want[]){ __VA_ARGS__ }, sizeof((const struct want[]){ __VA_ARGS__ }) / sizeof(struct want))

Test(properties, separators)
{
	cr_assert_eq(parse("a=1\nb:2\nc 3\nd\t=\t4\ne  :  5\nf=\ng\n h = 6 \n=empty key\nj==x\nk :=y\n"), 0);
	/* h: trailing whitespace of a value is kept; j: only one separator is skipped */
	EXPECT_EXACTLY({ "a", "1" }, { "b", "2" }, { "c", "3" }, { "d", "4" }, { "e", "5" }, { "f", "" },
		       { "g", "" }, { "h", "6 " }, { "", "empty key" }, { "j", "=x" }, { "k", "=y" });
}

Test(properties, comments_and_blank_lines)
{
	cr_assert_eq(parse("# c1\n! c2\n   # indented\n\t! tab\n\n   \na=#not a comment\nb=!x\n"), 0);
	EXPECT_EXACTLY({ "a", "#not a comment" }, { "b", "!x" });
}

Test(properties, continuations)
{
	cr_assert_eq(parse("k1=a\\\n   b\\\n\tc\n"
			   "k2=even\\\\\n"
			   "k3=next\n"
			   "#comment\\\n"
			   "k4=v4\n"
			   "k5=x\\\n#y\n"
			   "k6=end\\\n\nk7=7\n"), 0);
	/* k4: a comment line never continues;
	 * k5: a continued line is never a comment;
	 * k6: a blank line ends the continuation */
	EXPECT_EXACTLY({ "k1", "abc" }, { "k2", "even\\" }, { "k3", "next" }, { "k4", "v4" },
		       { "k5", "x#y" }, { "k6", "end" }, { "k7", "7" });
}

Test(properties, line_endings)
{
	cr_assert_eq(parse("a=1\r\nb=2\rc=3\n\r\nd=4\\\r\n  5"), 0);
	EXPECT_EXACTLY({ "a", "1" }, { "b", "2" }, { "c", "3" }, { "d", "45" });
}

Test(properties, escapes)
{
	cr_assert_eq(parse("t=a\\tb\\nc\\rd\\fe\n"
			   "u=\\u0041\\u00e9\\u20AC\n"
			   "a\\=b\\:c\\ d=v\n"
			   "x=\\q\\\\\n"
			   "emoji=\\uD83D\\uDE00\n"
			   "lone=a\\uD83Db\n"
			   "lowonly=\\uDE00\n"
			   "raw=é€😀\n"), 0);
	expect("t", "a\tb\nc\rd\fe");
	expect("u", "A\xC3\xA9\xE2\x82\xAC");
	expect("a=b:c d", "v");
	expect("x", "q\\");
	expect("emoji", "\xF0\x9F\x98\x80");
	expect("lone", "a?b");
	expect("lowonly", "?");
	expect("raw", "é€😀");
}

Test(properties, trailing_backslash_at_end_of_text)
{
	cr_assert_eq(parse("k=v\\"), 0);
	expect("k", "v");
}

Test(properties, no_final_newline_and_leading_whitespace)
{
	cr_assert_eq(parse("   \t\f key = value"), 0);
	expect("key", "value");
}

Test(properties, malformed_unicode_escape)
{
	size_t line = 0;
	const char *t = "a=1\nb=2\nc=\\uZZZZ\n";

	cr_assert_eq(properties_parse(&p, t, strlen(t), PROPERTIES_UTF8, &line), RMQNS_EINVAL);
	cr_assert_eq(line, 3);
	cr_assert_eq(p.count, 0, "a bad text merges nothing");
	cr_assert_eq(parse("k=\\u12"), RMQNS_EINVAL);
	cr_assert_eq(parse("k\\u00=v"), RMQNS_EINVAL);
	cr_assert_eq(parse("k=\\u0000"), RMQNS_EINVAL, "NUL is refused");
	cr_assert_eq(properties_parse(&p, "k=a\0b", 5, PROPERTIES_UTF8, NULL), RMQNS_EINVAL);
	cr_assert_eq(p.count, 0);
}

Test(properties, duplicates_last_wins)
{
	cr_assert_eq(parse("k=1\nk=2\nj=0\nk=3\n"), 0);
	expect("k", "3");
	cr_assert_eq(p.count, 2);
	cr_assert_str_eq(p.items[0].key, "j", "kept sorted by key");
}

Test(properties, merge_into_existing)
{
	cr_assert_eq(properties_set(&p, "old", "x"), 0);
	cr_assert_eq(properties_set(&p, "k", "x"), 0);
	cr_assert_eq(parse("k=new\n"), 0);
	expect("old", "x");
	expect("k", "new");
}

Test(properties, charset_utf8_body_replaces_malformed_bytes)
{
	const char t[] = "k=a\xE9z\n";

	cr_assert_eq(properties_parse(&p, t, sizeof(t) - 1, PROPERTIES_UTF8, NULL), 0);
	expect("k", "a\xEF\xBF\xBDz");
}

Test(properties, charset_file_latin1_when_not_utf8)
{
	const char latin[] = "k=caf\xE9\n";
	const char utf8[] = "k=caf\xC3\xA9\n";

	cr_assert_eq(properties_parse(&p, latin, sizeof(latin) - 1, PROPERTIES_FILE, NULL), 0);
	expect("k", "caf\xC3\xA9");
	properties_free(&p);
	cr_assert_eq(properties_parse(&p, utf8, sizeof(utf8) - 1, PROPERTIES_FILE, NULL), 0);
	expect("k", "caf\xC3\xA9");
}

Test(properties, set_remove_copy)
{
	struct properties q = PROPERTIES_INIT;

	for (int i = 0; i < 100; i++) {
		char k[16];
		snprintf(k, sizeof(k), "key%03d", 99 - i);
		cr_assert_eq(properties_set(&p, k, k + 3), 0);
	}
	cr_assert_eq(p.count, 100);
	for (size_t i = 1; i < p.count; i++)
		cr_assert(strcmp(p.items[i - 1].key, p.items[i].key) < 0);
	properties_remove(&p, "key050");
	properties_remove(&p, "absent");
	cr_assert_eq(p.count, 99);
	cr_assert_null(properties_get(&p, "key050"));
	cr_assert_eq(properties_copy(&q, &p), 0);
	cr_assert_eq(q.count, 99);
	cr_assert_str_eq(properties_get(&q, "key007"), "007");
	properties_free(&q);
}

Test(properties, format_plain_values_verbatim)
{
	struct buf out = BUF_INIT;

	cr_assert_eq(properties_set(&p, "listenPort", "9876"), 0);
	cr_assert_eq(properties_set(&p, "bindAddress", "0.0.0.0"), 0);
	cr_assert_eq(properties_set(&p, "kvConfigPath", "/home/rocketmq/namesrv/kvConfig.json"), 0);
	cr_assert_eq(properties_set(&p, "configBlackList", "configBlackList;configStorePath;kvConfigPath"), 0);
	cr_assert_eq(properties_set(&p, "empty", ""), 0);
	cr_assert_eq(properties_set(&p, "utf8", "é😀 a=b:c#"), 0);
	cr_assert_eq(properties_format(&p, &out), 0);
	cr_assert_eq(buf_terminate(&out), 0);
	cr_assert_str_eq((char *)out.data,
			 "bindAddress=0.0.0.0\n"
			 "configBlackList=configBlackList;configStorePath;kvConfigPath\n"
			 "empty=\n"
			 "kvConfigPath=/home/rocketmq/namesrv/kvConfig.json\n"
			 "listenPort=9876\n"
			 "utf8=é😀 a=b:c#\n");
	buf_free(&out);
}

Test(properties, format_round_trips_awkward_text)
{
	static const char *const kv[][2] = {
		{ "a b", " lead" }, { "k=1", "v\\w" }, { "c:d", "line\nbreak\r\ttab\f" },
		{ "#hash", "!bang" }, { "!x", "#y" }, { "ctl", "\x01\x7F" }, { "sp", "trail " },
	};
	struct properties q = PROPERTIES_INIT;
	struct buf out = BUF_INIT;

	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
		cr_assert_eq(properties_set(&p, kv[i][0], kv[i][1]), 0);
	cr_assert_eq(properties_format(&p, &out), 0);
	cr_assert_eq(properties_parse(&q, (char *)out.data, out.len, PROPERTIES_UTF8, NULL), 0);
	cr_assert_eq(q.count, p.count);
	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
		const char *v = properties_get(&q, kv[i][0]);
		cr_assert(v != NULL, "key '%s' lost", kv[i][0]);
		cr_assert_str_eq(v, kv[i][1]);
	}
	cr_assert(memchr(out.data, '\r', out.len) == NULL, "no raw CR in the text");
	properties_free(&q);
	buf_free(&out);
}

Test(properties, many_keys_stay_sorted_and_unique)
{
	struct buf text = BUF_INIT;

	/* A large body with every key twice: bounded size, checks the
	 * dedupe keeps the last value. */
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 20000; i++)
			cr_assert_eq(buf_printf(&text, "k%d=%d\n", (i * 7919) % 20000, round), 0);
	cr_assert_eq(properties_parse(&p, (char *)text.data, text.len, PROPERTIES_UTF8, NULL), 0);
	cr_assert_eq(p.count, 20000);
	for (size_t i = 0; i < p.count; i++)
		cr_assert_str_eq(p.items[i].value, "1");
	buf_free(&text);
}

Test(properties, load_file)
{
	char path[] = "/tmp/rmqns-props-XXXXXX";
	char err[256];
	int fd = mkstemp(path);
	const char t[] = "# conf\nlistenPort=19876\nname=caf\xE9\n";

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, t, sizeof(t) - 1), (ssize_t)sizeof(t) - 1);
	close(fd);
	cr_assert_eq(properties_load_file(&p, path, err, sizeof(err)), 0, "%s", err);
	expect("listenPort", "19876");
	expect("name", "caf\xC3\xA9");
	unlink(path);
	cr_assert_eq(properties_load_file(&p, path, err, sizeof(err)), RMQNS_EIO);
	cr_assert(strstr(err, path) != NULL, "reason names the file: %s", err);
	cr_assert_eq(properties_load_file(&p, "/tmp", err, sizeof(err)), RMQNS_EIO);
}
