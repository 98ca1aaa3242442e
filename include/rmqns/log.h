/* Logging: one line per event on stderr (or a file), with time, level and
 * thread name. Safe from any thread; a line is written with one write(2). */
#ifndef RMQNS_LOG_H
#define RMQNS_LOG_H

enum log_level { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_ERROR = 3 };

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* Name shown for the calling thread (copied, at most 15 characters). */
void log_set_thread_name(const char *name);
/* Sends lines to `path` (appended, created 0644) instead of stderr; NULL
 * goes back to stderr. 0, or RMQNS_EIO when the file cannot be opened (the
 * old destination stays). Safe while other threads log. */
int log_set_file(const char *path);
/* Parses "DEBUG", "info", "WARN"/"WARNING", "ERROR" (any case); -1 otherwise. */
int log_level_parse(const char *name);
void log_write(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_debug(...) do { if (log_get_level() <= LOG_DEBUG) log_write(LOG_DEBUG, __VA_ARGS__); } while (0)
#define log_info(...)  log_write(LOG_INFO, __VA_ARGS__)
#define log_warn(...)  log_write(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_write(LOG_ERROR, __VA_ARGS__)

#endif
