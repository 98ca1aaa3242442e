/* kill -9 in the middle of a KV write and of a config update, 100 times
 * each: the file on disk is always the old content or the new one, never
 * a torn mix. Each round starts the real binary on the same file, sends
 * one change and kills the server after a delay that walks through the
 * time the write takes (before it, during it, after it). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "rmqns/err.h"

#define T HARNESS_IO_TIMEOUT_MS
#define ROUNDS 100

static struct harness_server srv;
static char dir[256];

static void init(void)
{
	cr_assert_eq(harness_mkdtemp(dir, sizeof dir, "rmqns-kill9"), 0);
}

static void fini(void)
{
	harness_cleanup(&srv);
	harness_rmdir(dir);
}

TestSuite(kill9, .init = init, .fini = fini, .timeout = 600);

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000L };
	nanosleep(&ts, NULL);
}

/* The file's bytes, or NULL when it does not exist. */
static char *read_file(const char *path, size_t *len)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return NULL;
	char *s = harness_slurp(path);
	cr_assert(s, "cannot read %s", path);
	*len = strlen(s);
	return s;
}

/* Sends `req` and kills the server `delay_us` later, answer or not. */
static void send_then_kill(struct remoting_cmd *req, long delay_us)
{
	struct client *c = harness_connect(&srv);
	cr_assert(c);
	cr_assert_eq(client_send(c, req, T), 0);
	sleep_us(delay_us);
	harness_stop(&srv, SIGKILL, 5000, NULL);
	client_close(c);
	harness_cleanup(&srv);
}

/* Delays from 0 to ~6 ms, most of them short: a write of a few hundred KB
 * takes about that long. */
static long delay_for(int round)
{
	return (long)((round * 7919) % 97) * (round % 3 == 0 ? 60 : 15);
}

#define KV_VALUE_LEN 4096

static void kv_value(char *v, int key)
{
	memset(v, 'a' + key % 26, KV_VALUE_LEN);
	snprintf(v, 16, "v%d-", key);
	v[strlen(v)] = '-';
	v[KV_VALUE_LEN] = 0;
}

/* The file holds keys k0..k(n-1) of namespace NS with their values, and
 * nothing else; returns n, or -1 when it is not such a file. */
static int kv_keys_in(const char *text, size_t len)
{
	json_error_t e;
	json_t *j = json_loadb(text, len, 0, &e);
	if (!j)
		return -1;
	json_t *ns = json_object_get(json_object_get(j, "configTable"), "NS");
	int n = ns ? (int)json_object_size(ns) : -1;
	static char want[KV_VALUE_LEN + 1];
	for (int i = 0; i < n; i++) {
		char key[16];
		snprintf(key, sizeof key, "k%d", i);
		kv_value(want, i);
		const char *v = json_string_value(json_object_get(ns, key));
		if (!v || strcmp(v, want) != 0)
			n = -1;
	}
	json_decref(j);
	return n;
}

Test(kill9, kv_file_is_old_or_new_never_torn)
{
	char *kv = harness_path_in(dir, "kv.json");
	char arg[400];
	snprintf(arg, sizeof arg, "--kvConfigPath=%s", kv);
	const char *const args[] = { arg, NULL };
	static char value[KV_VALUE_LEN + 1];
	int keys = 0, new_seen = 0, old_seen = 0;

	for (int round = 0; round < ROUNDS; round++) {
		size_t old_len = 0, len = 0;
		char *old = read_file(kv, &old_len);
		cr_assert_eq(harness_start(&srv, args), 0, "round %d: the server did not start on its file", round);
		char key[16];
		snprintf(key, sizeof key, "k%d", keys);
		kv_value(value, keys);
		struct remoting_ext_field ext[] = { { "namespace", "NS" }, { "key", key }, { "value", value } };
		struct remoting_cmd req;
		harness_request_init(&req, REQ_PUT_KV_CONFIG, REMOTING_JSON);
		req.ext = ext;
		req.ext_count = 3;
		req.ext_present = true;
		send_then_kill(&req, delay_for(round));

		char *now = read_file(kv, &len);
		if (!now) {
			cr_assert_null(old, "round %d: the file disappeared", round);
			old_seen++;
		} else if (old && len == old_len && memcmp(now, old, len) == 0) {
			old_seen++;
		} else {
			int n = kv_keys_in(now, len);
			cr_assert_eq(n, keys + 1, "round %d: the file is torn (%zu bytes, %d keys, %d expected)",
				     round, len, n, keys + 1);
			keys++;
			new_seen++;
		}
		free(old);
		free(now);
	}
	fprintf(stderr, "kv kill -9: %d rounds left the old file, %d the new one\n", old_seen, new_seen);
	free(kv);
}

/* The -c file: myOwnKey plus padding lines that make the write longer. */
#define PAD_KEYS 200

static bool config_has_all_pads(const char *text)
{
	char line[64];
	for (int i = 0; i < PAD_KEYS; i++) {
		snprintf(line, sizeof line, "\npad%03d=", i);
		if (!strstr(text, line))
			return false;
	}
	return true;
}

Test(kill9, config_file_is_old_or_new_never_torn)
{
	char *conf = harness_path_in(dir, "n.conf");
	FILE *f = fopen(conf, "w");
	cr_assert(f);
	fprintf(f, "# padded\nmyOwnKey=v0\n");
	for (int i = 0; i < PAD_KEYS; i++) {
		fprintf(f, "pad%03d=", i);
		for (int k = 0; k < 1000; k++)
			fputc('a' + (i + k) % 26, f);
		fputc('\n', f);
	}
	cr_assert_eq(fclose(f), 0);
	const char *const args[] = { "-c", conf, NULL };
	int version = 0, new_seen = 0, old_seen = 0;

	for (int round = 0; round < ROUNDS; round++) {
		size_t old_len = 0, len = 0;
		char *old = read_file(conf, &old_len);
		cr_assert(old);
		cr_assert_eq(harness_start(&srv, args), 0, "round %d: the server did not start on its file", round);
		char body[64];
		snprintf(body, sizeof body, "myOwnKey=v%d\n", version + 1);
		struct remoting_cmd req;
		harness_request_init(&req, REQ_UPDATE_NAMESRV_CONFIG, REMOTING_JSON);
		req.body = (const uint8_t *)body;
		req.body_len = (uint32_t)strlen(body);
		send_then_kill(&req, delay_for(round));

		char *now = read_file(conf, &len);
		cr_assert(now, "round %d: the -c file disappeared", round);
		if (len == old_len && memcmp(now, old, len) == 0) {
			old_seen++;
		} else {
			char want[64];
			snprintf(want, sizeof want, "\nmyOwnKey=v%d\n", version + 1);
			cr_assert(strstr(now, want) && config_has_all_pads(now) && now[len - 1] == '\n',
				  "round %d: the -c file is torn (%zu bytes)", round, len);
			version++;
			new_seen++;
		}
		free(old);
		free(now);
	}
	fprintf(stderr, "config kill -9: %d rounds left the old file, %d the new one\n", old_seen, new_seen);
	free(conf);
}
