/* Open-loop rate control of rmqns-bench: the schedule of intended send
 * times and the coordinated-omission correction. A fixed total rate is
 * split over connections, each with its own phase, so that together they
 * send evenly spaced requests. Latency is measured from the intended send
 * time, not from when the request finally left: a stalled server cannot
 * hide its stall by slowing the sender down. Pure arithmetic. */
#ifndef BENCH_RATE_H
#define BENCH_RATE_H

#include <stdint.h>

struct rate_sched {
	uint64_t start_ns;  /* intended time of send 0 */
	double period_ns;   /* spacing of this schedule's sends */
};

/* A schedule of `per_sec` sends per second whose first send is due at
 * start_ns. RMQNS_EINVAL for a rate that is not positive and finite or
 * beyond one send per nanosecond. */
int rate_init(struct rate_sched *s, double per_sec, uint64_t start_ns);

/* Connection `index` of `conns` sharing a total rate: its own rate is
 * total/conns and its first send is offset by index/total seconds, so the
 * union of all connections' schedules is evenly spaced at 1/total. */
int rate_init_share(struct rate_sched *s, double total_per_sec, uint32_t conns,
		    uint32_t index, uint64_t start_ns);

/* Intended send time of the i-th send (i from 0). Computed from i, not by
 * accumulation, so rounding never drifts. */
uint64_t rate_intended_ns(const struct rate_sched *s, uint64_t i);

/* How many sends are due at `now` (intended time <= now). */
uint64_t rate_due(const struct rate_sched *s, uint64_t now_ns);

/* Latency with coordinated-omission correction: from the intended send
 * time to the arrival of the answer (0 if the answer is somehow earlier). */
static inline uint64_t rate_latency_ns(uint64_t intended_ns, uint64_t recv_ns)
{
	return recv_ns > intended_ns ? recv_ns - intended_ns : 0;
}

#endif
