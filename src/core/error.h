/* Status and error messages shared by every module. */
#ifndef TED_CORE_ERROR_H
#define TED_CORE_ERROR_H

#include "ted/ted.h"

/* Records `status` and a printf-style message in `err` (if not NULL) and
 * returns `status`, so a failure reads `return ted_fail(err, ...);`. */
ted_status ted_fail(ted_error *err, ted_status status, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* ted_fail(err, TED_ERR_ARGUMENT, ...) about one decoding option, which
 * err->option names (ted_fail leaves it TED_OPTION_NONE). */
ted_status ted_fail_option(ted_error *err, ted_option option, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes the message already in `err` with "<prefix>: " and returns its
 * status; used when a caller knows which file or tensor a failure was in. */
ted_status ted_fail_context(ted_error *err, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* Returns TED_ERR_ARGUMENT ("ted_session_step: tokens is NULL") from the
 * public function it stands in when a pointer it needs is NULL. */
#define TED_REQUIRE(pointer, err)                                                           \
    do {                                                                                    \
        if (!(pointer))                                                                     \
            return ted_fail((err), TED_ERR_ARGUMENT, "%s: %s is NULL", __func__, #pointer); \
    } while (0)

#endif
