/* The load engine of rmqns-bench: one thread, one epoll set, non-blocking
 * sockets, many requests in flight per connection matched by opaque. An
 * engine drives one kind of load (route queries, broker registrations,
 * seeded brokers kept alive, or connect/query/close churn) and owns its
 * connections and statistics outright; the main thread only sets the start
 * time and the stop flag, and reads the last closed second under the
 * stats' mutex. */
#ifndef BENCH_ENGINE_H
#define BENCH_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "opts.h"
#include "reqs.h"
#include "stats.h"

/* What all engines share, read-only once the run starts. */
struct bench_ctx {
	const struct bench_opts *o;
	struct sockaddr_storage addr;
	socklen_t addr_len;
	struct reqs_route_tpl tpl;
	char **topics;      /* topics route queries cycle over */
	uint32_t ntopics;
};

enum engine_kind {
	ENG_ROUTE = 0,   /* GET_ROUTEINFO_BY_TOPIC, pipelined, closed or open loop */
	ENG_REGISTER,    /* brokers re-registering (register scenario, mixed storm) */
	ENG_SEED,        /* brokers registered once, then kept alive */
	ENG_CHURN,       /* connect, query, close */
};

enum engine_state {
	ENG_STARTING = 0,
	ENG_READY,       /* connected (and brokers registered): waiting for t0 */
	ENG_DONE,
	ENG_FAILED,
};

struct bconn;

struct engine {
	enum engine_kind kind;
	const struct bench_ctx *ctx;
	/* connections: route/churn have conns [first_conn, first_conn + nconns)
	 * of the run's total_conns; register/seed one per broker */
	uint32_t first_conn, nconns, total_conns;
	struct bconn *conns;
	struct reqs_broker *brokers;     /* borrowed, one per conn (register/seed) */
	uint32_t depth;
	double rate;                     /* total rate of the run (open loop), 0 closed */
	uint64_t budget;                 /* requests this engine may send; UINT64_MAX = no limit */

	/* timing, relative to t0 (the start of measurement) */
	uint64_t warmup_ns;
	uint64_t send_from_ns;           /* sends start at t0 + send_from - warmup (storm: the phase) */
	uint64_t duration_ns;            /* sends stop at t0 + duration (0: only the budget) */
	uint64_t phase_ns;               /* answers to sends at or after t0 + phase go to st[1] */
	uint64_t drain_ns;               /* wait this long for answers after the window */

	/* set by the main thread */
	_Atomic uint64_t t0;             /* 0 until the main thread says go */
	atomic_int stop;
	/* read by the main thread */
	atomic_int state;                /* enum engine_state */
	atomic_uint registered;          /* brokers whose first registration succeeded */
	char fail_msg[256];              /* valid once state is ENG_FAILED */
	uint64_t t_ready_ns;             /* when the engine became ready */

	/* results, read by the main thread after join */
	struct stats st[2];              /* st[1] used when phase_ns is set */
	struct stats warm;               /* answers to warm-up sends (discarded) */
	uint64_t last_answer_ns[2];
	bool ended_by_budget;
	uint64_t window_end_ns;          /* when sending stopped */

	/* private to the engine thread */
	int epfd;
	uint32_t next_second;
	uint64_t next_timeout_scan;
	uint64_t sent_total;
	pthread_t thread;
	bool started;
};

/* Prepares an engine; the stats get the given names. */
int engine_init(struct engine *e, enum engine_kind kind, const struct bench_ctx *ctx,
		uint32_t first_conn, uint32_t nconns, uint32_t total_conns,
		const char *name0, const char *name1);
void engine_destroy(struct engine *e);
int engine_start(struct engine *e);
void engine_join(struct engine *e);
/* Sets the start of measurement (CLOCK_MONOTONIC ns). */
void engine_go(struct engine *e, uint64_t t0);
void engine_stop(struct engine *e);
enum engine_state engine_state(struct engine *e);

uint64_t bench_now_ns(void);

#endif
