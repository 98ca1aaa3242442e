/* RCU readers against the single writer, for the KV store (its cached
 * namespace answers included) and the options in force: readers never see
 * a torn or freed version, and values only move forward. A plain program (exit status 0 = pass) because Criterion
 * cannot start under ThreadSanitizer, which is where this is meant to run. */
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <urcu.h>

#include "rmqns/config.h"
#include "rmqns/race.h"
#include "rmqns/kv.h"
#include "plain_test.h"

#define READERS 3
#define KV_WRITES 60
#define CONFIG_WRITES 200

static struct kv_store *kv;
static struct config *cfg;
static atomic_bool done;
static void *reader(void *arg)
{
	long last = -1, last_cached = -1;
	unsigned long rounds = 0;
	struct buf b = BUF_INIT;

	(void)arg;
	rcu_register_thread();
	while (!atomic_load(&done) || rounds < 10) {
		const char *v;
		const struct options *o;

		rcu_read_lock();
		v = kv_get(kv, "NS", "k");
		if (v) {
			long n;
			EXPECT(sscanf(v, "value-%ld", &n) == 1, "torn value '%s'", v);
			EXPECT(n >= last, "went back from %ld to %ld", last, n);
			last = n;
		}
		b.len = 0;
		if (kv_table_json(kv, "NS", &b) == 0)
			EXPECT(b.len > 10 && memcmp(b.data, "{\"table\":{", 10) == 0 && b.data[b.len - 1] == '}',
			      "bad KVTable body");
		/* the cached answer (installed and replaced by the readers) only
		 * moves forward too */
		const uint8_t *body;
		size_t len;
		b.len = 0;
		if (kv_table_body(kv, "NS", &body, &len, &b) == 0) {
			const char *at = memmem(body, len, "\"k\":\"value-", 11);
			long n;
			EXPECT(len > 10 && body[len - 1] == '}' && at && sscanf(at + 11, "%ld", &n) == 1,
			      "bad cached KVTable body");
			if (at && sscanf(at + 11, "%ld", &n) == 1) {
				EXPECT(n >= last_cached, "cached answer went back from %ld to %ld", last_cached, n);
				last_cached = n;
			}
		}
		o = config_current(cfg);
		EXPECT(o->listenPort == 9876, "listenPort %d", o->listenPort);
		EXPECT(strcmp(o->logLevel, "ERROR") == 0 || strcmp(o->logLevel, "WARN") == 0, "logLevel '%s'",
		      o->logLevel);
		b.len = 0;
		EXPECT(config_properties_text(cfg, &b) == 0 && b.len > 0, "GET text");
		race_reader_done();
		rcu_read_unlock();
		rounds++;
	}
	buf_free(&b);
	rcu_unregister_thread();
	return NULL;
}

int main(void)
{
	char dir[] = "/tmp/rmqns-kvthreads-XXXXXX", path[128], err[512], cmd[160];
	char *argv[] = { "rmqns", "--logLevel=ERROR", NULL };
	enum config_action act;
	pthread_t t[READERS];

	if (!mkdtemp(dir))
		return 2;
	setenv("HOME", dir, 1);
	snprintf(path, sizeof(path), "%s/kv.json", dir);
	rcu_register_thread();
	kv = kv_open(path, false, err, sizeof(err));
	if (!kv || config_from_args(2, argv, &cfg, &act, err, sizeof(err)) != 0) {
		fprintf(stderr, "setup: %s\n", err);
		return 2;
	}
	for (int i = 0; i < READERS; i++)
		if (pthread_create(&t[i], NULL, reader, NULL) != 0)
			return 2;
	/* this thread plays the registrar */
	for (int i = 0; i < KV_WRITES; i++) {
		char v[32];
		snprintf(v, sizeof(v), "value-%d", i);
		EXPECT(kv_put(kv, "NS", "k", v, err, sizeof(err)) == 0, "put: %s", err);
		EXPECT(kv_put(kv, "NS", v, v, err, sizeof(err)) == 0, "put: %s", err);
	}
	for (int i = 0; i < CONFIG_WRITES; i++) {
		const char *body = i % 2 ? "logLevel=ERROR\nenableTopicList=true\n" : "logLevel=WARN\nenableTopicList=false\n";
		struct config_update *u = NULL;
		int32_t code;
		char remark[256];

		rcu_read_lock();
		EXPECT(config_update_prepare(cfg, body, strlen(body), &u, &code, remark, sizeof(remark)) == 0,
		      "prepare: %s", remark);
		race_reader_done();
		rcu_read_unlock();
		EXPECT(u && config_update_apply(cfg, u, "test", remark, sizeof(remark)) == 0, "apply: %s", remark);
		config_update_free(u);
	}
	atomic_store(&done, true);
	for (int i = 0; i < READERS; i++)
		pthread_join(t[i], NULL);
	kv_close(kv);
	config_destroy(cfg);
	rcu_unregister_thread();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		return 2;
	return plain_exit_status();
}
