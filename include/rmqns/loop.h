/* The event loop every thread that waits on descriptors runs on: the
 * reactors, the boss, the HTTP endpoint, the registrar and the KV writer.
 * One epoll set, descriptors watched with a callback each, periodic
 * timers, a wake-up any thread may send, and two hooks around the wait
 * (before: the turn's own work and how long the wait may last; after: the
 * clock), and the thread a loop runs on. Level-triggered; one thread runs
 * a loop, loop_wake and loop_stop may come from any. */
#ifndef RMQNS_LOOP_H
#define RMQNS_LOOP_H

#include <stdbool.h>
#include <stdint.h>

/* Events of a descriptor (epoll's values, passed through as they are). */
#define LOOP_IN 0x001u    /* readable */
#define LOOP_OUT 0x004u   /* writable */
#define LOOP_ERR 0x008u   /* error (always reported) */
#define LOOP_HUP 0x010u   /* hang-up (always reported) */
#define LOOP_RDHUP 0x2000u /* the peer shut its side */

struct loop;

/* A watched descriptor is ready: events is what it is ready for. */
typedef void (*loop_io_fn)(struct loop *l, int fd, uint32_t events, void *data);
typedef void (*loop_timer_fn)(struct loop *l, void *data);

struct loop_hooks {
	/* Before each wait: the turn's own work; returns the longest the wait
	 * may last in ms (-1: until something happens; 0: do not wait). NULL:
	 * -1. It may call loop_stop. */
	int (*before_sleep)(struct loop *l, void *data);
	/* Right after each wait, before any callback. NULL = none. */
	void (*after_sleep)(struct loop *l, void *data);
	/* On a spawned loop's thread, before its first turn and after its
	 * last. NULL = none. */
	void (*thread_start)(struct loop *l, void *data);
	void (*thread_end)(struct loop *l, void *data);
	void *data;
};

/* A loop with nothing watched; NULL (logged) without descriptors or
 * memory. name goes in its log lines. */
struct loop *loop_create(const char *name);
/* Closes the loop's own descriptors (not the watched ones). */
void loop_destroy(struct loop *l);

void loop_set_hooks(struct loop *l, const struct loop_hooks *h);

/* Watches fd for events (0: none for now, errors and hang-ups still
 * come), calling fn with data; watching a descriptor again replaces its
 * callback and events. */
int loop_watch(struct loop *l, int fd, uint32_t events, loop_io_fn fn, void *data);
/* Changes the events of a watched descriptor (nothing when unchanged). */
int loop_set_events(struct loop *l, int fd, uint32_t events);
/* Stops watching fd (before closing it); events of this turn not yet
 * delivered are dropped. */
void loop_unwatch(struct loop *l, int fd);

/* Calls fn every period_ms (>= 1) from the loop's thread. */
int loop_every(struct loop *l, uint64_t period_ms, loop_timer_fn fn, void *data);

/* Runs turns until loop_stop: before_sleep, the wait, after_sleep, the
 * callbacks. A loop stopped already runs before_sleep once and returns.
 * The stop is used up on return: a later loop_run runs again. */
void loop_run(struct loop *l);
/* Runs the loop on a thread of its own named thread_name (log lines,
 * top -H; at most 15 characters), pinned to CPU cpu (-1: not pinned;
 * pinning that fails is logged and the thread runs anyway). */
int loop_spawn(struct loop *l, const char *thread_name, int cpu);
/* Waits for a spawned loop's thread to end (loop_stop it first, or let
 * its hooks stop it); nothing when none runs. */
void loop_join(struct loop *l);
bool loop_spawned(const struct loop *l);

/* Any thread: the loop leaves loop_run after its current turn. */
void loop_stop(struct loop *l);
bool loop_stopped(struct loop *l);
/* Any thread: the loop's next wait does not block (it comes out of one it
 * is in). Cheap while the loop is busy: the wake-up descriptor is written
 * only when the loop sleeps. Whatever the caller published before the
 * call is seen by the loop's next turn. */
void loop_wake(struct loop *l);

/* CLOCK_MONOTONIC in ms and ns. */
uint64_t loop_clock_ms(void);
uint64_t loop_clock_ns(void);

#endif
