/* The boss: one thread on an event loop that accepts connections on the
 * listening sockets and hands each to the reactor with the fewest, backs
 * off when out of descriptors, and has the TLS transport look at its
 * certificate files. It never reads a byte. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rmqns/err.h"
#include "rmqns/log.h"
#include "rmqns/loop.h"
#include "rmqns/metrics.h"

#include "net_internal.h"

/* Out of descriptors or memory, the boss stops watching the listener for
 * NET_ACCEPT_PAUSE_MS: the pending connections wait in the kernel's queue
 * instead of making a level-triggered listener wake it at once, over and
 * over. One line tells of the pauses at most every NET_ACCEPT_LOG_MS. */
#define NET_ACCEPT_PAUSE_MS 1000
#define NET_ACCEPT_LOG_MS 10000

int net_listen(const char *bind_addr, int port, int backlog, const char *what, int *fd_out, int *port_out)
{
	struct addrinfo hints = { 0 }, *res = NULL;
	char pbuf[16];

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
	snprintf(pbuf, sizeof pbuf, "%d", port);
	int gai = getaddrinfo(bind_addr, pbuf, &hints, &res);
	if (gai != 0) {
		log_error("bad %s %s: %s", what, bind_addr ? bind_addr : "", gai_strerror(gai));
		return RMQNS_EINVAL;
	}
	int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		log_error("socket: %s", strerror(errno));
		freeaddrinfo(res);
		return RMQNS_EIO;
	}
	int one = 1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0)
		log_warn("SO_REUSEADDR: %s", strerror(errno));
	if (bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, backlog) < 0) {
		log_error("cannot listen on %s:%d (%s): %s", bind_addr ? bind_addr : "", port, what,
			  strerror(errno));
		close(fd);
		freeaddrinfo(res);
		return RMQNS_EIO;
	}
	freeaddrinfo(res);

	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		log_error("getsockname: %s", strerror(errno));
		close(fd);
		return RMQNS_EIO;
	}
	*port_out = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						   : ((struct sockaddr_in *)&ss)->sin_port);
	*fd_out = fd;
	return RMQNS_OK;
}

static void boss_tune_socket(const struct server *s, int fd)
{
	int one = 1;
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
		log_debug("TCP_NODELAY: %s", strerror(errno));
	if (s->params.sndbuf > 0 &&
	    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &s->params.sndbuf, sizeof s->params.sndbuf) < 0)
		log_debug("SO_SNDBUF: %s", strerror(errno));
	if (s->params.rcvbuf > 0 &&
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &s->params.rcvbuf, sizeof s->params.rcvbuf) < 0)
		log_debug("SO_RCVBUF: %s", strerror(errno));
}

/* Least connections first; ties go round-robin so an idle server still
 * spreads a burst of connects. */
static struct reactor *boss_pick_reactor(struct server *s)
{
	unsigned best = s->next_reactor % s->nreactors;
	unsigned best_n = atomic_load(&s->reactors[best].conn_count);
	for (unsigned k = 1; k < s->nreactors; k++) {
		unsigned i = (s->next_reactor + k) % s->nreactors;
		unsigned n = atomic_load(&s->reactors[i].conn_count);
		if (n < best_n) {
			best = i;
			best_n = n;
		}
	}
	s->next_reactor = best + 1;
	return &s->reactors[best];
}

/* Accepts until the backlog is empty: 0, or the errno that stopped it
 * short of that (EMFILE, ENFILE, ENOBUFS, ENOMEM, or worse). */
static int boss_accept_all(struct listener *ls)
{
	struct server *s = ls->srv;
	for (;;) {
		struct net_accepted *a = malloc(sizeof *a);
		if (!a)
			return ENOMEM;
		a->addrlen = sizeof a->addr;
		int fd = accept4(ls->fd, (struct sockaddr *)&a->addr, &a->addrlen,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			int e = errno;
			free(a);
			if (e == EAGAIN || e == EWOULDBLOCK)
				return 0;
			if (e == EINTR || e == ECONNABORTED || e == EPROTO)
				continue;
			return e;
		}
		a->fd = fd;
		a->cb = ls->cb;
		boss_tune_socket(s, fd);
		inbox_post_accepted(boss_pick_reactor(s), a);
	}
}

static void boss_pause_accepts(struct accept_backoff *b, int e, uint64_t now)
{
	b->until_ms = now + NET_ACCEPT_PAUSE_MS;
	b->unlogged++;
	b->outage++;
	metrics_add(MC_ACCEPT_PAUSES, 1);
	if (b->logged_ms && now - b->logged_ms < NET_ACCEPT_LOG_MS)
		return;
	log_warn("accept: %s; not accepting for %d ms at a time (pauses since the last such line: %llu)",
		 strerror(e), NET_ACCEPT_PAUSE_MS, (unsigned long long)b->unlogged);
	b->logged_ms = now;
	b->unlogged = 0;
}

static void boss_on_listener(struct loop *l, int fd, uint32_t events, void *arg)
{
	(void)events;
	(void)fd;
	struct listener *ls = arg;
	struct accept_backoff *b = &ls->srv->backoff;
	int e = boss_accept_all(ls);
	if (e) {
		boss_pause_accepts(b, e, loop_clock_ms());
		/* the backlogs wait in the kernel */
		for (unsigned i = 0; i < ls->srv->nlisteners; i++)
			(void)loop_set_events(l, ls->srv->listeners[i].fd, 0);
	} else if (b->outage) {
		log_info("accept: accepting connections again after %llu pauses",
			 (unsigned long long)b->outage);
		b->outage = 0;
	}
}

/* The accept back-off: the listener is watched again when it ends. */
static int boss_before_sleep(struct loop *l, void *arg)
{
	struct server *s = arg;
	struct accept_backoff *b = &s->backoff;
	if (!b->until_ms)
		return -1;
	uint64_t now = loop_clock_ms();
	if (now < b->until_ms)
		return (int)(b->until_ms - now);
	b->until_ms = 0;
	for (unsigned i = 0; i < s->nlisteners; i++)
		(void)loop_set_events(l, s->listeners[i].fd, LOOP_IN);
	return -1;
}

/* A new certificate context is built here, never on a reactor. */
static void boss_watch_certificates(struct loop *l, void *arg)
{
	(void)l;
	net_transport_watch(arg);
}

int boss_start(struct server *s)
{
	if (!s->params.no_own_port)
		s->listeners[0].port = s->params.port;
	if (!s->nlisteners)
		return RMQNS_EINVAL;
	for (unsigned i = 0; i < s->nlisteners; i++) {
		struct listener *ls = &s->listeners[i];
		int rc = net_listen(ls->bind, ls->port, s->params.backlog, ls->what, &ls->fd, &ls->port);
		if (rc < 0)
			return rc;
	}
	uint64_t watch_ms = net_transport_watch_ms(s);
	s->boss_loop = loop_create("boss");
	if (!s->boss_loop ||
	    (watch_ms && loop_every(s->boss_loop, watch_ms, boss_watch_certificates, s) < 0))
		return RMQNS_EIO;
	for (unsigned i = 0; i < s->nlisteners; i++)
		if (loop_watch(s->boss_loop, s->listeners[i].fd, LOOP_IN, boss_on_listener,
			       &s->listeners[i]) < 0)
			return RMQNS_EIO;
	loop_set_hooks(s->boss_loop, &(struct loop_hooks){ .before_sleep = boss_before_sleep, .data = s });
	return RMQNS_OK;
}

int boss_run(struct server *s)
{
	return loop_spawn(s->boss_loop, "boss", -1);
}

void boss_stop(struct server *s)
{
	if (loop_spawned(s->boss_loop)) {
		loop_stop(s->boss_loop);
		loop_join(s->boss_loop);
	}
	for (unsigned i = 0; i < s->nlisteners; i++) {
		struct listener *ls = &s->listeners[i];
		if (ls->fd < 0)
			continue;
		if (s->boss_loop)
			loop_unwatch(s->boss_loop, ls->fd);
		close(ls->fd);
		ls->fd = -1;
	}
}

void boss_destroy(struct server *s)
{
	boss_stop(s);
	loop_destroy(s->boss_loop);
	s->boss_loop = NULL;
}
