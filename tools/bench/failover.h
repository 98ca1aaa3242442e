/* rmqns-bench `controller`: brokers in controller mode, masters killed on
 * cue, and the time each fail-over took (see failover.c). */
#ifndef BENCH_FAILOVER_H
#define BENCH_FAILOVER_H

#include "opts.h"

/* Runs the scenario and prints its report; returns the exit status. */
int failover_run(const struct bench_opts *o);

#endif
