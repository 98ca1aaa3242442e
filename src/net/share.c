/* The share of a connection (net.h), as the threads running its requests
 * see it: what they hold, and the wake-up that resumes a connection
 * stopped at its in-flight cap. The reactor's side (a share's creation
 * and its close) is conn.c's. Nothing else of a connection is ever touched
 * off its reactor. */
#include <stdlib.h>

#include "rmqns/log.h"

#include "net_internal.h"

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
	    inbox_post_resume(sh->r, sh->conn_id) < 0)
		log_error("connection %#llx: no memory to resume its reads; the next idle scan will",
			  (unsigned long long)sh->conn_id);
	net_share_unref(sh);
}

bool net_share_closed(const struct net_conn_share *sh)
{
	return atomic_load_explicit(&sh->closed, memory_order_acquire);
}
