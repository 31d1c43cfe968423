/* The time of the monotonic clock, for durations: the server's request and
 * step timings, the command line's progress and bench figures. */
#ifndef TED_CORE_CLOCK_H
#define TED_CORE_CLOCK_H

/* Seconds on CLOCK_MONOTONIC (from an unspecified start). */
double ted_seconds(void);

#endif
