/* The HTTP port's web configuration (http_webcfg.h): exporter-toolkit's
 * web.config.yml read with libyaml into an immutable state (a TLS context
 * and the users with their bcrypt hashes), replaced whole on a reload.
 * Keys exporter-toolkit knows but rmqns does not implement are refused by
 * name, like keys nobody knows: a setting silently ignored would leave
 * the port less protected than its operator believes. */
#include <crypt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include <yaml.h>

#include "rmqns/buf.h"
#include "rmqns/durable.h"
#include "rmqns/err.h"
#include "rmqns/filestamp.h"
#include "rmqns/http_webcfg.h"
#include "rmqns/log.h"
#include "rmqns/tls.h"
#include "rmqns/yaml_doc.h"

/* Right credentials remembered (as digests) until the next reload. */
#define WEBCFG_OK_CACHE 16
#define WEBCFG_DIGEST 32
/* Certificate, key and client CA besides the file itself. */
#define WEBCFG_WATCHED 4
/* bcrypt runs may go ahead of their half of the time by this much. */
#define WEBCFG_BCRYPT_BURST_MS 1000u
/* Longest Authorization header value looked at. */
#define WEBCFG_AUTH_MAX 1024

/* A bcrypt hash of no one's password: an unknown user costs the same
 * time as a wrong password, so a timing does not tell which it was. */
static const char unknown_user_hash[] =
	"$2b$10$huAjhBtD.5Jh7aqBuNty2e47mI.OZf0y57YPl2Z9OGRwXRjVD.RHu";

struct webcfg_user {
	char *name;
	char *hash;
};

enum client_auth {
	CA_NONE,           /* NoClientCert */
	CA_REQUEST,        /* RequestClientCert: asked for, not checked */
	CA_REQUIRE_ANY,    /* RequireAnyClientCert: required, not checked */
	CA_VERIFY_IF_GIVEN,/* VerifyClientCertIfGiven */
	CA_REQUIRE_VERIFY, /* RequireAndVerifyClientCert */
};

static const char *const client_auth_names[] = {
	"NoClientCert", "RequestClientCert", "RequireAnyClientCert", "VerifyClientCertIfGiven",
	"RequireAndVerifyClientCert", NULL,
};

/* min_version and max_version: the i-th is TLS1_VERSION + i (1.0 to 1.3) */
static const char *const tls_version_names[] = { "TLS10", "TLS11", "TLS12", "TLS13", NULL };
_Static_assert(TLS1_3_VERSION == TLS1_VERSION + 3, "TLS versions are consecutive");

struct webcfg_state {
	SSL_CTX *tls;
	char *files[WEBCFG_WATCHED - 1]; /* cert, key, client CA: NULL = none */
	struct webcfg_user *users;
	size_t nusers;
	unsigned char ok[WEBCFG_OK_CACHE][WEBCFG_DIGEST];
	unsigned nok, ok_next;
};

struct http_webcfg {
	char *path;
	struct webcfg_state *st;
	struct file_stamp stamps[WEBCFG_WATCHED];
	unsigned reloads;
	/* bcrypt's debt: a run of T ms adds 2T, the clock pays it back, and
	 * no run starts above WEBCFG_BCRYPT_BURST_MS. Wrong passwords sent
	 * without pause so take at most half the HTTP thread, and the probes
	 * between them are still answered. */
	uint64_t bcrypt_debt_ms, bcrypt_debt_at_ms;
};

/* ---- reading the YAML ---- */

struct webcfg_parse {
	yaml_document_t *doc;
	const char *base_dir;
	char *err;
	size_t errlen;
	/* tls_server_config as read */
	char *cert_file, *key_file, *ca_file;
	enum client_auth client_auth;
	int min_version, max_version;
	struct webcfg_state *st;
};

static const char *scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* "key:" with nothing after it, "~" or "null": as if the key were absent. */
static bool is_null(const yaml_node_t *n)
{
	const char *s = scalar(n);
	if (!s || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	return !*s || strcmp(s, "~") == 0 || strcasecmp(s, "null") == 0;
}

static int fail(struct webcfg_parse *p, const yaml_node_t *at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct webcfg_parse *p, const yaml_node_t *at, const char *fmt, ...)
{
	int n = at ? snprintf(p->err, p->errlen, "line %lu: ", (unsigned long)at->start_mark.line + 1)
		   : 0;
	if (n < 0 || (size_t)n >= p->errlen)
		n = 0;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return RMQNS_EINVAL;
}

static int need_text(struct webcfg_parse *p, const yaml_node_t *v, const char *key, const char **out)
{
	*out = scalar(v);
	if (!*out || !**out)
		return fail(p, v, "%s: a non-empty string is expected", key);
	return RMQNS_OK;
}

/* A path as given, or relative to the file's directory (as exporter-toolkit
 * resolves them). */
static int read_path(struct webcfg_parse *p, const yaml_node_t *v, const char *key, char **slot)
{
	const char *s;
	int rc = need_text(p, v, key, &s);
	if (rc < 0)
		return rc;
	free(*slot);
	size_t n = strlen(s) + (p->base_dir ? strlen(p->base_dir) : 0) + 2;
	if (!(*slot = malloc(n)))
		return fail(p, NULL, "out of memory");
	if (s[0] == '/' || !p->base_dir || !*p->base_dir)
		snprintf(*slot, n, "%s", s);
	else
		snprintf(*slot, n, "%s/%s", p->base_dir, s);
	return RMQNS_OK;
}

static int read_version(struct webcfg_parse *p, const yaml_node_t *v, const char *key, int *out)
{
	const char *s;
	int rc = need_text(p, v, key, &s);
	if (rc < 0)
		return rc;
	for (int i = 0; tls_version_names[i]; i++)
		if (strcmp(s, tls_version_names[i]) == 0)
			return *out = TLS1_VERSION + i, RMQNS_OK;
	return fail(p, v, "%s: unknown TLS version \"%.40s\" (TLS10, TLS11, TLS12 or TLS13)", key, s);
}

static int read_bool(struct webcfg_parse *p, const yaml_node_t *v, const char *key)
{
	const char *s = scalar(v);
	if (s && (strcmp(s, "true") == 0 || strcmp(s, "false") == 0))
		return RMQNS_OK;
	return fail(p, v, "%s: true or false is expected", key);
}

static int tls_key(struct webcfg_parse *p, const char *key, const yaml_node_t *v)
{
	if (strcmp(key, "cert_file") == 0)
		return read_path(p, v, "tls_server_config.cert_file", &p->cert_file);
	if (strcmp(key, "key_file") == 0)
		return read_path(p, v, "tls_server_config.key_file", &p->key_file);
	if (strcmp(key, "client_ca_file") == 0)
		return read_path(p, v, "tls_server_config.client_ca_file", &p->ca_file);
	if (strcmp(key, "min_version") == 0)
		return read_version(p, v, "tls_server_config.min_version", &p->min_version);
	if (strcmp(key, "max_version") == 0)
		return read_version(p, v, "tls_server_config.max_version", &p->max_version);
	/* OpenSSL prefers the server's order already */
	if (strcmp(key, "prefer_server_cipher_suites") == 0)
		return read_bool(p, v, "tls_server_config.prefer_server_cipher_suites");
	if (strcmp(key, "client_auth_type") == 0) {
		const char *s;
		int rc = need_text(p, v, "tls_server_config.client_auth_type", &s);
		for (int i = 0; rc == 0 && client_auth_names[i]; i++)
			if (strcmp(s, client_auth_names[i]) == 0)
				return p->client_auth = (enum client_auth)i, RMQNS_OK;
		return rc < 0 ? rc
			      : fail(p, v, "tls_server_config.client_auth_type: unknown value \"%.40s\" "
					   "(NoClientCert, RequestClientCert, RequireAnyClientCert, "
					   "VerifyClientCertIfGiven or RequireAndVerifyClientCert)", s);
	}
	static const char *const unsupported[] = { "cert", "key", "client_ca", "cipher_suites",
						   "curve_preferences", "client_allowed_sans", NULL };
	for (int i = 0; unsupported[i]; i++)
		if (strcmp(key, unsupported[i]) == 0)
			return fail(p, v, "tls_server_config.%s is not supported by rmqns", key);
	return fail(p, v, "unknown key tls_server_config.%.64s", key);
}

static int http_key(struct webcfg_parse *p, const char *key, const yaml_node_t *v)
{
	/* accepted for files shared with exporters: the port speaks HTTP/1.1 only */
	if (strcmp(key, "http2") == 0)
		return read_bool(p, v, "http_server_config.http2");
	if (strcmp(key, "headers") == 0)
		return fail(p, v, "http_server_config.headers is not supported by rmqns");
	return fail(p, v, "unknown key http_server_config.%.64s", key);
}

/* $2a$, $2b$ or $2y$, a two-digit cost, 53 characters of bcrypt's base64. */
static bool bcrypt_hash_valid(const char *h)
{
	static const char b64[] = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	if (strlen(h) != 60 || h[0] != '$' || h[1] != '2' || !strchr("aby", h[2]) || h[3] != '$' ||
	    h[4] < '0' || h[4] > '3' || h[5] < '0' || h[5] > '9' || h[6] != '$')
		return false;
	int cost = (h[4] - '0') * 10 + (h[5] - '0');
	if (cost < 4 || cost > 31)
		return false;
	return strspn(h + 7, b64) == 53;
}

static int user_entry(struct webcfg_parse *p, const char *name, const yaml_node_t *v)
{
	const char *hash = scalar(v);
	if (!*name)
		return fail(p, v, "basic_auth_users: an empty user name");
	if (strchr(name, ':'))
		return fail(p, v, "basic_auth_users.%.64s: a user name cannot hold ':'", name);
	if (!hash || !bcrypt_hash_valid(hash))
		return fail(p, v, "basic_auth_users.%.64s: a bcrypt hash ($2b$, $2y$ or $2a$, 60 "
				  "characters) is expected", name);
	struct webcfg_state *st = p->st;
	for (size_t i = 0; i < st->nusers; i++)
		if (strcmp(st->users[i].name, name) == 0)
			return fail(p, v, "basic_auth_users.%.64s appears twice", name);
	struct webcfg_user *grown = realloc(st->users, (st->nusers + 1) * sizeof *grown);
	if (!grown)
		return fail(p, NULL, "out of memory");
	st->users = grown;
	struct webcfg_user *u = &st->users[st->nusers];
	u->name = strdup(name);
	u->hash = strdup(hash);
	if (!u->name || !u->hash) {
		free(u->name);
		free(u->hash);
		return fail(p, NULL, "out of memory");
	}
	st->nusers++;
	return RMQNS_OK;
}

typedef int (*key_fn)(struct webcfg_parse *p, const char *key, const yaml_node_t *v);

/* Calls fn for every key: value of the mapping m (a null m is empty). A
 * null value is a key left out, but for a user: a user without a hash
 * must be refused, not skipped. */
static int each_pair(struct webcfg_parse *p, const yaml_node_t *m, const char *section, key_fn fn)
{
	if (is_null(m))
		return RMQNS_OK;
	if (m->type != YAML_MAPPING_NODE)
		return fail(p, m, "%s: a mapping is expected", section);
	for (yaml_node_pair_t *pr = m->data.mapping.pairs.start; pr < m->data.mapping.pairs.top; pr++) {
		const yaml_node_t *k = yaml_document_get_node(p->doc, pr->key);
		const yaml_node_t *v = yaml_document_get_node(p->doc, pr->value);
		const char *key = scalar(k);
		if (!key)
			return fail(p, k, "%s: keys must be strings", section);
		if (fn != user_entry && is_null(v))
			continue;
		int rc = fn(p, key, v);
		if (rc < 0)
			return rc;
	}
	return RMQNS_OK;
}

static int top_key(struct webcfg_parse *p, const char *key, const yaml_node_t *v)
{
	if (strcmp(key, "tls_server_config") == 0)
		return each_pair(p, v, key, tls_key);
	if (strcmp(key, "http_server_config") == 0)
		return each_pair(p, v, key, http_key);
	if (strcmp(key, "basic_auth_users") == 0)
		return each_pair(p, v, key, user_entry);
	return fail(p, v, "unknown key %.64s (tls_server_config, http_server_config or "
			  "basic_auth_users)", key);
}

/* ---- the TLS context ---- */

static int openssl_fail(struct webcfg_parse *p, const char *what, const char *path)
{
	char why[256];
	tls_openssl_reason(why, sizeof why);
	return fail(p, NULL, "%s %s: %s", what, path ? path : "", why);
}

static int accept_any_certificate(int preverify, X509_STORE_CTX *x)
{
	(void)preverify;
	(void)x;
	return 1;
}

static int tls_build(struct webcfg_parse *p)
{
	if (!p->cert_file || !p->key_file)
		return fail(p, NULL, "tls_server_config needs both cert_file and key_file (missing %s)",
			    p->cert_file ? "key_file" : "cert_file");
	bool verify = p->client_auth == CA_VERIFY_IF_GIVEN || p->client_auth == CA_REQUIRE_VERIFY;
	if (verify && !p->ca_file)
		return fail(p, NULL, "tls_server_config.client_auth_type %s needs "
				     "tls_server_config.client_ca_file", client_auth_names[p->client_auth]);
	/* the protocol port's settings (TLS 1.2 at least) unless min_version
	 * or max_version say otherwise */
	SSL_CTX *ctx = tls_server_ctx_new();
	if (!ctx)
		return openssl_fail(p, "cannot create a TLS context", NULL);
	p->st->tls = ctx;
	if ((p->min_version && !SSL_CTX_set_min_proto_version(ctx, p->min_version)) ||
	    (p->max_version && !SSL_CTX_set_max_proto_version(ctx, p->max_version)))
		return openssl_fail(p, "tls_server_config.min_version/max_version", NULL);
	if (SSL_CTX_use_certificate_chain_file(ctx, p->cert_file) != 1)
		return openssl_fail(p, "cannot load tls_server_config.cert_file", p->cert_file);
	if (SSL_CTX_use_PrivateKey_file(ctx, p->key_file, SSL_FILETYPE_PEM) != 1)
		return openssl_fail(p, "cannot load tls_server_config.key_file", p->key_file);
	if (SSL_CTX_check_private_key(ctx) != 1)
		return openssl_fail(p, "tls_server_config.key_file does not go with cert_file",
				    p->key_file);
	if (p->ca_file && tls_ctx_use_client_ca(ctx, p->ca_file) < 0)
		return openssl_fail(p, "cannot load tls_server_config.client_ca_file", p->ca_file);
	static const int modes[] = {
		[CA_NONE] = SSL_VERIFY_NONE,
		[CA_REQUEST] = SSL_VERIFY_PEER,
		[CA_REQUIRE_ANY] = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
		[CA_VERIFY_IF_GIVEN] = SSL_VERIFY_PEER,
		[CA_REQUIRE_VERIFY] = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
	};
	SSL_CTX_set_verify(ctx, modes[p->client_auth], verify ? NULL : accept_any_certificate);
	return RMQNS_OK;
}

static void state_free(struct webcfg_state *st)
{
	if (!st)
		return;
	SSL_CTX_free(st->tls);
	for (size_t i = 0; i < st->nusers; i++) {
		free(st->users[i].name);
		free(st->users[i].hash);
	}
	free(st->users);
	for (int i = 0; i < WEBCFG_WATCHED - 1; i++)
		free(st->files[i]);
	OPENSSL_cleanse(st->ok, sizeof st->ok);
	free(st);
}

/* The whole file's text; NULL with the reason. base_dir resolves relative paths. */
static struct webcfg_state *parse(const char *text, size_t len, const char *base_dir, char *err,
				  size_t errlen)
{
	yaml_document_t doc;
	struct webcfg_parse p = { .doc = &doc, .base_dir = base_dir, .err = err, .errlen = errlen };
	int rc = RMQNS_EINVAL;

	if (errlen)
		err[0] = '\0';
	p.st = calloc(1, sizeof *p.st);
	if (!p.st) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (yaml_doc_load(&doc, text, len, err, errlen) < 0) {
		free(p.st);
		return NULL;
	}
	const yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (!root)
		rc = RMQNS_OK; /* an empty file: plaintext, no login */
	else
		rc = each_pair(&p, root, "the file", top_key);
	/* TLS once tls_server_config sets anything but
	 * prefer_server_cipher_suites (all of it the section's only) */
	if (rc == RMQNS_OK &&
	    (p.cert_file || p.key_file || p.ca_file || p.client_auth || p.min_version || p.max_version))
		rc = tls_build(&p);
	if (rc == RMQNS_OK) {
		p.st->files[0] = p.cert_file;
		p.st->files[1] = p.key_file;
		p.st->files[2] = p.ca_file;
		p.cert_file = p.key_file = p.ca_file = NULL;
	}
	free(p.cert_file);
	free(p.key_file);
	free(p.ca_file);
	yaml_document_delete(&doc);
	if (rc < 0) {
		state_free(p.st);
		return NULL;
	}
	return p.st;
}

/* ---- the file ---- */

static struct webcfg_state *load(const char *path, char *err, size_t errlen)
{
	char why[512];
	struct buf text = BUF_INIT;
	/* durable_read refuses a FIFO at once: the HTTP thread never waits */
	if (durable_read(path, HTTP_WEBCFG_FILE_MAX, &text, err, errlen) < 0) {
		buf_free(&text);
		return NULL;
	}
	/* a bare name keeps the paths in it as written */
	bool bare = !strchr(path, '/');
	char *dir = bare ? NULL : durable_dir_of(path);
	struct webcfg_state *st = NULL;
	if (!bare && !dir)
		snprintf(why, sizeof why, "out of memory");
	else
		st = parse((const char *)text.data, text.len, dir, why, sizeof why);
	free(dir);
	buf_free(&text);
	if (!st)
		snprintf(err, errlen, "%s: %s", path, why);
	return st;
}

/* The files st names (certificate, key, client CA) into out[1..]; out[0]
 * is the web configuration's own, taken before it is read. */
static void stamp_named_files(const struct webcfg_state *st, struct file_stamp out[WEBCFG_WATCHED])
{
	for (int i = 0; i < WEBCFG_WATCHED - 1; i++)
		file_stamp_take(&out[i + 1], st->files[i]);
}

static void describe(const struct http_webcfg *w, const char *what)
{
	const struct webcfg_state *st = w->st;
	log_info("HTTP port: web configuration %s%s: %s, %s%s", w->path, what, st->tls ? "TLS" : "plaintext",
		 st->nusers ? "basic authentication" : "no login",
		 st->nusers ? "" : " (basic_auth_users is empty)");
}

struct http_webcfg *http_webcfg_open(const char *path, char *err, size_t errlen)
{
	struct http_webcfg *w = calloc(1, sizeof *w);
	if (!w || !(w->path = strdup(path))) {
		free(w);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	/* stamped before reading, so a change made meanwhile is seen */
	file_stamp_take(&w->stamps[0], path);
	w->st = load(path, err, errlen);
	if (!w->st) {
		http_webcfg_close(w);
		return NULL;
	}
	stamp_named_files(w->st, w->stamps);
	describe(w, "");
	return w;
}

void http_webcfg_close(struct http_webcfg *w)
{
	if (w) {
		state_free(w->st);
		free(w->path);
	}
	free(w);
}

int http_webcfg_poll(struct http_webcfg *w)
{
	struct file_stamp now[WEBCFG_WATCHED];
	char err[768];

	file_stamp_take(&now[0], w->path);
	stamp_named_files(w->st, now);
	/* remembered even when the files do not load: a half-written set is
	 * tried again when the next file changes */
	if (!file_stamps_changed(w->stamps, now, WEBCFG_WATCHED))
		return 0;
	struct webcfg_state *fresh = load(w->path, err, sizeof err);
	if (!fresh) {
		log_warn("HTTP port: the web configuration changed but does not load, keeping the one in "
			 "force: %s", err);
		return 0;
	}
	state_free(w->st);
	w->st = fresh;
	/* files the new state names for the first time */
	stamp_named_files(w->st, w->stamps);
	w->reloads++;
	char what[64];
	snprintf(what, sizeof what, " reloaded (reload %u)", w->reloads);
	describe(w, what);
	return 1;
}

struct ssl_ctx_st *http_webcfg_tls(const struct http_webcfg *w)
{
	return w ? w->st->tls : NULL;
}

bool http_webcfg_auth_on(const struct http_webcfg *w)
{
	return w && w->st->nusers > 0;
}

/* ---- basic authentication ---- */

/* Standard base64 with its padding (len a multiple of 4, len / 4 * 3 < n);
 * the decoded text NUL-terminated in out; -1 when malformed or holding a
 * NUL. */
static int b64_decode(const char *in, size_t len, char *out, size_t n)
{
	if (len % 4 || len / 4 * 3 >= n)
		return -1;
	int o = EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)in, (int)len);
	if (o < 0)
		return -1;
	/* EVP_DecodeBlock counts the padding's bytes too */
	for (size_t i = len; i > 0 && in[i - 1] == '=' && o > 0; i--)
		o--;
	out[o] = '\0';
	return memchr(out, '\0', (size_t)o) ? -1 : o;
}

static void credential_digest(const struct webcfg_user *u, const char *password,
			      unsigned char out[WEBCFG_DIGEST])
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned int n = 0;
	bool ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) &&
		  EVP_DigestUpdate(md, u->name, strlen(u->name) + 1) &&
		  EVP_DigestUpdate(md, password, strlen(password) + 1) &&
		  EVP_DigestUpdate(md, u->hash, strlen(u->hash)) && EVP_DigestFinal_ex(md, out, &n);
	EVP_MD_CTX_free(md);
	if (!ok || n != WEBCFG_DIGEST)
		memset(out, 0, WEBCFG_DIGEST); /* matches no cache entry: bcrypt decides */
}

static bool cached_ok(const struct webcfg_state *st, const unsigned char d[WEBCFG_DIGEST])
{
	static const unsigned char zero[WEBCFG_DIGEST];
	bool hit = false;
	if (CRYPTO_memcmp(d, zero, WEBCFG_DIGEST) == 0)
		return false;
	for (unsigned i = 0; i < st->nok; i++)
		hit |= CRYPTO_memcmp(st->ok[i], d, WEBCFG_DIGEST) == 0;
	return hit;
}

static uint64_t monotonic_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static bool bcrypt_allowed(struct http_webcfg *w, uint64_t now)
{
	uint64_t paid = now - w->bcrypt_debt_at_ms;
	w->bcrypt_debt_ms = w->bcrypt_debt_ms > paid ? w->bcrypt_debt_ms - paid : 0;
	w->bcrypt_debt_at_ms = now;
	return w->bcrypt_debt_ms <= WEBCFG_BCRYPT_BURST_MS;
}

static bool bcrypt_matches(const char *password, const char *hash)
{
	struct crypt_data *cd = calloc(1, sizeof *cd);
	if (!cd)
		return false;
	const char *out = crypt_rn(password, hash, cd, sizeof *cd);
	size_t n = strlen(hash);
	bool ok = out && out[0] != '*' && strlen(out) == n && CRYPTO_memcmp(out, hash, n) == 0;
	OPENSSL_cleanse(cd, sizeof *cd);
	free(cd);
	return ok;
}

bool http_webcfg_admit(struct http_webcfg *w, const char *authorization)
{
	if (!http_webcfg_auth_on(w))
		return true;
	if (!authorization || strncasecmp(authorization, "Basic ", 6) != 0)
		return false;
	const char *b64 = authorization + 6;
	while (*b64 == ' ')
		b64++;
	size_t len = strcspn(b64, " \t\r\n");
	char plain[WEBCFG_AUTH_MAX];
	if (len >= sizeof plain || b64_decode(b64, len, plain, sizeof plain) < 0)
		return false;
	char *colon = strchr(plain, ':');
	if (!colon)
		return false;
	*colon = '\0';
	const char *password = colon + 1;
	struct webcfg_state *st = w->st;
	const struct webcfg_user *user = NULL;
	for (size_t i = 0; i < st->nusers; i++)
		if (strcmp(st->users[i].name, plain) == 0)
			user = &st->users[i];
	bool ok = false;
	unsigned char d[WEBCFG_DIGEST];
	if (user) {
		credential_digest(user, password, d);
		ok = cached_ok(st, d);
	}
	uint64_t start = monotonic_ms();
	if (!ok && !bcrypt_allowed(w, start)) {
		log_warn_limited("HTTP port: credentials refused unchecked: bcrypt checks of wrong or new "
				 "passwords already take half the HTTP thread's time");
	} else if (!ok) {
		ok = bcrypt_matches(password, user ? user->hash : unknown_user_hash) && user;
		uint64_t end = monotonic_ms();
		w->bcrypt_debt_ms += 2 * (end - start);
		if (ok) {
			memcpy(st->ok[st->ok_next], d, WEBCFG_DIGEST);
			st->ok_next = (st->ok_next + 1) % WEBCFG_OK_CACHE;
			if (st->nok < WEBCFG_OK_CACHE)
				st->nok++;
		}
	}
	OPENSSL_cleanse(d, sizeof d);
	OPENSSL_cleanse(plain, sizeof plain);
	return ok;
}
