/* Counters and histograms in per-thread shards (metrics.h). A shard has
 * one writer, its thread, which adds with a relaxed load and store (no
 * locked instruction); readers sum relaxed loads. Request and response
 * codes get a slot each the first time they are seen (a CAS on a small
 * table), so the shards stay small however sparse the codes are. The
 * registry lock is taken only when a thread takes or returns a shard and
 * when /metrics is read. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rmqns/err.h"
#include "rmqns/metrics.h"
#include "rmqns/utf8.h"

/* Distinct request codes counted on their own; the rest share the last
 * slot, shown as code="other". The same for response codes. */
#define METRICS_CODE_SLOTS 64
#define METRICS_RSP_SLOTS 32
/* The controller's port counts apart: its dozen codes and a few strays. */
#define METRICS_CTL_CODE_SLOTS 24
/* Codes 0 .. METRICS_CODE_RANGE-1 can own a slot (every known code is
 * below 1024); response codes likewise up to METRICS_RSP_RANGE (the
 * controller's 2000 ... 2014 included). */
#define METRICS_CODE_RANGE 1024
#define METRICS_RSP_RANGE 2048

/* Upper bounds of the latency buckets, ns (+Inf follows). */
static const uint64_t metrics_bounds_ns[] = {
	50000,     100000,    250000,    500000,     1000000,    2500000,    5000000,    10000000,
	25000000,  50000000,  100000000, 250000000,  500000000,  1000000000, 2500000000,
};
#define METRICS_BUCKETS (sizeof metrics_bounds_ns / sizeof metrics_bounds_ns[0] + 1)

struct metrics_hist {
	_Atomic uint64_t bucket[METRICS_BUCKETS]; /* not cumulative; the writer cumulates */
	_Atomic uint64_t sum_ns;
};

struct metrics_shard {
	struct metrics_shard *next;     /* the registry */
	struct metrics_shard *next_free;
	bool in_use;
	_Atomic uint64_t counter[MC_COUNT];
	_Atomic uint64_t req[METRICS_CODE_SLOTS][METRICS_RSP_SLOTS];
	struct metrics_hist latency[METRICS_CODE_SLOTS];
	struct metrics_hist apply;
	_Atomic uint64_t ctl_req[METRICS_CTL_CODE_SLOTS][METRICS_RSP_SLOTS];
	struct metrics_hist ctl_latency[METRICS_CTL_CODE_SLOTS];
};

/* slot + 1 per code, 0 = none yet */
static _Atomic uint8_t code_slot[METRICS_CODE_RANGE];
static _Atomic int32_t slot_code[METRICS_CODE_SLOTS] = { [0 ... METRICS_CODE_SLOTS - 1] = -1 };
static atomic_uint code_slots_used;
static _Atomic uint8_t ctl_code_slot[METRICS_CODE_RANGE];
static _Atomic int32_t ctl_slot_code[METRICS_CTL_CODE_SLOTS] = { [0 ... METRICS_CTL_CODE_SLOTS - 1] = -1 };
static atomic_uint ctl_code_slots_used;
static _Atomic uint8_t rsp_slot[METRICS_RSP_RANGE];
static _Atomic int32_t slot_rsp[METRICS_RSP_SLOTS] = { [0 ... METRICS_RSP_SLOTS - 1] = -1 };
static atomic_uint rsp_slots_used;

static pthread_mutex_t metrics_lock = PTHREAD_MUTEX_INITIALIZER;
static struct metrics_shard *metrics_shards;     /* every shard ever made */
static struct metrics_shard *metrics_free_shards; /* of threads that ended */
static pthread_key_t metrics_key;
static pthread_once_t metrics_once = PTHREAD_ONCE_INIT;
static _Thread_local struct metrics_shard *metrics_mine;

/* Latencies waiting for metrics_turn_end (deferring threads only). */
#define METRICS_DEFER_MAX 128
struct metrics_deferred {
	bool on;
	unsigned n;
	uint8_t slot[METRICS_DEFER_MAX];
	uint64_t recv_ns[METRICS_DEFER_MAX];
};
static _Thread_local struct metrics_deferred metrics_later;

/* A shard outlives its thread (its counts stay in the sums) and passes to
 * the next thread that needs one. */
static void metrics_thread_gone(void *p)
{
	struct metrics_shard *s = p;
	pthread_mutex_lock(&metrics_lock);
	s->in_use = false;
	s->next_free = metrics_free_shards;
	metrics_free_shards = s;
	pthread_mutex_unlock(&metrics_lock);
}

static void metrics_init(void)
{
	if (pthread_key_create(&metrics_key, metrics_thread_gone) != 0)
		abort(); /* only fails without memory, before main has begun work */
}

/* NULL when no shard could be allocated: the count is lost, not the request. */
static struct metrics_shard *metrics_shard(void)
{
	struct metrics_shard *s = metrics_mine;
	if (s)
		return s;
	pthread_once(&metrics_once, metrics_init);
	pthread_mutex_lock(&metrics_lock);
	s = metrics_free_shards;
	if (s) {
		metrics_free_shards = s->next_free;
	} else if ((s = calloc(1, sizeof *s)) != NULL) {
		s->next = metrics_shards;
		metrics_shards = s;
	}
	if (s)
		s->in_use = true;
	pthread_mutex_unlock(&metrics_lock);
	if (s) {
		(void)pthread_setspecific(metrics_key, s);
		metrics_mine = s;
	}
	return s;
}

static inline void metrics_bump(_Atomic uint64_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

void metrics_add(enum metrics_counter c, uint64_t n)
{
	struct metrics_shard *s = metrics_shard();
	if (s && (unsigned)c < MC_COUNT)
		metrics_bump(&s->counter[c], n);
}

/* The slot of v in a lazily filled table; the last slot for the rest. */
static unsigned metrics_slot_of(int32_t v, _Atomic uint8_t *by_value, unsigned range,
				_Atomic int32_t *by_slot, atomic_uint *used, unsigned nslots)
{
	if (v < 0 || (unsigned)v >= range)
		return nslots - 1;
	uint8_t s = atomic_load_explicit(&by_value[v], memory_order_acquire);
	if (s)
		return s - 1u;
	unsigned n = atomic_load(used);
	do {
		if (n >= nslots - 1)
			return nslots - 1;
	} while (!atomic_compare_exchange_weak(used, &n, n + 1));
	atomic_store_explicit(&by_slot[n], v, memory_order_relaxed);
	uint8_t want = 0;
	if (!atomic_compare_exchange_strong_explicit(&by_value[v], &want, (uint8_t)(n + 1),
						     memory_order_acq_rel, memory_order_acquire)) {
		/* another thread gave v a slot first: ours stays unused */
		atomic_store_explicit(&by_slot[n], -1, memory_order_relaxed);
		return want - 1u;
	}
	return n;
}

static void metrics_observe(struct metrics_hist *h, uint64_t ns)
{
	unsigned b = 0;
	while (b < METRICS_BUCKETS - 1 && ns > metrics_bounds_ns[b])
		b++;
	metrics_bump(&h->bucket[b], 1);
	metrics_bump(&h->sum_ns, ns);
}

uint64_t metrics_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The slot of a response code, shared by both ports' counts. */
static unsigned metrics_rsp_slot(int32_t rsp_code)
{
	return metrics_slot_of(rsp_code, rsp_slot, METRICS_RSP_RANGE, slot_rsp, &rsp_slots_used,
			       METRICS_RSP_SLOTS);
}

void metrics_request(int32_t code, int32_t rsp_code, uint64_t recv_ns)
{
	struct metrics_shard *s = metrics_shard();
	if (!s)
		return;
	unsigned cs = metrics_slot_of(code, code_slot, METRICS_CODE_RANGE, slot_code,
				      &code_slots_used, METRICS_CODE_SLOTS);
	metrics_bump(&s->req[cs][metrics_rsp_slot(rsp_code)], 1);
	struct metrics_deferred *d = &metrics_later;
	if (d->on) {
		if (d->n == METRICS_DEFER_MAX)
			metrics_turn_end();
		d->slot[d->n] = (uint8_t)cs;
		d->recv_ns[d->n++] = recv_ns;
		return;
	}
	uint64_t now = metrics_now_ns();
	metrics_observe(&s->latency[cs], now > recv_ns ? now - recv_ns : 0);
}

void metrics_controller_request(int32_t code, int32_t rsp_code, uint64_t recv_ns)
{
	struct metrics_shard *s = metrics_shard();
	if (!s)
		return;
	unsigned cs = metrics_slot_of(code, ctl_code_slot, METRICS_CODE_RANGE, ctl_slot_code,
				      &ctl_code_slots_used, METRICS_CTL_CODE_SLOTS);
	metrics_bump(&s->ctl_req[cs][metrics_rsp_slot(rsp_code)], 1);
	uint64_t now = metrics_now_ns();
	metrics_observe(&s->ctl_latency[cs], now > recv_ns ? now - recv_ns : 0);
}

void metrics_defer_clock(void)
{
	metrics_later.on = true;
}

void metrics_turn_end(void)
{
	struct metrics_deferred *d = &metrics_later;
	struct metrics_shard *s;
	if (!d->n || !(s = metrics_shard()))
		return;
	uint64_t now = metrics_now_ns();
	for (unsigned i = 0; i < d->n; i++)
		metrics_observe(&s->latency[d->slot[i]],
				now > d->recv_ns[i] ? now - d->recv_ns[i] : 0);
	d->n = 0;
}

void metrics_registrar_apply(uint64_t ns)
{
	struct metrics_shard *s = metrics_shard();
	if (s)
		metrics_observe(&s->apply, ns);
}

/* ---- exposition ---- */

static int metrics_check(int rc)
{
	return rc < 0 ? RMQNS_ENOMEM : RMQNS_OK;
}

int metrics_write_family(struct buf *out, const char *name, const char *type, const char *help)
{
	return metrics_check(buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type));
}

int metrics_write_value(struct buf *out, const char *name, const char *labels, double value)
{
	if (labels && *labels)
		return metrics_check(buf_printf(out, "%s{%s} %.15g\n", name, labels, value));
	return metrics_check(buf_printf(out, "%s %.15g\n", name, value));
}

int metrics_escape_label(struct buf *out, const char *s)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t left = strlen(s);
	int rc = 0;
	while (left > 0 && rc >= 0) {
		uint32_t cp;
		size_t n = utf8_decode(p, left, &cp);
		if (n == 0) {
			/* a scraper drops the whole answer for one bad byte */
			rc = buf_append_str(out, "\xEF\xBF\xBD");
			n = 1;
		} else if (*p == '\\') {
			rc = buf_append_str(out, "\\\\");
		} else if (*p == '"') {
			rc = buf_append_str(out, "\\\"");
		} else if (*p == '\n') {
			rc = buf_append_str(out, "\\n");
		} else {
			rc = buf_append(out, p, n);
		}
		p += n;
		left -= n;
	}
	return metrics_check(rc);
}

static int metrics_write_u64(struct buf *out, const char *name, const char *labels, uint64_t v)
{
	if (labels && *labels)
		return metrics_check(buf_printf(out, "%s{%s} %llu\n", name, labels,
						(unsigned long long)v));
	return metrics_check(buf_printf(out, "%s %llu\n", name, (unsigned long long)v));
}

/* Sums of every shard, taken under the registry lock. */
struct metrics_totals {
	uint64_t counter[MC_COUNT];
	uint64_t req[METRICS_CODE_SLOTS][METRICS_RSP_SLOTS];
	uint64_t latency[METRICS_CODE_SLOTS][METRICS_BUCKETS + 1]; /* + sum */
	uint64_t apply[METRICS_BUCKETS + 1];
	uint64_t ctl_req[METRICS_CTL_CODE_SLOTS][METRICS_RSP_SLOTS];
	uint64_t ctl_latency[METRICS_CTL_CODE_SLOTS][METRICS_BUCKETS + 1];
};

static void metrics_sum_hist(uint64_t *to, struct metrics_hist *h)
{
	for (unsigned b = 0; b < METRICS_BUCKETS; b++)
		to[b] += atomic_load_explicit(&h->bucket[b], memory_order_relaxed);
	to[METRICS_BUCKETS] += atomic_load_explicit(&h->sum_ns, memory_order_relaxed);
}

static void metrics_sum(struct metrics_totals *t)
{
	memset(t, 0, sizeof *t);
	pthread_mutex_lock(&metrics_lock);
	for (struct metrics_shard *s = metrics_shards; s; s = s->next) {
		for (unsigned i = 0; i < MC_COUNT; i++)
			t->counter[i] += atomic_load_explicit(&s->counter[i], memory_order_relaxed);
		for (unsigned c = 0; c < METRICS_CODE_SLOTS; c++) {
			for (unsigned r = 0; r < METRICS_RSP_SLOTS; r++)
				t->req[c][r] += atomic_load_explicit(&s->req[c][r],
								     memory_order_relaxed);
			metrics_sum_hist(t->latency[c], &s->latency[c]);
		}
		metrics_sum_hist(t->apply, &s->apply);
		for (unsigned c = 0; c < METRICS_CTL_CODE_SLOTS; c++) {
			for (unsigned r = 0; r < METRICS_RSP_SLOTS; r++)
				t->ctl_req[c][r] += atomic_load_explicit(&s->ctl_req[c][r],
									 memory_order_relaxed);
			metrics_sum_hist(t->ctl_latency[c], &s->ctl_latency[c]);
		}
	}
	pthread_mutex_unlock(&metrics_lock);
}

/* "105", or "other" for the shared last slot; false for a slot not given out. */
static bool metrics_slot_name(_Atomic int32_t *by_slot, atomic_uint *used, unsigned nslots,
			      unsigned slot, char *name, size_t n)
{
	if (slot == nslots - 1) {
		snprintf(name, n, "other");
		return true;
	}
	if (slot >= atomic_load(used))
		return false;
	int32_t v = atomic_load_explicit(&by_slot[slot], memory_order_relaxed);
	if (v < 0)
		return false;
	snprintf(name, n, "%d", v);
	return true;
}

/* A table of request-code slots: the NameServer's, or the controller's port's. */
struct metrics_code_table {
	_Atomic int32_t *by_slot;
	atomic_uint *used;
	unsigned nslots;
	const char *labels; /* added after the request's, "" for none */
};

static const struct metrics_code_table metrics_namesrv_codes = { slot_code, &code_slots_used,
								 METRICS_CODE_SLOTS, "" };
static const struct metrics_code_table metrics_controller_codes = {
	ctl_slot_code, &ctl_code_slots_used, METRICS_CTL_CODE_SLOTS, ",port=\"controller\""
};

/* The labels of a request-code slot: code="105",request="GET_ROUTEINFO_BY_TOPIC";
 * a code not in the protocol's list keeps its number as the name, so the
 * label set stays bounded by the slots. */
static bool metrics_code_labels(const struct metrics_code_table *tb, unsigned slot,
				metrics_code_name_fn name_of, char *lb, size_t n)
{
	char cname[16];
	if (!metrics_slot_name(tb->by_slot, tb->used, tb->nslots, slot, cname, sizeof cname))
		return false;
	const char *req = slot == tb->nslots - 1 || !name_of
				  ? NULL
				  : name_of(atomic_load_explicit(&tb->by_slot[slot], memory_order_relaxed));
	snprintf(lb, n, "code=\"%s\",request=\"%s\"%s", cname, req ? req : cname, tb->labels);
	return true;
}

/* The rmqns_requests_total samples of one table's counts. */
static int metrics_write_requests(struct buf *out, const struct metrics_code_table *tb,
				  const uint64_t (*req)[METRICS_RSP_SLOTS], metrics_code_name_fn name_of)
{
	char rname[16], cl[128], lb[160];
	int rc = 0;

	for (unsigned c = 0; c < tb->nslots && rc == 0; c++) {
		if (!metrics_code_labels(tb, c, name_of, cl, sizeof cl))
			continue;
		for (unsigned r = 0; r < METRICS_RSP_SLOTS && rc == 0; r++) {
			if (!req[c][r] || !metrics_slot_name(slot_rsp, &rsp_slots_used,
							     METRICS_RSP_SLOTS, r, rname, sizeof rname))
				continue;
			snprintf(lb, sizeof lb, "%s,response=\"%s\"", cl, rname);
			rc = metrics_write_u64(out, "rmqns_requests_total", lb, req[c][r]);
		}
	}
	return rc;
}

static int metrics_write_hist(struct buf *out, const char *name, const char *labels,
			      const uint64_t *h)
{
	char lb[160], nm[128];
	uint64_t cum = 0;
	int rc = 0;
	const char *sep = labels && *labels ? "," : "";

	snprintf(nm, sizeof nm, "%.100s_bucket", name);

	for (unsigned b = 0; b < METRICS_BUCKETS && rc == 0; b++) {
		cum += h[b];
		if (b < METRICS_BUCKETS - 1)
			snprintf(lb, sizeof lb, "%s%sle=\"%g\"", labels ? labels : "", sep,
				 (double)metrics_bounds_ns[b] / 1e9);
		else
			snprintf(lb, sizeof lb, "%s%sle=\"+Inf\"", labels ? labels : "", sep);
		rc = metrics_write_u64(out, nm, lb, cum);
	}
	snprintf(nm, sizeof nm, "%.100s_sum", name);
	if (rc == 0)
		rc = metrics_write_value(out, nm, labels, (double)h[METRICS_BUCKETS] / 1e9);
	snprintf(nm, sizeof nm, "%.100s_count", name);
	if (rc == 0)
		rc = metrics_write_u64(out, nm, labels, cum);
	return rc;
}

struct metrics_simple {
	const char *name;
	const char *help;
	const char *labels;
	enum metrics_counter c;
};

/* Families of plain counters; rows of one family are adjacent. */
static const struct metrics_simple metrics_simple[] = {
	{ "rmqns_connections_accepted_total", "Protocol connections accepted.", NULL,
	  MC_CONN_ACCEPTED },
	{ "rmqns_system_busy_total", "SYSTEM_BUSY answers given because a lane was full.",
	  "lane=\"route\"", MC_BUSY_ROUTE },
	{ "rmqns_system_busy_total", NULL, "lane=\"default\"", MC_BUSY_DEFAULT },
	{ "rmqns_system_busy_total", NULL, "lane=\"broker\"", MC_BUSY_BROKER },
	{ "rmqns_registrations_total", "Broker registrations applied by the registrar, by outcome.",
	  "outcome=\"applied\"", MC_REG_DONE },
	{ "rmqns_registrations_total", NULL, "outcome=\"superseded\"", MC_REG_SUPERSEDED },
	{ "rmqns_registrations_total", NULL, "outcome=\"refused\"", MC_REG_REFUSED },
	{ "rmqns_registrations_total", NULL, "outcome=\"failed\"", MC_REG_FAILED },
	{ "rmqns_broker_removals_total", "Live brokers removed, by reason.", "reason=\"expired\"",
	  MC_BROKER_EXPIRED },
	{ "rmqns_broker_removals_total", NULL, "reason=\"connection_closed\"",
	  MC_BROKER_CONN_CLOSED },
	{ "rmqns_broker_removals_total", NULL, "reason=\"unregistered\"", MC_BROKER_UNREGISTERED },
	{ "rmqns_kv_writes_total", "KV config file writes made durable.", NULL, MC_KV_WRITES },
	{ "rmqns_kv_write_failures_total", "KV config file writes that failed.", NULL,
	  MC_KV_WRITE_FAILURES },
	{ "rmqns_route_cache_lookups_total",
	  "Route answers by source: cached bytes (hit) or built for the query.",
	  "result=\"hit\"", MC_ROUTE_CACHE_HITS },
	{ "rmqns_route_cache_lookups_total", NULL, "result=\"built\"", MC_ROUTE_CACHE_BUILDS },
	{ "rmqns_answer_cache_lookups_total",
	  "List answers (cluster info, topic lists, KV namespaces) by source: cached bytes (hit) "
	  "or built for the query.",
	  "cache=\"lists\",result=\"hit\"", MC_LIST_CACHE_HITS },
	{ "rmqns_answer_cache_lookups_total", NULL, "cache=\"lists\",result=\"built\"",
	  MC_LIST_CACHE_BUILDS },
	{ "rmqns_answer_cache_lookups_total", NULL, "cache=\"kv\",result=\"hit\"", MC_KV_CACHE_HITS },
	{ "rmqns_answer_cache_lookups_total", NULL, "cache=\"kv\",result=\"built\"",
	  MC_KV_CACHE_BUILDS },
	{ "rmqns_http_requests_total", "Requests served on the HTTP port.", NULL, MC_HTTP_REQUESTS },
	{ "rmqns_http_rejected_total",
	  "HTTP connections cut: request head too large, or the deadline passed.", NULL,
	  MC_HTTP_REJECTED },
	{ "rmqns_http_connections_evicted_total",
	  "HTTP connections closed before their request was whole, to make room for a new one "
	  "when every slot was taken.",
	  NULL, MC_HTTP_EVICTED },
	{ "rmqns_acl_refusals_total", "Requests refused by the ACL check (code 16), by reason.",
	  "reason=\"unsigned\"", MC_ACL_UNSIGNED },
	{ "rmqns_acl_refusals_total", NULL, "reason=\"unknown_access_key\"", MC_ACL_UNKNOWN_KEY },
	{ "rmqns_acl_refusals_total", NULL, "reason=\"bad_signature\"", MC_ACL_BAD_SIGNATURE },
	{ "rmqns_acl_refusals_total", NULL, "reason=\"not_admin\"", MC_ACL_NOT_ADMIN },
	{ "rmqns_tls_handshakes_total", "TLS handshakes on the protocol port, by result.",
	  "result=\"done\"", MC_TLS_HANDSHAKES },
	{ "rmqns_tls_handshakes_total", NULL, "result=\"failed\"", MC_TLS_HANDSHAKE_FAILURES },
	{ "rmqns_connections_by_transport_total",
	  "Protocol connections by transport, once known (TLS: handshake done).",
	  "transport=\"tls\"", MC_CONN_TLS },
	{ "rmqns_connections_by_transport_total", NULL, "transport=\"plaintext\"", MC_CONN_PLAINTEXT },
	{ "rmqns_connections_by_transport_total", NULL, "transport=\"refused_plaintext\"",
	  MC_CONN_PLAINTEXT_REFUSED },
	{ "rmqns_connection_read_pauses_total",
	  "Times a connection's reads stopped, by reason: requests in flight at serverMaxInflight, "
	  "or answers unread past outboundPauseBytes.",
	  "reason=\"inflight\"", MC_CONN_INFLIGHT_PAUSES },
	{ "rmqns_connection_read_pauses_total", NULL, "reason=\"unread_answers\"",
	  MC_CONN_OUTBOUND_PAUSES },
	{ "rmqns_connections_closed_for_memory_total",
	  "Connections closed because the process held more than connectionMemoryBudget.", NULL,
	  MC_CONN_BUDGET_CLOSED },
	{ "rmqns_requests_dropped_total",
	  "Queued requests dropped unanswered, by reason: their connection had closed, or the "
	  "shutdown deadline passed.",
	  "reason=\"connection_closed\"", MC_REQ_DROPPED_CLOSED },
	{ "rmqns_requests_dropped_total", NULL, "reason=\"shutdown\"", MC_REQ_DROPPED_SHUTDOWN },
	{ "rmqns_accept_pauses_total",
	  "Times the protocol or HTTP port stopped accepting for a second: out of descriptors or memory.", NULL,
	  MC_ACCEPT_PAUSES },
};

/* The rmqns_request_duration_seconds histograms of one table's codes. */
static int metrics_write_durations(struct buf *out, const struct metrics_code_table *tb,
				   const uint64_t (*latency)[METRICS_BUCKETS + 1],
				   metrics_code_name_fn name_of)
{
	char cl[128];
	int rc = 0;

	for (unsigned c = 0; c < tb->nslots && rc == 0; c++) {
		uint64_t n = 0;
		for (unsigned b = 0; b < METRICS_BUCKETS; b++)
			n += latency[c][b];
		if (n && metrics_code_labels(tb, c, name_of, cl, sizeof cl))
			rc = metrics_write_hist(out, "rmqns_request_duration_seconds", cl, latency[c]);
	}
	return rc;
}

int metrics_write(struct buf *out, metrics_code_name_fn name_of)
{
	struct metrics_totals *t = malloc(sizeof *t);
	int rc = 0;

	if (!t)
		return RMQNS_ENOMEM;
	metrics_sum(t);
	for (size_t i = 0; i < sizeof metrics_simple / sizeof metrics_simple[0] && rc == 0; i++) {
		const struct metrics_simple *m = &metrics_simple[i];
		if (m->help)
			rc = metrics_write_family(out, m->name, "counter", m->help);
		if (rc == 0)
			rc = metrics_write_u64(out, m->name, m->labels, t->counter[m->c]);
	}

	if (rc == 0)
		rc = metrics_write_family(out, "rmqns_requests_total", "counter",
					  "Requests answered, by request code (number and name) and "
					  "response code; the controller's port's with port=\"controller\".");
	if (rc == 0)
		rc = metrics_write_requests(out, &metrics_namesrv_codes,
					    (const uint64_t (*)[METRICS_RSP_SLOTS])t->req, name_of);
	if (rc == 0)
		rc = metrics_write_requests(out, &metrics_controller_codes,
					    (const uint64_t (*)[METRICS_RSP_SLOTS])t->ctl_req, name_of);

	if (rc == 0)
		rc = metrics_write_family(out, "rmqns_request_duration_seconds", "histogram",
					  "Time from a request's arrival to its answer, by request code.");
	if (rc == 0)
		rc = metrics_write_durations(out, &metrics_namesrv_codes,
					     (const uint64_t (*)[METRICS_BUCKETS + 1])t->latency, name_of);
	if (rc == 0)
		rc = metrics_write_durations(out, &metrics_controller_codes,
					     (const uint64_t (*)[METRICS_BUCKETS + 1])t->ctl_latency,
					     name_of);

	if (rc == 0)
		rc = metrics_write_family(out, "rmqns_registrar_apply_seconds", "histogram",
					  "Time the registrar took to apply one mutation.");
	if (rc == 0)
		rc = metrics_write_hist(out, "rmqns_registrar_apply_seconds", NULL, t->apply);
	free(t);
	return rc;
}
