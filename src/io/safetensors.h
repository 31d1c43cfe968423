/* The safetensors format: an 8-byte little-endian header length, a JSON
 * header (parsed with cJSON) mapping tensor names to dtype, shape and byte
 * offsets, then the raw data. The file is memory-mapped; tensors point into
 * the mapping. */
#ifndef TED_IO_SAFETENSORS_H
#define TED_IO_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ted/ted.h"

#define TED_TENSOR_MAX_DIMS 4

typedef enum ted_dtype {
    TED_DTYPE_F32,
    TED_DTYPE_F16,
    TED_DTYPE_BF16,
    TED_DTYPE_I8,   /* quantized weights, with a companion F32 scale tensor */
    TED_DTYPE_U8,   /* int4 weights, two to a byte, with F32 group scales */
} ted_dtype;

typedef struct ted_st_tensor {
    char *name;
    ted_dtype dtype;
    int ndim;
    int64_t shape[TED_TENSOR_MAX_DIMS];
    const void *data;   /* into the mapping; aligned as the file aligns it */
    size_t bytes;
} ted_st_tensor;

/* One string entry of the header's "__metadata__" object. */
typedef struct ted_st_metadata {
    char *key, *value;
} ted_st_metadata;

typedef struct ted_safetensors {
    const unsigned char *bytes;  /* the whole file */
    size_t size;
    bool mapped;                 /* bytes came from mmap (else borrowed) */
    ted_st_tensor *tensors;      /* sorted by name */
    int count;
    ted_st_metadata *metadata;   /* the string entries of "__metadata__", in header order */
    int metadata_count;
} ted_safetensors;

/* Maps `path` and parses its header. Every tensor is validated: known dtype,
 * non-negative shape whose byte count does not overflow and equals its
 * offsets' span, offsets inside the data section, no two tensors overlapping,
 * no name given twice. On failure `file` is left zeroed. */
ted_status ted_safetensors_open(const char *path, ted_safetensors *file, ted_error *err);

/* Parses a file already in memory (borrowed, not copied: it must outlive
 * `file`); `name` stands for the file in messages. Safe on arbitrary bytes.
 * On failure `file` is left zeroed. */
ted_status ted_safetensors_parse(const void *bytes, size_t size, const char *name,
                                 ted_safetensors *file, ted_error *err);

/* Fails (TED_ERR_WEIGHTS) when `tensor` holds a NaN or an infinity, naming
 * `file_name`, the tensor and the first such element ("[row, column]" for
 * a matrix). Looks at the stored bits, whatever the float dtype, and reads
 * every byte of the tensor; I8 and U8 tensors always pass. */
ted_status ted_safetensors_check_finite(const ted_st_tensor *tensor, const char *file_name,
                                        ted_error *err);

/* Drops the mapped file's pages that lie wholly inside [data, data +
 * bytes) from the resident memory (they are read from the file again if
 * touched): for weights that were copied elsewhere. Does nothing for a
 * borrowed file or a range outside the mapping. */
void ted_safetensors_release(const ted_safetensors *file, const void *data, size_t bytes);

/* The string value of `key` in the header's "__metadata__", or NULL
 * (entries whose value is not a string are not kept). */
const char *ted_safetensors_metadata(const ted_safetensors *file, const char *key);

/* The tensor called `name`, or NULL. */
const ted_st_tensor *ted_safetensors_find(const ted_safetensors *file, const char *name);

const char *ted_dtype_name(ted_dtype dtype);
size_t ted_dtype_size(ted_dtype dtype);

/* The values' byte count of a tensor of shape (ndim) and dtype into
 * *bytes, or false on a negative dimension or a size that overflows
 * size_t. For the container readers. */
bool ted_shape_bytes(const int64_t *shape, int ndim, ted_dtype dtype, size_t *bytes);

/* "[d0, d1]" of shape (ndim) into out (size), cut short to fit. */
void ted_shape_format(char *out, size_t size, const int64_t *shape, int ndim);

/* Longest text ted_shape_format writes, with its NUL: TED_TENSOR_MAX_DIMS
 * 64-bit numbers. */
#define TED_SHAPE_TEXT (TED_TENSOR_MAX_DIMS * 22 + 3)

/* Unmaps (if mapped) and frees; safe on a zeroed struct. */
void ted_safetensors_close(ted_safetensors *file);

#endif
