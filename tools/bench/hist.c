/* HDR-style histogram: bucket index arithmetic, recording, merging and
 * percentile walks. Owns nothing but the struct it is given. */
#include "hist.h"

#include <string.h>

/* Below 256 every value has its own bucket; from there each power of two
 * [2^m, 2^(m+1)) is cut into 128 equal buckets of width 2^(m-7). With
 * shift = m - 7 the index is shift*128 + (v >> shift), which runs on
 * without gaps from one power of two to the next. */
uint32_t hist_bucket_of(uint64_t ns)
{
	if (ns > HIST_MAX_NS)
		ns = HIST_MAX_NS;
	if (ns < 2 * HIST_SUB_COUNT)
		return (uint32_t)ns;
	unsigned msb = 63u - (unsigned)__builtin_clzll(ns);
	unsigned shift = msb - HIST_SUB_BITS;
	return (uint32_t)(shift * HIST_SUB_COUNT + (ns >> shift));
}

uint64_t hist_bucket_low(uint32_t idx)
{
	if (idx < 2 * HIST_SUB_COUNT)
		return idx;
	unsigned shift = idx / HIST_SUB_COUNT - 1;
	uint64_t mant = idx - (uint64_t)shift * HIST_SUB_COUNT;
	return mant << shift;
}

uint64_t hist_bucket_high(uint32_t idx)
{
	if (idx < 2 * HIST_SUB_COUNT)
		return idx;
	unsigned shift = idx / HIST_SUB_COUNT - 1;
	return hist_bucket_low(idx) + (1ull << shift) - 1;
}

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

void hist_record_n(struct hist *h, uint64_t ns, uint64_t n)
{
	if (n == 0)
		return;
	if (ns > HIST_MAX_NS) {
		ns = HIST_MAX_NS;
		h->clamped += n;
	}
	h->counts[hist_bucket_of(ns)] += n;
	h->count += n;
	h->sum += ns * n;
	if (ns < h->min)
		h->min = ns;
	if (ns > h->max)
		h->max = ns;
}

void hist_record(struct hist *h, uint64_t ns)
{
	hist_record_n(h, ns, 1);
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	if (src->count == 0)
		return;
	for (uint32_t i = 0; i < HIST_BUCKETS; i++)
		dst->counts[i] += src->counts[i];
	dst->count += src->count;
	dst->sum += src->sum;
	dst->clamped += src->clamped;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

uint64_t hist_percentile(const struct hist *h, double p)
{
	if (h->count == 0)
		return 0;
	if (!(p > 0.0))
		return h->min;
	if (p >= 100.0)
		return h->max;
	/* rank of the sample, 1-based: ceil(p% of count), at least 1 */
	double want = p / 100.0 * (double)h->count;
	uint64_t rank = (uint64_t)want;
	if ((double)rank < want)
		rank++;
	if (rank < 1)
		rank = 1;
	uint64_t seen = 0;
	for (uint32_t i = 0; i < HIST_BUCKETS; i++) {
		seen += h->counts[i];
		if (seen >= rank) {
			uint64_t v = hist_bucket_high(i);
			if (v > h->max)
				v = h->max;
			if (v < h->min)
				v = h->min;
			return v;
		}
	}
	return h->max;
}

double hist_mean(const struct hist *h)
{
	return h->count ? (double)h->sum / (double)h->count : 0.0;
}
