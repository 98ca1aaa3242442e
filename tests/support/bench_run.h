/* Shared by the rmqns-bench integration tests: run a binary with a time
 * bound and capture its stdout, start a server child that dies with the
 * test, and check a --json result for zero errors and real throughput. */
#ifndef RMQNS_TEST_BENCH_RUN_H
#define RMQNS_TEST_BENCH_RUN_H

#include <stdbool.h>
#include <sys/types.h>

#include <jansson.h>

/* Runs argv (argv[0] a path) to completion, killing it after timeout_ms.
 * Returns the wait status or -1; *out gets stdout (malloc'd, NUL-ended). */
int bench_run_capture(char *const argv[], int timeout_ms, char **out);

/* Starts rmqns-floor on a free loopback port; *port gets the port. The
 * child is killed if the test process dies. Returns its PID or -1. */
pid_t bench_start_floor(const char *floor_bin, int threads, int *port);
/* SIGTERM, then SIGKILL after timeout_ms; returns the wait status. */
int bench_stop_pid(pid_t pid, int timeout_ms);

/* Runs rmqns-bench with "-a 127.0.0.1:PORT --json --quiet" added and
 * returns the parsed result (asserting a clean exit and a parse). */
json_t *bench_run_json(const char *bench_bin, int port, const char *const *args);

/* Asserts that every role of the result answered (ok > 0, throughput > 0)
 * and had no error of any kind. */
void bench_assert_clean(json_t *doc, const char *what);

#endif
