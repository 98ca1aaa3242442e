/* A small blocking remoting client for tests and admin tools: connect
 * (plaintext or TLS), send commands (or raw bytes), receive frames, and
 * call = send + wait for the answer with the same opaque. One client per
 * thread; not thread-safe. Encoding and decoding go through remoting.h,
 * like the server's. */
#ifndef RMQNS_CLIENT_H
#define RMQNS_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rmqns/remoting.h"

struct client;
struct ssl_ctx_st;

/* A received frame, decoded. cmd points into frame[], which the reply owns;
 * free it with client_reply_free(). */
struct client_reply {
	struct client_reply *next; /* internal: out-of-order replies waiting */
	struct remoting_cmd cmd;
	size_t frame_len;
	uint8_t frame[];
};

/* Connects to host:port (numeric address or name) within timeout_ms.
 * NULL with *err set on failure: RMQNS_EAGAIN (no answer within
 * timeout_ms), RMQNS_ECLOSED (refused: nobody listens there), RMQNS_EIO
 * (any other socket error), RMQNS_ENOMEM, RMQNS_EINVAL (bad port, or a host
 * that does not resolve). */
struct client *client_connect(const char *host, int port, int timeout_ms, int *err);

/* The same with SO_RCVBUF set to rcvbuf bytes before connecting (0: the
 * system's autotuned default), for peers that must fill up quickly. */
struct client *client_connect_rcvbuf(const char *host, int port, int timeout_ms, int rcvbuf,
				     int *err);

/* The same from a given local address (numeric, e.g. "127.0.0.2": a
 * client the server sees at another address); RMQNS_EIO when it cannot
 * be bound. */
struct client *client_connect_from(const char *host, int port, const char *source, int timeout_ms,
				   int *err);

/* TLS as a Java client speaks it (no SNI; without a CA file no check of
 * the server's certificate at all, Java's tls.test.mode), and one check
 * more: with a CA file, the certificate's subjectAltName must name the
 * host dialled (its IP entries for an address), unless no_verify_hostname. */
struct client_tls_opts {
	const char *ca;           /* PEM CA certificates to verify the server with, or NULL */
	const char *cert, *key;   /* a client certificate and its key (PEM), or NULL */
	const char *key_password; /* for an encrypted key, or NULL */
	bool no_verify_hostname;  /* the chain only, as Java's clients check it */
};

/* A client context for o in *out. RMQNS_OK, or RMQNS_EINVAL/ENOMEM with
 * the reason (the file and OpenSSL's words) in err. */
int client_tls_ctx_new(const struct client_tls_opts *o, struct ssl_ctx_st **out, char *err,
		       size_t err_len);
void client_tls_ctx_free(struct ssl_ctx_st *ctx);
/* Makes a session of such a context check that the server's certificate
 * names host (a name, or an IPv4/IPv6 address), when its context verifies
 * certificates and checks names. For callers that drive their own
 * sessions (rmqns-bench); client_connect_tls does it. RMQNS_OK or
 * RMQNS_ENOMEM. */
struct ssl_st;
int client_tls_expect_host(struct ssl_st *ssl, const char *host);
/* One step of a client session's handshake: RMQNS_OK once done;
 * RMQNS_EAGAIN with *want (POLLIN or POLLOUT) when the socket must become
 * ready first; RMQNS_EPROTO with the reason in why (a certificate that
 * does not verify or name the host, a server that closed). */
int client_tls_handshake_step(struct ssl_st *ssl, short *want, char *why, size_t why_len);
/* The poll event an SSL_ERROR_WANT_* waits for (POLLIN, POLLOUT); 0 for
 * any other error. */
short client_tls_want(int ssl_error);

/* "what: <the oldest OpenSSL error on this thread, or fallback>" into err;
 * clears the thread's error queue. */
void client_tls_reason(char *err, size_t err_len, const char *what, const char *fallback);

/* client_connect, then a TLS handshake with ctx within the same timeout
 * (ctx NULL: plaintext). A failed handshake gives RMQNS_EPROTO with the
 * reason in why (a certificate that does not verify, a server that closed
 * or wants a client certificate). */
struct client *client_connect_tls(const char *host, int port, struct ssl_ctx_st *ctx,
				  int timeout_ms, int *err, char *why, size_t why_len);

/* Encodes cmd (its serialize, opaque and flag as given) and writes it. */
int client_send(struct client *c, const struct remoting_cmd *cmd, int timeout_ms);

/* Writes bytes as they are: for malformed-frame tests. */
int client_send_raw(struct client *c, const void *data, size_t len, int timeout_ms);

/* The next frame: a buffered one first (left by client_call), else the next
 * from the socket. RMQNS_EAGAIN on timeout, RMQNS_ECLOSED when the peer
 * closed (or reset) the connection, RMQNS_EPROTO/ETOOBIG for a bad frame. */
int client_recv(struct client *c, struct client_reply **out, int timeout_ms);

/* Sends req with a fresh opaque (written back into req->opaque) and waits
 * for the frame carrying it; other frames read meanwhile are kept for
 * client_recv/client_call. req must not be one-way. */
int client_call(struct client *c, struct remoting_cmd *req, struct client_reply **out,
		int timeout_ms);

/* A fresh opaque, as client_call uses (counting from 0). */
int32_t client_next_opaque(struct client *c);

/* Why a TLS session failed after its handshake (the failed call returned
 * RMQNS_EPROTO), in OpenSSL's words; NULL when it did not. */
const char *client_tls_error(const struct client *c);

/* The socket, for tests that poll or tune it. */
int client_fd(const struct client *c);

void client_reply_free(struct client_reply *r);
void client_close(struct client *c);

#endif
