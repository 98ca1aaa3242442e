/* rmqns-bench TLS: the client context (client.h's, with partial writes)
 * and non-blocking session steps. */
#include "tls.h"

#include <errno.h>
#include <poll.h>
#include <sys/epoll.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "rmqns/client.h"
#include "rmqns/err.h"

int bench_tls_ctx_new(const struct bench_opts *o, SSL_CTX **out, char *err, size_t err_len)
{
	*out = NULL;
	if (!o->tls)
		return RMQNS_OK;
	const struct client_tls_opts t = { .ca = o->tls_ca, .cert = o->tls_cert, .key = o->tls_key,
					   .no_verify_hostname = o->tls_no_verify_hostname };
	int rc = client_tls_ctx_new(&t, out, err, err_len);
	if (rc < 0)
		return rc;
	/* requests are appended to a connection's buffer while an earlier write
	 * waits: the retried bytes may have moved and grown */
	SSL_CTX_set_mode(*out, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	return RMQNS_OK;
}

void bench_tls_ctx_free(SSL_CTX *ctx)
{
	SSL_CTX_free(ctx);
}

SSL *bench_tls_new(SSL_CTX *ctx, int fd, const char *host)
{
	SSL *ssl = SSL_new(ctx);
	if (!ssl)
		return NULL;
	if (SSL_set_fd(ssl, fd) != 1 || client_tls_expect_host(ssl, host) != RMQNS_OK) {
		SSL_free(ssl);
		return NULL;
	}
	SSL_set_connect_state(ssl);
	return ssl;
}

void bench_tls_free(SSL *ssl, int notify)
{
	if (!ssl)
		return;
	if (notify && SSL_is_init_finished(ssl)) {
		(void)SSL_shutdown(ssl);
		ERR_clear_error();
	}
	SSL_free(ssl);
}

/* poll's events are epoll's: client.h's steps answer for both */
_Static_assert(POLLIN == EPOLLIN && POLLOUT == EPOLLOUT, "poll and epoll events differ");

int bench_tls_handshake(SSL *ssl, uint32_t *want, char *err, size_t err_len)
{
	short ev = 0;
	int rc = client_tls_handshake_step(ssl, &ev, err, err_len);

	*want = (uint16_t)ev;
	return rc == RMQNS_EPROTO ? RMQNS_EIO : rc;
}

/* errno and *want for a failed SSL_read/SSL_write. */
static ssize_t tls_io_fail(SSL *ssl, int rc, uint32_t *want)
{
	int sslerr = SSL_get_error(ssl, rc);
	*want = (uint16_t)client_tls_want(sslerr);
	if (*want) {
		errno = EAGAIN;
		return -1;
	}
	if (sslerr == SSL_ERROR_ZERO_RETURN)
		return 0;
	if (sslerr != SSL_ERROR_SYSCALL || !errno)
		errno = sslerr == SSL_ERROR_SYSCALL ? ECONNRESET : EPROTO;
	ERR_clear_error();
	return -1;
}

ssize_t bench_tls_read(SSL *ssl, void *dst, size_t len, uint32_t *want)
{
	size_t got = 0;
	ERR_clear_error();
	errno = 0;
	int rc = SSL_read_ex(ssl, dst, len, &got);
	if (rc == 1)
		return (ssize_t)got;
	return tls_io_fail(ssl, rc, want);
}

ssize_t bench_tls_write(SSL *ssl, const void *src, size_t len, uint32_t *want)
{
	size_t put = 0;
	ERR_clear_error();
	errno = 0;
	int rc = SSL_write_ex(ssl, src, len, &put);
	if (rc == 1)
		return (ssize_t)put;
	ssize_t r = tls_io_fail(ssl, rc, want);
	if (r == 0)
		errno = EPIPE; /* close_notify seen while writing */
	return -1;
}

int bench_tls_pending(const SSL *ssl)
{
	return SSL_pending(ssl);
}
