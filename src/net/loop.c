/* The event loop (loop.h): an epoll set, a table of watched descriptors
 * indexed by descriptor, an eventfd for wake-ups and one timerfd per
 * periodic timer, and the thread a loop may run on. Nothing here knows
 * what a descriptor is for. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "rmqns/err.h"
#include "rmqns/log.h"
#include "rmqns/loop.h"

_Static_assert(LOOP_IN == EPOLLIN && LOOP_OUT == EPOLLOUT && LOOP_ERR == EPOLLERR &&
		       LOOP_HUP == EPOLLHUP && LOOP_RDHUP == EPOLLRDHUP,
	       "loop events are epoll's");

#define LOOP_EVENTS_PER_WAIT 256

struct loop_watch {
	loop_io_fn fn; /* NULL: not watched */
	void *data;
	uint32_t events;
};

struct loop_timer {
	int fd;
	loop_timer_fn fn;
	void *data;
	struct loop_timer *next;
};

struct loop {
	int epfd, wakefd;
	struct loop_watch *watches; /* by descriptor */
	int nwatches;
	struct loop_timer *timers;
	struct loop_hooks hooks;
	char name[24];
	char thread_name[16];
	pthread_t thread;
	bool spawned;
	/* Written by other threads. */
	atomic_int sleeping; /* 1 while the loop may block in epoll_wait */
	atomic_int pending;  /* a wake-up came since the loop last looked */
	atomic_bool stop;
	struct epoll_event evs[LOOP_EVENTS_PER_WAIT];
};

uint64_t loop_clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t loop_clock_ms(void)
{
	return loop_clock_ns() / 1000000u;
}

static void loop_on_wake(struct loop *l, int fd, uint32_t events, void *data)
{
	(void)events;
	(void)data;
	uint64_t count;
	if (read(fd, &count, sizeof count) < 0 && errno != EAGAIN)
		log_error("%s: eventfd read: %s", l->name, strerror(errno));
}

struct loop *loop_create(const char *name)
{
	struct loop *l = calloc(1, sizeof *l);
	if (!l) {
		log_error("%s: out of memory for its loop", name);
		return NULL;
	}
	snprintf(l->name, sizeof l->name, "%s", name);
	atomic_init(&l->sleeping, 0);
	atomic_init(&l->pending, 0);
	atomic_init(&l->stop, false);
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	l->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (l->epfd < 0 || l->wakefd < 0) {
		log_error("%s: %s", name, strerror(errno));
		loop_destroy(l);
		return NULL;
	}
	if (loop_watch(l, l->wakefd, LOOP_IN, loop_on_wake, NULL) < 0) {
		loop_destroy(l);
		return NULL;
	}
	return l;
}

void loop_destroy(struct loop *l)
{
	if (!l)
		return;
	while (l->timers) {
		struct loop_timer *t = l->timers;
		l->timers = t->next;
		close(t->fd);
		free(t);
	}
	if (l->wakefd >= 0)
		close(l->wakefd);
	if (l->epfd >= 0)
		close(l->epfd);
	free(l->watches);
	free(l);
}

void loop_set_hooks(struct loop *l, const struct loop_hooks *h)
{
	l->hooks = *h;
}

static int loop_grow(struct loop *l, int fd)
{
	if (fd < l->nwatches)
		return RMQNS_OK;
	int n = l->nwatches ? l->nwatches : 64;
	while (n <= fd)
		n *= 2;
	struct loop_watch *w = realloc(l->watches, (size_t)n * sizeof *w);
	if (!w)
		return RMQNS_ENOMEM;
	memset(w + l->nwatches, 0, (size_t)(n - l->nwatches) * sizeof *w);
	l->watches = w;
	l->nwatches = n;
	return RMQNS_OK;
}

int loop_watch(struct loop *l, int fd, uint32_t events, loop_io_fn fn, void *data)
{
	if (fd < 0 || !fn)
		return RMQNS_EINVAL;
	if (loop_grow(l, fd) < 0) {
		log_error("%s: out of memory watching a descriptor", l->name);
		return RMQNS_ENOMEM;
	}
	struct loop_watch *w = &l->watches[fd];
	struct epoll_event ev = { .events = events, .data.fd = fd };
	int op = w->fn ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	int rc = epoll_ctl(l->epfd, op, fd, &ev);
	if (rc < 0 && op == EPOLL_CTL_MOD && errno == ENOENT) /* closed, number reused */
		rc = epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev);
	if (rc < 0) {
		log_error("%s: epoll_ctl: %s", l->name, strerror(errno));
		return RMQNS_EIO;
	}
	w->fn = fn;
	w->data = data;
	w->events = events;
	return RMQNS_OK;
}

int loop_set_events(struct loop *l, int fd, uint32_t events)
{
	if (fd < 0 || fd >= l->nwatches || !l->watches[fd].fn)
		return RMQNS_EINVAL;
	struct loop_watch *w = &l->watches[fd];
	if (w->events == events)
		return RMQNS_OK;
	struct epoll_event ev = { .events = events, .data.fd = fd };
	if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0) {
		log_error("%s: epoll_ctl: %s", l->name, strerror(errno));
		return RMQNS_EIO;
	}
	w->events = events;
	return RMQNS_OK;
}

void loop_unwatch(struct loop *l, int fd)
{
	if (fd < 0 || fd >= l->nwatches || !l->watches[fd].fn)
		return;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	l->watches[fd] = (struct loop_watch){ 0 };
}

static void loop_on_timer(struct loop *l, int fd, uint32_t events, void *data)
{
	(void)events;
	struct loop_timer *t = data;
	uint64_t expirations;
	if (read(fd, &expirations, sizeof expirations) != sizeof expirations)
		return; /* spurious: nothing expired */
	t->fn(l, t->data);
}

int loop_every(struct loop *l, uint64_t period_ms, loop_timer_fn fn, void *data)
{
	if (period_ms == 0 || !fn)
		return RMQNS_EINVAL;
	struct loop_timer *t = calloc(1, sizeof *t);
	if (!t)
		return RMQNS_ENOMEM;
	t->fn = fn;
	t->data = data;
	t->fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	struct itimerspec its = { 0 };
	its.it_interval.tv_sec = (time_t)(period_ms / 1000);
	its.it_interval.tv_nsec = (long)(period_ms % 1000) * 1000000L;
	its.it_value = its.it_interval;
	if (t->fd < 0 || timerfd_settime(t->fd, 0, &its, NULL) < 0) {
		log_error("%s: timer: %s", l->name, strerror(errno));
		if (t->fd >= 0)
			close(t->fd);
		free(t);
		return RMQNS_EIO;
	}
	int rc = loop_watch(l, t->fd, LOOP_IN, loop_on_timer, t);
	if (rc < 0) {
		close(t->fd);
		free(t);
		return rc;
	}
	t->next = l->timers;
	l->timers = t;
	return RMQNS_OK;
}

void loop_wake(struct loop *l)
{
	/* Pairs with the fence in loop_run before the wait: either the loop
	 * sees `pending`, or this sees it asleep. Only one waker writes. */
	atomic_store_explicit(&l->pending, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&l->sleeping, memory_order_relaxed) &&
	    atomic_exchange(&l->sleeping, 0)) {
		uint64_t one = 1;
		if (write(l->wakefd, &one, sizeof one) < 0 && errno != EAGAIN)
			log_error("%s: eventfd write: %s", l->name, strerror(errno));
	}
}

void loop_stop(struct loop *l)
{
	atomic_store(&l->stop, true);
	loop_wake(l);
}

bool loop_stopped(struct loop *l)
{
	return atomic_load(&l->stop);
}

void loop_run(struct loop *l)
{
	for (;;) {
		int timeout = l->hooks.before_sleep ? l->hooks.before_sleep(l, l->hooks.data) : -1;
		if (atomic_load_explicit(&l->stop, memory_order_relaxed))
			break;
		atomic_store(&l->sleeping, 1);
		atomic_thread_fence(memory_order_seq_cst);
		if (atomic_load_explicit(&l->pending, memory_order_relaxed))
			timeout = 0;
		int n = epoll_wait(l->epfd, l->evs, LOOP_EVENTS_PER_WAIT, timeout);
		atomic_store_explicit(&l->sleeping, 0, memory_order_relaxed);
		/* What was sent before the wake-ups seen so far is taken from here
		 * on; the exchange orders those reads after it. */
		if (atomic_load_explicit(&l->pending, memory_order_relaxed))
			(void)atomic_exchange(&l->pending, 0);
		if (n < 0) {
			if (errno != EINTR)
				log_error("%s: epoll_wait: %s", l->name, strerror(errno));
			n = 0;
		}
		if (l->hooks.after_sleep)
			l->hooks.after_sleep(l, l->hooks.data);
		for (int i = 0; i < n; i++) {
			int fd = l->evs[i].data.fd;
			struct loop_watch *w = &l->watches[fd];
			if (w->fn) /* not unwatched earlier in this turn */
				w->fn(l, fd, l->evs[i].events, w->data);
		}
	}
	atomic_store(&l->stop, false);
}

static void *loop_thread_main(void *arg)
{
	struct loop *l = arg;

	log_set_thread_name(l->thread_name);
	pthread_setname_np(pthread_self(), l->thread_name);
	if (l->hooks.thread_start)
		l->hooks.thread_start(l, l->hooks.data);
	loop_run(l);
	if (l->hooks.thread_end)
		l->hooks.thread_end(l, l->hooks.data);
	return NULL;
}

int loop_spawn(struct loop *l, const char *thread_name, int cpu)
{
	pthread_attr_t attr, *ap = NULL;

	snprintf(l->thread_name, sizeof l->thread_name, "%s", thread_name);
	if (cpu >= 0 && pthread_attr_init(&attr) == 0) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		ap = &attr;
		int rc = pthread_attr_setaffinity_np(ap, sizeof one, &one);
		if (rc != 0)
			log_warn("%s: not pinned to CPU %d: %s", l->name, cpu, strerror(rc));
		else
			log_debug("%s on CPU %d", l->name, cpu);
	}
	int rc = pthread_create(&l->thread, ap, loop_thread_main, l);
	if (ap)
		pthread_attr_destroy(ap);
	if (rc != 0) {
		log_error("%s: cannot start its thread: %s", l->name, strerror(rc));
		return RMQNS_ENOMEM;
	}
	/* named here too: before whoever started it reports the start */
	pthread_setname_np(l->thread, l->thread_name);
	l->spawned = true;
	return RMQNS_OK;
}

void loop_join(struct loop *l)
{
	if (!l || !l->spawned)
		return;
	pthread_join(l->thread, NULL);
	l->spawned = false;
}

bool loop_spawned(const struct loop *l)
{
	return l && l->spawned;
}
