/* What the scenarios share (run.c): main.c's orchestration and the
 * scenarios that live in files of their own (disconnect.c) call it: the
 * interrupt flag, building fake brokers, waiting for an engine to be
 * ready, and printing a report in the form the options ask for. */
#ifndef BENCH_RUN_H
#define BENCH_RUN_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "engine.h"
#include "opts.h"
#include "report.h"
#include "reqs.h"

/* HOST:PORT (or [HOST]:PORT) to a socket address. */
int run_resolve_addr(const char *addr, struct sockaddr_storage *out, socklen_t *len);
/* The host of "host:port" or "[v6]:port" into host (n bytes). RMQNS_OK or
 * RMQNS_EINVAL. */
int run_addr_host(const char *addr, char *host, size_t n);

/* Set by SIGINT/SIGTERM. */
extern volatile sig_atomic_t bench_interrupted;

/* n brokers NAME-<i> whose topics are TOPIC-b<i>-t<j> (or TOPIC-t<j>), with
 * fake addresses 127.0.0.1:broker_port + 2 * (index_base + i) so that
 * brokers built by different calls never share one. */
int run_build_brokers(const struct bench_opts *o, struct reqs_broker **out, uint32_t n,
		      const char *broker_prefix, const char *topic_prefix,
		      enum bench_layout layout, uint32_t topics, bool dv_change,
		      uint32_t index_base);
void run_free_brokers(struct reqs_broker *b, uint32_t n);
/* Waits until the engine is ready (bounded); says why on stderr if not. */
int run_wait_ready(struct engine *e, const char *what);
/* Text or JSON on stdout, the --floor fractions and the --plot file. */
int run_output(const struct bench_opts *o, struct report *rep);
void run_sleep_ns(uint64_t ns);

#endif
