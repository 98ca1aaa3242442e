/* The registrar: mutations from many threads applied one at a time on its
 * own thread in each submitter's order, ticks, connection-closed notices,
 * and a stop that applies everything already queued. A plain program
 * (exit 0 = pass) because Criterion cannot start under ThreadSanitizer. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <stdio.h>

#include "rmqns/err.h"
#include "rmqns/registrar.h"
#include "plain_test.h"

#define SUBMITTERS 4
#define PER_SUBMITTER 5000

struct state {
	pthread_t registrar_thread;
	bool thread_known;
	int wrong_thread;
	long applied;
	long last[SUBMITTERS];
	int disorder;
	int in_apply;   /* > 1 would mean two mutations at once */
	int overlap;
	atomic_int ticks;
	uint64_t closed_sum;
	int closed_count;
};

struct test_mutation {
	struct mutation m;
	struct state *st;
	int submitter;
	long seq;
};

/* Only the registrar thread touches struct state outside of atomics; a
 * mutation applied anywhere else shows up in wrong_thread. */
static void note_thread(struct state *st)
{
	if (!st->thread_known) {
		st->registrar_thread = pthread_self();
		st->thread_known = true;
	} else if (!pthread_equal(st->registrar_thread, pthread_self())) {
		st->wrong_thread++;
	}
}

static void apply_test(struct mutation *m)
{
	struct test_mutation *t = (struct test_mutation *)m;
	struct state *st = t->st;
	note_thread(st);
	if (++st->in_apply > 1)
		st->overlap++;
	if (t->seq != st->last[t->submitter] + 1)
		st->disorder++;
	st->last[t->submitter] = t->seq;
	st->applied++;
	st->in_apply--;
	free(t);
}

static void on_tick(void *arg, uint64_t now_ms)
{
	struct state *st = arg;
	(void)now_ms;
	atomic_fetch_add(&st->ticks, 1);
}

static void on_closed(void *arg, uint64_t conn_id)
{
	struct state *st = arg;
	note_thread(st);
	st->closed_sum += conn_id;
	st->closed_count++;
}

struct submitter {
	struct registrar *r;
	struct state *st;
	int id;
};

static void *submit_thread(void *arg)
{
	struct submitter *s = arg;
	for (long i = 0; i < PER_SUBMITTER; i++) {
		struct test_mutation *t = malloc(sizeof *t);
		if (!t)
			abort();
		t->m.apply = apply_test;
		t->st = s->st;
		t->submitter = s->id;
		t->seq = i;
		registrar_submit(s->r, &t->m);
		if (i % 64 == 0)
			registrar_notify_conn_closed(s->r, (uint64_t)s->id + 1);
	}
	return NULL;
}

static int test_ordered_single_threaded_apply(void)
{
	static struct state st;
	struct registrar_hooks hooks = { .on_tick = on_tick, .on_conn_closed = on_closed,
					 .arg = &st, .tick_ms = 0 };
	for (int i = 0; i < SUBMITTERS; i++)
		st.last[i] = -1;
	struct registrar *r = registrar_create(&hooks);
	CHECK_RET((r) != NULL);
	CHECK_RET((registrar_start(r)) == (0));

	pthread_t th[SUBMITTERS];
	struct submitter sub[SUBMITTERS];
	for (int i = 0; i < SUBMITTERS; i++) {
		sub[i] = (struct submitter){ r, &st, i };
		CHECK_RET((pthread_create(&th[i], NULL, submit_thread, &sub[i])) == (0));
	}
	for (int i = 0; i < SUBMITTERS; i++)
		pthread_join(th[i], NULL);
	registrar_stop(r); /* applies all that is queued */

	CHECK_RET((st.applied) == ((long)SUBMITTERS * PER_SUBMITTER));
	CHECK_RET((st.disorder) == (0));
	CHECK_RET((st.overlap) == (0));
	CHECK_RET((st.wrong_thread) == (0));
	CHECK_RET(!pthread_equal(st.registrar_thread, pthread_self()));
	int notices = (PER_SUBMITTER + 63) / 64;
	CHECK_RET((st.closed_count) == (SUBMITTERS * notices));
	CHECK_RET((st.closed_sum) == ((uint64_t)notices * (1 + 2 + 3 + 4)));
	registrar_destroy(r);
	return 0;
}

static int test_ticks_arrive(void)
{
	static struct state st;
	struct registrar_hooks hooks = { .on_tick = on_tick, .arg = &st, .tick_ms = 10 };
	struct registrar *r = registrar_create(&hooks);
	CHECK_RET((r) != NULL);
	CHECK_RET((registrar_start(r)) == (0));
	/* Bounded wait: 3 ticks of 10 ms, allowed up to 10 s. */
	for (int i = 0; i < 1000 && atomic_load(&st.ticks) < 3; i++) {
		struct timespec ts = { 0, 10 * 1000000L };
		nanosleep(&ts, NULL);
	}
	CHECK_RET((atomic_load(&st.ticks)) >= (3));
	registrar_destroy(r);
	return 0;
}

static int test_stop_applies_queued_before_start_too(void)
{
	/* Mutations queued before the thread runs are applied by the stop. */
	static struct state st;
	for (int i = 0; i < SUBMITTERS; i++)
		st.last[i] = -1;
	struct registrar *r = registrar_create(NULL);
	CHECK_RET((r) != NULL);
	for (long i = 0; i < 100; i++) {
		struct test_mutation *t = malloc(sizeof *t);
		CHECK_RET((t) != NULL);
		*t = (struct test_mutation){ .m.apply = apply_test, .st = &st, .submitter = 0, .seq = i };
		registrar_submit(r, &t->m);
	}
	CHECK_RET((registrar_start(r)) == (0));
	registrar_stop(r);
	CHECK_RET((st.applied) == (100));
	CHECK_RET((st.disorder) == (0));
	/* Without an on_conn_closed hook a notice costs nothing. */
	CHECK_RET((registrar_notify_conn_closed(r, 42)) == (RMQNS_OK));
	registrar_destroy(r);
	return 0;
}

int main(void)
{
	int failed = 0;
	failed += test_ordered_single_threaded_apply() != 0;
	failed += test_ticks_arrive() != 0;
	failed += test_stop_applies_queued_before_start_too() != 0;
	fprintf(stderr, "%s\n", failed ? "FAIL" : "PASS");
	return failed ? 1 : 0;
}
