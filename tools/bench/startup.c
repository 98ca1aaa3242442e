/* exec -> first answer timing for rmqns-bench `startup`. */
#include "startup.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rmqns/buf.h"
#include "rmqns/err.h"
#include "rmqns/remoting.h"
#include "engine.h"
#include "procstat.h"
#include "reqs.h"

#define STARTUP_LIMIT_NS (10ull * 1000000000ull)

static void startup_sleep_us(long us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };
	nanosleep(&ts, NULL);
}

/* One probe: connect, ask 106, wait for the answer. 1 = answered code 0,
 * 0 = not yet (refused, closed, other code), negative = local failure. */
static int startup_probe(const struct bench_opts *o, const struct sockaddr_storage *addr,
			 socklen_t addr_len)
{
	int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return RMQNS_EIO;
	int result = 0;
	struct buf req = BUF_INIT, in = BUF_INIT;
	if (connect(fd, (const struct sockaddr *)addr, addr_len) != 0) {
		if (errno != EINPROGRESS)
			goto out;
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		if (poll(&p, 1, 100) <= 0)
			goto out;
		int e = 0;
		socklen_t l = sizeof(e);
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l) != 0 || e != 0)
			goto out;
	}
	if (reqs_simple_append(REQ_GET_BROKER_CLUSTER_INFO, 1, o->version, o->serialize, &req)) {
		result = RMQNS_ENOMEM;
		goto out;
	}
	for (size_t off = 0; off < req.len;) {
		ssize_t n = send(fd, req.data + off, req.len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EAGAIN) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };
			if (poll(&p, 1, 1000) <= 0)
				goto out;
			continue;
		}
		if (n <= 0)
			goto out;
		off += (size_t)n;
	}
	uint64_t deadline = bench_now_ns() + 2000000000ull;
	for (;;) {
		size_t fs;
		int rc = remoting_frame_cut(in.data, in.len, REMOTING_DEFAULT_MAX_FRAME, &fs);
		if (rc == RMQNS_OK) {
			struct remoting_cmd cmd;
			if (remoting_decode(in.data, fs, &cmd) == RMQNS_OK) {
				result = remoting_is_response(&cmd) && cmd.opaque == 1 && cmd.code == 0;
				remoting_cmd_release(&cmd);
			}
			goto out;
		}
		if (rc != RMQNS_EAGAIN)
			goto out;
		uint64_t now = bench_now_ns();
		if (now >= deadline)
			goto out;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, (int)((deadline - now) / 1000000) + 1) <= 0)
			goto out;
		if (buf_reserve(&in, 65536)) {
			result = RMQNS_ENOMEM;
			goto out;
		}
		ssize_t n = read(fd, in.data + in.len, in.cap - in.len);
		if (n <= 0 && !(n < 0 && errno == EAGAIN))
			goto out;
		if (n > 0)
			in.len += (size_t)n;
	}
out:
	close(fd);
	buf_free(&req);
	buf_free(&in);
	return result;
}

static void startup_stop(pid_t pid)
{
	kill(pid, SIGTERM);
	for (int i = 0; i < 500; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return;
		startup_sleep_us(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

int startup_run(const struct bench_opts *o, const struct sockaddr_storage *addr,
		socklen_t addr_len, double *ms_out, unsigned long long *rss_kb,
		char *err, size_t err_len)
{
	size_t clen = strlen(o->exec_cmd) + 8;
	char *cmd = malloc(clen);
	if (!cmd)
		return RMQNS_ENOMEM;
	snprintf(cmd, clen, "exec %s", o->exec_cmd);
	*rss_kb = 0;
	int rc = RMQNS_OK;
	for (uint32_t run = 0; run < o->runs && rc == RMQNS_OK; run++) {
		fflush(NULL);
		uint64_t t_start = bench_now_ns();
		pid_t pid = fork();
		if (pid < 0) {
			snprintf(err, err_len, "fork: %s", strerror(errno));
			rc = RMQNS_EIO;
			break;
		}
		if (pid == 0) {
			/* the server's own output goes to stderr: stdout is the report */
			dup2(STDERR_FILENO, STDOUT_FILENO);
			execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
			_exit(127);
		}
		bool answered = false;
		while (!answered) {
			int st;
			if (waitpid(pid, &st, WNOHANG) == pid) {
				snprintf(err, err_len, "server exited before answering (status %d)",
					 WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
				rc = RMQNS_ECLOSED;
				pid = 0;
				break;
			}
			int p = startup_probe(o, addr, addr_len);
			if (p < 0) {
				snprintf(err, err_len, "probe failed: %s", rmqns_strerror(p));
				rc = p;
				break;
			}
			if (p == 1) {
				ms_out[run] = (double)(bench_now_ns() - t_start) / 1e6;
				answered = true;
				struct procstat ps;
				if (run + 1 == o->runs && procstat_read(pid, &ps) == RMQNS_OK)
					*rss_kb = ps.rss_kb;
				break;
			}
			if (bench_now_ns() - t_start > STARTUP_LIMIT_NS) {
				snprintf(err, err_len, "no answer from %s within 10 s of exec", o->addr);
				rc = RMQNS_ECLOSED;
				break;
			}
			startup_sleep_us(200);
		}
		if (pid > 0)
			startup_stop(pid);
	}
	free(cmd);
	return rc;
}
