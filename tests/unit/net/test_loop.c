/* The event loop (loop.h): descriptors, timers, the hooks around the wait,
 * wake-ups and stops from other threads, and a loop's own thread. A plain program (exit 0 =
 * pass) so that it runs under ThreadSanitizer; a lost wake-up hangs, and
 * the alarm turns that into a failure. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmqns/loop.h"

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond); \
			exit(1);                                                     \
		}                                                                    \
	} while (0)

struct pipe_seen {
	int reads;
	uint32_t events;
	int turns_before; /* after_sleep calls when the callback ran */
	int after_sleeps;
	char byte;
};

static void on_pipe(struct loop *l, int fd, uint32_t events, void *data)
{
	struct pipe_seen *s = data;
	s->reads++;
	s->events = events;
	s->turns_before = s->after_sleeps;
	CHECK(read(fd, &s->byte, 1) == 1);
	loop_stop(l);
}

static void count_after(struct loop *l, void *data)
{
	(void)l;
	((struct pipe_seen *)data)->after_sleeps++;
}

/* A readable descriptor reaches its callback with its data, after the
 * after_sleep hook of the same turn; an unwatched one does not. */
static void test_watch(void)
{
	int p[2];
	CHECK(pipe(p) == 0);
	struct loop *l = loop_create("test");
	CHECK(l);
	struct pipe_seen seen = { 0 };
	loop_set_hooks(l, &(struct loop_hooks){ .after_sleep = count_after, .data = &seen });
	CHECK(loop_watch(l, p[0], LOOP_IN, on_pipe, &seen) == 0);
	CHECK(write(p[1], "x", 1) == 1);
	loop_run(l);
	CHECK(seen.reads == 1 && seen.byte == 'x' && (seen.events & LOOP_IN));
	CHECK(seen.turns_before >= 1);
	loop_destroy(l);
	close(p[0]);
	close(p[1]);
}

/* Events can be turned off and on again; an unwatched descriptor is
 * not reported. */
static int turns_left;
static int stop_after_turns(struct loop *l, void *data)
{
	(void)data;
	if (turns_left-- <= 0)
		loop_stop(l);
	return 10;
}

static void test_set_events(void)
{
	int p[2];
	CHECK(pipe(p) == 0);
	struct loop *l = loop_create("test");
	CHECK(l);
	struct pipe_seen seen = { 0 };
	CHECK(loop_watch(l, p[0], LOOP_IN, on_pipe, &seen) == 0);
	CHECK(loop_set_events(l, p[0], 0) == 0);
	CHECK(write(p[1], "z", 1) == 1);
	turns_left = 3;
	loop_set_hooks(l, &(struct loop_hooks){ .before_sleep = stop_after_turns });
	loop_run(l);
	CHECK(seen.reads == 0);
	CHECK(loop_set_events(l, p[0], LOOP_IN) == 0);
	turns_left = 1000; /* on_pipe stops it first */
	loop_run(l);
	CHECK(seen.reads == 1 && seen.byte == 'z');

	/* unwatched: the byte stays unread */
	loop_unwatch(l, p[0]);
	CHECK(write(p[1], "y", 1) == 1);
	turns_left = 3;
	loop_run(l);
	CHECK(seen.reads == 1);
	char b;
	CHECK(read(p[0], &b, 1) == 1 && b == 'y');
	loop_destroy(l);
	close(p[0]);
	close(p[1]);
}

static int ticks;
static void on_tick(struct loop *l, void *data)
{
	CHECK(data == &ticks);
	if (++ticks == 3)
		loop_stop(l);
}

/* A periodic timer fires again and again; the wait itself is unbounded. */
static void test_timer(void)
{
	struct loop *l = loop_create("test");
	CHECK(l);
	CHECK(loop_every(l, 0, on_tick, &ticks) < 0);
	CHECK(loop_every(l, 5, on_tick, &ticks) == 0);
	uint64_t t0 = loop_clock_ms();
	loop_run(l);
	CHECK(ticks == 3);
	CHECK(loop_clock_ms() - t0 >= 10);
	loop_destroy(l);
}

/* A loop stopped before it runs runs before_sleep once and returns (a
 * thread started only to drain what is queued does exactly that). */
static int befores;
static int count_before(struct loop *l, void *data)
{
	(void)l;
	(void)data;
	befores++;
	return -1;
}

static void test_stopped_runs_once(void)
{
	struct loop *l = loop_create("test");
	CHECK(l);
	loop_set_hooks(l, &(struct loop_hooks){ .before_sleep = count_before });
	loop_stop(l);
	CHECK(loop_stopped(l));
	loop_run(l);
	CHECK(befores == 1);
	CHECK(!loop_stopped(l)); /* a later loop_run runs again */
	loop_destroy(l);
}

/* Producers publish then wake; the loop waits without a timeout, so a
 * wake-up lost between its last look and its wait would hang it. */
#define PRODUCERS 3
#define PER_PRODUCER 20000

struct counted {
	struct loop *l;
	atomic_int produced;
	int consumed;
	atomic_int done_producers;
};

static int consume(struct loop *l, void *data)
{
	struct counted *c = data;
	c->consumed = atomic_load(&c->produced);
	if (c->consumed == PRODUCERS * PER_PRODUCER && atomic_load(&c->done_producers) == PRODUCERS)
		loop_stop(l);
	return -1;
}

static void *produce(void *arg)
{
	struct counted *c = arg;
	for (int i = 0; i < PER_PRODUCER; i++) {
		atomic_fetch_add(&c->produced, 1);
		loop_wake(c->l);
		if (i % 1000 == 0)
			usleep(100); /* let the loop fall asleep now and then */
	}
	atomic_fetch_add(&c->done_producers, 1);
	loop_wake(c->l);
	return NULL;
}

static void test_wake(void)
{
	struct counted c = { .l = loop_create("test") };
	CHECK(c.l);
	loop_set_hooks(c.l, &(struct loop_hooks){ .before_sleep = consume, .data = &c });
	pthread_t t[PRODUCERS];
	for (int i = 0; i < PRODUCERS; i++)
		CHECK(pthread_create(&t[i], NULL, produce, &c) == 0);
	loop_run(c.l);
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(t[i], NULL);
	CHECK(c.consumed == PRODUCERS * PER_PRODUCER);
	loop_destroy(c.l);
}

static void *stop_later(void *arg)
{
	usleep(20000);
	loop_stop(arg);
	return NULL;
}

/* loop_stop from another thread ends a loop blocked in its wait. */
static void test_stop_from_another_thread(void)
{
	struct loop *l = loop_create("test");
	CHECK(l);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, stop_later, l) == 0);
	loop_run(l);
	pthread_join(t, NULL);
	loop_destroy(l);
}

struct spawned {
	char name[16];
	int starts, ends, befores;
	bool own_thread;
	pthread_t self;
};

static void on_thread_start(struct loop *l, void *data)
{
	(void)l;
	struct spawned *sp = data;
	sp->starts++;
	sp->own_thread = !pthread_equal(pthread_self(), sp->self);
	pthread_getname_np(pthread_self(), sp->name, sizeof sp->name);
}

static void on_thread_end(struct loop *l, void *data)
{
	(void)l;
	((struct spawned *)data)->ends++;
}

static int spawned_before(struct loop *l, void *data)
{
	(void)l;
	((struct spawned *)data)->befores++;
	return -1;
}

/* A spawned loop runs on a thread of its own, named, between its two
 * thread hooks; loop_join waits for that thread after a stop. */
static void test_spawn(void)
{
	struct loop *l = loop_create("test");
	CHECK(l);
	struct spawned sp = { .self = pthread_self() };
	loop_set_hooks(l, &(struct loop_hooks){ .before_sleep = spawned_before,
						.thread_start = on_thread_start,
						.thread_end = on_thread_end,
						.data = &sp });
	CHECK(!loop_spawned(l));
	CHECK(loop_spawn(l, "test-loop", -1) == 0);
	CHECK(loop_spawned(l));
	usleep(20000);
	loop_stop(l);
	loop_join(l);
	CHECK(!loop_spawned(l));
	CHECK(sp.starts == 1 && sp.ends == 1 && sp.befores >= 1);
	CHECK(sp.own_thread);
	CHECK(strcmp(sp.name, "test-loop") == 0);
	loop_join(l); /* nothing runs: returns at once */
	loop_destroy(l);
}

int main(void)
{
	alarm(60);
	test_watch();
	test_set_events();
	test_timer();
	test_stopped_runs_once();
	test_wake();
	test_stop_from_another_thread();
	test_spawn();
	printf("test_loop: ok\n");
	return 0;
}
