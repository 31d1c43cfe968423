/* The bounds on what the front ends (ted translate and the other
 * commands, ted serve) take from a command line or a client: each caps the
 * memory and time that input of a hostile or mistaken size can cost, far
 * above what real input needs. Their table, with what each bounds and why
 * that value, is docs/limits.md, beside the library's (core/limits.h).
 * Macros and enum constants only. */
#ifndef FRONTEND_LIMITS_H
#define FRONTEND_LIMITS_H

#include <stddef.h>

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
