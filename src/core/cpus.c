/* The CPUs a process may use (core/cpus.h, ted_usable_cpus in ted/ted.h). */
#define _GNU_SOURCE
#include "core/cpus.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ted/ted.h"

enum { PATH_BYTES = 4096, PROC_CGROUP_BYTES = 64 << 10 };

/* ceil(quota / period) CPUs, at least 1; 0 (no limit) unless both are
 * positive. */
static int cpus_of(long long quota, long long period)
{
    if (quota <= 0 || period <= 0)
        return 0;
    long long cpus = quota / period + (quota % period != 0);
    return cpus > INT_MAX ? INT_MAX : (int)cpus;
}

/* The whole number a file starts with; false when it starts otherwise. */
static bool read_number(const char *dir, const char *name, long long *value)
{
    char path[PATH_BYTES];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return false;
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fscanf(f, "%lld", value) == 1;
    fclose(f);
    return ok;
}

/* cgroup v2: cpu.max holds "QUOTA PERIOD", or "max PERIOD" for none. */
static int v2_limit(const char *dir)
{
    char path[PATH_BYTES];
    if (snprintf(path, sizeof path, "%s/cpu.max", dir) >= (int)sizeof path)
        return 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    long long quota = 0, period = 0;
    bool ok = fscanf(f, "%lld %lld", &quota, &period) == 2;  /* "max" stops at once */
    fclose(f);
    return ok ? cpus_of(quota, period) : 0;
}

/* cgroup v1: cpu.cfs_quota_us (-1 for none) over cpu.cfs_period_us. */
static int v1_limit(const char *dir)
{
    long long quota = 0, period = 0;
    if (!read_number(dir, "cpu.cfs_quota_us", &quota) ||
        !read_number(dir, "cpu.cfs_period_us", &period))
        return 0;
    return cpus_of(quota, period);
}

/* The smaller limit, 0 counting as none. */
static int tighter(int a, int b)
{
    return a == 0 || (b != 0 && b < a) ? b : a;
}

/* The tightest limit of MOUNT/PATH and of every directory above it up to
 * MOUNT. A path that climbs (a cgroup namespace shows "/.." for groups
 * outside it) counts as MOUNT alone. */
static int walk_up(const char *mount, const char *path, int (*limit)(const char *dir))
{
    char dir[PATH_BYTES];
    if (path[0] != '/' || strstr(path, "/.."))
        path = "/";
    if (snprintf(dir, sizeof dir, "%s%s", mount, path) >= (int)sizeof dir)
        return 0;
    size_t mount_length = strlen(mount);
    int best = 0;
    for (;;) {
        best = tighter(best, limit(dir));
        char *slash = strrchr(dir + mount_length, '/');
        if (!slash)
            return best;
        *slash = '\0';
    }
}

/* Whether the comma-separated CONTROLLERS name `name`. */
static bool has_controller(const char *controllers, const char *name)
{
    size_t n = strlen(name);
    for (const char *c = controllers; c; c = strchr(c, ',') ? strchr(c, ',') + 1 : NULL)
        if (!strncmp(c, name, n) && (c[n] == ',' || c[n] == '\0'))
            return true;
    return false;
}

/* The limit one line "ID:CONTROLLERS:PATH" of /proc/self/cgroup sets. */
static int line_limit(const char *root, const char *line, size_t length)
{
    char text[PATH_BYTES], mount[PATH_BYTES];
    if (length >= sizeof text)
        return 0;
    memcpy(text, line, length);
    text[length] = '\0';
    char *controllers = strchr(text, ':');
    char *path = controllers ? strchr(controllers + 1, ':') : NULL;
    if (!path)
        return 0;
    *path++ = '\0';
    *controllers++ = '\0';
    if (*controllers == '\0')
        return !strcmp(text, "0") ? walk_up(root, path, v2_limit) : 0;
    if (!has_controller(controllers, "cpu"))
        return 0;
    int best = 0;
    if (snprintf(mount, sizeof mount, "%s/%s", root, controllers) < (int)sizeof mount)
        best = walk_up(mount, path, v1_limit);
    if (strcmp(controllers, "cpu") &&
        snprintf(mount, sizeof mount, "%s/cpu", root) < (int)sizeof mount)
        best = tighter(best, walk_up(mount, path, v1_limit));
    return best;
}

int ted_cgroup_cpu_limit(const char *root, const char *proc_cgroup)
{
    int best = 0;
    const char *line = proc_cgroup;
    while (root && line && *line) {
        const char *end = strchr(line, '\n');
        size_t length = end ? (size_t)(end - line) : strlen(line);
        best = tighter(best, line_limit(root, line, length));
        line = end ? end + 1 : NULL;
    }
    return best;
}

int ted_affinity_cpus(void)
{
#ifdef __linux__
    for (int size = 1024; size <= (1 << 16); size *= 4) {
        cpu_set_t *set = CPU_ALLOC(size);
        if (!set)
            break;
        size_t bytes = CPU_ALLOC_SIZE(size);
        int got = sched_getaffinity(0, bytes, set);
        int count = got == 0 ? CPU_COUNT_S(bytes, set) : 0;
        int error = errno;
        CPU_FREE(set);
        if (got == 0)
            return count > 0 ? count : 1;
        if (error != EINVAL)  /* EINVAL: the kernel's mask is larger */
            break;
    }
#endif
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online < 1 ? 1 : online > INT_MAX ? INT_MAX : (int)online;
}

/* The text of /proc/self/cgroup, malloc'ed; NULL where there is none. */
static char *read_proc_cgroup(void)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f)
        return NULL;
    char *text = malloc(PROC_CGROUP_BYTES);
    size_t n = text ? fread(text, 1, PROC_CGROUP_BYTES - 1, f) : 0;
    fclose(f);
    if (text)
        text[n] = '\0';
    return text;
}

int ted_usable_cpus(void)
{
    int cpus = ted_affinity_cpus();
    char *proc_cgroup = read_proc_cgroup();
    int limit = ted_cgroup_cpu_limit("/sys/fs/cgroup", proc_cgroup);
    free(proc_cgroup);
    return limit > 0 && limit < cpus ? limit : cpus;
}
