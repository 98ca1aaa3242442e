/* Per-role counters and timeline of rmqns-bench. */
#include "stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmqns/err.h"

int stats_init(struct stats *s, const char *name, bool open_loop)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	hist_init(&s->lat);
	hist_init(&s->service);
	hist_init(&s->wire);
	hist_init(&s->cur);
	s->open_loop = open_loop;
	if (pthread_mutex_init(&s->lock, NULL) != 0)
		return RMQNS_ENOMEM;
	return RMQNS_OK;
}

void stats_destroy(struct stats *s)
{
	free(s->seconds);
	s->seconds = NULL;
	pthread_mutex_destroy(&s->lock);
}

static void stats_count_code(struct stats *s, int32_t code, uint64_t n)
{
	for (uint32_t i = 0; i < s->ncodes; i++) {
		if (s->codes[i].code == code) {
			s->codes[i].count += n;
			return;
		}
	}
	if (s->ncodes < STATS_MAX_CODES) {
		s->codes[s->ncodes].code = code;
		s->codes[s->ncodes].count = n;
		s->ncodes++;
	} else {
		s->codes_other += n;
	}
}

void stats_record_answer(struct stats *s, int32_t code, uint64_t lat_ns, uint64_t service_ns)
{
	s->answered++;
	stats_count_code(s, code, 1);
	if (code == 0) {
		s->ok++;
		s->cur_ok++;
	} else {
		s->code_errors++;
		s->cur_errors++;
	}
	hist_record(&s->lat, lat_ns);
	hist_record(&s->cur, lat_ns);
	if (s->open_loop)
		hist_record(&s->service, service_ns);
}

void stats_record_wire(struct stats *s, uint64_t wire_ns)
{
	hist_record(&s->wire, wire_ns);
}

void stats_record_transport(struct stats *s, enum stats_transport what, uint64_t n)
{
	if ((unsigned)what >= STATS_ERR_COUNT)
		return;
	s->transport[what] += n;
	s->cur_errors += n;
}

int stats_close_second(struct stats *s, uint32_t t)
{
	return stats_close_second_span(s, t, 1000000000ull);
}

static int stats_push_second(struct stats *s, const struct stats_second *sec)
{
	if (s->nseconds == s->cap_seconds) {
		uint32_t cap = s->cap_seconds ? s->cap_seconds * 2 : 64;
		struct stats_second *n = realloc(s->seconds, cap * sizeof(*n));
		if (!n)
			return RMQNS_ENOMEM;
		s->seconds = n;
		s->cap_seconds = cap;
	}
	s->seconds[s->nseconds++] = *sec;
	return RMQNS_OK;
}

int stats_close_second_span(struct stats *s, uint32_t t, uint64_t span_ns)
{
	uint64_t span_ms = (span_ns + 999999ull) / 1000000ull;
	struct stats_second sec = {
		.t = t, .ok = s->cur_ok, .errors = s->cur_errors,
		.p50_ns = hist_percentile(&s->cur, 50.0),
		.p99_ns = hist_percentile(&s->cur, 99.0),
		.span_ms = span_ms == 0 ? 1 : span_ms > 1000 ? 1000 : (uint32_t)span_ms,
	};
	hist_init(&s->cur);
	s->cur_ok = 0;
	s->cur_errors = 0;
	pthread_mutex_lock(&s->lock);
	s->last = sec;
	s->have_last = true;
	pthread_mutex_unlock(&s->lock);
	return stats_push_second(s, &sec);
}

int stats_advance(struct stats *s, uint64_t t0, uint64_t now, uint32_t *next, bool final)
{
	const uint64_t sec_ns = 1000000000ull;
	if (*next == 0)
		*next = 1;
	while (now >= t0 + (uint64_t)*next * sec_ns) {
		bool has = s->cur.count || s->cur_ok || s->cur_errors;
		if (has || s->nseconds) {
			int rc = stats_close_second(s, *next);
			if (rc)
				return rc;
		}
		(*next)++;
	}
	if (final && (s->cur.count || s->cur_ok || s->cur_errors)) {
		uint64_t start = t0 + (uint64_t)(*next - 1) * sec_ns;
		int rc = stats_close_second_span(s, *next, now > start ? now - start : 1);
		if (rc)
			return rc;
		(*next)++;
	}
	return RMQNS_OK;
}

int stats_fold_second(struct stats *s, uint32_t t)
{
	if (s->nseconds == 0)
		return stats_close_second(s, t);
	struct stats_second *last = &s->seconds[s->nseconds - 1];
	last->ok += s->cur_ok;
	last->errors += s->cur_errors;
	hist_init(&s->cur);
	s->cur_ok = 0;
	s->cur_errors = 0;
	return RMQNS_OK;
}

bool stats_peek_second(struct stats *s, struct stats_second *out)
{
	pthread_mutex_lock(&s->lock);
	bool have = s->have_last;
	if (have)
		*out = s->last;
	pthread_mutex_unlock(&s->lock);
	return have;
}

uint64_t stats_errors(const struct stats *s)
{
	uint64_t n = s->code_errors;
	for (int i = 0; i < STATS_ERR_COUNT; i++)
		n += s->transport[i];
	return n;
}

uint64_t stats_code_count(const struct stats *s, int32_t code)
{
	for (uint32_t i = 0; i < s->ncodes; i++)
		if (s->codes[i].code == code)
			return s->codes[i].count;
	return 0;
}

static int stats_cmp_second(const void *a, const void *b)
{
	uint32_t x = ((const struct stats_second *)a)->t, y = ((const struct stats_second *)b)->t;
	return x < y ? -1 : x > y;
}

int stats_merge(struct stats *dst, const struct stats *src)
{
	hist_merge(&dst->lat, &src->lat);
	hist_merge(&dst->service, &src->service);
	hist_merge(&dst->wire, &src->wire);
	dst->open_loop = dst->open_loop || src->open_loop;
	dst->sent += src->sent;
	dst->answered += src->answered;
	dst->ok += src->ok;
	dst->code_errors += src->code_errors;
	for (uint32_t i = 0; i < src->ncodes; i++)
		stats_count_code(dst, src->codes[i].code, src->codes[i].count);
	dst->codes_other += src->codes_other;
	for (int i = 0; i < STATS_ERR_COUNT; i++)
		dst->transport[i] += src->transport[i];
	dst->bytes_out += src->bytes_out;
	dst->bytes_in += src->bytes_in;
	dst->connects += src->connects;
	/* Timelines: second t of each adds up; percentiles of a merged second
	 * cannot be rebuilt, so the larger of the two is kept (an upper bound). */
	for (uint32_t i = 0; i < src->nseconds; i++) {
		const struct stats_second *ss = &src->seconds[i];
		struct stats_second *ds = NULL;
		for (uint32_t j = 0; j < dst->nseconds; j++)
			if (dst->seconds[j].t == ss->t)
				ds = &dst->seconds[j];
		if (!ds) {
			if (stats_push_second(dst, ss))
				return RMQNS_ENOMEM;
			continue;
		}
		ds->ok += ss->ok;
		ds->errors += ss->errors;
		if (ss->span_ms > ds->span_ms)
			ds->span_ms = ss->span_ms;
		if (ss->p50_ns > ds->p50_ns)
			ds->p50_ns = ss->p50_ns;
		if (ss->p99_ns > ds->p99_ns)
			ds->p99_ns = ss->p99_ns;
	}
	if (dst->nseconds > 1)
		qsort(dst->seconds, dst->nseconds, sizeof(dst->seconds[0]), stats_cmp_second);
	return RMQNS_OK;
}

const char *stats_transport_name(enum stats_transport what)
{
	switch (what) {
	case STATS_ERR_CONNECT: return "connect";
	case STATS_ERR_CLOSED: return "closed";
	case STATS_ERR_TIMEOUT: return "timeout";
	case STATS_ERR_PROTOCOL: return "protocol";
	default: return "?";
	}
}
