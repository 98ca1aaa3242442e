/* Mutual TLS between the controller peers (ctl_internal.h): one OpenSSL
 * context for both ends of every Raft connection, TLS 1.2 or later, the
 * other side's certificate required and verified against the trust file,
 * rebuilt when a file changes. Runs on the node's loop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "ctl_internal.h"
#include "rmqns/log.h"

static void why(char *err, size_t errlen, const char *what, const char *path)
{
	char ssl[200] = "";
	unsigned long e = ERR_peek_last_error();

	if (e)
		ERR_error_string_n(e, ssl, sizeof ssl);
	ERR_clear_error();
	snprintf(err, errlen, "controller peer TLS: %s %s%s%s", what, path, *ssl ? ": " : "", ssl);
}

static SSL_CTX *build(const struct ctl_peer_tls *p, char *err, size_t errlen)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_method());

	if (!ctx) {
		snprintf(err, errlen, "controller peer TLS: out of memory");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	if (SSL_CTX_use_certificate_chain_file(ctx, p->cert) != 1)
		why(err, errlen, "cannot load the certificate", p->cert);
	else if (SSL_CTX_use_PrivateKey_file(ctx, p->key, SSL_FILETYPE_PEM) != 1)
		why(err, errlen, "cannot load the key", p->key);
	else if (SSL_CTX_check_private_key(ctx) != 1)
		why(err, errlen, "the key does not match the certificate", p->cert);
	else if (SSL_CTX_load_verify_locations(ctx, p->trust, NULL) != 1)
		why(err, errlen, "cannot load the trusted certificates", p->trust);
	else
		return ctx;
	SSL_CTX_free(ctx);
	return NULL;
}

static void stamp(struct ctl_peer_tls *p, struct file_stamp st[3])
{
	file_stamp_take(&st[0], p->cert);
	file_stamp_take(&st[1], p->key);
	file_stamp_take(&st[2], p->trust);
}

int ctl_peer_tls_open(struct ctl_peer_tls *p, const char *cert, const char *key, const char *trust,
		      char *err, size_t errlen)
{
	memset(p, 0, sizeof *p);
	if (!(p->cert = strdup(cert)) || !(p->key = strdup(key)) || !(p->trust = strdup(trust))) {
		ctl_peer_tls_close(p);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	stamp(p, p->stamps);
	if (!(p->ctx = build(p, err, errlen))) {
		ctl_peer_tls_close(p);
		return -1;
	}
	return 0;
}

void ctl_peer_tls_close(struct ctl_peer_tls *p)
{
	char *paths[] = { p->cert, p->key, p->trust };

	SSL_CTX_free(p->ctx);
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
		free(paths[i]);
	memset(p, 0, sizeof *p);
}

void ctl_peer_tls_watch(struct ctl_peer_tls *p)
{
	struct file_stamp now[3];
	char err[512];

	if (!p->ctx)
		return;
	stamp(p, now);
	bool same = true;
	for (int i = 0; i < 3; i++)
		same = same && file_stamp_equal(&now[i], &p->stamps[i]);
	if (same)
		return;
	memcpy(p->stamps, now, sizeof now);
	SSL_CTX *ctx = build(p, err, sizeof err);
	if (!ctx) {
		log_warn("%s; the certificates in force stay", err);
		return;
	}
	SSL_CTX_free(p->ctx); /* connections open keep theirs */
	p->ctx = ctx;
	log_info("controller: peer TLS certificates reloaded from %s", p->cert);
}

SSL *ctl_peer_tls_new(struct ctl_peer_tls *p, bool server)
{
	SSL *ssl = SSL_new(p->ctx);
	BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());

	if (!ssl || !in || !out) {
		SSL_free(ssl);
		BIO_free(in);
		BIO_free(out);
		return NULL;
	}
	SSL_set_bio(ssl, in, out);
	if (server)
		SSL_set_accept_state(ssl);
	else
		SSL_set_connect_state(ssl);
	return ssl;
}

bool ctl_peer_tls_names(SSL *ssl, const char *host)
{
	X509 *cert = SSL_get1_peer_certificate(ssl);
	bool ok = cert && SSL_get_verify_result(ssl) == X509_V_OK &&
		  (X509_check_ip_asc(cert, host, 0) == 1 || X509_check_host(cert, host, 0, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT, NULL) == 1);

	X509_free(cert);
	return ok;
}
