/* The monotonic clock (core/clock.h). */
#include "core/clock.h"

#include <time.h>

double ted_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

struct timespec ted_deadline(int clock, long ms)
{
    struct timespec t;
    clock_gettime((clockid_t)clock, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000L;
    t.tv_sec += t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}
