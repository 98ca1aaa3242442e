/* A disk whose fsync the test holds, preloaded into the server
 * (LD_PRELOAD) by the KV writer tests. Every variable is optional; unset,
 * the call simply goes through.
 *   RMQNS_TEST_FSYNC_LOG   file that gets one line per fsync/fdatasync
 *                          entered (so a test knows a write is under way)
 *   RMQNS_TEST_FSYNC_GATE  fsync/fdatasync wait while this file does not
 *                          exist (at most FSYNC_GATE_MAX_MS, so that a
 *                          failed test cannot hang the server)
 *   RMQNS_TEST_RENAME_LOG  file that gets the new name of every rename
 *                          that succeeded, one a line (counts file writes) */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FSYNC_GATE_MAX_MS 60000
#define FSYNC_GATE_POLL_MS 2

static void append_line(const char *var, const char *line)
{
	const char *path = getenv(var);
	char buf[4096];
	int fd, n;

	if (!path || !*path)
		return;
	n = snprintf(buf, sizeof(buf), "%s\n", line);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	/* one write with O_APPEND: lines from several threads never mix */
	if (write(fd, buf, (size_t)n) != n) {
		/* a test that needs the line fails on its own */
	}
	close(fd);
}

static void wait_at_gate(int fd)
{
	const char *gate = getenv("RMQNS_TEST_FSYNC_GATE");
	struct timespec nap = { 0, FSYNC_GATE_POLL_MS * 1000000L };
	char line[64];

	snprintf(line, sizeof(line), "fsync %d", fd);
	append_line("RMQNS_TEST_FSYNC_LOG", line);
	if (!gate || !*gate)
		return;
	for (int waited = 0; access(gate, F_OK) != 0 && waited < FSYNC_GATE_MAX_MS;
	     waited += FSYNC_GATE_POLL_MS)
		nanosleep(&nap, NULL);
}

int fsync(int fd)
{
	int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fsync");

	wait_at_gate(fd);
	return real(fd);
}

int fdatasync(int fd)
{
	int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");

	wait_at_gate(fd);
	return real(fd);
}

int rename(const char *from, const char *to)
{
	int (*real)(const char *, const char *) =
		(int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
	int rc = real(from, to);

	if (rc == 0)
		append_line("RMQNS_TEST_RENAME_LOG", to);
	return rc;
}
