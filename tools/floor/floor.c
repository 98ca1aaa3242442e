/* rmqns-floor: the fastest answer this machine can give to a RocketMQ
 * request. Cuts frames and decodes headers with the project's codec (work
 * any NameServer must do), then answers every two-way request with code 0
 * and one fixed, real-looking TopicRouteData body: no lookup, no locks, no
 * hand-off between threads. What rmqns reaches is judged against it.
 * Threads each own an epoll set and their connections; the first thread
 * also accepts and deals connections round-robin. Reads are batched, and
 * each connection gets one write per round of events. */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rmqns/buf.h"
#include "rmqns/err.h"
#include "rmqns/json_body.h"
#include "rmqns/remoting.h"

#define FLOOR_MAX_THREADS 64
#define FLOOR_READ_CHUNK (256u * 1024u)
#define FLOOR_EVENTS 512
/* stop reading a connection whose unsent answers pass this */
#define FLOOR_OUT_PAUSE (8u << 20)

struct floor_conn {
	int fd;
	bool dirty;
	bool dead;              /* closed while on the dirty list: freed when taken off */
	bool want_out;
	struct buf in;
	size_t in_off;
	struct buf out;
	size_t out_off;
	struct floor_conn *next_dirty;
	struct floor_conn *prev, *next; /* the worker's connections */
};

struct floor_worker {
	int index;
	int epfd;
	int evfd;               /* wakes the worker when handed a connection */
	pthread_t thread;
	pthread_mutex_t lock;   /* guards handed[] */
	int *handed;
	size_t nhanded, cap_handed;
	uint64_t answered;
	struct floor_conn *conns;
};

static struct {
	const uint8_t *body;
	size_t body_len;
	int listen_fd;
	int nthreads;
	struct floor_worker workers[FLOOR_MAX_THREADS];
	atomic_uint next_worker;
} floor_g;

static atomic_int floor_stop;

static void floor_on_signal(int sig)
{
	(void)sig;
	atomic_store(&floor_stop, 1);
}

/* ---- the fixed answer ---- */

/* A route of `brokers` master brokers with 8 queues each, in the
 * standard form a 5.x client asks for. */
static int floor_build_body(struct buf *out, uint32_t brokers)
{
	struct jw w;
	char name[64], addr[64];
	jw_init(&w, out, JW_STANDARD);
	jw_obj_begin(&w);
	jw_key(&w, "brokerDatas");
	jw_arr_begin(&w);
	for (uint32_t i = 0; i < brokers; i++) {
		snprintf(name, sizeof(name), "bench-broker-%u", i);
		snprintf(addr, sizeof(addr), "127.0.0.1:%u", 20000 + 2 * i);
		jw_obj_begin(&w);
		jw_key(&w, "brokerAddrs");
		jw_obj_begin(&w);
		jw_key_int(&w, 0);
		jw_str(&w, addr);
		jw_obj_end(&w);
		jw_member_str(&w, "brokerName", name);
		jw_member_str(&w, "cluster", "BenchCluster");
		jw_member_bool(&w, "enableActingMaster", false);
		jw_obj_end(&w);
	}
	jw_arr_end(&w);
	jw_key(&w, "filterServerTable");
	jw_obj_begin(&w);
	jw_obj_end(&w);
	jw_key(&w, "queueDatas");
	jw_arr_begin(&w);
	for (uint32_t i = 0; i < brokers; i++) {
		snprintf(name, sizeof(name), "bench-broker-%u", i);
		jw_obj_begin(&w);
		jw_member_str(&w, "brokerName", name);
		jw_member_int(&w, "perm", 6);
		jw_member_int(&w, "readQueueNums", 8);
		jw_member_int(&w, "topicSysFlag", 0);
		jw_member_int(&w, "writeQueueNums", 8);
		jw_obj_end(&w);
	}
	jw_arr_end(&w);
	jw_obj_end(&w);
	return jw_error(&w) ? RMQNS_ENOMEM : RMQNS_OK;
}

static int floor_load_file(const char *path, struct buf *out)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return RMQNS_EIO;
	char chunk[65536];
	size_t n;
	int rc = RMQNS_OK;
	while (!rc && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		rc = buf_append(out, chunk, n);
	if (ferror(f))
		rc = RMQNS_EIO;
	fclose(f);
	return rc;
}

/* ---- connections ---- */

static void floor_conn_close(struct floor_worker *w, struct floor_conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	buf_free(&c->in);
	buf_free(&c->out);
	free(c);
}

static int floor_conn_add(struct floor_worker *w, int fd)
{
	struct floor_conn *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return RMQNS_ENOMEM;
	}
	c->fd = fd;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		close(fd);
		free(c);
		return RMQNS_EIO;
	}
	c->next = w->conns;
	if (w->conns)
		w->conns->prev = c;
	w->conns = c;
	return RMQNS_OK;
}

/* Answers every whole frame received so far. false: close the connection. */
static bool floor_conn_answer(struct floor_worker *w, struct floor_conn *c)
{
	while (c->in_off < c->in.len) {
		size_t fs;
		const uint8_t *p = c->in.data + c->in_off;
		int rc = remoting_frame_cut(p, c->in.len - c->in_off, REMOTING_DEFAULT_MAX_FRAME, &fs);
		if (rc == RMQNS_EAGAIN)
			break;
		if (rc)
			return false;
		struct remoting_cmd req, rsp;
		if (remoting_decode(p, fs, &req) != RMQNS_OK)
			return false;
		c->in_off += fs;
		if (remoting_is_response(&req) || remoting_is_oneway(&req)) {
			remoting_cmd_release(&req);
			continue;
		}
		remoting_response_init(&rsp, &req, RSP_SUCCESS, NULL);
		rc = remoting_encode_head(&rsp, (uint32_t)floor_g.body_len, &c->out);
		if (!rc)
			rc = buf_append(&c->out, floor_g.body, floor_g.body_len);
		remoting_cmd_release(&req);
		if (rc)
			return false;
		w->answered++;
	}
	buf_consume(&c->in, c->in_off);
	c->in_off = 0;
	return true;
}

static bool floor_conn_read(struct floor_worker *w, struct floor_conn *c)
{
	if (c->out.len - c->out_off > FLOOR_OUT_PAUSE)
		return true; /* a reader that does not read its answers waits */
	if (buf_reserve(&c->in, FLOOR_READ_CHUNK))
		return false;
	ssize_t n = read(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len);
	if (n == 0)
		return false;
	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	c->in.len += (size_t)n;
	return floor_conn_answer(w, c);
}

static bool floor_conn_flush(struct floor_worker *w, struct floor_conn *c)
{
	while (c->out_off < c->out.len) {
		ssize_t n = send(c->fd, c->out.data + c->out_off, c->out.len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return false;
			if (!c->want_out) {
				struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.ptr = c };
				if (epoll_ctl(w->epfd, EPOLL_CTL_MOD, c->fd, &ev) != 0)
					return false;
				c->want_out = true;
			}
			return true;
		}
		c->out_off += (size_t)n;
	}
	c->out.len = c->out_off = 0;
	if (c->want_out) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
		if (epoll_ctl(w->epfd, EPOLL_CTL_MOD, c->fd, &ev) != 0)
			return false;
		c->want_out = false;
	}
	return true;
}

/* ---- accepting and handing over ---- */

static void floor_hand(struct floor_worker *to, int fd)
{
	pthread_mutex_lock(&to->lock);
	if (to->nhanded == to->cap_handed) {
		size_t cap = to->cap_handed ? to->cap_handed * 2 : 64;
		int *n = realloc(to->handed, cap * sizeof(int));
		if (!n) {
			pthread_mutex_unlock(&to->lock);
			close(fd);
			return;
		}
		to->handed = n;
		to->cap_handed = cap;
	}
	to->handed[to->nhanded++] = fd;
	pthread_mutex_unlock(&to->lock);
	uint64_t one = 1;
	if (write(to->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		fprintf(stderr, "rmqns-floor: wake-up failed: %s\n", strerror(errno));
}

static void floor_accept(struct floor_worker *w)
{
	for (;;) {
		int fd = accept4(floor_g.listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return; /* EAGAIN, or a transient error: the next event retries */
		int one = 1;
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		unsigned k = atomic_fetch_add(&floor_g.next_worker, 1) % (unsigned)floor_g.nthreads;
		if ((int)k == w->index)
			floor_conn_add(w, fd);
		else
			floor_hand(&floor_g.workers[k], fd);
	}
}

static void floor_take_handed(struct floor_worker *w)
{
	uint64_t v;
	if (read(w->evfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	pthread_mutex_lock(&w->lock);
	size_t n = w->nhanded;
	int fds[256];
	if (n > 256)
		n = 256;
	memcpy(fds, w->handed, n * sizeof(int));
	memmove(w->handed, w->handed + n, (w->nhanded - n) * sizeof(int));
	w->nhanded -= n;
	bool more = w->nhanded > 0;
	pthread_mutex_unlock(&w->lock);
	for (size_t i = 0; i < n; i++)
		floor_conn_add(w, fds[i]);
	if (more) {
		uint64_t one = 1;
		(void)!write(w->evfd, &one, sizeof(one));
	}
}

static char floor_listen_tag, floor_wake_tag;

static void *floor_worker_main(void *arg)
{
	struct floor_worker *w = arg;
	struct epoll_event evs[FLOOR_EVENTS];
	while (!atomic_load(&floor_stop)) {
		int n = epoll_wait(w->epfd, evs, FLOOR_EVENTS, 200);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		struct floor_conn *dirty = NULL;
		for (int i = 0; i < n; i++) {
			void *ptr = evs[i].data.ptr;
			if (ptr == &floor_listen_tag) {
				floor_accept(w);
				continue;
			}
			if (ptr == &floor_wake_tag) {
				floor_take_handed(w);
				continue;
			}
			struct floor_conn *c = ptr;
			if (c->dead)
				continue;
			bool ok = true;
			if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
				ok = floor_conn_read(w, c);
			if (ok && (evs[i].events & EPOLLOUT))
				ok = floor_conn_flush(w, c);
			if (!ok) {
				/* a closed connection still on the dirty list is marked so */
				if (c->dirty) {
					c->dead = true;
					continue;
				}
				floor_conn_close(w, c);
				continue;
			}
			if (c->out.len > c->out_off && !c->dirty) {
				c->dirty = true;
				c->next_dirty = dirty;
				dirty = c;
			}
		}
		/* one write per connection per round */
		while (dirty) {
			struct floor_conn *c = dirty;
			dirty = c->next_dirty;
			c->dirty = false;
			if (c->dead) {
				floor_conn_close(w, c);
				continue;
			}
			if (!floor_conn_flush(w, c))
				floor_conn_close(w, c);
		}
	}
	return NULL;
}

static int floor_listen(const char *bind_addr, const char *port, int *out_port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *res;
	if (getaddrinfo(bind_addr, port, &hints, &res) != 0)
		return -1;
	int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
		if (fd >= 0)
			close(fd);
		freeaddrinfo(res);
		return -1;
	}
	freeaddrinfo(res);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	*out_port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
					     : ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

static void floor_usage(FILE *f)
{
	fputs("Usage: rmqns-floor [OPTIONS]\n"
	      "\n"
	      "Answers every two-way RocketMQ request with code 0 and one fixed route body,\n"
	      "as fast as it can: the ceiling any NameServer on this machine can reach.\n"
	      "Runs until SIGINT/SIGTERM (or --duration). Prints the port it listens on.\n"
	      "\n"
	      "  -b, --bind ADDR         address to listen on (default 127.0.0.1)\n"
	      "  -P, --port N            port (default 9876; 0 = any free port)\n"
	      "  -T, --threads N         event-loop threads (default: number of CPUs)\n"
	      "      --route-brokers K   answer a route of K brokers (default 1, ~260 bytes)\n"
	      "      --body-bytes N      answer the smallest such route of at least N bytes\n"
	      "      --body-file FILE    answer FILE's bytes instead\n"
	      "      --duration SECONDS  exit by itself after this long (default: never)\n"
	      "  -h, --help              this text\n", f);
}

int main(int argc, char **argv)
{
	const char *bind_addr = "127.0.0.1", *port = "9876", *body_file = NULL;
	long threads = sysconf(_SC_NPROCESSORS_ONLN), brokers = 1, body_bytes = 0, duration = 0;
	static const struct option lo[] = {
		{ "bind", required_argument, NULL, 'b' },
		{ "port", required_argument, NULL, 'P' },
		{ "threads", required_argument, NULL, 'T' },
		{ "route-brokers", required_argument, NULL, 'k' },
		{ "body-bytes", required_argument, NULL, 's' },
		{ "body-file", required_argument, NULL, 'f' },
		{ "duration", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	char *end;
	while ((c = getopt_long(argc, argv, "b:P:T:h", lo, NULL)) != -1) {
		switch (c) {
		case 'b': bind_addr = optarg; break;
		case 'P': port = optarg; break;
		case 'T':
			threads = strtol(optarg, &end, 10);
			if (*end || threads < 1 || threads > FLOOR_MAX_THREADS)
				goto usage;
			break;
		case 'k':
			brokers = strtol(optarg, &end, 10);
			if (*end || brokers < 1 || brokers > 10000)
				goto usage;
			break;
		case 's':
			body_bytes = strtol(optarg, &end, 10);
			if (*end || body_bytes < 1 || body_bytes > (1L << 24))
				goto usage;
			break;
		case 'f': body_file = optarg; break;
		case 'd':
			duration = strtol(optarg, &end, 10);
			if (*end || duration < 1)
				goto usage;
			break;
		case 'h':
			floor_usage(stdout);
			return 0;
		default:
			goto usage;
		}
	}
	if (optind != argc)
		goto usage;
	if (threads < 1)
		threads = 1;
	if (threads > FLOOR_MAX_THREADS)
		threads = FLOOR_MAX_THREADS;

	struct buf body = BUF_INIT;
	int rc;
	if (body_file) {
		rc = floor_load_file(body_file, &body);
	} else {
		rc = floor_build_body(&body, (uint32_t)brokers);
		while (!rc && body_bytes && body.len < (size_t)body_bytes) {
			buf_reset(&body);
			rc = floor_build_body(&body, (uint32_t)++brokers);
		}
	}
	if (rc) {
		fprintf(stderr, "rmqns-floor: cannot build the answer body: %s\n", rmqns_strerror(rc));
		return 1;
	}
	floor_g.body = body.data;
	floor_g.body_len = body.len;
	floor_g.nthreads = (int)threads;

	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = floor_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	int bound_port = 0;
	floor_g.listen_fd = floor_listen(bind_addr, port, &bound_port);
	if (floor_g.listen_fd < 0) {
		fprintf(stderr, "rmqns-floor: cannot listen on %s:%s: %s\n", bind_addr, port, strerror(errno));
		return 1;
	}
	for (int i = 0; i < floor_g.nthreads; i++) {
		struct floor_worker *w = &floor_g.workers[i];
		w->index = i;
		w->epfd = epoll_create1(EPOLL_CLOEXEC);
		w->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		pthread_mutex_init(&w->lock, NULL);
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &floor_wake_tag };
		if (w->epfd < 0 || w->evfd < 0 || epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->evfd, &ev) != 0) {
			fprintf(stderr, "rmqns-floor: epoll setup: %s\n", strerror(errno));
			return 1;
		}
	}
	struct epoll_event lev = { .events = EPOLLIN, .data.ptr = &floor_listen_tag };
	if (epoll_ctl(floor_g.workers[0].epfd, EPOLL_CTL_ADD, floor_g.listen_fd, &lev) != 0) {
		fprintf(stderr, "rmqns-floor: epoll setup: %s\n", strerror(errno));
		return 1;
	}
	printf("rmqns-floor listening on %s:%d (%d threads, answer body %zu bytes)\n", bind_addr,
	       bound_port, floor_g.nthreads, floor_g.body_len);
	fflush(stdout);
	for (int i = 1; i < floor_g.nthreads; i++)
		if (pthread_create(&floor_g.workers[i].thread, NULL, floor_worker_main,
				   &floor_g.workers[i]) != 0) {
			fprintf(stderr, "rmqns-floor: cannot start thread %d\n", i);
			return 1;
		}
	sigaction(SIGALRM, &sa, NULL);
	if (duration)
		alarm((unsigned)duration);
	floor_worker_main(&floor_g.workers[0]);
	uint64_t total = floor_g.workers[0].answered;
	for (int i = 1; i < floor_g.nthreads; i++) {
		pthread_join(floor_g.workers[i].thread, NULL);
		total += floor_g.workers[i].answered;
	}
	for (int i = 0; i < floor_g.nthreads; i++) {
		struct floor_worker *w = &floor_g.workers[i];
		while (w->conns)
			floor_conn_close(w, w->conns);
		for (size_t k = 0; k < w->nhanded; k++)
			close(w->handed[k]);
		free(w->handed);
		close(w->evfd);
		close(w->epfd);
		pthread_mutex_destroy(&w->lock);
	}
	fprintf(stderr, "rmqns-floor: answered %llu requests\n", (unsigned long long)total);
	close(floor_g.listen_fd);
	buf_free(&body);
	return 0;

usage:
	floor_usage(stderr);
	return 2;
}
