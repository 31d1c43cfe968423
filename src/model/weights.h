/* Binding the tensors of a model's safetensors file to its weight pointers. */
#ifndef TED_MODEL_WEIGHTS_H
#define TED_MODEL_WEIGHTS_H

#include "model/model.h"

/* Fills m->weights from m->file as m->config describes it: every tensor is
 * found by the name the config's tensor_names scheme gives it and checked
 * for shape; F32 and I8 tensors are used in place, F16/BF16 converted (an
 * I8 matrix with its "NAME.scale" tensor, kernels.h's ted_matrix); a tensor
 * the config does not use is an error. `path` names the file in messages.
 * Then every float Linear weight is copied into panels (m->panels), which
 * the products use, and its pages of the mapped file are let go (not for
 * a model loaded unpacked, m->unpacked). */
ted_status ted_weights_bind(ted_model *m, const char *path, ted_error *err);

/* *inner = whether `data` is where the float weight of one of m's Linear
 * layers begins (a packed Q/K/V projection's as a whole), the output layer
 * excepted: the matrices ted quantize --dtype int4 stores as int4. Fails
 * only without memory for the list. */
ted_status ted_weights_inner_linear(const ted_model *m, const void *data, bool *inner,
                                   ted_error *err);

#endif
