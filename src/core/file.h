/* Reading small text files whole (configs, vocabularies): ted_open_regular,
 * ted_read_file, ted_parse_file and ted_same_file, declared
 * for callers of the library in ted/util.h. */
#ifndef TED_CORE_FILE_H
#define TED_CORE_FILE_H

#include "ted/util.h"

#endif
