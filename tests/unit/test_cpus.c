/* The CPUs a process may use (core/cpus.c): the cgroup quota read from the
 * fixtures of tests/data/cgroup/ (each a /proc/self/cgroup text and the
 * /sys/fs/cgroup files beside it, see its README.md), whose expected counts
 * are the quota over the period, rounded up, of the tightest group on the
 * path; and the thread count ted_set_threads keeps. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpus.h"
#include "kernels/kernels.h"
#include "ted/ted.h"

#define FIXTURES "tests/data/cgroup/"

/* The limit of the fixture `name`. */
static int fixture_limit(const char *name)
{
    char path[256], root[256], text[4096];
    snprintf(path, sizeof path, FIXTURES "%s/proc-self-cgroup", name);
    snprintf(root, sizeof root, FIXTURES "%s/fs", name);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    return ted_cgroup_cpu_limit(root, text);
}

Test(cpus, cgroup_v2_quota_of_a_container)
{
    /* cpu.max "150000 100000": 1.5 CPUs, rounded up */
    cr_assert_eq(fixture_limit("v2-container"), 2);
}

Test(cpus, cgroup_v2_quota_of_a_service_under_an_unlimited_slice)
{
    cr_assert_eq(fixture_limit("v2-service"), 3);
}

Test(cpus, cgroup_v2_quota_set_above_the_process_group)
{
    /* the pod's "100000 100000" bounds the container's "max" */
    cr_assert_eq(fixture_limit("v2-ancestor"), 1);
}

Test(cpus, cgroup_v2_max_is_no_limit)
{
    cr_assert_eq(fixture_limit("v2-unlimited"), 0);
}

Test(cpus, cgroup_v2_path_outside_the_namespace_reads_the_root)
{
    cr_assert_eq(fixture_limit("v2-namespace"), 2);
}

Test(cpus, cgroup_v1_cfs_quota)
{
    /* 250000 / 100000 under cpu,cpuacct; the memory and named lines set nothing */
    cr_assert_eq(fixture_limit("v1-docker"), 3);
}

Test(cpus, cgroup_v1_quota_of_minus_one_is_no_limit)
{
    cr_assert_eq(fixture_limit("v1-unlimited"), 0);
}

Test(cpus, cgroup_v1_hierarchy_mounted_as_cpu)
{
    /* controllers "cpuacct,cpu", mounted at fs/cpu: 0.5 CPU is one */
    cr_assert_eq(fixture_limit("v1-cpu-mount"), 1);
}

Test(cpus, cgroup_text_without_a_quota)
{
    cr_assert_eq(ted_cgroup_cpu_limit(FIXTURES "v2-container/fs", NULL), 0);
    cr_assert_eq(ted_cgroup_cpu_limit(FIXTURES "v2-container/fs", ""), 0);
    cr_assert_eq(ted_cgroup_cpu_limit(FIXTURES "v2-container/fs", "garbage\n::\n1:x\n"), 0);
    cr_assert_eq(ted_cgroup_cpu_limit(FIXTURES "v2-container/fs", "1::/\n"), 0, "not v2's 0");
    cr_assert_eq(ted_cgroup_cpu_limit(FIXTURES "missing", "0::/a/b\n"), 0);
    cr_assert_eq(ted_cgroup_cpu_limit(NULL, "0::/\n"), 0);
}

Test(cpus, cgroup_tightest_line_wins)
{
    /* v2's cpu.max at the root "300000 100000" (3), v1's quota on /batch 2 */
    cr_assert_eq(fixture_limit("hybrid"), 2);
}

Test(cpus, usable_cpus_within_the_affinity_mask)
{
    int affinity = ted_affinity_cpus(), usable = ted_usable_cpus();
    cr_assert_geq(usable, 1);
    cr_assert_leq(usable, affinity);
}

Test(cpus, usable_cpus_follow_the_affinity_mask)
{
    /* Criterion runs each test in a process of its own: the mask set here
     * stays here */
    cpu_set_t all, one;
    cr_assert_eq(sched_getaffinity(0, sizeof all, &all), 0);
    int first = 0;
    while (!CPU_ISSET(first, &all))
        first++;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0);
    cr_assert_eq(ted_affinity_cpus(), 1);
    cr_assert_eq(ted_usable_cpus(), 1);
    cr_assert_eq(ted_set_threads(4), 1);
}

Test(cpus, set_threads_keeps_to_the_usable_cpus)
{
    int usable = ted_usable_cpus();
    cr_assert_eq(ted_set_threads(usable + 14), usable);
    cr_assert_eq(ted_parallel_threads(), usable);
    cr_assert_eq(ted_set_threads(0), usable);
    cr_assert_eq(ted_set_threads(1), 1);
    cr_assert_eq(ted_parallel_threads(), 1);
}
