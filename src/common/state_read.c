/* The read-side section every reader of RCU-published state enters (race.h:
 * state_read_lock). Apart from race.c: the codec-only builds that take
 * common_sources link no urcu. */
#include <urcu.h>

#include "rmqns/race.h"

void state_read_lock(void)
{
	rcu_read_lock();
}

void state_read_unlock(void)
{
	race_reader_done();
	rcu_read_unlock();
}
