/* The server's TLS context (tls.h): the OpenSSL context built from the
 * settings it is handed, and its reload when the files change. Only the boss thread replaces the context,
 * published through RCU; a reactor (an RCU reader) reads it once per new
 * TLS connection, and SSL_new then holds a reference of its own, so the
 * boss drops the old context's after a grace period. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <urcu.h>

#include "rmqns/err.h"
#include "rmqns/filestamp.h"
#include "rmqns/log.h"
#include "rmqns/race.h"
#include "rmqns/tls.h"

/* ---- settings ---- */

static const char *const mode_names[] = { "disabled", "permissive", "enforcing" };
static const char *const auth_names[] = { "none", "optional", "require" };

const char *tls_mode_name(enum tls_mode m)
{
	return (unsigned)m < 3 ? mode_names[m] : "?";
}

const char *tls_client_auth_name(enum tls_client_auth a)
{
	return (unsigned)a < 3 ? auth_names[a] : "?";
}

void tls_settings_free(struct tls_settings *s)
{
	free(s->cert_path);
	free(s->key_path);
	free(s->key_password);
	free(s->trust_path);
	memset(s, 0, sizeof *s);
}

/* Replaces *slot with a copy of value ("" = unset). */
int tls_settings_set_path(char **slot, const char *value)
{
	char *copy = NULL;
	if (value && *value && !(copy = strdup(value)))
		return RMQNS_ENOMEM;
	free(*slot);
	*slot = copy;
	return RMQNS_OK;
}

/* ---- the context ---- */

#define TLS_WATCHED 3 /* certificate, key, trust */

struct tls_providers {
	bool tried;
	OSSL_PROVIDER *legacy, *deflt;
};

static void providers_unload(struct tls_providers *p)
{
	if (p->deflt)
		OSSL_PROVIDER_unload(p->deflt);
	if (p->legacy)
		OSSL_PROVIDER_unload(p->legacy);
	p->deflt = p->legacy = NULL;
}

struct tls_server {
	struct tls_settings settings;
	SSL_CTX *ctx; /* RCU-published; replaced by the boss only */
	struct file_stamp stamps[TLS_WATCHED];
	struct tls_providers providers;
	unsigned generation;
};

void tls_openssl_reason(char *out, size_t n)
{
	unsigned long e = ERR_get_error();
	if (e == 0)
		snprintf(out, n, "%s", errno ? strerror(errno) : "unknown error");
	else
		ERR_error_string_n(e, out, n);
	ERR_clear_error();
}

static int key_password_cb(char *buf, int size, int rwflag, void *arg)
{
	(void)rwflag;
	const char *pw = arg;
	size_t n = pw ? strlen(pw) : 0;
	if (n > (size_t)size)
		return -1;
	memcpy(buf, pw, n);
	return (int)n;
}

/* A self-signed P-256 certificate for tls.test.mode.enable. */
static int ctx_use_test_certificate(SSL_CTX *ctx, char *err, size_t errlen)
{
	char why[256];
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	uint64_t serial = 0;
	int ok = key && x && RAND_bytes((unsigned char *)&serial, sizeof serial) == 1;

	ok = ok && X509_set_version(x, 2) &&
	     ASN1_INTEGER_set_uint64(X509_get_serialNumber(x), serial >> 1) &&
	     X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
	     X509_gmtime_adj(X509_getm_notAfter(x), 365L * 24 * 3600) && X509_set_pubkey(x, key);
	X509_NAME *name = ok ? X509_get_subject_name(x) : NULL;
	ok = ok && name &&
	     X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"rmqns test", -1,
					-1, 0) &&
	     X509_set_issuer_name(x, name) && X509_sign(x, key, EVP_sha256()) > 0 &&
	     SSL_CTX_use_certificate(ctx, x) == 1 && SSL_CTX_use_PrivateKey(ctx, key) == 1;
	if (!ok) {
		tls_openssl_reason(why, sizeof why);
		snprintf(err, errlen, "cannot make the test certificate: %s", why);
	}
	X509_free(x);
	EVP_PKEY_free(key);
	return ok ? RMQNS_OK : RMQNS_EINVAL;
}

/* Java's TLS guide encrypts server.key with PBE-SHA1-RC4-128, which
 * OpenSSL 3 keeps in its legacy provider: loaded on the first key that
 * needs it (with the default one, which an explicit load would drop),
 * unloaded with the server. Only the thread building contexts uses it. */
static bool load_legacy_provider(struct tls_providers *p)
{
	if (p->tried)
		return p->legacy != NULL;
	p->tried = true;
	p->legacy = OSSL_PROVIDER_load(NULL, "legacy");
	p->deflt = p->legacy ? OSSL_PROVIDER_load(NULL, "default") : NULL;
	if (!p->legacy || !p->deflt) {
		log_warn("TLS: OpenSSL's legacy provider does not load: keys encrypted with RC4 or DES "
			 "(as Java's guide makes them) cannot be read");
		providers_unload(p);
	}
	ERR_clear_error();
	return p->legacy != NULL;
}

static EVP_PKEY *read_key(const char *path, const char *password)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	EVP_PKEY *key = PEM_read_PrivateKey(f, NULL, key_password_cb, (void *)(password ? password : ""));
	fclose(f);
	return key;
}

static int ctx_use_key(SSL_CTX *ctx, const struct tls_settings *s, struct tls_providers *prov,
		       char *err, size_t errlen)
{
	char why[256];
	if (access(s->key_path, R_OK) < 0) {
		snprintf(err, errlen, "cannot read tls.server.keyPath %s: %s", s->key_path, strerror(errno));
		return RMQNS_EINVAL;
	}
	EVP_PKEY *key = read_key(s->key_path, s->key_password);
	if (!key && s->key_password && *s->key_password) {
		if (load_legacy_provider(prov)) {
			ERR_clear_error();
			key = read_key(s->key_path, s->key_password);
		}
	}
	if (!key) {
		tls_openssl_reason(why, sizeof why);
		snprintf(err, errlen, "cannot load tls.server.keyPath %s%s: %s", s->key_path,
			 s->key_password ? " (with tls.server.keyPassword)" : "", why);
		return RMQNS_EINVAL;
	}
	int ok = SSL_CTX_use_PrivateKey(ctx, key) == 1;
	EVP_PKEY_free(key);
	if (!ok || SSL_CTX_check_private_key(ctx) != 1) {
		tls_openssl_reason(why, sizeof why);
		snprintf(err, errlen, "tls.server.keyPath %s does not go with tls.server.certPath %s: %s",
			 s->key_path, s->cert_path, why);
		return RMQNS_EINVAL;
	}
	return RMQNS_OK;
}

static int ctx_use_trust(SSL_CTX *ctx, const struct tls_settings *s, char *err, size_t errlen)
{
	char why[256];
	if (s->client_auth == TLS_AUTH_NONE)
		return RMQNS_OK;
	if (!s->trust_path) {
		snprintf(err, errlen, "tls.server.need.client.auth=%s needs tls.server.trustCertPath",
			 tls_client_auth_name(s->client_auth));
		return RMQNS_EINVAL;
	}
	if (tls_ctx_use_client_ca(ctx, s->trust_path) < 0) {
		tls_openssl_reason(why, sizeof why);
		snprintf(err, errlen, "cannot load tls.server.trustCertPath %s: %s", s->trust_path, why);
		return RMQNS_EINVAL;
	}
	int mode = SSL_VERIFY_PEER;
	if (s->client_auth == TLS_AUTH_REQUIRE)
		mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
	SSL_CTX_set_verify(ctx, mode, NULL);
	return RMQNS_OK;
}

/* "subject, serial" of the context's certificate, for the log. */
static void ctx_describe(SSL_CTX *ctx, char *out, size_t n)
{
	X509 *x = SSL_CTX_get0_certificate(ctx);
	char subject[256] = "?";
	char *serial = NULL;
	if (x) {
		X509_NAME_oneline(X509_get_subject_name(x), subject, sizeof subject);
		BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
		serial = bn ? BN_bn2hex(bn) : NULL;
		BN_free(bn);
	}
	snprintf(out, n, "subject %s, serial %s", subject, serial ? serial : "?");
	OPENSSL_free(serial);
}

SSL_CTX *tls_server_ctx_new(void)
{
	ERR_clear_error();
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx)
		return NULL;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	/* Partial writes and a buffer that may move: the reactors (and the
	 * HTTP thread) retry a blocked write from a buffer that grows
	 * meanwhile. */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
				      SSL_MODE_RELEASE_BUFFERS);
	/* Clients (Java's among them) often close without close_notify. */
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE |
					 SSL_OP_IGNORE_UNEXPECTED_EOF);
	return ctx;
}

int tls_ctx_use_client_ca(SSL_CTX *ctx, const char *path)
{
	STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(path);
	if (!names || SSL_CTX_load_verify_locations(ctx, path, NULL) != 1) {
		sk_X509_NAME_pop_free(names, X509_NAME_free);
		return RMQNS_EINVAL;
	}
	SSL_CTX_set_client_CA_list(ctx, names);
	return RMQNS_OK;
}

static SSL_CTX *ctx_build(const struct tls_settings *s, struct tls_providers *prov, char *err,
			  size_t errlen)
{
	char why[256];
	SSL_CTX *ctx = tls_server_ctx_new();
	if (!ctx) {
		tls_openssl_reason(why, sizeof why);
		snprintf(err, errlen, "cannot create a TLS context: %s", why);
		return NULL;
	}
	static const unsigned char sid_ctx[] = "rmqns";
	SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof sid_ctx - 1);

	int rc;
	if (s->cert_path) {
		if (!s->key_path) {
			snprintf(err, errlen, "tls.server.certPath is set but tls.server.keyPath is not");
			rc = RMQNS_EINVAL;
		} else if (SSL_CTX_use_certificate_chain_file(ctx, s->cert_path) != 1) {
			tls_openssl_reason(why, sizeof why);
			snprintf(err, errlen, "cannot load tls.server.certPath %s: %s", s->cert_path, why);
			rc = RMQNS_EINVAL;
		} else {
			rc = ctx_use_key(ctx, s, prov, err, errlen);
		}
	} else if (s->test_mode) {
		rc = ctx_use_test_certificate(ctx, err, errlen);
	} else {
		snprintf(err, errlen, "tls.server.mode=%s needs tls.server.certPath and tls.server.keyPath "
				      "(or tls.test.mode.enable=true)",
			 tls_mode_name(s->mode));
		rc = RMQNS_EINVAL;
	}
	if (rc == RMQNS_OK)
		rc = ctx_use_trust(ctx, s, err, errlen);
	if (rc < 0) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

static void stamp_all(const struct tls_settings *s, struct file_stamp out[TLS_WATCHED])
{
	file_stamp_take(&out[0], s->cert_path);
	file_stamp_take(&out[1], s->key_path);
	file_stamp_take(&out[2], s->client_auth != TLS_AUTH_NONE ? s->trust_path : NULL);
}

static int settings_copy(struct tls_settings *dst, const struct tls_settings *src)
{
	memset(dst, 0, sizeof *dst);
	dst->mode = src->mode;
	dst->client_auth = src->client_auth;
	dst->test_mode = src->test_mode;
	if (tls_settings_set_path(&dst->cert_path, src->cert_path) < 0 || tls_settings_set_path(&dst->key_path, src->key_path) < 0 ||
	    tls_settings_set_path(&dst->key_password, src->key_password) < 0 ||
	    tls_settings_set_path(&dst->trust_path, src->trust_path) < 0) {
		tls_settings_free(dst);
		return RMQNS_ENOMEM;
	}
	return RMQNS_OK;
}

struct tls_server *tls_server_create(const struct tls_settings *s, char *err, size_t errlen)
{
	struct tls_server *t = calloc(1, sizeof *t);
	if (!t || settings_copy(&t->settings, s) < 0) {
		free(t);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	/* Stamped before reading, so a change made while we read is seen. */
	stamp_all(&t->settings, t->stamps);
	t->ctx = ctx_build(&t->settings, &t->providers, err, errlen);
	if (!t->ctx) {
		providers_unload(&t->providers);
		tls_settings_free(&t->settings);
		free(t);
		return NULL;
	}
	char what[400];
	ctx_describe(t->ctx, what, sizeof what);
	log_info("TLS: tls.server.mode=%s, client certificates %s; certificate %s", tls_mode_name(s->mode),
		 tls_client_auth_name(s->client_auth), what);
	return t;
}

void tls_server_destroy(struct tls_server *t)
{
	if (!t)
		return;
	SSL_CTX_free(t->ctx);
	providers_unload(&t->providers);
	tls_settings_free(&t->settings);
	free(t);
}

enum tls_mode tls_server_mode(const struct tls_server *t)
{
	return t->settings.mode;
}

struct ssl_st *tls_server_new_ssl(struct tls_server *t)
{
	rcu_read_lock();
	SSL_CTX *ctx = rcu_dereference(t->ctx);
	race_acquire(ctx);
	SSL *ssl = SSL_new(ctx);
	race_reader_done();
	rcu_read_unlock();
	return ssl;
}

int tls_server_watch(struct tls_server *t)
{
	struct file_stamp now[TLS_WATCHED];
	char err[512], what[400];

	if (!t->settings.cert_path)
		return 0; /* the test certificate has no file */
	stamp_all(&t->settings, now);
	/* Remembered whether or not the new files load: a half-written pair
	 * is tried again when the other file changes too. */
	if (!file_stamps_changed(t->stamps, now, TLS_WATCHED))
		return 0;
	SSL_CTX *fresh = ctx_build(&t->settings, &t->providers, err, sizeof err);
	if (!fresh) {
		log_warn("TLS: certificate files changed but do not load, keeping the certificate in force: %s",
			 err);
		return 0;
	}
	race_release(fresh);
	SSL_CTX *old = rcu_xchg_pointer(&t->ctx, fresh);
	synchronize_rcu(); /* no reactor is still between reading old and SSL_new's up-ref */
	race_grace_passed();
	SSL_CTX_free(old); /* the connections that use it hold their own references */
	t->generation++;
	ctx_describe(fresh, what, sizeof what);
	log_info("TLS: reloaded the certificate files (reload %u): certificate %s", t->generation, what);
	return 1;
}
