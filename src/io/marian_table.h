/* The tensors of a Marian model file, whichever container held them
 * (io/marian_file.h opens one; io/npz.c and io/marian_bin.c parse the two
 * containers into this table). Each tensor reuses safetensors' record
 * (name, dtype, shape, data into the file, bytes) and adds what Marian's
 * types carry beyond it: the type code as stored, whether the matrix is
 * stored transposed, and the int8 quantization multiplier. */
#ifndef TED_IO_MARIAN_TABLE_H
#define TED_IO_MARIAN_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/safetensors.h"
#include "ted/ted.h"

/* Marian's type codes (marian-dev src/common/types.h: a class bit plus the
 * element size): what a .bin header's `type` holds. A .npz member gets the
 * code of its NumPy dtype ('<f4' -> 0x404, '|i1' -> 0x101, ...). */
#define TED_MARIAN_INT8 0x101u
#define TED_MARIAN_UINT8 0x201u
#define TED_MARIAN_FLOAT16 0x402u
#define TED_MARIAN_FLOAT32 0x404u
/* int8 matrices quantized for intgemm: browsermt/marian-dev's code (class
 * 0x4000, what Firefox Translations ships) and Microsoft's marian-dev code
 * (class 0x10000, what `pymarian convert --gemm-type intgemm8` writes). */
#define TED_MARIAN_INTGEMM8_BROWSERMT 0x4101u
#define TED_MARIAN_INTGEMM8 0x10001u

/* The name of the item holding the model's YAML config. */
#define TED_MARIAN_YML_NAME "special:model.yml"

typedef struct ted_marian_tensor {
    /* name, dtype, shape and the values: `st.data` points into the file,
     * `st.bytes` counts the values alone (no multiplier, no padding). The
     * data sits where the container puts it: a .bin item at a multiple of
     * 256 bytes from the start of the file when every item before it is
     * padded as Marian pads them, a .npz member anywhere (its offset
     * depends on the lengths of the zip and NumPy headers before it), so
     * a reader that needs alignment copies. */
    ted_st_tensor st;
    uint64_t type;     /* Marian's type code (TED_MARIAN_*) */
    /* An intgemm8 matrix (either code) is stored transposed: for the shape
     * (rows, cols) (rows: the product of every dimension but the last),
     * cols rows of rows int8 values each, the element (r, c) at
     * data[c * rows + r]. Except a name containing "Wemb" (the
     * embeddings), stored in the shape's order. */
    bool transposed;
    /* intgemm8 only (else 0): the float that follows the values in the
     * file, 127 / max|W| of the float matrix W; a stored value q stands for
     * q / quant_mult. Finite and positive (checked). */
    float quant_mult;
} ted_marian_tensor;

typedef enum ted_marian_container {
    TED_MARIAN_NPZ = 1,  /* NumPy zip of .npy members */
    TED_MARIAN_BIN,      /* Marian's binary model format, version 1 */
} ted_marian_container;

typedef struct ted_marian_file {
    ted_marian_container container;
    const unsigned char *bytes;  /* the whole file */
    size_t size;
    bool mapped;                 /* bytes came from mmap (else borrowed) */
    /* Every item of the file, the config item too, sorted by name (byte
     * order, as strcmp): iterate tensors[0 .. count). */
    ted_marian_tensor *tensors;
    int count;
    /* The text of special:model.yml up to its terminating NUL, in a buffer
     * of its own with a NUL after yml_length bytes; NULL when the file
     * holds no config. */
    char *yml;
    size_t yml_length;
} ted_marian_file;

/* The tensor called `name`, or NULL. */
const ted_marian_tensor *ted_marian_find(const ted_marian_file *file, const char *name);

/* The model's YAML config text (NUL-terminated), or NULL when the file
 * holds none; `*length` (if not NULL) gets its length. */
const char *ted_marian_yml(const ted_marian_file *file, size_t *length);

/* Unmaps (if mapped) and frees; safe on a zeroed struct. */
void ted_marian_close(ted_marian_file *file);

/* For the container parsers, after reading the items into `file` (its
 * bytes, size and tensors) with `status`: on success sorts file->tensors by
 * name, refuses a name given twice, and copies the config text out of
 * special:model.yml (an int8 or uint8 vector: the text, then NULs only);
 * on any failure closes the file. Returns `status` or the first failure,
 * which names `file_name` and the item. */
ted_status ted_marian_table_finish(ted_marian_file *file, ted_status status,
                                   const char *file_name, ted_error *err);

#endif
