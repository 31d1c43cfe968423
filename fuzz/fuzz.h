/* What every harness of fuzz/ shares: libFuzzer's entry point and the
 * check that turns a broken promise of ted into a crash libFuzzer keeps. */
#ifndef TED_FUZZ_H
#define TED_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define REQUIRE(condition) \
    do {                   \
        if (!(condition))  \
            abort();       \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
