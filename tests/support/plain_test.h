/* For the plain test programs (exit 0 = pass, so that they run under
 * ThreadSanitizer too): checks that report where they failed, and a
 * sleep. */
#ifndef RMQNS_PLAIN_TEST_H
#define RMQNS_PLAIN_TEST_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

/* On failure: print the check and jump to the caller's `out:` label. */
#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			goto out;                                                    \
		}                                                                    \
	} while (0)

/* On failure: print the check and return -1. */
#define CHECK_RET(cond)                                                              \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			return -1;                                                   \
		}                                                                    \
	} while (0)

/* The failed EXPECT and EXPECT_RET checks so far (from any thread). */
static atomic_int plain_failures __attribute__((unused));

static inline void plain_failed(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static inline void plain_failed(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "FAIL %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	atomic_fetch_add(&plain_failures, 1);
}

/* On failure: print the message (printf arguments), count it, go on. */
#define EXPECT(cond, ...)                                                            \
	do {                                                                         \
		if (!(cond))                                                         \
			plain_failed(__FILE__, __LINE__, __VA_ARGS__);               \
	} while (0)

/* The same, then return -1. */
#define EXPECT_RET(cond, ...)                                                        \
	do {                                                                         \
		if (!(cond)) {                                                       \
			plain_failed(__FILE__, __LINE__, __VA_ARGS__);               \
			return -1;                                                   \
		}                                                                    \
	} while (0)

/* main's exit status: 1 after failed EXPECT checks (their count on
 * stderr), else 0. */
static inline int plain_exit_status(void)
{
	int n = atomic_load(&plain_failures);
	if (n) {
		fprintf(stderr, "%d failures\n", n);
		return 1;
	}
	return 0;
}

static inline void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

#endif
