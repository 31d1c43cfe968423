/* Quantizing a float model directory to int8 weights (ted quantize). */
#ifndef TED_MODEL_QUANTIZE_H
#define TED_MODEL_QUANTIZE_H

#include "ted/ted.h"

/* Writes out_dir as a copy of in_dir, a model ted loads with F32 weights,
 * whose weights file holds every matrix (Linear and embedding weights) as
 * I8 with a "NAME.scale" F32 tensor of one scale per row, symmetric:
 * scale = max |row| / 127, q = row / scale rounded to the nearest integer
 * (ties to even), 0 for a row of zeros; vectors (biases, LayerNorms) stay
 * F32. In the file the F32 tensors come first, then the I8 ones, each group
 * sorted by name, so every F32 tensor stays 4-byte aligned; the bytes are
 * those tools/ted_format.py writes for the same weights. config.yaml, the
 * vocabularies and the SentencePiece models are copied.
 * out_dir must not exist or be empty, and must not be in_dir. */
ted_status ted_quantize_model(const char *in_dir, const char *out_dir, ted_error *err);

#endif
