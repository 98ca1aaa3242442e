/* The standard process_* families of the Prometheus client libraries
 * (metrics.h): resident and virtual memory, CPU seconds, open and maximum
 * descriptors and the start time, read from /proc when /metrics is asked. */
#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "rmqns/err.h"
#include "rmqns/metrics.h"

struct metrics_proc {
	double cpu_seconds;
	double start_seconds; /* since the epoch */
	double vsize_bytes;
	double rss_bytes;
	double open_fds;
	double max_fds;
};

/* Seconds since the epoch at which the system booted (/proc/stat btime), 0 unknown. */
static double metrics_boot_time(void)
{
	FILE *f = fopen("/proc/stat", "re");
	char line[256];
	double bt = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		if (strncmp(line, "btime ", 6) == 0) {
			bt = strtod(line + 6, NULL);
			break;
		}
	fclose(f);
	return bt;
}

/* utime, stime, starttime, vsize and rss of /proc/self/stat; false when unreadable. */
static bool metrics_read_stat(struct metrics_proc *p)
{
	char buf[1024];
	FILE *f = fopen("/proc/self/stat", "re");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	/* the command name may hold spaces and parentheses: fields follow the last ')' */
	char *s = strrchr(buf, ')');
	if (!s)
		return false;
	unsigned long long utime, stime, start, vsize;
	long long rss;
	/* fields 3..24: state ppid pgrp session tty tpgid flags minflt cminflt
	 * majflt cmajflt utime stime cutime cstime priority nice threads
	 * itrealvalue starttime vsize rss */
	if (sscanf(s + 1,
		   " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d "
		   "%*d %llu %llu %lld",
		   &utime, &stime, &start, &vsize, &rss) != 5)
		return false;
	long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	if (hz <= 0)
		hz = 100;
	if (page <= 0)
		page = 4096;
	p->cpu_seconds = (double)(utime + stime) / (double)hz;
	p->start_seconds = metrics_boot_time() + (double)start / (double)hz;
	p->vsize_bytes = (double)vsize;
	p->rss_bytes = (double)rss * (double)page;
	return true;
}

static double metrics_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	double n = 0;
	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n > 0 ? n - 1 : 0; /* not the one opendir holds */
}

int metrics_write_process(struct buf *out)
{
	struct metrics_proc p = { 0 };
	struct rlimit rl;
	if (!metrics_read_stat(&p))
		return RMQNS_OK; /* no /proc: the families are left out, not made up */
	p.open_fds = metrics_open_fds();
	p.max_fds = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
			    ? (double)rl.rlim_cur
			    : 0;
	static const struct {
		const char *name, *type, *help;
		size_t off;
	} fams[] = {
		{ "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.",
		  offsetof(struct metrics_proc, cpu_seconds) },
		{ "process_start_time_seconds", "gauge",
		  "Start time of the process since unix epoch in seconds.",
		  offsetof(struct metrics_proc, start_seconds) },
		{ "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
		  offsetof(struct metrics_proc, vsize_bytes) },
		{ "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
		  offsetof(struct metrics_proc, rss_bytes) },
		{ "process_open_fds", "gauge", "Number of open file descriptors.",
		  offsetof(struct metrics_proc, open_fds) },
		{ "process_max_fds", "gauge", "Maximum number of open file descriptors.",
		  offsetof(struct metrics_proc, max_fds) },
	};
	int rc = RMQNS_OK;
	for (size_t i = 0; i < sizeof fams / sizeof fams[0] && rc == 0; i++) {
		double v = *(const double *)((const char *)&p + fams[i].off);
		rc = metrics_write_family(out, fams[i].name, fams[i].type, fams[i].help);
		if (rc == 0)
			rc = metrics_write_value(out, fams[i].name, NULL, v);
	}
	return rc;
}
