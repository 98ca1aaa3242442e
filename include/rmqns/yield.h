/* Long CPU work that yields the CPU now and then. A registration parse
 * runs for milliseconds on a worker that shares the CPUs with the
 * reactors; once the fair scheduler has given a CPU to the worker, a
 * reactor that wakes on it may wait for the worker's whole time slice
 * (and, at 250 Hz, for the next tick) before it runs. A thread that opts
 * in gives the CPU up after every YIELD_AFTER_US of work: sched_yield()
 * lets a waiting reactor run at once and costs about a microsecond when
 * nothing waits. Threads that do not opt in (reactors, the registrar,
 * tests, fuzzers) never yield; the registrar must not: a request answered
 * after a one-way registration on the same connection expects to see it
 * applied, and a yielding registrar lost that race to the reactor (the
 * captured 4.9.8 replay saw code 17). */
#ifndef RMQNS_YIELD_H
#define RMQNS_YIELD_H

#include <stdbool.h>
#include <stdint.h>

#define YIELD_AFTER_US 100u
/* ...but not before this much work on one request: a yield at nice 10
 * waits for a new turn behind every busier thread, which a small
 * registration (a hundred topics, ~0.1 ms) must not pay. */
#define YIELD_FIRST_AFTER_US 500u

/* The calling thread yields at yield_point() from now on (or no more). */
void yield_enable(bool on);
/* A new piece of work begins: its first yield comes YIELD_FIRST_AFTER_US
 * of work from now, so shorter work never gives its CPU up. */
void yield_restart(void);
/* Cheap: a thread-local counter; the clock is read every few calls, and
 * sched_yield() called once YIELD_AFTER_US have passed since the last. */
void yield_point(void);
/* Yields the calling thread has made (for tests and statistics). */
uint64_t yield_count(void);

#endif
