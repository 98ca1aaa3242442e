/* libFuzzer target for the KV file loader (kv_open on a kvConfig.json):
 * any bytes in the file either load or are refused with a reason, never
 * crash. What loads must write out (kv_file_json) as a file that loads
 * again to the same bytes, since that is what the next start reads. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <urcu.h>

#include "rmqns/buf.h"
#include "rmqns/err.h"
#include "rmqns/kv.h"
#include "rmqns/log.h"

#define REQUIRE(cond) do { if (!(cond)) { fprintf(stderr, "failed: %s\n", #cond); abort(); } } while (0)

static char dir[64];
static char path[128];

static void remove_dir(void)
{
	unlink(path);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* memory-backed when there is one: every run writes the file twice */
	snprintf(dir, sizeof(dir), "%s/fuzz_kv_load.XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	REQUIRE(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/kvConfig.json", dir);
	atexit(remove_dir);
	log_set_level(LOG_ERROR);
	(void)log_set_file("/dev/null"); /* failures are expected here; keep stderr for findings */
	rcu_register_thread();
	return 0;
}

static void write_file(const void *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	REQUIRE(f);
	REQUIRE(fwrite(data, 1, size, f) == size);
	REQUIRE(fclose(f) == 0);
}

static int load(struct buf *out)
{
	char err[1024];
	err[0] = 0;
	struct kv_store *kv = kv_open(path, false, err, sizeof(err));
	if (!kv) {
		REQUIRE(err[0] != 0);
		return -1;
	}
	rcu_read_lock();
	int rc = kv_file_json(kv, out);
	rcu_read_unlock();
	kv_close(kv);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf first = BUF_INIT, second = BUF_INIT;

	write_file(data, size);
	if (load(&first) == 0) {
		write_file(first.data, first.len);
		if (load(&second) != 0 || second.len != first.len ||
		    memcmp(first.data, second.data, first.len) != 0) {
			fprintf(stderr, "the written table does not load back the same:\n%.*s\n",
				(int)first.len, (const char *)first.data);
			abort();
		}
	}
	buf_free(&first);
	buf_free(&second);
	unlink(path);
	return 0;
}
