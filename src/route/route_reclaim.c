/* Reclamation: objects the registrar replaced or removed are freed once no
 * reader can hold them, after an RCU grace period. */
#include <stdlib.h>

#include "route_writer.h"

#ifdef RT_TSAN_KEEP
/* ThreadSanitizer cannot see urcu's grace periods (nor its callback
 * thread's hand-offs): its builds keep replaced objects until the db is
 * destroyed, the way the KV store does. */
struct rt_deferred {
	struct rt_deferred *next;
	struct rcu_head *head;
	void (*cb)(struct rcu_head *);
};

void rt_defer_free(struct route_db *db, struct rcu_head *head, void (*cb)(struct rcu_head *))
{
	struct rt_deferred *d = malloc(sizeof(*d));

	if (!d)
		abort(); /* test builds only */
	d->head = head;
	d->cb = cb;
	d->next = db->deferred;
	db->deferred = d;
}

void rt_run_deferred(struct route_db *db)
{
	while (db->deferred) {
		struct rt_deferred *d = db->deferred;
		db->deferred = d->next;
		d->cb(d->head);
		free(d);
	}
}
#else
void rt_defer_free(struct route_db *db, struct rcu_head *head, void (*cb)(struct rcu_head *))
{
	(void)db;
	rt_tsan_reader_done(); /* the writer's last touches, for the callback's acquire */
	call_rcu(head, cb);
}

void rt_run_deferred(struct route_db *db)
{
	(void)db;
}
#endif
