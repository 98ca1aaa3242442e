/* KV and config requests from several connections at once against the
 * real binary: every PUT is read back, lists and config reads stay
 * well-formed while updates run, and the file holds every acknowledged key
 * after an orderly stop. Counts are bounded. A plain program (see
 * harness.h) so that it also runs against a ThreadSanitizer build. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "harness.h"
#include "rmqns/err.h"
#include "rmqns/handlers.h"

#define T HARNESS_IO_TIMEOUT_MS
#define KV_THREADS 4
#define KV_KEYS 40

struct kv_job {
	const struct harness_server *srv;
	int index;
	char error[256];
};

static struct client_reply *kv_call(struct client *c, int32_t code, const char *ns, const char *key,
				    const char *value, const char *body)
{
	struct remoting_ext_field ext[HARNESS_CALL_MAX_EXT];
	struct remoting_cmd req;
	struct client_reply *r = NULL;

	if (harness_request(&req, ext, code, REMOTING_JSON, body, "namespace", ns, "key", key, "value", value,
			    NULL) != 0 ||
	    client_call(c, &req, &r, T) != 0)
		return NULL;
	return r;
}

static void *kv_thread(void *arg)
{
	struct kv_job *job = arg;
	struct client *c = harness_connect(job->srv);
	char ns[16];

	if (!c) {
		snprintf(job->error, sizeof(job->error), "cannot connect");
		return NULL;
	}
	snprintf(ns, sizeof(ns), "NS%d", job->index);
	for (int i = 0; i < KV_KEYS && !job->error[0]; i++) {
		char key[16], value[32];
		struct client_reply *r;

		snprintf(key, sizeof(key), "k%d", i);
		snprintf(value, sizeof(value), "v%d-%d", job->index, i);
		r = kv_call(c, REQ_PUT_KV_CONFIG, ns, key, value, NULL);
		if (!r || r->cmd.code != 0) {
			snprintf(job->error, sizeof(job->error), "PUT %s/%s: %s", ns, key,
				 r ? (r->cmd.remark ? r->cmd.remark : "code != 0") : "no answer");
			client_reply_free(r);
			break;
		}
		client_reply_free(r);
		r = kv_call(c, REQ_GET_KV_CONFIG, ns, key, NULL, NULL);
		if (!r || r->cmd.code != 0 || !remoting_ext_get(&r->cmd, "value") ||
		    strcmp(remoting_ext_get(&r->cmd, "value"), value) != 0) {
			snprintf(job->error, sizeof(job->error), "GET %s/%s did not read back %s", ns, key, value);
			client_reply_free(r);
			break;
		}
		client_reply_free(r);
		if (i % 8 == 0) {
			r = kv_call(c, REQ_GET_KVLIST_BY_NAMESPACE, ns, NULL, NULL, NULL);
			if (!r || r->cmd.code != 0 || r->cmd.body_len < 12 ||
			    memcmp(r->cmd.body, "{\"table\":{", 10) != 0) {
				snprintf(job->error, sizeof(job->error), "GET_KVLIST %s failed", ns);
				client_reply_free(r);
				break;
			}
			client_reply_free(r);
			r = kv_call(c, REQ_GET_NAMESRV_CONFIG, NULL, NULL, NULL, NULL);
			if (!r || r->cmd.code != 0 || r->cmd.body_len == 0 ||
			    r->cmd.body[r->cmd.body_len - 1] != '\n') {
				snprintf(job->error, sizeof(job->error), "GET_NAMESRV_CONFIG failed");
				client_reply_free(r);
				break;
			}
			client_reply_free(r);
			r = kv_call(c, REQ_UPDATE_NAMESRV_CONFIG, NULL, NULL, NULL,
				    (i / 8) % 2 ? "enableTopicList=true\n" : "enableTopicList=false\n");
			if (!r || r->cmd.code != 0) {
				snprintf(job->error, sizeof(job->error), "UPDATE_NAMESRV_CONFIG failed");
				client_reply_free(r);
				break;
			}
			client_reply_free(r);
		}
	}
	client_close(c);
	return NULL;
}

static int test_concurrent_kv_and_config(struct harness_server *s)
{
	char dir[] = "/tmp/rmqns-kvload-XXXXXX", kvarg[128], kvpath[96], cmd[128];
	const char *args[2] = { kvarg, NULL };
	struct kv_job jobs[KV_THREADS];
	pthread_t t[KV_THREADS];
	json_error_t jerr;
	json_t *root, *table;
	int st, rc = 0;

	HARNESS_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(kvpath, sizeof(kvpath), "%s/kv.json", dir);
	snprintf(kvarg, sizeof(kvarg), "--kvConfigPath=%s", kvpath);
	HARNESS_CHECK(harness_start(s, args) == 0, "the server did not start");
	for (int i = 0; i < KV_THREADS; i++) {
		jobs[i] = (struct kv_job){ .srv = s, .index = i };
		HARNESS_CHECK(pthread_create(&t[i], NULL, kv_thread, &jobs[i]) == 0, "thread");
	}
	for (int i = 0; i < KV_THREADS; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < KV_THREADS; i++)
		HARNESS_CHECK(!jobs[i].error[0], "thread %d: %s", i, jobs[i].error);
	st = harness_stop(s, SIGTERM, 10000, NULL);
	HARNESS_CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "unclean stop (status %d)", st);

	/* every acknowledged key is in the file */
	root = json_load_file(kvpath, 0, &jerr);
	HARNESS_CHECK(root != NULL, "the KV file does not parse: %s", jerr.text);
	table = json_object_get(root, "configTable");
	for (int i = 0; i < KV_THREADS && rc == 0; i++) {
		char ns[16];
		json_t *m;
		snprintf(ns, sizeof(ns), "NS%d", i);
		m = json_object_get(table, ns);
		if (!m || json_object_size(m) != KV_KEYS) {
			harness_check_failed(__FILE__, __LINE__, "keys", "%s has %zu keys, expected %d", ns,
					     m ? json_object_size(m) : 0, KV_KEYS);
			rc = -1;
		}
	}
	json_decref(root);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
	return rc;
}

static const struct harness_test tests[] = {
	{ "concurrent_kv_and_config", test_concurrent_kv_and_config },
};

int main(int argc, char **argv)
{
	return harness_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
