/* The blocking remoting client (client.h) used by tests and admin tools:
 * one non-blocking socket (optionally under a TLS session) driven with
 * poll() so that every operation has a timeout, a read buffer frames are
 * cut from, and a list of answers that arrived while client_call waited
 * for another one. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "client_tls_session.h"
#include "rmqns/client.h"
#include "rmqns/err.h"

#define CLIENT_RBUF_INITIAL 65536u

struct client {
	int fd;
	struct ssl_st *ssl; /* NULL: plaintext */
	char tls_why[200]; /* why the session failed after the handshake */
	int32_t next_opaque;
	uint8_t *rbuf;
	size_t rpos, rlen, rcap;
	struct client_reply *pending_head, *pending_tail;
};

static int64_t client_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t client_deadline(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : client_now_ms() + timeout_ms;
}

/* Waits for events on the socket until the deadline (-1: forever).
 * RMQNS_OK when ready, RMQNS_EAGAIN on timeout. */
static int client_wait(const struct client *c, short events, int64_t deadline)
{
	for (;;) {
		int timeout = -1;
		if (deadline >= 0) {
			int64_t left = deadline - client_now_ms();
			if (left <= 0)
				return RMQNS_EAGAIN;
			timeout = left > 1000000 ? 1000000 : (int)left;
		}
		struct pollfd pfd = { .fd = c->fd, .events = events };
		int n = poll(&pfd, 1, timeout);
		if (n > 0)
			return RMQNS_OK;
		if (n < 0 && errno != EINTR)
			return RMQNS_EIO;
	}
}

struct client *client_connect(const char *host, int port, int timeout_ms, int *err)
{
	return client_connect_rcvbuf(host, port, timeout_ms, 0, err);
}

/* Binds fd to the numeric address source (any port); 0 or -1. */
static int client_bind_source(int fd, const char *source)
{
	struct addrinfo hints = { 0 }, *res = NULL;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
	if (getaddrinfo(source, "0", &hints, &res) != 0)
		return -1;
	int rc = bind(fd, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return rc;
}

static struct client *client_connect_opts(const char *host, int port, int timeout_ms, int rcvbuf,
					  const char *source, int *err)
{
	int dummy;
	if (!err)
		err = &dummy;
	struct addrinfo hints = { 0 }, *res = NULL;
	char portstr[16];
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	snprintf(portstr, sizeof portstr, "%d", port);
	if (!host || port <= 0 || port > 65535 || getaddrinfo(host, portstr, &hints, &res) != 0) {
		*err = RMQNS_EINVAL;
		return NULL;
	}
	struct client *c = calloc(1, sizeof *c);
	if (c) {
		c->rcap = CLIENT_RBUF_INITIAL;
		c->rbuf = malloc(c->rcap);
		if (!c->rbuf) {
			free(c);
			c = NULL;
		}
	}
	if (!c) {
		freeaddrinfo(res);
		*err = RMQNS_ENOMEM;
		return NULL;
	}
	c->fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->fd < 0) {
		freeaddrinfo(res);
		free(c->rbuf);
		free(c);
		*err = RMQNS_EIO;
		return NULL;
	}
	/* Before connect, so the window scale the peer learns matches it. */
	if ((rcvbuf > 0 && setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf) < 0) ||
	    (source && client_bind_source(c->fd, source) < 0)) {
		freeaddrinfo(res);
		close(c->fd);
		free(c->rbuf);
		free(c);
		*err = RMQNS_EIO;
		return NULL;
	}
	int rc = connect(c->fd, res->ai_addr, res->ai_addrlen);
	int cause = rc < 0 ? errno : 0;
	freeaddrinfo(res);
	if (rc < 0 && cause == EINPROGRESS) {
		int soerr = 0;
		socklen_t len = sizeof soerr;
		rc = client_wait(c, POLLOUT, client_deadline(timeout_ms));
		if (rc == RMQNS_EAGAIN)
			cause = ETIMEDOUT;
		else if (rc < 0 || getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
			cause = EIO;
		else
			cause = soerr;
		rc = cause == 0 ? 0 : -1;
	}
	if (rc < 0) {
		close(c->fd);
		free(c->rbuf);
		free(c);
		/* Tools tell the operator which of the two it was. */
		*err = cause == ETIMEDOUT ? RMQNS_EAGAIN : cause == ECONNREFUSED ? RMQNS_ECLOSED : RMQNS_EIO;
		return NULL;
	}
	int one = 1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	*err = RMQNS_OK;
	return c;
}

struct client *client_connect_rcvbuf(const char *host, int port, int timeout_ms, int rcvbuf,
				     int *err)
{
	return client_connect_opts(host, port, timeout_ms, rcvbuf, NULL, err);
}

struct client *client_connect_from(const char *host, int port, const char *source, int timeout_ms,
				   int *err)
{
	return client_connect_opts(host, port, timeout_ms, 0, source, err);
}

static int client_tls_handshake(struct client *c, struct ssl_ctx_st *ctx, const char *host,
				int timeout_ms, char *why, size_t why_len)
{
	int64_t deadline = client_deadline(timeout_ms);
	int rc = client_tls_session_new(ctx, c->fd, host, &c->ssl, why, why_len);
	short want;

	while (rc == RMQNS_OK) {
		rc = client_tls_handshake_step(c->ssl, &want, why, why_len);
		if (rc != RMQNS_EAGAIN)
			break;
		rc = client_wait(c, want, deadline);
		if (rc == RMQNS_EAGAIN)
			snprintf(why, why_len, "TLS handshake: no answer within %d ms", timeout_ms);
	}
	return rc;
}

struct client *client_connect_tls(const char *host, int port, struct ssl_ctx_st *ctx,
				  int timeout_ms, int *err, char *why, size_t why_len)
{
	int dummy;
	if (!err)
		err = &dummy;
	if (why_len)
		why[0] = '\0';
	struct client *c = client_connect_opts(host, port, timeout_ms, 0, NULL, err);
	if (!c || !ctx)
		return c;
	int rc = client_tls_handshake(c, ctx, host, timeout_ms, why, why_len);
	if (rc < 0) {
		client_close(c);
		*err = rc;
		return NULL;
	}
	return c;
}

/* One write: bytes taken (> 0), or a negative rmqns_err; RMQNS_EAGAIN
 * with *want set when the socket must become ready first. */
static ssize_t client_write_some(struct client *c, const uint8_t *p, size_t len, short *want)
{
	*want = POLLOUT;
	if (!c->ssl) {
		ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL);
		if (n >= 0)
			return n;
		if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
			return RMQNS_EAGAIN;
		return (errno == EPIPE || errno == ECONNRESET) ? RMQNS_ECLOSED : RMQNS_EIO;
	}
	return client_tls_write(c->ssl, p, len, want, c->tls_why, sizeof c->tls_why);
}

/* One read: bytes read (> 0), 0 when the peer closed, or a negative
 * rmqns_err; RMQNS_EAGAIN with *want set as for writes. */
static ssize_t client_read_some(struct client *c, uint8_t *p, size_t len, short *want)
{
	*want = POLLIN;
	if (!c->ssl) {
		ssize_t n = recv(c->fd, p, len, 0);
		if (n >= 0)
			return n;
		if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
			return RMQNS_EAGAIN;
		return errno == ECONNRESET ? RMQNS_ECLOSED : RMQNS_EIO;
	}
	return client_tls_read(c->ssl, p, len, want, c->tls_why, sizeof c->tls_why);
}

int client_send_raw(struct client *c, const void *data, size_t len, int timeout_ms)
{
	const uint8_t *p = data;
	int64_t deadline = client_deadline(timeout_ms);

	while (len > 0) {
		short want;
		ssize_t n = client_write_some(c, p, len, &want);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == RMQNS_EAGAIN) {
			int rc = client_wait(c, want, deadline);
			if (rc < 0)
				return rc;
			continue;
		}
		return n == 0 ? RMQNS_EIO : (int)n;
	}
	return RMQNS_OK;
}

int client_send(struct client *c, const struct remoting_cmd *cmd, int timeout_ms)
{
	struct buf b = BUF_INIT;
	int rc = remoting_encode(cmd, &b);
	if (rc == 0)
		rc = client_send_raw(c, b.data, b.len, timeout_ms);
	buf_free(&b);
	return rc;
}

/* Reads the next frame off the socket (never the pending list). */
static int client_read_frame(struct client *c, struct client_reply **out, int64_t deadline)
{
	for (;;) {
		size_t size;
		int rc = remoting_frame_cut(c->rbuf + c->rpos, c->rlen - c->rpos,
					    REMOTING_DEFAULT_MAX_FRAME, &size);
		if (rc == 0) {
			struct client_reply *r = malloc(sizeof *r + size);
			if (!r)
				return RMQNS_ENOMEM;
			memcpy(r->frame, c->rbuf + c->rpos, size);
			r->frame_len = size;
			r->next = NULL;
			c->rpos += size;
			rc = remoting_decode(r->frame, size, &r->cmd);
			if (rc < 0) {
				free(r);
				return rc;
			}
			*out = r;
			return RMQNS_OK;
		}
		if (rc != RMQNS_EAGAIN)
			return rc;

		/* Need more bytes: compact, grow, read. */
		if (c->rpos > 0) {
			memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
			c->rlen -= c->rpos;
			c->rpos = 0;
		}
		if (c->rlen == c->rcap) {
			size_t ncap = c->rcap * 2;
			uint8_t *nb = realloc(c->rbuf, ncap);
			if (!nb)
				return RMQNS_ENOMEM;
			c->rbuf = nb;
			c->rcap = ncap;
		}
		short want;
		ssize_t n = client_read_some(c, c->rbuf + c->rlen, c->rcap - c->rlen, &want);
		if (n > 0) {
			c->rlen += (size_t)n;
			continue;
		}
		if (n == 0)
			return RMQNS_ECLOSED;
		if (n == RMQNS_EAGAIN) {
			rc = client_wait(c, want, deadline);
			if (rc < 0)
				return rc;
			continue;
		}
		return (int)n;
	}
}

int client_recv(struct client *c, struct client_reply **out, int timeout_ms)
{
	*out = NULL;
	if (c->pending_head) {
		*out = c->pending_head;
		c->pending_head = c->pending_head->next;
		if (!c->pending_head)
			c->pending_tail = NULL;
		(*out)->next = NULL;
		return RMQNS_OK;
	}
	return client_read_frame(c, out, client_deadline(timeout_ms));
}

int32_t client_next_opaque(struct client *c)
{
	return c->next_opaque++;
}

int client_call(struct client *c, struct remoting_cmd *req, struct client_reply **out,
		int timeout_ms)
{
	int64_t deadline = client_deadline(timeout_ms);

	*out = NULL;
	req->opaque = client_next_opaque(c);
	int rc = client_send(c, req, timeout_ms);
	if (rc < 0)
		return rc;
	for (;;) {
		struct client_reply *r;
		rc = client_read_frame(c, &r, deadline);
		if (rc < 0)
			return rc;
		if (r->cmd.opaque == req->opaque && remoting_is_response(&r->cmd)) {
			*out = r;
			return RMQNS_OK;
		}
		if (c->pending_tail)
			c->pending_tail->next = r;
		else
			c->pending_head = r;
		c->pending_tail = r;
	}
}

const char *client_tls_error(const struct client *c)
{
	return c->tls_why[0] ? c->tls_why : NULL;
}

int client_fd(const struct client *c)
{
	return c->fd;
}

void client_reply_free(struct client_reply *r)
{
	if (!r)
		return;
	remoting_cmd_release(&r->cmd);
	free(r);
}

void client_close(struct client *c)
{
	if (!c)
		return;
	while (c->pending_head) {
		struct client_reply *r = c->pending_head;
		c->pending_head = r->next;
		client_reply_free(r);
	}
	client_tls_session_free(c->ssl); /* a deliberate close: close_notify */
	close(c->fd);
	free(c->rbuf);
	free(c);
}
