/* Marian's binary model format (`marian-conv`'s .bin), version 1: the
 * layout of marian-dev's src/common/binary.cpp (saveItems, loadItems),
 * little-endian, every integer as the writer's size_t (u64):
 *
 *   u64 version (1)
 *   u64 count
 *   count headers of 4 x u64: name length (with its NUL), type, shape
 *     rank, data length
 *   the count names, each NUL-terminated
 *   the count shapes, rank int32 each
 *   u64 padding, then that many zero bytes, so that the data starts at a
 *     multiple of 256 (Marian's writer: 1 to 256 bytes)
 *   each item's data, data length bytes, one after another
 *
 * An item's data length is its values' bytes rounded up to 256, as
 * Marian's allocator holds them (`special:model.yml`, appended by
 * io::addMetaToItems, is not rounded: its text and a NUL, type int8); the
 * reader takes any length from the values' bytes up to that rounding.
 * Items come sorted by name, save the config, which Marian appends last;
 * the reader sorts them and refuses a name given twice.
 *
 * Types (io/marian_table.h): float32 0x404, float16 0x402, int8 0x101,
 * uint8 0x201, and intgemm8, 0x4101 in browsermt/marian-dev (Firefox
 * Translations' `model.<pair>.intgemm.alphas.bin`) and 0x10001 in
 * Microsoft's marian-dev (pymarian's `convert --gemm-type intgemm8`). Both
 * intgemm8 codes are written by ExpressionGraphPackable::packAndSave
 * (src/tensors/cpu/expression_graph_packable.h, the same in both forks):
 * the float matrix W of shape (rows, cols) is transposed (Transpose10),
 * quantized with intgemm::Int8::PrepareA at quant_mult = 127 / max|W|
 * (round to nearest, clipped to [-127, 127]) and the float quant_mult is
 * stored right after the rows * cols int8 values; the data length counts
 * values + 4 bytes, rounded up to 256. The header keeps the untransposed
 * shape (rows, cols). packAndSave quantizes the items whose name's first
 * "_W" is 2 or 3 characters from its end (..._Wq, ..._W1, ..._Wf, ..._W)
 * and, where compressWemb holds, those whose name contains "Wemb" (the
 * embeddings), quantized the same way but not transposed: browsermt's
 * alphas files quantize Wemb, pymarian 1.12.42's convert leaves it float32
 * (seen in tests/parity/test_marian_files.py). Neither fork stores
 * intgemm's interleaved (PrepareB) layout under these codes: the loaders
 * (src/common/binary.cpp loadItems -> src/tensors/cpu/integer_common.h
 * prepareAndTransposeB) call PrepareBQuantizedTransposed on the stored
 * matrix at load time, and unquantizeWemb divides the embeddings by
 * quant_mult. browsermt's alphas files also hold each matrix's activation
 * multiplier as a float32 item `<matrix>_QuantMultA` of one value.
 *
 * The codes of matrices packed for one instruction set (intgemm8avx2,
 * intgemm8avx512, intgemm8ssse3, FBGEMM's packed8avx2/avx512/packed16)
 * and intgemm16 are refused, with the message naming the code. */
#ifndef TED_IO_MARIAN_BIN_H
#define TED_IO_MARIAN_BIN_H

#include <stddef.h>

#include "io/marian_table.h"
#include "ted/ted.h"

/* Parses a .bin file already in memory (borrowed: it must outlive `file`);
 * `name` stands for the file in messages. Every size, offset, name, shape
 * and padding is checked against the file's length before it is read, so
 * arbitrary bytes are safe. On failure `file` is left zeroed. */
ted_status ted_marian_bin_parse(const void *bytes, size_t size, const char *name,
                                ted_marian_file *file, ted_error *err);

#endif
