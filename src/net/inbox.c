/* A reactor's inbox: what other threads hand it through two wait-free
 * queues (answers and requests about its connections; sockets the boss
 * accepted), and what the reactor does with each when it takes them. */
#include <unistd.h>

#include "rmqns/err.h"
#include "rmqns/log.h"
#include "rmqns/loop.h"
#include "rmqns/race.h"

#include "net_internal.h"

void inbox_post(struct reactor *r, struct net_msg *m)
{
	cds_wfcq_node_init(&m->node);
	race_release(m);
	cds_wfcq_enqueue(&r->in_head, &r->in_tail, &m->node);
	loop_wake(r->loop);
}

static int inbox_post_kind(struct reactor *r, uint64_t conn_id, enum net_msg_kind kind)
{
	struct net_msg *m = net_msg_new(conn_id, kind);
	if (!m)
		return RMQNS_ENOMEM;
	inbox_post(r, m);
	return RMQNS_OK;
}

int inbox_post_close(struct reactor *r, uint64_t conn_id)
{
	return inbox_post_kind(r, conn_id, NET_MSG_CLOSE);
}

int inbox_post_resume(struct reactor *r, uint64_t conn_id)
{
	return inbox_post_kind(r, conn_id, NET_MSG_RESUME);
}

void inbox_post_accepted(struct reactor *r, struct net_accepted *a)
{
	/* counted now, not when the reactor takes it: a burst of connects
	 * would otherwise all go to the reactor slowest to take them */
	atomic_fetch_add(&r->conn_count, 1);
	cds_wfcq_node_init(&a->node);
	race_release(a);
	cds_wfcq_enqueue(&r->acc_head, &r->acc_tail, &a->node);
	loop_wake(r->loop);
}

/* A message taken from the inbound queue. */
static void inbox_deliver(struct reactor *r, struct net_msg *m)
{
	if (m->kind == NET_MSG_SEND_TO) {
		outbound_deliver(r, m);
		return;
	}
	struct conn *c = conn_find(r, m->conn_id);
	if (c && !c->closing && m->kind == NET_MSG_DATA) {
		conn_queue_msg(r, c, m);
		return;
	}
	/* A close request for a connection that is gone, or whose slot now
	 * serves another peer (the generation differs), finds nothing here:
	 * ignored. So are bytes for such a connection. */
	if (c && !c->closing && m->kind == NET_MSG_CLOSE) {
		log_info("closing connection %s: expired", c->peer);
		conn_fail(r, c);
	}
	if (c && !c->closing && m->kind == NET_MSG_RESUME)
		conn_inflight_resume(r, c);
	net_msg_free(m);
}

/* Moves everything queued on (head, tail) to a local queue; false when
 * there was nothing. */
static bool inbox_splice(struct __cds_wfcq_head *to_head, struct cds_wfcq_tail *to_tail,
			 struct __cds_wfcq_head *head, struct cds_wfcq_tail *tail)
{
	__cds_wfcq_init(to_head, to_tail);
	return __cds_wfcq_splice_blocking(to_head, to_tail, head, tail) != CDS_WFCQ_RET_SRC_EMPTY;
}

void inbox_take_answers(struct reactor *r)
{
	struct __cds_wfcq_head head;
	struct cds_wfcq_tail tail;
	struct cds_wfcq_node *node, *next;

	if (!inbox_splice(&head, &tail, &r->in_head, &r->in_tail))
		return;
	__cds_wfcq_for_each_blocking_safe(&head, &tail, node, next) {
		struct net_msg *m = caa_container_of(node, struct net_msg, node);
		race_acquire(m);
		inbox_deliver(r, m);
	}
}

void inbox_take_accepted(struct reactor *r)
{
	struct __cds_wfcq_head head;
	struct cds_wfcq_tail tail;
	struct cds_wfcq_node *node, *next;

	if (!inbox_splice(&head, &tail, &r->acc_head, &r->acc_tail))
		return;
	__cds_wfcq_for_each_blocking_safe(&head, &tail, node, next) {
		struct net_accepted *a = caa_container_of(node, struct net_accepted, node);
		race_acquire(a);
		conn_accept(r, a);
		free(a);
	}
}

void inbox_drop_all(struct reactor *r)
{
	struct cds_wfcq_node *node, *next;

	__cds_wfcq_for_each_blocking_safe(&r->in_head, &r->in_tail, node, next) {
		struct net_msg *m = caa_container_of(node, struct net_msg, node);
		race_acquire(m);
		net_msg_free(m);
	}
	__cds_wfcq_init(&r->in_head, &r->in_tail);
	__cds_wfcq_for_each_blocking_safe(&r->acc_head, &r->acc_tail, node, next) {
		struct net_accepted *a = caa_container_of(node, struct net_accepted, node);
		race_acquire(a);
		close(a->fd);
		free(a);
	}
	__cds_wfcq_init(&r->acc_head, &r->acc_tail);
}
