/* What rmqns-bench counts for one role (route queries, registrations,
 * churn cycles): latency histograms, answers by response code, transport
 * errors, bytes, and a per-second timeline. One engine thread writes a
 * role's stats; the progress printer only reads the last closed second
 * through stats_peek_second(), under the stats' own mutex. */
#ifndef BENCH_STATS_H
#define BENCH_STATS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "hist.h"

#define STATS_MAX_CODES 16

enum stats_transport {
	STATS_ERR_CONNECT = 0, /* connect failed or refused */
	STATS_ERR_CLOSED,      /* peer closed with requests in flight */
	STATS_ERR_TIMEOUT,     /* no answer within --timeout */
	STATS_ERR_PROTOCOL,    /* bad frame, unknown opaque, not a response */
	STATS_ERR_COUNT
};

struct stats_code {
	int32_t code;
	uint64_t count;
};

/* One closed second of the timeline. */
struct stats_second {
	uint32_t t;       /* seconds since the start of measurement, from 1 */
	uint64_t ok;      /* answers with code 0 in that second */
	uint64_t errors;  /* other codes and transport errors */
	uint64_t p50_ns;
	uint64_t p99_ns;
	uint32_t span_ms; /* how much of the second was measured: 1000, less for the
			   * last one of a run cut mid-second */
};

struct stats {
	char name[32];
	struct hist lat;      /* every answered request (CO-corrected in open loop) */
	struct hist service;  /* open loop only: from the actual send */
	/* latency less the bench's own delay in picking the answer up: ends
	 * at the kernel's receive timestamp of the read (plaintext only) */
	struct hist wire;
	bool open_loop;
	uint64_t sent;
	uint64_t answered;    /* any code */
	uint64_t ok;          /* code 0 */
	uint64_t code_errors; /* answered with a code other than 0 */
	struct stats_code codes[STATS_MAX_CODES];
	uint32_t ncodes;
	uint64_t codes_other; /* distinct codes beyond STATS_MAX_CODES */
	uint64_t transport[STATS_ERR_COUNT];
	uint64_t bytes_out;
	uint64_t bytes_in;    /* frames of answers, length prefix included */
	uint64_t connects;    /* successful connects (churn counts cycles here) */

	/* timeline, written by the owning thread only */
	struct stats_second *seconds;
	uint32_t nseconds, cap_seconds;
	struct hist cur;      /* the second being filled */
	uint64_t cur_ok, cur_errors;

	/* the last closed second, for the progress printer */
	pthread_mutex_t lock;
	struct stats_second last;
	bool have_last;
};

int stats_init(struct stats *s, const char *name, bool open_loop);
void stats_destroy(struct stats *s);
/* An answer: code and latency (and service time in open loop). */
void stats_record_answer(struct stats *s, int32_t code, uint64_t lat_ns, uint64_t service_ns);
/* The same answer's latency ending at the kernel's receipt of it. */
void stats_record_wire(struct stats *s, uint64_t wire_ns);
void stats_record_transport(struct stats *s, enum stats_transport what, uint64_t n);
/* Closes second t (1-based): appends it to the timeline and publishes it. */
int stats_close_second(struct stats *s, uint32_t t);
/* The same for a second measured for span_ns only (a run cut mid-second). */
int stats_close_second_span(struct stats *s, uint32_t t, uint64_t span_ns);
/* For a role no engine drives: closes every second that ended by `now`
 * (t0: the run's time origin; *next: the next second to close, from 1),
 * the seconds before the role's first answer or error left out; with
 * `final`, also the second in progress, as a partial one. */
int stats_advance(struct stats *s, uint64_t t0, uint64_t now, uint32_t *next, bool final);
/* Adds what the current second holds to the last closed one (answers that
 * straggle in after a phase has ended); a new second if there is none. */
int stats_fold_second(struct stats *s, uint32_t t);
/* Copies the last closed second; false if there is none yet. */
bool stats_peek_second(struct stats *s, struct stats_second *out);
uint64_t stats_errors(const struct stats *s);
/* Count of answers with this code (0 when never seen). */
uint64_t stats_code_count(const struct stats *s, int32_t code);
/* Adds src into dst (histograms, counters, codes; timelines added second by second). */
int stats_merge(struct stats *dst, const struct stats *src);
const char *stats_transport_name(enum stats_transport what);

#endif
