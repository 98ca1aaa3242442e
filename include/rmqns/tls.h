/* TLS on the protocol port, in the Java NameServer's three modes: the
 * server's certificate, key and trust store in one OpenSSL context, built
 * from the settings it is handed (net_params.h reads them from the tls.*
 * options and the tls.config.file they may name), rebuilt
 * off the reactors when the files change. The reactors take a new
 * per-connection SSL from the context in force (it keeps a reference to
 * that context for the connection's life); the handshake and the records
 * run in src/net. */
#ifndef RMQNS_TLS_H
#define RMQNS_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ssl_st;

enum tls_mode {
	TLS_MODE_DISABLED = 0,   /* plaintext only (the default) */
	TLS_MODE_PERMISSIVE = 1, /* TLS and plaintext on one port, told apart by the first byte */
	TLS_MODE_ENFORCING = 2,  /* TLS only: plaintext connections are closed */
};

enum tls_client_auth {
	TLS_AUTH_NONE = 0,     /* no client certificate asked for */
	TLS_AUTH_OPTIONAL = 1, /* asked for; one that is sent must verify */
	TLS_AUTH_REQUIRE = 2,  /* a certificate that verifies against the trust file */
};

/* The first byte of a TLS record carrying a handshake (ClientHello). */
#define TLS_HANDSHAKE_BYTE 0x16
/* A connection that has not finished its handshake by then is closed. */
#define TLS_HANDSHAKE_TIMEOUT_MS 10000u
/* The certificate, key and trust files are looked at this often. */
#define TLS_WATCH_MS 1000u
/* Application bytes per record (TLS's maximum plaintext fragment). */
#define TLS_RECORD_BYTES 16384u

struct tls_settings {
	enum tls_mode mode;
	enum tls_client_auth client_auth;
	char *cert_path;    /* PEM chain, server certificate first */
	char *key_path;     /* PEM private key, PKCS#8 or traditional, maybe encrypted */
	char *key_password; /* NULL or "" = the key is not encrypted */
	char *trust_path;   /* PEM CA certificates that client certificates must chain to */
	bool test_mode;     /* no certPath: a self-signed certificate made at start */
};

void tls_settings_free(struct tls_settings *s);
/* Replaces *slot (a path or the password) with a copy of value ("" = unset). */
int tls_settings_set_path(char **slot, const char *value);

const char *tls_mode_name(enum tls_mode m);
const char *tls_client_auth_name(enum tls_client_auth a);

struct tls_server;

/* Builds the first context (files loaded and checked now). NULL with the
 * reason in err: a certificate or key that does not load, a key that does
 * not match, a trust file missing when client certificates are asked for. */
struct tls_server *tls_server_create(const struct tls_settings *s, char *err, size_t errlen);
/* After every connection holding one of its SSLs is gone. */
void tls_server_destroy(struct tls_server *t);

enum tls_mode tls_server_mode(const struct tls_server *t);

/* A server-side SSL from the context in force (NULL: out of memory); any
 * thread. */
struct ssl_st *tls_server_new_ssl(struct tls_server *t);

/* Looks at the files (stat); when one changed, builds a new context from
 * them and publishes it: connections accepted from then on use it, those
 * open keep theirs. A file that does not load keeps the old context and
 * logs why. Call from one thread (the boss), never from a reactor (it
 * reads and parses files). Returns 1 when a new context is in
 * force, else 0. */
int tls_server_watch(struct tls_server *t);

/* ---- shared with the HTTP port's TLS (http_webcfg.c) ---- */

struct ssl_ctx_st;

/* A server context with what every TLS listener of rmqns sets: TLS 1.2
 * at least, partial writes retried from a buffer that may move, no
 * renegotiation, the server's cipher order, a peer that closes without
 * close_notify taken as an end. NULL with the OpenSSL error queued. */
struct ssl_ctx_st *tls_server_ctx_new(void);
/* The PEM CA certificates at path as those a client certificate must
 * chain to, their names sent in the certificate request. RMQNS_OK, or
 * RMQNS_EINVAL with the OpenSSL error queued. */
int tls_ctx_use_client_ca(struct ssl_ctx_st *ctx, const char *path);
/* The oldest OpenSSL error of this thread (errno's text when none) into
 * out; clears the thread's error queue. */
void tls_openssl_reason(char *out, size_t n);

#endif
