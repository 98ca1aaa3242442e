/* Open-loop send schedule: intended send times and due counts. */
#include "rate.h"

#include <math.h>

#include "rmqns/err.h"

int rate_init(struct rate_sched *s, double per_sec, uint64_t start_ns)
{
	if (!isfinite(per_sec) || per_sec <= 0.0 || per_sec > 1e9)
		return RMQNS_EINVAL;
	s->start_ns = start_ns;
	s->period_ns = 1e9 / per_sec;
	return RMQNS_OK;
}

int rate_init_share(struct rate_sched *s, double total_per_sec, uint32_t conns,
		    uint32_t index, uint64_t start_ns)
{
	if (conns == 0 || index >= conns)
		return RMQNS_EINVAL;
	int rc = rate_init(s, total_per_sec / conns, start_ns);
	if (rc)
		return rc;
	s->start_ns = start_ns + (uint64_t)llround((double)index * 1e9 / total_per_sec);
	return RMQNS_OK;
}

uint64_t rate_intended_ns(const struct rate_sched *s, uint64_t i)
{
	return s->start_ns + (uint64_t)llround((double)i * s->period_ns);
}

uint64_t rate_due(const struct rate_sched *s, uint64_t now_ns)
{
	if (now_ns < s->start_ns)
		return 0;
	/* First guess from the division, then settle on the exact count by
	 * the same rounding rate_intended_ns uses. */
	uint64_t n = (uint64_t)((double)(now_ns - s->start_ns) / s->period_ns) + 1;
	while (n > 0 && rate_intended_ns(s, n - 1) > now_ns)
		n--;
	while (rate_intended_ns(s, n) <= now_ns)
		n++;
	return n;
}
