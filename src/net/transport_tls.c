/* The TLS transport: the server's TLS context (tls.c) and, on a reactor,
 * an accepted connection's first byte (TLS or plaintext?), its handshake
 * and its records, non-blocking. A connection is TLS only here: elsewhere
 * it has ops like any other. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "rmqns/err.h"
#include "rmqns/log.h"
#include "rmqns/loop.h"
#include "rmqns/metrics.h"
#include "rmqns/tls.h"

#include "net_internal.h"

/* The TLS side of a connection. Answers leave c's outbound list for
 * `stage` a record's worth at a time, so that many small answers become
 * one record and one write; a blocked SSL_write is retried on the same
 * (possibly grown, possibly moved) stage. */
struct conn_tls {
	SSL *ssl;
	bool hs_wants_write;    /* the handshake waits for the socket to drain */
	bool read_wants_write;  /* SSL_read waits for writability */
	bool write_wants_read;  /* SSL_write waits for readability */
	uint64_t deadline_ms;   /* for the handshake */
	struct buf stage;
	size_t stage_off;       /* bytes of stage already written */
};

static const struct conn_ops tls_sniff_ops, tls_handshake_ops, tls_open_ops;

/* ---- the context ---- */

int net_transport_init(struct server *s, const struct tls_settings *ts)
{
	char err[600];

	s->accept_ops = &conn_plain_ops;
	if (!ts || ts->mode == TLS_MODE_DISABLED)
		return RMQNS_OK;
	s->tls = tls_server_create(ts, err, sizeof err);
	if (!s->tls) {
		log_error("TLS: %s", err);
		return RMQNS_EINVAL;
	}
	s->accept_ops = &tls_sniff_ops;
	return RMQNS_OK;
}

uint64_t net_transport_watch_ms(const struct server *s)
{
	return s->tls ? TLS_WATCH_MS : 0;
}

void net_transport_watch(struct server *s)
{
	(void)tls_server_watch(s->tls);
}

void net_transport_destroy(struct server *s)
{
	tls_server_destroy(s->tls);
	s->tls = NULL;
}

/* ---- a connection ---- */

static struct conn_tls *conn_tls(const struct conn *c)
{
	return c->xport;
}

static int tls_open(struct reactor *r, struct conn *c)
{
	struct conn_tls *t = calloc(1, sizeof *t);
	if (!t) {
		log_error("closing connection %s: out of memory for its TLS state", c->peer);
		return RMQNS_ENOMEM;
	}
	t->deadline_ms = r->now_ms + TLS_HANDSHAKE_TIMEOUT_MS;
	t->stage = (struct buf)BUF_INIT;
	c->xport = t;
	return RMQNS_OK;
}

static void tls_release(struct conn *c)
{
	struct conn_tls *t = conn_tls(c);
	if (t->ssl) {
		if (c->ops == &tls_open_ops)
			(void)SSL_shutdown(t->ssl); /* one try at close_notify, never waited for */
		SSL_free(t->ssl);
	}
	ERR_clear_error();
	buf_free(&t->stage);
	free(t);
	c->xport = NULL;
}

/* OpenSSL's reason for the last failure, for a log line. */
static const char *tls_reason(SSL *ssl, int rc, char *buf, size_t n)
{
	int e = SSL_get_error(ssl, rc);
	unsigned long code = ERR_get_error();
	if (code)
		ERR_error_string_n(code, buf, n);
	else if (e == SSL_ERROR_SYSCALL)
		snprintf(buf, n, "%s", errno ? strerror(errno) : "connection closed");
	else
		snprintf(buf, n, "SSL error %d", e);
	ERR_clear_error();
	return buf;
}

/* Until the handshake is done only it is waited for (nothing once the
 * reactor stops reading); then what OpenSSL waits for on top. */
static uint32_t tls_setup_interest(const struct reactor *r, const struct conn *c, uint32_t want)
{
	if (c->closing)
		return want;
	return !r->reading ? 0 : conn_tls(c)->hs_wants_write ? LOOP_OUT : LOOP_IN;
}

static uint32_t tls_open_interest(const struct reactor *r, const struct conn *c, uint32_t want)
{
	(void)r;
	const struct conn_tls *t = conn_tls(c);
	if (c->closing)
		return want;
	return want | (t->read_wants_write ? LOOP_OUT : 0) | (t->write_wants_read ? LOOP_IN : 0);
}

/* The handshake and the sniff have a deadline. */
static void tls_setup_tick(struct reactor *r, struct conn *c)
{
	if (c->closing || r->now_ms < conn_tls(c)->deadline_ms)
		return;
	if (c->ops == &tls_handshake_ops)
		metrics_add(MC_TLS_HANDSHAKE_FAILURES, 1);
	log_info("closing connection %s: no TLS handshake within %u ms", c->peer,
		 TLS_HANDSHAKE_TIMEOUT_MS);
	conn_fail(r, c);
}

static ssize_t tls_recv(struct reactor *r, struct conn *c, uint8_t *buf, size_t room)
{
	struct conn_tls *t = conn_tls(c);
	char why[256];

	ERR_clear_error();
	int n = SSL_read(t->ssl, buf, room > INT32_MAX ? INT32_MAX : (int)room);
	if (n > 0)
		return n;
	int e = SSL_get_error(t->ssl, n);
	if (e == SSL_ERROR_WANT_READ)
		return 0;
	if (e == SSL_ERROR_WANT_WRITE) {
		t->read_wants_write = true;
		return 0;
	}
	if (e == SSL_ERROR_ZERO_RETURN)
		log_debug("connection %s: closed by the peer", c->peer);
	else
		log_info("closing connection %s: TLS read: %s", c->peer,
			 tls_reason(t->ssl, n, why, sizeof why));
	conn_fail(r, c);
	return -1;
}

/* Records in, frames cut as for any connection. */
static void tls_read(struct reactor *r, struct conn *c)
{
	struct conn_tls *t = conn_tls(c);

	t->read_wants_write = false;
	conn_read_frames(r, c, tls_recv, NET_TLS_READS_PER_TURN, false);
	/* Decrypted bytes left in OpenSSL raise no event: come back. */
	if (!c->closing && SSL_has_pending(t->ssl) && conn_reading(r, c))
		conn_mark_backlog(r, c);
	conn_update_events(r, c);
}

static void tls_handshake(struct reactor *r, struct conn *c)
{
	struct conn_tls *t = conn_tls(c);
	char why[256];

	ERR_clear_error();
	int rc = SSL_do_handshake(t->ssl);
	if (rc == 1) {
		c->ops = &tls_open_ops;
		t->hs_wants_write = false;
		c->last_active_ms = r->now_ms;
		metrics_add(MC_TLS_HANDSHAKES, 1);
		metrics_add(MC_CONN_TLS, 1);
		log_debug("connection %s: %s, %s", c->peer, SSL_get_version(t->ssl),
			  SSL_get_cipher_name(t->ssl));
		conn_update_events(r, c);
		tls_read(r, c); /* the first request may have come with the handshake */
		return;
	}
	switch (SSL_get_error(t->ssl, rc)) {
	case SSL_ERROR_WANT_READ:
		t->hs_wants_write = false;
		break;
	case SSL_ERROR_WANT_WRITE:
		t->hs_wants_write = true;
		break;
	default:
		metrics_add(MC_TLS_HANDSHAKE_FAILURES, 1);
		log_info("closing connection %s: TLS handshake failed: %s", c->peer,
			 tls_reason(t->ssl, rc, why, sizeof why));
		conn_fail(r, c);
		return;
	}
	c->last_active_ms = r->now_ms;
	conn_update_events(r, c);
}

/* Peeks at the first byte, as Java does: 0x16 starts a TLS handshake,
 * anything else is plaintext (refused when enforcing), which goes on as
 * a plaintext connection from this very event. */
static void tls_sniff(struct reactor *r, struct conn *c, uint32_t events)
{
	struct conn_tls *t = conn_tls(c);
	uint8_t first;
	ssize_t n = recv(c->fd, &first, 1, MSG_PEEK);

	if (n == 0) {
		log_debug("connection %s: closed by the peer before a byte", c->peer);
		conn_fail(r, c);
		return;
	}
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			log_info("closing connection %s: read: %s", c->peer, strerror(errno));
			conn_fail(r, c);
		}
		return;
	}
	if (first != TLS_HANDSHAKE_BYTE) {
		if (tls_server_mode(r->srv->tls) == TLS_MODE_ENFORCING) {
			metrics_add(MC_CONN_PLAINTEXT_REFUSED, 1);
			log_info("closing connection %s: plaintext refused (tls.server.mode=enforcing)", c->peer);
			conn_fail(r, c);
			return;
		}
		tls_release(c);
		c->ops = &conn_plain_ops;
		(void)c->ops->open(r, c);
		conn_update_events(r, c);
		c->ops->on_event(r, c, events);
		return;
	}
	t->ssl = tls_server_new_ssl(r->srv->tls);
	if (!t->ssl || SSL_set_fd(t->ssl, c->fd) != 1) {
		log_error("closing connection %s: out of memory for its TLS session", c->peer);
		conn_fail(r, c);
		return;
	}
	SSL_set_accept_state(t->ssl);
	c->ops = &tls_handshake_ops;
	tls_handshake(r, c);
}

static void tls_handshake_on_event(struct reactor *r, struct conn *c, uint32_t events)
{
	(void)events;
	tls_handshake(r, c);
}

static void tls_open_on_event(struct reactor *r, struct conn *c, uint32_t events)
{
	const struct conn_tls *t = conn_tls(c);

	if ((events & LOOP_OUT) || (t->write_wants_read && (events & LOOP_IN)))
		conn_mark_dirty(r, c);
	if ((events & LOOP_IN) || (t->read_wants_write && (events & LOOP_OUT)))
		tls_read(r, c);
	else if (events & (LOOP_ERR | LOOP_HUP)) {
		log_debug("connection %s: hang-up or error", c->peer);
		conn_fail(r, c);
	}
}

/* Up to a record's worth of answers staged, one SSL_write (one record, one
 * write) for it, until the socket is full. */
static void tls_flush(struct reactor *r, struct conn *c)
{
	struct conn_tls *t = conn_tls(c);
	char why[256];

	t->write_wants_read = false;
	c->out_blocked = false;
	for (;;) {
		if (t->stage_off == t->stage.len)
			t->stage.len = t->stage_off = 0; /* nothing pending in OpenSSL: restart */
		while (c->out_head && t->stage.len - t->stage_off < TLS_RECORD_BYTES) {
			const struct net_msg *m = c->out_head;
			size_t take = m->data.len - c->out_off;
			size_t room = TLS_RECORD_BYTES - (t->stage.len - t->stage_off);
			if (take > room)
				take = room;
			if (buf_append(&t->stage, m->data.data + c->out_off, take) < 0) {
				log_error("closing connection %s: out of memory for its answers", c->peer);
				conn_fail(r, c);
				return;
			}
			conn_out_consumed(c, take);
		}
		size_t len = t->stage.len - t->stage_off;
		if (len == 0)
			break;
		ERR_clear_error();
		int n = SSL_write(t->ssl, t->stage.data + t->stage_off, (int)len);
		if (n > 0) {
			t->stage_off += (size_t)n;
			c->out_bytes -= (uint64_t)n;
			c->last_active_ms = r->now_ms;
			continue;
		}
		int e = SSL_get_error(t->ssl, n);
		if (e == SSL_ERROR_WANT_WRITE) {
			c->out_blocked = true;
			break;
		}
		if (e == SSL_ERROR_WANT_READ) {
			t->write_wants_read = true;
			break;
		}
		log_info("closing connection %s: TLS write: %s", c->peer, tls_reason(t->ssl, n, why, sizeof why));
		conn_fail(r, c);
		return;
	}
	if (t->stage_off == t->stage.len && !c->out_head)
		buf_free(&t->stage); /* an idle connection keeps no staging memory */
	conn_after_flush(r, c);
}

/* The first byte decides; until then nothing is read nor written. */
static const struct conn_ops tls_sniff_ops = {
	.open = tls_open,
	.on_event = tls_sniff,
	.interest = tls_setup_interest,
	.tick = tls_setup_tick,
	.release = tls_release,
};

static const struct conn_ops tls_handshake_ops = {
	.on_event = tls_handshake_on_event,
	.interest = tls_setup_interest,
	.tick = tls_setup_tick,
	.release = tls_release,
};

static const struct conn_ops tls_open_ops = {
	.on_event = tls_open_on_event,
	.read_more = tls_read, /* frames cut, then what OpenSSL holds */
	.flush = tls_flush,
	.interest = tls_open_interest,
	.release = tls_release,
};
