/* The process's memory budget for connections (connectionMemoryBudget):
 * what each connection holds is counted where it settles, and past the
 * budget the reactor holding the biggest connection closes it. */
#include "rmqns/log.h"
#include "rmqns/metrics.h"

#include "net_internal.h"

/* Brings the process's count of held bytes up to date with c's partial
 * frame and unsent answers. Called where those settle (after a read, after
 * a flush), so a query answered within the turn touches no shared counter.
 * What fits the connection's first read buffer and one coalesced answer
 * buffer is not counted: every connection has that much, and a client
 * pipelining small queries then never writes the process-wide counter. */
void conn_sync_held(struct reactor *r, struct conn *c)
{
	int64_t held = (int64_t)((c->rlen > NET_RBUF_INITIAL ? c->rlen : 0) +
				 (c->out_bytes > NET_COALESCE_MAX ? c->out_bytes : 0));
	if (held != c->held_acct) {
		atomic_fetch_add_explicit(&r->srv->held_bytes, held - c->held_acct,
					  memory_order_relaxed);
		c->held_acct = held;
	}
}

void server_hold_external(struct server *s, int64_t delta)
{
	atomic_fetch_add_explicit(&s->held_bytes, delta, memory_order_relaxed);
}

/* What c holds: its partial frame, its unsent answers and the frames of
 * its queued requests. */
static uint64_t conn_held(const struct conn *c)
{
	uint64_t held = (uint64_t)c->held_acct;
	if (c->share)
		held += atomic_load_explicit(&c->share->bytes, memory_order_relaxed);
	return held;
}

#define NET_BUDGET_LOG_MS 10000u /* one log line per this long while closing */

/* Past the budget, the reactor holding the biggest connection closes it,
 * one a turn, until the process is under budget again: an attacker's
 * stalled frames go first, the brokers' small ones stay. Each reactor
 * publishes its biggest so that only the one holding the most acts. */
void reactor_enforce_budget(struct reactor *r)
{
	struct server *s = r->srv;
	uint64_t budget = s->params.memory_budget;
	int64_t held = atomic_load_explicit(&s->held_bytes, memory_order_relaxed);

	if (!budget || held <= (int64_t)budget) {
		if (atomic_load_explicit(&r->largest_held, memory_order_relaxed))
			atomic_store_explicit(&r->largest_held, 0, memory_order_relaxed);
		return;
	}
	struct conn *big = NULL;
	uint64_t big_held = 0;
	for (uint32_t i = 0; i < r->cap; i++) {
		struct conn *c = r->conns[i];
		if (!c || c->closing || c->outbound)
			continue;
		uint64_t h = conn_held(c);
		if (h > big_held) {
			big = c;
			big_held = h;
		}
	}
	atomic_store_explicit(&r->largest_held, big_held, memory_order_relaxed);
	if (!big)
		return;
	for (unsigned i = 0; i < s->nreactors; i++)
		if (&s->reactors[i] != r &&
		    atomic_load_explicit(&s->reactors[i].largest_held, memory_order_relaxed) > big_held)
			return; /* another reactor holds a bigger one: its turn */
	metrics_add(MC_CONN_BUDGET_CLOSED, 1);
	r->budget_closed++;
	if (r->now_ms - r->budget_log_ms >= NET_BUDGET_LOG_MS || !r->budget_log_ms) {
		log_warn("closing connection %s: it holds %llu bytes and the process %lld, past "
			 "connectionMemoryBudget %llu (%u connections closed for it in %u s)",
			 big->peer, (unsigned long long)big_held, (long long)held,
			 (unsigned long long)budget, r->budget_closed, NET_BUDGET_LOG_MS / 1000u);
		r->budget_log_ms = r->now_ms;
		r->budget_closed = 0;
	}
	conn_fail(r, big);
}
