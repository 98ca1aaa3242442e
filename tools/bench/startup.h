/* The `startup` scenario: time from exec of a server command to its first
 * successful answer (GET_BROKER_CLUSTER_INFO, code 0), several times over.
 * Starts and stops only the child it forked, by its PID. */
#ifndef BENCH_STARTUP_H
#define BENCH_STARTUP_H

#include <stddef.h>
#include <sys/socket.h>

#include "opts.h"

/* Runs o->runs starts of o->exec_cmd; ms_out gets one figure per run.
 * *rss_kb is the server's RSS at the first answer of the last run (0 if
 * unknown). RMQNS_OK, or an error with a reason in err. */
int startup_run(const struct bench_opts *o, const struct sockaddr_storage *addr,
		socklen_t addr_len, double *ms_out, unsigned long long *rss_kb,
		char *err, size_t err_len);

#endif
