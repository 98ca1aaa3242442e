/* rmqns-bench open-loop rate control: the intended-send schedule and the
 * coordinated-omission correction. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "hist.h"
#include "rate.h"
#include "rmqns/err.h"

Test(bench_rate, refuses_bad_rates)
{
	struct rate_sched s;
	cr_assert_eq(rate_init(&s, 0.0, 0), RMQNS_EINVAL);
	cr_assert_eq(rate_init(&s, -5.0, 0), RMQNS_EINVAL);
	cr_assert_eq(rate_init(&s, NAN, 0), RMQNS_EINVAL);
	cr_assert_eq(rate_init(&s, INFINITY, 0), RMQNS_EINVAL);
	cr_assert_eq(rate_init(&s, 2e9, 0), RMQNS_EINVAL);
	cr_assert_eq(rate_init_share(&s, 1000.0, 0, 0, 0), RMQNS_EINVAL);
	cr_assert_eq(rate_init_share(&s, 1000.0, 4, 4, 0), RMQNS_EINVAL);
}

Test(bench_rate, intended_times_are_evenly_spaced_without_drift)
{
	struct rate_sched s;
	cr_assert_eq(rate_init(&s, 1000.0, 5000000000ull), RMQNS_OK);
	cr_assert_eq(rate_intended_ns(&s, 0), 5000000000ull);
	cr_assert_eq(rate_intended_ns(&s, 1), 5001000000ull);
	cr_assert_eq(rate_intended_ns(&s, 1000), 6000000000ull);
	cr_assert_eq(rate_intended_ns(&s, 3600000), 5000000000ull + 3600ull * 1000000000ull);
	/* 3 per second does not divide a second: still no drift after a day */
	cr_assert_eq(rate_init(&s, 3.0, 0), RMQNS_OK);
	cr_assert_eq(rate_intended_ns(&s, 3ull * 86400), 86400ull * 1000000000ull);
}

Test(bench_rate, due_counts_match_the_schedule)
{
	struct rate_sched s;
	cr_assert_eq(rate_init(&s, 1000.0, 1000000000ull), RMQNS_OK);
	cr_assert_eq(rate_due(&s, 0), 0);
	cr_assert_eq(rate_due(&s, 999999999ull), 0);
	cr_assert_eq(rate_due(&s, 1000000000ull), 1);
	cr_assert_eq(rate_due(&s, 1000999999ull), 1);
	cr_assert_eq(rate_due(&s, 1001000000ull), 2);
	cr_assert_eq(rate_due(&s, 2000000000ull), 1001);
	cr_assert_eq(rate_init(&s, 7.0, 123), RMQNS_OK);
	for (uint64_t i = 0; i < 20000; i++) {
		uint64_t t = rate_intended_ns(&s, i);
		cr_assert_eq(rate_due(&s, t), i + 1, "at send %llu", (unsigned long long)i);
		cr_assert_eq(rate_due(&s, t - 1), i, "just before send %llu", (unsigned long long)i);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

Test(bench_rate, shared_rate_interleaves_connections_evenly)
{
	enum { CONNS = 4, EACH = 250 };
	uint64_t t[CONNS * EACH];
	for (uint32_t c = 0; c < CONNS; c++) {
		struct rate_sched s;
		cr_assert_eq(rate_init_share(&s, 1000.0, CONNS, c, 7000000ull), RMQNS_OK);
		for (uint32_t i = 0; i < EACH; i++)
			t[c * EACH + i] = rate_intended_ns(&s, i);
	}
	qsort(t, CONNS * EACH, sizeof(t[0]), cmp_u64);
	cr_assert_eq(t[0], 7000000ull);
	for (int i = 1; i < CONNS * EACH; i++) {
		uint64_t gap = t[i] - t[i - 1];
		cr_assert(gap >= 999999 && gap <= 1000001, "gap %llu at %d", (unsigned long long)gap, i);
	}
}

/* A server that stalls for 100 ms: a closed-loop sender would have sent
 * one request and waited, recording one slow answer; an open-loop sender
 * keeps intending to send every 1 ms, and every one of those requests
 * waits for the stall to end. Measured from the intended time the stall
 * shows in half the samples. */
Test(bench_rate, coordinated_omission_correction)
{
	static struct hist corrected, service;
	hist_init(&corrected);
	hist_init(&service);
	struct rate_sched s;
	cr_assert_eq(rate_init(&s, 1000.0, 0), RMQNS_OK);
	const uint64_t stall_end = 100000000ull, answer = 100000ull; /* answers take 100 us */
	for (uint64_t i = 0; i < 200; i++) {
		uint64_t intended = rate_intended_ns(&s, i);
		uint64_t sent = intended < stall_end ? stall_end : intended;
		uint64_t recv = sent + answer;
		hist_record(&corrected, rate_latency_ns(intended, recv));
		hist_record(&service, rate_latency_ns(sent, recv));
	}
	cr_assert_eq(hist_percentile(&service, 99.0), answer);
	cr_assert_eq(corrected.max, stall_end + answer);
	/* the 100 on-time sends take 100 us; the 100 stalled ones 1.1 .. 100.1 ms */
	uint64_t p50 = hist_percentile(&corrected, 50.0);
	cr_assert(p50 >= 100000ull && p50 <= 101000ull, "p50 %llu", (unsigned long long)p50);
	uint64_t p51 = hist_percentile(&corrected, 50.5);
	cr_assert(p51 >= 1100000ull && p51 <= 1111000ull, "p50.5 %llu", (unsigned long long)p51);
	uint64_t p75 = hist_percentile(&corrected, 75.0);
	cr_assert(p75 >= 50100000ull && p75 <= 50500000ull, "p75 %llu", (unsigned long long)p75);
	/* an answer cannot come before its intended send: no underflow */
	cr_assert_eq(rate_latency_ns(500, 400), 0);
}
