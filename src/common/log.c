/* Logging of log.h: level, format, per-thread names and the destination
 * fd (with its path, for the reopen after a rotation). Each line is
 * formatted in memory and written with a single write(2), so lines from
 * different threads never interleave. */
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
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "rmqns/err.h"
#include "rmqns/log.h"
#include "rmqns/utf8.h"

#define LOG_LINE_MAX 8192

static atomic_int log_level = LOG_INFO;
static atomic_int log_format = LOG_TEXT;
/* STDERR_FILENO, or a descriptor of our own that later log_set_file calls
 * repoint with dup2 so a concurrent writer never sees a closed number. */
static atomic_int log_fd = 2;
static pthread_mutex_t log_fd_lock = PTHREAD_MUTEX_INITIALIZER;
static char *log_path; /* of the last log_set_file; NULL = stderr (under log_fd_lock) */
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

void log_set_format(enum log_format format)
{
	atomic_store_explicit(&log_format, (int)format, memory_order_relaxed);
}

int log_format_parse(const char *name)
{
	if (name && !strcasecmp(name, "text"))
		return LOG_TEXT;
	if (name && !strcasecmp(name, "json"))
		return LOG_JSON;
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

/* Points the log at newfd (ours from now on); path is what it was opened from. */
static int log_point_at(int newfd, const char *path)
{
	char *copy = NULL;
	if (path && !(copy = strdup(path))) {
		close(newfd);
		return RMQNS_EIO;
	}
	pthread_mutex_lock(&log_fd_lock);
	int cur = atomic_load(&log_fd);
	if (cur == 2) {
		atomic_store(&log_fd, newfd);
	} else {
		int rc = dup2(newfd, cur);
		close(newfd);
		if (rc < 0) {
			pthread_mutex_unlock(&log_fd_lock);
			free(copy);
			return RMQNS_EIO;
		}
	}
	free(log_path);
	log_path = copy;
	pthread_mutex_unlock(&log_fd_lock);
	return RMQNS_OK;
}

static int log_open(const char *path)
{
	return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

int log_set_file(const char *path)
{
	int newfd = path ? log_open(path) : dup(2);
	if (newfd < 0)
		return RMQNS_EIO;
	return log_point_at(newfd, path);
}

int log_reopen(void)
{
	pthread_mutex_lock(&log_fd_lock);
	char *path = log_path ? strdup(log_path) : NULL;
	bool to_file = log_path != NULL;
	pthread_mutex_unlock(&log_fd_lock);
	if (!to_file)
		return RMQNS_OK;
	int rc = path ? log_set_file(path) : RMQNS_EIO;
	free(path);
	return rc;
}

int log_format_time(char *out, size_t n, const struct timespec *ts)
{
	struct tm tm;
	if (!localtime_r(&ts->tv_sec, &tm))
		memset(&tm, 0, sizeof tm);
	long off = tm.tm_gmtoff / 60;
	char sign = off < 0 ? '-' : '+';
	if (off < 0)
		off = -off;
	return snprintf(out, n, "%04d-%02d-%02dT%02d:%02d:%02d.%03ld%c%02ld:%02ld", tm.tm_year + 1900,
			tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
			ts->tv_nsec / 1000000, sign, off / 60, off % 60);
}

/* The calling thread's name; one that never named itself gets its kernel
 * name (threads of libraries included), never a bare number. */
static const char *log_thread_name(void)
{
	if (!log_thread[0]) {
		char comm[17] = "";
		if (prctl(PR_GET_NAME, comm, 0, 0, 0) != 0 || !comm[0])
			snprintf(comm, sizeof comm, "thread");
		log_set_thread_name(comm);
	}
	return log_thread;
}

static const char *log_level_name(enum log_level level)
{
	switch (level) {
	case LOG_DEBUG: return "DEBUG";
	case LOG_INFO: return "INFO";
	case LOG_WARN: return "WARN";
	case LOG_ERROR: return "ERROR";
	}
	return "?";
}

/* Appends s to line[*len..cap) as the inside of a JSON string: quotes,
 * backslashes and control characters escaped, bytes that are not UTF-8 as
 * U+FFFD. Stops, whole escapes only, where the room ends. */
static void log_json_str(char *line, size_t cap, size_t *len, const char *s, size_t n)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t at = *len;
	while (n > 0) {
		char esc[8];
		const char *piece = esc;
		size_t k;
		uint32_t cp;
		size_t used = utf8_decode(p, n, &cp);
		if (used == 0) {
			piece = "\\ufffd";
			k = 6;
			used = 1;
		} else if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p;
			k = 2;
		} else if (*p < 0x20) {
			k = (size_t)snprintf(esc, sizeof esc, "\\u%04x", *p);
		} else {
			piece = (const char *)p;
			k = used;
		}
		if (at + k > cap)
			break;
		memcpy(line + at, piece, k);
		at += k;
		p += used;
		n -= used;
	}
	*len = at;
}

/* Formats and writes one line; `suppressed` > 0 adds how many lines like
 * it a limit dropped before it. */
static void log_vwrite(enum log_level level, uint64_t suppressed, const char *fmt, va_list ap)
{
	char msg[LOG_LINE_MAX], line[LOG_LINE_MAX + 256], when[48];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	log_format_time(when, sizeof when, &ts);
	const char *thread = log_thread_name();

	/* the message; over-long ones are cut rather than split over several writes */
	int m = vsnprintf(msg, sizeof msg, fmt, ap);
	if (m < 0)
		return;
	size_t mlen = (size_t)m < sizeof msg ? (size_t)m : sizeof msg - 1;
	if (suppressed) {
		m = snprintf(msg + mlen, sizeof msg - mlen, " (%llu similar lines suppressed)",
			     (unsigned long long)suppressed);
		if (m > 0)
			mlen += (size_t)m < sizeof msg - mlen ? (size_t)m : sizeof msg - mlen - 1;
	}

	size_t len;
	const size_t cap = sizeof line - 3; /* room for the closing "} and the newline */
	if (atomic_load_explicit(&log_format, memory_order_relaxed) == LOG_JSON) {
		int n = snprintf(line, sizeof line, "{\"time\":\"%s\",\"level\":\"%s\",\"thread\":\"",
				 when, log_level_name(level));
		if (n < 0)
			return;
		len = (size_t)n;
		log_json_str(line, cap, &len, thread, strlen(thread));
		memcpy(line + len, "\",\"message\":\"", 13);
		len += 13;
		log_json_str(line, cap, &len, msg, mlen);
		line[len++] = '"';
		line[len++] = '}';
	} else {
		int n = snprintf(line, sizeof line, "%s %-5s [%s] ", when, log_level_name(level),
				 thread);
		if (n < 0)
			return;
		len = (size_t)n;
		memcpy(line + len, msg, mlen);
		len += mlen;
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
