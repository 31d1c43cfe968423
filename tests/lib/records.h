/* Standard input as records that each end with a NUL byte (so a record may
 * hold line ends), for the check programs that the test scripts feed
 * (tests/cli/document_check.c, tests/parity/normalize_check.c). */
#ifndef TED_TESTS_RECORDS_H
#define TED_TESTS_RECORDS_H

#include <stddef.h>

/* One record, text[0, length) without its NUL (the last one may lack it),
 * at byte `at` of the input; returns 0 to go on, else stops the reading. */
typedef int (*record_fn)(const char *text, size_t length, size_t at, void *context);

/* Reads all of standard input, then calls each(record, context) for every
 * record in order. Returns -1 when standard input cannot be read (or its
 * copy not allocated), else the first non-zero value `each` returned, else
 * 0. */
int for_each_record(record_fn each, void *context);

#endif
