/* libFuzzer harness: ted_safetensors_parse on arbitrary bytes. A file that
 * parses must describe tensors that lie inside it, sorted by name, found by
 * name and not overlapping; every byte of every tensor is read (so ASan sees
 * any tensor pointing outside the input) and checked for NaN/Inf. The
 * header's string metadata (a mapped file's layout) is found by key. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ted_safetensors file;
    ted_error err = {0};
    ted_status status = ted_safetensors_parse(data, size, "fuzz.safetensors", &file, &err);
    if (status != TED_OK) {
        REQUIRE(file.tensors == NULL && file.count == 0);
        REQUIRE(err.message[0] != '\0' && memchr(err.message, '\0', sizeof err.message));
        return 0;
    }
    REQUIRE(file.bytes == data && file.size == size);
    volatile unsigned char sink = 0;
    for (int i = 0; i < file.count; i++) {
        const ted_st_tensor *t = &file.tensors[i];
        REQUIRE(t->name && t->name[0] != '\0');
        REQUIRE(t->ndim >= 0 && t->ndim <= TED_TENSOR_MAX_DIMS);
        const unsigned char *p = t->data;
        REQUIRE(p >= data + 8 && p + t->bytes <= data + size);
        size_t elements = 1;
        for (int d = 0; d < t->ndim; d++) {
            REQUIRE(t->shape[d] >= 0);
            elements *= (size_t)t->shape[d];
        }
        REQUIRE(elements * ted_dtype_size(t->dtype) == t->bytes);
        for (size_t b = 0; b < t->bytes; b++)
            sink ^= p[b];
        REQUIRE(ted_safetensors_find(&file, t->name) == t);
        if (i > 0)
            REQUIRE(strcmp(file.tensors[i - 1].name, t->name) < 0);
        ted_error check = {0};
        ted_status finite = ted_safetensors_check_finite(t, "fuzz.safetensors", &check);
        REQUIRE(finite == TED_OK || (finite == TED_ERR_WEIGHTS && check.message[0] != '\0'));
    }
    for (int i = 0; i < file.metadata_count; i++) {
        const ted_st_metadata *m = &file.metadata[i];
        REQUIRE(m->key && m->value);
        const char *value = ted_safetensors_metadata(&file, m->key);
        REQUIRE(value);  /* the first entry of that key (JSON may repeat one) */
        sink ^= (unsigned char)strlen(m->value);
    }
    (void)sink;
    ted_safetensors_close(&file);
    return 0;
}
