/* rmqns-bench `disconnect`: a mass disconnect and what the server does
 * while it removes the brokers (see disconnect.c). */
#ifndef BENCH_DISCONNECT_H
#define BENCH_DISCONNECT_H

#include "opts.h"

/* Runs the scenario and prints its report; returns the exit status. */
int disconnect_run(const struct bench_opts *o);

#endif
