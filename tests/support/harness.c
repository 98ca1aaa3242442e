/* The integration-test harness (harness.h): spawns the real binary in a
 * temporary directory, learns its port from the boot line, stops it by
 * signal, and makes sure no server outlives the test process. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fork_tied.h"
#include "harness.h"
#include "rmqns/buf.h"
#include "rmqns/err.h"

#ifndef RMQNS_BIN
#error "RMQNS_BIN must name the rmqns binary"
#endif

/* the NameServer's boot line and the standalone controller's */
#define HARNESS_BOOT_PREFIX " boot success. serializeType="
#define HARNESS_MAX_LIVE 32

extern char **environ;

/* Servers to kill if the test process ends with them still running. */
static pid_t harness_live[HARNESS_MAX_LIVE];
static bool harness_atexit_done;

static void harness_kill_all(void)
{
	for (int i = 0; i < HARNESS_MAX_LIVE; i++) {
		if (harness_live[i] > 0) {
			kill(harness_live[i], SIGKILL);
			waitpid(harness_live[i], NULL, 0);
			harness_live[i] = 0;
		}
	}
}

static void harness_track(pid_t pid)
{
	if (!harness_atexit_done) {
		atexit(harness_kill_all);
		harness_atexit_done = true;
	}
	for (int i = 0; i < HARNESS_MAX_LIVE; i++) {
		if (harness_live[i] == 0) {
			harness_live[i] = pid;
			return;
		}
	}
}

static void harness_untrack(pid_t pid)
{
	for (int i = 0; i < HARNESS_MAX_LIVE; i++)
		if (harness_live[i] == pid)
			harness_live[i] = 0;
}

int64_t harness_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void harness_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

char *harness_slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096, len = 0;
	char *text = malloc(cap);
	while (text) {
		if (len + 1 >= cap) {
			char *bigger = realloc(text, cap * 2);
			if (!bigger) {
				free(text);
				text = NULL;
				break;
			}
			text = bigger;
			cap *= 2;
		}
		size_t n = fread(text + len, 1, cap - len - 1, f);
		if (n == 0)
			break;
		len += n;
	}
	fclose(f);
	if (text)
		text[len] = '\0';
	return text;
}

static const char *harness_binary(void)
{
	const char *env = getenv("RMQNS_TEST_BIN");
	return env && *env ? env : RMQNS_BIN;
}

/* The environment for the child, built before fork: after fork only
 * async-signal-safe calls are allowed (the test may have threads). */
static char **harness_child_env(const char *dir)
{
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 3, sizeof *env);
	if (!env)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "HOME=", 5) != 0 && strncmp(environ[i], "ROCKETMQ_HOME=", 14) != 0)
			env[k++] = environ[i];
	if (asprintf(&env[k++], "HOME=%s", dir) < 0 ||
	    asprintf(&env[k++], "ROCKETMQ_HOME=%s", dir) < 0) {
		free(env);
		return NULL;
	}
	return env;
}

static void harness_free_env(char **env)
{
	size_t n = 0;
	while (env[n])
		n++;
	/* The last two entries are ours. */
	free(env[n - 1]);
	free(env[n - 2]);
	free(env);
}

/* Forks and execs the binary with argv, stdout/stderr into the files. */
static pid_t harness_spawn(const char *dir, char *const *argv, const char *out_path,
			   const char *log_path)
{
	char **env = harness_child_env(dir);
	if (!env)
		return -1;
	int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int err = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0 || err < 0) {
		perror("harness: output files");
		if (out >= 0)
			close(out);
		if (err >= 0)
			close(err);
		harness_free_env(env);
		return -1;
	}
	pid_t pid = fork_tied();
	if (pid == 0) {
		if (chdir(dir) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
			_exit(127);
		execve(argv[0], argv, env);
		_exit(127);
	}
	close(out);
	close(err);
	harness_free_env(env);
	if (pid < 0)
		perror("harness: fork");
	else
		harness_track(pid);
	return pid;
}

/* Whether port can be bound on 127.0.0.1 now. */
static bool harness_port_bindable(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0;

	if (fd >= 0)
		close(fd);
	return ok;
}

/* Claims port for this process until it exits: an flock on
 * $TMPDIR/rmqns-test-ports/PORT, which no other test process (nor another
 * claim in this one) gets while it is held. A free port is only free until
 * someone binds it; tests running side by side pick theirs at the same
 * time and bind them later, and without the claim two could pick one. */
static bool harness_port_claim(int port)
{
	const char *tmp = getenv("TMPDIR");
	char path[512];

	snprintf(path, sizeof path, "%s/rmqns-test-ports", tmp && *tmp ? tmp : "/tmp");
	if (mkdir(path, 01777) != 0 && errno != EEXIST)
		return false;
	snprintf(path + strlen(path), sizeof path - strlen(path), "/%d", port);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0)
		return false;
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		close(fd);
		return false;
	}
	return true; /* fd stays open: the claim lasts as long as the process */
}

/* Ports below the kernel's ephemeral range (32768 and up by default), so
 * no server's --listenPort=0 and no outbound connection (the peers' Raft
 * dials included) can hold one when its owner starts or restarts on it. */
#define HARNESS_PORT_LO 10000
#define HARNESS_PORT_HI 32767

int harness_free_port_pair(int offset)
{
	static unsigned seed;
	const int lo = HARNESS_PORT_LO, hi = HARNESS_PORT_HI - offset;

	if (!seed)
		seed = (unsigned)getpid() ^ (unsigned)harness_now_ms();
	for (int tries = 0; tries < 500 && hi > lo; tries++) {
		int p = lo + (int)(rand_r(&seed) % (unsigned)(hi - lo));
		if (harness_port_bindable(p) && (offset == 0 || harness_port_bindable(p + offset)) &&
		    harness_port_claim(p) && (offset == 0 || harness_port_claim(p + offset)))
			return p; /* a half-made claim (p without p + offset) is only a lost port */
	}
	return -1;
}

int harness_free_port(void)
{
	return harness_free_port_pair(0);
}

int harness_solo_controller(struct harness_solo_controller *c, const char *const *extra)
{
	size_t n = 0;

	c->port = harness_free_port_pair(1000);
	if (c->port < 0)
		return -1;
	snprintf(c->peers, sizeof c->peers, "--controllerDLegerPeers=n0-127.0.0.1:%d", c->port);
	c->args[n++] = "--enableControllerInNamesrv=true";
	c->args[n++] = c->peers;
	c->args[n++] = "--controllerDLegerSelfId=n0";
	for (; extra && *extra; extra++) {
		if (n == HARNESS_SOLO_CONTROLLER_MAX_ARGS)
			return -1;
		c->args[n++] = *extra;
	}
	c->args[n] = NULL;
	return 0;
}

double harness_metric(int http_port, const char *sample)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)http_port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct buf b = BUF_INIT;
	char chunk[8192], *needle = NULL;
	double v = -1;
	ssize_t n;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
	    write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1))
		while ((n = recv(fd, chunk, sizeof chunk, 0)) > 0)
			if (buf_append(&b, chunk, (size_t)n))
				break;
	close(fd);
	if (buf_terminate(&b) == 0 && asprintf(&needle, "\n%s ", sample) > 0) {
		const char *at = strstr((const char *)b.data, needle);
		if (at)
			v = strtod(at + strlen(needle), NULL);
	}
	free(needle);
	buf_free(&b);
	return v;
}

int harness_mkdtemp(char *dir, size_t n, const char *prefix)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, n, "%s/%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", prefix);
	if (!mkdtemp(dir)) {
		perror("harness: mkdtemp");
		return -1;
	}
	return 0;
}

static void harness_dump_log(const char *path)
{
	char *log = harness_slurp(path);
	fprintf(stderr, "---- server log (%s) ----\n%s\n---- end of log ----\n", path,
		log ? log : "(unreadable)");
	free(log);
}

/* Parses "... address HOST:PORT" from the boot line; 0 if not there yet. */
static int harness_boot_port(const char *out)
{
	const char *line = strstr(out, HARNESS_BOOT_PREFIX);
	if (!line)
		return 0;
	const char *eol = strchr(line, '\n');
	if (!eol)
		return 0; /* line not complete yet */
	const char *colon = NULL;
	for (const char *p = line; p < eol; p++)
		if (*p == ':')
			colon = p;
	return colon ? atoi(colon + 1) : -1;
}

/* $RMQNS_SERVER_WRAPPER: words put before the binary (e.g. "valgrind
 * --error-exitcode=99 --leak-check=full"), the first one looked up in
 * PATH. Waits for boot and exit are then HARNESS_WRAPPER_SLOWDOWN times
 * longer. Returns the number of words stored in argv (at most max). */
#define HARNESS_WRAPPER_SLOWDOWN 10
static char harness_wrapper_buf[1024];
static char harness_wrapper_path[1024];

static int harness_wrapper(char **argv, int max)
{
	const char *w = getenv("RMQNS_SERVER_WRAPPER");
	int n = 0;

	if (!w || !*w)
		return 0;
	snprintf(harness_wrapper_buf, sizeof harness_wrapper_buf, "%s", w);
	for (char *save = NULL, *t = strtok_r(harness_wrapper_buf, " ", &save); t && n < max;
	     t = strtok_r(NULL, " ", &save))
		argv[n++] = t;
	if (n > 0 && !strchr(argv[0], '/')) {
		const char *path = getenv("PATH");
		char dirs[4096];
		snprintf(dirs, sizeof dirs, "%s", path ? path : "/usr/bin:/bin");
		for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
			snprintf(harness_wrapper_path, sizeof harness_wrapper_path, "%s/%s", d, argv[0]);
			if (access(harness_wrapper_path, X_OK) == 0) {
				argv[0] = harness_wrapper_path;
				break;
			}
		}
	}
	return n;
}

static int harness_slowdown(void)
{
	const char *w = getenv("RMQNS_SERVER_WRAPPER");
	return w && *w ? HARNESS_WRAPPER_SLOWDOWN : 1;
}

int harness_start(struct harness_server *s, const char *const *args)
{
	memset(s, 0, sizeof *s);
	if (harness_mkdtemp(s->dir, sizeof s->dir, "rmqns-test") < 0)
		return -1;
	snprintf(s->out_path, sizeof s->out_path, "%s/stdout.txt", s->dir);
	snprintf(s->log_path, sizeof s->log_path, "%s/rmqns.log", s->dir);

	char *argv[80];
	int argc = harness_wrapper(argv, 16);
	argv[argc++] = (char *)harness_binary();
	argv[argc++] = "--listenPort=0";
	argv[argc++] = "--bindAddress=127.0.0.1";
	for (int i = 0; args && args[i] && argc < 79; i++)
		argv[argc++] = (char *)args[i];
	argv[argc] = NULL;

	s->pid = harness_spawn(s->dir, argv, s->out_path, s->log_path);
	if (s->pid < 0) {
		s->pid = 0;
		return -1;
	}
	int64_t deadline = harness_now_ms() + (int64_t)HARNESS_BOOT_TIMEOUT_MS * harness_slowdown();
	for (;;) {
		char *out = harness_slurp(s->out_path);
		int port = out ? harness_boot_port(out) : 0;
		free(out);
		if (port > 0) {
			s->port = port;
			return 0;
		}
		int status;
		if (port < 0 || waitpid(s->pid, &status, WNOHANG) == s->pid ||
		    harness_now_ms() > deadline) {
			fprintf(stderr, "harness: %s did not boot (%s)\n", argv[0],
				port < 0 ? "unreadable boot line" : "exited or timed out");
			harness_dump_log(s->log_path);
			kill(s->pid, SIGKILL);
			waitpid(s->pid, NULL, 0);
			harness_untrack(s->pid);
			s->pid = 0;
			return -1;
		}
		harness_sleep_ms(10);
	}
}

static int harness_wait_exit(pid_t pid, int timeout_ms, int *status)
{
	int64_t deadline = harness_now_ms() + timeout_ms;
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -1;
		if (harness_now_ms() > deadline)
			return -1;
		harness_sleep_ms(5);
	}
}

bool harness_log_has_sanitizer_report(const struct harness_server *s)
{
	static const char *const markers[] = {
		"ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "WARNING: ThreadSanitizer",
		"runtime error:", "ERROR: ThreadSanitizer",
	};
	char *log = harness_read_log(s);
	bool found = false;
	for (size_t i = 0; log && i < sizeof markers / sizeof markers[0]; i++)
		found = found || strstr(log, markers[i]) != NULL;
	free(log);
	if (found) {
		fprintf(stderr, "harness: sanitizer report in the server log\n");
		harness_dump_log(s->log_path);
	}
	return found;
}

int harness_stop(struct harness_server *s, int sig, int timeout_ms, int *elapsed_ms)
{
	if (s->pid <= 0)
		return -1;
	int status = 0;
	int64_t t0 = harness_now_ms();
	kill(s->pid, sig);
	int rc = harness_wait_exit(s->pid, timeout_ms * harness_slowdown(), &status);
	if (elapsed_ms)
		*elapsed_ms = (int)(harness_now_ms() - t0);
	if (rc < 0) {
		fprintf(stderr, "harness: server did not exit within %d ms of signal %d; killing it\n",
			timeout_ms, sig);
		harness_dump_log(s->log_path);
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
		status = -1;
	}
	harness_untrack(s->pid);
	s->pid = 0;
	if (harness_log_has_sanitizer_report(s))
		status = -1;
	return status;
}

static int harness_rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void harness_rmdir(const char *dir)
{
	if (!dir[0])
		return;
	if (getenv("RMQNS_KEEP_TEST_DIR")) {
		fprintf(stderr, "harness: keeping %s\n", dir);
		return;
	}
	nftw(dir, harness_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int harness_cleanup(struct harness_server *s)
{
	int rc = 0;
	if (s->pid > 0) {
		int st = harness_stop(s, SIGTERM, 5000, NULL);
		if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "harness: unclean stop (status %#x)\n", st);
			rc = -1;
		}
	} else if (s->dir[0] && harness_log_has_sanitizer_report(s)) {
		rc = -1;
	}
	harness_rmdir(s->dir);
	s->dir[0] = '\0';
	return rc;
}

int harness_run(const char *const *args, int timeout_ms, char **out)
{
	return harness_run_logged(args, timeout_ms, out, NULL);
}

int harness_run_logged(const char *const *args, int timeout_ms, char **out, char **log)
{
	char dir[256], out_path[300], log_path[300];
	if (out)
		*out = NULL;
	if (log)
		*log = NULL;
	if (harness_mkdtemp(dir, sizeof dir, "rmqns-test") < 0)
		return -1;
	snprintf(out_path, sizeof out_path, "%s/stdout.txt", dir);
	snprintf(log_path, sizeof log_path, "%s/rmqns.log", dir);

	char *argv[80];
	int argc = harness_wrapper(argv, 16);
	argv[argc++] = (char *)harness_binary();
	for (int i = 0; args && args[i] && argc < 79; i++)
		argv[argc++] = (char *)args[i];
	argv[argc] = NULL;

	int status = -1;
	pid_t pid = harness_spawn(dir, argv, out_path, log_path);
	if (pid > 0) {
		if (harness_wait_exit(pid, timeout_ms, &status) < 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			status = -1;
		}
		harness_untrack(pid);
		if (out)
			*out = harness_slurp(out_path);
		if (log)
			*log = harness_slurp(log_path);
	}
	harness_rmdir(dir);
	return status;
}

char *harness_path_in(const char *dir, const char *name)
{
	char *p = NULL;

	return asprintf(&p, "%s/%s", dir, name) < 0 ? NULL : p;
}

char *harness_read_log(const struct harness_server *s)
{
	return harness_slurp(s->log_path);
}

bool harness_wait_log(const struct harness_server *s, const char *needle, int timeout_ms)
{
	return harness_wait_file(s->log_path, needle, timeout_ms);
}

bool harness_wait_file(const char *path, const char *needle, int timeout_ms)
{
	int64_t deadline = harness_now_ms() + timeout_ms;
	for (;;) {
		char *log = harness_slurp(path);
		bool found = log && strstr(log, needle);
		free(log);
		if (found)
			return true;
		if (harness_now_ms() > deadline)
			return false;
		harness_sleep_ms(10);
	}
}

/* Prints the sockets on a port whose connect timed out: a listener's full
 * accept queue (Recv-Q) tells a server that stopped accepting from a SYN the
 * kernel dropped. */
static void harness_show_port(int port, int err)
{
	char cmd[160];

	fprintf(stderr, "harness: cannot connect to 127.0.0.1:%d: %s; the sockets on that port:\n", port,
		rmqns_strerror(err));
	snprintf(cmd, sizeof cmd, "ss -tanoe '( sport = :%d or dport = :%d )' >&2", port, port);
	if (system(cmd) != 0)
		fprintf(stderr, "harness: (ss did not run)\n");
}

/* A connect that times out is tried once more: on a loaded host a dropped
 * SYN is resent after 1, 3 and 7 s, and the tests judge what the server
 * answers, not how fast the kernel hands it a connection. */
static struct client *harness_connect_opts(const struct harness_server *s, int rcvbuf)
{
	int err = RMQNS_OK;

	for (int attempt = 0; attempt < 2; attempt++) {
		struct client *c = client_connect_rcvbuf("127.0.0.1", s->port, HARNESS_IO_TIMEOUT_MS,
							 rcvbuf, &err);
		if (c) {
			if (attempt > 0)
				fprintf(stderr, "harness: connected to 127.0.0.1:%d at the second attempt\n",
					s->port);
			return c;
		}
		harness_show_port(s->port, err);
		if (err != RMQNS_EAGAIN)
			break;
	}
	return NULL;
}

struct client *harness_connect(const struct harness_server *s)
{
	return harness_connect_opts(s, 0);
}

struct client *harness_connect_rcvbuf(const struct harness_server *s, int rcvbuf)
{
	return harness_connect_opts(s, rcvbuf);
}

void harness_client_peer(const struct client *c, char *out, size_t n)
{
	struct sockaddr_in a;
	socklen_t len = sizeof a;
	char ip[INET_ADDRSTRLEN] = "?";
	if (getsockname(client_fd(c), (struct sockaddr *)&a, &len) < 0 || a.sin_family != AF_INET) {
		snprintf(out, n, "?");
		return;
	}
	inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
	snprintf(out, n, "%s:%u", ip, ntohs(a.sin_port));
}

void harness_request_init(struct remoting_cmd *cmd, int32_t code, enum remoting_serialize ser)
{
	remoting_request_init(cmd, code, 0, 0, ser);
}

int harness_request_va(struct remoting_cmd *req, struct remoting_ext_field *ext, int32_t code,
		       enum remoting_serialize ser, const char *body, va_list ap)
{
	uint32_t n = 0;

	harness_request_init(req, code, ser);
	for (const char *k; (k = va_arg(ap, const char *)) != NULL;) {
		const char *v = va_arg(ap, const char *);
		if (!v)
			continue;
		if (n == HARNESS_CALL_MAX_EXT)
			return RMQNS_ETOOBIG;
		ext[n].key = k;
		ext[n].value = v;
		n++;
	}
	harness_request_fields(req, ext, n, body);
	return 0;
}

void harness_request_fields(struct remoting_cmd *req, struct remoting_ext_field *ext, uint32_t n,
			    const char *body)
{
	req->ext = ext;
	req->ext_count = n;
	req->ext_present = n > 0;
	if (body) {
		req->body = (const uint8_t *)body;
		req->body_len = (uint32_t)strlen(body);
	}
}

int harness_request(struct remoting_cmd *req, struct remoting_ext_field *ext, int32_t code,
		    enum remoting_serialize ser, const char *body, ...)
{
	va_list ap;
	va_start(ap, body);
	int rc = harness_request_va(req, ext, code, ser, body, ap);
	va_end(ap);
	return rc;
}

int harness_call(struct client *c, int32_t code, const char *body, struct client_reply **out, ...)
{
	struct remoting_ext_field ext[HARNESS_CALL_MAX_EXT];
	struct remoting_cmd req;
	va_list ap;

	va_start(ap, out);
	int rc = harness_request_va(&req, ext, code, REMOTING_JSON, body, ap);
	va_end(ap);
	return rc ? rc : client_call(c, &req, out, HARNESS_IO_TIMEOUT_MS);
}

void harness_encode(const struct remoting_cmd *cmd, struct buf *out)
{
	if (remoting_encode(cmd, out) < 0) {
		fprintf(stderr, "harness: cannot encode a request\n");
		abort();
	}
}

int harness_http_get(int port, const char *path, char **out)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { HARNESS_IO_TIMEOUT_MS / 1000, 0 };
	struct buf b = BUF_INIT;
	char req[1024], chunk[8192];
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	*out = NULL;
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 || send(fd, req, (size_t)n, 0) != n) {
		close(fd);
		return -1;
	}
	for (;;) {
		ssize_t r = recv(fd, chunk, sizeof chunk, 0);
		if (r < 0 || buf_append(&b, chunk, r > 0 ? (size_t)r : 0) < 0) {
			close(fd);
			buf_free(&b);
			return -1;
		}
		if (r == 0)
			break;
	}
	close(fd);
	if (buf_terminate(&b) < 0 || b.len < 12 || strncmp((char *)b.data, "HTTP/1.1 ", 9) != 0) {
		buf_free(&b);
		return -1;
	}
	*out = (char *)b.data;
	return atoi(*out + 9);
}

long harness_status_kb(const struct harness_server *s, const char *field)
{
	char path[64], key[32];
	long kb = -1;
	snprintf(path, sizeof path, "/proc/%d/status", (int)s->pid);
	snprintf(key, sizeof key, "\n%s:", field);
	char *st = harness_slurp(path);
	const char *p = st ? strstr(st, key) : NULL;
	if (p)
		kb = strtol(p + strlen(key), NULL, 10);
	free(st);
	return kb;
}

void harness_topics_body(struct buf *out, const char *prefix, int n, int queues)
{
	buf_append_str(out, "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":"
			     "{\"counter\":1,\"stateVersion\":0,\"timestamp\":1},\"topicConfigTable\":{");
	for (int i = 0; i < n; i++)
		buf_printf(out, "%s\"%s%d\":{\"perm\":6,\"readQueueNums\":%d,\"topicName\":\"%s%d\","
				"\"writeQueueNums\":%d}",
			   i ? "," : "", prefix, i, queues, prefix, i, queues);
	buf_append_str(out, "}}}");
	buf_terminate(out);
}

void harness_check_failed(const char *file, int line, const char *expr, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s:%d: check failed: %s: ", file, line, expr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int harness_main(const struct harness_test *tests, size_t n, int argc, char **argv)
{
	const char *filter = argc > 1 ? argv[1] : NULL;
	int failed = 0, ran = 0;

	for (size_t i = 0; i < n; i++) {
		if (filter && !strstr(tests[i].name, filter))
			continue;
		struct harness_server s;
		memset(&s, 0, sizeof s);
		int64_t t0 = harness_now_ms();
		int rc = tests[i].fn(&s);
		if (harness_cleanup(&s) < 0) {
			fprintf(stderr, "%s: the server did not stop cleanly\n", tests[i].name);
			rc = -1;
		}
		fprintf(stderr, "[%s] %s (%lld ms)\n", rc == 0 ? "PASS" : "FAIL", tests[i].name,
			(long long)(harness_now_ms() - t0));
		failed += rc != 0;
		ran++;
	}
	fprintf(stderr, "%d tests, %d failed\n", ran, failed);
	return failed || ran == 0 ? 1 : 0;
}
