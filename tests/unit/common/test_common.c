/* Unit tests of src/common: buffers, error texts, logging, yielding and
 * the usable CPU count. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <pthread.h>
#include <regex.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "rmqns/buf.h"
#include "rmqns/cpus.h"
#include "rmqns/crc.h"
#include "rmqns/durable.h"
#include "rmqns/err.h"
#include "rmqns/fairq.h"
#include "rmqns/javahash.h"
#include "rmqns/log.h"
#include "rmqns/metrics.h"
#include "rmqns/remoting.h"
#include "rmqns/yield.h"
#include "test_util.h"

/* ---- buf ---- */

Test(buf, append_grows_and_keeps_bytes)
{
	struct buf b = BUF_INIT;
	for (int i = 0; i < 10000; i++)
		cr_assert_eq(buf_putc(&b, (uint8_t)(i % 251)), 0);
	cr_assert_eq(b.len, 10000);
	cr_assert_geq(b.cap, b.len);
	for (int i = 0; i < 10000; i++)
		cr_assert_eq(b.data[i], (uint8_t)(i % 251));
	cr_assert_eq(buf_append(&b, "abc", 3), 0);
	cr_assert_eq(buf_append_str(&b, "de"), 0);
	cr_assert_eq(memcmp(b.data + 10000, "abcde", 5), 0);
	cr_assert_eq(buf_append(&b, NULL, 0), 0);
	cr_assert_eq(b.len, 10005);
	buf_free(&b);
	cr_assert_null(b.data);
	cr_assert_eq(b.len, 0);
	cr_assert_eq(b.cap, 0);
}

Test(buf, big_endian_writers)
{
	struct buf b = BUF_INIT;
	cr_assert_eq(buf_put_be16(&b, 0x1234), 0);
	cr_assert_eq(buf_put_be32(&b, 0xA1B2C3D4u), 0);
	static const uint8_t want[] = { 0x12, 0x34, 0xA1, 0xB2, 0xC3, 0xD4 };
	cr_assert_eq(b.len, sizeof(want));
	cr_assert_eq(memcmp(b.data, want, sizeof(want)), 0);
	cr_assert_eq(rd_be16(b.data), 0x1234);
	cr_assert_eq(rd_be32(b.data + 2), 0xA1B2C3D4u);
	uint8_t w[4];
	wr_be32(w, 0x01020304);
	cr_assert_eq(w[0], 1);
	cr_assert_eq(w[3], 4);
	buf_free(&b);
}

Test(buf, printf_short_and_long)
{
	struct buf b = BUF_INIT;
	cr_assert_eq(buf_printf(&b, "x=%d,%s", 42, "y"), 0);
	cr_assert_eq(b.len, 6);
	cr_assert_eq(memcmp(b.data, "x=42,y", 6), 0);
	char big[3000];
	memset(big, 'q', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	cr_assert_eq(buf_printf(&b, "[%s]", big), 0);
	cr_assert_eq(b.len, 6 + 2 + 2999);
	cr_assert_eq(b.data[6], '[');
	cr_assert_eq(b.data[b.len - 1], ']');
	cr_assert_eq(b.data[7 + 2998], 'q');
	buf_free(&b);
}

Test(buf, consume_moves_the_rest_to_the_front)
{
	struct buf b = BUF_INIT;
	cr_assert_eq(buf_append_str(&b, "abcdef"), 0);
	buf_consume(&b, 0);
	cr_assert_eq(b.len, 6);
	buf_consume(&b, 2);
	cr_assert_eq(b.len, 4);
	cr_assert_eq(memcmp(b.data, "cdef", 4), 0);
	buf_consume(&b, 4);
	cr_assert_eq(b.len, 0);
	buf_free(&b);
}

Test(buf, terminate_does_not_count)
{
	struct buf b = BUF_INIT;
	cr_assert_eq(buf_append_str(&b, "hello"), 0);
	cr_assert_eq(buf_terminate(&b), 0);
	cr_assert_eq(b.len, 5);
	cr_assert_str_eq((char *)b.data, "hello");
	buf_reset(&b);
	cr_assert_eq(b.len, 0);
	cr_assert_neq(b.cap, 0);
	cr_assert_eq(buf_terminate(&b), 0);
	cr_assert_str_eq((char *)b.data, "");
	buf_free(&b);
}

Test(buf, impossible_reserve_fails_cleanly)
{
	struct buf b = BUF_INIT;
	cr_assert_eq(buf_append_str(&b, "keep"), 0);
	cr_assert_eq(buf_reserve(&b, SIZE_MAX - 2), RMQNS_ENOMEM);
	cr_assert_eq(buf_reserve(&b, SIZE_MAX / 2), RMQNS_ENOMEM);
	cr_assert_eq(b.len, 4);
	cr_assert_eq(memcmp(b.data, "keep", 4), 0);
	buf_free(&b);
}

/* ---- err ---- */

Test(err, every_code_has_its_own_text)
{
	const char *seen[14];
	for (int e = 0; e >= RMQNS_EPERM; e--) {
		const char *t = rmqns_strerror(e);
		cr_assert_not_null(t);
		cr_assert_str_neq(t, "unknown error", "code %d", e);
		for (int k = 0; k < -e; k++)
			cr_assert_str_neq(seen[k], t, "codes %d and %d share a text", -k, e);
		seen[-e] = t;
	}
	cr_assert_str_eq(rmqns_strerror(-999), "unknown error");
	cr_assert_str_eq(rmqns_strerror(5), "unknown error");
}

/* ---- log ---- */

static char *read_all(const char *path)
{
	char *s = tu_read_file(path);
	cr_assert_not_null(s, "cannot read %s", path);
	return s;
}

static void temp_path(char *path, size_t n)
{
	snprintf(path, n, "/tmp/rmqns-log-test-%ld-XXXXXX", (long)getpid());
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	close(fd);
}

/* The log goes to a fresh temporary file, path. */
static void log_to_temp(char *path, size_t n)
{
	temp_path(path, n);
	cr_assert_eq(log_set_file(path), 0);
}

Test(log, levels_names_and_file)
{
	char path[128];
	log_to_temp(path, sizeof(path));
	log_set_thread_name("unit-thread-with-a-long-name");
	log_set_level(LOG_WARN);
	cr_assert_eq(log_get_level(), LOG_WARN);
	log_info("hidden %d", 1);
	log_debug("hidden %d", 2);
	log_warn("shown %d", 3);
	log_error("shown %s", "four");
	log_set_level(LOG_DEBUG);
	log_debug("shown %d", 5);
	log_set_level(LOG_INFO);
	cr_assert_eq(log_set_file(NULL), 0);
	log_info("to stderr, not the file");

	char *s = read_all(path);
	cr_expect_null(strstr(s, "hidden"));
	cr_expect_null(strstr(s, "stderr"));
	cr_expect_not_null(strstr(s, " WARN  [unit-thread-wit] shown 3\n"), "%s", s);
	cr_expect_not_null(strstr(s, "ERROR [unit-thread-wit] shown four\n"), "%s", s);
	cr_expect_not_null(strstr(s, "DEBUG [unit-thread-wit] shown 5\n"), "%s", s);
	int lines = 0;
	for (char *p = s; *p; p++)
		lines += *p == '\n';
	cr_expect_eq(lines, 3);
	/* ISO 8601 with milliseconds and the offset starts every line */
	regex_t re;
	cr_assert_eq(regcomp(&re,
			     "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}"
			     "[+-][0-9]{2}:[0-9]{2} (WARN |ERROR|DEBUG) \\[unit-thread-wit\\] shown",
			     REG_EXTENDED | REG_NEWLINE),
		     0);
	for (char *line = s; *line; line = strchr(line, '\n') + 1)
		cr_expect_eq(regexec(&re, line, 0, NULL, 0), 0, "line: %s", line);
	regfree(&re);
	free(s);
	unlink(path);
}

Test(log, bad_file_keeps_destination)
{
	cr_assert_eq(log_set_file("/nonexistent-dir/x/y.log"), RMQNS_EIO);
}

Test(log, long_message_is_cut_to_one_line)
{
	char path[128];
	log_to_temp(path, sizeof(path));
	char *big = malloc(20000);
	memset(big, 'z', 19999);
	big[19999] = 0;
	log_error("%s", big);
	cr_assert_eq(log_set_file(NULL), 0);
	char *s = read_all(path);
	size_t n = strlen(s);
	cr_expect_gt(n, 4000);
	cr_expect_lt(n, 20000);
	cr_expect_eq(s[n - 1], '\n');
	cr_expect_eq(strchr(s, '\n'), s + n - 1);
	free(s);
	free(big);
	unlink(path);
}

static int count_lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

Test(log, limited_lines_per_window_then_how_many_were_dropped)
{
	char path[128];
	struct log_limit slow = LOG_LIMIT_INIT(3, 60000), fast = LOG_LIMIT_INIT(2, 100);
	log_to_temp(path, sizeof(path));
	for (int i = 0; i < 10; i++)
		log_write_limited(&slow, LOG_WARN, "slow %d", i);
	for (int i = 0; i < 5; i++)
		log_write_limited(&fast, LOG_WARN, "fast %d", i);
	usleep(200 * 1000); /* past fast's window */
	log_write_limited(&fast, LOG_WARN, "fast %d", 5);
	log_set_level(LOG_ERROR);
	log_write_limited(&fast, LOG_WARN, "below the level: neither written nor counted");
	log_set_level(LOG_INFO);
	cr_assert_eq(log_set_file(NULL), 0);

	char *s = read_all(path);
	cr_expect_eq(count_lines(s), 6, "%s", s);
	cr_expect_not_null(strstr(s, "] slow 2\n"), "%s", s);
	cr_expect_null(strstr(s, "slow 3"), "%s", s);
	cr_expect_not_null(strstr(s, "] fast 1\n"), "%s", s);
	cr_expect_null(strstr(s, "fast 2"), "%s", s);
	cr_expect_not_null(strstr(s, "WARN  ["), "%s", s);
	cr_expect_not_null(strstr(s, "] fast 5 (3 similar lines suppressed)\n"),
			   "%s", s);
	cr_expect_null(strstr(s, "below"), "%s", s);
	free(s);
	unlink(path);
}

Test(log, warn_limited_is_per_call_site)
{
	char path[128];
	log_to_temp(path, sizeof(path));
	for (int i = 0; i < 50; i++) {
		log_warn_limited("site a %d", i);
		log_warn_limited("site b %d", i);
	}
	cr_assert_eq(log_set_file(NULL), 0);
	char *s = read_all(path);
	cr_expect_eq(count_lines(s), 2 * LOG_LIMIT_LINES, "%s", s);
	cr_expect_not_null(strstr(s, "site a 9\n"), "%s", s);
	cr_expect_not_null(strstr(s, "site b 9\n"), "%s", s);
	cr_expect_null(strstr(s, "site a 10"), "%s", s);
	free(s);
	unlink(path);
}

/* The offset is the local zone's at that moment, written +HH:MM. */
Test(log, iso_8601_time_with_the_zone_offset)
{
	char out[64];
	const char *tz = getenv("TZ");
	char *saved = tz ? strdup(tz) : NULL;
	struct timespec ts = { .tv_sec = 1700000000, .tv_nsec = 123999999 };

	setenv("TZ", "UTC0", 1);
	tzset();
	log_format_time(out, sizeof out, &ts);
	cr_expect_str_eq(out, "2023-11-14T22:13:20.123+00:00");
	setenv("TZ", "<+0530>-5:30", 1); /* POSIX signs are reversed: UTC+05:30 */
	tzset();
	log_format_time(out, sizeof out, &ts);
	cr_expect_str_eq(out, "2023-11-15T03:43:20.123+05:30");
	setenv("TZ", "<-0330>3:30", 1);
	tzset();
	log_format_time(out, sizeof out, &ts);
	cr_expect_str_eq(out, "2023-11-14T18:43:20.123-03:30");
	if (saved)
		setenv("TZ", saved, 1);
	else
		unsetenv("TZ");
	tzset();
	free(saved);
}

/* One JSON object per line, with the text line's fields; what a message
 * holds (quotes, control bytes, bytes that are not UTF-8) cannot break
 * the line or the object. */
Test(log, json_lines_parse_and_carry_the_text_fields)
{
	char path[128];
	log_to_temp(path, sizeof(path));
	log_set_thread_name("json-thread");
	log_info("plain %d", 1);
	log_set_format(LOG_JSON);
	log_info("plain %d", 1);
	log_warn("quote \" back \\ newline \n tab \t bell \a bad \xff end");
	struct log_limit lim = LOG_LIMIT_INIT(1, 60000);
	log_write_limited(&lim, LOG_ERROR, "limited");
	log_write_limited(&lim, LOG_ERROR, "limited");
	log_set_format(LOG_TEXT);
	cr_assert_eq(log_set_file(NULL), 0);

	char *s = read_all(path);
	cr_assert_eq(count_lines(s), 4, "%s", s);
	char *text = s, *json = strchr(s, '\n') + 1;
	/* the text line's time, level, thread and message, field for field */
	json_error_t e;
	json_t *o = json_loadb(json, strcspn(json, "\n"), 0, &e);
	cr_assert_not_null(o, "%s: %s", e.text, json);
	const char *when = json_string_value(json_object_get(o, "time"));
	cr_assert_not_null(when);
	cr_expect_eq(strlen(when), 29, "%s", when);
	cr_expect_eq(strncmp(text, when, 10), 0, "%s vs %s", text, when); /* the same day */
	cr_expect_str_eq(json_string_value(json_object_get(o, "level")), "INFO");
	cr_expect_str_eq(json_string_value(json_object_get(o, "thread")), "json-thread");
	cr_expect_str_eq(json_string_value(json_object_get(o, "message")), "plain 1");
	cr_expect_eq(json_object_size(o), 4);
	cr_expect_not_null(strstr(text, " INFO  [json-thread] plain 1\n"), "%s", text);
	json_decref(o);

	char *next = strchr(json, '\n') + 1;
	o = json_loadb(next, strcspn(next, "\n"), 0, &e);
	cr_assert_not_null(o, "%s: %s", e.text, next);
	cr_expect_str_eq(json_string_value(json_object_get(o, "level")), "WARN");
	cr_expect_str_eq(json_string_value(json_object_get(o, "message")),
			 "quote \" back \\ newline \n tab \t bell \a bad \xef\xbf\xbd end");
	json_decref(o);
	next = strchr(next, '\n') + 1;
	o = json_loadb(next, strcspn(next, "\n"), 0, &e);
	cr_assert_not_null(o, "%s: %s", e.text, next);
	cr_expect_str_eq(json_string_value(json_object_get(o, "message")), "limited");
	json_decref(o);
	free(s);
	unlink(path);
}

Test(log, format_names_parse)
{
	cr_expect_eq(log_format_parse("text"), LOG_TEXT);
	cr_expect_eq(log_format_parse("JSON"), LOG_JSON);
	cr_expect_eq(log_format_parse("xml"), -1);
	cr_expect_eq(log_format_parse(NULL), -1);
}

/* logrotate's way: rename the file, then SIGHUP (log_reopen). Lines
 * before go to the renamed file, lines after to a new one at the path. */
Test(log, reopen_after_a_rename_writes_a_new_file)
{
	char path[128], moved[160];
	temp_path(path, sizeof(path));
	snprintf(moved, sizeof moved, "%s.1", path);
	cr_assert_eq(log_set_file(path), 0);
	log_info("before the rotation");
	cr_assert_eq(rename(path, moved), 0);
	log_info("after the rename, before the reopen");
	cr_assert_eq(log_reopen(), 0);
	log_info("after the reopen");
	cr_assert_eq(log_set_file(NULL), 0);
	cr_expect_eq(log_reopen(), 0); /* on stderr: nothing to reopen */

	char *old = read_all(moved), *now = read_all(path);
	cr_assert(old && now);
	cr_expect_not_null(strstr(old, "before the rotation"), "%s", old);
	cr_expect_not_null(strstr(old, "before the reopen"), "%s", old);
	cr_expect_null(strstr(old, "after the reopen"), "%s", old);
	cr_expect_eq(count_lines(now), 1, "%s", now);
	cr_expect_not_null(strstr(now, "after the reopen"), "%s", now);
	free(old);
	free(now);
	unlink(path);
	unlink(moved);
}

/* A thread nobody named (a library's) shows its kernel name, never t<tid>. */
static void *log_unnamed_thread(void *path)
{
	prctl(PR_SET_NAME, "lib-worker", 0, 0, 0);
	log_warn("from a thread of a library");
	(void)path;
	return NULL;
}

Test(log, unnamed_thread_shows_its_kernel_name)
{
	char path[128];
	pthread_t t;
	log_to_temp(path, sizeof(path));
	cr_assert_eq(pthread_create(&t, NULL, log_unnamed_thread, NULL), 0);
	pthread_join(t, NULL);
	cr_assert_eq(log_set_file(NULL), 0);
	char *s = read_all(path);
	cr_expect_not_null(strstr(s, " WARN  [lib-worker] from a thread of a library\n"), "%s", s);
	free(s);
	unlink(path);
}

/* ---- metrics label values ---- */

/* Broker names come from the network: whatever they hold, the label
 * stays one valid UTF-8 line (a scraper drops a whole answer otherwise). */
Test(metrics, label_values_escaped_and_valid_utf8)
{
	struct buf b = BUF_INIT;
	cr_assert_eq(metrics_escape_label(&b, "a\"b\\c\nd \xe4\xb8\xad \xff\xc0\x80 end"), 0);
	cr_assert_eq(buf_terminate(&b), 0);
	cr_expect_str_eq((char *)b.data,
			 "a\\\"b\\\\c\\nd \xe4\xb8\xad \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd end");
	buf_free(&b);
}

Test(metrics, request_code_names)
{
	cr_expect_str_eq(remoting_request_name(105), "GET_ROUTEINFO_BY_TOPIC");
	cr_expect_str_eq(remoting_request_name(904), "BROKER_HEARTBEAT");
	cr_expect_null(remoting_request_name(777));
	cr_expect_null(remoting_request_name(-1));
}

Test(log, level_names_parse)
{
	cr_expect_eq(log_level_parse("debug"), LOG_DEBUG);
	cr_expect_eq(log_level_parse("INFO"), LOG_INFO);
	cr_expect_eq(log_level_parse("Warn"), LOG_WARN);
	cr_expect_eq(log_level_parse("WARNING"), LOG_WARN);
	cr_expect_eq(log_level_parse("error"), LOG_ERROR);
	cr_expect_eq(log_level_parse("trace"), -1);
	cr_expect_eq(log_level_parse(NULL), -1);
}

/* java.lang.String.hashCode, values as Java computes them; ill-formed bytes
 * as Java's UTF-8 decoder reads them (one U+FFFD per byte it skips). */
Test(javahash, matches_java)
{
	cr_expect_eq(java_string_hash(""), 0);
	cr_expect_eq(java_string_hash("hello"), 99162322);
	cr_expect_eq(java_string_hash("broker-a"), (int32_t)0x1636eb6d);
	cr_expect_eq(java_string_hash("\xe4\xb8\xad\xe6\x96\x87"), 646394);    /* U+4E2D U+6587 */
	cr_expect_eq(java_string_hash("\xf0\x9f\x98\x80"), 1772899);           /* U+1F600: two units */
	cr_expect_eq(java_string_hash("a\xff" "b"), 2124838);
	cr_expect_eq(java_string_hash("\xc0\x80"), 65533 * 32);                /* overlong: two bytes, two U+FFFD */
	cr_expect_eq(java_string_hash("\xed\xa0\x80"), (65533 * 31 + 65533) * 31 + 65533); /* a surrogate */
	cr_expect_eq(java_string_hash(NULL), 0);
}

/* A piece of work shorter than the yield period never yields, however
 * long the thread waited before it: the period starts with the work. */
Test(yield, short_work_after_a_restart_never_yields)
{
	bool some_attempt_clean = false;
	yield_enable(true);
	/* a preemption inside an attempt could pass 100 us: any clean one counts */
	for (int attempt = 0; attempt < 5 && !some_attempt_clean; attempt++) {
		usleep(2000); /* waiting for the next request */
		yield_restart();
		uint64_t before = yield_count();
		for (int i = 0; i < 200; i++)
			yield_point();
		some_attempt_clean = yield_count() == before;
	}
	yield_enable(false);
	cr_assert(some_attempt_clean, "short work yielded in every attempt");
}

Test(yield, long_work_yields_and_a_thread_that_did_not_opt_in_never_does)
{
	struct timespec t0, t;
	for (int on = 0; on < 2; on++) {
		yield_enable(on);
		uint64_t before = yield_count();
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do { /* 2 ms of work */
			for (int i = 0; i < 64; i++)
				yield_point();
			clock_gettime(CLOCK_MONOTONIC, &t);
		} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 2000000L);
		if (on)
			cr_assert_gt(yield_count(), before, "2 ms of work and no yield");
		else
			cr_assert_eq(yield_count(), before, "yielded without opting in");
	}
	yield_enable(false);
}

/* ---- cpus ---- */

Test(cpus, cgroup_quota_text)
{
	cr_assert_eq(cpus_from_cgroup_max("max 100000\n"), 0, "no limit");
	cr_assert_eq(cpus_from_cgroup_max("100000 100000\n"), 1);
	cr_assert_eq(cpus_from_cgroup_max("150000 100000\n"), 2, "rounded up");
	cr_assert_eq(cpus_from_cgroup_max("50000 100000"), 1, "half a CPU is one");
	cr_assert_eq(cpus_from_cgroup_max("400000 100000"), 4);
	cr_assert_eq(cpus_from_cgroup_max(""), 0);
	cr_assert_eq(cpus_from_cgroup_max("12x 100000"), 0);
	cr_assert_eq(cpus_from_cgroup_max("100000 0"), 0);
	cr_assert_eq(cpus_from_cgroup_max("100000"), 0);
	cr_assert_eq(cpus_from_cgroup_max(NULL), 0);
	cr_assert_eq(cpus_from_quota(-1, 100000), 0, "version 1: -1 is no limit");
	cr_assert_eq(cpus_from_quota(250000, 100000), 3);
}

static char cpus_root[64];

static void cpus_file(const char *rel, const char *text)
{
	char path[256], cmd[512];
	snprintf(path, sizeof path, "%s/%s", cpus_root, rel);
	snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
	cr_assert_eq(system(cmd), 0);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

/* A fake /sys/fs/cgroup: the smallest quota on the way up counts. */
Test(cpus, cgroup_quota_of_the_process_and_its_parents)
{
	snprintf(cpus_root, sizeof cpus_root, "/tmp/rmqns-cpus-XXXXXX");
	cr_assert_not_null(mkdtemp(cpus_root));
	/* version 2 */
	cpus_file("cpu.max", "max 100000\n");
	cpus_file("pod/cpu.max", "300000 100000\n");
	cpus_file("pod/ctr/cpu.max", "max 100000\n");
	cpus_file("wide/cpu.max", "800000 100000\n");
	cpus_file("wide/narrow/cpu.max", "150000 100000\n");
	cr_assert_eq(cpus_cgroup_quota(cpus_root, "0::/pod/ctr\n"), 3, "the parent's quota");
	cr_assert_eq(cpus_cgroup_quota(cpus_root, "0::/wide/narrow\n"), 2, "the child's, smaller");
	cr_assert_eq(cpus_cgroup_quota(cpus_root, "0::/\n"), 0, "none at the root");
	cr_assert_eq(cpus_cgroup_quota(cpus_root, "0::/not/there\n"), 0);
	/* version 1: the cpu controller's line, files below cpu/ */
	cpus_file("cpu/cpu.cfs_quota_us", "-1\n");
	cpus_file("cpu/cpu.cfs_period_us", "100000\n");
	cpus_file("cpu/docker/x/cpu.cfs_quota_us", "150000\n");
	cpus_file("cpu/docker/x/cpu.cfs_period_us", "100000\n");
	cr_assert_eq(cpus_cgroup_quota(cpus_root, "9:name=systemd:/\n4:cpu,cpuacct:/docker/x\n"), 2);
	cr_assert_eq(cpus_cgroup_quota(cpus_root, "4:cpuacct,cpu:/docker/x\n"), 2);
	cr_assert_eq(cpus_cgroup_quota(cpus_root, "3:cpuacct:/docker/x\n"), 0, "not the cpu controller");
	cr_assert_eq(cpus_cgroup_quota(cpus_root, "1:cpu:/\n"), 0, "-1: no quota");
	/* both kinds (a hybrid mount): the smaller */
	cr_assert_eq(cpus_cgroup_quota(cpus_root, "4:cpu:/docker/x\n0::/pod/ctr\n"), 2);
	/* what the kernel would never write */
	cr_assert_eq(cpus_cgroup_quota(cpus_root, ""), 0);
	cr_assert_eq(cpus_cgroup_quota(cpus_root, "garbage\n::\n0:\n"), 0);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", cpus_root);
	cr_assert_eq(system(cmd), 0);
}

Test(cpus, follow_the_affinity_mask)
{
	cpu_set_t all, one;
	cr_assert_eq(sched_getaffinity(0, sizeof all, &all), 0);
	unsigned n = cpus_usable();
	cr_assert(n >= 1 && n <= (unsigned)CPU_COUNT(&all), "%u usable of %d allowed", n, CPU_COUNT(&all));
	int first = 0;
	while (!CPU_ISSET(first, &all))
		first++;
	CPU_ZERO(&one);
	CPU_SET(first, &one);
	cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0);
	cr_assert_eq(cpus_usable(), 1, "one CPU allowed, one usable");
	cr_assert_eq(sched_setaffinity(0, sizeof all, &all), 0);
	cr_assert_eq(cpus_usable(), n);
}

/* ---- fairq: fair between flows ---- */

struct fq_item {
	struct fairq_item it;
	int flow, seq;
};

Test(fairq, flows_take_turns_and_keep_their_own_order)
{
	struct fairq q;
	cr_assert_eq(fairq_init(&q, 100), 0);
	/* flow 1 queues 5 items before flows 2 and 3 queue one each */
	struct fq_item items[7] = {
		{ .flow = 1, .seq = 0 }, { .flow = 1, .seq = 1 }, { .flow = 1, .seq = 2 },
		{ .flow = 1, .seq = 3 }, { .flow = 1, .seq = 4 }, { .flow = 2, .seq = 0 },
		{ .flow = 3, .seq = 0 },
	};
	for (int i = 0; i < 7; i++)
		cr_assert_eq(fairq_push(&q, (uint64_t)items[i].flow, &items[i].it), 0);
	cr_assert_eq(fairq_count(&q), 7);
	/* 1, 2, 3, then the rest of flow 1, in its order */
	static const int want_flow[] = { 1, 2, 3, 1, 1, 1, 1 };
	static const int want_seq[] = { 0, 0, 0, 1, 2, 3, 4 };
	for (int i = 0; i < 7; i++) {
		struct fairq_item *it = fairq_pop(&q);
		cr_assert_not_null(it);
		struct fq_item *f = (struct fq_item *)it;
		cr_expect_eq(f->flow, want_flow[i], "pop %d: flow %d", i, f->flow);
		cr_expect_eq(f->seq, want_seq[i], "pop %d: seq %d", i, f->seq);
	}
	cr_assert_null(fairq_pop(&q));
	cr_assert(fairq_looks_empty(&q));
	fairq_destroy(&q);
}

Test(fairq, bounded_in_items_and_flows_reused)
{
	struct fairq q;
	cr_assert_eq(fairq_init(&q, 3), 0);
	struct fq_item items[4];
	for (int i = 0; i < 3; i++)
		cr_assert_eq(fairq_push(&q, (uint64_t)i, &items[i].it), 0);
	cr_assert_eq(fairq_push(&q, 9, &items[3].it), RMQNS_EFULL);
	for (int round = 0; round < 1000; round++) { /* emptied flows come back from the spares */
		struct fairq_item *it = fairq_pop(&q);
		cr_assert_not_null(it);
		cr_assert_eq(fairq_push(&q, (uint64_t)(round % 7), it), 0);
	}
	cr_assert_eq(fairq_count(&q), 3);
	fairq_destroy(&q);
	cr_assert_eq(fairq_init(&q, 0), RMQNS_EINVAL);
}

Test(fairq, a_flow_id_of_zero_and_many_flows)
{
	enum { FLOWS = 5000 };
	struct fairq q;
	cr_assert_eq(fairq_init(&q, 2 * FLOWS), 0);
	static struct fq_item items[2 * FLOWS];
	for (int i = 0; i < 2 * FLOWS; i++) {
		items[i].flow = i % FLOWS;
		items[i].seq = i / FLOWS;
		cr_assert_eq(fairq_push(&q, (uint64_t)items[i].flow, &items[i].it), 0);
	}
	/* every flow's first item leaves before any flow's second */
	for (int i = 0; i < 2 * FLOWS; i++) {
		struct fq_item *f = (struct fq_item *)fairq_pop(&q);
		cr_assert_not_null(f);
		cr_assert_eq(f->seq, i / FLOWS, "pop %d: seq %d of flow %d", i, f->seq, f->flow);
	}
	fairq_destroy(&q);
}

/* ---- crc ---- */

/* The folded CRC gives zlib's value for every length around its 16- and
 * 64-byte blocks, at every alignment, continued from any value. */
Test(crc, equals_zlib)
{
	enum { N = 1 << 17 };
	uint8_t *b = malloc(N);
	cr_assert_not_null(b);
	uint32_t x = 12345;
	for (size_t i = 0; i < N; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (uint8_t)(x >> 16);
	}
	for (size_t n = 0; n < 600; n++)
		for (size_t off = 0; off < 4; off++) {
			cr_assert_eq(crc32_update(0, b + off, n), (uint32_t)crc32(0, b + off, (uInt)n), "n %zu off %zu", n, off);
			cr_assert_eq(crc32_update(0xDEADBEEF, b + off, n), (uint32_t)crc32(0xDEADBEEF, b + off, (uInt)n),
				     "n %zu off %zu, continued", n, off);
		}
	cr_expect_eq(crc32_update(0, b, N), (uint32_t)crc32(0, b, N));
	uint32_t split = crc32_update(crc32_update(0, b, 1000), b + 1000, N - 1000);
	cr_expect_eq(split, (uint32_t)crc32(0, b, N), "in two pieces as in one");
	cr_expect_eq(crc32_update(0, (const uint8_t *)"123456789", 9), 0xCBF43926u, "the check value");
	free(b);
}

/* ---- durable files ---- */

/* Links planted at the temporary names are removed, never written
 * through: the files they point to keep their bytes, the new content
 * lands at the path with the old one's mode, the old one in .bak. */
Test(durable, write_never_follows_a_link_at_its_temporary_names)
{
	char dir[64];
	tu_mkdtemp(dir, sizeof dir, "rmqns-durable");
	char *path = tu_path_in(dir, "kv.json"), *tmp = tu_path_in(dir, "kv.json.tmp");
	char *bak_tmp = tu_path_in(dir, "kv.json.bak.tmp"), *victim = tu_path_in(dir, "victim");
	char *bak = tu_path_in(dir, "kv.json.bak");
	char err[256];

	tu_write_file(victim, "not yours");
	tu_write_file(path, "old");
	cr_assert_eq(chmod(path, 0600), 0);
	cr_assert_eq(symlink(victim, tmp), 0);
	cr_assert_eq(symlink(victim, bak_tmp), 0);
	cr_assert_eq(durable_write(path, "new", 3, true, err, sizeof err), 0, "%s", err);
	tu_assert_file_eq(victim, "not yours", "the link's target");
	tu_assert_file_eq(path, "new", "the path");
	tu_assert_file_eq(bak, "old", "the backup");
	struct stat st;
	cr_assert_eq(lstat(path, &st), 0);
	cr_assert(S_ISREG(st.st_mode));
	cr_assert_eq(st.st_mode & 07777, 0600);
	cr_assert_eq(lstat(tmp, &st), -1, "the tmp name is left behind");
	cr_assert_eq(lstat(bak_tmp, &st), -1, "the .bak.tmp name is left behind");

	/* a directory at the tmp name: refused with the reason, path unchanged */
	cr_assert_eq(mkdir(tmp, 0700), 0);
	cr_assert_eq(durable_write(path, "newer", 5, false, err, sizeof err), RMQNS_EIO);
	cr_assert_not_null(strstr(err, "kv.json.tmp"), "%s", err);
	tu_assert_file_eq(path, "new", "the path after a refused write");
	free(path), free(tmp), free(bak_tmp), free(victim), free(bak);
	tu_rmdir(dir);
}

/* A FIFO, a directory or a device is refused at once, by kind, never
 * opened for a read that would wait for a writer. */
Test(durable, read_refuses_what_is_not_a_regular_file_without_blocking, .timeout = 20)
{
	char dir[64];
	tu_mkdtemp(dir, sizeof dir, "rmqns-durable");
	char *fifo = tu_path_in(dir, "fifo");
	char err[256];
	struct buf b = BUF_INIT;
	static const struct {
		const char *path_or_null, *kind;
	} cases[] = { { NULL, "is a FIFO" }, { ".", "is a directory" }, { "/dev/null", "is a device" } };

	cr_assert_eq(mkfifo(fifo, 0600), 0);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *path = cases[i].path_or_null ? cases[i].path_or_null : fifo;
		cr_assert_eq(durable_read(path, 1024, &b, err, sizeof err), RMQNS_EIO, "%s", path);
		cr_assert_not_null(strstr(err, cases[i].kind), "%s: %s", path, err);
		cr_assert_eq(b.len, 0);
	}
	buf_free(&b);
	free(fifo);
	tu_rmdir(dir);
}
