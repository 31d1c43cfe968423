/* libFuzzer harness: ted_npy_parse (io/npy.h), a .npz member's NumPy array,
 * on arbitrary bytes (the zip's CRC-32 keeps a fuzzer of whole archives
 * from reaching it often). An array that parses lies inside the bytes,
 * after the header, and fills them to the end with its shape's values. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "io/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char name[] = "fuzz";
    ted_marian_tensor t;
    memset(&t, 0, sizeof t);
    t.st.name = name;
    ted_error err = {0};
    ted_status status = ted_npy_parse(data, size, "fuzz.npz", &t, &err);
    if (status != TED_OK) {
        REQUIRE(status == TED_ERR_FORMAT);
        REQUIRE(err.message[0] != '\0' && memchr(err.message, '\0', sizeof err.message));
        return 0;
    }
    REQUIRE(t.st.ndim >= 0 && t.st.ndim <= TED_TENSOR_MAX_DIMS);
    size_t elements = 1;
    for (int d = 0; d < t.st.ndim; d++) {
        REQUIRE(t.st.shape[d] >= 0);
        elements *= (size_t)t.st.shape[d];
    }
    REQUIRE(elements * ted_dtype_size(t.st.dtype) == t.st.bytes);
    const unsigned char *p = t.st.data;
    REQUIRE(p > data + 10 && p + t.st.bytes == data + size);
    volatile unsigned char sink = 0;
    for (size_t b = 0; b < t.st.bytes; b++)
        sink ^= p[b];
    (void)sink;
    return 0;
}
