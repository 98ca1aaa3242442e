/* The client side of TLS shared by rmqns-admin and rmqns-bench: one
 * OpenSSL client context built from a CA file, an optional client
 * certificate and key (encrypted keys with their password), and the
 * reason in words when a file does not load. */
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "rmqns/client.h"
#include "rmqns/err.h"

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
