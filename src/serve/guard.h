/* What ted serve refuses from a request's headers, before it reads a body
 * (docs/serving.md, "What ted refuses"):
 *   - framing that two readers could take two ways (RFC 9112 sections 6.1
 *     and 6.3): Content-Length given more than once, Content-Length with
 *     Transfer-Encoding, Transfer-Encoding in HTTP/1.0 or whose final
 *     coding is not chunked (400); a coding other than chunked (501);
 *   - a Host header missing (HTTP/1.1), repeated (400), or naming another
 *     server than this one (421): the defence against DNS rebinding;
 *   - a body whose Content-Type is not application/json (415).
 * A refusal of framing or Host closes the connection. */
#ifndef TED_SERVE_GUARD_H
#define TED_SERVE_GUARD_H

#include <stdbool.h>
#include <stddef.h>

#include "serve/request.h"

struct MHD_Connection;

/* The names this server answers to. */
typedef struct serve_hosts {
    const char *listen;            /* --host: an address or a name */
    unsigned port;                 /* the port it listens on */
    const char *const *allowed;    /* --allow-host NAMEs (allowed_count); "*": every name */
    int allowed_count;
} serve_hosts;


/* Checks the framing and the Host of the request on `c`, of HTTP version
 * `version` ("HTTP/1.1"). False with the refusal filled when it is refused. */
bool serve_guard_headers(struct MHD_Connection *c, const char *version,
                         const serve_hosts *hosts, serve_refusal *no);

/* Checks that the request's body is JSON (Content-Type: application/json,
 * parameters such as charset allowed). False with a 415 when it is not. */
bool serve_guard_json(struct MHD_Connection *c, serve_refusal *no);

#endif
