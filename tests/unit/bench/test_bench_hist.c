/* rmqns-bench histogram: bucket arithmetic, percentiles on known
 * distributions, merging, bounds. */
#include <math.h>
#include <stdint.h>

#include <criterion/criterion.h>

#include "hist.h"

static struct hist h, h2, h3;

Test(bench_hist, buckets_cover_every_value_within_precision)
{
	uint32_t prev = 0;
	for (uint64_t v = 0; v < 3000000; v += (v < 5000 ? 1 : 97)) {
		uint32_t i = hist_bucket_of(v);
		cr_assert(i >= prev, "index must not decrease at %llu", (unsigned long long)v);
		prev = i;
		cr_assert_leq(hist_bucket_low(i), v);
		cr_assert_geq(hist_bucket_high(i), v);
		if (v >= 256) {
			double width = (double)(hist_bucket_high(i) - hist_bucket_low(i) + 1);
			cr_assert_leq(width / (double)hist_bucket_low(i), 1.0 / 128 + 1e-12);
		} else {
			cr_assert_eq(hist_bucket_low(i), v);
			cr_assert_eq(hist_bucket_high(i), v);
		}
	}
	/* no gaps: the value after a bucket's top opens the next bucket */
	for (uint32_t i = 0; i + 1 < HIST_BUCKETS; i++)
		cr_assert_eq(hist_bucket_of(hist_bucket_high(i) + 1), i + 1, "gap after bucket %u", i);
	cr_assert_eq(hist_bucket_of(HIST_MAX_NS), hist_bucket_of(HIST_MAX_NS + 12345));
	cr_assert_eq(hist_bucket_of(HIST_MAX_NS), HIST_BUCKETS - 1, "the last bucket holds 60 s");
}

static void assert_close(uint64_t got, double want, const char *what)
{
	double err = fabs((double)got - want) / want;
	cr_assert_leq(err, 0.01, "%s: got %llu, want %.0f (%.2f%% off)", what,
		      (unsigned long long)got, want, err * 100);
}

Test(bench_hist, uniform_distribution_percentiles)
{
	hist_init(&h);
	/* 1 us .. 100 ms in steps of 1 us */
	for (uint64_t us = 1; us <= 100000; us++)
		hist_record(&h, us * 1000);
	cr_assert_eq(h.count, 100000);
	assert_close(hist_percentile(&h, 50.0), 50000e3, "p50");
	assert_close(hist_percentile(&h, 90.0), 90000e3, "p90");
	assert_close(hist_percentile(&h, 99.0), 99000e3, "p99");
	assert_close(hist_percentile(&h, 99.9), 99900e3, "p99.9");
	cr_assert_eq(hist_percentile(&h, 100.0), 100000000);
	cr_assert_eq(hist_percentile(&h, 0.0), 1000);
	cr_assert_eq(h.min, 1000);
	cr_assert_eq(h.max, 100000000);
	cr_assert_float_eq(hist_mean(&h), 50000.5e3, 1.0);
	/* reported values never undershoot the true percentile (highest equivalent) */
	cr_assert_geq(hist_percentile(&h, 50.0), 50000000);
}

Test(bench_hist, exponential_distribution_percentiles)
{
	hist_init(&h);
	const double mean = 200e3; /* 200 us */
	const int n = 200000;
	for (int i = 1; i <= n; i++)
		hist_record(&h, (uint64_t)llround(-mean * log(1.0 - (i - 0.5) / n)));
	assert_close(hist_percentile(&h, 50.0), mean * log(2.0), "p50");
	assert_close(hist_percentile(&h, 99.0), mean * log(100.0), "p99");
	assert_close(hist_percentile(&h, 99.9), mean * log(1000.0), "p99.9");
}

Test(bench_hist, two_point_distribution_ranks)
{
	hist_init(&h);
	hist_record_n(&h, 100000, 90);     /* 100 us */
	hist_record_n(&h, 10000000, 10);   /* 10 ms */
	assert_close(hist_percentile(&h, 50.0), 100000, "p50");
	assert_close(hist_percentile(&h, 90.0), 100000, "p90 is the 90th sample");
	assert_close(hist_percentile(&h, 90.5), 10000000, "p90.5 is the 91st");
	cr_assert_eq(hist_percentile(&h, 99.0), 10000000, "clamped to the max seen");
}

Test(bench_hist, single_value_is_exact)
{
	hist_init(&h);
	hist_record_n(&h, 123456789, 1000);
	for (double p = 0.0; p <= 100.0; p += 12.5)
		cr_assert_eq(hist_percentile(&h, p), 123456789, "p%.1f", p);
}

Test(bench_hist, merge_equals_recording_into_one)
{
	hist_init(&h);
	hist_init(&h2);
	hist_init(&h3);
	for (uint64_t v = 1; v <= 5000; v++) {
		hist_record(v % 2 ? &h : &h2, v * 777);
		hist_record(&h3, v * 777);
	}
	hist_merge(&h, &h2);
	cr_assert_eq(h.count, h3.count);
	cr_assert_eq(h.min, h3.min);
	cr_assert_eq(h.max, h3.max);
	cr_assert_eq(h.sum, h3.sum);
	cr_assert_arr_eq(h.counts, h3.counts, sizeof(h.counts));
	for (double p = 1; p < 100; p += 7)
		cr_assert_eq(hist_percentile(&h, p), hist_percentile(&h3, p));
	/* merging an empty histogram changes nothing, min included */
	hist_init(&h2);
	hist_merge(&h, &h2);
	cr_assert_eq(h.min, h3.min);
	cr_assert_eq(h.count, h3.count);
}

Test(bench_hist, bounds)
{
	hist_init(&h);
	cr_assert(hist_empty(&h));
	cr_assert_eq(hist_percentile(&h, 99.0), 0);
	cr_assert_float_eq(hist_mean(&h), 0.0, 1e-9);
	hist_record(&h, 0);
	hist_record(&h, 61ull * 1000000000ull);  /* above 60 s */
	hist_record(&h, UINT64_MAX);
	cr_assert_eq(h.clamped, 2);
	cr_assert_eq(h.max, HIST_MAX_NS);
	cr_assert_eq(h.min, 0);
	cr_assert_eq(hist_percentile(&h, 100.0), HIST_MAX_NS);
	cr_assert_eq(hist_percentile(&h, 10.0), 0);
	/* 1 us, the low end of the useful range, is exact */
	hist_init(&h);
	hist_record(&h, 1000);
	cr_assert_eq(hist_percentile(&h, 50.0), 1000);
}
