/* The client side of TLS shared by rmqns-admin and rmqns-bench: one
 * OpenSSL client context built from a CA file, an optional client
 * certificate and key (encrypted keys with their password), the check
 * that the server's certificate names the host dialled, the reason in
 * words when a file does not load; and the sessions of client.c, one
 * step at a time (client_tls_session.h). All of the client's OpenSSL
 * calls are here. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include "client_tls_session.h"
#include "rmqns/client.h"
#include "rmqns/err.h"

/* Set as a context's app data when its sessions check no host name. */
static const char client_tls_no_host_check = 1;

void client_tls_reason(char *err, size_t err_len, const char *what, const char *fallback)
{
	if (!err || !err_len)
		return;
	unsigned long e = ERR_get_error();
	char buf[200];
	if (e)
		ERR_error_string_n(e, buf, sizeof(buf));
	snprintf(err, err_len, "%s: %s", what, e ? buf : fallback);
	ERR_clear_error();
}

/* Hands the key password to OpenSSL when a key file is encrypted. */
static int client_tls_password(char *buf, int size, int rwflag, void *userdata)
{
	const char *pw = userdata;
	(void)rwflag;
	if (!pw || size <= 0)
		return 0;
	size_t n = strlen(pw);
	if (n > (size_t)size)
		n = (size_t)size;
	memcpy(buf, pw, n);
	return (int)n;
}

int client_tls_ctx_new(const struct client_tls_opts *o, SSL_CTX **out, char *err, size_t err_len)
{
	*out = NULL;
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx) {
		client_tls_reason(err, err_len, "TLS context", "out of memory");
		return RMQNS_ENOMEM;
	}
	(void)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	/* a server that closes without close_notify has just closed */
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
	if (o->ca) {
		if (SSL_CTX_load_verify_locations(ctx, o->ca, NULL) != 1) {
			client_tls_reason(err, err_len, o->ca, "cannot load the CA certificates");
			SSL_CTX_free(ctx);
			return RMQNS_EINVAL;
		}
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
		if (o->no_verify_hostname)
			SSL_CTX_set_app_data(ctx, (void *)&client_tls_no_host_check);
	} else {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	}
	if (o->cert) {
		if (!o->key) {
			snprintf(err, err_len, "%s: a client certificate needs its key", o->cert);
			SSL_CTX_free(ctx);
			return RMQNS_EINVAL;
		}
		if (SSL_CTX_use_certificate_chain_file(ctx, o->cert) != 1) {
			client_tls_reason(err, err_len, o->cert, "cannot load the certificate");
			SSL_CTX_free(ctx);
			return RMQNS_EINVAL;
		}
		SSL_CTX_set_default_passwd_cb(ctx, client_tls_password);
		SSL_CTX_set_default_passwd_cb_userdata(ctx, (void *)o->key_password);
		int loaded = SSL_CTX_use_PrivateKey_file(ctx, o->key, SSL_FILETYPE_PEM) == 1 &&
			     SSL_CTX_check_private_key(ctx) == 1;
		/* the password is not kept past loading */
		SSL_CTX_set_default_passwd_cb_userdata(ctx, NULL);
		if (!loaded) {
			client_tls_reason(err, err_len, o->key,
					  "the key does not load (wrong password?) or does not match");
			SSL_CTX_free(ctx);
			return RMQNS_EINVAL;
		}
	}
	*out = ctx;
	return RMQNS_OK;
}

void client_tls_ctx_free(SSL_CTX *ctx)
{
	SSL_CTX_free(ctx);
}

int client_tls_expect_host(SSL *ssl, const char *host)
{
	SSL_CTX *ctx = SSL_get_SSL_CTX(ssl);
	unsigned char ip[16];

	if (!host || !(SSL_CTX_get_verify_mode(ctx) & SSL_VERIFY_PEER) ||
	    SSL_CTX_get_app_data(ctx) == &client_tls_no_host_check)
		return RMQNS_OK;
	/* an address dialled is matched against the IP entries of the
	 * subjectAltName, a name against the DNS entries (no CN fallback) */
	bool literal = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
	X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
	X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
	int ok = literal ? X509_VERIFY_PARAM_set1_ip_asc(param, host) : SSL_set1_host(ssl, host);
	return ok == 1 ? RMQNS_OK : RMQNS_ENOMEM;
}

int client_tls_session_new(SSL_CTX *ctx, int fd, const char *host, SSL **out, char *why,
			   size_t why_len)
{
	SSL *ssl = SSL_new(ctx);

	*out = NULL;
	if (!ssl || SSL_set_fd(ssl, fd) != 1 || client_tls_expect_host(ssl, host) != RMQNS_OK) {
		client_tls_reason(why, why_len, "TLS session", "out of memory");
		SSL_free(ssl);
		return RMQNS_ENOMEM;
	}
	SSL_set_connect_state(ssl);
	*out = ssl;
	return RMQNS_OK;
}

short client_tls_want(int sslerr)
{
	if (sslerr == SSL_ERROR_WANT_READ)
		return POLLIN;
	if (sslerr == SSL_ERROR_WANT_WRITE)
		return POLLOUT;
	return 0;
}

int client_tls_handshake_step(SSL *ssl, short *want, char *why, size_t why_len)
{
	ERR_clear_error();
	errno = 0;
	int rc = SSL_do_handshake(ssl);
	if (rc == 1)
		return RMQNS_OK;
	int sslerr = SSL_get_error(ssl, rc);
	if ((*want = client_tls_want(sslerr)) != 0)
		return RMQNS_EAGAIN;
	long verify = SSL_get_verify_result(ssl);
	if (sslerr == SSL_ERROR_SSL && verify != X509_V_OK) {
		snprintf(why, why_len, "TLS handshake: server certificate: %s",
			 X509_verify_cert_error_string(verify));
		ERR_clear_error();
	} else {
		client_tls_reason(why, why_len, "TLS handshake",
				  sslerr == SSL_ERROR_SYSCALL && errno ? strerror(errno)
								       : "the server closed the connection");
	}
	return RMQNS_EPROTO;
}

/* After a failed SSL_read_ex/SSL_write_ex: RMQNS_EAGAIN with *want set,
 * RMQNS_EPROTO with the reason kept (e.g. the server's alert for a client
 * certificate it wants, which TLS 1.3 sends after the handshake), or 0
 * when the peer closed. */
static ssize_t client_tls_io_fail(SSL *ssl, short *want, char *why, size_t why_len)
{
	int sslerr = SSL_get_error(ssl, 0);
	*want = client_tls_want(sslerr);
	if (*want) {
		ERR_clear_error();
		return RMQNS_EAGAIN;
	}
	if (sslerr == SSL_ERROR_SSL) {
		client_tls_reason(why, why_len, "TLS", "the session failed");
		return RMQNS_EPROTO;
	}
	ERR_clear_error();
	return 0;
}

ssize_t client_tls_write(SSL *ssl, const uint8_t *p, size_t len, short *want, char *why,
			 size_t why_len)
{
	size_t put = 0;
	ERR_clear_error();
	if (SSL_write_ex(ssl, p, len, &put) == 1)
		return (ssize_t)put;
	ssize_t rc = client_tls_io_fail(ssl, want, why, why_len);
	return rc == 0 ? RMQNS_ECLOSED : rc;
}

ssize_t client_tls_read(SSL *ssl, uint8_t *p, size_t len, short *want, char *why, size_t why_len)
{
	size_t got = 0;
	ERR_clear_error();
	if (SSL_read_ex(ssl, p, len, &got) == 1)
		return (ssize_t)got;
	return client_tls_io_fail(ssl, want, why, why_len);
}

void client_tls_session_free(SSL *ssl)
{
	if (!ssl)
		return;
	if (SSL_is_init_finished(ssl))
		(void)SSL_shutdown(ssl);
	ERR_clear_error();
	SSL_free(ssl);
}
