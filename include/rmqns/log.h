/* Logging: one line per event on stderr (or a file), with time (ISO 8601,
 * local time with its offset), level and thread name, as text or as one
 * JSON object per line. Safe from any thread; a line is written with one
 * write(2). */
#ifndef RMQNS_LOG_H
#define RMQNS_LOG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

enum log_level { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_ERROR = 3 };
/* text:  2026-03-01T12:00:00.123+01:00 INFO  [main] message
 * json:  {"time":"2026-03-01T12:00:00.123+01:00","level":"INFO","thread":"main",
 *         "message":"message"} (one line) */
enum log_format { LOG_TEXT = 0, LOG_JSON = 1 };

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
void log_set_format(enum log_format format);
/* Parses "text" or "json" (any case); -1 otherwise. */
int log_format_parse(const char *name);
/* Name shown for the calling thread (copied, at most 15 characters). A
 * thread that never named itself is shown by its kernel name (comm). */
void log_set_thread_name(const char *name);
/* Sends lines to `path` (appended, created 0644) instead of stderr; NULL
 * goes back to stderr. 0, or RMQNS_EIO when the file cannot be opened (the
 * old destination stays). Safe while other threads log. */
int log_set_file(const char *path);
/* Opens the file of the last log_set_file again (a rotation renamed it):
 * 0, also when the lines go to stderr; RMQNS_EIO when it cannot be opened
 * (lines keep going to the old file). */
int log_reopen(void);
/* A time as lines show it: ISO 8601 local time, milliseconds and the
 * offset ("2026-03-01T12:00:00.123+01:00"), into out (n bytes); the
 * length, as snprintf. */
int log_format_time(char *out, size_t n, const struct timespec *ts);
/* Parses "DEBUG", "info", "WARN"/"WARNING", "ERROR" (any case); -1 otherwise. */
int log_level_parse(const char *name);
void log_write(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A rate limit for lines a remote peer can cause at will: at most `lines`
 * lines per window of `window_ms`; the first line written after some were
 * dropped ends with "(N similar lines suppressed)". Lock-free: any number
 * of threads may log through one limit. */
struct log_limit {
	unsigned lines;
	unsigned window_ms;
	/* the window's start in ms << LOG_LIMIT_COUNT_BITS | lines written in
	 * it: one word, so that no window lets more than `lines` through */
	_Atomic uint64_t window;
	_Atomic uint64_t suppressed; /* dropped since the last line that said so */
};

#define LOG_LIMIT_COUNT_BITS 20 /* lines above 2^20 - 1 per window read as that */
#define LOG_LIMIT_INIT(lines_, window_ms_) { .lines = (lines_), .window_ms = (window_ms_) }
#define LOG_LIMIT_LINES 10
#define LOG_LIMIT_WINDOW_MS 10000

/* log_write through a limit. */
void log_write_limited(struct log_limit *limit, enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_debug(...) do { if (log_get_level() <= LOG_DEBUG) log_write(LOG_DEBUG, __VA_ARGS__); } while (0)
#define log_info(...)  log_write(LOG_INFO, __VA_ARGS__)
#define log_warn(...)  log_write(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_write(LOG_ERROR, __VA_ARGS__)

/* A line limited per call site: LOG_LIMIT_LINES per LOG_LIMIT_WINDOW_MS.
 * For every line a peer can cause again and again. */
#define log_limited(level, ...)                                                                  \
	do {                                                                                     \
		static struct log_limit log_site_limit_ =                                        \
			LOG_LIMIT_INIT(LOG_LIMIT_LINES, LOG_LIMIT_WINDOW_MS);                    \
		log_write_limited(&log_site_limit_, (level), __VA_ARGS__);                       \
	} while (0)
#define log_info_limited(...)  log_limited(LOG_INFO, __VA_ARGS__)
#define log_warn_limited(...)  log_limited(LOG_WARN, __VA_ARGS__)
#define log_error_limited(...) log_limited(LOG_ERROR, __VA_ARGS__)

#endif
