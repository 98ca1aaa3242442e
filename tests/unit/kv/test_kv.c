/* The KV store (src/kv): Java HashMap order, store operations, the file's
 * exact bytes, loading Java-written files, corrupt files, and failed
 * writes that must leave memory and disk as they were. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <urcu.h>

#include "jmap.h"
#include "rmqns/err.h"
#include "rmqns/kv.h"
#include "test_util.h"

static char dir[64];

static void setup(void)
{
	tu_mkdtemp(dir, sizeof(dir), "rmqns-kv");
	rcu_register_thread();
}

static void teardown(void)
{
	rcu_unregister_thread();
	umount2(dir, MNT_DETACH); /* only mounted by the full-disk test */
	tu_rmdir(dir);
}

TestSuite(kv, .init = setup, .fini = teardown);

static char *path_in(const char *name)
{
	return tu_path_in(dir, name);
}

static struct kv_store *open_ok(const char *path)
{
	char err[512];
	struct kv_store *kv = kv_open(path, false, err, sizeof(err));
	cr_assert_not_null(kv, "kv_open: %s", err);
	return kv;
}

static void put_ok(struct kv_store *kv, const char *ns, const char *k, const char *v)
{
	char err[512];
	cr_assert_eq(kv_put(kv, ns, k, v, err, sizeof(err)), 0, "put %s/%s: %s", ns, k, err);
}

static char *file_json(struct kv_store *kv)
{
	struct buf b = BUF_INIT;

	rcu_read_lock();
	cr_assert_eq(kv_file_json(kv, &b), 0);
	rcu_read_unlock();
	cr_assert_eq(buf_terminate(&b), 0);
	return (char *)b.data;
}

static char *table_json(struct kv_store *kv, const char *ns)
{
	struct buf b = BUF_INIT;
	int rc;

	rcu_read_lock();
	rc = kv_table_json(kv, ns, &b);
	rcu_read_unlock();
	if (rc == RMQNS_ENOTFOUND) {
		cr_assert_eq(b.len, 0);
		return NULL;
	}
	cr_assert_eq(rc, 0);
	cr_assert_eq(buf_terminate(&b), 0);
	return (char *)b.data;
}

static void expect_get(struct kv_store *kv, const char *ns, const char *k, const char *want)
{
	const char *v;

	rcu_read_lock();
	v = kv_get(kv, ns, k);
	if (want) {
		cr_assert_not_null(v, "%s/%s missing", ns, k);
		cr_assert_str_eq(v, want);
	} else {
		cr_assert_null(v, "%s/%s present", ns, k);
	}
	rcu_read_unlock();
}

/* ---- Java HashMap order ---- */

/* Closes the store and frees its file's path. */
static void close_store(struct kv_store *kv, char *path)
{
	kv_close(kv);
	free(path);
}

Test(kv, java_string_hash)
{
	/* Known String.hashCode values, then spread h ^ (h >>> 16). */
	cr_assert_eq(jmap_hash(""), 0u);
	cr_assert_eq(jmap_hash("hello"), 99162322u ^ (99162322u >> 16));
	cr_assert_eq(jmap_hash("polygenelubricants"), 0x80000000u ^ 0x8000u);
	cr_assert_eq(jmap_hash("Aa"), jmap_hash("BB"));
	cr_assert_eq(jmap_hash("é"), 233u);
	/* U+1F600 is the UTF-16 pair D83D DE00: 0xD83D * 31 + 0xDE00 */
	cr_assert_eq(jmap_hash("😀"), 1772899u ^ (1772899u >> 16));
}

Test(kv, hash_order_insertion_within_bucket_and_resize)
{
	struct jmap m = JMAP_INIT;
	void *old;
	char names[11][4];
	const char *order[16];
	int i = 0;

	/* "q" (113) and "a" (97) share bucket 1 of 16 but not of 32. */
	cr_assert_eq(jmap_put(&m, "q", NULL, &old), 0);
	cr_assert_eq(jmap_put(&m, "a", NULL, &old), 0);
	jmap_for_each(&m, e) order[i++] = e->key;
	cr_assert_eq(i, 2);
	cr_assert_str_eq(order[0], "q");
	cr_assert_str_eq(order[1], "a");
	for (int k = 0; k < 11; k++) {
		snprintf(names[k], sizeof(names[k]), "n%d", k);
		cr_assert_eq(jmap_put(&m, names[k], NULL, &old), 0);
	}
	cr_assert_eq(m.size, 13);
	cr_assert_eq(m.cap, 32, "13 entries exceed 0.75 of 16");
	i = 0;
	jmap_for_each(&m, e) order[i++] = e->key;
	for (int k = 0; k < i; k++) {
		if (strcmp(order[k], "q") == 0)
			cr_assert_fail("q came before a after the resize");
		if (strcmp(order[k], "a") == 0)
			break;
	}
	jmap_free(&m, NULL);
}

Test(kv, hash_order_presize_like_put_all)
{
	struct jmap m = JMAP_INIT;
	void *old;

	jmap_presize(&m, 2);
	cr_assert_eq(jmap_put(&m, "b", NULL, &old), 0);
	cr_assert_eq(m.cap, 4, "putAll of 2 entries makes a table of 4");
	jmap_free(&m, NULL);
	jmap_presize(&m, 12);
	cr_assert_eq(jmap_put(&m, "b", NULL, &old), 0);
	cr_assert_eq(m.cap, 32);
	jmap_free(&m, NULL);
	jmap_presize(&m, 6);
	cr_assert_eq(jmap_put(&m, "b", NULL, &old), 0);
	cr_assert_eq(m.cap, 16);
	jmap_free(&m, NULL);
}

Test(kv, bucket_of_nine_grows_small_table)
{
	struct jmap m = JMAP_INIT;
	char key[8];
	void *old;
	int n = 0;

	/* Nine keys in bucket 0 of a 16-bucket table: Java resizes rather
	 * than make a tree while the table is below 64 buckets. */
	for (int c = 0; c < 20000 && n < 9; c++) {
		snprintf(key, sizeof(key), "k%d", c);
		if ((jmap_hash(key) & 15) == 0 && (jmap_hash(key) & 16) == 0) {
			cr_assert_eq(jmap_put(&m, key, NULL, &old), 0);
			n++;
		}
	}
	cr_assert_eq(n, 9);
	cr_assert_eq(m.size, 9);
	cr_assert_eq(m.cap, 32, "nine in one bucket doubles the table");
	jmap_free(&m, NULL);
}

/* ---- store operations ---- */

Test(kv, put_get_delete_and_table)
{
	char *path = path_in("kvConfig.json");
	struct kv_store *kv = open_ok(path);
	char err[256], *t;

	cr_assert_null(tu_read_file(path), "nothing written before a change");
	expect_get(kv, "NS", "k", NULL);
	cr_assert_null(table_json(kv, "NS"));
	put_ok(kv, "NS", "k", "v");
	put_ok(kv, "NS", "k2", "v2");
	expect_get(kv, "NS", "k", "v");
	t = table_json(kv, "NS");
	cr_assert_str_eq(t, "{\"table\":{\"k2\":\"v2\",\"k\":\"v\"}}", "Java hash order (verified on Java)");
	free(t);
	put_ok(kv, "NS", "k", "v3");
	expect_get(kv, "NS", "k", "v3");
	cr_assert_eq(kv_delete(kv, "NS", "k", err, sizeof(err)), 0);
	cr_assert_eq(kv_delete(kv, "NS", "k2", err, sizeof(err)), 0);
	expect_get(kv, "NS", "k", NULL);
	t = table_json(kv, "NS");
	cr_assert_str_eq(t, "{\"table\":{}}", "an emptied namespace stays");
	free(t);
	t = tu_read_file(path);
	cr_assert_str_eq(t, "{\"configTable\":{\"NS\":{}}}");
	free(t);
	expect_get(kv, "other", "k", NULL);
	close_store(kv, path);
}

Test(kv, file_bytes_and_bak)
{
	char *path = path_in("sub/dir/kvConfig.json"), *bak, *t, *prev;
	struct kv_store *kv = open_ok(path);
	char err[256];

	cr_assert(asprintf(&bak, "%s.bak", path) > 0);
	put_ok(kv, "ORDER_TOPIC_CONFIG", "TopicOrder", "broker-a:4;broker-b:4");
	t = tu_read_file(path);
	cr_assert_str_eq(t, "{\"configTable\":{\"ORDER_TOPIC_CONFIG\":{\"TopicOrder\":\"broker-a:4;broker-b:4\"}}}",
			 "protocol.md 7, byte for byte, no trailing newline");
	cr_assert_null(tu_read_file(bak), "no .bak before there was a file");
	prev = t;
	put_ok(kv, "NS", "k", "v");
	tu_assert_file_eq(bak, prev, ".bak holds the previous content");
	free(prev);
	prev = tu_read_file(path);
	/* a delete of nothing still rewrites the file (and .bak) */
	cr_assert_eq(kv_delete(kv, "nope", "nope", err, sizeof(err)), 0);
	t = tu_read_file(bak);
	cr_assert_str_eq(t, prev);
	free(t);
	t = tu_read_file(path);
	cr_assert_str_eq(t, prev);
	free(t);
	free(prev);
	t = path_in("sub/dir/kvConfig.json.tmp");
	cr_assert_eq(access(t, F_OK), -1, "no .tmp left behind");
	free(t);
	kv_close(kv);
	free(bak);
	free(path);
}

Test(kv, escaping_follows_fastjson_default_form)
{
	char *path = path_in("kvConfig.json");
	struct kv_store *kv = open_ok(path);

	put_ok(kv, "NS", "k", "q\"b\\s/é😀\x01\x7F\xE2\x80\xA8\t<>&'");
	tu_assert_file_eq(path, "{\"configTable\":{\"NS\":{\"k\":\"q\\\"b\\\\s/é😀\\u0001\\u007F\\u2028\\t<>&'\"}}}",
			  "the file");
	close_store(kv, path);
}

/* ---- loading ---- */

Test(kv, java_written_file_loads_and_round_trips)
{
	char *path = path_in("kvConfig.json"), *t;
	struct kv_store *kv;
	size_t ns, keys;
	/* as fastjson writes it: one line, Java order, §5.1 escaping */
	const char *java = "{\"configTable\":{\"EMPTY\":{},\"ORDER_TOPIC_CONFIG\":{\"TopicOrder\":\"broker-a:4;broker-b:4\"},"
			   "\"NS\":{\"slash\":\"a/b\",\"ctl\":\"\\u0001\\u007F\\u2028\",\"q\":\"\\\"\\\\\",\"emoji\":\"😀é\"}}}";

	tu_write_file(path, java);
	kv = open_ok(path);
	kv_count(kv, &ns, &keys);
	cr_assert_eq(ns, 3);
	cr_assert_eq(keys, 5);
	expect_get(kv, "ORDER_TOPIC_CONFIG", "TopicOrder", "broker-a:4;broker-b:4");
	expect_get(kv, "NS", "slash", "a/b");
	expect_get(kv, "NS", "ctl", "\x01\x7F\xE2\x80\xA8");
	expect_get(kv, "NS", "q", "\"\\");
	expect_get(kv, "NS", "emoji", "😀é");
	t = table_json(kv, "EMPTY");
	cr_assert_str_eq(t, "{\"table\":{}}");
	free(t);
	/* every value survives a rewrite and a reload */
	put_ok(kv, "NS", "new", "1");
	kv_close(kv);
	kv = open_ok(path);
	expect_get(kv, "NS", "ctl", "\x01\x7F\xE2\x80\xA8");
	expect_get(kv, "NS", "emoji", "😀é");
	expect_get(kv, "NS", "new", "1");
	expect_get(kv, "ORDER_TOPIC_CONFIG", "TopicOrder", "broker-a:4;broker-b:4");
	close_store(kv, path);
}

Test(kv, reload_reorders_namespaces_as_java_put_all_does)
{
	char *path = path_in("kvConfig.json"), *t;
	struct kv_store *kv = open_ok(path);

	/* Written from a 16-bucket table: b (bucket 2) before e (5). After a
	 * restart Java copies the table with putAll, which sizes it for two
	 * entries (4 buckets): e (1) before b (2). */
	put_ok(kv, "b", "k", "1");
	put_ok(kv, "e", "k", "2");
	t = file_json(kv);
	cr_assert_str_eq(t, "{\"configTable\":{\"b\":{\"k\":\"1\"},\"e\":{\"k\":\"2\"}}}");
	free(t);
	kv_close(kv);
	kv = open_ok(path);
	t = file_json(kv);
	cr_assert_str_eq(t, "{\"configTable\":{\"e\":{\"k\":\"2\"},\"b\":{\"k\":\"1\"}}}");
	free(t);
	close_store(kv, path);
}

Test(kv, missing_file_is_empty)
{
	char *path = path_in("none/kvConfig.json");
	struct kv_store *kv = open_ok(path);
	size_t ns, keys;

	kv_count(kv, &ns, &keys);
	cr_assert_eq(ns + keys, 0);
	cr_assert_str_eq(kv_path(kv), path);
	close_store(kv, path);
}

static void expect_corrupt(const char *text, const char *why)
{
	char *path = path_in("kvConfig.json");
	char err[512];

	tu_write_file(path, text);
	cr_assert_null(kv_open(path, false, err, sizeof(err)), "'%s' loaded", text);
	cr_assert_not_null(strstr(err, path), "%s", err);
	cr_assert_not_null(strstr(err, why), "'%s' lacks '%s'", err, why);
	free(path);
}

Test(kv, corrupt_files_refuse_to_start)
{
	expect_corrupt("", "empty");
	expect_corrupt("{\"configTable\":{\"NS\":{\"k\":\"v\"}", "not valid JSON");
	expect_corrupt("[]", "not a JSON object");
	expect_corrupt("{\"other\":{}}", "configTable");
	expect_corrupt("{\"configTable\":{\"NS\":[1]}}", "NS");
	expect_corrupt("{\"configTable\":{\"NS\":{\"k\":{\"x\":1}}}}", "not a string");
	expect_corrupt("{\"configTable\":{\"NS\":{\"k\":\"a\",\"k\":\"b\"}}}", "not valid JSON");
}

Test(kv, corrupt_file_moved_aside_when_allowed)
{
	char *path = path_in("kvConfig.json"), err[512], cmd[256], *t;
	struct kv_store *kv;
	FILE *p;
	size_t ns, keys;

	tu_write_file(path, "{broken");
	kv = kv_open(path, true, err, sizeof(err));
	cr_assert_not_null(kv, "%s", err);
	kv_count(kv, &ns, &keys);
	cr_assert_eq(ns, 0);
	cr_assert_eq(access(path, F_OK), -1, "the bad file is moved away");
	snprintf(cmd, sizeof(cmd), "cat %s/kvConfig.json.corrupt-*", dir);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	t = calloc(1, 64);
	cr_assert_eq(fread(t, 1, 63, p), 7);
	pclose(p);
	cr_assert_str_eq(t, "{broken", "its bytes are kept");
	free(t);
	close_store(kv, path);
}

Test(kv, scalar_values_become_text_and_nulls_are_skipped)
{
	char *path = path_in("kvConfig.json");
	struct kv_store *kv;

	tu_write_file(path, "{\"configTable\":{\"NS\":{\"n\":12,\"b\":true,\"z\":null},\"nul\":null},\"extra\":1}");
	kv = open_ok(path);
	expect_get(kv, "NS", "n", "12");
	expect_get(kv, "NS", "b", "true");
	expect_get(kv, "NS", "z", NULL);
	cr_assert_null(table_json(kv, "nul"));
	close_store(kv, path);
}

/* ---- failed writes ---- */

Test(kv, unwritable_path_answers_error_and_keeps_nothing)
{
	char *blocker = path_in("file"), *path = path_in("file/kvConfig.json");
	struct kv_store *kv;
	char err[512];

	/* root ignores permissions, but a regular file cannot be a directory
	 * (one that appears after start: a path unusable at start is refused) */
	kv = open_ok(path);
	tu_write_file(blocker, "x");
	cr_assert_eq(kv_put(kv, "NS", "k", "v", err, sizeof(err)), RMQNS_EIO);
	cr_assert_not_null(strstr(err, "Not a directory") ? err : strstr(err, "not a directory"), "%s", err);
	expect_get(kv, "NS", "k", NULL);
	cr_assert_null(table_json(kv, "NS"), "the namespace was not created either");
	kv_close(kv);
	cr_assert_null(kv_open(path, false, err, sizeof(err)));
	cr_assert_not_null(strstr(err, path), "%s", err);
	free(blocker);
	free(path);
}

Test(kv, failed_write_keeps_memory_and_disk_equal)
{
	char *path = path_in("kvConfig.json"), *tmp = path_in("kvConfig.json.tmp");
	char *bak = path_in("kvConfig.json.bak"), *disk, *bak_before, *t;
	struct kv_store *kv = open_ok(path);
	char err[512];

	put_ok(kv, "NS", "a", "1");
	put_ok(kv, "NS", "b", "2");
	disk = tu_read_file(path);
	bak_before = tu_read_file(bak);
	/* a directory where the tmp file goes makes every write fail */
	cr_assert_eq(mkdir(tmp, 0755), 0);
	cr_assert_eq(kv_put(kv, "NS", "c", "3", err, sizeof(err)), RMQNS_EIO);
	cr_assert_not_null(strstr(err, tmp), "%s", err);
	cr_assert_eq(kv_delete(kv, "NS", "a", err, sizeof(err)), RMQNS_EIO);
	expect_get(kv, "NS", "c", NULL);
	expect_get(kv, "NS", "a", "1");
	tu_assert_file_eq(path, disk, "the file is unchanged");
	t = file_json(kv);
	cr_assert_str_eq(t, disk, "memory equals disk");
	free(t);
	tu_assert_file_eq(bak, bak_before, ".bak is unchanged");
	cr_assert_eq(rmdir(tmp), 0);
	put_ok(kv, "NS", "c", "3");
	expect_get(kv, "NS", "c", "3");
	kv_close(kv);
	free(disk);
	free(bak_before);
	free(path);
	free(tmp);
	free(bak);
}

Test(kv, full_disk_answers_error_and_loses_nothing)
{
	char *path = path_in("kvConfig.json"), *disk, *t;
	char big[4097], key[16], err[512];
	struct kv_store *kv;
	int i, rc = 0;

	if (mount("tmpfs", dir, "tmpfs", 0, "size=64k") < 0)
		cr_skip_test("cannot mount a small tmpfs here: %s", strerror(errno));
	kv = open_ok(path);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	/* file + .bak + .tmp must fit: this fills 64 KiB well within 64 puts */
	for (i = 0; i < 64; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		disk = tu_read_file(path);
		rc = kv_put(kv, "NS", key, big, err, sizeof(err));
		if (rc < 0)
			break;
		free(disk);
	}
	cr_assert_lt(rc, 0, "the disk never filled");
	cr_assert_not_null(strstr(err, "No space left"), "%s", err);
	expect_get(kv, "NS", key, NULL);
	tu_assert_file_eq(path, disk, "the last acknowledged content is intact");
	t = file_json(kv);
	cr_assert_str_eq(t, disk, "memory equals disk");
	free(t);
	free(disk);
	kv_close(kv);
	kv = open_ok(path);
	for (int j = 0; j < i; j++) {
		snprintf(key, sizeof(key), "k%d", j);
		expect_get(kv, "NS", key, big);
	}
	close_store(kv, path);
}

/* GET_KVLIST_BY_NAMESPACE as sent (kv_table_body) against a fresh build;
 * NULL when the namespace is absent. *hit: it came from the cache. */
static char *table_sent(struct kv_store *kv, const char *ns, bool *hit)
{
	struct buf scratch = BUF_INIT, sent = BUF_INIT;
	const uint8_t *body;
	size_t len;
	int rc;

	rcu_read_lock();
	rc = kv_table_body(kv, ns, &body, &len, &scratch);
	if (rc == 0) {
		*hit = body != scratch.data;
		rc = buf_append(&sent, body, len);
	}
	rcu_read_unlock();
	buf_free(&scratch);
	if (rc == RMQNS_ENOTFOUND)
		return NULL;
	cr_assert_eq(rc, 0);
	cr_assert_eq(buf_terminate(&sent), 0);
	char *fresh = table_json(kv, ns);
	cr_assert_str_eq((char *)sent.data, fresh, "the answer sent is what a fresh build gives");
	free(fresh);
	return (char *)sent.data;
}

Test(kv, namespace_answers_are_cached_until_the_table_changes)
{
	char *path = path_in("kv.json"), err[256], *s;
	struct kv_store *kv = open_ok(path);
	bool hit = true;

	put_ok(kv, "NS", "a", "1");
	put_ok(kv, "OTHER", "x", "9");
	s = table_sent(kv, "NS", &hit);
	cr_expect_str_eq(s, "{\"table\":{\"a\":\"1\"}}");
	cr_expect(!hit);
	free(s);
	for (int i = 0; i < 100; i++) {
		s = table_sent(kv, "NS", &hit);
		cr_assert(hit, "nothing changed: from the cache");
		free(s);
	}
	free(table_sent(kv, "OTHER", &hit));

	put_ok(kv, "NS", "a", "2");
	s = table_sent(kv, "NS", &hit);
	cr_expect_str_eq(s, "{\"table\":{\"a\":\"2\"}}", "a put shows at once");
	cr_expect(!hit);
	free(s);
	put_ok(kv, "NS", "b", "3");
	s = table_sent(kv, "NS", &hit);
	cr_expect_str_eq(s, "{\"table\":{\"a\":\"2\",\"b\":\"3\"}}");
	free(s);
	cr_assert_eq(kv_delete(kv, "NS", "a", err, sizeof(err)), 0, "%s", err);
	s = table_sent(kv, "NS", &hit);
	cr_expect_str_eq(s, "{\"table\":{\"b\":\"3\"}}", "a delete shows at once");
	free(s);
	cr_assert_eq(kv_delete(kv, "NS", "b", err, sizeof(err)), 0, "%s", err);
	s = table_sent(kv, "NS", &hit);
	cr_expect_str_eq(s, "{\"table\":{}}", "the namespace stays, empty");
	free(s);
	put_ok(kv, "OTHER", "x", "10");
	s = table_sent(kv, "OTHER", &hit);
	cr_expect_str_eq(s, "{\"table\":{\"x\":\"10\"}}");
	free(s);
	cr_expect_null(table_sent(kv, "NOSUCH", &hit));
	cr_expect_null(table_sent(kv, NULL, &hit));
	kv_close(kv);

	/* a reopened store starts again from generation 0: nothing cached
	 * before survives into it */
	kv = open_ok(path);
	s = table_sent(kv, "OTHER", &hit);
	cr_expect_str_eq(s, "{\"table\":{\"x\":\"10\"}}");
	cr_expect(!hit);
	free(s);
	close_store(kv, path);
}
