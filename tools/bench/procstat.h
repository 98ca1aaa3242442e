/* CPU time and memory of a local server process, read from
 * /proc/PID/stat and /proc/PID/status, so a bench run can say what the
 * server spent. The parsers are pure and take the files' text. */
#ifndef BENCH_PROCSTAT_H
#define BENCH_PROCSTAT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct procstat {
	double cpu_s;     /* user + system time, seconds */
	double user_s;
	double sys_s;
	int64_t threads;
	uint64_t rss_kb;  /* VmRSS */
	uint64_t hwm_kb;  /* VmHWM: peak RSS */
};

/* Parses the text of /proc/PID/stat (utime, stime in clock ticks of
 * `ticks_per_s`, num_threads). The command name may hold spaces and
 * parentheses; fields are counted after its last ')'. */
int procstat_parse_stat(const char *text, long ticks_per_s, struct procstat *out);
/* Parses VmRSS and VmHWM (kB) from the text of /proc/PID/status. */
int procstat_parse_status(const char *text, struct procstat *out);
/* Reads both files of `pid`. RMQNS_ENOTFOUND when the process is gone. */
int procstat_read(pid_t pid, struct procstat *out);
/* The soft "Max open files" limit from the text of /proc/PID/limits
 * (UINT64_MAX for "unlimited"). */
int procstat_parse_nofile(const char *text, uint64_t *soft);
int procstat_read_nofile(pid_t pid, uint64_t *soft);

#endif
