/* Status and error messages shared by every module. */
#ifndef TED_CORE_ERROR_H
#define TED_CORE_ERROR_H

#include "ted/ted.h"

/* Records `status` and a printf-style message in `err` (if not NULL) and
 * returns `status`, so a failure reads `return ted_fail(err, ...);`. */
ted_status ted_fail(ted_error *err, ted_status status, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes the message already in `err` with "<prefix>: " and returns its
 * status; used when a caller knows which file or tensor a failure was in. */
ted_status ted_fail_context(ted_error *err, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

#endif
