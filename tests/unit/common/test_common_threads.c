/* Logging from many threads at once: every line arrives whole and in each
 * thread's order, and a shared rate limit lets exactly its lines through;
 * a fair queue used by producers and consumers at once keeps each flow's
 * order. A plain program rather than a Criterion suite because
 * Criterion cannot start under ThreadSanitizer, which is where this runs. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmqns/err.h"
#include "rmqns/fairq.h"
#include "rmqns/log.h"
#include "plain_test.h"

#define LOG_THREADS 4
#define LOG_LINES 500
#define PAYLOAD "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"

static void *writer(void *arg)
{
	char name[16];
	int id = (int)(intptr_t)arg;
	snprintf(name, sizeof(name), "writer-%d", id);
	log_set_thread_name(name);
	for (int i = 0; i < LOG_LINES; i++) {
		log_info("line %d of writer %d %s", i, id, PAYLOAD);
		/* Half-way, one thread changes the level and the others keep
		 * writing: the level is read without a lock. */
		if (id == 0 && i == LOG_LINES / 2)
			log_set_level(LOG_INFO);
	}
	return NULL;
}

static int spawn_writers(pthread_t *t, void *(*fn)(void *))
{
	for (int i = 0; i < LOG_THREADS; i++)
		if (pthread_create(&t[i], NULL, fn, (void *)(intptr_t)i) != 0)
			return -1;
	return 0;
}

static void join_writers(pthread_t *t)
{
	for (int i = 0; i < LOG_THREADS; i++)
		pthread_join(t[i], NULL);
	log_set_file(NULL);
}

/* Many threads through one limit: exactly `lines` lines in its window. */
#define LIMITED_LINES 7
static struct log_limit shared_limit = LOG_LIMIT_INIT(LIMITED_LINES, 600000);

static void *limited_writer(void *arg)
{
	for (int i = 0; i < LOG_LINES; i++)
		log_write_limited(&shared_limit, LOG_WARN, "limited %d from %d", i, (int)(intptr_t)arg);
	return NULL;
}

static int limited_from_threads(void)
{
	char path[] = "/tmp/rmqns-log-limit-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0 || log_set_file(path) != 0)
		return 2;
	close(fd);
	pthread_t t[LOG_THREADS];
	if (spawn_writers(t, limited_writer) != 0)
		return 2;
	join_writers(t);
	FILE *f = fopen(path, "r");
	if (!f)
		return 2;
	int lines = 0;
	char line[1024];
	while (fgets(line, sizeof(line), f))
		lines += strstr(line, "] limited ") != NULL;
	fclose(f);
	unlink(path);
	EXPECT(lines == LIMITED_LINES, "%d limited lines, %d expected", lines, LIMITED_LINES);
	uint64_t dropped = atomic_load(&shared_limit.suppressed);
	EXPECT(dropped == (uint64_t)LOG_THREADS * LOG_LINES - LIMITED_LINES, "%llu suppressed",
	      (unsigned long long)dropped);
	return 0;
}

/* Producers and consumers on one fair queue: every item arrives once, and
 * each flow's items in the order pushed. */
#define FQ_PRODUCERS 4
#define FQ_ITEMS 2000
struct fq_item {
	struct fairq_item it;
	int flow, seq;
};
static struct fairq fq;
static struct fq_item fq_items[FQ_PRODUCERS][FQ_ITEMS];
static atomic_int fq_taken;
static int fq_last_seq[FQ_PRODUCERS]; /* written by consumers under fq_order */
static pthread_mutex_t fq_order = PTHREAD_MUTEX_INITIALIZER;
static int fq_out_of_order;

static void *fq_producer(void *arg)
{
	int flow = (int)(intptr_t)arg;
	for (int i = 0; i < FQ_ITEMS; i++) {
		fq_items[flow][i] = (struct fq_item){ .flow = flow, .seq = i };
		while (fairq_push(&fq, (uint64_t)flow, &fq_items[flow][i].it) == RMQNS_EFULL)
			sched_yield();
	}
	return NULL;
}

static void *fq_consumer(void *arg)
{
	(void)arg;
	while (atomic_load(&fq_taken) < FQ_PRODUCERS * FQ_ITEMS) {
		/* the lock makes take-and-check one step, so the order seen is the queue's */
		pthread_mutex_lock(&fq_order);
		struct fq_item *f = (struct fq_item *)fairq_pop(&fq);
		if (f) {
			if (f->seq != fq_last_seq[f->flow] + 1)
				fq_out_of_order++;
			fq_last_seq[f->flow] = f->seq;
			atomic_fetch_add(&fq_taken, 1);
		}
		pthread_mutex_unlock(&fq_order);
		if (!f)
			sched_yield();
	}
	return NULL;
}

static int fairq_from_threads(void)
{
	pthread_t p[FQ_PRODUCERS], c[2];
	if (fairq_init(&fq, 64) != 0)
		return 2;
	for (int i = 0; i < FQ_PRODUCERS; i++)
		fq_last_seq[i] = -1;
	for (int i = 0; i < 2; i++)
		if (pthread_create(&c[i], NULL, fq_consumer, NULL) != 0)
			return 2;
	for (int i = 0; i < FQ_PRODUCERS; i++)
		if (pthread_create(&p[i], NULL, fq_producer, (void *)(intptr_t)i) != 0)
			return 2;
	for (int i = 0; i < FQ_PRODUCERS; i++)
		pthread_join(p[i], NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(c[i], NULL);
	EXPECT(fq_out_of_order == 0, "%d items out of their flow's order", fq_out_of_order);
	EXPECT(atomic_load(&fq_taken) == FQ_PRODUCERS * FQ_ITEMS, "%d items taken",
	      atomic_load(&fq_taken));
	EXPECT(fairq_looks_empty(&fq), "items left");
	fairq_destroy(&fq);
	return 0;
}

int main(void)
{
	char path[] = "/tmp/rmqns-log-threads-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return 2;
	close(fd);
	if (log_set_file(path) != 0)
		return 2;
	log_set_level(LOG_INFO);

	pthread_t t[LOG_THREADS];
	if (spawn_writers(t, writer) != 0)
		return 2;
	/* Switching the destination while others write must be safe too. */
	if (log_set_file(path) != 0)
		return 2;
	join_writers(t);

	FILE *f = fopen(path, "r");
	if (!f)
		return 2;
	int count[LOG_THREADS] = { 0 };
	char line[1024];
	while (fgets(line, sizeof(line), f)) {
		int i, w, w2;
		char tail[64];
		const char *msg = strstr(line, "] line ");
		const char *tn = strstr(line, "[writer-");
		EXPECT(msg && tn, "bad line: %s", line);
		if (!msg || !tn)
			continue;
		EXPECT(sscanf(msg, "] line %d of writer %d %63s", &i, &w, tail) == 3, "bad line: %s", line);
		EXPECT(sscanf(tn, "[writer-%d]", &w2) == 1 && w == w2, "name mismatch: %s", line);
		EXPECT(strcmp(tail, PAYLOAD) == 0, "torn line: %s", line);
		if (w < 0 || w >= LOG_THREADS)
			continue;
		EXPECT(i == count[w], "writer %d: line %d out of order", w, i);
		count[w]++;
	}
	fclose(f);
	unlink(path);
	for (int i = 0; i < LOG_THREADS; i++)
		EXPECT(count[i] == LOG_LINES, "writer %d wrote %d lines", i, count[i]);
	if (limited_from_threads() != 0)
		return 2;
	if (fairq_from_threads() != 0)
		return 2;
	if (atomic_load(&plain_failures))
		return 1;
	printf("ok: %d threads x %d lines\n", LOG_THREADS, LOG_LINES);
	return 0;
}
