/* TLS for rmqns-bench's connections, with OpenSSL's libssl: one client
 * context for the run, and non-blocking handshake, read and write steps
 * that say which readiness (EPOLLIN or EPOLLOUT) they wait for, so that the
 * engines drive TLS from their own epoll loops. As a Java client does, no
 * SNI is sent and no host name is checked; without a CA file the server's
 * certificate is not verified at all (Java's tls.test.mode). */
#ifndef BENCH_TLS_H
#define BENCH_TLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "opts.h"

struct ssl_ctx_st;
struct ssl_st;

/* The client context --tls and its files ask for, in *out (NULL without
 * --tls). RMQNS_OK, or a negative rmqns_err with the reason in err. */
int bench_tls_ctx_new(const struct bench_opts *o, struct ssl_ctx_st **out, char *err, size_t err_len);
void bench_tls_ctx_free(struct ssl_ctx_st *ctx);

/* A client session on a connected non-blocking socket, the server's
 * certificate to name host when the context checks names. NULL when out
 * of memory. */
struct ssl_st *bench_tls_new(struct ssl_ctx_st *ctx, int fd, const char *host);
/* Frees the session; with `notify`, first sends close_notify if the socket
 * takes it at once (a deliberate close). The socket stays open. */
void bench_tls_free(struct ssl_st *ssl, int notify);

/* One step of the handshake: RMQNS_OK when it is done, RMQNS_EAGAIN with
 * *want set to the epoll event to wait for, or RMQNS_EIO with the reason in
 * err. */
int bench_tls_handshake(struct ssl_st *ssl, uint32_t *want, char *err, size_t err_len);

/* Like read(2) and write(2): bytes moved, 0 when the peer closed (read),
 * or -1 with errno EAGAIN and *want set, or another errno on failure.
 * Writes may be partial; a write that returned EAGAIN must be repeated with
 * the same bytes first (more may follow them, and they may have moved). */
ssize_t bench_tls_read(struct ssl_st *ssl, void *dst, size_t len, uint32_t *want);
ssize_t bench_tls_write(struct ssl_st *ssl, const void *src, size_t len, uint32_t *want);
/* Decrypted bytes waiting inside the session (no socket event will come
 * for them). */
int bench_tls_pending(const struct ssl_st *ssl);

#endif
