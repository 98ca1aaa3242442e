/* rmqns-bench: builds the run a scenario asks for out of engines, starts
 * them together, prints progress each second, and reports. The engines do
 * the network work; this file only orchestrates and presents. */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "rmqns/err.h"
#include "rmqns/remoting.h"
#include "engine.h"
#include "opts.h"
#include "procstat.h"
#include "report.h"
#include "disconnect.h"
#include "failover.h"
#include "reqs.h"
#include "run.h"
#include "startup.h"
#include "tls.h"

#define NS_PER_S 1000000000ull
/* A heartbeat broker registers this many topics, once. */
#define RUN_HEARTBEAT_TOPICS 10

static void on_sigint(int sig)
{
	(void)sig;
	bench_interrupted = 1;
}

/* ---- the run ---- */

struct group {
	const char *label;         /* progress label */
	struct engine *eng;
	uint32_t neng;
	int stats_idx;             /* which st[] the progress shows; -1 = by phase */
};

struct run {
	struct bench_opts *o;
	struct bench_ctx ctx;
	struct bench_ctx storm_ctx; /* mixed: ctx, at --storm-addr when given */
	struct sockaddr_storage storm_addr;
	socklen_t storm_addr_len;   /* 0: no --storm-addr */
	char *topic_store;
	/* brokers */
	struct reqs_broker *seed_brokers;
	uint32_t nseed;
	struct reqs_broker *load_brokers; /* register scenario or mixed storm */
	uint32_t nload;
	/* engines */
	struct engine seed;
	bool have_seed;
	struct engine *route;
	uint32_t nroute;
	struct engine load;        /* register / storm / churn */
	bool have_load;
	/* mixed: liveness traffic */
	struct reqs_broker *hb_brokers;
	uint32_t nhb;
	struct engine hb;          /* 904 + 322 */
	bool have_hb;
	struct engine kv;          /* PUT_KV_CONFIG */
	bool have_kv;
	uint64_t t0, t_seed_start;
	double seed_s;
	struct stats merged[2];
	bool merged_init;
};

/* fn on every engine the run started: the route engines, load, heartbeats
 * and KV, and the seeder when with_seed. */
static void run_each_engine(struct run *r, bool with_seed, void (*fn)(struct engine *))
{
	for (uint32_t i = 0; i < r->nroute; i++)
		fn(&r->route[i]);
	if (r->have_load)
		fn(&r->load);
	if (r->have_hb)
		fn(&r->hb);
	if (r->have_kv)
		fn(&r->kv);
	if (with_seed && r->have_seed)
		fn(&r->seed);
}

static int run_build_topics(struct run *r)
{
	struct bench_opts *o = r->o;
	uint64_t n = o->layout == LAYOUT_SHARED ? o->broker_topics
						: (uint64_t)o->brokers * o->broker_topics;
	if (o->topics && o->topics < n)
		n = o->topics;
	r->ctx.topics = calloc(n, sizeof(char *));
	r->topic_store = malloc(n * REQS_NAME_MAX);
	if (!r->ctx.topics || !r->topic_store)
		return RMQNS_ENOMEM;
	uint64_t k = 0;
	uint32_t nb = o->layout == LAYOUT_SHARED ? 1 : o->brokers;
	/* interleave brokers so that the first N topics span all of them */
	for (uint32_t t = 0; t < o->broker_topics && k < n; t++)
		for (uint32_t b = 0; b < nb && k < n; b++) {
			char *dst = r->topic_store + k * REQS_NAME_MAX;
			int rc = reqs_topic_name(dst, REQS_NAME_MAX, o->topic_prefix, o->layout, b, t);
			if (rc)
				return rc;
			r->ctx.topics[k++] = dst;
		}
	r->ctx.ntopics = (uint32_t)k;
	return RMQNS_OK;
}

static bool group_done(struct engine *e, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		enum engine_state s = engine_state(&e[i]);
		if (s != ENG_DONE && s != ENG_FAILED)
			return false;
	}
	return true;
}

static void progress_group(FILE *f, const char *label, struct engine *e, uint32_t n, int idx,
			   uint32_t *t_out, bool *first)
{
	uint64_t ok = 0, errs = 0, p50 = 0, p99 = 0;
	bool any = false;
	for (uint32_t i = 0; i < n; i++) {
		for (int p = 0; p < 2; p++) {
			if (idx >= 0 && p != idx)
				continue;
			struct stats_second s;
			if (!stats_peek_second(&e[i].st[p], &s) || s.t < *t_out)
				continue;
			if (s.t > *t_out && any)
				continue;
			any = true;
			*t_out = s.t;
			ok += s.ok;
			errs += s.errors;
			if (s.p50_ns > p50) p50 = s.p50_ns;
			if (s.p99_ns > p99) p99 = s.p99_ns;
		}
	}
	if (!any)
		return;
	fprintf(f, "%s%s %llu/s p50 %.0fus p99 %.0fus err %llu", *first ? " " : " | ", label,
		(unsigned long long)ok,
		(double)p50 / 1e3, (double)p99 / 1e3, (unsigned long long)errs);
	*first = false;
}

static void progress_print(struct run *r, uint32_t sec)
{
	char line[512];
	FILE *f = fmemopen(line, sizeof(line), "w");
	if (!f)
		return;
	uint32_t t = sec > 0 ? sec - 1 : 0;
	bool first = true;
	fprintf(f, "[%3us]", sec);
	if (r->nroute)
		progress_group(f, "route", r->route, r->nroute, -1, &t, &first);
	if (r->have_load) {
		uint32_t tl = t;
		progress_group(f, r->load.st[0].name, &r->load, 1, 0, &tl, &first);
	}
	if (r->have_seed && r->o->scenario == SC_SEED) {
		uint32_t ts = t;
		progress_group(f, "seed", &r->seed, 1, 0, &ts, &first);
	}
	if (first)
		fprintf(f, " waiting for answers");
	fputc('\0', f);
	fclose(f);
	fprintf(stderr, "%s\n", line);
}

/* Measured time of st[p]; p % 2 is its phase. */
static double run_role_wall(const struct engine *e, int p, uint64_t t0)
{
	int phase = p % 2;
	uint64_t from = t0 + (phase == 1 ? e->phase_ns : e->send_from_ns);
	uint64_t to;
	if (e->ended_by_budget || !e->duration_ns)
		to = e->last_answer_ns[p] > from ? e->last_answer_ns[p] : e->window_end_ns;
	else if (phase == 0 && e->phase_ns)
		to = t0 + e->phase_ns;
	else
		to = e->window_end_ns < t0 + e->duration_ns ? e->window_end_ns : t0 + e->duration_ns;
	return to > from ? (double)(to - from) / 1e9 : 0.0;
}

static void run_free(struct run *r)
{
	if (r->have_seed)
		engine_destroy(&r->seed);
	for (uint32_t i = 0; i < r->nroute; i++)
		engine_destroy(&r->route[i]);
	free(r->route);
	if (r->have_load)
		engine_destroy(&r->load);
	if (r->have_hb)
		engine_destroy(&r->hb);
	if (r->have_kv)
		engine_destroy(&r->kv);
	run_free_brokers(r->hb_brokers, r->nhb);
	run_free_brokers(r->seed_brokers, r->nseed);
	run_free_brokers(r->load_brokers, r->nload);
	free(r->ctx.topics);
	free(r->topic_store);
	reqs_route_tpl_free(&r->ctx.tpl);
	bench_tls_ctx_free(r->ctx.tls);
	if (r->merged_init) {
		stats_destroy(&r->merged[0]);
		stats_destroy(&r->merged[1]);
	}
}

/* mixed: the heartbeat brokers and the KV writer, over both phases. */
static int run_start_liveness(struct run *r, uint64_t dur)
{
	const struct bench_opts *o = r->o;
	uint64_t phase = o->no_idle ? 0 : dur / 2;
	int rc = RMQNS_OK;
	if (r->nhb) {
		rc = engine_init(&r->hb, ENG_HEARTBEAT, &r->ctx, 0, r->nhb, r->nhb,
				 o->no_idle ? "heartbeat_storm" : "heartbeat_idle", "heartbeat_storm");
		r->have_hb = true;
		if (!rc)
			engine_second_kind(&r->hb, o->no_idle ? "query_dv_storm" : "query_dv_idle",
					   "query_dv_storm");
		r->hb.brokers = r->hb_brokers;
		r->hb.interval_ns = o->heartbeat_interval_ns;
		r->hb.duration_ns = dur;
		r->hb.phase_ns = phase;
		r->hb.drain_ns = o->timeout_ns;
		if (!rc)
			rc = engine_start(&r->hb);
	}
	if (!rc && o->kv_interval_ns) {
		rc = engine_init(&r->kv, ENG_KV, &r->ctx, 0, 1, 1,
				 o->no_idle ? "kv_put_storm" : "kv_put_idle", "kv_put_storm");
		r->have_kv = true;
		r->kv.interval_ns = o->kv_interval_ns;
		r->kv.duration_ns = dur;
		r->kv.phase_ns = phase;
		r->kv.drain_ns = o->timeout_ns;
		if (!rc)
			rc = engine_start(&r->kv);
	}
	return rc;
}

/* clients: raises the descriptor limit to the hard limit; refuses, with
 * the figure it needs, when that is still too low for the connections. */
static int run_raise_nofile(const struct bench_opts *o)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
		fprintf(stderr, "rmqns-bench: getrlimit: %s\n", strerror(errno));
		return RMQNS_EIO;
	}
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || getrlimit(RLIMIT_NOFILE, &rl) != 0) {
			fprintf(stderr, "rmqns-bench: setrlimit: %s\n", strerror(errno));
			return RMQNS_EIO;
		}
	}
	/* the connections, the seeded and storm brokers', and a few of the bench's own */
	unsigned long long need = (unsigned long long)o->conns + o->brokers +
				  (o->storm_given ? o->storm_brokers : 0) + 64;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
		fprintf(stderr, "rmqns-bench: %u connections need about %llu descriptors, but the "
			"hard limit (RLIMIT_NOFILE) is %llu: raise it (ulimit -Hn as root, prlimit "
			"--nofile, LimitNOFILE=) or ask for fewer connections\n", o->conns, need,
			(unsigned long long)rl.rlim_cur);
		return RMQNS_ETOOBIG;
	}
	return RMQNS_OK;
}

/* clients: the server's figures before any connection, the connections
 * opened at the ramp's rate, then the server's figures with them open. */
static int run_start_clients(struct run *r, struct procstat *before, struct procstat *connected,
			     bool *have_server, uint64_t *t_before)
{
	const struct bench_opts *o = r->o;
	if (o->pid) {
		int rc = procstat_read(o->pid, before);
		if (rc)
			fprintf(stderr, "rmqns-bench: --pid %ld: %s\n", (long)o->pid, rmqns_strerror(rc));
		*have_server = rc == RMQNS_OK;
		*t_before = bench_now_ns();
		uint64_t soft;
		if (procstat_read_nofile(o->pid, &soft) == RMQNS_OK && soft < (uint64_t)o->conns + 64)
			fprintf(stderr, "rmqns-bench: warning: the server (pid %ld) may open %llu "
				"descriptors: it cannot hold %u connections\n", (long)o->pid,
				(unsigned long long)soft, o->conns);
	}
	r->route = calloc(o->threads, sizeof(*r->route));
	if (!r->route)
		return RMQNS_ENOMEM;
	int rc = RMQNS_OK;
	uint32_t first = 0;
	for (uint32_t i = 0; !rc && i < o->threads; i++) {
		uint32_t n = o->conns / o->threads + (i < o->conns % o->threads ? 1 : 0);
		struct engine *e = &r->route[i];
		rc = engine_init(e, ENG_CLIENTS, &r->ctx, first, n, o->conns, "route", NULL);
		r->nroute = i + 1;
		first += n;
		e->depth = o->topics_per_client;
		e->duration_ns = o->duration_ns;
		e->drain_ns = o->timeout_ns;
		e->keep_fds = true; /* the server's RSS at the end is read with them open */
		if (!rc)
			rc = engine_start(e);
	}
	for (uint32_t i = 0; !rc && i < r->nroute; i++)
		rc = run_wait_ready(&r->route[i], "connecting");
	if (rc)
		return rc;
	unsigned long long ok = 0, failed = 0;
	for (uint32_t i = 0; i < r->nroute; i++) {
		ok += r->route[i].established;
		failed += r->route[i].connect_failed;
	}
	if (o->progress != 0)
		fprintf(stderr, "opened %llu of %u connections (%llu failed)\n", ok, o->conns, failed);
	if (*have_server && procstat_read(o->pid, connected) != RMQNS_OK) {
		fprintf(stderr, "rmqns-bench: --pid %ld: the process is gone\n", (long)o->pid);
		*have_server = false;
	}
	return RMQNS_OK;
}

/* clients: what the engines counted, into the report's figures. */
static void run_clients_figures(const struct run *r, struct report_clients *x)
{
	const struct bench_opts *o = r->o;
	memset(x, 0, sizeof(*x));
	x->connections = o->conns;
	x->sources = o->nsources;
	uint64_t start = UINT64_MAX, ready = 0;
	for (uint32_t i = 0; i < r->nroute; i++) {
		const struct engine *e = &r->route[i];
		x->established += e->established;
		x->failed += e->connect_failed;
		if (e->connect_errno && !x->failed_why)
			x->failed_why = strerror(e->connect_errno);
		x->reconnects += e->reconnects;
		x->churned += e->churned;
		x->refreshes += e->refreshes;
		x->refreshes_late += e->refreshes_late;
		x->open_at_end += e->open_at_end;
		if (e->ramp_start_ns && e->ramp_start_ns < start)
			start = e->ramp_start_ns;
		if (e->t_ready_ns > ready)
			ready = e->t_ready_ns;
	}
	x->ramp_s = start != UINT64_MAX && ready > start ? (double)(ready - start) / 1e9 : 0.0;
}

static int run_scenario(struct bench_opts *o)
{
	struct run r;
	memset(&r, 0, sizeof(r));
	r.o = o;
	r.ctx.o = o;
	int rc = run_resolve_addr(o->addr, &r.ctx.addr, &r.ctx.addr_len);
	if (!rc)
		rc = run_addr_host(o->addr, r.ctx.host, sizeof r.ctx.host);
	if (rc) {
		fprintf(stderr, "rmqns-bench: cannot resolve --addr %s\n", o->addr);
		return 2;
	}
	if (o->storm_addr[0] && run_resolve_addr(o->storm_addr, &r.storm_addr, &r.storm_addr_len)) {
		fprintf(stderr, "rmqns-bench: cannot resolve --storm-addr %s\n", o->storm_addr);
		return 2;
	}
	char tls_err[256];
	if (bench_tls_ctx_new(o, &r.ctx.tls, tls_err, sizeof(tls_err))) {
		fprintf(stderr, "rmqns-bench: %s\n", tls_err);
		return 2;
	}
	bool clients = o->scenario == SC_CLIENTS;
	bool routes = o->scenario == SC_ROUTE || o->scenario == SC_MIXED || o->scenario == SC_CHURN ||
		      clients;
	/* mixed always storms; clients when asked to */
	bool storm = o->scenario == SC_MIXED || (clients && o->storm_given);
	if (clients && run_raise_nofile(o) != RMQNS_OK) {
		run_free(&r);
		return 2;
	}
	bool seeding = o->scenario == SC_SEED || (routes && !o->no_seed);
	rc = reqs_route_tpl_init(&r.ctx.tpl, o->version, o->serialize);
	if (!rc && routes)
		rc = run_build_topics(&r);
	if (!rc && seeding) {
		r.nseed = o->brokers;
		rc = run_build_brokers(o, &r.seed_brokers, r.nseed, o->broker_prefix, o->topic_prefix,
				       o->layout, o->broker_topics, false, 0);
	}
	if (!rc && o->scenario == SC_REGISTER) {
		r.nload = o->brokers;
		rc = run_build_brokers(o, &r.load_brokers, r.nload, o->broker_prefix, o->topic_prefix,
				       o->layout, o->broker_topics, o->dv_change, 0);
	}
	if (!rc && storm) {
		char bp[96], tp[96];
		snprintf(bp, sizeof(bp), "%s-storm", o->broker_prefix);
		snprintf(tp, sizeof(tp), "%sStorm", o->topic_prefix);
		r.nload = o->storm_brokers;
		rc = run_build_brokers(o, &r.load_brokers, r.nload, bp, tp, LAYOUT_DISTINCT,
				       o->storm_topics, true, o->brokers);
		if (!rc && o->heartbeats) {
			snprintf(bp, sizeof(bp), "%s-hb", o->broker_prefix);
			snprintf(tp, sizeof(tp), "%sHb", o->topic_prefix);
			r.nhb = o->heartbeats;
			rc = run_build_brokers(o, &r.hb_brokers, r.nhb, bp, tp, LAYOUT_DISTINCT,
					       RUN_HEARTBEAT_TOPICS, false, o->brokers + o->storm_brokers);
		}
	}
	if (rc) {
		if (rc != RMQNS_ETOOBIG)
			fprintf(stderr, "rmqns-bench: setup failed: %s\n", rmqns_strerror(rc));
		run_free(&r);
		return 2;
	}

	int exit_code = 0;
	struct procstat before = { 0 }, after = { 0 };
	bool have_server = false;
	uint64_t t_before = 0, t_after = 0;
	/* the seed scenario measures the registrations themselves: the server's
	 * figures start before them; the others start after seeding */
	if (o->pid && o->scenario == SC_SEED) {
		rc = procstat_read(o->pid, &before);
		if (rc)
			fprintf(stderr, "rmqns-bench: --pid %ld: %s\n", (long)o->pid, rmqns_strerror(rc));
		have_server = rc == RMQNS_OK;
		t_before = bench_now_ns();
		rc = RMQNS_OK;
	}
	/* 1. seed */
	uint64_t t_seed = bench_now_ns();
	if (seeding) {
		rc = engine_init(&r.seed, ENG_SEED, &r.ctx, 0, r.nseed, r.nseed, "seed", NULL);
		r.have_seed = true;
		r.seed.brokers = r.seed_brokers;
		if (!rc)
			rc = engine_start(&r.seed);
		if (!rc)
			rc = run_wait_ready(&r.seed, "seeding brokers");
		if (rc) {
			engine_stop(&r.seed);
			engine_join(&r.seed);
			run_free(&r);
			return 1;
		}
		r.seed_s = (double)(r.seed.t_ready_ns - t_seed) / 1e9;
		if (o->progress != 0 && o->scenario != SC_SEED)
			fprintf(stderr, "seeded %u brokers x %u topics in %.2f s\n", r.nseed,
				o->broker_topics, r.seed_s);
	}
	/* 2. the load */
	uint64_t dur = o->duration_ns;
	struct procstat connected = { 0 };
	if (clients)
		rc = run_start_clients(&r, &before, &connected, &have_server, &t_before);
	if (o->scenario == SC_ROUTE || o->scenario == SC_MIXED) {
		r.nroute = o->threads;
		r.route = calloc(r.nroute, sizeof(*r.route));
		if (!r.route)
			rc = RMQNS_ENOMEM;
		uint32_t first = 0;
		for (uint32_t i = 0; !rc && i < r.nroute; i++) {
			uint32_t n = o->conns / r.nroute + (i < o->conns % r.nroute ? 1 : 0);
			bool mixed = o->scenario == SC_MIXED;
			const char *n0 = mixed ? (o->no_idle ? "route_storm" : "route_idle") : "route";
			struct engine *e = &r.route[i];
			rc = engine_init(e, ENG_ROUTE, &r.ctx, first, n, o->conns, n0, "route_storm");
			first += n;
			e->depth = o->depth;
			e->rate = o->rate;
			e->warmup_ns = o->warmup_ns;
			e->duration_ns = dur;
			e->drain_ns = o->timeout_ns;
			if (mixed && !o->no_idle)
				e->phase_ns = dur / 2;
			if (o->requests)
				e->budget = o->requests / r.nroute + (i < o->requests % r.nroute ? 1 : 0);
			if (!rc)
				rc = engine_start(e);
		}
	}
	if (!rc && (o->scenario == SC_REGISTER || storm)) {
		/* the address aside, the storm's context is the run's */
		r.storm_ctx = r.ctx;
		if (r.storm_addr_len) {
			r.storm_ctx.addr = r.storm_addr;
			r.storm_ctx.addr_len = r.storm_addr_len;
			(void)run_addr_host(o->storm_addr, r.storm_ctx.host, sizeof r.storm_ctx.host);
		}
		rc = engine_init(&r.load, ENG_REGISTER, &r.storm_ctx, 0, r.nload, r.nload,
				 storm ? "register_storm" : "register", NULL);
		r.have_load = true;
		r.load.brokers = r.load_brokers;
		r.load.duration_ns = dur;
		if (storm) {
			r.load.send_from_ns = o->no_idle || clients ? 0 : dur / 2;
		} else {
			r.load.warmup_ns = o->warmup_ns;
			r.load.drain_ns = o->reg_timeout_ns;
			if (o->requests)
				r.load.budget = o->requests;
		}
		if (!rc)
			rc = engine_start(&r.load);
	}
	if (!rc && o->scenario == SC_MIXED)
		rc = run_start_liveness(&r, dur);
	if (!rc && o->scenario == SC_CHURN) {
		rc = engine_init(&r.load, ENG_CHURN, &r.ctx, 0, o->conns, o->conns, "churn", NULL);
		r.have_load = true;
		r.load.warmup_ns = o->warmup_ns;
		r.load.duration_ns = dur;
		r.load.drain_ns = o->timeout_ns;
		if (o->requests)
			r.load.budget = o->requests;
		if (!rc)
			rc = engine_start(&r.load);
	}
	for (uint32_t i = 0; !rc && i < r.nroute; i++)
		rc = run_wait_ready(&r.route[i], "connecting");
	if (!rc && r.have_load)
		rc = run_wait_ready(&r.load, o->scenario == SC_CHURN ? "churn" : "first registrations");
	if (!rc && r.have_hb)
		rc = run_wait_ready(&r.hb, "heartbeat brokers");
	if (!rc && r.have_kv)
		rc = run_wait_ready(&r.kv, "kv connection");
	if (rc) {
		exit_code = 1;
		goto stop;
	}

	/* 3. go */
	if (o->pid && o->scenario != SC_SEED && !clients) {
		rc = procstat_read(o->pid, &before);
		if (rc)
			fprintf(stderr, "rmqns-bench: --pid %ld: %s\n", (long)o->pid, rmqns_strerror(rc));
		have_server = rc == RMQNS_OK;
		t_before = bench_now_ns();
	} else if (clients && have_server) {
		/* the server's CPU counts from here; its RSS from before the connections */
		struct procstat go;
		if (procstat_read(o->pid, &go) == RMQNS_OK) {
			before.cpu_s = go.cpu_s;
			before.user_s = go.user_s;
			before.sys_s = go.sys_s;
			t_before = bench_now_ns();
		}
	}
	r.t0 = bench_now_ns() + 20000000ull + o->warmup_ns;
	if (r.have_seed)
		engine_go(&r.seed, r.t0);
	for (uint32_t i = 0; i < r.nroute; i++)
		engine_go(&r.route[i], r.t0);
	if (r.have_load)
		engine_go(&r.load, r.t0);
	if (r.have_hb)
		engine_go(&r.hb, r.t0);
	if (r.have_kv)
		engine_go(&r.kv, r.t0);

	bool show = o->progress == 1 || (o->progress == -1 && isatty(STDERR_FILENO));
	uint32_t sec = 1;
	for (;;) {
		bool done;
		if (o->scenario == SC_SEED)
			done = bench_now_ns() >= r.t0 + dur || engine_state(&r.seed) == ENG_FAILED;
		else
			done = group_done(r.route, r.nroute) && (storm || !r.have_load ||
								 group_done(&r.load, 1)) &&
			       (!r.have_hb || group_done(&r.hb, 1)) && (!r.have_kv || group_done(&r.kv, 1));
		if (done)
			break;
		if (bench_interrupted) {
			run_each_engine(&r, false, engine_stop);
			if (r.have_seed && o->scenario == SC_SEED)
				break;
		}
		uint64_t now = bench_now_ns();
		uint64_t next = r.t0 + sec * NS_PER_S + 100000000ull;
		if (now >= next) {
			if (show)
				progress_print(&r, sec);
			sec++;
			continue;
		}
		uint64_t nap = next - now;
		run_sleep_ns(nap > 20000000ull ? 20000000ull : nap);
	}
	t_after = bench_now_ns();
	if (have_server && procstat_read(o->pid, &after) != RMQNS_OK) {
		fprintf(stderr, "rmqns-bench: --pid %ld: the process is gone\n", (long)o->pid);
		have_server = false;
	}

stop:
	if (!t_after) /* reached by the early exit too */
		t_after = bench_now_ns();
	run_each_engine(&r, true, engine_stop);
	run_each_engine(&r, true, engine_join);
	if (exit_code) {
		run_free(&r);
		return exit_code;
	}
	for (uint32_t i = 0; i < r.nroute; i++)
		if (engine_state(&r.route[i]) == ENG_FAILED) {
			fprintf(stderr, "rmqns-bench: %s\n", r.route[i].fail_msg);
			exit_code = 1;
		}
	/* the other engines, each named in its failure */
	const struct {
		bool have;
		struct engine *e;
		const char *what;
	} others[] = {
		{ r.have_load, &r.load, "" },
		{ r.have_hb, &r.hb, "heartbeats: " },
		{ r.have_kv, &r.kv, "kv: " },
		{ r.have_seed, &r.seed, "seed: " },
	};
	for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
		if (others[i].have && engine_state(others[i].e) == ENG_FAILED) {
			fprintf(stderr, "rmqns-bench: %s%s\n", others[i].what, others[i].e->fail_msg);
			exit_code = 1;
		}

	/* 4. report */
	struct report rep;
	memset(&rep, 0, sizeof(rep));
	rep.opts = o;
	rep.scenario = opts_scenario_name(o->scenario);
	rep.target = o->addr;
	if (seeding && o->scenario != SC_SEED) {
		rep.seed_brokers = r.nseed;
		rep.seed_topics = o->broker_topics;
		rep.seed_s = r.seed_s;
	}
	if (r.nroute) {
		stats_init(&r.merged[0], r.route[0].st[0].name, o->rate > 0);
		stats_init(&r.merged[1], "route_storm", o->rate > 0);
		r.merged_init = true;
		double wall[2] = { 0, 0 };
		for (uint32_t i = 0; i < r.nroute; i++) {
			for (int p = 0; p < 2; p++) {
				if (stats_merge(&r.merged[p], &r.route[i].st[p]))
					exit_code = 1;
				double w = run_role_wall(&r.route[i], p, r.t0);
				if (w > wall[p])
					wall[p] = w;
			}
		}
		report_add_role(&rep, r.merged[0].name, &r.merged[0], wall[0]);
		if (r.route[0].phase_ns)
			report_add_role(&rep, "route_storm", &r.merged[1], wall[1]);
	}
	if (r.have_load)
		report_add_role(&rep, r.load.st[0].name, &r.load.st[0], run_role_wall(&r.load, 0, r.t0));
	struct engine *paced[2] = { r.have_hb ? &r.hb : NULL, r.have_kv ? &r.kv : NULL };
	for (int k = 0; k < 2; k++) {
		struct engine *e = paced[k];
		for (uint32_t p = 0; e && p < e->nstats; p++)
			if (p % 2 == 0 || e->phase_ns)
				report_add_role(&rep, e->st[p].name, &e->st[p], run_role_wall(e, (int)p, r.t0));
	}
	if (o->scenario == SC_SEED)
		report_add_role(&rep, "seed", &r.seed.st[0], (double)(t_after - t_seed) / 1e9);
	struct report_clients clients_fig;
	if (clients) {
		run_clients_figures(&r, &clients_fig);
		clients_fig.have_rss = have_server && connected.rss_kb;
		clients_fig.rss_kb_before = before.rss_kb;
		clients_fig.rss_kb_connected = connected.rss_kb;
		clients_fig.rss_kb_after = after.rss_kb;
		rep.clients = &clients_fig;
		if (clients_fig.failed)
			exit_code = 1; /* a connection that never opened is an error of the run */
	}
	if (have_server) {
		rep.have_server = true;
		rep.pid = (long)o->pid;
		rep.before = before;
		rep.after = after;
		rep.server_wall_s = (double)(t_after - t_before) / 1e9;
	}
	if (run_output(o, &rep))
		exit_code = exit_code ? exit_code : 1;
	for (size_t i = 0; i < rep.nroles; i++)
		if (stats_errors(rep.roles[i].st) || rep.roles[i].st->ok == 0)
			exit_code = 1;
	run_free(&r);
	return bench_interrupted && !exit_code ? 130 : exit_code;
}

static int run_startup(struct bench_opts *o)
{
	struct sockaddr_storage addr;
	socklen_t len;
	if (run_resolve_addr(o->addr, &addr, &len)) {
		fprintf(stderr, "rmqns-bench: cannot resolve --addr %s\n", o->addr);
		return 2;
	}
	double *ms = calloc(o->runs, sizeof(double));
	if (!ms)
		return 1;
	unsigned long long rss = 0;
	char err[256] = "";
	int rc = startup_run(o, &addr, len, ms, &rss, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "rmqns-bench: startup: %s\n", err);
		free(ms);
		return 1;
	}
	struct report rep;
	memset(&rep, 0, sizeof(rep));
	rep.opts = o;
	rep.scenario = "startup";
	rep.target = o->addr;
	rep.startup_ms = ms;
	rep.nstartup = o->runs;
	rep.have_startup_rss = rss != 0;
	rep.startup_rss_kb = rss;
	rc = run_output(o, &rep);
	free(ms);
	return rc ? 1 : 0;
}

static int run_ratio(struct bench_opts *o)
{
	size_t n = o->ratio_na + o->ratio_nb;
	json_t **docs = calloc(n, sizeof(json_t *));
	if (!docs)
		return 1;
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		const char *path = i < o->ratio_na ? o->ratio_a[i] : o->ratio_b[i - o->ratio_na];
		json_error_t jerr;
		docs[i] = json_load_file(path, 0, &jerr);
		if (!docs[i]) {
			fprintf(stderr, "rmqns-bench: %s: %s\n", path, jerr.text);
			rc = 2;
		}
	}
	if (!rc)
		rc = report_print_ratio(stdout, docs, o->ratio_na, docs + o->ratio_na, o->ratio_nb, "A",
					"B") ? 1 : 0;
	for (size_t i = 0; i < n; i++)
		json_decref(docs[i]);
	free(docs);
	return rc;
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	bool help;
	char err[256];
	if (opts_parse(argc, argv, &o, &help, err, sizeof(err))) {
		fprintf(stderr, "rmqns-bench: %s\n", err);
		return 2;
	}
	if (help) {
		opts_usage(stdout);
		return 0;
	}
	reqs_set_credentials(o.access_key, o.secret_key);
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	switch (o.scenario) {
	case SC_RATIO:
		return run_ratio(&o);
	case SC_STARTUP:
		return run_startup(&o);
	case SC_DISCONNECT:
		return disconnect_run(&o);
	case SC_CONTROLLER:
		return failover_run(&o);
	default:
		return run_scenario(&o);
	}
}
