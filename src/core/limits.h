/* The bounds on what ted takes from a file, a command line or a client:
 * each caps the memory and time that input of a hostile or mistaken size
 * can cost, far above what real input needs. One table of them, with what
 * each bounds and why that value: docs/limits.md, which also lists the
 * bounds of the public API (ted/ted.h, ted/config.h) and those of the
 * config file (io/config.c). Macros and enum constants only, so that C
 * and C++ files of every directory may include it. */
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

/* ---- ted translate and the other commands ------------------------------ */

/* The longest input line read: a sentence never comes near it, and input
 * without line ends (-i /dev/zero) stops there instead of taking all memory. */
#define CLI_LINE_MAX_BYTES (4 << 20)

/* The largest page --format html reads: a saved page with its inline
 * scripts and styles is well under it. */
#define CLI_PAGE_MAX_BYTES ((size_t)64 << 20)

/* The largest --batch-size, --max-batch-tokens and --workers: the buffers
 * of a batch and the threads grow with them, so a mistyped value is
 * refused rather than allocated. */
#define FRONTEND_BATCH_SIZE_MAX 4096
#define FRONTEND_BATCH_TOKENS_MAX (1 << 24)
#define FRONTEND_WORKERS_MAX 256

/* ---- ted serve --------------------------------------------------------- */

/* The default of --max-request-tokens: the rows x steps one request may
 * ask for. A request of --max-queue greedy sentences at their default
 * lengths stays far below it; {"sample": true, "n_best": 1024,
 * "max_length": 512} is above it. */
#define SERVE_MAX_REQUEST_TOKENS (1 << 18)

/* The default of --max-body, the bytes of one request body (1 MiB: some
 * thousand sentences of JSON), and the largest --max-body (the body is
 * held in memory while it arrives). */
#define SERVE_MAX_BODY_BYTES (1 << 20)
#define SERVE_MAX_BODY_LIMIT (1 << 30)

/* The largest file of API keys (--api-keys): 16 MiB, some hundred
 * thousand keys. */
#define SERVE_KEYS_MAX_BYTES ((size_t)16 << 20)

/* The explorer (POST /v1/explore and /v1/beam) decodes on the HTTP thread
 * and answers with every step's attention weights, (layers, heads,
 * steps, source tokens) floats: these bound that work and that answer to
 * what one sentence of a page shows. */
enum {
    EXPLORE_MAX_SOURCE_TOKENS = 100,  /* source tokens, BOS and EOS counted */
    EXPLORE_MAX_SOURCE_BYTES = 4096,  /* the source text, before tokenizing */
    EXPLORE_MAX_STEPS = 200,          /* decoder steps (greedy and beam) */
    EXPLORE_MAX_TOP_K = 20,           /* candidates shown at each step */
    EXPLORE_MAX_BEAM = 16,            /* beam search's beam */
};

#endif
