/* The TLS half of one client connection, for client.c: a session on a
 * connected socket, its handshake and its reads and writes one step at a
 * time. client.c waits on the socket between steps; client_tls.c never
 * calls back into it. */
#ifndef RMQNS_CLIENT_TLS_SESSION_H
#define RMQNS_CLIENT_TLS_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ssl_st;
struct ssl_ctx_st;

/* A client session of ctx on fd, the server's certificate to name host
 * (client_tls_expect_host). RMQNS_OK, or RMQNS_ENOMEM with why. */
int client_tls_session_new(struct ssl_ctx_st *ctx, int fd, const char *host, struct ssl_st **out,
			   char *why, size_t why_len);
/* One write or read: bytes moved (> 0), 0 when the peer closed (a read),
 * RMQNS_EAGAIN with *want, RMQNS_ECLOSED (a write to a closed peer) or
 * RMQNS_EPROTO with the reason in why. */
ssize_t client_tls_write(struct ssl_st *ssl, const uint8_t *p, size_t len, short *want, char *why,
			 size_t why_len);
ssize_t client_tls_read(struct ssl_st *ssl, uint8_t *p, size_t len, short *want, char *why,
			size_t why_len);
/* Ends the session: close_notify when the socket takes it at once. */
void client_tls_session_free(struct ssl_st *ssl);

#endif
