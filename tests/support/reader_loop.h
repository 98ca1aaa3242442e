/* A reader thread of the concurrency tests: registered with RCU, it runs
 * one turn after another until told to stop, with its own random seed and
 * two scratch buffers kept between turns. */
#ifndef RMQNS_TEST_READER_LOOP_H
#define RMQNS_TEST_READER_LOOP_H

#include <stdatomic.h>

#include <urcu.h>

#include "rmqns/buf.h"

typedef void reader_turn_fn(unsigned *seed, struct buf *scratch, struct buf *out);

static inline void reader_loop(atomic_bool *stop, unsigned seed, reader_turn_fn *turn)
{
	struct buf scratch = BUF_INIT, out = BUF_INIT;

	rcu_register_thread();
	while (!atomic_load(stop))
		turn(&seed, &scratch, &out);
	buf_free(&scratch);
	buf_free(&out);
	rcu_unregister_thread();
}

#endif
