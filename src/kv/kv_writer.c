/* The KV writer (kv.h): the KV store's only writer, on a thread of its
 * own, so that the fsyncs of a KV write never hold up the registrar (and
 * with it every registration, heartbeat and expiry). Changes arrive on a
 * wait-free queue and are committed in groups: one file write covers
 * every change queued while the previous write waited on the disk, so a
 * burst of PUTs costs a few writes, not one each, and every answer still
 * leaves only once its change is on disk. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <urcu.h>
#include <urcu/wfcqueue.h>

#include "rmqns/err.h"
#include "rmqns/kv.h"
#include "rmqns/log.h"
#include "rmqns/loop.h"
#include "rmqns/metrics.h"
#include "rmqns/race.h"

struct kv_writer {
	struct __cds_wfcq_head head;
	struct cds_wfcq_tail tail;
	struct kv_store *kv;
	struct loop *loop; /* waits for changes */
	/* written by whoever drains (the thread, or destroy after the join) */
	atomic_ulong changes;
	atomic_ulong writes;
};

struct kv_writer *kv_writer_create(struct kv_store *kv)
{
	struct kv_writer *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	__cds_wfcq_init(&w->head, &w->tail);
	w->kv = kv;
	w->loop = loop_create("KV writer");
	if (!w->loop) {
		free(w);
		return NULL;
	}
	atomic_init(&w->changes, 0);
	atomic_init(&w->writes, 0);
	return w;
}

void kv_writer_submit(struct kv_writer *w, struct kv_change *c)
{
	cds_wfcq_node_init(&c->node);
	c->rc = RMQNS_OK;
	race_release(c);
	/* only the first change into an empty queue needs a wake-up: the
	 * thread takes the whole queue and looks again before sleeping */
	if (!cds_wfcq_enqueue(&w->head, &w->tail, &c->node))
		loop_wake(w->loop);
}

static struct kv_change *change_of(struct cds_wfcq_node *node)
{
	return caa_container_of(node, struct kv_change, node);
}

/* Commits everything queued as one batch, then answers it in arrival
 * order; returns how many changes it took. */
static unsigned long kv_writer_drain(struct kv_writer *w)
{
	struct __cds_wfcq_head head;
	struct cds_wfcq_tail tail;
	struct cds_wfcq_node *node, *next;
	struct kv_batch *b;
	unsigned long n = 0, applied = 0;
	char err[512] = "";
	int rc = RMQNS_OK;

	__cds_wfcq_init(&head, &tail);
	if (__cds_wfcq_splice_blocking(&head, &tail, &w->head, &w->tail) == CDS_WFCQ_RET_SRC_EMPTY)
		return 0;
	b = kv_batch_begin(w->kv);
	if (!b) {
		rc = RMQNS_ENOMEM;
		snprintf(err, sizeof(err), "out of memory");
	}
	__cds_wfcq_for_each_blocking(&head, &tail, node) {
		struct kv_change *c = change_of(node);

		race_acquire(c);
		n++;
		if (!b)
			continue;
		if (c->op == KV_CHANGE_PUT) {
			c->rc = kv_batch_put(b, c->ns, c->key, c->value);
		} else {
			kv_batch_delete(b, c->ns, c->key);
			c->rc = RMQNS_OK;
		}
		if (c->rc == RMQNS_OK)
			applied++;
	}
	if (applied) {
		rc = kv_batch_commit(b, err, sizeof(err));
		atomic_fetch_add(&w->writes, 1);
		metrics_add(rc < 0 ? MC_KV_WRITE_FAILURES : MC_KV_WRITES, 1);
		log_debug("KV writer: %lu changes in one file write%s", applied, rc < 0 ? " (failed)" : "");
	} else {
		kv_batch_abort(b); /* nothing to write: every change failed on its own */
		if (n)
			metrics_add(MC_KV_WRITE_FAILURES, 1);
	}
	atomic_fetch_add(&w->changes, n);
	__cds_wfcq_for_each_blocking_safe(&head, &tail, node, next) {
		struct kv_change *c = change_of(node);

		if (c->rc < 0)
			c->done(c, c->rc, "out of memory");
		else
			c->done(c, rc, rc < 0 ? err : NULL);
	}
	return n;
}

/* Each turn commits what is queued; the loop then waits for a wake-up. */
static int kv_writer_turn(struct loop *l, void *arg)
{
	(void)l;
	kv_writer_drain(arg);
	return -1;
}

static void kv_writer_thread_start(struct loop *l, void *arg)
{
	(void)l;
	(void)arg;
	rcu_register_thread(); /* call_rcu frees the replaced tables */
}

static void kv_writer_thread_end(struct loop *l, void *arg)
{
	(void)l;
	/* stop was seen after a drain; what came in between is committed too */
	kv_writer_drain(arg);
	rcu_unregister_thread();
}

int kv_writer_start(struct kv_writer *w)
{
	loop_set_hooks(w->loop, &(struct loop_hooks){ .before_sleep = kv_writer_turn,
						      .thread_start = kv_writer_thread_start,
						      .thread_end = kv_writer_thread_end,
						      .data = w });
	return loop_spawn(w->loop, "kv-writer", -1);
}

void kv_writer_stop(struct kv_writer *w)
{
	if (!w || !loop_spawned(w->loop))
		return;
	loop_stop(w->loop);
	loop_join(w->loop);
	log_info("KV writer stopped: %lu changes in %lu file writes", atomic_load(&w->changes),
		 atomic_load(&w->writes));
}

/* Answers without committing: the last resort when no writer thread can run. */
static void kv_writer_refuse(struct kv_writer *w)
{
	struct __cds_wfcq_head head;
	struct cds_wfcq_tail tail;
	struct cds_wfcq_node *node, *next;

	__cds_wfcq_init(&head, &tail);
	if (__cds_wfcq_splice_blocking(&head, &tail, &w->head, &w->tail) == CDS_WFCQ_RET_SRC_EMPTY)
		return;
	__cds_wfcq_for_each_blocking_safe(&head, &tail, node, next) {
		struct kv_change *c = change_of(node);

		race_acquire(c);
		c->done(c, RMQNS_ECLOSED, "the KV writer is not running");
	}
}

void kv_writer_destroy(struct kv_writer *w)
{
	if (!w)
		return;
	kv_writer_stop(w);
	/* Changes queued after the thread's last look still owe an answer.
	 * They are committed on a thread again, because freeing replaced
	 * tables needs an RCU-registered one; stopped at once, it drains
	 * and leaves. */
	if (!cds_wfcq_empty(&w->head, &w->tail)) {
		log_warn("KV writer: committing changes submitted after it stopped");
		if (kv_writer_start(w) == RMQNS_OK)
			kv_writer_stop(w);
		else
			kv_writer_refuse(w);
	}
	loop_destroy(w->loop);
	free(w);
}

void kv_writer_counts(const struct kv_writer *w, unsigned long *changes, unsigned long *writes)
{
	*changes = atomic_load(&w->changes);
	*writes = atomic_load(&w->writes);
}
