/* Logging of log.h: level, per-thread names and the destination fd. Each
 * line is formatted in memory and written with a single write(2), so lines
 * from different threads never interleave. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "rmqns/err.h"
#include "rmqns/log.h"

#define LOG_LINE_MAX 8192

static atomic_int log_level = LOG_INFO;
/* STDERR_FILENO, or a descriptor of our own that later log_set_file calls
 * repoint with dup2 so a concurrent writer never sees a closed number. */
static atomic_int log_fd = 2;
static pthread_mutex_t log_fd_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local char log_thread[16];

void log_set_level(enum log_level level)
{
	atomic_store_explicit(&log_level, (int)level, memory_order_relaxed);
}

enum log_level log_get_level(void)
{
	return (enum log_level)atomic_load_explicit(&log_level, memory_order_relaxed);
}

int log_level_parse(const char *name)
{
	if (!name)
		return -1;
	if (!strcasecmp(name, "DEBUG"))
		return LOG_DEBUG;
	if (!strcasecmp(name, "INFO"))
		return LOG_INFO;
	if (!strcasecmp(name, "WARN") || !strcasecmp(name, "WARNING"))
		return LOG_WARN;
	if (!strcasecmp(name, "ERROR"))
		return LOG_ERROR;
	return -1;
}

void log_set_thread_name(const char *name)
{
	if (!name)
		name = "";
	size_t n = strnlen(name, sizeof(log_thread) - 1);
	memcpy(log_thread, name, n);
	log_thread[n] = 0;
}

int log_set_file(const char *path)
{
	int newfd = path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)
			 : dup(2);
	if (newfd < 0)
		return RMQNS_EIO;
	pthread_mutex_lock(&log_fd_lock);
	int cur = atomic_load(&log_fd);
	if (cur == 2) {
		atomic_store(&log_fd, newfd);
	} else {
		int rc = dup2(newfd, cur);
		close(newfd);
		if (rc < 0) {
			pthread_mutex_unlock(&log_fd_lock);
			return RMQNS_EIO;
		}
	}
	pthread_mutex_unlock(&log_fd_lock);
	return RMQNS_OK;
}

static const char *log_level_name(enum log_level level)
{
	switch (level) {
	case LOG_DEBUG: return "DEBUG";
	case LOG_INFO: return "INFO ";
	case LOG_WARN: return "WARN ";
	case LOG_ERROR: return "ERROR";
	}
	return "?????";
}

/* Formats and writes one line; `suppressed` > 0 adds how many lines like
 * it a limit dropped before it. */
static void log_vwrite(enum log_level level, uint64_t suppressed, const char *fmt, va_list ap)
{
	char line[LOG_LINE_MAX];
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);

	if (!log_thread[0])
		snprintf(log_thread, sizeof(log_thread), "t%ld", (long)gettid());

	int n = snprintf(line, sizeof(line), "%04d-%02d-%02d %02d:%02d:%02d.%03ld %s [%s] ",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			 tm.tm_sec, ts.tv_nsec / 1000000, log_level_name(level), log_thread);
	if (n < 0)
		return;
	size_t len = (size_t)n;

	int m = vsnprintf(line + len, sizeof(line) - len - 1, fmt, ap);
	if (m < 0)
		return;
	/* Over-long messages are cut rather than split over several writes. */
	len += (size_t)m < sizeof(line) - len - 1 ? (size_t)m : sizeof(line) - len - 2;
	if (suppressed) {
		m = snprintf(line + len, sizeof(line) - len - 1, " (%llu similar lines suppressed)",
			     (unsigned long long)suppressed);
		if (m > 0)
			len += (size_t)m < sizeof(line) - len - 1 ? (size_t)m : sizeof(line) - len - 2;
	}
	line[len++] = '\n';

	int fd = atomic_load_explicit(&log_fd, memory_order_acquire);
	const char *p = line;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		len -= (size_t)w;
	}
}

void log_write(enum log_level level, const char *fmt, ...)
{
	if ((int)level < atomic_load_explicit(&log_level, memory_order_relaxed))
		return;
	va_list ap;
	va_start(ap, fmt);
	log_vwrite(level, 0, fmt, ap);
	va_end(ap);
}

/* Whether a line may go out under the limit; *suppressed gets how many
 * were dropped since the last one that went out. A dropped line costs a
 * load and an add; one that goes out, a compare-and-swap. */
static bool log_limit_take(struct log_limit *l, uint64_t *suppressed)
{
	const uint64_t mask = (1u << LOG_LIMIT_COUNT_BITS) - 1;
	uint64_t lines = l->lines < mask ? l->lines : mask;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
	uint64_t old = atomic_load_explicit(&l->window, memory_order_relaxed), next;
	do {
		uint64_t start = old >> LOG_LIMIT_COUNT_BITS, used = old & mask;
		if (old == 0 || now - start >= l->window_ms) {
			next = (now << LOG_LIMIT_COUNT_BITS) | 1u;
		} else if (used < lines) {
			next = old + 1;
		} else {
			atomic_fetch_add_explicit(&l->suppressed, 1, memory_order_relaxed);
			return false;
		}
	} while (!atomic_compare_exchange_weak_explicit(&l->window, &old, next, memory_order_relaxed,
							memory_order_relaxed));
	*suppressed = atomic_exchange_explicit(&l->suppressed, 0, memory_order_relaxed);
	return true;
}

void log_write_limited(struct log_limit *limit, enum log_level level, const char *fmt, ...)
{
	uint64_t suppressed;
	if ((int)level < atomic_load_explicit(&log_level, memory_order_relaxed) ||
	    !log_limit_take(limit, &suppressed))
		return;
	va_list ap;
	va_start(ap, fmt);
	log_vwrite(level, suppressed, fmt, ap);
	va_end(ap);
}
