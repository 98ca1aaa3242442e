/* The CPUs this process may use: affinity mask and cgroup CPU quota. */
#include "rmqns/cpus.h"

#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CPUS_CGROUP_ROOT "/sys/fs/cgroup"
#define CPUS_PATH_MAX 4096                     /* a cgroup's path */
#define CPUS_DIR_MAX (2 * CPUS_PATH_MAX + 64)    /* a mount point and a path */

unsigned cpus_from_quota(long long quota_us, long long period_us)
{
	if (quota_us <= 0 || period_us <= 0)
		return 0;
	long long n = (quota_us + period_us - 1) / period_us;
	return n > 65535 ? 65535u : (unsigned)n;
}

unsigned cpus_from_cgroup_max(const char *text)
{
	char quota[32];
	long long period;
	if (!text || sscanf(text, "%31s %lld", quota, &period) != 2)
		return 0;
	if (strcmp(quota, "max") == 0)
		return 0;
	char *end;
	long long q = strtoll(quota, &end, 10);
	if (*end)
		return 0;
	return cpus_from_quota(q, period);
}

/* The first line of a small file, or "" when it cannot be read. */
static void cpus_read_line(const char *path, char *out, size_t cap)
{
	out[0] = '\0';
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	if (!fgets(out, (int)cap, f))
		out[0] = '\0';
	fclose(f);
}

/* The quota set in one cgroup directory; 0 = none. */
static unsigned cpus_dir_quota(const char *dir, int version)
{
	char path[CPUS_DIR_MAX + 32], text[128];
	if (version == 2) {
		snprintf(path, sizeof path, "%s/cpu.max", dir);
		cpus_read_line(path, text, sizeof text);
		return cpus_from_cgroup_max(text);
	}
	snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
	cpus_read_line(path, text, sizeof text);
	long long quota = text[0] ? strtoll(text, NULL, 10) : -1;
	snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
	cpus_read_line(path, text, sizeof text);
	long long period = text[0] ? strtoll(text, NULL, 10) : 0;
	return cpus_from_quota(quota, period);
}

/* The smallest quota of base + cg and of each parent up to base. */
static unsigned cpus_walk_up(const char *base, const char *cg, int version)
{
	char rel[CPUS_PATH_MAX], dir[CPUS_DIR_MAX];
	snprintf(rel, sizeof rel, "%s", cg);
	unsigned limit = 0;
	for (;;) {
		size_t n = strlen(rel);
		while (n > 0 && rel[n - 1] == '/')
			rel[--n] = '\0';
		snprintf(dir, sizeof dir, "%s%s", base, rel);
		unsigned q = cpus_dir_quota(dir, version);
		if (q && (limit == 0 || q < limit))
			limit = q;
		char *slash = strrchr(rel, '/');
		if (!slash)
			break;
		*slash = '\0';
	}
	return limit;
}

/* Whether a version 1 controller list ("cpu,cpuacct") names "cpu". */
static bool cpus_has_cpu_controller(char *list)
{
	char *save = NULL;
	for (char *c = strtok_r(list, ",", &save); c; c = strtok_r(NULL, ",", &save))
		if (strcmp(c, "cpu") == 0)
			return true;
	return false;
}

unsigned cpus_cgroup_quota(const char *fs_root, const char *cgroup_text)
{
	unsigned limit = 0;
	const char *line = cgroup_text;
	while (line && *line) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		char buf[CPUS_PATH_MAX];
		if (len < sizeof buf) {
			/* "id:controllers:/path" */
			memcpy(buf, line, len);
			buf[len] = '\0';
			char *ctl = strchr(buf, ':');
			char *path = ctl ? strchr(ctl + 1, ':') : NULL;
			if (path && path[1] == '/') {
				*ctl++ = '\0';
				*path++ = '\0';
				unsigned q = 0;
				if (strcmp(buf, "0") == 0 && *ctl == '\0') {
					q = cpus_walk_up(fs_root, path, 2); /* version 2 */
				} else if (cpus_has_cpu_controller(ctl)) {
					/* version 1: mounted at fs_root/cpu (often a link
					 * to cpu,cpuacct) */
					char base[CPUS_PATH_MAX];
					snprintf(base, sizeof base, "%s/cpu", fs_root);
					q = cpus_walk_up(base, path, 1);
				}
				if (q && (limit == 0 || q < limit))
					limit = q;
			}
		}
		line = eol ? eol + 1 : NULL;
	}
	return limit;
}

unsigned cpus_usable(void)
{
	unsigned n = 0;
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0)
		n = (unsigned)CPU_COUNT(&set);
	if (n == 0) {
		long online = sysconf(_SC_NPROCESSORS_ONLN);
		n = online > 0 ? (unsigned)online : 1u;
	}
	char text[8192] = "";
	FILE *f = fopen("/proc/self/cgroup", "r");
	if (f) {
		size_t got = fread(text, 1, sizeof text - 1, f);
		text[got] = '\0';
		fclose(f);
	}
	unsigned quota = cpus_cgroup_quota(CPUS_CGROUP_ROOT, text);
	if (quota && quota < n)
		n = quota;
	return n ? n : 1u;
}
