/* TLS on the protocol port against the real binary: the three modes, a
 * TLS client of our own (libssl) and `openssl s_client` next to plaintext
 * clients on one port, certificate rotation with connections open,
 * handshakes that stall or carry garbage while others are answered, and
 * client-certificate verification. Certificates are made at test time
 * with the openssl command into a temporary directory.
 *
 * A plain program (harness_main) so that it also runs under TSan in the
 * 'concurrency' suite. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "harness.h"
#include "rmqns/buf.h"
#include "rmqns/client.h"
#include "rmqns/err.h"
#include "rmqns/remoting.h"

extern char **environ;

#define IO_MS HARNESS_IO_TIMEOUT_MS
#define SERIAL_ONE 4097 /* 0x1001, the first server certificate */
#define SERIAL_TWO 8194 /* 0x2002, the one it is rotated to */

static char certs[256]; /* the certificates of every test */

/* Frees every pointer named. */
#define FREE_ALL(...) free_each((void *[]){ __VA_ARGS__ }, sizeof((void *[]){ __VA_ARGS__ }) / sizeof(void *))
static void free_each(void *const *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(p[i]);
}

static char *cert(const char *name)
{
	char *p = harness_path_in(certs, name);
	if (!p)
		abort();
	return p;
}

static int run_quiet(const char *cmd)
{
	char *full = NULL;
	if (asprintf(&full, "cd '%s' && { %s ; } >/dev/null 2>&1", certs, cmd) < 0)
		return -1;
	int st = system(full);
	free(full);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Two CAs; server certificates one and two (CA one); a client
 * certificate from each CA; server one's key encrypted as Java's PKCS#8. */
static int make_certs(void)
{
	static const char *const cmds[] = {
		"openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key "
		"-out ca.pem -days 2 -subj /CN=rmqns-test-ca",
		"openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca2.key "
		"-out ca2.pem -days 2 -subj /CN=rmqns-other-ca",
		"openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv1.key "
		"-out srv1.csr -subj /CN=server-one",
		"openssl x509 -req -in srv1.csr -CA ca.pem -CAkey ca.key -set_serial 4097 -days 2 -out srv1.pem",
		"openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout srv2.key "
		"-out srv2.csr -subj /CN=server-two",
		"openssl x509 -req -in srv2.csr -CA ca.pem -CAkey ca.key -set_serial 8194 -days 2 -out srv2.pem",
		"openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout cli1.key "
		"-out cli1.csr -subj /CN=client-trusted",
		"openssl x509 -req -in cli1.csr -CA ca.pem -CAkey ca.key -set_serial 11 -days 2 -out cli1.pem",
		"openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout cli2.key "
		"-out cli2.csr -subj /CN=client-other",
		"openssl x509 -req -in cli2.csr -CA ca2.pem -CAkey ca2.key -set_serial 12 -days 2 -out cli2.pem",
		"openssl pkcs8 -topk8 -in srv1.key -out srv1-enc.key -v2 aes-256-cbc -passout pass:s3cret",
	};
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		if (run_quiet(cmds[i]) < 0) {
			fprintf(stderr, "cannot make the test certificates: %s\n", cmds[i]);
			return -1;
		}
	}
	/* as Java's TLS guide makes server.key (RC4: OpenSSL's legacy provider) */
	if (run_quiet("openssl pkcs8 -topk8 -in srv1.key -out srv1-rc4.key -v1 PBE-SHA1-RC4-128 "
		      "-passout pass:s3cret -provider legacy -provider default") < 0)
		fprintf(stderr, "no legacy provider: the RC4-encrypted key is not tested\n");
	return 0;
}

static int copy_file(const char *from, const char *to)
{
	char *cmd = NULL;
	if (asprintf(&cmd, "cp '%s' '%s.tmp' && mv '%s.tmp' '%s'", from, to, to, to) < 0)
		return -1;
	int rc = run_quiet(cmd);
	free(cmd);
	return rc;
}

/* ---- a TLS client ---- */

struct tcli {
	int fd;
	SSL_CTX *ctx;
	SSL *ssl;
};

static void tcli_close(struct tcli *t)
{
	if (!t)
		return;
	if (t->ssl)
		SSL_free(t->ssl);
	if (t->ctx)
		SSL_CTX_free(t->ctx);
	if (t->fd >= 0)
		close(t->fd);
	free(t);
}

static int tcp_connect(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct timeval tv = { .tv_sec = IO_MS / 1000 };
	int one = 1;

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (fd < 0)
		return -1;
	/* bounded: a server that never answers fails the test, not hangs it */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A handshake with the server (verified against ca when given, with the
 * client certificate when given). NULL when it fails. */
static struct tcli *tcli_connect(int port, const char *ca, const char *cert_file, const char *key_file)
{
	struct tcli *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	t->fd = tcp_connect(port);
	t->ctx = SSL_CTX_new(TLS_client_method());
	if (t->fd < 0 || !t->ctx)
		goto fail;
	if (ca) {
		if (SSL_CTX_load_verify_locations(t->ctx, ca, NULL) != 1)
			goto fail;
		SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
	}
	if (cert_file && (SSL_CTX_use_certificate_chain_file(t->ctx, cert_file) != 1 ||
			  SSL_CTX_use_PrivateKey_file(t->ctx, key_file, SSL_FILETYPE_PEM) != 1))
		goto fail;
	t->ssl = SSL_new(t->ctx);
	if (!t->ssl || SSL_set_fd(t->ssl, t->fd) != 1 || SSL_connect(t->ssl) != 1)
		goto fail;
	return t;
fail:
	ERR_clear_error();
	tcli_close(t);
	return NULL;
}

static long tcli_peer_serial(struct tcli *t)
{
	X509 *x = SSL_get1_peer_certificate(t->ssl);
	long serial = x ? ASN1_INTEGER_get(X509_get0_serialNumber(x)) : -1;
	X509_free(x);
	return serial;
}

static int ssl_read_full(SSL *ssl, uint8_t *p, size_t n)
{
	while (n > 0) {
		int k = SSL_read(ssl, p, (int)n);
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* One request (code, an optional body, ext fields key, value, ..., NULL)
 * over TLS; the answer's code, or -1 when there is none (refused,
 * closed). *body_out (optional) gets the body, NUL-terminated. */
static int tcli_call_body(struct tcli *t, int32_t code, const char *body, char **body_out, ...)
{
	struct remoting_ext_field ext[8];
	struct remoting_cmd req;
	struct buf frame = BUF_INIT;
	uint32_t n = 0;
	va_list ap;

	va_start(ap, body_out);
	for (const char *k; n < 8 && (k = va_arg(ap, const char *)) != NULL; n++) {
		ext[n].key = k;
		ext[n].value = va_arg(ap, const char *);
	}
	va_end(ap);
	harness_request_init(&req, code, REMOTING_JSON);
	req.ext = ext;
	req.ext_count = n;
	req.body = (const uint8_t *)body;
	req.body_len = body ? (uint32_t)strlen(body) : 0;
	harness_encode(&req, &frame);
	int want = (int)frame.len;
	int w = SSL_write(t->ssl, frame.data, want);
	buf_free(&frame);
	if (w != want)
		return -1;
	uint8_t len4[4];
	if (ssl_read_full(t->ssl, len4, 4) < 0)
		return -1;
	uint32_t len = rd_be32(len4);
	uint8_t *all = malloc(len + 4u + 1u);
	if (!all)
		return -1;
	memcpy(all, len4, 4);
	struct remoting_cmd rsp;
	int rc = -1;
	if (ssl_read_full(t->ssl, all + 4, len) == 0 && remoting_decode(all, len + 4u, &rsp) == 0) {
		rc = rsp.code;
		if (body_out) {
			*body_out = strndup(rsp.body ? (const char *)rsp.body : "", rsp.body_len);
		}
		remoting_cmd_release(&rsp);
	}
	free(all);
	return rc;
}

/* ---- plaintext helpers ---- */

static int plain_call(struct client *c, int32_t code, char **body_out)
{
	struct client_reply *r = NULL;
	if (harness_call(c, code, NULL, &r, NULL) != 0 || !r)
		return -1;
	int rc = r->cmd.code;
	if (body_out)
		*body_out = strndup(r->cmd.body ? (const char *)r->cmd.body : "", r->cmd.body_len);
	client_reply_free(r);
	return rc;
}

static int register_broker(struct client *c)
{
	const char *body =
		"{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":"
		"{\"counter\":1,\"stateVersion\":0,\"timestamp\":1},\"topicConfigTable\":{"
		"\"TlsTopic\":{\"perm\":6,\"readQueueNums\":4,\"topicName\":\"TlsTopic\",\"writeQueueNums\":4},"
		"\"TlsOther\":{\"perm\":6,\"readQueueNums\":4,\"topicName\":\"TlsOther\",\"writeQueueNums\":4}}}}";
	struct client_reply *r = NULL;
	int rc = harness_call(c, REQ_REGISTER_BROKER, body, &r, "brokerName", "tls-b", "brokerAddr",
			      "127.0.0.1:10911", "clusterName", "TlsCluster", "haServerAddr", "h:1",
			      "brokerId", "0", "heartbeatTimeoutMillis", "60000", NULL);
	if (rc == 0 && r && r->cmd.code != 0)
		fprintf(stderr, "registration: code %d %s\n", r->cmd.code, r->cmd.remark ? r->cmd.remark : "");
	rc = rc == 0 && r && r->cmd.code == 0 ? 0 : -1;
	client_reply_free(r);
	return rc;
}

static int plain_route(struct client *c)
{
	struct client_reply *r = NULL;
	if (harness_call(c, REQ_GET_ROUTEINFO_BY_TOPIC, NULL, &r, "topic", "TlsTopic", NULL) != 0 || !r)
		return -1;
	int rc = r->cmd.code;
	client_reply_free(r);
	return rc;
}

static int start_tls(struct harness_server *s, const char *mode, const char *const *more)
{
	char *c1 = cert("srv1.pem"), *k1 = cert("srv1.key");
	char mode_arg[64], cert_arg[400], key_arg[400];
	const char *args[24];
	size_t n = 0;

	snprintf(mode_arg, sizeof mode_arg, "--tls.server.mode=%s", mode);
	snprintf(cert_arg, sizeof cert_arg, "--tls.server.certPath=%s", c1);
	snprintf(key_arg, sizeof key_arg, "--tls.server.keyPath=%s", k1);
	args[n++] = mode_arg;
	args[n++] = cert_arg;
	args[n++] = key_arg;
	for (size_t i = 0; more && more[i] && n < 23; i++)
		args[n++] = more[i];
	args[n] = NULL;
	int rc = harness_start(s, args);
	free(c1);
	free(k1);
	return rc;
}

/* `openssl s_client` sends one GET_BROKER_CLUSTER_INFO; the answer's code
 * (-1: none within the I/O bound). */
static int s_client_call(int port, const char *ca)
{
	char addr[64];
	int in[2], out[2];
	snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
	if (pipe(in) < 0 || pipe(out) < 0)
		return -1;
	const char *argv[] = { "openssl", "s_client", "-connect", addr, "-CAfile", ca,
			       "-verify_return_error", "-quiet", NULL };
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addclose(&fa, in[1]);
	posix_spawn_file_actions_addclose(&fa, out[0]);
	pid_t pid;
	int rc = posix_spawnp(&pid, "openssl", &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(in[0]);
	close(out[1]);
	if (rc != 0) {
		close(in[1]);
		close(out[0]);
		return -1;
	}
	struct remoting_cmd req;
	struct buf frame = BUF_INIT;
	harness_request_init(&req, REQ_GET_BROKER_CLUSTER_INFO, REMOTING_JSON);
	harness_encode(&req, &frame);
	ssize_t w = write(in[1], frame.data, frame.len);
	buf_free(&frame);
	uint8_t got[65536];
	size_t have = 0;
	int code = -1;
	while (w > 0 && have < sizeof got) {
		struct pollfd p = { .fd = out[0], .events = POLLIN };
		if (poll(&p, 1, IO_MS) <= 0)
			break;
		ssize_t n = read(out[0], got + have, sizeof got - have);
		if (n <= 0)
			break;
		have += (size_t)n;
		if (have >= 4 && have >= rd_be32(got) + 4u) {
			struct remoting_cmd rsp;
			if (remoting_decode(got, rd_be32(got) + 4u, &rsp) == 0) {
				code = rsp.code;
				remoting_cmd_release(&rsp);
			}
			break;
		}
	}
	close(in[1]);
	close(out[0]);
	kill(pid, SIGTERM); /* -quiet ignores the end of its input */
	waitpid(pid, NULL, 0);
	return code;
}

/* The value of one /metrics sample ("name{labels}"), -1 when absent. */
static long long metric(int http_port, const char *sample)
{
	int fd = tcp_connect(http_port);
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
	struct buf b = BUF_INIT;
	char chunk[8192];
	long long v = -1;
	if (fd < 0)
		return -1;
	if (write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1)) {
		ssize_t n;
		while ((n = recv(fd, chunk, sizeof chunk, 0)) > 0)
			buf_append(&b, chunk, (size_t)n);
	}
	close(fd);
	if (buf_terminate(&b) == 0) {
		char *needle = NULL;
		if (asprintf(&needle, "\n%s ", sample) > 0) {
			const char *at = strstr((const char *)b.data, needle);
			if (at)
				v = strtoll(at + strlen(needle), NULL, 10);
			free(needle);
		}
	}
	buf_free(&b);
	return v;
}

#define BIG_TOPICS 4000

/* A registration of BIG_TOPICS topics over TLS (a frame of many records),
 * then the topic list back (an answer of many records). */
static int big_frames_over_tls(struct tcli *t)
{
	struct buf body = BUF_INIT;
	harness_topics_body(&body, "TlsBig-", BIG_TOPICS, 4);
	int rc = tcli_call_body(t, REQ_REGISTER_BROKER, (const char *)body.data, NULL, "brokerName", "tls-big",
				"brokerAddr", "127.0.0.1:10999", "clusterName", "TlsCluster", "haServerAddr", "h:1",
				"brokerId", "0", "heartbeatTimeoutMillis", "60000", NULL);
	size_t sent = body.len;
	buf_free(&body);
	HARNESS_CHECK(rc == 0, "a %zu-byte registration over TLS: %d", sent, rc);
	char *list = NULL;
	HARNESS_CHECK(tcli_call_body(t, REQ_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, NULL, &list, NULL) == 0,
		      "topic list over TLS");
	size_t got = strlen(list);
	bool all = strstr(list, "\"TlsBig-0\"") && strstr(list, "\"TlsBig-3999\"");
	free(list);
	HARNESS_CHECK(all && got > 16384 * 3, "the whole list (%zu bytes) over TLS", got);
	return 0;
}

/* ---- the tests ---- */

static int test_permissive_mixed(struct harness_server *s)
{
	char *ca = cert("ca.pem"), *body = NULL;
	HARNESS_CHECK(start_tls(s, "permissive", NULL) == 0, "boot");

	struct tcli *t = tcli_connect(s->port, ca, NULL, NULL);
	HARNESS_CHECK(t, "TLS handshake on a permissive port");
	HARNESS_CHECK(tcli_peer_serial(t) == SERIAL_ONE, "server certificate serial");
	struct client *p = harness_connect(s);
	HARNESS_CHECK(p, "plaintext connect");
	HARNESS_CHECK(register_broker(p) == 0, "plaintext registration");
	/* interleaved on both transports, on one port */
	for (int i = 0; i < 20; i++) {
		HARNESS_CHECK(tcli_call_body(t, REQ_GET_ROUTEINFO_BY_TOPIC, NULL, &body, "topic", "TlsTopic", NULL) == 0,
			      "TLS route query %d", i);
		HARNESS_CHECK(strstr(body, "127.0.0.1:10911"), "route over TLS names the broker: %s", body);
		free(body);
		HARNESS_CHECK(plain_route(p) == 0, "plaintext route query %d", i);
	}
	HARNESS_CHECK(tcli_call_body(t, REQ_GET_BROKER_CLUSTER_INFO, NULL, &body, NULL) == 0, "cluster over TLS");
	HARNESS_CHECK(strstr(body, "TlsCluster"), "cluster answer over TLS: %s", body);
	free(body);
	HARNESS_CHECK(s_client_call(s->port, ca) == 0, "openssl s_client gets the cluster answer");
	HARNESS_CHECK(big_frames_over_tls(t) == 0, "big frames over TLS");
	HARNESS_CHECK(plain_call(p, REQ_GET_BROKER_CLUSTER_INFO, NULL) == 0, "plaintext still answered");
	tcli_close(t);
	client_close(p);
	free(ca);
	return 0;
}

static int test_enforcing_refuses_plaintext(struct harness_server *s)
{
	char *ca = cert("ca.pem");
	char http[32];
	int http_port = harness_free_port();
	snprintf(http, sizeof http, "--httpPort=%d", http_port);
	const char *more[] = { http, NULL };
	HARNESS_CHECK(start_tls(s, "enforcing", more) == 0, "boot");

	struct client *p = harness_connect(s);
	HARNESS_CHECK(p, "the TCP connect itself succeeds");
	HARNESS_CHECK(plain_call(p, REQ_GET_BROKER_CLUSTER_INFO, NULL) < 0, "plaintext answered in enforcing mode");
	HARNESS_CHECK(harness_wait_log(s, "plaintext refused (tls.server.mode=enforcing)", IO_MS),
		      "a log line for the refusal");
	client_close(p);
	struct tcli *t = tcli_connect(s->port, ca, NULL, NULL);
	HARNESS_CHECK(t, "TLS handshake in enforcing mode");
	HARNESS_CHECK(tcli_call_body(t, REQ_GET_BROKER_CLUSTER_INFO, NULL, NULL, NULL) == 0, "TLS answered");
	HARNESS_CHECK(s_client_call(s->port, ca) == 0, "openssl s_client in enforcing mode");
	HARNESS_CHECK(metric(http_port, "rmqns_tls_handshakes_total{result=\"done\"}") == 2, "handshakes counted");
	HARNESS_CHECK(metric(http_port, "rmqns_connections_by_transport_total{transport=\"tls\"}") == 2,
		      "TLS connections counted");
	HARNESS_CHECK(metric(http_port, "rmqns_connections_by_transport_total{transport=\"refused_plaintext\"}") == 1,
		      "the refused plaintext connection counted");
	tcli_close(t);
	free(ca);
	return 0;
}

static int test_disabled_unchanged(struct harness_server *s)
{
	HARNESS_CHECK(harness_start(s, NULL) == 0, "boot");
	struct client *p = harness_connect(s);
	HARNESS_CHECK(p, "connect");
	HARNESS_CHECK(plain_call(p, REQ_GET_BROKER_CLUSTER_INFO, NULL) == 0, "plaintext answered");
	/* no TLS: a ClientHello is a bad frame, the connection is closed */
	struct tcli *t = tcli_connect(s->port, NULL, NULL, NULL);
	HARNESS_CHECK(!t, "a TLS handshake succeeded with TLS disabled");
	char *body = NULL;
	struct client_reply *r = NULL;
	HARNESS_CHECK(harness_call(p, REQ_GET_NAMESRV_CONFIG, NULL, &r, NULL) == 0 && r, "config");
	body = strndup((const char *)r->cmd.body, r->cmd.body_len);
	HARNESS_CHECK(strstr(body, "tls.server.mode=disabled\n"), "GET_NAMESRV_CONFIG shows the mode");
	free(body);
	client_reply_free(r);
	/* never changeable remotely */
	r = NULL;
	HARNESS_CHECK(harness_call(p, REQ_UPDATE_NAMESRV_CONFIG, "tls.server.mode=permissive\n", &r, NULL) == 0 && r,
		      "update sent");
	HARNESS_CHECK(r->cmd.code == 16 && r->cmd.remark &&
			      strcmp(r->cmd.remark, "Can not update config in black list.") == 0,
		      "tls.server.mode updated remotely: code %d", r->cmd.code);
	client_reply_free(r);
	r = NULL;
	HARNESS_CHECK(harness_call(p, REQ_UPDATE_NAMESRV_CONFIG, "tls.server.certPath=/x\n", &r, NULL) == 0 && r &&
			      r->cmd.code == 16,
		      "tls.server.certPath updated remotely");
	client_reply_free(r);
	client_close(p);
	return 0;
}

/* Runs the binary expecting it to refuse to start; 0 when it exits 1 with
 * `needle` in its stderr. */
static int expect_start_failure(const char *const *extra, const char *needle)
{
	char dir[256];
	if (harness_mkdtemp(dir, sizeof dir, "rmqns-tls-fail") < 0)
		return -1;
	char *errp = harness_path_in(dir, "stderr");
	const char *argv[20] = { RMQNS_BIN_PATH, "--listenPort=0", "--bindAddress=127.0.0.1" };
	size_t n = 3;
	for (size_t i = 0; extra[i] && n < 19; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	char home[300];
	snprintf(home, sizeof home, "HOME=%s", dir);
	char *envp[] = { home, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	pid_t pid;
	int st = -1, rc = posix_spawn(&pid, RMQNS_BIN_PATH, &fa, NULL, (char *const *)argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	if (rc == 0) {
		/* bounded: a server that does start is killed after the I/O bound */
		for (int i = 0; i < IO_MS / 10 && waitpid(pid, &st, WNOHANG) == 0; i++)
			usleep(10000);
		if (!WIFEXITED(st) && kill(pid, SIGKILL) == 0)
			waitpid(pid, &st, 0);
	}
	char *log = harness_slurp(errp);
	int ok = rc == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 1 && log && strstr(log, needle);
	if (!ok)
		fprintf(stderr, "expected exit 1 with '%s'; status %d, stderr:\n%s\n", needle, st,
			log ? log : "(none)");
	free(log);
	free(errp);
	harness_rmdir(dir);
	return ok ? 0 : -1;
}

static int test_bad_certificate_stops_start(struct harness_server *s)
{
	(void)s;
	char *c1 = cert("srv1.pem"), *k2 = cert("srv2.key"), *ek = cert("srv1-enc.key");
	char ca[400], ka[400], eka[400];
	snprintf(ca, sizeof ca, "--tls.server.certPath=%s", c1);
	snprintf(ka, sizeof ka, "--tls.server.keyPath=%s", k2);
	snprintf(eka, sizeof eka, "--tls.server.keyPath=%s", ek);
	const char *missing[] = { "--tls.server.mode=permissive", "--tls.server.certPath=/nonexistent/c.pem",
				  "--tls.server.keyPath=/nonexistent/k.pem", NULL };
	HARNESS_CHECK(expect_start_failure(missing, "cannot load tls.server.certPath /nonexistent/c.pem") == 0,
		      "missing certificate");
	const char *mismatch[] = { "--tls.server.mode=enforcing", ca, ka, NULL };
	HARNESS_CHECK(expect_start_failure(mismatch, "does not go with tls.server.certPath") == 0,
		      "key of another certificate");
	const char *nopass[] = { "--tls.server.mode=enforcing", ca, eka, NULL };
	HARNESS_CHECK(expect_start_failure(nopass, "cannot load tls.server.keyPath") == 0,
		      "encrypted key without its password");
	const char *none[] = { "--tls.server.mode=permissive", NULL };
	HARNESS_CHECK(expect_start_failure(none, "needs tls.server.certPath") == 0, "no certificate");
	const char *badmode[] = { "--tls.server.mode=sometimes", NULL };
	HARNESS_CHECK(expect_start_failure(badmode, "tls.server.mode") == 0, "unknown mode");
	FREE_ALL(c1, k2, ek);
	return 0;
}

/* tls.config.file: Java's tls.properties; its values win over the options. */
static int test_config_file_and_password(struct harness_server *s)
{
	char *props = cert("tls.properties"), *c1 = cert("srv1.pem"), *ek = cert("srv1-enc.key"),
	     *ca = cert("ca.pem");
	FILE *f = fopen(props, "w");
	HARNESS_CHECK(f, "write %s", props);
	fprintf(f,
		"# as Java's tls.properties\n"
		"tls.test.mode.enable=false\n"
		"tls.server.need.client.auth=none\n"
		"tls.server.keyPath=%s\n"
		"tls.server.keyPassword=s3cret\n"
		"tls.server.certPath=%s\n"
		"tls.server.authClient=false\n"
		"tls.server.trustCertPath=%s\n"
		"tls.client.keyPath=/ignored\n",
		ek, c1, ca);
	fclose(f);
	char file_arg[400];
	snprintf(file_arg, sizeof file_arg, "--tls.config.file=%s", props);
	const char *args[] = { "--tls.server.mode=enforcing", "--tls.server.certPath=/nonexistent/overridden.pem",
			       "--tls.server.keyPassword=not-this-one", file_arg, NULL };
	HARNESS_CHECK(harness_start(s, args) == 0, "boot with tls.config.file");
	struct tcli *t = tcli_connect(s->port, ca, NULL, NULL);
	HARNESS_CHECK(t, "TLS with the file's encrypted key");
	HARNESS_CHECK(tcli_peer_serial(t) == SERIAL_ONE, "the file's certificate");
	char *body = NULL;
	HARNESS_CHECK(tcli_call_body(t, REQ_GET_NAMESRV_CONFIG, NULL, &body, NULL) == 0, "config over TLS");
	HARNESS_CHECK(strstr(body, "tls.server.keyPassword=******\n") && !strstr(body, "not-this-one"),
		      "the key password is not shown: %s", body);
	free(body);
	tcli_close(t);
	FREE_ALL(props, c1, ek, ca);
	return 0;
}

/* Java's guide: server.key as PKCS#8 with PBE-SHA1-RC4-128. */
static int test_java_guide_key(struct harness_server *s)
{
	char *rc4 = cert("srv1-rc4.key"), *ca = cert("ca.pem");
	struct stat st;
	if (stat(rc4, &st) < 0 || st.st_size == 0) {
		fprintf(stderr, "skipped: no RC4-encrypted key could be made here\n");
		free(rc4);
		free(ca);
		return 0;
	}
	char key_arg[400];
	snprintf(key_arg, sizeof key_arg, "--tls.server.keyPath=%s", rc4);
	const char *more[] = { key_arg, "--tls.server.keyPassword=s3cret", NULL };
	HARNESS_CHECK(start_tls(s, "enforcing", more) == 0, "boot with an RC4-encrypted key");
	struct tcli *t = tcli_connect(s->port, ca, NULL, NULL);
	HARNESS_CHECK(t && tcli_call_body(t, REQ_GET_BROKER_CLUSTER_INFO, NULL, NULL, NULL) == 0, "answered");
	tcli_close(t);
	free(rc4);
	free(ca);
	return 0;
}

static int test_test_mode_certificate(struct harness_server *s)
{
	const char *args[] = { "--tls.server.mode=permissive", "--tls.test.mode.enable=true", NULL };
	HARNESS_CHECK(harness_start(s, args) == 0, "boot in test mode");
	struct tcli *t = tcli_connect(s->port, NULL, NULL, NULL);
	HARNESS_CHECK(t, "handshake with the generated certificate");
	X509 *x = SSL_get1_peer_certificate(t->ssl);
	char subject[256] = "";
	if (x)
		X509_NAME_oneline(X509_get_subject_name(x), subject, sizeof subject);
	X509_free(x);
	HARNESS_CHECK(strstr(subject, "CN=rmqns test"), "self-signed test certificate: %s", subject);
	HARNESS_CHECK(tcli_call_body(t, REQ_GET_BROKER_CLUSTER_INFO, NULL, NULL, NULL) == 0, "answered");
	tcli_close(t);
	return 0;
}

static int test_rotation(struct harness_server *s)
{
	char *live_c = cert("live.pem"), *live_k = cert("live.key"), *ca = cert("ca.pem");
	char *c1 = cert("srv1.pem"), *k1 = cert("srv1.key"), *c2 = cert("srv2.pem"), *k2 = cert("srv2.key");
	HARNESS_CHECK(copy_file(c1, live_c) == 0 && copy_file(k1, live_k) == 0, "live files");
	char ca_arg[400], ka_arg[400];
	snprintf(ca_arg, sizeof ca_arg, "--tls.server.certPath=%s", live_c);
	snprintf(ka_arg, sizeof ka_arg, "--tls.server.keyPath=%s", live_k);
	const char *args[] = { "--tls.server.mode=permissive", ca_arg, ka_arg, NULL };
	HARNESS_CHECK(harness_start(s, args) == 0, "boot");

	struct tcli *old = tcli_connect(s->port, ca, NULL, NULL);
	HARNESS_CHECK(old && tcli_peer_serial(old) == SERIAL_ONE, "first certificate");
	HARNESS_CHECK(tcli_call_body(old, REQ_GET_BROKER_CLUSTER_INFO, NULL, NULL, NULL) == 0, "answered before");

	/* key first, then certificate: in between the pair does not match,
	 * which must keep the first certificate in force */
	HARNESS_CHECK(copy_file(k2, live_k) == 0 && copy_file(c2, live_c) == 0, "rotate");
	HARNESS_CHECK(harness_wait_log(s, "serial 2002", 3 * IO_MS), "reload logged");
	struct tcli *fresh = tcli_connect(s->port, ca, NULL, NULL);
	HARNESS_CHECK(fresh, "handshake after the rotation");
	HARNESS_CHECK(tcli_peer_serial(fresh) == SERIAL_TWO, "new connection sees the new certificate: %ld",
		      tcli_peer_serial(fresh));
	for (int i = 0; i < 5; i++) {
		HARNESS_CHECK(tcli_call_body(old, REQ_GET_BROKER_CLUSTER_INFO, NULL, NULL, NULL) == 0,
			      "the connection opened before the rotation keeps working");
		HARNESS_CHECK(tcli_call_body(fresh, REQ_GET_BROKER_CLUSTER_INFO, NULL, NULL, NULL) == 0, "new one works");
	}
	HARNESS_CHECK(tcli_peer_serial(old) == SERIAL_ONE, "old connection's certificate");

	/* a certificate file that does not load keeps the one in force */
	FILE *f = fopen(live_c, "w");
	HARNESS_CHECK(f, "overwrite");
	fputs("-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n", f);
	fclose(f);
	HARNESS_CHECK(harness_wait_log(s, "do not load, keeping the certificate in force", 3 * IO_MS),
		      "bad file logged");
	struct tcli *third = tcli_connect(s->port, ca, NULL, NULL);
	HARNESS_CHECK(third && tcli_peer_serial(third) == SERIAL_TWO, "still the second certificate");
	HARNESS_CHECK(tcli_call_body(third, REQ_GET_BROKER_CLUSTER_INFO, NULL, NULL, NULL) == 0, "answered");
	tcli_close(third);
	tcli_close(fresh);
	tcli_close(old);
	FREE_ALL(live_c, live_k, ca, c1, k1, c2, k2);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

#define ROUTE_SAMPLES 300

/* Route latency of both transports, reported (never asserted on time). */
static int measure_routes(struct client *p, struct tcli *t, const char *when)
{
	static uint64_t lat[2][ROUTE_SAMPLES];
	for (int i = 0; i < ROUTE_SAMPLES; i++) {
		uint64_t t0 = now_us();
		HARNESS_CHECK(plain_route(p) == 0, "plaintext route %s", when);
		uint64_t t1 = now_us();
		HARNESS_CHECK(tcli_call_body(t, REQ_GET_ROUTEINFO_BY_TOPIC, NULL, NULL, "topic", "TlsTopic", NULL) == 0,
			      "TLS route %s", when);
		lat[0][i] = t1 - t0;
		lat[1][i] = now_us() - t1;
	}
	for (int k = 0; k < 2; k++) {
		qsort(lat[k], ROUTE_SAMPLES, sizeof lat[k][0], cmp_u64);
		fprintf(stderr, "route latency %s, %s: p50 %llu us, p99 %llu us, max %llu us (%d queries)\n",
			k ? "TLS" : "plaintext", when, (unsigned long long)lat[k][ROUTE_SAMPLES / 2],
			(unsigned long long)lat[k][ROUTE_SAMPLES * 99 / 100],
			(unsigned long long)lat[k][ROUTE_SAMPLES - 1], ROUTE_SAMPLES);
	}
	return 0;
}

/* The first bytes of a real ClientHello, made with a memory BIO. */
static size_t client_hello(uint8_t *out, size_t cap)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *ssl = ctx ? SSL_new(ctx) : NULL;
	BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
	size_t n = 0;
	if (ssl && rb && wb) {
		SSL_set_bio(ssl, rb, wb);
		rb = wb = NULL;
		(void)SSL_connect(ssl); /* wants to read: the hello is written */
		int k = BIO_read(SSL_get_wbio(ssl), out, (int)cap);
		n = k > 0 ? (size_t)k : 0;
	}
	BIO_free(rb);
	BIO_free(wb);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	ERR_clear_error();
	return n;
}

static bool peer_closed(int fd)
{
	uint8_t b[256];
	for (;;) {
		ssize_t n = recv(fd, b, sizeof b, 0); /* bounded by SO_RCVTIMEO */
		if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			return true;
		if (n < 0)
			return false;
	}
}

#define STALLED 8

static int test_stalls_do_not_delay_others(struct harness_server *s)
{
	char *ca = cert("ca.pem");
	/* one reactor: a handshake that blocked it would stall everyone */
	char http[32];
	int http_port = harness_free_port();
	snprintf(http, sizeof http, "--httpPort=%d", http_port);
	const char *more[] = { "--serverSelectorThreads=1", http, NULL };
	HARNESS_CHECK(start_tls(s, "permissive", more) == 0, "boot");
	struct client *p = harness_connect(s);
	HARNESS_CHECK(p && register_broker(p) == 0, "registration");
	struct tcli *t = tcli_connect(s->port, ca, NULL, NULL);
	HARNESS_CHECK(t, "TLS client");
	HARNESS_CHECK(measure_routes(p, t, "alone") == 0, "baseline");

	uint8_t hello[2048];
	size_t hl = client_hello(hello, sizeof hello);
	HARNESS_CHECK(hl > 40 && hello[0] == 0x16, "a ClientHello (%zu bytes)", hl);
	int stalled[STALLED], garbage[STALLED];
	for (int i = 0; i < STALLED; i++) {
		/* half a ClientHello, then nothing */
		stalled[i] = tcp_connect(s->port);
		HARNESS_CHECK(stalled[i] >= 0 && write(stalled[i], hello, hl / 2) == (ssize_t)(hl / 2), "stall");
		/* a handshake record of junk */
		static const uint8_t junk[] = { 0x16, 0x03, 0x01, 0x00, 0x10, 'n', 'o', 't', ' ', 'a', ' ', 'h',
						'e', 'l', 'l', 'o', '!', '!', '!', '!', '!' };
		garbage[i] = tcp_connect(s->port);
		HARNESS_CHECK(garbage[i] >= 0 && write(garbage[i], junk, sizeof junk) == (ssize_t)sizeof junk,
			      "garbage");
	}
	/* others are answered while the stalled handshakes wait */
	HARNESS_CHECK(measure_routes(p, t, "with 8 stalled handshakes and 8 garbage ones") == 0, "during");
	struct tcli *t2 = tcli_connect(s->port, ca, NULL, NULL);
	HARNESS_CHECK(t2 && tcli_call_body(t2, REQ_GET_BROKER_CLUSTER_INFO, NULL, NULL, NULL) == 0,
		      "a new TLS client is served meanwhile");
	struct client *p2 = harness_connect(s);
	HARNESS_CHECK(p2 && plain_call(p2, REQ_GET_BROKER_CLUSTER_INFO, NULL) == 0,
		      "a new plaintext client is served meanwhile");
	for (int i = 0; i < STALLED; i++) {
		HARNESS_CHECK(peer_closed(garbage[i]), "a junk handshake is closed");
		close(garbage[i]);
	}
	HARNESS_CHECK(metric(http_port, "rmqns_tls_handshakes_total{result=\"failed\"}") == STALLED,
		      "junk handshakes counted as failed");
	/* the stalled ones are still waiting (not closed, not answered) */
	for (int i = 0; i < STALLED; i++) {
		struct pollfd pf = { .fd = stalled[i], .events = POLLIN };
		HARNESS_CHECK(poll(&pf, 1, 0) == 0, "a stalled handshake was given up early");
		close(stalled[i]);
	}
	HARNESS_CHECK(harness_wait_log(s, "TLS handshake failed", IO_MS), "junk handshakes logged");
	tcli_close(t2);
	client_close(p2);
	tcli_close(t);
	client_close(p);
	free(ca);
	return 0;
}

#define PIPE_DEPTH 64
#define PIPE_ROUNDS 1000

/* Sends depth route queries in one write, reads their answers; over TLS
 * when t is given, else on fd. Returns the answers that had code 0. */
static int pipelined_round(struct tcli *t, int fd, const struct buf *batch, int depth)
{
	if (t ? SSL_write(t->ssl, batch->data, (int)batch->len) != (int)batch->len
	      : write(fd, batch->data, batch->len) != (ssize_t)batch->len)
		return -1;
	static uint8_t in[1 << 18];
	size_t have = 0, pos = 0;
	int ok = 0, seen = 0;
	while (seen < depth) {
		size_t size;
		int rc = remoting_frame_cut(in + pos, have - pos, 0, &size);
		if (rc == 0) {
			struct remoting_cmd rsp;
			if (remoting_decode(in + pos, size, &rsp) == 0) {
				ok += rsp.code == 0;
				remoting_cmd_release(&rsp);
			}
			pos += size;
			seen++;
			continue;
		}
		if (rc != RMQNS_EAGAIN)
			return -1;
		memmove(in, in + pos, have - pos); /* bulk reads, as a client library does */
		have -= pos;
		pos = 0;
		if (have == sizeof in)
			return -1;
		ssize_t n = t ? SSL_read(t->ssl, in + have, (int)(sizeof in - have))
			      : recv(fd, in + have, sizeof in - have, 0);
		if (n <= 0)
			return -1;
		have += (size_t)n;
	}
	return ok;
}

/* The server's write system calls so far (0 when /proc does not say). */
static unsigned long long server_writes(const struct harness_server *s)
{
	char path[64], line[128];
	unsigned long long n = 0;
	snprintf(path, sizeof path, "/proc/%d/io", (int)s->pid);
	FILE *f = fopen(path, "r");
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "syscw: %llu", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

/* Pipelined route queries over both transports; with routeQueryInline
 * off the answers come from the pool one by one, which the reactor
 * gathers into records. Throughput is reported, the answers checked. */
static int test_pipelined(struct harness_server *s)
{
	char *ca = cert("ca.pem");
	const char *more[] = { "--serverSelectorThreads=1", "--routeQueryInline=false", NULL };
	HARNESS_CHECK(start_tls(s, "permissive", more) == 0, "boot");
	struct client *p = harness_connect(s);
	HARNESS_CHECK(p && register_broker(p) == 0, "registration");
	struct tcli *t = tcli_connect(s->port, ca, NULL, NULL);
	HARNESS_CHECK(t, "TLS client");
	int fd = tcp_connect(s->port);
	HARNESS_CHECK(fd >= 0, "plaintext socket");

	struct remoting_ext_field ext[] = { { "topic", "TlsTopic" } };
	struct remoting_cmd req;
	struct buf batch = BUF_INIT;
	harness_request_init(&req, REQ_GET_ROUTEINFO_BY_TOPIC, REMOTING_JSON);
	req.ext = ext;
	req.ext_count = 1;
	for (int i = 0; i < PIPE_DEPTH; i++)
		harness_encode(&req, &batch);
	for (int run = 0; run < 4; run++) { /* alternated: a busy machine weighs on both */
		int k = run % 2;
		unsigned long long w0 = server_writes(s);
		uint64_t t0 = now_us();
		for (int round = 0; round < PIPE_ROUNDS; round++)
			HARNESS_CHECK(pipelined_round(k ? t : NULL, fd, &batch, PIPE_DEPTH) == PIPE_DEPTH,
				      "%d pipelined route answers over %s", PIPE_DEPTH, k ? "TLS" : "plaintext");
		uint64_t us = now_us() - t0;
		unsigned long long writes = server_writes(s) - w0;
		fprintf(stderr, "pipelined route queries (%d deep, pool answers) over %s: %.0f/s (%d in %.1f ms), "
				"%.2f server writes per %d answers\n",
			PIPE_DEPTH, k ? "TLS" : "plaintext", PIPE_DEPTH * PIPE_ROUNDS * 1e6 / (double)us,
			PIPE_DEPTH * PIPE_ROUNDS, us / 1000.0, (double)writes / PIPE_ROUNDS, PIPE_DEPTH);
	}
	buf_free(&batch);
	close(fd);
	tcli_close(t);
	client_close(p);
	free(ca);
	return 0;
}

static int client_auth_case(int port, const char *ca, const char *c, const char *k)
{
	struct tcli *t = tcli_connect(port, ca, c, k);
	/* TLS 1.3 finishes the client's side before the server has checked
	 * its certificate: a refusal shows on the first request */
	int rc = t ? tcli_call_body(t, REQ_GET_BROKER_CLUSTER_INFO, NULL, NULL, NULL) : -1;
	tcli_close(t);
	return rc;
}

static int test_client_auth(struct harness_server *s, const char *mode)
{
	char *ca = cert("ca.pem"), *c1 = cert("cli1.pem"), *k1 = cert("cli1.key"), *c2 = cert("cli2.pem"),
	     *k2 = cert("cli2.key");
	char auth[64], trust[400];
	snprintf(auth, sizeof auth, "--tls.server.need.client.auth=%s", mode);
	snprintf(trust, sizeof trust, "--tls.server.trustCertPath=%s", ca);
	const char *more[] = { auth, trust, NULL };
	HARNESS_CHECK(start_tls(s, "enforcing", more) == 0, "boot");
	bool require = strcmp(mode, "require") == 0;

	int rc = client_auth_case(s->port, ca, NULL, NULL);
	HARNESS_CHECK(require ? rc < 0 : rc == 0, "no client certificate (%s): %d", mode, rc);
	HARNESS_CHECK(client_auth_case(s->port, ca, c1, k1) == 0, "certificate of the trusted CA (%s)", mode);
	HARNESS_CHECK(client_auth_case(s->port, ca, c2, k2) < 0, "certificate of another CA (%s)", mode);
	HARNESS_CHECK(harness_wait_log(s, "TLS handshake failed", IO_MS), "refusal logged");
	FREE_ALL(ca, c1, k1, c2, k2);
	return 0;
}

static int test_client_auth_require(struct harness_server *s)
{
	return test_client_auth(s, "require");
}

static int test_client_auth_optional(struct harness_server *s)
{
	return test_client_auth(s, "optional");
}

static const struct harness_test tests[] = {
	{ "permissive_mixed", test_permissive_mixed },
	{ "enforcing_refuses_plaintext", test_enforcing_refuses_plaintext },
	{ "disabled_unchanged", test_disabled_unchanged },
	{ "bad_certificate_stops_start", test_bad_certificate_stops_start },
	{ "config_file_and_password", test_config_file_and_password },
	{ "java_guide_key", test_java_guide_key },
	{ "test_mode_certificate", test_test_mode_certificate },
	{ "rotation", test_rotation },
	{ "stalls_do_not_delay_others", test_stalls_do_not_delay_others },
	{ "pipelined", test_pipelined },
	{ "client_auth_require", test_client_auth_require },
	{ "client_auth_optional", test_client_auth_optional },
};

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (harness_mkdtemp(certs, sizeof certs, "rmqns-tls-certs") < 0 || make_certs() < 0)
		return 1;
	int rc = harness_main(tests, sizeof tests / sizeof tests[0], argc, argv);
	harness_rmdir(certs);
	return rc;
}
