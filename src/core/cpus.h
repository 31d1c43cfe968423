/* How many CPUs this process may use (ted_usable_cpus, in ted/ted.h): its
 * affinity mask, capped by the CPU quota of its control group, as a
 * container sets it. */
#ifndef TED_CORE_CPUS_H
#define TED_CORE_CPUS_H

/* The CPU quota of the control groups a process is in, in whole CPUs:
 * ceil(quota / period) of the tightest quota on the process's cgroup path
 * or any group above it; 0 when there is none. `proc_cgroup` is the text of
 * /proc/self/cgroup (lines "ID:CONTROLLERS:PATH"); `root` the directory the
 * cgroup file systems are mounted under (/sys/fs/cgroup). cgroup v2 (the
 * line "0::PATH"): ROOT/PATH/cpu.max, "QUOTA PERIOD" or "max PERIOD".
 * cgroup v1 (the line whose CONTROLLERS hold "cpu"): cpu.cfs_quota_us (-1:
 * none) over cpu.cfs_period_us, under ROOT/CONTROLLERS/PATH or
 * ROOT/cpu/PATH. A file that is missing or unreadable sets no limit. */
int ted_cgroup_cpu_limit(const char *root, const char *proc_cgroup);

/* The CPUs of the process's affinity mask (sched_getaffinity); the online
 * CPUs where that cannot be read; at least 1. */
int ted_affinity_cpus(void);

#endif
