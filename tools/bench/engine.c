/* rmqns-bench load engine: connections, the epoll loop, request slots
 * matched by opaque, pacing (closed loop, open loop, intervals, keepalive),
 * timeouts and reconnects, and per-second closing of statistics. Everything
 * here runs on the engine's own thread except the few atomics in struct
 * engine that the main thread reads or sets. */
#include "engine.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "rmqns/err.h"
#include "rmqns/remoting.h"
#include "rate.h"
#include "tls.h"

#define NS_PER_S 1000000000ull
#define ENG_READ_CHUNK (64u * 1024u)
#define ENG_RECONNECT_NS (100ull * 1000000ull)
/* clients: a failed connection tries again this much later (tens of
 * thousands failing at once must not turn into a connect storm) */
#define ENG_CLIENT_RETRY_NS (1000ull * 1000000ull)
#define ENG_SCAN_NS (50ull * 1000000ull)
#define ENG_MAX_EVENTS 256
/* keep at most this much buffer capacity on an idle connection */
#define ENG_KEEP_CAP (1u << 20)

#define TARGET_NONE (-2)  /* a seeded broker's first registration in register/storm */
#define TARGET_WARM (-1)

/* What a slot carries, for engines that send more than one kind. */
enum slot_kind { SK_MAIN = 0, SK_SECOND = 1, SK_REGISTER = 2 };

enum conn_state { CS_DOWN = 0, CS_CONNECTING, CS_HANDSHAKE, CS_OPEN };

struct slot {
	int32_t opaque;
	bool busy;
	int8_t target;       /* TARGET_* or the stats index */
	int8_t kind;         /* enum slot_kind */
	uint64_t intended_ns;
	uint64_t sent_ns;
};

struct bconn {
	uint32_t index;
	uint32_t gen;
	int fd;
	struct ssl_st *ssl;    /* NULL on a plaintext connection */
	enum conn_state state;
	uint32_t ev_mask;
	bool dirty;
	uint64_t retry_at;
	uint64_t connect_start;
	struct buf in;
	size_t in_off;
	struct buf out;
	size_t out_off;
	const uint8_t *xbody;  /* a registration body sent after out, not copied */
	size_t xbody_len, xbody_off;
	struct slot *slots;
	uint32_t *free_slots;
	uint32_t nfree;
	uint32_t inflight;
	uint32_t opaque_k;
	/* how long the last read's newest data lay in the socket before this
	 * thread woke to read it (kernel receive timestamp); valid if set */
	uint64_t pickup_ns;
	bool have_pickup;
	/* route */
	uint32_t topic_cursor;
	struct rate_sched sched;
	bool sched_set;
	uint64_t next_i;
	/* register / seed */
	bool registered_once;
	uint32_t variant;
	uint64_t next_send_ns;
	/* heartbeat / kv: when each kind is next due, and whether it is in flight */
	uint64_t next_due[2];
	bool kind_busy[2];
	bool needs_register;   /* a heartbeat broker on a new connection */
	uint64_t kv_seq;
	/* clients */
	uint32_t topic_base;   /* the first of the connection's topics */
	uint8_t ramp;          /* 0 not opened yet, 1 first attempt under way, 2 past it */
	bool refresh_due;      /* came due while the last was unanswered or the connection down */
	/* churn */
	uint64_t cycle_start;
	uint32_t answers_left;
	int32_t cycle_code;
};

static uint64_t bench_clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

uint64_t bench_now_ns(void)
{
	return bench_clock_ns(CLOCK_MONOTONIC);
}

/* ---- setup ---- */

int engine_init(struct engine *e, enum engine_kind kind, const struct bench_ctx *ctx,
		uint32_t first_conn, uint32_t nconns, uint32_t total_conns,
		const char *name0, const char *name1)
{
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->ctx = ctx;
	e->first_conn = first_conn;
	e->nconns = nconns;
	e->total_conns = total_conns;
	e->depth = 1;
	e->budget = UINT64_MAX;
	e->epfd = -1;
	e->next_second = 1;
	atomic_init(&e->t0, 0);
	atomic_init(&e->stop, 0);
	atomic_init(&e->cut_ns, 0);
	atomic_init(&e->state, ENG_STARTING);
	atomic_init(&e->registered, 0);
	bool open = kind == ENG_ROUTE && ctx->o->rate > 0;
	e->nstats = 2;
	int rc = RMQNS_OK;
	for (int p = 0; p < ENG_MAX_STATS && !rc; p++)
		rc = stats_init(&e->st[p], p % 2 && name1 ? name1 : name0, open);
	if (!rc)
		rc = stats_init(&e->warm, "warmup", open);
	if (rc)
		return rc;
	e->conns = calloc(nconns ? nconns : 1, sizeof(*e->conns));
	if (!e->conns)
		return RMQNS_ENOMEM;
	for (uint32_t i = 0; i < nconns; i++)
		e->conns[i].fd = -1;
	return RMQNS_OK;
}

void engine_second_kind(struct engine *e, const char *name2, const char *name3)
{
	snprintf(e->st[2].name, sizeof(e->st[2].name), "%s", name2);
	snprintf(e->st[3].name, sizeof(e->st[3].name), "%s", name3 ? name3 : name2);
	e->nstats = 4;
}

static void conn_free_buffers(struct bconn *c)
{
	buf_free(&c->in);
	buf_free(&c->out);
	c->in_off = c->out_off = 0;
}

void engine_destroy(struct engine *e)
{
	for (uint32_t i = 0; e->conns && i < e->nconns; i++) {
		struct bconn *c = &e->conns[i];
		bench_tls_free(c->ssl, 0);
		c->ssl = NULL;
		if (c->fd >= 0)
			close(c->fd);
		conn_free_buffers(c);
		free(c->slots);
		free(c->free_slots);
	}
	free(e->conns);
	e->conns = NULL;
	due_free(&e->due);
	if (e->epfd >= 0)
		close(e->epfd);
	e->epfd = -1;
	for (int p = 0; p < ENG_MAX_STATS; p++)
		stats_destroy(&e->st[p]);
	stats_destroy(&e->warm);
}

void engine_go(struct engine *e, uint64_t t0)
{
	atomic_store_explicit(&e->t0, t0, memory_order_release);
}

void engine_stop(struct engine *e)
{
	atomic_store_explicit(&e->stop, 1, memory_order_release);
}

void engine_cut(struct engine *e, uint64_t at_ns)
{
	atomic_store_explicit(&e->cut_ns, at_ns ? at_ns : 1, memory_order_release);
}

uint32_t engine_close_conns(struct engine *e, uint64_t *first_ns, uint64_t *last_ns)
{
	uint32_t n = 0;
	*first_ns = bench_now_ns();
	for (uint32_t i = 0; i < e->nconns; i++) {
		bench_tls_free(e->conns[i].ssl, 0);
		e->conns[i].ssl = NULL;
		if (e->conns[i].fd >= 0) {
			close(e->conns[i].fd);
			e->conns[i].fd = -1;
			n++;
		}
	}
	*last_ns = bench_now_ns();
	return n;
}

enum engine_state engine_state(struct engine *e)
{
	return (enum engine_state)atomic_load_explicit(&e->state, memory_order_acquire);
}

static void eng_fail(struct engine *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void eng_fail(struct engine *e, const char *fmt, ...)
{
	if (engine_state(e) == ENG_FAILED)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->fail_msg, sizeof(e->fail_msg), fmt, ap);
	va_end(ap);
	atomic_store_explicit(&e->state, ENG_FAILED, memory_order_release);
}

/* ---- small pieces ---- */

static uint64_t eng_t0(struct engine *e)
{
	return atomic_load_explicit(&e->t0, memory_order_acquire);
}

static bool eng_stopping(struct engine *e)
{
	return atomic_load_explicit(&e->stop, memory_order_acquire) != 0;
}

/* Which stats a send at time t belongs to. */
static int8_t eng_target(const struct engine *e, uint64_t t0, uint64_t t)
{
	if (e->kind == ENG_SEED)
		return 0;
	if (!t0 || t < t0 + e->send_from_ns)
		return TARGET_WARM;
	if (e->phase_ns && t >= t0 + e->phase_ns)
		return 1;
	return 0;
}

static struct stats *eng_stats(struct engine *e, int8_t target)
{
	if (target == TARGET_WARM)
		return &e->warm;
	if (target < 0)
		return NULL;
	return &e->st[target];
}

static bool eng_cut(struct engine *e, uint64_t now)
{
	uint64_t cut = atomic_load_explicit(&e->cut_ns, memory_order_acquire);
	return cut && now >= cut;
}

static bool eng_window_open(struct engine *e, uint64_t t0, uint64_t now)
{
	if (!t0 || eng_stopping(e) || e->budget == 0 || eng_cut(e, now))
		return false;
	if (now + e->warmup_ns < t0 + e->send_from_ns)
		return false;
	if (e->duration_ns && now >= t0 + e->duration_ns)
		return false;
	return true;
}

static bool eng_window_over(struct engine *e, uint64_t t0, uint64_t now)
{
	if (!t0)
		return false;
	return eng_stopping(e) || e->budget == 0 || eng_cut(e, now) ||
	       (e->duration_ns && now >= t0 + e->duration_ns);
}

static void eng_mark_dirty(struct engine *e, struct bconn *c)
{
	(void)e;
	c->dirty = true;
}

static int eng_epoll_set(struct engine *e, struct bconn *c, uint32_t mask, int op)
{
	struct epoll_event ev = { .events = mask, .data.u64 = ((uint64_t)c->gen << 32) | c->index };
	if (epoll_ctl(e->epfd, op, c->fd, &ev) != 0)
		return RMQNS_EIO;
	c->ev_mask = mask;
	return RMQNS_OK;
}

static int conn_alloc_slots(struct bconn *c, uint32_t depth)
{
	c->slots = calloc(depth, sizeof(*c->slots));
	c->free_slots = calloc(depth, sizeof(*c->free_slots));
	if (!c->slots || !c->free_slots)
		return RMQNS_ENOMEM;
	return RMQNS_OK;
}

static void conn_reset_slots(struct bconn *c, uint32_t depth)
{
	for (uint32_t i = 0; i < depth; i++) {
		c->slots[i].busy = false;
		c->free_slots[i] = depth - 1 - i;
	}
	c->nfree = depth;
	c->inflight = 0;
}

/* ---- connection lifecycle ---- */

static void conn_down(struct engine *e, struct bconn *c, uint64_t now, int err);
static void clients_on_connected(struct engine *e, struct bconn *c, uint64_t now);

/* clients: connection k of the run leaves from source k mod n, so that
 * each source address has the ephemeral ports to itself. */
static int conn_bind_source(const struct engine *e, const struct bconn *c)
{
	const struct bench_opts *o = e->ctx->o;
	if (e->kind != ENG_CLIENTS || !o->nsources || e->ctx->addr.ss_family != AF_INET)
		return 0;
	int one = 1;
	/* the port is chosen at connect, per destination: not reserved by bind */
	(void)setsockopt(c->fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	struct sockaddr_in src = { .sin_family = AF_INET };
	src.sin_addr.s_addr = htonl(o->sources[(e->first_conn + c->index) % o->nsources]);
	return bind(c->fd, (const struct sockaddr *)&src, sizeof(src));
}

static void conn_on_connected(struct engine *e, struct bconn *c, uint64_t now)
{
	c->state = CS_OPEN;
	if (eng_epoll_set(e, c, EPOLLIN, EPOLL_CTL_MOD)) {
		conn_down(e, c, now, STATS_ERR_CONNECT);
		return;
	}
	struct stats *s = eng_stats(e, eng_target(e, eng_t0(e), now));
	if (s)
		s->connects++;
	if (e->kind == ENG_CHURN) {
		c->answers_left = e->ctx->o->churn_queries;
		c->cycle_code = 0;
	}
	if (e->kind == ENG_CLIENTS)
		clients_on_connected(e, c, now);
}

/* Drives the handshake; the connection is open when it completes. */
static void conn_handshake(struct engine *e, struct bconn *c, uint64_t now)
{
	uint32_t want = 0;
	int rc = bench_tls_handshake(c->ssl, &want, e->tls_err, sizeof(e->tls_err));
	if (rc == RMQNS_OK) {
		conn_on_connected(e, c, now);
		return;
	}
	if (rc != RMQNS_EAGAIN) {
		errno = 0;
		conn_down(e, c, now, STATS_ERR_CONNECT);
		return;
	}
	if (want != c->ev_mask && eng_epoll_set(e, c, want, EPOLL_CTL_MOD))
		conn_down(e, c, now, STATS_ERR_CONNECT);
}

/* TCP is up: plaintext is open now, TLS starts its handshake. */
static void conn_on_tcp_up(struct engine *e, struct bconn *c, uint64_t now)
{
	if (!e->ctx->tls) {
		conn_on_connected(e, c, now);
		return;
	}
	c->ssl = bench_tls_new(e->ctx->tls, c->fd, e->ctx->host);
	if (!c->ssl) {
		snprintf(e->tls_err, sizeof(e->tls_err), "out of memory starting TLS");
		errno = 0;
		conn_down(e, c, now, STATS_ERR_CONNECT);
		return;
	}
	c->state = CS_HANDSHAKE;
	conn_handshake(e, c, now);
}

static void conn_connect(struct engine *e, struct bconn *c, uint64_t now)
{
	const struct bench_ctx *x = e->ctx;
	c->connect_start = now;
	c->fd = socket(x->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		c->fd = -1;
		conn_down(e, c, now, STATS_ERR_CONNECT);
		return;
	}
	int one = 1;
	(void)setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* receive timestamps: the "wire" latency leaves out this thread's own
	 * wake-up delay (on a machine it shares with the server) */
	(void)setsockopt(c->fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
	c->have_pickup = false;
	c->gen++;
	if (conn_bind_source(e, c) != 0) {
		conn_down(e, c, now, STATS_ERR_CONNECT);
		return;
	}
	int rc = connect(c->fd, (const struct sockaddr *)&x->addr, x->addr_len);
	if (rc != 0 && errno != EINPROGRESS) {
		conn_down(e, c, now, STATS_ERR_CONNECT);
		return;
	}
	c->state = CS_CONNECTING;
	if (eng_epoll_set(e, c, EPOLLOUT, EPOLL_CTL_ADD)) {
		conn_down(e, c, now, STATS_ERR_CONNECT);
		return;
	}
	if (rc == 0)
		conn_on_tcp_up(e, c, now);
}

/* Closes a connection. err >= 0 is an error kind, charged once per request
 * in flight (or once if none); err < 0 is a deliberate close. */
static void conn_down(struct engine *e, struct bconn *c, uint64_t now, int err)
{
	/* a client that cannot connect is counted, not fatal */
	bool setup = engine_state(e) == ENG_STARTING && e->kind != ENG_CHURN &&
		     e->kind != ENG_CLIENTS;
	bool handshaking = c->state == CS_HANDSHAKE;
	if (c->ssl) {
		bench_tls_free(c->ssl, err < 0);
		c->ssl = NULL;
	}
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->gen++;
	c->state = CS_DOWN;
	c->dirty = false;
	c->in.len = c->out.len = 0;
	c->in_off = c->out_off = 0;
	c->xbody = NULL;
	c->xbody_len = c->xbody_off = 0;
	if (c->in.cap > ENG_KEEP_CAP)
		buf_free(&c->in);
	if (c->out.cap > ENG_KEEP_CAP)
		buf_free(&c->out);
	if (err >= 0) {
		uint64_t charged = 0;
		for (uint32_t i = 0; i < e->depth; i++) {
			struct slot *sl = &c->slots[i];
			struct stats *s = sl->busy ? eng_stats(e, sl->target) : NULL;
			if (s) {
				stats_record_transport(s, (enum stats_transport)err, 1);
				charged++;
			}
		}
		if (!charged) {
			struct stats *s = eng_stats(e, eng_target(e, eng_t0(e), now));
			if (s)
				stats_record_transport(s, (enum stats_transport)err, 1);
		}
		if (setup)
			eng_fail(e, "%s to %s failed during setup: %s (%s)",
				 err == STATS_ERR_CONNECT ? "connection" : "request",
				 e->ctx->o->addr, stats_transport_name((enum stats_transport)err),
				 errno ? strerror(errno)
				 : handshaking && e->tls_err[0] ? e->tls_err : "no answer");
	}
	if (e->kind == ENG_CLIENTS && c->ramp == 1 && err >= 0) {
		c->ramp = 2;
		e->ramp_resolved++;
		e->connect_failed++;
		if (!e->connect_errno)
			e->connect_errno = errno ? errno : ECONNREFUSED;
	}
	conn_reset_slots(c, e->depth);
	c->retry_at = now + (err < 0 ? 0 : e->kind == ENG_CLIENTS ? ENG_CLIENT_RETRY_NS : ENG_RECONNECT_NS);
	c->next_send_ns = 0; /* a broker re-registers at once on a new connection */
	c->kind_busy[0] = c->kind_busy[1] = false;
	if (e->kind == ENG_HEARTBEAT && c->registered_once)
		c->needs_register = true;
}

/* ---- sending ---- */

static struct slot *conn_take_slot(struct bconn *c, uint32_t depth, int32_t *opaque)
{
	if (c->nfree == 0)
		return NULL;
	uint32_t idx = c->free_slots[--c->nfree];
	if ((uint64_t)(c->opaque_k + 1) * depth > 0x7fffffffu)
		c->opaque_k = 0;
	*opaque = (int32_t)(c->opaque_k * depth + idx);
	c->opaque_k++;
	struct slot *sl = &c->slots[idx];
	sl->opaque = *opaque;
	sl->busy = true;
	c->inflight++;
	return sl;
}

static void conn_give_slot(struct bconn *c, struct slot *sl)
{
	sl->busy = false;
	c->free_slots[c->nfree++] = (uint32_t)(sl - c->slots);
	c->inflight--;
}

/* The request for sl is in c->out (bytes of it on the wire): the slot's
 * times and the counters. */
static void conn_sent(struct engine *e, struct bconn *c, struct slot *sl, uint64_t intended,
		      uint64_t now, int8_t target, int8_t kind, size_t bytes)
{
	sl->intended_ns = intended;
	sl->sent_ns = now;
	sl->target = target;
	sl->kind = kind;
	struct stats *s = eng_stats(e, target);
	if (s) {
		s->sent++;
		s->bytes_out += bytes;
	}
	e->sent_total++;
	eng_mark_dirty(e, c);
}

static void conn_send_route(struct engine *e, struct bconn *c, uint64_t intended, uint64_t now,
			    int8_t target)
{
	int32_t opaque;
	struct slot *sl = conn_take_slot(c, e->depth, &opaque);
	if (!sl)
		return;
	const struct bench_ctx *x = e->ctx;
	const char *topic = x->topics[c->topic_cursor];
	if (++c->topic_cursor >= x->ntopics)
		c->topic_cursor = 0;
	size_t before = c->out.len;
	if (reqs_route_append(&x->tpl, topic, opaque, &c->out)) {
		conn_give_slot(c, sl);
		eng_fail(e, "out of memory building a request");
		return;
	}
	/* a churn cycle was counted when it connected: counting its query too
	 * took two from the budget, and wrapped it past zero when two cycles'
	 * steps interleaved */
	if (target >= 0 && e->budget != UINT64_MAX && e->kind != ENG_CHURN)
		e->budget--;
	conn_sent(e, c, sl, intended, now, target, SK_MAIN, c->out.len - before);
}

static void conn_send_register(struct engine *e, struct bconn *c, uint32_t variant, uint64_t now,
			       int8_t target)
{
	int32_t opaque;
	struct slot *sl = conn_take_slot(c, e->depth, &opaque);
	if (!sl)
		return;
	size_t before = c->out.len;
	const struct reqs_broker *b = &e->brokers[c->index];
	if (c->xbody || reqs_register_head(b, variant, opaque, &c->out)) {
		conn_give_slot(c, sl);
		eng_fail(e, "out of memory building a registration");
		return;
	}
	c->xbody = b->body[variant].data;
	c->xbody_len = b->body[variant].len;
	c->xbody_off = 0;
	c->variant = variant;
	if (target >= 0 && e->budget != UINT64_MAX)
		e->budget--;
	conn_sent(e, c, sl, now, now, target, SK_REGISTER, c->out.len - before + c->xbody_len);
}

/* A heartbeat engine's 904 (SK_MAIN) or 322 (SK_SECOND), or a kv
 * engine's PUT_KV_CONFIG; one of each kind in flight, the next due one
 * interval after this send. */
static void conn_send_paced(struct engine *e, struct bconn *c, int kind, uint64_t now,
			    int8_t phase)
{
	int32_t opaque;
	struct slot *sl = conn_take_slot(c, e->depth, &opaque);
	if (!sl)
		return;
	const struct bench_opts *o = e->ctx->o;
	size_t before = c->out.len;
	int rc;
	if (e->kind == ENG_KV) {
		char key[32], value[48];
		snprintf(key, sizeof(key), "key-%u", (unsigned)(c->kv_seq % 64));
		snprintf(value, sizeof(value), "value-%llu", (unsigned long long)c->kv_seq);
		c->kv_seq++;
		rc = reqs_kv_put_append("BenchKV", key, value, opaque, o->version, o->serialize, &c->out);
	} else if (kind == SK_MAIN) {
		rc = reqs_heartbeat_append(&e->brokers[c->index], opaque, &c->out);
	} else {
		rc = reqs_query_dv_append(&e->brokers[c->index], 0, opaque, &c->out);
	}
	if (rc) {
		conn_give_slot(c, sl);
		eng_fail(e, "out of memory building a request");
		return;
	}
	int8_t target = phase >= 0 && kind == SK_SECOND ? (int8_t)(phase + 2) : phase;
	c->kind_busy[kind] = true;
	c->next_due[kind] = now + e->interval_ns;
	conn_sent(e, c, sl, now, now, target, (int8_t)kind, c->out.len - before);
}

/* Sends what this connection may send now; lowers *wake to when it next
 * wants to run without an event. */
static void conn_pump(struct engine *e, struct bconn *c, uint64_t t0, uint64_t now, uint64_t *wake)
{
	const struct bench_opts *o = e->ctx->o;
	if (c->state == CS_DOWN) {
		bool want = e->kind == ENG_CHURN ? eng_window_open(e, t0, now) : !eng_stopping(e);
		if (e->kind != ENG_CHURN && engine_state(e) == ENG_FAILED)
			want = false;
		if (want && e->kind != ENG_CHURN && t0 && eng_window_over(e, t0, now))
			want = e->kind == ENG_SEED;
		if (!want)
			return;
		if (now < c->retry_at) {
			if (c->retry_at < *wake)
				*wake = c->retry_at;
			return;
		}
		if (e->kind == ENG_CHURN) {
			c->cycle_start = now;
			if (e->budget != UINT64_MAX && eng_target(e, t0, now) >= 0)
				e->budget--;
		}
		conn_connect(e, c, now);
		return;
	}
	if (c->state != CS_OPEN)
		return;
	switch (e->kind) {
	case ENG_ROUTE:
		while (c->nfree && eng_window_open(e, t0, now)) {
			uint64_t intended = now;
			if (e->rate > 0) {
				if (!c->sched_set) {
					if (rate_init_share(&c->sched, e->rate, e->total_conns,
							    e->first_conn + c->index,
							    t0 + e->send_from_ns - e->warmup_ns)) {
						eng_fail(e, "bad rate");
						return;
					}
					c->sched_set = true;
				}
				intended = rate_intended_ns(&c->sched, c->next_i);
				if (intended > now) {
					if (intended < *wake)
						*wake = intended;
					break;
				}
				c->next_i++;
			}
			conn_send_route(e, c, intended, now, eng_target(e, t0, intended));
		}
		break;
	case ENG_CLIENTS:
		break; /* timed by clients_tick */
	case ENG_CHURN:
		if (c->inflight == 0 && c->answers_left > 0)
			conn_send_route(e, c, now, now, eng_target(e, t0, c->cycle_start));
		break;
	case ENG_REGISTER:
		if (c->inflight)
			break;
		if (!c->registered_once) {
			if (engine_state(e) == ENG_STARTING)
				conn_send_register(e, c, 0, now, TARGET_NONE);
			break;
		}
		if (!eng_window_open(e, t0, now))
			break;
		if (now < c->next_send_ns) {
			if (c->next_send_ns < *wake)
				*wake = c->next_send_ns;
			break;
		}
		conn_send_register(e, c, o->dv_change ? 1 - c->variant : 0, now, eng_target(e, t0, now));
		break;
	case ENG_SEED:
		if (c->inflight || eng_stopping(e))
			break;
		if (!c->registered_once || now >= c->next_send_ns) {
			conn_send_register(e, c, 0, now, 0);
			break;
		}
		if (c->next_send_ns < *wake)
			*wake = c->next_send_ns;
		break;
	case ENG_HEARTBEAT:
	case ENG_KV: {
		if (e->kind == ENG_HEARTBEAT && (!c->registered_once || c->needs_register)) {
			/* registered once at the start, again on a new connection: the
			 * server drops a broker whose registering connection closed */
			if (!c->inflight && (c->needs_register || engine_state(e) == ENG_STARTING))
				conn_send_register(e, c, 0, now, TARGET_NONE);
			break;
		}
		if (!eng_window_open(e, t0, now))
			break;
		int kinds = e->kind == ENG_HEARTBEAT ? 2 : 1;
		for (int k = 0; k < kinds; k++) {
			if (c->kind_busy[k])
				continue;
			if (now < c->next_due[k]) {
				if (c->next_due[k] < *wake)
					*wake = c->next_due[k];
				continue;
			}
			conn_send_paced(e, c, k, now, eng_target(e, t0, now));
		}
		break;
	}
	}
}

/* ---- receiving ---- */

/* An answer into its stats: latency, and the wire latency when the read
 * that brought it had a kernel timestamp. */
static void eng_record_answer(const struct bconn *c, struct stats *s, int32_t code, uint64_t lat,
			      uint64_t svc)
{
	stats_record_answer(s, code, lat, svc);
	if (c->have_pickup)
		stats_record_wire(s, lat > c->pickup_ns ? lat - c->pickup_ns : 0);
}

/* A plaintext read that also takes the kernel's receive timestamp of the
 * newest data read: earlier answers in the same read arrived before it,
 * so their wire latency errs long, never short. */
static ssize_t conn_read_stamped(struct engine *e, struct bconn *c, void *dst, size_t len)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct timespec))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = dst, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			      .msg_controllen = sizeof(ctl.buf) };
	ssize_t n = recvmsg(c->fd, &msg, 0);
	if (n <= 0)
		return n;
	c->have_pickup = false;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_TIMESTAMPNS)
			continue;
		struct timespec ts;
		memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
		uint64_t at = (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
		/* data that came after the wake is as fresh as "now" itself */
		c->pickup_ns = at && at < e->woke_real_ns ? e->woke_real_ns - at : 0;
		c->have_pickup = at != 0;
	}
	return n;
}

static void clients_refresh_done(struct engine *e, struct bconn *c, uint64_t now);

static void conn_on_answer(struct engine *e, struct bconn *c, const struct remoting_cmd *cmd,
			   size_t frame_size, uint64_t now)
{
	if (!remoting_is_response(cmd))
		return; /* a server-initiated request (e.g. 905): not ours to count */
	uint32_t idx = cmd->opaque >= 0 ? (uint32_t)cmd->opaque % e->depth : 0;
	struct slot *sl = &c->slots[idx];
	if (cmd->opaque < 0 || !sl->busy || sl->opaque != cmd->opaque) {
		struct stats *s = eng_stats(e, eng_target(e, eng_t0(e), now));
		if (s)
			stats_record_transport(s, STATS_ERR_PROTOCOL, 1);
		return;
	}
	int8_t target = sl->target;
	int8_t kind = sl->kind;
	struct stats *s = eng_stats(e, target);
	uint64_t lat = rate_latency_ns(sl->intended_ns, now);
	uint64_t svc = rate_latency_ns(sl->sent_ns, now);
	conn_give_slot(c, sl);
	if (target >= 0)
		e->last_answer_ns[target] = now;

	switch (e->kind) {
	case ENG_ROUTE:
	case ENG_CLIENTS:
		if (s) {
			s->bytes_in += frame_size;
			eng_record_answer(c, s, cmd->code, lat, svc);
		}
		if (e->kind == ENG_CLIENTS && c->inflight == 0)
			clients_refresh_done(e, c, now);
		break;
	case ENG_CHURN:
		if (s)
			s->bytes_in += frame_size;
		if (cmd->code != 0 && c->cycle_code == 0)
			c->cycle_code = cmd->code;
		if (c->answers_left)
			c->answers_left--;
		if (c->answers_left == 0) {
			if (s)
				stats_record_answer(s, c->cycle_code, rate_latency_ns(c->cycle_start, now), 0);
			conn_down(e, c, now, -1); /* the cycle's close: not an error */
		}
		break;
	case ENG_REGISTER:
	case ENG_SEED:
		if (s) {
			s->bytes_in += frame_size;
			eng_record_answer(c, s, cmd->code, lat, svc);
		}
		if (!c->registered_once) {
			if (cmd->code != 0) {
				eng_fail(e, "registration of %s refused: code %d%s%s",
					 e->brokers[c->index].name, cmd->code, cmd->remark ? ", " : "",
					 cmd->remark ? cmd->remark : "");
				break;
			}
			c->registered_once = true;
			atomic_fetch_add_explicit(&e->registered, 1, memory_order_acq_rel);
		}
		c->next_send_ns = now + (e->kind == ENG_SEED ? e->ctx->o->keepalive_ns
							   : e->ctx->o->interval_ns);
		break;
	case ENG_HEARTBEAT:
	case ENG_KV:
		if (kind == SK_REGISTER) {
			if (cmd->code != 0) {
				eng_fail(e, "registration of %s refused: code %d%s%s",
					 e->brokers[c->index].name, cmd->code, cmd->remark ? ", " : "",
					 cmd->remark ? cmd->remark : "");
				break;
			}
			if (!c->registered_once)
				atomic_fetch_add_explicit(&e->registered, 1, memory_order_acq_rel);
			c->registered_once = true;
			c->needs_register = false;
			break;
		}
		c->kind_busy[kind] = false;
		if (s) {
			s->bytes_in += frame_size;
			eng_record_answer(c, s, cmd->code, lat, svc);
		}
		break;
	}
}

static void conn_on_readable(struct engine *e, struct bconn *c, uint64_t now)
{
again:
	if (buf_reserve(&c->in, ENG_READ_CHUNK)) {
		eng_fail(e, "out of memory reading");
		return;
	}
	ssize_t n;
	uint32_t want = 0;
	if (c->ssl)
		n = bench_tls_read(c->ssl, c->in.data + c->in.len, c->in.cap - c->in.len, &want);
	else
		n = conn_read_stamped(e, c, c->in.data + c->in.len, c->in.cap - c->in.len);
	if (n < 0) {
		if (errno == EINTR)
			return;
		if (errno == EAGAIN) {
			/* a TLS read that must write first (a key update) */
			if (want == EPOLLOUT && !(c->ev_mask & EPOLLOUT) &&
			    eng_epoll_set(e, c, EPOLLIN | EPOLLOUT, EPOLL_CTL_MOD))
				conn_down(e, c, now, STATS_ERR_CLOSED);
			return;
		}
		conn_down(e, c, now, STATS_ERR_CLOSED);
		return;
	}
	if (n == 0) {
		errno = 0;
		conn_down(e, c, now, STATS_ERR_CLOSED);
		return;
	}
	c->in.len += (size_t)n;
	uint32_t gen = c->gen;
	while (c->gen == gen && c->in_off < c->in.len) {
		size_t fs = 0;
		const uint8_t *p = c->in.data + c->in_off;
		size_t avail = c->in.len - c->in_off;
		int rc = remoting_frame_cut(p, avail, REMOTING_DEFAULT_MAX_FRAME, &fs);
		if (rc == RMQNS_EAGAIN) {
			if (avail >= 4) {
				/* make room for the whole frame so the next read completes it */
				uint32_t want = rd_be32(p) + 4u;
				if (want > avail && buf_reserve(&c->in, want - avail)) {
					eng_fail(e, "out of memory reading");
					return;
				}
			}
			break;
		}
		if (rc) {
			errno = 0;
			conn_down(e, c, now, STATS_ERR_PROTOCOL);
			return;
		}
		struct remoting_cmd cmd;
		rc = remoting_decode(p, fs, &cmd);
		if (rc) {
			errno = 0;
			conn_down(e, c, now, STATS_ERR_PROTOCOL);
			return;
		}
		c->in_off += fs;
		conn_on_answer(e, c, &cmd, fs, now);
		remoting_cmd_release(&cmd);
	}
	if (c->gen != gen)
		return;
	buf_consume(&c->in, c->in_off);
	c->in_off = 0;
	/* decrypted bytes left in the session raise no epoll event */
	if (c->ssl && bench_tls_pending(c->ssl) > 0)
		goto again;
}

/* TLS writes: the head, then the body, each as far as the socket takes it. */
static ssize_t conn_tls_write(struct bconn *c, uint32_t *want)
{
	if (c->out_off < c->out.len)
		return bench_tls_write(c->ssl, c->out.data + c->out_off, c->out.len - c->out_off, want);
	return bench_tls_write(c->ssl, c->xbody + c->xbody_off, c->xbody_len - c->xbody_off, want);
}

static void conn_flush(struct engine *e, struct bconn *c, uint64_t now)
{
	c->dirty = false;
	if (c->state != CS_OPEN)
		return;
	while (c->out_off < c->out.len || c->xbody_off < c->xbody_len) {
		if (c->ssl) {
			uint32_t want = 0;
			ssize_t n = conn_tls_write(c, &want);
			if (n < 0 && errno == EAGAIN) {
				if (want == EPOLLIN) {
					c->dirty = true; /* retried on the next pass, after a read */
					return;
				}
				if (!(c->ev_mask & EPOLLOUT) &&
				    eng_epoll_set(e, c, EPOLLIN | EPOLLOUT, EPOLL_CTL_MOD))
					conn_down(e, c, now, STATS_ERR_CLOSED);
				return;
			}
			if (n <= 0) {
				conn_down(e, c, now, STATS_ERR_CLOSED);
				return;
			}
			size_t done = (size_t)n;
			if (c->out_off < c->out.len)
				c->out_off += done;
			else
				c->xbody_off += done;
			continue;
		}
		struct iovec iov[2];
		int niov = 0;
		if (c->out_off < c->out.len)
			iov[niov++] = (struct iovec){ c->out.data + c->out_off, c->out.len - c->out_off };
		if (c->xbody_off < c->xbody_len)
			iov[niov++] = (struct iovec){ (void *)(c->xbody + c->xbody_off),
						      c->xbody_len - c->xbody_off };
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)niov };
		ssize_t n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				if (!(c->ev_mask & EPOLLOUT) &&
				    eng_epoll_set(e, c, EPOLLIN | EPOLLOUT, EPOLL_CTL_MOD))
					conn_down(e, c, now, STATS_ERR_CLOSED);
				return;
			}
			conn_down(e, c, now, STATS_ERR_CLOSED);
			return;
		}
		size_t done = (size_t)n, head = c->out.len - c->out_off;
		if (done <= head) {
			c->out_off += done;
		} else {
			c->out_off = c->out.len;
			c->xbody_off += done - head;
		}
	}
	c->out.len = c->out_off = 0;
	c->xbody = NULL;
	c->xbody_len = c->xbody_off = 0;
	if (c->out.cap > ENG_KEEP_CAP)
		buf_free(&c->out);
	if ((c->ev_mask & EPOLLOUT) && eng_epoll_set(e, c, EPOLLIN, EPOLL_CTL_MOD))
		conn_down(e, c, now, STATS_ERR_CLOSED);
}

static void conn_on_event(struct engine *e, struct bconn *c, uint32_t events, uint64_t now)
{
	if (c->state == CS_HANDSHAKE) {
		conn_handshake(e, c, now);
		return;
	}
	if (c->state == CS_CONNECTING) {
		int err = 0;
		socklen_t len = sizeof(err);
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
			err = errno;
		if (err == 0 && (events & (EPOLLERR | EPOLLHUP)))
			err = ECONNREFUSED;
		if (err) {
			errno = err;
			conn_down(e, c, now, STATS_ERR_CONNECT);
			return;
		}
		conn_on_tcp_up(e, c, now);
		return;
	}
	if (c->state != CS_OPEN)
		return;
	/* a TLS read may have waited for the socket to take a write */
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP) || (c->ssl && (events & EPOLLOUT)))
		conn_on_readable(e, c, now);
	if (c->state == CS_OPEN && (events & EPOLLOUT))
		conn_flush(e, c, now);
}

/* ---- clients: many connections refreshing their routes ---- */

/* A draw in [0, 1) (xorshift64*: the bench needs spread, not secrecy). */
static double clients_draw(struct engine *e)
{
	e->rng ^= e->rng >> 12;
	e->rng ^= e->rng << 25;
	e->rng ^= e->rng >> 27;
	return (double)((e->rng * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
}

/* A refresh: the connection's topics, every request in one write, as a
 * client's route refresh sends them. */
static void clients_send_refresh(struct engine *e, struct bconn *c, uint64_t now)
{
	c->refresh_due = false;
	int8_t target = eng_target(e, eng_t0(e), now);
	c->topic_cursor = c->topic_base;
	for (uint32_t k = 0; k < e->depth && c->nfree && c->state == CS_OPEN; k++)
		conn_send_route(e, c, now, now, target);
	if (c->state == CS_OPEN)
		conn_flush(e, c, now);
}

static void clients_on_connected(struct engine *e, struct bconn *c, uint64_t now)
{
	if (c->ramp == 1) {
		c->ramp = 2;
		e->ramp_resolved++;
		e->established++;
	} else {
		e->reconnects++;
	}
	if (c->refresh_due && eng_window_open(e, eng_t0(e), now))
		clients_send_refresh(e, c, now);
}

/* Every answer of a refresh is in: a fraction of the connections close
 * and reconnect at once (a client restarting), the others wait for their
 * next period or send the one that came due meanwhile. */
static void clients_refresh_done(struct engine *e, struct bconn *c, uint64_t now)
{
	e->refreshes++;
	double churn = e->ctx->o->churn;
	if (churn > 0 && clients_draw(e) < churn) {
		e->churned++;
		conn_down(e, c, now, -1);
		if (!eng_stopping(e))
			conn_connect(e, c, now);
		return;
	}
	if (c->refresh_due && eng_window_open(e, eng_t0(e), now))
		clients_send_refresh(e, c, now);
}

/* After an event: a write the TLS layer put off, and the buffers of an
 * idle connection handed back (tens of thousands of 64 KiB read buffers
 * would be the bench's whole memory). */
static void clients_after_event(struct engine *e, struct bconn *c, uint64_t now)
{
	if (c->dirty)
		conn_flush(e, c, now);
	if (c->in.len == 0)
		buf_free(&c->in);
	if (c->out.len == 0 && !c->xbody)
		buf_free(&c->out);
}

/* One period of a connection, jitter included. */
static uint64_t clients_period(struct engine *e)
{
	const struct bench_opts *o = e->ctx->o;
	double f = 1.0 + o->jitter * (2.0 * clients_draw(e) - 1.0);
	return (uint64_t)((double)o->period_ns * f);
}

/* The ramp (connection k opens k / rate after the first), then the
 * refreshes that are due; lowers *wake to the next of either. */
static void clients_tick(struct engine *e, uint64_t t0, uint64_t now, uint64_t *wake)
{
	const struct bench_opts *o = e->ctx->o;
	if (e->ramp_next < e->nconns && !eng_stopping(e)) {
		if (!e->ramp_start_ns)
			e->ramp_start_ns = now;
		/* this engine's share of the run's connect rate */
		double per_s = (double)o->connect_rate * e->nconns / (e->total_conns ? e->total_conns : 1);
		while (e->ramp_next < e->nconns) {
			uint64_t at = e->ramp_start_ns + (uint64_t)((double)e->ramp_next * 1e9 / per_s);
			if (at > now) {
				if (at < *wake)
					*wake = at;
				break;
			}
			struct bconn *c = &e->conns[e->ramp_next++];
			c->ramp = 1;
			conn_connect(e, c, now);
		}
	}
	if (!t0)
		return;
	if (!e->due_filled) {
		/* the first refreshes spread evenly over the first period */
		for (uint32_t i = 0; i < e->nconns; i++) {
			uint64_t k = e->first_conn + i;
			uint64_t at = t0 + (uint64_t)((double)o->period_ns * (double)k /
						      (double)(e->total_conns ? e->total_conns : 1));
			if (due_push(&e->due, at, i)) {
				eng_fail(e, "out of memory (refresh schedule)");
				return;
			}
		}
		e->due_filled = true;
	}
	struct due_entry d;
	while (due_peek(&e->due, &d)) {
		if (d.at_ns > now) {
			if (d.at_ns < *wake)
				*wake = d.at_ns;
			break;
		}
		if (!eng_window_open(e, t0, now))
			break;
		due_pop(&e->due, &d);
		if (due_push(&e->due, d.at_ns + clients_period(e), d.idx)) {
			eng_fail(e, "out of memory (refresh schedule)");
			return;
		}
		struct bconn *c = &e->conns[d.idx];
		if (c->state == CS_OPEN && c->inflight == 0) {
			clients_send_refresh(e, c, now);
		} else {
			e->refreshes_late++;
			c->refresh_due = true;
		}
	}
}

/* ---- the loop ---- */

static void eng_close_seconds(struct engine *e, uint64_t t0, uint64_t now, bool final)
{
	if (final)
		eng_close_seconds(e, t0, now, false);
	while (now >= t0 + (uint64_t)e->next_second * NS_PER_S || final) {
		uint32_t k = e->next_second;
		int active = e->phase_ns && (uint64_t)(k - 1) * NS_PER_S >= e->phase_ns ? 1 : 0;
		for (uint32_t p = 0; p < e->nstats; p++) {
			struct stats *s = &e->st[p];
			bool has = s->cur.count || s->cur_ok || s->cur_errors;
			/* an engine that starts late (the storm) has no seconds before it */
			bool started = (uint64_t)k * NS_PER_S > e->send_from_ns;
			/* the idle phase is over: its late answers belong to its last second */
			bool ended = p % 2 == 0 && e->phase_ns && (uint64_t)(k - 1) * NS_PER_S >= e->phase_ns;
			int rc = RMQNS_OK;
			if (ended && has)
				rc = stats_fold_second(s, k);
			else if (final && has)
				/* the run was cut mid-second: say how much of it was measured */
				rc = stats_close_second_span(s, k, now - (t0 + (uint64_t)(k - 1) * NS_PER_S));
			else if (((int)(p % 2) == active && !final && started) || has)
				rc = stats_close_second(s, k);
			if (rc)
				eng_fail(e, "out of memory (timeline)");
		}
		e->next_second++;
		if (final)
			break;
	}
}

static void eng_scan_timeouts(struct engine *e, uint64_t now)
{
	const struct bench_opts *o = e->ctx->o;
	bool queries = e->kind == ENG_ROUTE || e->kind == ENG_CHURN || e->kind == ENG_KV ||
		       e->kind == ENG_CLIENTS;
	uint64_t limit = queries ? o->timeout_ns : o->reg_timeout_ns;
	uint64_t t0 = eng_t0(e);
	for (uint32_t i = 0; i < e->nconns; i++) {
		struct bconn *c = &e->conns[i];
		/* clients: a failed connection tries again here, not on a timer of its own */
		if (e->kind == ENG_CLIENTS && c->state == CS_DOWN && c->ramp == 2 &&
		    now >= c->retry_at && !eng_window_over(e, t0, now) && !eng_stopping(e)) {
			conn_connect(e, c, now);
			continue;
		}
		if ((c->state == CS_CONNECTING || c->state == CS_HANDSHAKE) &&
		    now - c->connect_start > limit) {
			errno = ETIMEDOUT;
			conn_down(e, c, now, STATS_ERR_CONNECT);
			continue;
		}
		if (c->state != CS_OPEN || !c->inflight)
			continue;
		for (uint32_t k = 0; k < e->depth; k++) {
			uint64_t lim = e->kind == ENG_HEARTBEAT && c->slots[k].kind != SK_REGISTER
				? o->timeout_ns : limit;
			if (c->slots[k].busy && now - c->slots[k].sent_ns > lim) {
				errno = 0;
				conn_down(e, c, now, STATS_ERR_TIMEOUT);
				break;
			}
		}
	}
}

static uint32_t eng_inflight(const struct engine *e)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < e->nconns; i++)
		n += e->conns[i].inflight;
	return n;
}

static void eng_check_ready(struct engine *e)
{
	if (engine_state(e) != ENG_STARTING)
		return;
	bool ready = true;
	if (e->kind == ENG_ROUTE || e->kind == ENG_KV) {
		for (uint32_t i = 0; i < e->nconns; i++)
			ready = ready && e->conns[i].state == CS_OPEN;
	} else if (e->kind == ENG_CLIENTS) {
		ready = e->ramp_resolved == e->nconns;
	} else if (e->kind == ENG_REGISTER || e->kind == ENG_SEED || e->kind == ENG_HEARTBEAT) {
		ready = atomic_load_explicit(&e->registered, memory_order_acquire) == e->nconns;
	}
	if (ready) {
		e->t_ready_ns = bench_now_ns();
		atomic_store_explicit(&e->state, ENG_READY, memory_order_release);
	}
}

static void *eng_thread(void *arg)
{
	struct engine *e = arg;
	struct epoll_event evs[ENG_MAX_EVENTS];
	/* open-loop sends are timed by epoll's timeout: keep its slack at 1 us */
	if (e->rate > 0)
		(void)prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	uint64_t now = bench_now_ns();
	bool pump_all = true;
	e->next_timeout_scan = now + ENG_SCAN_NS;
	if (e->kind != ENG_CHURN && e->kind != ENG_CLIENTS)
		for (uint32_t i = 0; i < e->nconns; i++)
			conn_connect(e, &e->conns[i], now);
	for (;;) {
		uint64_t t0 = eng_t0(e);
		uint64_t wake = now + ENG_SCAN_NS;
		if (engine_state(e) == ENG_FAILED)
			break;
		/* closed-loop route connections refill as answers arrive; the
		 * others are paced by time and looked at on every pass */
		if (e->kind == ENG_CLIENTS) {
			/* tens of thousands of connections: only those due are looked at,
			 * and they flush as they send */
			clients_tick(e, t0, now, &wake);
		} else {
			if (pump_all || e->kind != ENG_ROUTE || e->rate > 0)
				for (uint32_t i = 0; i < e->nconns; i++)
					conn_pump(e, &e->conns[i], t0, now, &wake);
			for (uint32_t i = 0; i < e->nconns; i++)
				if (e->conns[i].dirty)
					conn_flush(e, &e->conns[i], now);
		}
		pump_all = false;
		eng_check_ready(e);
		if (engine_state(e) == ENG_STARTING && !t0)
			wake = now + 1000000ull;
		if (t0) {
			if (!e->window_end_ns && eng_window_over(e, t0, now)) {
				e->window_end_ns = now;
				e->ended_by_budget = e->budget == 0;
			}
			if (e->window_end_ns) {
				/* a storm (drain 0) is background load: its last answers
				 * are not waited for */
				bool drained = eng_inflight(e) == 0 || eng_stopping(e) ||
					(e->kind == ENG_REGISTER && !e->drain_ns);
				if (e->kind == ENG_SEED)
					drained = eng_stopping(e);
				if (!drained && now >= e->window_end_ns + e->drain_ns) {
					for (uint32_t i = 0; i < e->nconns; i++)
						if (e->conns[i].inflight) {
							errno = 0;
							conn_down(e, &e->conns[i], now, STATS_ERR_TIMEOUT);
						}
					drained = true;
				}
				if (drained)
					break;
				if (e->window_end_ns + e->drain_ns < wake)
					wake = e->window_end_ns + e->drain_ns;
			} else {
				eng_close_seconds(e, t0, now, false);
				uint64_t nsec = t0 + (uint64_t)e->next_second * NS_PER_S;
				if (nsec < wake)
					wake = nsec;
				if (e->duration_ns && t0 + e->duration_ns < wake)
					wake = t0 + e->duration_ns;
				uint64_t from = t0 + e->send_from_ns - e->warmup_ns;
				if (now < from) {
					pump_all = true;
					if (from < wake)
						wake = from;
				} else if (e->kind == ENG_ROUTE && !e->sent_total) {
					pump_all = true;
				}
			}
		} else if (eng_stopping(e)) {
			break;
		}
		if (now >= e->next_timeout_scan) {
			eng_scan_timeouts(e, now);
			e->next_timeout_scan = now + ENG_SCAN_NS;
			pump_all = true;
		}
		if (eng_stopping(e) && e->kind != ENG_ROUTE)
			break;

		uint64_t wait = wake > now ? wake - now : 0;
		struct timespec ts = { .tv_sec = (time_t)(wait / NS_PER_S), .tv_nsec = (long)(wait % NS_PER_S) };
		int n = epoll_pwait2(e->epfd, evs, ENG_MAX_EVENTS, &ts, NULL);
		if (n < 0 && errno != EINTR) {
			eng_fail(e, "epoll: %s", strerror(errno));
			break;
		}
		now = bench_now_ns();
		e->woke_real_ns = bench_clock_ns(CLOCK_REALTIME); /* kernel receive timestamps' clock */
		t0 = eng_t0(e);
		for (int i = 0; i < n; i++) {
			uint32_t idx = (uint32_t)evs[i].data.u64;
			uint32_t gen = (uint32_t)(evs[i].data.u64 >> 32);
			if (idx >= e->nconns || e->conns[idx].gen != gen)
				continue; /* an event of a connection closed in this batch */
			struct bconn *c = &e->conns[idx];
			conn_on_event(e, c, evs[i].events, now);
			if (e->kind == ENG_ROUTE && c->state == CS_OPEN && e->rate <= 0)
				conn_pump(e, c, t0, now, &wake);
			if (e->kind == ENG_CLIENTS)
				clients_after_event(e, c, now);
		}
	}
	uint64_t t0 = eng_t0(e);
	if (!e->window_end_ns)
		e->window_end_ns = bench_now_ns();
	if (t0)
		eng_close_seconds(e, t0, e->window_end_ns, true);
	for (uint32_t i = 0; i < e->nconns; i++) {
		struct bconn *c = &e->conns[i];
		if (c->state == CS_OPEN)
			e->open_at_end++;
		if (c->fd >= 0 && !e->keep_fds) {
			bench_tls_free(c->ssl, 0);
			c->ssl = NULL;
			close(c->fd);
			c->fd = -1;
		}
		c->state = CS_DOWN;
		conn_free_buffers(c);
	}
	if (engine_state(e) != ENG_FAILED)
		atomic_store_explicit(&e->state, ENG_DONE, memory_order_release);
	return NULL;
}

int engine_start(struct engine *e)
{
	const struct bench_ctx *x = e->ctx;
	if (e->kind == ENG_ROUTE || e->kind == ENG_CHURN || e->kind == ENG_CLIENTS) {
		if (x->ntopics == 0)
			return RMQNS_EINVAL;
	} else if (e->kind == ENG_KV) {
		if (!e->interval_ns)
			return RMQNS_EINVAL;
	} else if (!e->brokers || (e->kind == ENG_HEARTBEAT && !e->interval_ns)) {
		return RMQNS_EINVAL;
	}
	if (e->kind == ENG_HEARTBEAT)
		e->depth = 2; /* one 904 and one 322 */
	else if (e->kind != ENG_ROUTE && e->kind != ENG_CLIENTS)
		e->depth = 1;
	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (e->epfd < 0)
		return RMQNS_EIO;
	for (uint32_t i = 0; i < e->nconns; i++) {
		struct bconn *c = &e->conns[i];
		c->index = i;
		c->fd = -1;
		if (conn_alloc_slots(c, e->depth))
			return RMQNS_ENOMEM;
		conn_reset_slots(c, e->depth);
		if (x->ntopics)
			c->topic_cursor = (uint32_t)(((uint64_t)(e->first_conn + i) * x->ntopics) /
						     (e->total_conns ? e->total_conns : 1));
		c->topic_base = c->topic_cursor;
	}
	e->rng = 0x9e3779b97f4a7c15ull ^ ((uint64_t)e->first_conn + 1);
	if (pthread_create(&e->thread, NULL, eng_thread, e) != 0)
		return RMQNS_ENOMEM;
	e->started = true;
	return RMQNS_OK;
}

void engine_join(struct engine *e)
{
	if (e->started)
		pthread_join(e->thread, NULL);
	e->started = false;
}
