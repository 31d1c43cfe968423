/* What the parsers' tests ask of a refusal's message. */
#ifndef TED_TESTS_REFUSAL_H
#define TED_TESTS_REFUSAL_H

#include <criterion/criterion.h>
#include <string.h>

#include "ted/ted.h"

/* Asserts that err's message is one line that holds `file_name`, `part1`
 * and `part2` ("" asks for nothing more). */
static inline void expect_message(const ted_error *err, const char *file_name,
                                  const char *part1, const char *part2)
{
    cr_assert(strstr(err->message, file_name), "message: %s", err->message);
    cr_assert(strstr(err->message, part1), "message: %s", err->message);
    cr_assert(strstr(err->message, part2), "message: %s", err->message);
    cr_assert_null(strchr(err->message, '\n'), "message: %s", err->message);
}

#endif
