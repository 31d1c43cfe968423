/* API keys (ted serve --api-keys FILE): a key per line, each with an
 * optional limit of requests per minute. docs/serving.md, "API keys". */
#ifndef TED_SERVE_KEYS_H
#define TED_SERVE_KEYS_H

#include "frontend/limits.h"
#include "ted/ted.h"

typedef struct serve_keys serve_keys;

/* Reads FILE whole (ted_read_file: a regular file of at most
 * SERVE_KEYS_MAX_BYTES; a FIFO or a device is refused at once, never
 * read): per line a key (printable ASCII, no space) and optionally a
 * whole number of requests per minute, from 1; blank lines and lines
 * beginning with # are left out. TED_ERR_INPUT names the file and the line
 * at fault; a file without a key is refused. */
ted_status serve_keys_load(const char *path, serve_keys **out, ted_error *err);
void serve_keys_free(serve_keys *keys);

typedef enum serve_key_verdict {
    SERVE_KEY_OK,
    SERVE_KEY_MISSING,  /* no key given */
    SERVE_KEY_INVALID,  /* not a key of the file */
    SERVE_KEY_LIMITED,  /* over its requests per minute */
} serve_key_verdict;

/* Whether a request with `key` (NULL: none) is let through at time `now`
 * (seconds), and counts it. A key's limit is a bucket of N requests that
 * refills at N a minute; when it is empty, `*retry_after` says in how many
 * whole seconds the next request is let through. Thread-safe. */
serve_key_verdict serve_keys_check(serve_keys *keys, const char *key, double now,
                                   int *retry_after);

#endif
