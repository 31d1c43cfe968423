/* The time of the monotonic clock, for durations: the server's request and
 * step timings, the command line's progress and bench figures; and the
 * deadlines of timed waits. */
#ifndef TED_CORE_CLOCK_H
#define TED_CORE_CLOCK_H

#include <time.h>

/* Seconds on CLOCK_MONOTONIC (from an unspecified start). */
double ted_seconds(void);

/* The time `ms` milliseconds from now on `clock`, the clock of the
 * condition variable waited on (CLOCK_REALTIME unless its attributes set
 * another): pthread_cond_timedwait's deadline. */
struct timespec ted_deadline(clockid_t clock, long ms);

#endif
