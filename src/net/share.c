/* The share of a connection (net.h): the counters a reactor and the
 * threads running its requests both touch, and the wake-up that resumes a
 * connection stopped at its in-flight cap. Nothing else of a connection is
 * ever touched off its reactor. */
#include <stdlib.h>

#include "rmqns/log.h"

#include "net_internal.h"

struct net_conn_share *net_share_new(struct reactor *r, uint64_t conn_id)
{
	struct net_conn_share *sh = calloc(1, sizeof *sh);
	if (!sh)
		return NULL;
	atomic_init(&sh->refs, 1);
	sh->r = r;
	sh->conn_id = conn_id;
	return sh;
}

static void net_share_unref(struct net_conn_share *sh)
{
	if (atomic_fetch_sub(&sh->refs, 1) == 1)
		free(sh);
}

void net_share_close(struct net_conn_share *sh)
{
	atomic_store(&sh->closed, true);
	net_share_unref(sh);
}

void net_share_hold(struct net_conn_share *sh, size_t bytes, bool barrier)
{
	atomic_fetch_add(&sh->refs, 1);
	atomic_fetch_add(&sh->inflight, 1);
	if (barrier)
		atomic_fetch_add(&sh->barriers, 1);
	atomic_fetch_add_explicit(&sh->bytes, bytes, memory_order_relaxed);
	atomic_fetch_add_explicit(&sh->r->srv->held_bytes, (int64_t)bytes, memory_order_relaxed);
}

void net_share_release(struct net_conn_share *sh, size_t bytes, bool barrier)
{
	struct server *s = sh->r->srv;
	atomic_fetch_sub_explicit(&s->held_bytes, (int64_t)bytes, memory_order_relaxed);
	atomic_fetch_sub_explicit(&sh->bytes, bytes, memory_order_relaxed);
	if (barrier)
		atomic_fetch_sub(&sh->barriers, 1);
	atomic_fetch_sub(&sh->inflight, 1);
	/* Pairs with the reactor's store of `waiting` and its second look at
	 * `inflight` (seq_cst both): one of the two sees the other. */
	if (atomic_load(&sh->waiting) && atomic_exchange(&sh->waiting, false) &&
	    !atomic_load(&sh->closed) && !atomic_load(&s->reactors_gone) &&
	    reactor_post_resume(sh->r, sh->conn_id) < 0)
		log_error("connection %#llx: no memory to resume its reads; the next idle scan will",
			  (unsigned long long)sh->conn_id);
	net_share_unref(sh);
}

bool net_share_closed(const struct net_conn_share *sh)
{
	return atomic_load_explicit(&sh->closed, memory_order_acquire);
}
