/* What src/io/marian_file.h reads of a Marian model file, for
 * tests/parity/test_marian_files.py:
 *
 *     marian-check FILE
 *
 * prints the container, then one line per tensor, tab-separated:
 *
 *     NAME DTYPE SHAPE TYPE TRANSPOSED QUANT_MULT OFFSET BYTES
 *
 * (SHAPE as "d0,d1", TYPE in hex, QUANT_MULT with %.9g, OFFSET of the
 * values from the start of the file), then "yml LENGTH" and the config's
 * text. On a refusal: the message on standard error, exit status 1. */
#include <stdio.h>

#include "io/marian_file.h"

static void print_tensor(const ted_marian_file *file, const ted_marian_tensor *t)
{
    printf("%s\t%s\t", t->st.name, ted_dtype_name(t->st.dtype));
    for (int d = 0; d < t->st.ndim; d++)
        printf("%s%lld", d ? "," : "", (long long)t->st.shape[d]);
    printf("\t%llx\t%d\t%.9g\t%zu\t%zu\n", (unsigned long long)t->type, t->transposed ? 1 : 0,
           (double)t->quant_mult, (size_t)((const unsigned char *)t->st.data - file->bytes),
           t->st.bytes);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: marian-check FILE\n");
        return 2;
    }
    ted_marian_file file;
    ted_error err = {0};
    if (ted_marian_open(argv[1], &file, &err) != TED_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    printf("%s\n", file.container == TED_MARIAN_NPZ ? "npz" : "bin");
    for (int i = 0; i < file.count; i++)
        print_tensor(&file, &file.tensors[i]);
    size_t length;
    const char *yml = ted_marian_yml(&file, &length);
    printf("yml %zu\n", yml ? length : (size_t)0);
    if (yml)
        fwrite(yml, 1, length, stdout);
    ted_marian_close(&file);
    return 0;
}
