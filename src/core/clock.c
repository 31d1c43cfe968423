/* The monotonic clock (core/clock.h). */
#include "core/clock.h"

#include <time.h>

double ted_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
