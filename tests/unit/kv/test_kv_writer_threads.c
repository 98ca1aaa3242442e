/* The KV writer thread (src/kv/kv_writer.c): group commit (changes queued
 * together are one file write, applied in arrival order), a failed write
 * that fails its whole batch and leaves memory equal to disk, answers in
 * arrival order only after the write, a change out of memory failing
 * alone, stop committing what is queued, and submitters and readers on
 * several threads at once. A plain program (exit
 * status 0 = pass) so that it runs under ThreadSanitizer. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <urcu.h>

#include "rmqns/err.h"
#include "rmqns/kv.h"
#include "rmqns/race.h"
#include "plain_test.h"

#define SUBMITTERS 3
#define READERS 2
#define PER_SUBMITTER 150

static char dir[64];
/* A change that records its answer. */
struct probe {
	struct kv_change c;
	int rc;
	char err[512];
	int order;          /* position among the answers, from 1 */
	atomic_int *answered;
};

static void probe_done(struct kv_change *c, int rc, const char *err)
{
	struct probe *p = caa_container_of(c, struct probe, c);

	p->rc = rc;
	snprintf(p->err, sizeof(p->err), "%s", err ? err : "");
	p->order = atomic_fetch_add(p->answered, 1) + 1;
}

static void probe_init(struct probe *p, atomic_int *answered, enum kv_change_op op, const char *ns,
		       const char *key, const char *value)
{
	memset(p, 0, sizeof(*p));
	p->c.op = op;
	p->c.ns = ns;
	p->c.key = key;
	p->c.value = value;
	p->c.done = probe_done;
	p->rc = 1; /* not answered */
	p->answered = answered;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *s = NULL;
	size_t n = 0;

	if (!f)
		return NULL;
	if (getdelim(&s, &n, '\0', f) < 0) {
		free(s);
		s = strdup("");
	}
	fclose(f);
	return s;
}

static char *memory_json(struct kv_store *kv)
{
	struct buf b = BUF_INIT;

	rcu_read_lock();
	if (kv_file_json(kv, &b) < 0 || buf_terminate(&b) < 0) {
		race_reader_done();
		rcu_read_unlock();
		buf_free(&b);
		return NULL;
	}
	race_reader_done();
	rcu_read_unlock();
	return (char *)b.data;
}

static bool get_is(struct kv_store *kv, const char *ns, const char *key, const char *want)
{
	const char *v;
	bool same;

	rcu_read_lock();
	v = kv_get(kv, ns, key);
	same = want ? v && strcmp(v, want) == 0 : v == NULL;
	race_reader_done();
	rcu_read_unlock();
	return same;
}

static void path_of(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

/* Changes queued before the thread starts are one batch: one file write,
 * applied and answered in arrival order. */
static int test_queued_changes_are_one_write(void)
{
	char path[128], bak[128], err[512], *before, *disk, *mem;
	struct probe p[5];
	atomic_int answered = 0;
	struct kv_store *kv;
	struct kv_writer *w;
	unsigned long changes, writes;

	path_of(path, sizeof(path), "group.json");
	path_of(bak, sizeof(bak), "group.json.bak");
	kv = kv_open(path, false, err, sizeof(err));
	EXPECT_RET(kv, "open: %s", err);
	EXPECT_RET(kv_put(kv, "NS", "a", "0", err, sizeof(err)) == 0, "put: %s", err);
	before = slurp(path);
	w = kv_writer_create(kv);
	EXPECT_RET(w, "create");
	probe_init(&p[0], &answered, KV_CHANGE_PUT, "NS", "a", "1");
	probe_init(&p[1], &answered, KV_CHANGE_PUT, "NS", "b", "2");
	probe_init(&p[2], &answered, KV_CHANGE_DELETE, "NS", "a", NULL);
	probe_init(&p[3], &answered, KV_CHANGE_PUT, "OTHER", "c", "3");
	probe_init(&p[4], &answered, KV_CHANGE_DELETE, NULL, "c", NULL);
	for (int i = 0; i < 5; i++)
		kv_writer_submit(w, &p[i].c);
	EXPECT_RET(get_is(kv, "NS", "a", "0") && answered == 0, "nothing applied before the writer runs");
	EXPECT_RET(kv_writer_start(w) == 0, "start");
	kv_writer_stop(w);
	kv_writer_counts(w, &changes, &writes);
	EXPECT_RET(changes == 5 && writes == 1, "%lu changes in %lu writes, want 5 in 1", changes, writes);
	for (int i = 0; i < 5; i++)
		EXPECT_RET(p[i].rc == 0 && p[i].order == i + 1, "change %d: rc %d, answered %d-th", i, p[i].rc,
		      p[i].order);
	EXPECT_RET(get_is(kv, "NS", "a", NULL) && get_is(kv, "NS", "b", "2") && get_is(kv, "OTHER", "c", "3"),
	      "applied in arrival order");
	disk = slurp(path);
	mem = memory_json(kv);
	EXPECT_RET(disk && mem && strcmp(disk, mem) == 0, "memory '%s' equals disk '%s'", mem, disk);
	free(disk);
	disk = slurp(bak);
	EXPECT_RET(disk && before && strcmp(disk, before) == 0,
	      "one write: the backup holds the content before the batch ('%s', want '%s')", disk, before);
	free(disk);
	free(mem);
	free(before);
	kv_writer_destroy(w);
	kv_close(kv);
	return 0;
}

/* A write that fails fails every change of its batch; memory and disk keep
 * the content before it. */
static int test_failed_write_fails_the_whole_batch(void)
{
	char path[128], tmp[128], err[512], *before, *disk, *mem;
	struct probe p[3];
	atomic_int answered = 0;
	struct kv_store *kv;
	struct kv_writer *w;
	unsigned long changes, writes;

	path_of(path, sizeof(path), "fail.json");
	path_of(tmp, sizeof(tmp), "fail.json.tmp");
	kv = kv_open(path, false, err, sizeof(err));
	EXPECT_RET(kv, "open: %s", err);
	EXPECT_RET(kv_put(kv, "NS", "a", "1", err, sizeof(err)) == 0, "put: %s", err);
	before = slurp(path);
	EXPECT_RET(mkdir(tmp, 0755) == 0, "a directory where the tmp file goes");
	w = kv_writer_create(kv);
	EXPECT_RET(w, "create");
	probe_init(&p[0], &answered, KV_CHANGE_PUT, "NS", "b", "2");
	probe_init(&p[1], &answered, KV_CHANGE_DELETE, "NS", "a", NULL);
	probe_init(&p[2], &answered, KV_CHANGE_PUT, "NEW", "c", "3");
	for (int i = 0; i < 3; i++)
		kv_writer_submit(w, &p[i].c);
	EXPECT_RET(kv_writer_start(w) == 0, "start");
	kv_writer_stop(w);
	kv_writer_counts(w, &changes, &writes);
	EXPECT_RET(changes == 3 && writes == 1, "%lu changes in %lu writes", changes, writes);
	for (int i = 0; i < 3; i++)
		EXPECT_RET(p[i].rc == RMQNS_EIO && strstr(p[i].err, tmp) && p[i].order == i + 1,
		      "change %d: rc %d, '%s'", i, p[i].rc, p[i].err);
	EXPECT_RET(get_is(kv, "NS", "a", "1") && get_is(kv, "NS", "b", NULL) && get_is(kv, "NEW", "c", NULL),
	      "nothing of the batch is visible");
	disk = slurp(path);
	mem = memory_json(kv);
	EXPECT_RET(disk && before && strcmp(disk, before) == 0, "the file is unchanged");
	EXPECT_RET(mem && strcmp(mem, before) == 0, "memory '%s' equals disk '%s'", mem, before);
	free(disk);
	free(mem);
	free(before);
	rmdir(tmp);
	kv_writer_destroy(w);
	kv_close(kv);
	return 0;
}

/* strdup fails for this one string: an out-of-memory in one change. The
 * program's own definition is the one the library calls. */
static const char *strdup_fails_for;

char *strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d;

	if (strdup_fails_for && s == strdup_fails_for)
		return NULL;
	d = malloc(n);
	return d ? memcpy(d, s, n) : NULL;
}

/* A change that runs out of memory fails alone, leaving nothing behind
 * (not even the namespace it created); the rest of its batch is written. */
static int test_change_out_of_memory_fails_alone(void)
{
	static const char doomed[] = "doomed";
	char path[128], err[512], *disk, *mem;
	struct probe p[3];
	atomic_int answered = 0;
	struct kv_store *kv;
	struct kv_writer *w;
	unsigned long changes, writes;
	struct buf b = BUF_INIT;
	int rc;

	path_of(path, sizeof(path), "nomem.json");
	kv = kv_open(path, false, err, sizeof(err));
	EXPECT_RET(kv, "open: %s", err);
	w = kv_writer_create(kv);
	EXPECT_RET(w, "create");
	probe_init(&p[0], &answered, KV_CHANGE_PUT, "NS", "a", "1");
	probe_init(&p[1], &answered, KV_CHANGE_PUT, "NEW", "x", doomed);
	probe_init(&p[2], &answered, KV_CHANGE_PUT, "NS", "b", "2");
	for (int i = 0; i < 3; i++)
		kv_writer_submit(w, &p[i].c);
	strdup_fails_for = doomed;
	EXPECT_RET(kv_writer_start(w) == 0, "start");
	kv_writer_stop(w);
	strdup_fails_for = NULL;
	kv_writer_counts(w, &changes, &writes);
	EXPECT_RET(changes == 3 && writes == 1, "%lu changes in %lu writes", changes, writes);
	EXPECT_RET(p[0].rc == 0 && p[2].rc == 0, "the others are written: %d %d", p[0].rc, p[2].rc);
	EXPECT_RET(p[1].rc == RMQNS_ENOMEM && strcmp(p[1].err, "out of memory") == 0, "rc %d '%s'", p[1].rc,
	      p[1].err);
	EXPECT_RET(get_is(kv, "NS", "a", "1") && get_is(kv, "NS", "b", "2") && get_is(kv, "NEW", "x", NULL),
	      "values");
	rcu_read_lock();
	rc = kv_table_json(kv, "NEW", &b);
	race_reader_done();
	rcu_read_unlock();
	buf_free(&b);
	EXPECT_RET(rc == RMQNS_ENOTFOUND, "the namespace of the failed change exists: %d", rc);
	disk = slurp(path);
	mem = memory_json(kv);
	EXPECT_RET(disk && mem && strcmp(disk, mem) == 0, "memory '%s' equals disk '%s'", mem, disk);
	free(disk);
	free(mem);
	kv_writer_destroy(w);
	kv_close(kv);
	return 0;
}

/* ---- several submitters and readers at once ---- */

struct shared {
	struct kv_store *kv;
	struct kv_writer *w;
	atomic_int answered;
	atomic_int failed;
	atomic_bool done;
	atomic_int reader_failures;
};

static const char *submitter_key[SUBMITTERS] = { "s0", "s1", "s2" };

/* values are "v<n>"; kept alive by the static table below */
static char values[PER_SUBMITTER][16];

/* A change that only counts its answer. */
struct counted {
	struct kv_change c;
	struct shared *sh;
};

static void counted_done(struct kv_change *c, int rc, const char *err)
{
	struct counted *k = caa_container_of(c, struct counted, c);

	(void)err;
	if (rc != 0)
		atomic_fetch_add(&k->sh->failed, 1);
	atomic_fetch_add(&k->sh->answered, 1);
	free(k);
}

struct submitter_arg {
	struct shared *sh;
	int id;
};

static void *submitter(void *arg)
{
	struct submitter_arg *a = arg;

	for (int i = 0; i < PER_SUBMITTER; i++) {
		struct counted *k = calloc(1, sizeof(*k));

		if (!k) {
			atomic_fetch_add(&a->sh->failed, 1);
			continue;
		}
		k->c.op = KV_CHANGE_PUT;
		k->c.ns = "NS";
		k->c.key = submitter_key[a->id];
		k->c.value = values[i];
		k->c.done = counted_done;
		k->sh = a->sh;
		kv_writer_submit(a->sh->w, &k->c);
	}
	return NULL;
}

static void *reader(void *arg)
{
	struct shared *sh = arg;
	int last[SUBMITTERS] = { -1, -1, -1 };
	unsigned long rounds = 0;

	rcu_register_thread();
	while (!atomic_load(&sh->done) || rounds < 10) {
		rcu_read_lock();
		for (int s = 0; s < SUBMITTERS; s++) {
			const char *v = kv_get(sh->kv, "NS", submitter_key[s]);
			int n;

			if (!v)
				continue;
			if (sscanf(v, "v%d", &n) != 1 || n < last[s]) {
				fprintf(stderr, "FAIL reader: %s went from %d to '%s'\n", submitter_key[s], last[s], v);
				atomic_fetch_add(&sh->reader_failures, 1);
			} else {
				last[s] = n;
			}
		}
		race_reader_done();
		rcu_read_unlock();
		rounds++;
	}
	rcu_unregister_thread();
	return NULL;
}

static int test_submitters_and_readers(void)
{
	char path[128], err[512], *disk, *mem;
	struct shared sh = { 0 };
	struct submitter_arg args[SUBMITTERS];
	pthread_t subs[SUBMITTERS], rds[READERS];
	unsigned long changes, writes;

	for (int i = 0; i < PER_SUBMITTER; i++)
		snprintf(values[i], sizeof(values[i]), "v%d", i);
	path_of(path, sizeof(path), "threads.json");
	sh.kv = kv_open(path, false, err, sizeof(err));
	EXPECT_RET(sh.kv, "open: %s", err);
	sh.w = kv_writer_create(sh.kv);
	EXPECT_RET(sh.w && kv_writer_start(sh.w) == 0, "writer");
	for (int i = 0; i < READERS; i++)
		EXPECT_RET(pthread_create(&rds[i], NULL, reader, &sh) == 0, "reader");
	for (int i = 0; i < SUBMITTERS; i++) {
		args[i] = (struct submitter_arg){ &sh, i };
		EXPECT_RET(pthread_create(&subs[i], NULL, submitter, &args[i]) == 0, "submitter");
	}
	for (int i = 0; i < SUBMITTERS; i++)
		pthread_join(subs[i], NULL);
	kv_writer_stop(sh.w); /* commits everything queued */
	atomic_store(&sh.done, true);
	for (int i = 0; i < READERS; i++)
		pthread_join(rds[i], NULL);
	kv_writer_counts(sh.w, &changes, &writes);
	printf("%d changes from %d threads in %lu file writes\n", SUBMITTERS * PER_SUBMITTER, SUBMITTERS,
	       writes);
	EXPECT_RET(atomic_load(&sh.answered) == SUBMITTERS * PER_SUBMITTER && changes == SUBMITTERS * PER_SUBMITTER,
	      "answered %d, counted %lu", atomic_load(&sh.answered), changes);
	EXPECT_RET(atomic_load(&sh.failed) == 0 && atomic_load(&sh.reader_failures) == 0, "%d failed, %d reader failures",
	      atomic_load(&sh.failed), atomic_load(&sh.reader_failures));
	EXPECT_RET(writes >= 1 && writes <= changes, "%lu writes", writes);
	for (int s = 0; s < SUBMITTERS; s++)
		EXPECT_RET(get_is(sh.kv, "NS", submitter_key[s], values[PER_SUBMITTER - 1]),
		      "each submitter's last value is the one kept");
	disk = slurp(path);
	mem = memory_json(sh.kv);
	EXPECT_RET(disk && mem && strcmp(disk, mem) == 0, "memory equals disk");
	free(disk);
	free(mem);
	kv_writer_destroy(sh.w);
	kv_close(sh.kv);
	return 0;
}

/* A change submitted after the writer stopped is still committed and
 * answered when the writer is destroyed. */
static int test_late_change_committed_at_destroy(void)
{
	char path[128], err[512];
	atomic_int answered = 0;
	struct probe p;
	struct kv_store *kv;
	struct kv_writer *w;

	path_of(path, sizeof(path), "late.json");
	kv = kv_open(path, false, err, sizeof(err));
	EXPECT_RET(kv, "open: %s", err);
	w = kv_writer_create(kv);
	EXPECT_RET(w && kv_writer_start(w) == 0, "writer");
	kv_writer_stop(w);
	probe_init(&p, &answered, KV_CHANGE_PUT, "NS", "late", "1");
	kv_writer_submit(w, &p.c);
	kv_writer_destroy(w);
	EXPECT_RET(p.rc == 0 && answered == 1, "rc %d, answered %d", p.rc, answered);
	EXPECT_RET(get_is(kv, "NS", "late", "1"), "committed");
	kv_close(kv);
	kv = kv_open(path, false, err, sizeof(err));
	EXPECT_RET(kv && get_is(kv, "NS", "late", "1"), "on disk");
	kv_close(kv);
	return 0;
}

int main(void)
{
	char cmd[128];

	strcpy(dir, "/tmp/rmqns-kvwriter-XXXXXX");
	if (!mkdtemp(dir))
		return 2;
	rcu_register_thread();
	test_queued_changes_are_one_write();
	test_failed_write_fails_the_whole_batch();
	test_change_out_of_memory_fails_alone();
	test_submitters_and_readers();
	test_late_change_committed_at_destroy();
	rcu_unregister_thread();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		return 2;
	return plain_exit_status();
}
