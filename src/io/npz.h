/* NumPy's .npz, as Marian saves a model (its cnpy, src/3rd_party/cnpy/
 * cnpy.h npz_save) and as numpy.savez writes one: a zip archive whose
 * members NAME.npy are NumPy arrays, stored uncompressed. The reader:
 *
 *   - finds the end-of-central-directory record (after it, only the zip
 *     comment it declares), and its zip64 form when the counts or offsets
 *     overflow the 16- and 32-bit fields (numpy.savez of large arrays);
 *   - reads every central directory entry (zip64 extra fields included),
 *     checks that its local header agrees (signature, method, name), that
 *     no two members overlap and that each lies before the central
 *     directory, and checks each member's CRC-32;
 *   - refuses an encrypted member, a member compressed with deflate
 *     (numpy.savez_compressed: ted links no zlib; numpy.savez writes what
 *     ted reads) or with any other method, a member not named *.npy, and
 *     archives spanning several disks;
 *   - parses each member's .npy header (format versions 1 to 3: magic
 *     \x93NUMPY, the header length, a Python dict literal with 'descr',
 *     'fortran_order' and 'shape'), reads dtypes '<f4' (float32), '<f2'
 *     (float16), '|i1' and '|u1' (int8, uint8; '<' accepted for them) in C
 *     order, and requires the member's bytes after the header to be
 *     exactly the shape's.
 *
 * A member NAME.npy becomes the tensor NAME; `special:model.yml.npy` (the
 * model's YAML config, int8, the text and a NUL) becomes the config. */
#ifndef TED_IO_NPZ_H
#define TED_IO_NPZ_H

#include <stddef.h>

#include "io/marian_table.h"
#include "ted/ted.h"

/* Parses a .npz file already in memory (borrowed: it must outlive `file`);
 * `name` stands for the file in messages. Safe on arbitrary bytes. On
 * failure `file` is left zeroed. */
ted_status ted_npz_parse(const void *bytes, size_t size, const char *name,
                         ted_marian_file *file, ted_error *err);

#endif
