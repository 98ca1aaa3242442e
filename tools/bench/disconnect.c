/* rmqns-bench `disconnect`. B brokers x T topics register, each on a
 * connection of its own (the server removes a broker when the connection of
 * its latest registration closes). A witness broker registers too and stays;
 * a route engine queries its topics in a small closed loop. After a second
 * of that, the B connections are closed back to back, and this thread, until
 * every route is gone and --measure-for has passed since the closes (the
 * server may go on removing the tables after the routes are gone):
 *   - polls GET_BROKER_CLUSTER_INFO (106) every --poll-interval until none
 *     of the B brokers is listed, then asks GET_ROUTEINFO_BY_TOPIC (105) for
 *     the first, middle and last topic of each, until all answer 17;
 *   - keeps one REGISTER_BROKER of a fresh broker with 100 topics in flight,
 *     the first sent right after the closes, the next as each is answered.
 * The route queries sent in that time are the "during" figures, those of
 * the second before the closes the "before" ones. */
#include "disconnect.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rmqns/buf.h"
#include "rmqns/err.h"
#include "rmqns/remoting.h"
#include "engine.h"
#include "procstat.h"
#include "report.h"
#include "reqs.h"
#include "run.h"
#include "stats.h"

#define NS_PER_MS 1000000ull
#define DC_FRESH_TOPICS 100
#define DC_WITNESS_TOPICS 100
#define DC_SAMPLES 3                      /* topics of each broker checked */
#define DC_BASELINE_NS 1000000000ull      /* route queries before the closes */
#define DC_KEEP_EACH 10000                /* registration latencies kept in order */
#define DC_CONNECT_MS 3000
#define DC_READ_CHUNK 65536u

/* ---- a plain client connection, driven by this thread ---- */

struct dc_conn {
	int fd;
	struct buf out;
	size_t out_off;
	struct buf in;
	bool failed;
};

static int dc_connect(struct dc_conn *c, const struct sockaddr_storage *addr, socklen_t len)
{
	memset(c, 0, sizeof(*c));
	c->fd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return RMQNS_EIO;
	int one = 1;
	(void)setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c->fd, (const struct sockaddr *)addr, len) != 0) {
		if (errno != EINPROGRESS)
			return RMQNS_EIO;
		struct pollfd p = { .fd = c->fd, .events = POLLOUT };
		int e = 0;
		socklen_t l = sizeof(e);
		if (poll(&p, 1, DC_CONNECT_MS) <= 0 ||
		    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &l) != 0 || e != 0)
			return RMQNS_EIO;
	}
	return RMQNS_OK;
}

static void dc_close(struct dc_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	buf_free(&c->out);
	buf_free(&c->in);
}

static bool dc_pending_out(const struct dc_conn *c)
{
	return c->out_off < c->out.len;
}

static void dc_flush(struct dc_conn *c)
{
	while (!c->failed && dc_pending_out(c)) {
		ssize_t n = send(c->fd, c->out.data + c->out_off, c->out.len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			c->failed = true;
			return;
		}
		c->out_off += (size_t)n;
	}
	if (!dc_pending_out(c))
		c->out.len = c->out_off = 0;
}

typedef void (*dc_answer_fn)(void *ctx, const struct remoting_cmd *cmd, size_t frame_size,
			     uint64_t now);

/* Reads what is there and hands every whole answer to fn. */
static void dc_read(struct dc_conn *c, dc_answer_fn fn, void *ctx)
{
	if (c->failed)
		return;
	if (buf_reserve(&c->in, DC_READ_CHUNK)) {
		c->failed = true;
		return;
	}
	ssize_t n = read(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		c->failed = true;
		return;
	}
	c->in.len += (size_t)n;
	uint64_t now = bench_now_ns();
	size_t off = 0;
	for (;;) {
		size_t fs;
		int rc = remoting_frame_cut(c->in.data + off, c->in.len - off, REMOTING_DEFAULT_MAX_FRAME,
					    &fs);
		if (rc == RMQNS_EAGAIN)
			break;
		struct remoting_cmd cmd;
		if (rc || remoting_decode(c->in.data + off, fs, &cmd) != RMQNS_OK) {
			c->failed = true;
			return;
		}
		if (remoting_is_response(&cmd))
			fn(ctx, &cmd, fs, now);
		remoting_cmd_release(&cmd);
		off += fs;
	}
	buf_consume(&c->in, off);
}

/* ---- the look at whether the brokers and their routes are there ---- */

enum dc_look { LOOK_PRESENT, LOOK_GONE };
enum dc_round { ROUND_IDLE, ROUND_CLUSTER, ROUND_ROUTES };

struct dc_poll {
	struct dc_conn c;
	const struct bench_opts *o;
	const struct reqs_route_tpl *tpl;
	const struct reqs_broker *brokers;  /* the ones that disconnect */
	uint32_t nbrokers;
	enum dc_look want;
	enum dc_round state;
	int32_t next_opaque;
	int32_t cluster_opaque;
	int32_t routes_base;
	uint32_t routes_pending, routes_ok, routes_17, routes_other;
	uint32_t listed;                    /* brokers in the last 106 answer */
	uint64_t round_start;
	/* results */
	bool done;                          /* the last round saw what was wanted */
	bool done_brokers;                  /* a 106 answer listed none of them */
	uint64_t brokers_gone_ns, done_ns;
	unsigned polls, route_checks;
	unsigned errors;                    /* answers with an unexpected code */
};

static uint32_t dc_samples(const struct bench_opts *o)
{
	return o->broker_topics < DC_SAMPLES ? o->broker_topics : DC_SAMPLES;
}

static uint32_t dc_sample_topic(const struct bench_opts *o, uint32_t k)
{
	uint32_t t = o->broker_topics;
	return k == 0 ? 0 : k == 1 ? t / 2 : t - 1;
}

static void dc_round_start(struct dc_poll *p, uint64_t now)
{
	p->cluster_opaque = p->next_opaque++;
	if (reqs_simple_append(REQ_GET_BROKER_CLUSTER_INFO, p->cluster_opaque, p->o->version,
			       p->o->serialize, &p->c.out)) {
		p->c.failed = true;
		return;
	}
	p->state = ROUND_CLUSTER;
	p->round_start = now;
	p->polls++;
}

static void dc_send_samples(struct dc_poll *p)
{
	char topic[REQS_NAME_MAX];
	uint32_t ns = dc_samples(p->o);
	p->routes_base = p->next_opaque;
	p->routes_pending = p->routes_ok = p->routes_17 = p->routes_other = 0;
	for (uint32_t b = 0; b < p->nbrokers; b++)
		for (uint32_t k = 0; k < ns; k++) {
			if (reqs_topic_name(topic, sizeof(topic), p->o->topic_prefix, p->o->layout, b,
					    dc_sample_topic(p->o, k)) ||
			    reqs_route_append(p->tpl, topic, p->next_opaque++, &p->c.out)) {
				p->c.failed = true;
				return;
			}
			p->routes_pending++;
		}
	p->state = ROUND_ROUTES;
	p->route_checks++;
}

static uint32_t dc_listed(const struct dc_poll *p, const struct remoting_cmd *cmd)
{
	uint32_t n = 0;
	char needle[REQS_NAME_MAX + 4];
	for (uint32_t i = 0; i < p->nbrokers && cmd->body; i++) {
		int k = snprintf(needle, sizeof(needle), "\"%s\"", p->brokers[i].name);
		if (memmem(cmd->body, cmd->body_len, needle, (size_t)k))
			n++;
	}
	return n;
}

static void dc_round_end(struct dc_poll *p, bool seen, uint64_t now)
{
	p->state = ROUND_IDLE;
	if (seen) {
		p->done = true;
		p->done_ns = now;
	}
}

static void dc_poll_answer(void *ctx, const struct remoting_cmd *cmd, size_t frame_size,
			   uint64_t now)
{
	(void)frame_size;
	struct dc_poll *p = ctx;
	if (p->state == ROUND_CLUSTER && cmd->opaque == p->cluster_opaque) {
		if (cmd->code != 0) {
			p->errors++;
			dc_round_end(p, false, now);
			return;
		}
		p->listed = dc_listed(p, cmd);
		if (p->want == LOOK_GONE && p->listed == 0 && !p->done_brokers) {
			p->done_brokers = true;
			p->brokers_gone_ns = now;
		}
		bool listed_ok = p->want == LOOK_PRESENT ? p->listed == p->nbrokers : p->listed == 0;
		if (!listed_ok)
			dc_round_end(p, false, now);
		else
			dc_send_samples(p);
		return;
	}
	if (p->state != ROUND_ROUTES || cmd->opaque < p->routes_base ||
	    cmd->opaque >= p->routes_base + (int32_t)(dc_samples(p->o) * p->nbrokers))
		return; /* an answer of a round already given up */
	if (cmd->code == RSP_SUCCESS)
		p->routes_ok++;
	else if (cmd->code == RSP_TOPIC_NOT_EXIST)
		p->routes_17++;
	else
		p->routes_other++;
	if (--p->routes_pending)
		return;
	uint32_t all = dc_samples(p->o) * p->nbrokers;
	if (p->routes_other)
		p->errors += p->routes_other;
	dc_round_end(p, p->want == LOOK_PRESENT ? p->routes_ok == all : p->routes_17 == all, now);
}

/* ---- the fresh broker's registrations ---- */

struct dc_fresh {
	struct dc_conn c;
	const struct reqs_broker *b;
	struct stats st;
	bool busy;
	int32_t opaque;
	uint32_t variant;
	uint64_t sent_ns;
	double *each_ms;
	size_t neach;
	unsigned long long count;
	uint64_t t0;          /* the route engine's time origin: one time axis */
	uint32_t next_second; /* of the timeline (no engine closes its seconds) */
};

static void dc_fresh_send(struct dc_fresh *f, uint64_t now)
{
	f->opaque++;
	size_t before = f->c.out.len;
	if (reqs_register_append(f->b, f->variant, f->opaque, &f->c.out)) {
		f->c.failed = true;
		return;
	}
	f->st.sent++;
	f->st.bytes_out += f->c.out.len - before;
	f->busy = true;
	f->sent_ns = now;
}

static void dc_fresh_answer(void *ctx, const struct remoting_cmd *cmd, size_t frame_size,
			    uint64_t now)
{
	struct dc_fresh *f = ctx;
	if (!f->busy || cmd->opaque != f->opaque)
		return;
	uint64_t lat = now > f->sent_ns ? now - f->sent_ns : 0;
	if (stats_advance(&f->st, f->t0, now, &f->next_second, false))
		f->c.failed = true;
	stats_record_answer(&f->st, cmd->code, lat, 0);
	f->st.bytes_in += frame_size;
	if (f->neach < DC_KEEP_EACH)
		f->each_ms[f->neach++] = (double)lat / 1e6;
	f->count++;
	f->busy = false;
	f->variant = 1 - f->variant; /* a new data version each time */
}

/* ---- the scenario ---- */

struct dc_run {
	const struct bench_opts *o;
	struct bench_ctx ctx;          /* the route engine's: the witness topics */
	char *topic_store;
	struct reqs_broker *brokers;   /* the B that disconnect */
	struct reqs_broker *witness;   /* stays */
	struct reqs_broker *fresh;     /* registers during the removal */
	struct engine seed, stay, route;
	bool have_seed, have_stay, have_route;
	struct dc_poll poll;
	struct dc_fresh fr;
	bool have_poll, have_fresh, have_stats;
	uint64_t measure_until; /* registrations and queries go on until then */
	unsigned poll_errors;
	double seed_s;
	struct report_disconnect res;
};

static int dc_build(struct dc_run *d)
{
	const struct bench_opts *o = d->o;
	char bp[96], tp[96];
	int rc = run_build_brokers(o, &d->brokers, o->brokers, o->broker_prefix, o->topic_prefix,
				   o->layout, o->broker_topics, false, 0);
	if (rc)
		return rc;
	snprintf(bp, sizeof(bp), "%s-witness", o->broker_prefix);
	snprintf(tp, sizeof(tp), "%sWitness", o->topic_prefix);
	rc = run_build_brokers(o, &d->witness, 1, bp, tp, LAYOUT_DISTINCT, DC_WITNESS_TOPICS, false,
			       o->brokers);
	if (rc)
		return rc;
	snprintf(bp, sizeof(bp), "%s-fresh", o->broker_prefix);
	snprintf(tp, sizeof(tp), "%sFresh", o->topic_prefix);
	rc = run_build_brokers(o, &d->fresh, 1, bp, tp, LAYOUT_DISTINCT, DC_FRESH_TOPICS, true,
			       o->brokers + 1);
	if (rc)
		return rc;
	/* the route engine cycles over the witness's topics */
	d->ctx.topics = calloc(DC_WITNESS_TOPICS, sizeof(char *));
	d->topic_store = malloc((size_t)DC_WITNESS_TOPICS * REQS_NAME_MAX);
	if (!d->ctx.topics || !d->topic_store)
		return RMQNS_ENOMEM;
	snprintf(tp, sizeof(tp), "%sWitness", o->topic_prefix);
	for (uint32_t t = 0; t < DC_WITNESS_TOPICS; t++) {
		char *dst = d->topic_store + (size_t)t * REQS_NAME_MAX;
		rc = reqs_topic_name(dst, REQS_NAME_MAX, tp, LAYOUT_DISTINCT, 0, t);
		if (rc)
			return rc;
		d->ctx.topics[t] = dst;
	}
	d->ctx.ntopics = DC_WITNESS_TOPICS;
	d->fr.each_ms = calloc(DC_KEEP_EACH, sizeof(double));
	if (!d->fr.each_ms)
		return RMQNS_ENOMEM;
	return reqs_route_tpl_init(&d->ctx.tpl, o->version, o->serialize);
}

static void dc_free(struct dc_run *d)
{
	if (d->have_route)
		engine_destroy(&d->route);
	if (d->have_stay)
		engine_destroy(&d->stay);
	if (d->have_seed)
		engine_destroy(&d->seed);
	if (d->have_poll)
		dc_close(&d->poll.c);
	if (d->have_fresh)
		dc_close(&d->fr.c);
	if (d->have_stats)
		stats_destroy(&d->fr.st);
	run_free_brokers(d->brokers, d->o->brokers);
	run_free_brokers(d->witness, 1);
	run_free_brokers(d->fresh, 1);
	free(d->fr.each_ms);
	free(d->ctx.topics);
	free(d->topic_store);
	reqs_route_tpl_free(&d->ctx.tpl);
}

/* Seeds the B brokers and the witness, connects the route engine, the
 * poll and the fresh broker's connections. */
static int dc_setup(struct dc_run *d)
{
	const struct bench_opts *o = d->o;
	uint64_t t_seed = bench_now_ns();
	int rc = engine_init(&d->seed, ENG_SEED, &d->ctx, 0, o->brokers, o->brokers, "seed", NULL);
	d->have_seed = true;
	d->seed.brokers = d->brokers;
	d->seed.keep_fds = true; /* closed here, back to back */
	if (!rc)
		rc = engine_start(&d->seed);
	if (!rc)
		rc = engine_init(&d->stay, ENG_SEED, &d->ctx, 0, 1, 1, "witness", NULL);
	d->have_stay = true;
	d->stay.brokers = d->witness;
	if (!rc)
		rc = engine_start(&d->stay);
	if (!rc)
		rc = run_wait_ready(&d->seed, "seeding brokers");
	if (!rc)
		rc = run_wait_ready(&d->stay, "seeding the witness broker");
	if (rc)
		return rc;
	d->seed_s = (double)(d->seed.t_ready_ns - t_seed) / 1e9;
	if (o->progress != 0)
		fprintf(stderr, "seeded %u brokers x %u topics in %.2f s\n", o->brokers, o->broker_topics,
			d->seed_s);
	rc = engine_init(&d->route, ENG_ROUTE, &d->ctx, 0, o->conns, o->conns, "route_before",
			 "route_during");
	d->have_route = true;
	d->route.depth = o->depth;
	d->route.phase_ns = DC_BASELINE_NS;
	d->route.drain_ns = o->timeout_ns;
	if (!rc)
		rc = engine_start(&d->route);
	if (!rc)
		rc = run_wait_ready(&d->route, "connecting");
	if (rc)
		return rc;
	d->have_poll = d->have_fresh = true;
	d->poll.c.fd = d->fr.c.fd = -1;
	if (dc_connect(&d->poll.c, &d->ctx.addr, d->ctx.addr_len) ||
	    dc_connect(&d->fr.c, &d->ctx.addr, d->ctx.addr_len)) {
		fprintf(stderr, "rmqns-bench: cannot connect to %s\n", o->addr);
		return RMQNS_EIO;
	}
	d->poll.o = o;
	d->poll.tpl = &d->ctx.tpl;
	d->poll.brokers = d->brokers;
	d->poll.nbrokers = o->brokers;
	d->poll.next_opaque = 1;
	d->fr.b = d->fresh;
	rc = stats_init(&d->fr.st, "register_fresh", false);
	d->have_stats = rc == RMQNS_OK;
	return rc;
}

enum dc_mode {
	DL_CHECK,    /* one round of the look, nothing else */
	DL_MEASURE,  /* rounds every --poll-interval and registrations back to back, until done */
	DL_DRAIN,    /* only the answer to the registration in flight */
};

/* Drives the poll and fresh connections as the mode says, until the
 * deadline at most. */
static void dc_loop(struct dc_run *d, uint64_t deadline, enum dc_mode mode)
{
	struct dc_poll *p = &d->poll;
	struct dc_fresh *f = &d->fr;
	bool polling = mode != DL_DRAIN;
	for (;;) {
		uint64_t now = bench_now_ns();
		if (bench_interrupted || now >= deadline || p->c.failed || f->c.failed)
			return;
		if (mode == DL_CHECK && p->state == ROUND_IDLE)
			return;
		if (mode == DL_MEASURE && p->done && now >= d->measure_until)
			return;
		if (mode == DL_DRAIN && !f->busy)
			return;
		if (mode == DL_MEASURE && !p->done && p->state == ROUND_IDLE &&
		    now >= p->round_start + d->o->poll_interval_ns)
			dc_round_start(p, now);
		if (mode == DL_MEASURE && !f->busy)
			dc_fresh_send(f, now);
		dc_flush(&p->c);
		dc_flush(&f->c);
		struct pollfd pf[2] = {
			{ .fd = polling ? p->c.fd : -1,
			  .events = POLLIN | (dc_pending_out(&p->c) ? POLLOUT : 0) },
			{ .fd = f->c.fd, .events = POLLIN | (dc_pending_out(&f->c) ? POLLOUT : 0) },
		};
		uint64_t wake = deadline;
		if (mode == DL_MEASURE && p->done && d->measure_until < wake)
			wake = d->measure_until;
		if (mode == DL_MEASURE && !p->done && p->state == ROUND_IDLE) {
			uint64_t due = p->round_start + d->o->poll_interval_ns;
			if (due < wake)
				wake = due;
		}
		uint64_t wait = wake > now ? wake - now : 0;
		struct timespec ts = { .tv_sec = (time_t)(wait / 1000000000ull),
				       .tv_nsec = (long)(wait % 1000000000ull) };
		int n = ppoll(pf, 2, &ts, NULL);
		if (n < 0 && errno != EINTR) {
			p->c.failed = true;
			return;
		}
		if (pf[0].revents & (POLLIN | POLLERR | POLLHUP))
			dc_read(&p->c, dc_poll_answer, p);
		if (pf[1].revents & (POLLIN | POLLERR | POLLHUP))
			dc_read(&f->c, dc_fresh_answer, f);
	}
}

/* Before the closes: every broker is listed and its sampled topics route. */
static int dc_check_present(struct dc_run *d)
{
	struct dc_poll *p = &d->poll;
	p->want = LOOK_PRESENT;
	dc_round_start(p, bench_now_ns());
	dc_loop(d, bench_now_ns() + d->o->reg_timeout_ns, DL_CHECK);
	if (!p->done) {
		fprintf(stderr, "rmqns-bench: before the closes, GET_BROKER_CLUSTER_INFO listed %u of the "
			"%u brokers and %u of %u sampled topics routed; a server that does not report "
			"brokers cannot be measured\n", p->listed, p->nbrokers, p->routes_ok,
			dc_samples(d->o) * p->nbrokers);
		return RMQNS_ECLOSED;
	}
	/* start the measured look afresh: its first round at once */
	p->done = false;
	p->state = ROUND_IDLE;
	p->polls = p->route_checks = p->errors = 0;
	p->round_start = 0;
	p->want = LOOK_GONE;
	return RMQNS_OK;
}

/* What the look saw, taken when the measured window ends. */
static void dc_snapshot(struct dc_run *d, uint64_t t_close)
{
	struct report_disconnect *res = &d->res;
	res->brokers_gone = d->poll.done_brokers;
	res->routes_gone = d->poll.done;
	if (res->brokers_gone)
		res->brokers_gone_ms = (double)(d->poll.brokers_gone_ns - t_close) / 1e6;
	if (res->routes_gone)
		res->routes_gone_ms = (double)(d->poll.done_ns - t_close) / 1e6;
	res->polls = d->poll.polls;
	res->route_checks = d->poll.route_checks;
}

static int dc_report(struct dc_run *d, uint64_t t_close, uint64_t t_end, const struct procstat *before,
		     const struct procstat *after, uint64_t t_before, uint64_t t_after)
{
	const struct bench_opts *o = d->o;
	struct report rep;
	memset(&rep, 0, sizeof(rep));
	rep.opts = o;
	rep.scenario = opts_scenario_name(o->scenario);
	rep.target = o->addr;
	rep.seed_brokers = o->brokers;
	rep.seed_topics = o->broker_topics;
	rep.seed_s = d->seed_s;
	struct report_disconnect *res = &d->res;
	res->brokers = o->brokers;
	res->topics = o->broker_topics;
	res->samples = dc_samples(o);
	res->waited_ms = (double)(t_end - t_close) / 1e6;
	res->fresh_topics = DC_FRESH_TOPICS;
	res->fresh_ms = d->fr.each_ms;
	res->nfresh = d->fr.neach;
	res->fresh_count = d->fr.count;
	rep.disconnect = res;
	report_add_role(&rep, "route_before", &d->route.st[0], (double)DC_BASELINE_NS / 1e9);
	report_add_role(&rep, "route_during", &d->route.st[1], res->waited_ms / 1e3);
	report_add_role(&rep, "register_fresh", &d->fr.st, res->waited_ms / 1e3);
	if (before && after) {
		rep.have_server = true;
		rep.pid = (long)o->pid;
		rep.before = *before;
		rep.after = *after;
		rep.server_wall_s = (double)(t_after - t_before) / 1e9;
	}
	int exit_code = run_output(o, &rep) ? 1 : 0;
	if (!res->routes_gone || d->fr.st.ok == 0 || d->route.st[0].ok == 0 || d->poll_errors)
		exit_code = 1;
	for (size_t i = 0; i < rep.nroles; i++)
		if (stats_errors(rep.roles[i].st))
			exit_code = 1;
	return exit_code;
}

int disconnect_run(const struct bench_opts *o)
{
	struct dc_run d;
	memset(&d, 0, sizeof(d));
	d.o = o;
	d.ctx.o = o;
	d.poll.c.fd = d.fr.c.fd = -1;
	if (run_resolve_addr(o->addr, &d.ctx.addr, &d.ctx.addr_len)) {
		fprintf(stderr, "rmqns-bench: cannot resolve --addr %s\n", o->addr);
		return 2;
	}
	int rc = dc_build(&d);
	if (rc) {
		if (rc != RMQNS_ETOOBIG)
			fprintf(stderr, "rmqns-bench: setup failed: %s\n", rmqns_strerror(rc));
		dc_free(&d);
		return 2;
	}
	int exit_code = 1;
	rc = dc_setup(&d);
	if (!rc)
		rc = dc_check_present(&d);
	if (rc)
		goto stop;

	/* the seed engine hands its connections over; the bodies are not needed again */
	engine_stop(&d.seed);
	engine_join(&d.seed);
	for (uint32_t i = 0; i < o->brokers; i++)
		reqs_broker_free(&d.brokers[i]);

	uint64_t t0 = bench_now_ns() + 20 * NS_PER_MS;
	d.fr.t0 = t0;
	engine_go(&d.route, t0);
	uint64_t now = bench_now_ns();
	if (now < t0 + DC_BASELINE_NS)
		run_sleep_ns(t0 + DC_BASELINE_NS - now);
	struct procstat before, after;
	bool have_before = o->pid && procstat_read(o->pid, &before) == RMQNS_OK;
	uint64_t t_before = bench_now_ns();

	uint64_t first, last;
	d.res.closed = engine_close_conns(&d.seed, &first, &last);
	d.res.close_spread_us = (double)(last - first) / 1e3;
	dc_fresh_send(&d.fr, bench_now_ns()); /* right after the closes */
	d.measure_until = first + o->measure_for_ns;
	dc_loop(&d, first + o->duration_ns, DL_MEASURE);
	uint64_t t_end = bench_now_ns();
	engine_cut(&d.route, t_end);
	dc_snapshot(&d, first);
	d.poll_errors = d.poll.errors;
	/* the registration in flight when the routes went counts too */
	dc_loop(&d, d.fr.sent_ns + o->reg_timeout_ns, DL_DRAIN);
	if (d.fr.busy)
		stats_record_transport(&d.fr.st, STATS_ERR_TIMEOUT, 1);
	if (stats_advance(&d.fr.st, d.fr.t0, bench_now_ns(), &d.fr.next_second, true))
		d.fr.c.failed = true;
	bool have_after = have_before && procstat_read(o->pid, &after) == RMQNS_OK;
	uint64_t t_after = bench_now_ns();
	if (o->progress != 0) {
		if (d.poll.done)
			fprintf(stderr, "closed %u connections in %.1f us; routes gone after %.1f ms\n",
				d.res.closed, d.res.close_spread_us, (double)(d.poll.done_ns - first) / 1e6);
		else
			fprintf(stderr, "closed %u connections; routes still there after %.1f s\n",
				d.res.closed, (double)(t_end - first) / 1e9);
	}
	if (d.poll.c.failed || d.fr.c.failed)
		fprintf(stderr, "rmqns-bench: the server closed a %s connection\n",
			d.poll.c.failed ? "poll" : "registration");
	engine_join(&d.route);
	engine_stop(&d.stay);
	engine_join(&d.stay);
	if (engine_state(&d.route) == ENG_FAILED)
		fprintf(stderr, "rmqns-bench: %s\n", d.route.fail_msg);
	exit_code = dc_report(&d, first, t_end, have_after ? &before : NULL, have_after ? &after : NULL,
			      t_before, t_after);
	if (d.poll.c.failed || d.fr.c.failed || engine_state(&d.route) == ENG_FAILED ||
	    engine_state(&d.stay) == ENG_FAILED)
		exit_code = 1;
	dc_free(&d);
	return bench_interrupted && !exit_code ? 130 : exit_code;
stop:
	if (d.have_seed) {
		engine_stop(&d.seed);
		engine_join(&d.seed);
		uint64_t a, b;
		engine_close_conns(&d.seed, &a, &b);
	}
	if (d.have_route) {
		engine_stop(&d.route);
		engine_join(&d.route);
	}
	if (d.have_stay) {
		engine_stop(&d.stay);
		engine_join(&d.stay);
	}
	dc_free(&d);
	return exit_code;
}
