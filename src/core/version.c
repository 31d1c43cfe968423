#include "ted/ted.h"

const char *ted_version(void)
{
    return TED_VERSION;
}
