/* Marian's own model files, recognized by their content: a NumPy .npz
 * (Marian's `model.npz`, io/npz.h) or Marian's binary .bin (marian-conv's
 * output, Firefox Translations' `model.<pair>.intgemm.alphas.bin`,
 * io/marian_bin.h, where the int8 layouts are described). Either becomes
 * one table of tensors (io/marian_table.h: ted_marian_file, whose
 * tensors[0 .. count) are sorted by name) and the model's YAML config.
 *
 *   ted_marian_file f;
 *   if (ted_marian_open(path, &f, &err) != TED_OK) ...
 *   const ted_marian_tensor *w = ted_marian_find(&f, "encoder_l1_self_Wq");
 *   const char *yml = ted_marian_yml(&f, NULL);
 *   ted_marian_close(&f);
 *
 * The file is memory-mapped; the tensors point into the mapping until
 * ted_marian_close. */
#ifndef TED_IO_MARIAN_FILE_H
#define TED_IO_MARIAN_FILE_H

#include <stddef.h>

#include "io/marian_table.h"
#include "ted/ted.h"

/* Maps `path` and parses it as whichever container its first bytes name
 * ("PK" a .npz, a small u64, the version, a .bin); anything else fails naming the file.
 * Every failure (TED_ERR_FORMAT for the content) is one message naming
 * the file and, where there is one, the item. On failure `file` is left
 * zeroed. */
ted_status ted_marian_open(const char *path, ted_marian_file *file, ted_error *err);

/* The same on a file already in memory (borrowed: it must outlive
 * `file`); `name` stands for the file in messages. Safe on arbitrary
 * bytes. */
ted_status ted_marian_parse(const void *bytes, size_t size, const char *name,
                            ted_marian_file *file, ted_error *err);

/* And, declared in io/marian_table.h:
 *   const ted_marian_tensor *ted_marian_find(const ted_marian_file *, const char *name);
 *   const char *ted_marian_yml(const ted_marian_file *, size_t *length);
 *   void ted_marian_close(ted_marian_file *); */

#endif
