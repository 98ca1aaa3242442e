/* For the plain test programs (exit 0 = pass, so that they run under
 * ThreadSanitizer too): a check that reports where it failed, and a
 * sleep. */
#ifndef RMQNS_PLAIN_TEST_H
#define RMQNS_PLAIN_TEST_H

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

static inline void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

#endif
