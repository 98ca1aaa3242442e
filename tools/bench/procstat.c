/* /proc readers for the server's CPU and memory figures. */
#include "procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmqns/err.h"

int procstat_parse_stat(const char *text, long ticks_per_s, struct procstat *out)
{
	if (!text || ticks_per_s <= 0)
		return RMQNS_EINVAL;
	const char *p = strrchr(text, ')');
	if (!p)
		return RMQNS_EINVAL;
	p++;
	/* After ')' come fields 3.. separated by single spaces. */
	unsigned long long utime = 0, stime = 0;
	long long threads = 0;
	int field = 2;
	bool got_u = false, got_s = false, got_t = false;
	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p || *p == '\n')
			break;
		field++;
		char *end;
		if (field == 14 || field == 15 || field == 20) {
			errno = 0;
			long long v = strtoll(p, &end, 10);
			if (end == p || errno || v < 0)
				return RMQNS_EINVAL;
			if (field == 14) { utime = (unsigned long long)v; got_u = true; }
			if (field == 15) { stime = (unsigned long long)v; got_s = true; }
			if (field == 20) { threads = v; got_t = true; }
			p = end;
		} else {
			while (*p && *p != ' ' && *p != '\n')
				p++;
		}
		if (got_t)
			break;
	}
	if (!got_u || !got_s || !got_t)
		return RMQNS_EINVAL;
	out->user_s = (double)utime / (double)ticks_per_s;
	out->sys_s = (double)stime / (double)ticks_per_s;
	out->cpu_s = out->user_s + out->sys_s;
	out->threads = threads;
	return RMQNS_OK;
}

static bool procstat_find_kb(const char *text, const char *key, uint64_t *out)
{
	size_t klen = strlen(key);
	for (const char *line = text; line && *line; ) {
		if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
			char *end;
			errno = 0;
			unsigned long long v = strtoull(line + klen + 1, &end, 10);
			if (end == line + klen + 1 || errno)
				return false;
			*out = v;
			return true;
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return false;
}

int procstat_parse_status(const char *text, struct procstat *out)
{
	if (!text)
		return RMQNS_EINVAL;
	if (!procstat_find_kb(text, "VmRSS", &out->rss_kb))
		return RMQNS_EINVAL;
	if (!procstat_find_kb(text, "VmHWM", &out->hwm_kb))
		out->hwm_kb = out->rss_kb;
	return RMQNS_OK;
}

static int procstat_slurp(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH ? RMQNS_ENOTFOUND : RMQNS_EIO;
	size_t len = 0;
	while (len + 1 < cap) {
		ssize_t n = read(fd, buf + len, cap - 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			close(fd);
			return RMQNS_EIO;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return RMQNS_OK;
}

int procstat_read(pid_t pid, struct procstat *out)
{
	char path[64], text[8192];
	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	int rc = procstat_slurp(path, text, sizeof(text));
	if (rc)
		return rc;
	rc = procstat_parse_stat(text, sysconf(_SC_CLK_TCK), out);
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	rc = procstat_slurp(path, text, sizeof(text));
	if (rc)
		return rc;
	return procstat_parse_status(text, out);
}

int procstat_parse_nofile(const char *text, uint64_t *soft)
{
	static const char key[] = "Max open files";
	const char *line = text ? strstr(text, key) : NULL;
	if (!line)
		return RMQNS_EINVAL;
	const char *p = line + sizeof(key) - 1;
	while (*p == ' ')
		p++;
	if (strncmp(p, "unlimited", 9) == 0) {
		*soft = UINT64_MAX;
		return RMQNS_OK;
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(p, &end, 10);
	if (end == p || errno)
		return RMQNS_EINVAL;
	*soft = v;
	return RMQNS_OK;
}

int procstat_read_nofile(pid_t pid, uint64_t *soft)
{
	char path[64], text[4096];
	snprintf(path, sizeof(path), "/proc/%ld/limits", (long)pid);
	int rc = procstat_slurp(path, text, sizeof(text));
	if (rc)
		return rc;
	return procstat_parse_nofile(text, soft);
}
