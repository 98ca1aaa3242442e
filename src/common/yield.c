#include "rmqns/yield.h"

#include <sched.h>

#include "rmqns/metrics.h"

/* Calls between clock reads: a topic of a registration body parses in
 * about a microsecond, so the clock is read every ~16 us of work. */
#define YIELD_CHECK_EVERY 16u

static _Thread_local bool yield_on;
static _Thread_local uint32_t yield_calls;
static _Thread_local uint64_t yield_due_ns; /* the next yield_point() after this yields */
static _Thread_local uint64_t yield_made;

static void yield_due_in(unsigned us)
{
	yield_calls = 0;
	yield_due_ns = metrics_now_ns() + (uint64_t)us * 1000u;
}

void yield_enable(bool on)
{
	yield_on = on;
	if (on)
		yield_due_in(YIELD_AFTER_US);
}

void yield_restart(void)
{
	if (yield_on)
		yield_due_in(YIELD_FIRST_AFTER_US);
}

void yield_point(void)
{
	if (!yield_on || ++yield_calls < YIELD_CHECK_EVERY)
		return;
	yield_calls = 0;
	if (metrics_now_ns() < yield_due_ns)
		return;
	sched_yield();
	yield_made++;
	yield_due_in(YIELD_AFTER_US);
}

uint64_t yield_count(void)
{
	return yield_made;
}
