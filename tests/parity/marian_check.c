/* What ted reads of Marian's files, for tests/parity/test_marian_files.py
 * and tests/parity/test_shortlist_bin.py:
 *
 *     marian-check FILE
 *
 * prints the model file's container (src/io/marian_file.h), then one line
 * per tensor, tab-separated:
 *
 *     NAME DTYPE SHAPE TYPE TRANSPOSED QUANT_MULT OFFSET BYTES
 *
 * (SHAPE as "d0,d1", TYPE in hex, QUANT_MULT with %.9g, OFFSET of the
 * values from the start of the file), then "yml LENGTH" and the config's
 * text.
 *
 *     marian-check --shortlist FILE SRC_VOCAB TGT_VOCAB
 *
 * reads a shortlist (src/io/shortlist.h, either form) and prints "first
 * F" (its frequent ids, which are 0 .. F - 1 in the binary form, else
 * "frequent" and the ids), "binary B pad P from R", then one line per
 * source id: its target ids, space-separated.
 *
 *     marian-check --spm MODEL < texts
 *
 * segments texts, each ended by a NUL byte, with src/io/sentencepiece.h
 * and prints one line per text: its pieces, space-separated.
 *
 * On a refusal: the message on standard error, exit status 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/marian_file.h"
#include "io/sentencepiece.h"
#include "io/shortlist.h"

static void print_tensor(const ted_marian_file *file, const ted_marian_tensor *t)
{
    printf("%s\t%s\t", t->st.name, ted_dtype_name(t->st.dtype));
    for (int d = 0; d < t->st.ndim; d++)
        printf("%s%lld", d ? "," : "", (long long)t->st.shape[d]);
    printf("\t%llx\t%d\t%.9g\t%zu\t%zu\n", (unsigned long long)t->type, t->transposed ? 1 : 0,
           (double)t->quant_mult, (size_t)((const unsigned char *)t->st.data - file->bytes),
           t->st.bytes);
}

static int print_shortlist(const char *path, int src_vocab, int tgt_vocab)
{
    ted_shortlist list;
    ted_error err = {0};
    if (ted_shortlist_load(path, src_vocab, tgt_vocab, &list, &err) != TED_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    printf("first %d\nfrequent", list.frequent_count);
    for (int i = 0; i < list.frequent_count; i++)
        printf(" %d", list.frequent[i]);
    printf("\nbinary %d pad %d from %d\n", list.binary ? 1 : 0, list.pad_multiple,
           list.pad_from);
    for (int s = 0; s < list.src_vocab; s++) {
        for (int k = list.offsets[s]; k < list.offsets[s + 1]; k++)
            printf(k > list.offsets[s] ? " %d" : "%d", list.targets[k]);
        printf("\n");
    }
    ted_shortlist_free(&list);
    return 0;
}

/* Each NUL-ended text of standard input, segmented. */
static int print_pieces(const char *model)
{
    ted_spm *spm;
    ted_error err = {0};
    if (ted_spm_load(model, &spm, &err) != TED_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    char *line = NULL;
    size_t room = 0;
    ssize_t got;
    int status = 0;
    while (status == 0 && (got = getdelim(&line, &room, '\0', stdin)) > 0) {
        size_t length = line[got - 1] == '\0' ? (size_t)got - 1 : (size_t)got;
        char *pieces;
        int count;
        if (ted_spm_encode(spm, line, length, &pieces, &count, &err) != TED_OK) {
            fprintf(stderr, "%s\n", err.message);
            status = 1;
            break;
        }
        const char *p = pieces;
        for (int i = 0; i < count; p += strlen(p) + 1, i++)
            printf(i ? " %s" : "%s", p);
        printf("\n");
        free(pieces);
    }
    free(line);
    ted_spm_free(spm);
    return status;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "--shortlist") == 0)
        return print_shortlist(argv[2], atoi(argv[3]), atoi(argv[4]));
    if (argc == 3 && strcmp(argv[1], "--spm") == 0)
        return print_pieces(argv[2]);
    if (argc != 2) {
        fprintf(stderr, "usage: marian-check FILE | --shortlist FILE SRC TGT | --spm MODEL\n");
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
