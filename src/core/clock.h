/* The monotonic clock: ted_seconds and ted_deadline, declared
 * for callers of the library in ted/util.h. */
#ifndef TED_CORE_CLOCK_H
#define TED_CORE_CLOCK_H

#include "ted/util.h"

#endif
