/* Unit tests of src/common: buffers, error texts, logging, yielding and
 * the usable CPU count. */
#include <criterion/criterion.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "rmqns/buf.h"
#include "rmqns/cpus.h"
#include "rmqns/crc.h"
#include "rmqns/err.h"
#include "rmqns/javahash.h"
#include "rmqns/log.h"
#include "rmqns/yield.h"

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
	FILE *f = fopen(path, "rb");
	cr_assert(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	cr_assert(s);
	cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
	s[n] = 0;
	fclose(f);
	return s;
}

static void temp_path(char *path, size_t n)
{
	snprintf(path, n, "/tmp/rmqns-log-test-%ld-XXXXXX", (long)getpid());
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	close(fd);
}

Test(log, levels_names_and_file)
{
	char path[128];
	temp_path(path, sizeof(path));
	cr_assert_eq(log_set_file(path), 0);
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
	cr_expect_not_null(strstr(s, "WARN  [unit-thread-wit] shown 3\n"), "%s", s);
	cr_expect_not_null(strstr(s, "ERROR [unit-thread-wit] shown four\n"), "%s", s);
	cr_expect_not_null(strstr(s, "DEBUG [unit-thread-wit] shown 5\n"), "%s", s);
	int lines = 0;
	for (char *p = s; *p; p++)
		lines += *p == '\n';
	cr_expect_eq(lines, 3);
	/* "YYYY-MM-DD HH:MM:SS.mmm " starts every line. */
	cr_expect(s[4] == '-' && s[7] == '-' && s[10] == ' ' && s[13] == ':' && s[19] == '.');
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
	temp_path(path, sizeof(path));
	cr_assert_eq(log_set_file(path), 0);
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
