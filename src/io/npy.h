/* One NumPy .npy array (a member of a .npz, io/npz.h): the magic
 * \x93NUMPY, format version 1.x (a u16 header length), 2.x or 3.x (u32),
 * then a header that is a Python dict literal,
 *
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (512, 2048), }
 *
 * padded with spaces and ended by a newline, then the values. */
#ifndef TED_IO_NPY_H
#define TED_IO_NPY_H

#include <stddef.h>

#include "io/marian_table.h"
#include "ted/ted.h"

/* Parses the `size` bytes of an array into t (its dtype, Marian type code,
 * shape, data pointing into `bytes`, bytes); t->st.name names it in
 * messages, with `file_name`. Refuses a header that is not that dict (each
 * key once, no other key, strings without escapes), a dtype other than
 * '<f4', '<f2', '|i1', '|u1', Fortran order, more than
 * TED_TENSOR_MAX_DIMS dimensions, and values of another size than the
 * shape's. */
ted_status ted_npy_parse(const unsigned char *bytes, size_t size, const char *file_name,
                         ted_marian_tensor *t, ted_error *err);

#endif
