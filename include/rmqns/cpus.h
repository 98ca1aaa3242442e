/* How many CPUs this process may use: what the thread-count defaults
 * (reactors, workers) follow. Not the machine's CPU count: in a container
 * started with a cpuset or a CPU quota, one thread per machine CPU puts
 * several reactors on one CPU, where they wait for each other's time
 * slices. The Java NameServer's availableProcessors() makes the same
 * reading. */
#ifndef RMQNS_CPUS_H
#define RMQNS_CPUS_H

/* The CPUs of the affinity mask, lowered to the CPU quota of the
 * process's cgroup when one is set; at least 1. */
unsigned cpus_usable(void);

/* The smallest CPU quota, rounded up to whole CPUs, of a cgroup and its
 * parents: cgroup_text is /proc/self/cgroup's content, fs_root where the
 * hierarchies are mounted (/sys/fs/cgroup). Version 2 ("0::/path", the
 * files cpu.max) and version 1 (the "cpu" controller's line, the files
 * cpu.cfs_quota_us and cpu.cfs_period_us below fs_root/cpu). 0 = no
 * quota. */
unsigned cpus_cgroup_quota(const char *fs_root, const char *cgroup_text);

/* The CPUs a quota of quota_us per period_us allows, rounded up; 0 when
 * there is none (quota 0 or below, "max", or a period of 0). */
unsigned cpus_from_quota(long long quota_us, long long period_us);

/* The same for the text of a version 2 cpu.max file ("150000 100000" is
 * 2, "max 100000" 0); 0 when it does not parse. */
unsigned cpus_from_cgroup_max(const char *text);

#endif
