/* Latency histogram of rmqns-bench: HDR-style log-linear buckets with 128
 * linear sub-buckets per power of two, so every value is reported within
 * 1/128 (< 0.8 %) of what was recorded. Values are nanoseconds from 0 to
 * HIST_MAX_NS; larger ones are clamped and counted. Pure, no threads. */
#ifndef BENCH_HIST_H
#define BENCH_HIST_H

#include <stdbool.h>
#include <stdint.h>

#define HIST_SUB_BITS 7
#define HIST_SUB_COUNT (1u << HIST_SUB_BITS)
/* 60 s: nothing the bench waits for is allowed to take longer. */
#define HIST_MAX_NS 60000000000ull
/* One past the bucket of HIST_MAX_NS: msb 35, shift 28, index
 * 28*128 + (HIST_MAX_NS >> 28) = 3584 + 223. */
#define HIST_BUCKETS 3808u

struct hist {
	uint64_t count;
	uint64_t min;     /* UINT64_MAX while empty */
	uint64_t max;
	uint64_t sum;     /* for the mean; 584 years of nanoseconds fit */
	uint64_t clamped; /* values above HIST_MAX_NS, recorded as HIST_MAX_NS */
	uint64_t counts[HIST_BUCKETS];
};

void hist_init(struct hist *h);
void hist_record(struct hist *h, uint64_t ns);
void hist_record_n(struct hist *h, uint64_t ns, uint64_t n);
/* Adds every count of src to dst. */
void hist_merge(struct hist *dst, const struct hist *src);
/* The value at percentile p (0..100): the highest value equivalent to the
 * bucket holding the p-th ranked sample, clamped to [min, max]. 0 when empty. */
uint64_t hist_percentile(const struct hist *h, double p);
double hist_mean(const struct hist *h);
static inline bool hist_empty(const struct hist *h) { return h->count == 0; }

/* Bucket arithmetic, exposed for the tests. */
uint32_t hist_bucket_of(uint64_t ns);
uint64_t hist_bucket_low(uint32_t idx);
uint64_t hist_bucket_high(uint32_t idx); /* inclusive */

#endif
