/* Quantizing a float model directory to int8, int4 or bfloat16 weights
 * (ted quantize), part of the public API. */
#ifndef TED_QUANTIZE_H
#define TED_QUANTIZE_H

#include <limits.h>
#include <signal.h>

#include "ted/ted.h"

/* The files of a model directory a quantization writes (the weights,
 * config.yaml, two vocabularies, two SentencePiece models), each through a
 * temporary file. */
enum { TED_QUANTIZE_FILES = 6, TED_QUANTIZE_PATHS = 2 * TED_QUANTIZE_FILES };

/* What a quantization has created so far, for a signal handler to remove
 * (ted_quantize_remove_partial): each path is recorded before its file is
 * created or renamed into place, the output directory once this run has
 * created it. A run that succeeds clears it. */
typedef struct ted_quantize_record {
    char path[TED_QUANTIZE_PATHS][PATH_MAX];
    volatile sig_atomic_t used[TED_QUANTIZE_PATHS];
    char dir[PATH_MAX];
    volatile sig_atomic_t dir_created;
} ted_quantize_record;

/* The type a quantization stores the matrices as. */
typedef enum ted_quantize_dtype {
    TED_QUANTIZE_INT8,  /* I8 with one F32 scale per row */
    TED_QUANTIZE_BF16,  /* BF16: each float rounded to nearest, ties to even */
    TED_QUANTIZE_INT4,  /* the inner Linear weights U8 (int4), the other matrices I8 */
} ted_quantize_dtype;

/* How the weights file lays the matrices out. */
typedef enum ted_quantize_layout {
    TED_LAYOUT_PORTABLE,  /* row-major: any reader; loading copies what the kernels repack */
    TED_LAYOUT_GROUPS,    /* the int8 Linear weights in the products' groups (the mapped
                             layout of docs/model-format.md): loading maps the file and
                             copies nothing */
} ted_quantize_layout;

/* Writes out_dir as a copy of in_dir, a model ted loads with F32 weights,
 * whose weights file holds every matrix (Linear and embedding weights) as
 * I8 with a "NAME.scale" F32 tensor of one scale per row, symmetric:
 * scale = max |row| / 127, q = row / scale rounded to the nearest integer
 * (ties to even), 0 for a row of zeros; vectors (biases, LayerNorms) stay
 * F32. With TED_QUANTIZE_BF16 every matrix is BF16 instead (the top 16
 * bits of the float rounded to nearest, ties to even: torch's
 * .bfloat16()), without scales. With TED_QUANTIZE_INT4 the weight of
 * every Linear layer but the output layer is int4 (the kernels' layout:
 * a U8 tensor (rows, groups * 16) and "NAME.scale" F32 (rows, groups),
 * scale = max |group| / 7, q in [-7, 7]), and the other matrices
 * (embeddings, the output layer, learned positions) int8 as above.
 * In the file the F32 tensors come first, then the I8 (BF16) ones, each group
 * sorted by name, so every F32 tensor stays 4-byte aligned; the bytes are
 * those tools/ted_format.py writes for the same weights. With
 * TED_LAYOUT_GROUPS (int8 and int4 only) every int8 Linear weight (the
 * output layer's, a tied embedding's) is instead a U8 tensor of its
 * groups (ted_pack_i8_plain), these first in the file (each a multiple of
 * 64 bytes, so each starts 64-byte aligned), and the header's
 * "__metadata__" names the layout and its parameters (docs/model-format.md). config.yaml, the
 * vocabularies and the SentencePiece models are copied.
 * out_dir must not exist or be empty, and must not be in_dir. Every file is
 * written under a unique temporary name (NAME.XXXXXX, created with O_EXCL:
 * no link is followed) and renamed into place once all are whole; after a
 * failure (a full disk is named: "No space left on device") nothing of
 * them is left, nor out_dir when this run created it. */
TED_API ted_status ted_quantize_model(const char *in_dir, const char *out_dir,
                                      ted_quantize_dtype dtype, ted_quantize_layout layout,
                                      ted_error *err);

/* The same, recording in `record` (which the caller keeps, such as a
 * static one a signal handler sees) what it creates while it runs. */
TED_API ted_status ted_quantize_model_recorded(const char *in_dir, const char *out_dir,
                                               ted_quantize_dtype dtype,
                                               ted_quantize_layout layout,
                                               ted_quantize_record *record, ted_error *err);

/* Removes what `record` holds: the files, then the directory when this run
 * created it. Async-signal-safe (unlink and rmdir only), for a handler of
 * SIGINT or SIGTERM; also called after a failure. */
TED_API void ted_quantize_remove_partial(ted_quantize_record *record);

#endif
