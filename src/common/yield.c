#include "rmqns/yield.h"

#include <sched.h>
#include <time.h>

/* Calls between clock reads: a topic of a registration body parses in
 * about a microsecond, so the clock is read every ~16 us of work. */
#define YIELD_CHECK_EVERY 16u

static _Thread_local bool yield_on;
static _Thread_local uint32_t yield_calls;
static _Thread_local uint64_t yield_last_ns;
static _Thread_local uint64_t yield_made;

static uint64_t yield_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void yield_enable(bool on)
{
	yield_on = on;
	yield_calls = 0;
	yield_last_ns = on ? yield_now_ns() : 0;
}

void yield_restart(void)
{
	if (!yield_on)
		return;
	yield_calls = 0;
	/* the first period is the longer one */
	yield_last_ns = yield_now_ns() + (uint64_t)(YIELD_FIRST_AFTER_US - YIELD_AFTER_US) * 1000u;
}

void yield_point(void)
{
	if (!yield_on || ++yield_calls < YIELD_CHECK_EVERY)
		return;
	yield_calls = 0;
	uint64_t now = yield_now_ns();
	if (now < yield_last_ns || now - yield_last_ns < (uint64_t)YIELD_AFTER_US * 1000u)
		return;
	sched_yield();
	yield_made++;
	yield_last_ns = yield_now_ns();
}

uint64_t yield_count(void)
{
	return yield_made;
}
