/* The HTTP port with a web configuration (httpWebConfigFile, the
 * exporters' web.config.yml) against the real binary: /metrics, the status
 * page and its JSON refused 401 (with WWW-Authenticate) without
 * credentials, with a wrong password and for an unknown user, served with
 * the right ones; a plaintext request to the TLS port answered 400 and
 * nothing else; /healthz and /readyz open or closed per httpProbesOpen;
 * a rewritten file switching the password while the server runs, and a
 * broken rewrite keeping the one in force; a certificate renewed in place
 * served without a restart; client certificates required and verified;
 * cross-origin reads of /api/ with credentials for statusPeers' origins
 * only; probes answered under a flood of wrong passwords; broken files
 * refusing the start with the offending key named. The certificates are
 * made with openssl and the bcrypt hashes with crypt(3) at test time. */
#include <arpa/inet.h>
#include <crypt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "harness.h"
#include "harness_criterion.h"
#include "rmqns/buf.h"

#define WAIT_MS 30000 /* a reload is looked for every second; generous for a loaded host */

SERVER_FIXTURE_SUITE(webcfg, "rmqns-webcfg", .timeout = 180);

static int http_port_no;
static char *cert_path, *key_path;

/* ---- files made at test time ---- */

/* Runs the shell commands in the suite's directory; they must succeed. */
static void in_dir(const char *commands)
{
	char *cmd = NULL;
	cr_assert(asprintf(&cmd, "cd '%s' && { %s ; } >/dev/null 2>&1", fx.dir, commands) > 0);
	int st = system(cmd);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "failed: %s", cmd);
	free(cmd);
}

static void make_certificate(void)
{
	in_dir("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout key.pem "
	       "-out cert.pem -days 2 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1");
	cert_path = fixture_path(&fx, "cert.pem");
	key_path = fixture_path(&fx, "key.pem");
}

/* bcrypt's cost for the hashes made here: low, the tests need them fast. */
static int bcrypt_cost = 5;

static char *bcrypt_hash(const char *password)
{
	char salt[CRYPT_GENSALT_OUTPUT_SIZE];
	struct crypt_data cd;
	memset(&cd, 0, sizeof cd);
	cr_assert_not_null(crypt_gensalt_rn("$2b$", bcrypt_cost, NULL, 0, salt, sizeof salt));
	const char *h = crypt_rn(password, salt, &cd, sizeof cd);
	cr_assert(h && strncmp(h, "$2b$", 4) == 0, "crypt(3) makes no bcrypt hash");
	return strdup(h);
}

/* A web configuration: TLS with the test certificate when tls (an int:
 * the argument before "..." must not be one that C promotes), and the
 * users (name, password, ..., NULL). Written by rename, as config
 * managers do. */
static char *write_webcfg(int tls, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;
	if (tls)
		cr_assert_geq(buf_printf(&b, "tls_server_config:\n  cert_file: %s\n  key_file: %s\n",
					 cert_path, key_path), 0);
	cr_assert_geq(buf_append_str(&b, "basic_auth_users:\n"), 0);
	va_start(ap, tls);
	for (const char *user; (user = va_arg(ap, const char *)) != NULL;) {
		char *hash = bcrypt_hash(va_arg(ap, const char *));
		cr_assert_geq(buf_printf(&b, "  %s: \"%s\"\n", user, hash), 0);
		free(hash);
	}
	va_end(ap);
	cr_assert_geq(buf_terminate(&b), 0);
	char *tmp = fixture_write(&fx, "web.yml.tmp", (const char *)b.data);
	char *path = fixture_path(&fx, "web.yml");
	cr_assert_eq(rename(tmp, path), 0);
	free(tmp);
	buf_free(&b);
	return path;
}

/* ---- the server ---- */

static void start(const char *webcfg, const char *extra)
{
	static char port_arg[32], cfg_arg[300];
	http_port_no = harness_free_port();
	cr_assert_gt(http_port_no, 0);
	snprintf(port_arg, sizeof port_arg, "--httpPort=%d", http_port_no);
	snprintf(cfg_arg, sizeof cfg_arg, "--httpWebConfigFile=%s", webcfg);
	const char *args[] = { port_arg, cfg_arg, extra, NULL };
	cr_assert_eq(harness_start(&fx.srv, args), 0, "the server did not start");
}

/* ---- a client: one GET, plaintext or TLS, with or without credentials ---- */

struct answer {
	int status; /* -1: no HTTP answer */
	char *text; /* the whole answer, head and body */
};

static int connect_http(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)http_port_no),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { HARNESS_IO_TIMEOUT_MS / 1000, 0 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0, "cannot connect to the HTTP port");
	return fd;
}

/* When set, sent as the Authorization header instead of user:pass, and
 * as the Origin header. */
static const char *raw_authorization, *origin;

static void request_text(struct buf *req, const char *path, const char *user, const char *pass)
{
	cr_assert_geq(buf_printf(req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n", path), 0);
	if (origin)
		cr_assert_geq(buf_printf(req, "Origin: %s\r\n", origin), 0);
	if (raw_authorization) {
		cr_assert_geq(buf_printf(req, "Authorization: %s\r\n", raw_authorization), 0);
	} else if (user) {
		char plain[256];
		unsigned char b64[400];
		int n = snprintf(plain, sizeof plain, "%s:%s", user, pass);
		EVP_EncodeBlock(b64, (const unsigned char *)plain, n);
		cr_assert_geq(buf_printf(req, "Authorization: Basic %s\r\n", b64), 0);
	}
	cr_assert_geq(buf_append_str(req, "\r\n"), 0);
}

static struct answer answer_of(struct buf *got)
{
	struct answer a = { -1, NULL };
	cr_assert_geq(buf_terminate(got), 0);
	a.text = (char *)got->data;
	if (got->len >= 12 && strncmp(a.text, "HTTP/1.", 7) == 0)
		a.status = atoi(a.text + 9);
	*got = (struct buf)BUF_INIT;
	return a;
}

static struct answer get_plain(const char *path, const char *user, const char *pass)
{
	struct buf req = BUF_INIT, got = BUF_INIT;
	char chunk[4096];
	int fd = connect_http();
	request_text(&req, path, user, pass);
	cr_assert_eq(send(fd, req.data, req.len, MSG_NOSIGNAL), (ssize_t)req.len);
	for (ssize_t n; (n = recv(fd, chunk, sizeof chunk, 0)) > 0;)
		cr_assert_geq(buf_append(&got, chunk, (size_t)n), 0);
	close(fd);
	buf_free(&req);
	return answer_of(&got);
}

/* When set, the client certificate and key get_tls presents. */
static char *client_cert, *client_key;

/* Over TLS, checking the server's certificate against the test one; a
 * failed handshake or a connection cut is no answer (status -1). */
static struct answer get_tls(const char *path, const char *user, const char *pass)
{
	struct buf req = BUF_INIT, got = BUF_INIT;
	char chunk[4096];
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	cr_assert_not_null(ctx);
	cr_assert_eq(SSL_CTX_load_verify_locations(ctx, cert_path, NULL), 1);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (client_cert) {
		cr_assert_eq(SSL_CTX_use_certificate_file(ctx, client_cert, SSL_FILETYPE_PEM), 1);
		cr_assert_eq(SSL_CTX_use_PrivateKey_file(ctx, client_key, SSL_FILETYPE_PEM), 1);
	}
	SSL *ssl = SSL_new(ctx);
	int fd = connect_http();
	SSL_set_fd(ssl, fd);
	cr_assert_eq(X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), "127.0.0.1"), 1);
	request_text(&req, path, user, pass);
	/* TLS 1.3: a refused client certificate shows at the first read */
	if (SSL_connect(ssl) == 1 && SSL_write(ssl, req.data, (int)req.len) == (int)req.len)
		for (int n; (n = SSL_read(ssl, chunk, sizeof chunk)) > 0;)
			cr_assert_geq(buf_append(&got, chunk, (size_t)n), 0);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	ERR_clear_error();
	close(fd);
	buf_free(&req);
	return answer_of(&got);
}

static struct answer get(bool tls, const char *path, const char *user, const char *pass)
{
	return tls ? get_tls(path, user, pass) : get_plain(path, user, pass);
}

static int status_of(bool tls, const char *path, const char *user, const char *pass)
{
	struct answer a = get(tls, path, user, pass);
	free(a.text);
	return a.status;
}

/* 401 with a Basic challenge, and none of the path's content. */
static void expect_refused(bool tls, const char *path, const char *user, const char *pass)
{
	struct answer a = get(tls, path, user, pass);
	cr_expect_eq(a.status, 401, "%s as %s: %d, not 401", path, user ? user : "nobody", a.status);
	cr_expect_not_null(strcasestr(a.text, "\r\nWWW-Authenticate: Basic realm=\"rmqns\""),
			   "%s: no Basic challenge in %s", path, a.text);
	cr_expect_null(strstr(a.text, "rmqns_build_info"), "%s: metrics given away", path);
	cr_expect_null(strstr(a.text, "<html"), "%s: the page given away", path);
	free(a.text);
}

/* 200 with the path's own content. */
static void expect_served(bool tls, const char *path, const char *needle, const char *user,
			  const char *pass)
{
	struct answer a = get(tls, path, user, pass);
	cr_expect_eq(a.status, 200, "%s as %s: %d, not 200: %s", path, user ? user : "nobody", a.status,
		     a.text);
	cr_expect_not_null(strstr(a.text, needle), "%s: no %s in the answer", path, needle);
	free(a.text);
}

static const char *const protected_paths[][2] = {
	{ "/metrics", "rmqns_build_info" },
	{ "/", "<html" },
	{ "/api/node", "\"peers\"" },
	{ "/brokers", "\"brokers\"" },
};

static void expect_login_needed(bool tls)
{
	for (size_t i = 0; i < sizeof protected_paths / sizeof protected_paths[0]; i++) {
		const char *path = protected_paths[i][0];
		expect_refused(tls, path, NULL, NULL);
		expect_refused(tls, path, "alice", "wrong");
		expect_refused(tls, path, "mallory", "s3cret-a");
		expect_refused(tls, path, "alice", "");
		expect_served(tls, path, protected_paths[i][1], "alice", "s3cret-a");
		expect_served(tls, path, protected_paths[i][1], "bob", "s3cret-b");
	}
}

Test(webcfg, tls_and_login_guard_metrics_and_status_page)
{
	make_certificate();
	char *cfg = write_webcfg(true, "alice", "s3cret-a", "bob", "s3cret-b", NULL);
	start(cfg, NULL);
	expect_login_needed(true);
	/* malformed or foreign credentials are refusals too */
	const char *const odd[] = { "Basic !!!!", "Basic YWxpY2U=", "Bearer s3cret-a", "Basic",
				    "basic YWxpY2U6czNjcmV0LWE=x" };
	for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
		raw_authorization = odd[i];
		expect_refused(true, "/metrics", NULL, NULL);
	}
	/* the scheme's name is case-blind (RFC 7617): alice:s3cret-a */
	raw_authorization = "basic YWxpY2U6czNjcmV0LWE=";
	expect_served(true, "/metrics", "rmqns_build_info", NULL, NULL);
	raw_authorization = NULL;
	cr_expect(harness_wait_log(&fx.srv, "over TLS", 1000), "the log does not say TLS");
	free(cfg);
}

Test(webcfg, plaintext_refused_when_tls_is_configured)
{
	make_certificate();
	char *cfg = write_webcfg(true, "alice", "s3cret-a", NULL);
	start(cfg, NULL);
	const char *const paths[] = { "/metrics", "/", "/healthz" };
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		struct answer a = get_plain(paths[i], "alice", "s3cret-a");
		cr_expect_eq(a.status, 400, "plaintext %s: %d, not 400", paths[i], a.status);
		cr_expect_not_null(strstr(a.text, "HTTP request to an HTTPS server"), "%s", a.text);
		cr_expect_null(strstr(a.text, "rmqns_build_info"));
		cr_expect_null(strstr(a.text, "<html"));
		cr_expect_null(strstr(a.text, "reactor 0"));
		free(a.text);
	}
	/* TLS on the same port still works after them */
	expect_served(true, "/metrics", "rmqns_build_info", "alice", "s3cret-a");
	free(cfg);
}

Test(webcfg, login_without_tls)
{
	char *cfg = write_webcfg(false, "alice", "s3cret-a", "bob", "s3cret-b", NULL);
	start(cfg, NULL);
	expect_login_needed(false);
	free(cfg);
}

Test(webcfg, probes_open_by_default)
{
	make_certificate();
	char *cfg = write_webcfg(true, "alice", "s3cret-a", NULL);
	start(cfg, NULL);
	expect_served(true, "/healthz", "ok", NULL, NULL);
	expect_served(true, "/readyz", "ready", NULL, NULL);
	expect_refused(true, "/metrics", NULL, NULL);
	free(cfg);
}

Test(webcfg, probes_closed_when_asked)
{
	make_certificate();
	char *cfg = write_webcfg(true, "alice", "s3cret-a", NULL);
	start(cfg, "--httpProbesOpen=false");
	expect_refused(true, "/healthz", NULL, NULL);
	expect_refused(true, "/readyz", "alice", "wrong");
	expect_served(true, "/healthz", "ok", "alice", "s3cret-a");
	expect_served(true, "/readyz", "ready", "alice", "s3cret-a");
	free(cfg);
}

/* The status page of a peer reads /api/ from the browser with its
 * credentials: allowed to the statusPeers' origins only, never to any
 * site (a logged-in browser would otherwise hand the API to every page). */
Test(webcfg, status_peers_read_with_credentials_only_from_peers)
{
	make_certificate();
	char *cfg = write_webcfg(true, "alice", "s3cret-a", NULL);
	start(cfg, "--statusPeers=127.0.0.1:19001, https://peer.example:9877");
	const char *const allowed[] = { "https://127.0.0.1:19001", "http://127.0.0.1:19001",
					"https://peer.example:9877" };
	const char *const refused[] = { "https://evil.example", "http://peer.example:9877",
					"https://127.0.0.1:1900", "null" };
	for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) {
		origin = allowed[i];
		struct answer a = get_tls("/api/node", "alice", "s3cret-a");
		char *want = NULL;
		cr_assert(asprintf(&want, "\r\nAccess-Control-Allow-Origin: %s\r\n", origin) > 0);
		cr_expect_eq(a.status, 200);
		cr_expect_not_null(strstr(a.text, want), "origin %s not allowed: %s", origin, a.text);
		cr_expect_not_null(strstr(a.text, "\r\nAccess-Control-Allow-Credentials: true\r\n"));
		cr_expect_null(strstr(a.text, "Access-Control-Allow-Origin: *"));
		free(want);
		free(a.text);
	}
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		origin = refused[i];
		struct answer a = get_tls("/api/node", "alice", "s3cret-a");
		cr_expect_eq(a.status, 200);
		cr_expect_null(strstr(a.text, "Access-Control-Allow"), "origin %s allowed: %s", origin,
			       a.text);
		free(a.text);
	}
	origin = NULL;
	free(cfg);
}

/* Wrong passwords sent at once, each a bcrypt run of a second or more on
 * the HTTP thread: the thread spends at most about half its time on them
 * (the rest refused unchecked), so a probe sent meanwhile is answered. */
Test(webcfg, wrong_password_flood_leaves_probes_answered)
{
	enum { FLOOD = 6 };
	make_certificate();
	bcrypt_cost = 14;
	char *cfg = write_webcfg(true, "alice", "s3cret-a", NULL);
	bcrypt_cost = 5;
	start(cfg, NULL);
	pid_t kids[FLOOD];
	for (int i = 0; i < FLOOD; i++) {
		kids[i] = fork();
		cr_assert_geq(kids[i], 0);
		if (kids[i] == 0) {
			/* 401, or cut at the connection's deadline while the
			 * thread ran another one's bcrypt: never served */
			struct answer a = get_tls("/metrics", "alice", "wrong");
			_exit(a.status == 401 || a.status == -1 ? 0 : 1);
		}
	}
	harness_sleep_ms(300);
	expect_served(true, "/healthz", "ok", NULL, NULL);
	for (int i = 0; i < FLOOD; i++) {
		int st;
		cr_assert_eq(waitpid(kids[i], &st, 0), kids[i]);
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a wrong password was served");
	}
	cr_expect(harness_wait_log(&fx.srv, "credentials refused unchecked", 1000),
		  "every wrong password ran bcrypt");
	free(cfg);
}

/* client_auth_type RequireAndVerifyClientCert: no answer to a client
 * without a certificate or with one of another CA; one of client_ca_file's
 * CA still needs the password. */
Test(webcfg, client_certificates_required_and_verified)
{
	make_certificate();
	in_dir("for ca in ca other; do openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
	       "-nodes -keyout $ca.key -out $ca.pem -days 2 -subj /CN=$ca && "
	       "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout cli-$ca.key "
	       "-out cli-$ca.csr -subj /CN=client-$ca && openssl x509 -req -in cli-$ca.csr -CA $ca.pem "
	       "-CAkey $ca.key -set_serial 9 -days 2 -out cli-$ca.pem || exit 1; done");
	char *users = write_webcfg(true, "alice", "s3cret-a", NULL);
	char *text = harness_slurp(users);
	char *cfg_text = NULL;
	cr_assert(asprintf(&cfg_text, "%s", text) > 0);
	char *cut = strstr(cfg_text, "basic_auth_users:");
	cr_assert_not_null(cut);
	*cut = '\0';
	char *full = NULL;
	cr_assert(asprintf(&full, "%s  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n%s",
			   cfg_text, strstr(text, "basic_auth_users:")) > 0);
	char *cfg = fixture_write(&fx, "web.yml", full);
	start(cfg, NULL);

	struct answer a = get_tls("/metrics", "alice", "s3cret-a");
	cr_expect_eq(a.status, -1, "answered without a client certificate: %s", a.text);
	free(a.text);
	client_cert = fixture_path(&fx, "cli-other.pem");
	client_key = fixture_path(&fx, "cli-other.key");
	a = get_tls("/healthz", NULL, NULL);
	cr_expect_eq(a.status, -1, "answered with a certificate of another CA: %s", a.text);
	free(a.text);
	free(client_cert);
	free(client_key);
	client_cert = fixture_path(&fx, "cli-ca.pem");
	client_key = fixture_path(&fx, "cli-ca.key");
	expect_served(true, "/metrics", "rmqns_build_info", "alice", "s3cret-a");
	expect_refused(true, "/metrics", "alice", "wrong");
	free(client_cert);
	free(client_key);
	client_cert = client_key = NULL;
	free(users);
	free(text);
	free(cfg_text);
	free(full);
	free(cfg);
}

/* Until path answers `want` with the credentials, or WAIT_MS. */
static bool wait_status(const char *path, const char *user, const char *pass, int want)
{
	int64_t end = harness_now_ms() + WAIT_MS;
	while (status_of(true, path, user, pass) != want) {
		if (harness_now_ms() > end)
			return false;
		harness_sleep_ms(200);
	}
	return true;
}

Test(webcfg, reload_switches_the_password)
{
	make_certificate();
	char *cfg = write_webcfg(true, "alice", "old-pass", NULL);
	start(cfg, NULL);
	expect_served(true, "/metrics", "rmqns_build_info", "alice", "old-pass");

	free(write_webcfg(true, "alice", "new-pass", NULL));
	cr_assert(wait_status("/metrics", "alice", "new-pass", 200), "the new password is not taken");
	expect_refused(true, "/metrics", "alice", "old-pass");
	cr_expect(harness_wait_log(&fx.srv, "reloaded (reload 1)", 1000));

	/* a broken file keeps the one in force and says why */
	char *tmp = fixture_write(&fx, "web.yml.tmp",
				  "tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
				  "basic_auth_users:\n  alice: not-a-hash\n");
	cr_assert_eq(rename(tmp, cfg), 0);
	free(tmp);
	cr_assert(harness_wait_log(&fx.srv, "does not load, keeping the one in force", WAIT_MS));
	cr_expect(harness_wait_log(&fx.srv, "basic_auth_users.alice", 1000));
	expect_served(true, "/metrics", "rmqns_build_info", "alice", "new-pass");
	expect_refused(true, "/metrics", "alice", "not-a-hash");

	/* the file without users: login off, TLS still on */
	tmp = fixture_write(&fx, "web.yml.tmp", "");
	char *text = NULL;
	cr_assert(asprintf(&text, "tls_server_config:\n  cert_file: %s\n  key_file: %s\n", cert_path,
			   key_path) > 0);
	free(tmp);
	tmp = fixture_write(&fx, "web.yml.tmp", text);
	cr_assert_eq(rename(tmp, cfg), 0);
	cr_assert(wait_status("/metrics", NULL, NULL, 200), "the login stays on without users");
	free(text);
	free(tmp);
	free(cfg);
}

/* A certificate renewed in place (key, then certificate, each by rename):
 * new connections get it without a restart. The client trusts only the
 * file on disk, so the old certificate fails its check until the reload. */
Test(webcfg, certificate_files_reloaded)
{
	make_certificate();
	char *cfg = write_webcfg(true, "alice", "s3cret-a", NULL);
	start(cfg, NULL);
	expect_served(true, "/metrics", "rmqns_build_info", "alice", "s3cret-a");
	in_dir("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout new.key "
	       "-out new.pem -days 2 -subj /CN=renewed -addext subjectAltName=IP:127.0.0.1 && "
	       "mv new.key key.pem && mv new.pem cert.pem");
	cr_assert(wait_status("/metrics", "alice", "s3cret-a", 200), "the renewed certificate is not served");
	cr_expect(harness_wait_log(&fx.srv, "reloaded (reload", 1000));
	free(cfg);
}

/* The web configuration text (a %s each for the certificate and the key
 * where it names them) refuses the start, the log naming `key`. */
static void expect_start_refused(const char *text, const char *key)
{
	char *body = NULL;
	cr_assert(asprintf(&body, text, cert_path, key_path) > 0);
	char *cfg = fixture_write(&fx, "bad.yml", body);
	free(body);
	static char port_arg[32], cfg_arg[300];
	snprintf(port_arg, sizeof port_arg, "--httpPort=%d", harness_free_port());
	snprintf(cfg_arg, sizeof cfg_arg, "--httpWebConfigFile=%s", cfg);
	const char *args[] = { port_arg, cfg_arg, NULL };
	struct harness_server s;
	memset(&s, 0, sizeof s);
	cr_assert_neq(harness_start(&s, args), 0, "started with a web configuration lacking %s", key);
	char *log = harness_read_log(&s);
	cr_assert_not_null(log);
	cr_expect_not_null(strstr(log, "httpWebConfigFile"), "the log does not name the option: %s", log);
	cr_expect_not_null(strstr(log, key), "the log does not name %s: %s", key, log);
	free(log);
	harness_cleanup(&s);
	free(cfg);
}

Test(webcfg, invalid_files_refuse_the_start)
{
	make_certificate();
	expect_start_refused("tls_server_config:\n  cert_file: %s\n  key_file: %s\n  bogus: 1\n",
			     "unknown key tls_server_config.bogus");
	expect_start_refused("tls_server_configs:\n  cert_file: %s\n  key_file: %s\n",
			     "unknown key tls_server_configs");
	expect_start_refused("tls_server_config:\n  cert_file: %s\n", "key_file");
	expect_start_refused("tls_server_config:\n  cert_file: %s/nothing\n  key_file: %s\n",
			     "tls_server_config.cert_file");
	expect_start_refused("tls_server_config:\n  cert_file: %s\n  key_file: %s\n"
			     "  min_version: TLS99\n",
			     "tls_server_config.min_version");
	expect_start_refused("tls_server_config:\n  cert_file: %s\n  key_file: %s\n"
			     "  client_auth_type: RequireAndVerifyClientCert\n",
			     "tls_server_config.client_ca_file");
	expect_start_refused("tls_server_config:\n  cert_file: %s\n  key_file: %s\n"
			     "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n",
			     "tls_server_config.cipher_suites is not supported");
	expect_start_refused("basic_auth_users:\n  alice: plain-password\n# %s %s\n",
			     "basic_auth_users.alice");
	expect_start_refused("basic_auth_users: [alice]\n# %s %s\n", "basic_auth_users");
	expect_start_refused("basic_auth_users:\n  alice: [\n# %s %s\n", "not YAML");
}
