/* A directory as Marian saves a model or Firefox Translations ships a
 * language pair, presented as a ted model with no conversion step:
 *
 *   model*.npz or model*.bin    the weights and model.yml (io/marian_file.h)
 *   vocab*.spm                  one SentencePiece model for both sides, or
 *   srcvocab*.spm, trgvocab*.spm  one per side; its ids are the model's
 *                               (</s> 0, <unk> 1, no <s>)
 *   decoder.yml, *.decoder.yml  optional: beam-size and normalize
 *   lex*.s2t.bin                optional: a binary lexical shortlist, used
 *                               (io/shortlist_bin.h)
 *
 * A file name with a language pair, as Firefox Translations names its
 * files ("model.esen.intgemm.alphas.bin"), names the model's languages
 * (source_lang es, target_lang en).
 *
 * model.yml (type: transformer, post-norm dan, ReLU or swish, tied
 * embeddings, Transformer or SSRU decoder layers) becomes the ted_config a
 * config.yaml of the same model would give (tensor_names: marian, the
 * decoder starting from a zero vector, Marian's positions and beam
 * search, at most 3 x the source tokens, <unk> never generated), and every
 * tensor goes under the name tensor_names marian gives it, as float32: a
 * Marian matrix (in, out) transposed to a Linear's (out, in), an int8
 * matrix (intgemm8, either code) dequantized (q / its multiplier). */
#ifndef TED_IO_MARIAN_MODEL_H
#define TED_IO_MARIAN_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "io/marian_tensors.h"
#include "io/config.h"
#include "ted/ted.h"

#define TED_MARIAN_NAME_SIZE 256

/* What a Marian directory holds: its files' names, relative to it. */
typedef struct ted_marian_files {
    char model[TED_MARIAN_NAME_SIZE];
    char src_spm[TED_MARIAN_NAME_SIZE];
    char tgt_spm[TED_MARIAN_NAME_SIZE];
    char decoder_yml[TED_MARIAN_NAME_SIZE];  /* "": none */
    char shortlist[TED_MARIAN_NAME_SIZE];    /* "": none */
} ted_marian_files;

/* The model, as ted loads it. */
typedef struct ted_marian_model {
    ted_marian_files files;
    ted_config config;
    ted_marian_weights weights;
} ted_marian_model;

/* Whether `dir` holds a Marian model (a model*.npz or model*.bin), and
 * then its files into *files; a directory with two models, or a model but
 * no vocabulary, fails (TED_ERR_ARGUMENT) naming them. *found is false,
 * and TED_OK returned, when there is none. */
ted_status ted_marian_find_files(const char *dir, ted_marian_files *files, bool *found,
                                 ted_error *err);

/* Reads the model of `files` in `dir`: config and tensors. A model.yml
 * ted cannot run, a tensor missing or of another shape fails naming the
 * file and the key or tensor. On failure nothing is left to free. */
ted_status ted_marian_model_load(const char *dir, const ted_marian_files *files,
                                 ted_marian_model *model, ted_error *err);

#endif
