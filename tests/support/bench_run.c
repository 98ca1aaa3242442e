/* Process and result functions shared by the rmqns-bench integration tests. */
#include "bench_run.h"
#include "fork_tied.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

static long long ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Forks argv with stdout on a pipe (*out_fd) and stderr on err_fd (-1: inherited). */
static pid_t spawn(char *const argv[], int *out_fd, int err_fd)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0)
		return -1;
	pid_t pid = fork_tied();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(p[1], STDOUT_FILENO);
		if (err_fd >= 0)
			dup2(err_fd, STDERR_FILENO);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	*out_fd = p[0];
	return pid;
}

static int run_capture(char *const argv[], int timeout_ms, char **out, int err_fd)
{
	int fd;
	pid_t pid = spawn(argv, &fd, err_fd);
	if (pid < 0)
		return -1;
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap);
	long long deadline = ms_now() + timeout_ms;
	bool killed = false;
	for (;;) {
		long long left = deadline - ms_now();
		if (left <= 0 && !killed) {
			kill(pid, SIGKILL);
			killed = true;
		}
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		int n = poll(&pf, 1, left > 0 ? (int)left : 100);
		if (n <= 0)
			continue;
		if (len + 4096 > cap) {
			cap *= 2;
			buf = realloc(buf, cap);
		}
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	buf[len] = '\0';
	int st;
	waitpid(pid, &st, 0);
	if (out)
		*out = buf;
	else
		free(buf);
	return killed ? -1 : st;
}

int bench_run_capture(char *const argv[], int timeout_ms, char **out)
{
	return run_capture(argv, timeout_ms, out, -1);
}

pid_t bench_start_floor(const char *floor_bin, int threads, int *port)
{
	char th[16];
	snprintf(th, sizeof(th), "%d", threads);
	char *argv[] = { (char *)floor_bin, "--port", "0", "--threads", th, "--duration", "120", NULL };
	int fd;
	pid_t pid = spawn(argv, &fd, -1);
	if (pid < 0)
		return -1;
	char line[256];
	size_t len = 0;
	long long deadline = ms_now() + 30000; /* the boot line, on a loaded host */
	while (len < sizeof(line) - 1 && ms_now() < deadline) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		if (poll(&pf, 1, 100) <= 0)
			continue;
		ssize_t r = read(fd, line + len, 1);
		if (r <= 0 || line[len] == '\n')
			break;
		len++;
	}
	line[len] = '\0';
	close(fd);
	const char *p = strstr(line, "127.0.0.1:");
	if (!p || sscanf(p, "127.0.0.1:%d", port) != 1) {
		bench_stop_pid(pid, 1000);
		return -1;
	}
	return pid;
}

int bench_stop_pid(pid_t pid, int timeout_ms)
{
	int st;
	kill(pid, SIGTERM);
	long long deadline = ms_now() + timeout_ms;
	while (ms_now() < deadline) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return st;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return st;
}

/* "name: ok N, errors M, codes {...}, transport {...}; " for every role
 * of a run's JSON that had an error or no answer (either fails a run):
 * the short reason of a failed run. */
static void bench_roles_with_errors(json_t *doc, char *out, size_t cap)
{
	size_t n = 0;
	out[0] = '\0';
	const char *key;
	json_t *r;
	json_object_foreach(json_object_get(doc, "roles"), key, r) {
		if (json_integer_value(json_object_get(r, "errors")) == 0 &&
		    json_integer_value(json_object_get(r, "ok")) > 0)
			continue;
		char *codes = json_dumps(json_object_get(r, "errors_by_code"), JSON_COMPACT);
		char *tr = json_dumps(json_object_get(r, "transport_errors"), JSON_COMPACT);
		int w = snprintf(out + n, cap - n, "%s: ok %lld, errors %lld, codes %s, transport %s; ",
				 key, (long long)json_integer_value(json_object_get(r, "ok")),
				 (long long)json_integer_value(json_object_get(r, "errors")),
				 codes ? codes : "?", tr ? tr : "?");
		free(codes);
		free(tr);
		if (w < 0 || (size_t)w >= cap - n)
			break;
		n += (size_t)w;
	}
	if (n == 0)
		snprintf(out, cap, "none (the run failed otherwise)");
}

json_t *bench_run_json(const char *bench_bin, int port, const char *const *args)
{
	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	char *argv[64];
	int n = 0;
	argv[n++] = (char *)bench_bin;
	for (; *args && n < 56; args++)
		argv[n++] = (char *)*args;
	argv[n++] = "-a";
	argv[n++] = addr;
	argv[n++] = "--json";
	argv[n++] = "--quiet";
	argv[n] = NULL;
	char *out = NULL;
	/* the tool's stderr, to say why in a failure message */
	FILE *errf = tmpfile();
	cr_assert_not_null(errf);
	int st = run_capture(argv, 120000, &out, fileno(errf));
	char errtext[2048] = "";
	rewind(errf);
	size_t en = fread(errtext, 1, sizeof(errtext) - 1, errf);
	errtext[en] = '\0';
	fclose(errf);
	cr_assert(st >= 0 && WIFEXITED(st), "%s %s did not finish: %s", argv[0], argv[1], errtext);
	json_error_t err;
	json_t *doc = json_loads(out, 0, &err);
	cr_assert_not_null(doc, "%s: output is not JSON (%s): %.300s\nstderr: %s", argv[1], err.text,
			   out, errtext);
	if (WEXITSTATUS(st) != 0) {
		char roles[2048];
		bench_roles_with_errors(doc, roles, sizeof(roles));
		cr_assert_fail("%s exited %d; roles with errors or no answer: %s\nstderr: %s\n%.1500s", argv[1],
			       WEXITSTATUS(st), roles, errtext, out);
	}
	free(out);
	return doc;
}

void bench_assert_clean(json_t *doc, const char *what)
{
	json_t *roles = json_object_get(doc, "roles");
	cr_assert(json_object_size(roles) > 0, "%s: no roles", what);
	const char *key;
	json_t *r;
	json_object_foreach(roles, key, r) {
		cr_assert_eq(json_integer_value(json_object_get(r, "errors")), 0, "%s/%s: errors", what, key);
		cr_assert_gt(json_integer_value(json_object_get(r, "ok")), 0, "%s/%s: no answers", what, key);
		cr_assert_gt(json_number_value(json_object_get(r, "throughput_rps")), 0.0,
			     "%s/%s: no throughput", what, key);
		json_t *tr = json_object_get(r, "transport_errors");
		const char *k;
		json_t *v;
		json_object_foreach(tr, k, v)
			cr_assert_eq(json_integer_value(v), 0, "%s/%s: %s errors", what, key, k);
		cr_assert_eq(json_object_size(json_object_get(r, "errors_by_code")), 0,
			     "%s/%s: error codes", what, key);
		json_t *lat = json_object_get(r, "latency_us");
		cr_assert_gt(json_number_value(json_object_get(lat, "max")), 0.0);
		cr_assert_leq(json_number_value(json_object_get(lat, "p50")),
			      json_number_value(json_object_get(lat, "p99")));
	}
}
