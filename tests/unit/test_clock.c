/* The deadline of a timed wait (core/clock.c): `ms` milliseconds after the
 * clock's time read just before and after it, with the nanoseconds within
 * a second, across a second's end and for waits of several seconds. */
#include <criterion/criterion.h>
#include <time.h>

#include "core/clock.h"

static long long ns_of(struct timespec t)
{
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void check_deadline(clockid_t clock, long ms)
{
    struct timespec before, after;
    clock_gettime(clock, &before);
    struct timespec d = ted_deadline(clock, ms);
    clock_gettime(clock, &after);
    cr_assert(d.tv_nsec >= 0 && d.tv_nsec < 1000000000L, "tv_nsec %ld", d.tv_nsec);
    long long want = ms * 1000000LL;
    cr_assert(ns_of(d) - ns_of(before) >= want && ns_of(d) - ns_of(after) <= want,
              "%ld ms: %lld ns after the time before, %lld after the time after", ms,
              ns_of(d) - ns_of(before), ns_of(d) - ns_of(after));
}

Test(clock, deadline_is_ms_after_now)
{
    long waits[] = {0, 1, 200, 999, 1000, 1500, 2999, 60000};
    for (size_t i = 0; i < sizeof waits / sizeof *waits; i++) {
        check_deadline(CLOCK_MONOTONIC, waits[i]);
        check_deadline(CLOCK_REALTIME, waits[i]);
    }
}

/* Waits of up to a second from every part of a second: the nanoseconds
 * carried into the seconds whatever the time now. */
Test(clock, deadline_carries_into_the_seconds)
{
    for (int k = 0; k < 2000; k++)
        check_deadline(CLOCK_MONOTONIC, k % 1000);
}
