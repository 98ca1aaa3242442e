/* Logging from many threads at once: every line arrives whole and in each
 * thread's order, and a shared rate limit lets exactly its lines through. A plain program rather than a Criterion suite because
 * Criterion cannot start under ThreadSanitizer, which is where this runs. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmqns/log.h"

#define LOG_THREADS 4
#define LOG_LINES 500
#define PAYLOAD "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"

static int failures;

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__); \
		fputc('\n', stderr); \
		failures++; \
	} \
} while (0)

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
	CHECK(lines == LIMITED_LINES, "%d limited lines, %d expected", lines, LIMITED_LINES);
	uint64_t dropped = atomic_load(&shared_limit.suppressed);
	CHECK(dropped == (uint64_t)LOG_THREADS * LOG_LINES - LIMITED_LINES, "%llu suppressed",
	      (unsigned long long)dropped);
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
		CHECK(msg && tn, "bad line: %s", line);
		if (!msg || !tn)
			continue;
		CHECK(sscanf(msg, "] line %d of writer %d %63s", &i, &w, tail) == 3, "bad line: %s", line);
		CHECK(sscanf(tn, "[writer-%d]", &w2) == 1 && w == w2, "name mismatch: %s", line);
		CHECK(strcmp(tail, PAYLOAD) == 0, "torn line: %s", line);
		if (w < 0 || w >= LOG_THREADS)
			continue;
		CHECK(i == count[w], "writer %d: line %d out of order", w, i);
		count[w]++;
	}
	fclose(f);
	unlink(path);
	for (int i = 0; i < LOG_THREADS; i++)
		CHECK(count[i] == LOG_LINES, "writer %d wrote %d lines", i, count[i]);
	if (limited_from_threads() != 0)
		return 2;
	if (failures)
		return 1;
	printf("ok: %d threads x %d lines\n", LOG_THREADS, LOG_LINES);
	return 0;
}
