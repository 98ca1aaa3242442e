/* The ACL snapshot under concurrent reloads (a plain program, so that it
 * runs under ThreadSanitizer): reader threads check a signed request
 * while the file is rewritten and re-read, by acl_reload here and by the
 * module's own thread; every check must pass, and nothing may be read
 * after it was freed. Exit status 0 = pass. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <urcu.h>

#include "rmqns/acl.h"
#include "rmqns/buf.h"
#include "rmqns/remoting.h"
#include "rmqns/request.h"

#define READERS 2
#define MAX_CHECKS 2000000 /* per reader: a bound, the reloads end it first */
#define RELOADS 40

static struct acl *acl;
static struct request *req;
static atomic_int failures;
static atomic_bool stop;
static atomic_long checks;

static void *reader(void *arg)
{
	(void)arg;
	rcu_register_thread();
	long i = 0;
	char remark[256];
	for (; i < MAX_CHECKS && !atomic_load_explicit(&stop, memory_order_relaxed); i++)
		if (!acl_authorize(acl, &req->cmd, req->peer, remark, sizeof remark))
			atomic_fetch_add(&failures, 1);
	atomic_fetch_add(&checks, i);
	rcu_unregister_thread();
	return NULL;
}

static int write_file(const char *path, int round)
{
	char tmp[600];
	snprintf(tmp, sizeof tmp, "%s.new", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return -1;
	fprintf(f, "accounts:\n"
		   "  - accessKey: rocketmq2\n"
		   "    secretKey: 12345678\n"
		   "    admin: true\n");
	for (int i = 0; i < round % 7; i++)
		fprintf(f, "  - accessKey: extra-%d-%d\n    secretKey: extra-secret\n", round, i);
	if (fclose(f) != 0)
		return -1;
	return rename(tmp, path);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	char dir[512], path[600];
	snprintf(dir, sizeof dir, "%s/rmqns-acl-threads-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof path, "%s/plain_acl.yml", dir);
	if (write_file(path, 0) < 0)
		return 1;
	char err[512];
	struct acl_params p = { .enable = true, .read_requests = true, .file = path };
	acl = acl_create(&p, err, sizeof err);
	if (!acl) {
		fprintf(stderr, "acl_create: %s\n", err);
		return 1;
	}

	struct remoting_ext_field ext[] = { { "namespace", "ns" }, { "key", "k" }, { "value", "v" } };
	struct remoting_cmd cmd = { .code = REQ_PUT_KV_CONFIG, .language = LANG_JAVA, .version = 479,
				    .ext = ext, .ext_count = 3, .serialize = REMOTING_JSON };
	struct acl_signed s;
	struct buf frame = BUF_INIT;
	int e;
	if (acl_sign_cmd(&cmd, "rocketmq2", "12345678", &s) < 0 || remoting_encode(&cmd, &frame) < 0)
		return 1;
	req = request_create(frame.data, frame.len, (struct net_conn){ 0 }, "192.0.2.9:4000", 0, &e);
	if (!req)
		return 1;

	pthread_t t[READERS];
	for (int i = 0; i < READERS; i++)
		if (pthread_create(&t[i], NULL, reader, NULL) != 0)
			return 1;
	int bad_reloads = 0;
	for (int r = 1; r <= RELOADS; r++) {
		if (write_file(path, r) < 0)
			return 1;
		if (r % 3 == 0)
			acl_request_reload(acl);
		else if (acl_reload(acl) != 0)
			bad_reloads++;
		usleep(1000);
	}
	atomic_store(&stop, true);
	for (int i = 0; i < READERS; i++)
		pthread_join(t[i], NULL);
	acl_destroy(acl);
	request_free(req);
	acl_signed_free(&s);
	buf_free(&frame);
	unlink(path);
	rmdir(dir);
	if (atomic_load(&failures) || bad_reloads) {
		fprintf(stderr, "FAIL: %d refused checks, %d failed reloads\n", atomic_load(&failures),
			bad_reloads);
		return 1;
	}
	printf("ok: %ld checks against %d reloads\n", atomic_load(&checks), RELOADS);
	return 0;
}
