/* Status and error messages shared by every module: ted_fail and
 * ted_fail_context (ted/util.h), and what only the library's own
 * functions use. */
#ifndef TED_CORE_ERROR_H
#define TED_CORE_ERROR_H

#include "ted/util.h"

/* ted_fail(err, TED_ERR_ARGUMENT, ...) about one decoding option, which
 * err->option names (ted_fail leaves it TED_OPTION_NONE). */
ted_status ted_fail_option(ted_error *err, ted_option option, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* Returns TED_ERR_ARGUMENT ("ted_session_step: tokens is NULL") from the
 * public function it stands in when a pointer it needs is NULL. */
#define TED_REQUIRE(pointer, err)                                                           \
    do {                                                                                    \
        if (!(pointer))                                                                     \
            return ted_fail((err), TED_ERR_ARGUMENT, "%s: %s is NULL", __func__, #pointer); \
    } while (0)

#endif
