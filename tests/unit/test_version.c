/* ted_version(): the library's version at run time, the TED_VERSION of the
 * header it was built with, spelled MAJOR.MINOR.PATCH (the soname carries
 * MAJOR). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "ted/ted.h"

Test(version, is_the_header_version)
{
    const char *version = ted_version();
    cr_assert_not_null(version);
    cr_assert_str_eq(version, TED_VERSION);
}

Test(version, is_major_minor_patch)
{
    unsigned major, minor, patch;
    int end = 0;
    cr_assert_eq(sscanf(ted_version(), "%u.%u.%u%n", &major, &minor, &patch, &end), 3,
                 "'%s'", ted_version());
    cr_assert_eq((size_t)end, strlen(ted_version()), "'%s' ends in more", ted_version());
}
