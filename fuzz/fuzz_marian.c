/* libFuzzer harness: ted_marian_parse (io/marian_file.h) on arbitrary bytes,
 * either container (.npz, .bin). A file that parses must describe tensors
 * lying inside it, sorted by name and found by name, each of its shape's
 * size; every byte of every tensor is read (so ASan sees any pointing
 * outside the input); an intgemm8 matrix carries a positive finite
 * multiplier; the config text is NUL-terminated at its length. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "io/marian_file.h"

static void check_tensor(const ted_marian_file *file, const uint8_t *data, size_t size, int i)
{
    const ted_marian_tensor *t = &file->tensors[i];
    REQUIRE(t->st.name && t->st.name[0] != '\0');
    REQUIRE(t->st.ndim >= 0 && t->st.ndim <= TED_TENSOR_MAX_DIMS);
    size_t elements = 1;
    for (int d = 0; d < t->st.ndim; d++) {
        REQUIRE(t->st.shape[d] >= 0);
        elements *= (size_t)t->st.shape[d];
    }
    REQUIRE(elements * ted_dtype_size(t->st.dtype) == t->st.bytes);
    const unsigned char *p = t->st.data;
    REQUIRE(p >= data && t->st.bytes <= size && p <= data + size - t->st.bytes);
    volatile unsigned char sink = 0;
    for (size_t b = 0; b < t->st.bytes; b++)
        sink ^= p[b];
    (void)sink;
    bool intgemm = t->type == TED_MARIAN_INTGEMM8 || t->type == TED_MARIAN_INTGEMM8_BROWSERMT;
    REQUIRE(intgemm ? isfinite(t->quant_mult) && t->quant_mult > 0 : t->quant_mult == 0);
    REQUIRE(!t->transposed || intgemm);
    REQUIRE(ted_marian_find(file, t->st.name) == t);
    if (i > 0)
        REQUIRE(strcmp(file->tensors[i - 1].st.name, t->st.name) < 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ted_marian_file file;
    ted_error err = {0};
    ted_status status = ted_marian_parse(data, size, "fuzz.bin", &file, &err);
    if (status != TED_OK) {
        REQUIRE(file.tensors == NULL && file.count == 0 && file.yml == NULL);
        REQUIRE(status == TED_ERR_FORMAT || status == TED_ERR_NOMEM);
        REQUIRE(err.message[0] != '\0' && memchr(err.message, '\0', sizeof err.message));
        return 0;
    }
    REQUIRE(file.bytes == data && file.size == size && !file.mapped);
    for (int i = 0; i < file.count; i++)
        check_tensor(&file, data, size, i);
    size_t length;
    const char *yml = ted_marian_yml(&file, &length);
    REQUIRE(!yml || (strlen(yml) == length && ted_marian_find(&file, TED_MARIAN_YML_NAME)));
    ted_marian_close(&file);
    return 0;
}
