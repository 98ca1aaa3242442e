/* The HTTP server (http.h): a listener and at most max_conns connections
 * on one thread's event loop. Every connection has one deadline from its
 * accept: the request head must arrive and the answer leave within it. A
 * new connection that finds every slot taken closes the oldest one still
 * reading its request (idle or slow peers cannot crowd out a probe), else
 * the oldest answered one; only when every slot is writing an answer do
 * new ones wait in the backlog.
 * A head that outgrows max_request is answered 431. After the answer the
 * write side is shut and what the peer still sends is read and dropped
 * until it closes (or the deadline), so the answer is not lost to a reset.
 * With a TLS context (http_params.tls_context) a connection is TLS from
 * its first byte: the handshake and the records run non-blocking on this
 * thread like the plaintext reads and writes, so a slow or silent TLS peer
 * holds its slot until the deadline and nothing else. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "rmqns/err.h"
#include "rmqns/http.h"
#include "rmqns/net.h"
#include "rmqns/log.h"
#include "rmqns/loop.h"
#include "rmqns/metrics.h"
#include "rmqns/tls.h"

#define HTTP_DRAIN_BUF 4096
/* Read in pieces this big: a slot's request buffer grows with what has
 * arrived, so an idle connection holds no buffer at all. */
#define HTTP_READ_CHUNK 1024
/* Connects the kernel holds before the thread accepts them (capped by
 * net.core.somaxconn): a crowd of a thousand gets in and is sorted here. */
#define HTTP_BACKLOG 1024
/* Accepts per turn, so a flood of connects cannot starve the requests
 * already in (the listener stays readable and comes back next turn). */
#define HTTP_ACCEPT_BATCH 64
/* At most one log line this often about connections closed to make room. */
#define HTTP_EVICT_LOG_MS 5000u
/* Out of descriptors (or memory): the listener is left out of the wait
 * this long, so the thread does not spin on a connect it cannot take. */
#define HTTP_ACCEPT_PAUSE_MS 1000u
/* What http_io returns besides a byte count (0 = the peer's end). */
#define HTTP_IO_AGAIN (-1) /* would block: the events to wait for are set */
#define HTTP_IO_ERROR (-2)

enum http_state { HTTP_READING, HTTP_WRITING, HTTP_DRAINING };

struct http_conn {
	int fd;
	enum http_state state;
	uint64_t deadline_ms;
	struct http_conn *older, *newer; /* open connections in accept order */
	struct http_server *server;
	struct buf in; /* the request head so far; none while idle, freed once answered */
	struct buf out;
	size_t out_off;
	SSL *ssl;     /* NULL = plaintext */
	bool sniffed; /* the first byte was a TLS handshake's */
};

struct http_server {
	struct http_params p;
	char bind[64];
	int listenfd;
	struct loop *loop;
	int port;
	uint64_t accept_paused_until_ms; /* 0, or no accepts before then */
	unsigned nconns;
	struct http_conn *conns; /* max_conns slots; fd < 0 = free */
	/* The open connections, oldest first: accept order is deadline order
	 * (one deadline for all), so the head expires first. */
	struct http_conn *oldest, *newest;
	uint64_t evicted_unlogged; /* evictions since the last log line */
	uint64_t evict_logged_ms;  /* when that line was written (0 = never) */
	uint64_t next_tick_ms;     /* when on_tick is due */
};

struct http_server *http_create(const struct http_params *p, int *err)
{
	int dummy;
	if (!err)
		err = &dummy;
	struct http_server *h = calloc(1, sizeof *h);
	if (!h) {
		*err = RMQNS_ENOMEM;
		return NULL;
	}
	h->p = *p;
	if (!h->p.max_conns)
		h->p.max_conns = HTTP_MAX_CONNS_DEFAULT;
	if (!h->p.max_request)
		h->p.max_request = HTTP_MAX_REQUEST_DEFAULT;
	if (!h->p.deadline_ms)
		h->p.deadline_ms = HTTP_DEADLINE_MS_DEFAULT;
	snprintf(h->bind, sizeof h->bind, "%s",
		 p->bind_address && *p->bind_address ? p->bind_address : "127.0.0.1");
	h->p.bind_address = h->bind;
	h->listenfd = -1;
	h->conns = calloc(h->p.max_conns, sizeof *h->conns);
	if (!h->conns) {
		free(h);
		*err = RMQNS_ENOMEM;
		return NULL;
	}
	for (unsigned i = 0; i < h->p.max_conns; i++)
		h->conns[i].fd = -1;
	*err = RMQNS_OK;
	return h;
}

static int http_listen(struct http_server *h)
{
	return net_listen(h->bind, h->p.port, HTTP_BACKLOG, "httpBindAddress", &h->listenfd,
			  &h->port);
}

/* With every slot writing an answer the listener is left out of the wait:
 * further connects wait in the kernel's backlog until one finishes (a
 * deadline at most). */
static void http_listen_interest(struct http_server *h, bool on)
{
	if (on && h->accept_paused_until_ms)
		return; /* http_expire turns it back on */
	(void)loop_set_events(h->loop, h->listenfd, on ? LOOP_IN : 0);
}

static void http_list_append(struct http_server *h, struct http_conn *c)
{
	c->newer = NULL;
	c->older = h->newest;
	if (h->newest)
		h->newest->newer = c;
	else
		h->oldest = c;
	h->newest = c;
}

static void http_list_remove(struct http_server *h, struct http_conn *c)
{
	if (c->older)
		c->older->newer = c->newer;
	else
		h->oldest = c->newer;
	if (c->newer)
		c->newer->older = c->older;
	else
		h->newest = c->older;
	c->older = c->newer = NULL;
}

static void http_close(struct http_server *h, struct http_conn *c)
{
	loop_unwatch(h->loop, c->fd);
	close(c->fd);
	c->fd = -1;
	if (c->ssl) {
		SSL_free(c->ssl);
		c->ssl = NULL;
		ERR_clear_error();
	}
	http_list_remove(h, c);
	buf_free(&c->in);
	buf_free(&c->out);
	h->nconns--;
	http_listen_interest(h, true);
}

static void http_set_events(struct http_server *h, struct http_conn *c, uint32_t events)
{
	(void)loop_set_events(h->loop, c->fd, events);
}

static const char *http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	default: return "Unknown";
	}
}

static void http_tls_failed(struct http_conn *c, int err)
{
	char why[256] = "connection closed";
	unsigned long e = ERR_get_error();
	if (e)
		ERR_error_string_n(e, why, sizeof why);
	else if (err == SSL_ERROR_SYSCALL && errno)
		snprintf(why, sizeof why, "%s", strerror(errno));
	ERR_clear_error();
	if (!SSL_is_init_finished(c->ssl)) {
		metrics_add(MC_HTTP_REJECTED, 1);
		log_warn_limited("http: TLS handshake failed: %s", why);
	}
}

/* One read (write false) or write on the connection, plaintext or TLS:
 * the bytes moved, 0 at the peer's end, HTTP_IO_AGAIN or HTTP_IO_ERROR. */
static ssize_t http_io(struct http_server *h, struct http_conn *c, void *p, size_t n, bool write)
{
	if (!c->ssl) {
		for (;;) {
			ssize_t r = write ? send(c->fd, p, n, MSG_NOSIGNAL) : recv(c->fd, p, n, 0);
			if (r >= 0)
				return r;
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return HTTP_IO_ERROR;
			if (write)
				http_set_events(h, c, LOOP_OUT);
			return HTTP_IO_AGAIN;
		}
	}
	ERR_clear_error();
	int r = write ? SSL_write(c->ssl, p, (int)n) : SSL_read(c->ssl, p, (int)n);
	if (r > 0)
		return r;
	int err = SSL_get_error(c->ssl, r);
	switch (err) {
	case SSL_ERROR_WANT_READ:
		http_set_events(h, c, LOOP_IN);
		return HTTP_IO_AGAIN;
	case SSL_ERROR_WANT_WRITE:
		http_set_events(h, c, LOOP_OUT);
		return HTTP_IO_AGAIN;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	default:
		http_tls_failed(c, err);
		return HTTP_IO_ERROR;
	}
}

/* Writes what is pending; on completion shuts the write side and drains. */
static void http_flush(struct http_server *h, struct http_conn *c)
{
	while (c->out_off < c->out.len) {
		ssize_t n = http_io(h, c, c->out.data + c->out_off, c->out.len - c->out_off, true);
		if (n > 0) {
			c->out_off += (size_t)n;
			continue;
		}
		if (n == HTTP_IO_AGAIN)
			return;
		http_close(h, c);
		return;
	}
	if (c->ssl) {
		(void)SSL_shutdown(c->ssl); /* one try at close_notify, never waited for */
		ERR_clear_error();
	}
	shutdown(c->fd, SHUT_WR);
	c->state = HTTP_DRAINING;
	http_set_events(h, c, LOOP_IN | LOOP_RDHUP);
	http_listen_interest(h, true); /* it may now make room for a new one */
}

/* Queues the whole answer; body may be NULL (HEAD or an error). */
static void http_answer(struct http_server *h, struct http_conn *c, int status,
			const char *ctype, const struct buf *body, bool head_only,
			const char *extra_header)
{
	size_t blen = body ? body->len : 0;
	c->out.len = 0;
	c->out_off = 0;
	int rc = buf_printf(&c->out,
			    "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			    "Cache-Control: no-store\r\nConnection: close\r\n%s\r\n",
			    status, http_reason(status), ctype ? ctype : "text/plain; charset=utf-8",
			    blen, extra_header ? extra_header : "");
	if (rc >= 0 && blen && !head_only)
		rc = buf_append(&c->out, body->data, blen);
	if (rc < 0) {
		log_warn("http: out of memory for an answer");
		http_close(h, c);
		return;
	}
	c->state = HTTP_WRITING;
	http_flush(h, c);
}

static void http_error(struct http_server *h, struct http_conn *c, int status, const char *text)
{
	struct buf b = BUF_INIT;
	if (buf_printf(&b, "%s\n", text) < 0)
		b.len = 0;
	http_answer(h, c, status, NULL, &b, false,
		    status == 405 ? "Allow: GET, HEAD\r\n" : NULL);
	buf_free(&b);
}

static bool http_token_char(char ch)
{
	return ch > ' ' && ch < 0x7f;
}

/* The value of header `name` among the header lines, or NULL; the value
 * runs to its line's end (the caller cuts it there). */
static char *http_header_value(char *lines, const char *name)
{
	size_t n = strlen(name);
	for (char *l = lines; l && *l;) {
		l += strspn(l, "\r\n");
		if (strncasecmp(l, name, n) == 0 && l[n] == ':')
			return l + n + 1 + strspn(l + n + 1, " \t");
		l = strchr(l, '\n');
	}
	return NULL;
}

/* The request head is whole in c->in (NUL-terminated at its end). */
static void http_dispatch(struct http_server *h, struct http_conn *c)
{
	char *line = (char *)c->in.data;
	char *eol = strpbrk(line, "\r\n");
	if (!eol) {
		http_error(h, c, 400, "bad request line");
		return;
	}
	*eol = '\0';
	char *sp1 = strchr(line, ' ');
	char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
	if (!sp1 || !sp2 || sp1 == line || sp2 == sp1 + 1 || strchr(sp2 + 1, ' ')) {
		http_error(h, c, 400, "bad request line");
		return;
	}
	*sp1 = *sp2 = '\0';
	const char *method = line, *target = sp1 + 1, *version = sp2 + 1;
	for (const char *p = line; p < sp2; p++) {
		if (*p && !http_token_char(*p)) {
			http_error(h, c, 400, "bad request line");
			return;
		}
	}
	if (strncmp(version, "HTTP/1.", 7) != 0 || !version[7] || version[8] || target[0] != '/') {
		http_error(h, c, 400, "bad request line");
		return;
	}
	bool head = strcmp(method, "HEAD") == 0;
	if (!head && strcmp(method, "GET") != 0) {
		http_error(h, c, 405, "only GET and HEAD");
		return;
	}
	/* a request with a body is not one of ours */
	for (char *p = eol + 1; (p = strcasestr(p, "\ncontent-length:")) != NULL; p++) {
		long n = strtol(p + 16, NULL, 10);
		if (n != 0) {
			http_error(h, c, 400, "no request body expected");
			return;
		}
	}
	if (strcasestr(eol + 1, "\ntransfer-encoding:")) {
		http_error(h, c, 400, "no request body expected");
		return;
	}
	char *authorization = http_header_value(eol + 1, "authorization");
	char *origin = http_header_value(eol + 1, "origin");
	if (authorization)
		authorization[strcspn(authorization, "\r\n")] = '\0';
	if (origin)
		origin[strcspn(origin, "\r\n")] = '\0';
	char path[256];
	const char *q = strchr(target, '?');
	size_t plen = q ? (size_t)(q - target) : strlen(target);
	if (plen >= sizeof path) {
		http_error(h, c, 404, "not found");
		return;
	}
	memcpy(path, target, plen);
	path[plen] = '\0';
	struct http_request req = { method, path, q ? q + 1 : "", authorization, origin };
	struct http_response rsp = { 200, NULL, NULL, BUF_INIT };
	metrics_add(MC_HTTP_REQUESTS, 1);
	if (h->p.admit && !h->p.admit(h->p.arg, &req, &rsp)) {
		http_answer(h, c, rsp.status, rsp.content_type, &rsp.body, head, rsp.headers);
		buf_free(&rsp.body);
		return;
	}
	http_handler_fn fn = h->p.fallback;
	for (size_t i = 0; i < h->p.nroutes; i++)
		if (strcmp(h->p.routes[i].path, path) == 0) {
			fn = h->p.routes[i].fn;
			break;
		}
	if (!fn) {
		http_error(h, c, 404, "not found");
		return;
	}
	fn(h->p.arg, &req, &rsp);
	http_answer(h, c, rsp.status, rsp.content_type, &rsp.body, head, rsp.headers);
	buf_free(&rsp.body);
}

/* The end of the head: a blank line (CRLF CRLF, or bare LFs). */
static char *http_head_end(char *s, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (s[i] != '\n')
			continue;
		if (s[i + 1] == '\n')
			return s + i + 1;
		if (s[i + 1] == '\r' && i + 2 < len && s[i + 2] == '\n')
			return s + i + 2;
	}
	return NULL;
}

/* Reads and drops what an answered peer still sends; closes on its EOF. */
static void http_drain(struct http_server *h, struct http_conn *c)
{
	char sink[HTTP_DRAIN_BUF];
	for (;;) {
		ssize_t n = recv(c->fd, sink, sizeof sink, 0);
		if (n > 0)
			continue;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		http_close(h, c); /* EOF or error: the peer has it all */
		return;
	}
}

/* A TLS connection's first byte: a plaintext request is answered 400 in
 * plaintext (as Go's servers do), so its sender learns why. True when the
 * connection goes on as TLS. */
static bool http_sniff(struct http_server *h, struct http_conn *c)
{
	unsigned char first;
	ssize_t n;
	do
		n = recv(c->fd, &first, 1, MSG_PEEK);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return false;
	if (n <= 0) {
		http_close(h, c);
		return false;
	}
	if (first == TLS_HANDSHAKE_BYTE)
		return c->sniffed = true;
	SSL_free(c->ssl);
	c->ssl = NULL;
	metrics_add(MC_HTTP_REJECTED, 1);
	http_error(h, c, 400, "Client sent an HTTP request to an HTTPS server.");
	return false;
}

static void http_on_readable(struct http_server *h, struct http_conn *c)
{
	if (c->state == HTTP_DRAINING) {
		http_drain(h, c);
		return;
	}
	if (c->ssl && !c->sniffed && !http_sniff(h, c))
		return;
	for (;;) {
		char chunk[HTTP_READ_CHUNK];
		size_t room = h->p.max_request - c->in.len;
		if (room == 0) {
			metrics_add(MC_HTTP_REJECTED, 1);
			http_error(h, c, 431, "request head too large");
			return;
		}
		ssize_t n = http_io(h, c, chunk, room < sizeof chunk ? room : sizeof chunk, false);
		if (n == HTTP_IO_AGAIN)
			return;
		if (n <= 0) {
			http_close(h, c);
			return;
		}
		size_t from = c->in.len > 3 ? c->in.len - 3 : 0;
		if (buf_append(&c->in, chunk, (size_t)n) < 0) {
			log_warn("http: out of memory for a request");
			http_close(h, c);
			return;
		}
		char *end = http_head_end((char *)c->in.data + from, c->in.len - from);
		if (!end)
			continue;
		/* the head ends at its last '\n'; a NUL goes after it (past the
		 * bytes held only when the head is all there is) */
		size_t head_len = (size_t)(end - (char *)c->in.data) + 1;
		if (head_len == c->in.len && buf_terminate(&c->in) < 0) {
			log_warn("http: out of memory for a request");
			http_close(h, c);
			return;
		}
		c->in.data[head_len] = '\0';
		if (memchr(c->in.data, '\0', head_len)) {
			http_error(h, c, 400, "NUL in request");
			return;
		}
		http_dispatch(h, c);
		buf_free(&c->in); /* answered: the slot keeps no request buffer */
		return;
	}
}

/* Writes the count of evictions not yet logged, at most once per
 * HTTP_EVICT_LOG_MS; returns when it may next write (UINT64_MAX: nothing
 * waiting). */
static uint64_t http_evict_log(struct http_server *h, uint64_t now)
{
	if (!h->evicted_unlogged)
		return UINT64_MAX;
	uint64_t next = h->evict_logged_ms ? h->evict_logged_ms + HTTP_EVICT_LOG_MS : 0;
	if (now < next)
		return next;
	log_warn("http: all %u connection slots taken: closed %llu connection%s before a whole "
		 "request, to make room for new ones",
		 h->p.max_conns, (unsigned long long)h->evicted_unlogged,
		 h->evicted_unlogged == 1 ? "" : "s");
	h->evicted_unlogged = 0;
	h->evict_logged_ms = now;
	return UINT64_MAX;
}

/* Whom a new connection may replace when every slot is taken: the oldest
 * still reading its request (idle or slow), else the oldest answered one
 * waiting for its peer to close; never one writing its answer. */
static struct http_conn *http_evictable(struct http_server *h)
{
	struct http_conn *answered = NULL;
	for (struct http_conn *c = h->oldest; c; c = c->newer) {
		if (c->state == HTTP_READING)
			return c;
		if (c->state == HTTP_DRAINING && !answered)
			answered = c;
	}
	return answered;
}

/* Counted (and logged) are the ones cut before their request was whole;
 * an answered one closed early has lost nothing. */
static void http_evict(struct http_server *h, struct http_conn *c)
{
	if (c->state == HTTP_DRAINING) {
		http_drain(h, c); /* what it sent is read, so the close sends no reset */
		if (c->fd >= 0)
			http_close(h, c);
		return;
	}
	metrics_add(MC_HTTP_EVICTED, 1);
	h->evicted_unlogged++;
	http_close(h, c);
	(void)http_evict_log(h, loop_clock_ms());
}

static struct http_conn *http_free_slot(struct http_server *h)
{
	for (unsigned i = 0; i < h->p.max_conns; i++)
		if (h->conns[i].fd < 0)
			return &h->conns[i];
	return NULL;
}

static void http_on_conn_event(struct loop *l, int fd, uint32_t events, void *arg)
{
	(void)l;
	(void)fd;
	(void)events;
	struct http_conn *c = arg;
	struct http_server *h = c->server;
	if (c->state == HTTP_WRITING)
		http_flush(h, c);
	else
		http_on_readable(h, c);
}

/* A new connection's SSL object, when the port speaks TLS now; -1
 * (logged) when there is no memory for it. */
static int http_conn_tls(struct http_server *h, struct http_conn *c)
{
	SSL_CTX *ctx = h->p.tls_context ? h->p.tls_context(h->p.arg) : NULL;
	if (!ctx)
		return 0;
	if (!(c->ssl = SSL_new(ctx)) || SSL_set_fd(c->ssl, c->fd) != 1) {
		log_warn_limited("http: out of memory for a TLS connection");
		return -1;
	}
	SSL_set_accept_state(c->ssl);
	return 0;
}

static void http_accept_some(struct http_server *h)
{
	for (unsigned i = 0; i < HTTP_ACCEPT_BATCH; i++) {
		bool full = h->nconns >= h->p.max_conns;
		if (full && !http_evictable(h)) {
			http_listen_interest(h, false);
			return;
		}
		int fd = accept4(h->listenfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				log_warn_limited("http: accept: %s; not accepting for %u ms",
						 strerror(errno), HTTP_ACCEPT_PAUSE_MS);
				metrics_add(MC_ACCEPT_PAUSES, 1);
				http_listen_interest(h, false);
				h->accept_paused_until_ms = loop_clock_ms() + HTTP_ACCEPT_PAUSE_MS;
			}
			return;
		}
		if (full)
			http_evict(h, http_evictable(h));
		struct http_conn *c = http_free_slot(h);
		if (!c) { /* cannot happen: a slot was free or made free */
			close(fd);
			metrics_add(MC_HTTP_REJECTED, 1);
			continue;
		}
		memset(c, 0, sizeof *c);
		c->server = h;
		c->fd = fd;
		c->state = HTTP_READING;
		c->deadline_ms = loop_clock_ms() + h->p.deadline_ms;
		if (http_conn_tls(h, c) < 0 ||
		    loop_watch(h->loop, fd, LOOP_IN, http_on_conn_event, c) < 0) {
			SSL_free(c->ssl);
			c->ssl = NULL;
			ERR_clear_error();
			close(fd);
			c->fd = -1;
			continue;
		}
		h->nconns++;
		http_list_append(h, c);
		/* a probe sends its request with the connect: answer it now,
		 * before later accepts could take its slot */
		http_on_readable(h, c);
	}
}

static void http_on_listener(struct loop *l, int fd, uint32_t events, void *arg)
{
	(void)l;
	(void)fd;
	(void)events;
	http_accept_some(arg);
}

/* Closes connections past their deadline and writes a due eviction
 * line; returns how long the loop may wait. */
static int http_expire(struct http_server *h)
{
	uint64_t now = loop_clock_ms();
	while (h->oldest && now >= h->oldest->deadline_ms) {
		if (h->oldest->state != HTTP_DRAINING)
			metrics_add(MC_HTTP_REJECTED, 1);
		http_close(h, h->oldest);
	}
	if (h->accept_paused_until_ms && now >= h->accept_paused_until_ms) {
		h->accept_paused_until_ms = 0;
		http_listen_interest(h, true);
	}
	if (h->p.on_tick && now >= h->next_tick_ms) {
		h->p.on_tick(h->p.arg);
		h->next_tick_ms = now + h->p.tick_ms;
	}
	uint64_t next = http_evict_log(h, now);
	if (h->p.on_tick && h->next_tick_ms < next)
		next = h->next_tick_ms;
	if (h->accept_paused_until_ms && h->accept_paused_until_ms < next)
		next = h->accept_paused_until_ms;
	if (h->oldest && h->oldest->deadline_ms < next)
		next = h->oldest->deadline_ms;
	if (next == UINT64_MAX)
		return -1;
	return (int)(next - now) + 1;
}

static int http_before_sleep(struct loop *l, void *arg)
{
	(void)l;
	return http_expire(arg);
}

static void http_thread_start(struct loop *l, void *arg)
{
	(void)l;
	struct http_server *h = arg;
	if (h->p.on_thread_start)
		h->p.on_thread_start(h->p.arg);
}

static void http_thread_end(struct loop *l, void *arg)
{
	(void)l;
	struct http_server *h = arg;
	while (h->oldest)
		http_close(h, h->oldest);
	if (h->p.on_thread_end)
		h->p.on_thread_end(h->p.arg);
}

int http_start(struct http_server *h)
{
	int rc = http_listen(h);
	if (rc < 0)
		return rc;
	h->loop = loop_create("http");
	if (!h->loop || loop_watch(h->loop, h->listenfd, LOOP_IN, http_on_listener, h) < 0)
		return RMQNS_EIO;
	loop_set_hooks(h->loop, &(struct loop_hooks){ .before_sleep = http_before_sleep,
						      .thread_start = http_thread_start,
						      .thread_end = http_thread_end,
						      .data = h });
	return loop_spawn(h->loop, "http", -1);
}

int http_port(const struct http_server *h)
{
	return h->port;
}

void http_stop(struct http_server *h)
{
	if (!h || !loop_spawned(h->loop))
		return;
	loop_stop(h->loop);
	loop_join(h->loop);
}

void http_destroy(struct http_server *h)
{
	if (!h)
		return;
	http_stop(h);
	if (h->listenfd >= 0)
		close(h->listenfd);
	loop_destroy(h->loop);
	free(h->conns);
	free(h);
}
