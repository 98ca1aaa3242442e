/* rmqns-bench and rmqns-floor with all their threads at once, as a plain
 * program (exit 0 = pass) so that it also runs in a ThreadSanitizer build,
 * where Criterion cannot start: two route engines, a registration storm
 * beside the route load with seeded brokers kept alive, and the floor's
 * hand-off of connections between its threads. The tool's exit status
 * says "answers and no error"; a sanitizer report makes it fail. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fork_tied.h"

static int failures;

static long long ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Forks argv; its stdout goes to *out_fd when asked, else to /dev/null. */
static pid_t spawn(char *const argv[], int *out_fd)
{
	int p[2] = { -1, -1 };
	if (out_fd && pipe2(p, O_CLOEXEC) != 0)
		return -1;
	pid_t pid = fork_tied();
	if (pid == 0) {
		int fd = out_fd ? p[1] : open("/dev/null", O_WRONLY);
		dup2(fd, STDOUT_FILENO);
		execv(argv[0], argv);
		_exit(127);
	}
	if (out_fd) {
		close(p[1]);
		*out_fd = p[0];
	}
	return pid;
}

static int wait_for(pid_t pid, int timeout_ms)
{
	long long deadline = ms_now() + timeout_ms;
	int st;
	while (ms_now() < deadline) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return st;
		usleep(20000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

static void run_bench(int port, const char *what, char *const args[])
{
	char addr[32];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	char *argv[32];
	int n = 0;
	argv[n++] = RMQNS_BENCH_BIN;
	for (; *args && n < 28; args++)
		argv[n++] = *args;
	argv[n++] = "-a";
	argv[n++] = addr;
	argv[n++] = "--quiet";
	argv[n] = NULL;
	pid_t pid = spawn(argv, NULL);
	int st = pid > 0 ? wait_for(pid, 120000) : -1;
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "FAIL %s: status %d\n", what, st < 0 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
		failures++;
	} else {
		fprintf(stderr, "ok   %s\n", what);
	}
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	char *fargv[] = { RMQNS_FLOOR_BIN, "--port", "0", "--threads", "2", "--duration", "120", NULL };
	int fd;
	pid_t floor = spawn(fargv, &fd);
	if (floor < 0)
		return 1;
	char line[256] = "";
	size_t len = 0;
	long long deadline = ms_now() + 20000;
	while (len + 1 < sizeof(line) && ms_now() < deadline) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		if (poll(&pf, 1, 100) <= 0)
			continue;
		if (read(fd, line + len, 1) != 1 || line[len] == '\n')
			break;
		len++;
	}
	line[len] = '\0';
	close(fd);
	int port = 0;
	const char *p = strstr(line, "127.0.0.1:");
	if (!p || sscanf(p, "127.0.0.1:%d", &port) != 1) {
		fprintf(stderr, "FAIL rmqns-floor did not start: '%s'\n", line);
		kill(floor, SIGKILL);
		waitpid(floor, NULL, 0);
		return 1;
	}
	char *route[] = { "route", "-d", "1s", "--threads", "2", "-c", "6", "-p", "4", NULL };
	run_bench(port, "route, two engine threads", route);
	char *open_loop[] = { "route", "-d", "1s", "--threads", "2", "-r", "2000", NULL };
	run_bench(port, "route, open loop, two engine threads", open_loop);
	char *mixed[] = { "mixed", "-d", "2s", "--storm-brokers", "2", "--storm-topics", "500",
			  "--keepalive", "300ms", NULL };
	run_bench(port, "mixed: route, storm and kept-alive seed threads", mixed);
	char *churn[] = { "churn", "-d", "1s", "-c", "4", NULL };
	run_bench(port, "churn beside kept-alive seed", churn);
	kill(floor, SIGTERM);
	int st = wait_for(floor, 10000);
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "FAIL rmqns-floor exit\n");
		failures++;
	}
	return failures ? 1 : 0;
}
