/* The bounds on what libted takes from a file or a text: each caps the
 * memory and time that input of a hostile or mistaken size can cost, far
 * above what real input needs. One table of them, with what each bounds
 * and why that value: docs/limits.md, which also lists the bounds of the
 * public API (ted/ted.h, ted/config.h), those of the config file
 * (io/config.c) and those of the front ends (frontend/limits.h). Macros
 * and enum constants only, so that C and C++ files of every directory of
 * the library may include it. */
#ifndef TED_CORE_LIMITS_H
#define TED_CORE_LIMITS_H

#include <stddef.h>
#include <stdint.h>

/* ---- Model files (libted) ---------------------------------------------- */

/* The largest vocabulary a config may declare (model.*_vocab_size): 2^24
 * ids, over 60 times the largest real vocabulary (NLLB's 256 206). */
#define VOCAB_MAX_TOKENS 16777216
/* The largest vocabulary file: comfortably holds VOCAB_MAX_TOKENS tokens. */
#define VOCAB_MAX_BYTES ((size_t)256 * 1024 * 1024)

/* The largest JSON header of a safetensors file. Real headers are a few
 * hundred kilobytes; anything near this is an attack or a corrupt length,
 * and parsing it would cost memory for nothing. */
#define SAFETENSORS_HEADER_MAX_BYTES ((uint64_t)100 << 20)
/* What that JSON may hold before cJSON builds it (about 64 bytes a value):
 * a safetensors header nests three levels (the header, a tensor's entry,
 * its shape) and describes a tensor in about 8 values, so these bounds pass
 * any real model and keep a hostile header's tree small. */
#define SAFETENSORS_HEADER_MAX_DEPTH 3
#define SAFETENSORS_HEADER_MAX_VALUES 1000000

/* The largest shortlist file: ids in text, 1 GiB holds hundreds of
 * millions. */
#define SHORTLIST_MAX_BYTES ((size_t)1 << 30)

/* The largest SentencePiece model file: real ones are under 10 MiB. */
#define SPM_MAX_BYTES ((size_t)64 << 20)

/* ---- Text (libted) ----------------------------------------------------- */

/* The longest text given to the SentencePiece library, which takes time
 * quadratic in the length of a run of characters its model does not know
 * (measurements: docs/performance.md#sentencepiece-input-bound). Real
 * sources of even a thousand tokens are a small fraction of this. */
#define SPM_MAX_TEXT_BYTES (64 * 1024)

/* The longest text the byte-level BPE tokenizer takes, and the longest
 * part of it (a word, a run of white space) it merges: merging a part
 * takes time quadratic in its length, and a word of real text is a small
 * fraction of this. */
#define BPE_MAX_TEXT_BYTES (64 * 1024)
#define BPE_MAX_WORD_BYTES 1024

#endif
