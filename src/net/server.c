/* The server's lifecycle and its boss thread: bind and listen, accept and
 * hand each socket to the least-loaded reactor, route what is sent to the
 * reactor owning its connection, and the two-step orderly stop. The boss
 * never reads a byte; connections belong to reactors (reactor.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rmqns/config.h"
#include "rmqns/err.h"
#include "rmqns/log.h"
#include "rmqns/metrics.h"
#include "rmqns/net.h"
#include "rmqns/race.h"
#include "rmqns/remoting.h"

#include "net_internal.h"

void server_params_from_options(struct server_params *p, const struct options *o, unsigned cpus)
{
	memset(p, 0, sizeof *p);
	p->bind_address = o->bindAddress;
	p->port = o->listenPort;
	p->backlog = o->serverSocketBacklog > 0 ? o->serverSocketBacklog : 1024;
	unsigned n = o->serverSelectorThreads > 0 ? (unsigned)o->serverSelectorThreads
						  : (cpus ? cpus : 1u);
	p->reactors = n > NET_MAX_REACTORS ? NET_MAX_REACTORS : n;
	p->max_frame = o->maxFrameSize > 0 && o->maxFrameSize <= INT32_MAX
			       ? (uint32_t)o->maxFrameSize
			       : REMOTING_DEFAULT_MAX_FRAME;
	/* in 64 bits: INT32_MAX seconds is past 2^32 ms */
	p->idle_close_ms = o->serverChannelMaxIdleTimeSeconds > 0
				   ? (uint64_t)o->serverChannelMaxIdleTimeSeconds * 1000u
				   : 0;
	p->outbound_pause_bytes = o->outboundPauseBytes > 0 ? (uint64_t)o->outboundPauseBytes : 0;
	p->outbound_close_bytes = o->outboundCloseBytes > 0 ? (uint64_t)o->outboundCloseBytes : 0;
	p->sndbuf = o->serverSocketSndBufSize;
	p->rcvbuf = o->serverSocketRcvBufSize;
	p->cpu_affinity = o->serverReactorCpuAffinity;
	p->max_inflight = o->serverMaxInflight > 0 ? (uint32_t)o->serverMaxInflight : 0;
	p->memory_budget = o->connectionMemoryBudget > 0 ? (uint64_t)o->connectionMemoryBudget : 0;
	p->tls_options = o;
}

/* The TLS context the options ask for; 0 with *out NULL when disabled. */
static int server_tls_create(const struct options *o, struct tls_server **out)
{
	struct tls_settings ts;
	char err[600];

	*out = NULL;
	if (!o)
		return RMQNS_OK;
	int rc = tls_settings_load(&ts, o, err, sizeof err);
	if (rc < 0) {
		log_error("TLS: %s", err);
		return rc;
	}
	if (ts.mode != TLS_MODE_DISABLED) {
		*out = tls_server_create(&ts, err, sizeof err);
		if (!*out) {
			log_error("TLS: %s", err);
			rc = RMQNS_EINVAL;
		}
	}
	tls_settings_free(&ts);
	return rc;
}

struct server *server_create(const struct server_params *p, const struct net_callbacks *cb,
			     int *err)
{
	int dummy;
	if (!err)
		err = &dummy;
	if (p->reactors < 1 || p->reactors > NET_MAX_REACTORS || p->max_frame < 8 || !cb ||
	    !cb->on_frame) {
		*err = RMQNS_EINVAL;
		return NULL;
	}
	struct server *s = calloc(1, sizeof *s);
	if (!s) {
		*err = RMQNS_ENOMEM;
		return NULL;
	}
	s->params = *p;
	snprintf(s->bind, sizeof s->bind, "%s",
		 p->bind_address && *p->bind_address ? p->bind_address : "0.0.0.0");
	s->params.bind_address = s->bind;
	s->cb = *cb;
	s->listenfd = -1;
	s->boss_stopfd = -1;
	atomic_init(&s->notify_closes, true);
	atomic_init(&s->reactors_gone, false);
	pthread_mutex_init(&s->ack_lock, NULL);
	pthread_cond_init(&s->ack_cond, NULL);
	s->params.tls_options = NULL; /* read here only */
	int trc = server_tls_create(p->tls_options, &s->tls);
	if (trc < 0) {
		server_destroy(s);
		*err = trc;
		return NULL;
	}
	s->reactors = calloc(p->reactors, sizeof *s->reactors);
	if (!s->reactors) {
		server_destroy(s);
		*err = RMQNS_ENOMEM;
		return NULL;
	}
	for (unsigned i = 0; i < p->reactors; i++) {
		int rc = reactor_init(&s->reactors[i], s, i);
		if (rc < 0) {
			server_destroy(s);
			*err = rc;
			return NULL;
		}
		s->nreactors++;
	}
	*err = RMQNS_OK;
	return s;
}

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

static int server_listen(struct server *s)
{
	return net_listen(s->bind, s->params.port, s->params.backlog, "bindAddress", &s->listenfd, &s->port);
}

static void server_tune_socket(struct server *s, int fd)
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
static struct reactor *server_pick_reactor(struct server *s)
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

/* Out of descriptors or memory, the boss stops watching the listener for
 * NET_ACCEPT_PAUSE_MS: the pending connections wait in the kernel's queue
 * instead of making a level-triggered listener wake it at once, over and
 * over. One line tells of the pauses at most every NET_ACCEPT_LOG_MS. */
#define NET_ACCEPT_PAUSE_MS 1000
#define NET_ACCEPT_LOG_MS 10000

/* The boss's accept back-off; the boss thread's alone. */
struct accept_backoff {
	uint64_t until_ms;  /* 0: the listener is watched */
	uint64_t logged_ms; /* when the last pause line went out; 0: never */
	uint64_t unlogged;  /* pauses since that line */
	uint64_t outage;    /* pauses since accepting last worked */
};

/* Accepts until the backlog is empty: 0, or the errno that stopped it
 * short of that (EMFILE, ENFILE, ENOBUFS, ENOMEM, or worse). */
static int server_accept_all(struct server *s)
{
	for (;;) {
		struct net_accepted *a = malloc(sizeof *a);
		if (!a)
			return ENOMEM;
		a->addrlen = sizeof a->addr;
		int fd = accept4(s->listenfd, (struct sockaddr *)&a->addr, &a->addrlen,
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
		server_tune_socket(s, fd);
		reactor_post_accepted(server_pick_reactor(s), a);
	}
}

static uint64_t server_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void server_pause_accepts(struct accept_backoff *b, int e, uint64_t now)
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

/* The boss also watches the certificate files: a new context is built
 * here, never on a reactor. */
static void *server_boss_main(void *arg)
{
	struct server *s = arg;
	struct pollfd fds[2] = {
		{ .fd = s->listenfd, .events = POLLIN },
		{ .fd = s->boss_stopfd, .events = POLLIN },
	};
	struct accept_backoff backoff = { 0 };
	uint64_t watched_ms = server_now_ms();

	log_set_thread_name("boss");
	for (;;) {
		int wait = -1;
		if (backoff.until_ms) {
			uint64_t now = server_now_ms();
			if (now >= backoff.until_ms)
				backoff.until_ms = 0;
			else
				wait = (int)(backoff.until_ms - now);
		}
		fds[0].fd = backoff.until_ms ? -1 : s->listenfd; /* poll skips a negative fd */
		if (s->tls && (wait < 0 || wait > (int)TLS_WATCH_MS))
			wait = (int)TLS_WATCH_MS;
		int n = poll(fds, 2, wait);
		if (n < 0 && errno != EINTR) {
			log_error("boss: poll: %s", strerror(errno));
			break;
		}
		if (n > 0 && (fds[1].revents & POLLIN))
			break;
		if (s->tls && server_now_ms() - watched_ms >= TLS_WATCH_MS) {
			(void)tls_server_watch(s->tls);
			watched_ms = server_now_ms();
		}
		if (n <= 0 || !fds[0].revents)
			continue;
		int e = server_accept_all(s);
		if (e) {
			server_pause_accepts(&backoff, e, server_now_ms());
		} else if (backoff.outage) {
			log_info("accept: accepting connections again after %llu pauses",
				 (unsigned long long)backoff.outage);
			backoff.outage = 0;
		}
	}
	return NULL;
}

int server_start(struct server *s)
{
	int rc = server_listen(s);
	if (rc < 0)
		return rc;
	s->boss_stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->boss_stopfd < 0) {
		log_error("eventfd: %s", strerror(errno));
		return RMQNS_EIO;
	}
	for (unsigned i = 0; i < s->nreactors; i++) {
		rc = reactor_start(&s->reactors[i]);
		if (rc < 0)
			return rc;
	}
	if (pthread_create(&s->boss, NULL, server_boss_main, s) != 0) {
		log_error("cannot start the boss thread");
		return RMQNS_ENOMEM;
	}
	s->boss_started = true;
	log_info("RemotingServer started, listening %s:%d", s->bind, s->port);
	return RMQNS_OK;
}

int server_port(const struct server *s)
{
	return s->port;
}

/* The reactor owning a connection, or NULL when there is none to reach. */
static struct reactor *server_reactor_of(struct server *s, uint64_t conn_id)
{
	uint32_t ri = net_conn_reactor(conn_id);
	if (!s || conn_id == 0 || ri >= s->nreactors ||
	    atomic_load_explicit(&s->reactors_gone, memory_order_acquire))
		return NULL;
	return &s->reactors[ri];
}

int net_send(struct net_conn c, net_head_fn head, void *head_arg, const void *body,
	     size_t body_len)
{
	struct reactor *r = server_reactor_of(c.server, c.id);
	if (!r)
		return RMQNS_ECLOSED;
	return reactor_send(r, c.id, head, head_arg, body, body_len);
}

/* "a.b.c.d:port", "[v6]:port" (or a bare v6 address before the last ':').
 * d->name gets the address written one way only (inet_ntop, the port in
 * decimal, an IPv4-mapped address as IPv4, as accepted peers are named):
 * it is the key outbound connections are reused by, so "127.0.0.1:05000"
 * and "127.0.0.1:5000" share one. */
static int server_parse_dest(const char *addr, struct net_dest *d)
{
	const char *colon = addr ? strrchr(addr, ':') : NULL;
	char host[INET6_ADDRSTRLEN + 2], ip[INET6_ADDRSTRLEN];
	char *end;

	if (!colon || colon == addr || strlen(addr) >= sizeof d->name)
		return RMQNS_EINVAL;
	long port = strtol(colon + 1, &end, 10);
	if (*end || end == colon + 1 || port < 1 || port > 65535)
		return RMQNS_EINVAL;
	size_t hl = (size_t)(colon - addr);
	if (addr[0] == '[' && hl >= 2 && addr[hl - 1] == ']') {
		addr++;
		hl -= 2;
	}
	if (hl >= sizeof host)
		return RMQNS_EINVAL;
	memcpy(host, addr, hl);
	host[hl] = '\0';
	memset(d, 0, sizeof *d);
	struct sockaddr_in *v4 = (struct sockaddr_in *)&d->addr;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&d->addr;
	struct in6_addr a6;
	bool is6 = inet_pton(AF_INET6, host, &a6) == 1;
	if (is6 && !IN6_IS_ADDR_V4MAPPED(&a6)) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
		v6->sin6_addr = a6;
		d->addrlen = sizeof *v6;
		inet_ntop(AF_INET6, &a6, ip, sizeof ip);
		snprintf(d->name, sizeof d->name, "[%s]:%ld", ip, port);
		return RMQNS_OK;
	}
	if (is6)
		memcpy(&v4->sin_addr, &a6.s6_addr[12], 4);
	else if (inet_pton(AF_INET, host, &v4->sin_addr) != 1)
		return RMQNS_EINVAL;
	v4->sin_family = AF_INET;
	v4->sin_port = htons((uint16_t)port);
	d->addrlen = sizeof *v4;
	inet_ntop(AF_INET, &v4->sin_addr, ip, sizeof ip);
	snprintf(d->name, sizeof d->name, "%s:%ld", ip, port);
	return RMQNS_OK;
}

/* FNV-1a: the reactor owning a peer address, the same one every time. */
static unsigned server_dest_reactor(const struct server *s, const char *name)
{
	uint32_t h = 2166136261u;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h % s->nreactors;
}

int net_send_to(struct server *s, const char *addr, const void *frame, size_t len)
{
	if (!s || atomic_load_explicit(&s->reactors_gone, memory_order_acquire))
		return RMQNS_ECLOSED;
	struct net_dest *d = malloc(sizeof *d);
	if (!d)
		return RMQNS_ENOMEM;
	int rc = server_parse_dest(addr, d);
	if (rc < 0) {
		free(d);
		return rc;
	}
	return reactor_post_send_to(&s->reactors[server_dest_reactor(s, d->name)], d, frame, len);
}

int server_close_conn(struct server *s, uint64_t conn_id)
{
	struct reactor *r = server_reactor_of(s, conn_id);
	if (!r)
		return RMQNS_ECLOSED;
	return reactor_post_close(r, conn_id);
}

void server_ack_phase(struct server *s)
{
	pthread_mutex_lock(&s->ack_lock);
	s->acks++;
	pthread_cond_broadcast(&s->ack_cond);
	pthread_mutex_unlock(&s->ack_lock);
}

static void server_set_phase(struct server *s, enum reactor_phase phase)
{
	pthread_mutex_lock(&s->ack_lock);
	s->acks = 0;
	pthread_mutex_unlock(&s->ack_lock);
	for (unsigned i = 0; i < s->nreactors; i++) {
		atomic_store(&s->reactors[i].phase, (int)phase);
		reactor_wake(&s->reactors[i]);
	}
}

static void server_stop_boss(struct server *s)
{
	if (!s->boss_started)
		return;
	uint64_t one = 1;
	if (write(s->boss_stopfd, &one, sizeof one) < 0)
		log_error("boss stop: %s", strerror(errno));
	pthread_join(s->boss, NULL);
	s->boss_started = false;
	close(s->listenfd);
	s->listenfd = -1;
}

void server_quiesce(struct server *s)
{
	server_stop_boss(s);
	server_set_phase(s, REACTOR_QUIESCE);
	pthread_mutex_lock(&s->ack_lock);
	unsigned running = 0;
	for (unsigned i = 0; i < s->nreactors; i++)
		running += s->reactors[i].started;
	while (s->acks < running)
		pthread_cond_wait(&s->ack_cond, &s->ack_lock);
	pthread_mutex_unlock(&s->ack_lock);
}

void server_stop(struct server *s, int flush_ms)
{
	server_stop_boss(s);
	atomic_store(&s->notify_closes, false);
	for (unsigned i = 0; i < s->nreactors; i++)
		s->reactors[i].exit_deadline_ms = (uint64_t)(flush_ms > 0 ? flush_ms : 0);
	server_set_phase(s, REACTOR_EXIT);
	for (unsigned i = 0; i < s->nreactors; i++)
		reactor_join(&s->reactors[i]);
	atomic_store_explicit(&s->reactors_gone, true, memory_order_release);
}

unsigned server_conn_count(struct server *s)
{
	unsigned n = 0;
	for (unsigned i = 0; i < s->nreactors; i++)
		n += atomic_load_explicit(&s->reactors[i].conn_count, memory_order_relaxed);
	return n;
}

int64_t server_held_bytes(struct server *s)
{
	return atomic_load_explicit(&s->held_bytes, memory_order_relaxed);
}

uint64_t server_memory_budget(const struct server *s)
{
	return s->params.memory_budget;
}

unsigned server_reactor_count(const struct server *s)
{
	return s->nreactors;
}

unsigned server_reactor_conn_count(struct server *s, unsigned i)
{
	return i < s->nreactors
		? atomic_load_explicit(&s->reactors[i].conn_count, memory_order_relaxed) : 0;
}

uint64_t server_reactor_turn_ms(struct server *s, unsigned i)
{
	return i < s->nreactors ? atomic_load_explicit(&s->reactors[i].turn_ms, memory_order_relaxed)
				: 0;
}

void server_destroy(struct server *s)
{
	if (!s)
		return;
	if (s->boss_started || (s->reactors && s->nreactors && s->reactors[0].started))
		server_stop(s, 0);
	for (unsigned i = 0; i < s->nreactors; i++)
		reactor_cleanup(&s->reactors[i]);
	free(s->reactors);
	tls_server_destroy(s->tls); /* after the connections holding its SSLs */
	if (s->listenfd >= 0)
		close(s->listenfd);
	if (s->boss_stopfd >= 0)
		close(s->boss_stopfd);
	pthread_cond_destroy(&s->ack_cond);
	pthread_mutex_destroy(&s->ack_lock);
	free(s);
}
