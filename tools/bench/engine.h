/* The load engine of rmqns-bench: one thread, one epoll set, non-blocking
 * sockets, many requests in flight per connection matched by opaque. An
 * engine drives one kind of load (route queries, broker registrations,
 * seeded brokers kept alive, connect/query/close churn, or many clients
 * refreshing their routes every period) and owns its
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

#include "due.h"
#include "opts.h"
#include "reqs.h"
#include "stats.h"

/* What all engines share, read-only once the run starts. */
struct ssl_ctx_st;

struct bench_ctx {
	const struct bench_opts *o;
	struct ssl_ctx_st *tls;  /* NULL: plaintext */
	struct sockaddr_storage addr;
	socklen_t addr_len;
	char host[256];          /* addr's host as given: the server certificate names it */
	struct reqs_route_tpl tpl;
	char **topics;      /* topics route queries cycle over */
	uint32_t ntopics;
};

enum engine_kind {
	ENG_ROUTE = 0,   /* GET_ROUTEINFO_BY_TOPIC, pipelined, closed or open loop */
	ENG_REGISTER,    /* brokers re-registering (register scenario, mixed storm) */
	ENG_SEED,        /* brokers registered once, then kept alive */
	ENG_CHURN,       /* connect, query, close */
	ENG_HEARTBEAT,   /* brokers registered once, then 904 and 322 every interval */
	ENG_KV,          /* one PUT_KV_CONFIG every interval */
	ENG_CLIENTS,     /* many connections opened at a bounded rate, each sending
			  * its topics' 105s together every period (clients) */
};

/* The stats of an engine: st[phase] for its requests, and for a heartbeat
 * engine st[2 + phase] for its second kind (322 beside 904). */
#define ENG_MAX_STATS 4

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
	uint64_t interval_ns;            /* heartbeat / kv: between one connection's sends */
	bool keep_fds;                   /* on stop, leave the connections open (engine_close_conns) */

	/* set by the main thread */
	_Atomic uint64_t t0;             /* 0 until the main thread says go */
	atomic_int stop;
	_Atomic uint64_t cut_ns;         /* non-zero: sending stops then (absolute), answers drain */
	/* read by the main thread */
	atomic_int state;                /* enum engine_state */
	atomic_uint registered;          /* brokers whose first registration succeeded */
	char fail_msg[256];              /* valid once state is ENG_FAILED */
	uint64_t t_ready_ns;             /* when the engine became ready */

	/* results, read by the main thread after join */
	struct stats st[ENG_MAX_STATS];  /* st[1] used when phase_ns is set */
	uint32_t nstats;                 /* 2, or 4 for a heartbeat engine */
	struct stats warm;               /* answers to warm-up sends (discarded) */
	uint64_t last_answer_ns[ENG_MAX_STATS];
	bool ended_by_budget;
	uint64_t window_end_ns;          /* when sending stopped */

	/* clients: the ramp, the refresh schedule and what became of them;
	 * the first-attempt counts are final once the engine is ready, the
	 * others are read after join */
	uint64_t ramp_start_ns;
	uint64_t established;            /* first attempts that connected */
	uint64_t connect_failed;         /* first attempts that did not */
	int connect_errno;               /* why the first of them failed */
	uint64_t reconnects;             /* connects after the first (churn, retries) */
	uint64_t churned;                /* deliberate closes after a refresh */
	uint64_t refreshes;              /* refreshes answered in full */
	uint64_t refreshes_late;         /* came due with the last unanswered or the connection down */
	uint32_t open_at_end;

	/* private to the engine thread */
	int epfd;
	uint64_t woke_real_ns;           /* CLOCK_REALTIME when epoll last returned */
	uint32_t next_second;
	uint64_t next_timeout_scan;
	uint64_t sent_total;
	char tls_err[256];               /* why the last TLS handshake failed */
	struct due_heap due;             /* clients: each connection's next refresh */
	bool due_filled;
	uint32_t ramp_next;              /* clients: the next connection to open */
	uint32_t ramp_resolved;          /* clients: first attempts connected or failed */
	uint64_t rng;                    /* clients: jitter and churn draws */
	pthread_t thread;
	bool started;
};

/* Prepares an engine; the stats get the given names. */
int engine_init(struct engine *e, enum engine_kind kind, const struct bench_ctx *ctx,
		uint32_t first_conn, uint32_t nconns, uint32_t total_conns,
		const char *name0, const char *name1);
/* A heartbeat engine: names of the stats of its second request kind. */
void engine_second_kind(struct engine *e, const char *name2, const char *name3);
void engine_destroy(struct engine *e);
int engine_start(struct engine *e);
void engine_join(struct engine *e);
/* Sets the start of measurement (CLOCK_MONOTONIC ns). */
void engine_go(struct engine *e, uint64_t t0);
void engine_stop(struct engine *e);
/* Ends the sending window at `at_ns` (CLOCK_MONOTONIC); answers still drain. */
void engine_cut(struct engine *e, uint64_t at_ns);
/* After engine_join of a keep_fds engine: closes its connections back to
 * back and says when the first and the last close happened. */
uint32_t engine_close_conns(struct engine *e, uint64_t *first_ns, uint64_t *last_ns);
enum engine_state engine_state(struct engine *e);

uint64_t bench_now_ns(void);

#endif
