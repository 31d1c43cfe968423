/* A model that ted serve serves: what the server (serve/server.h), its
 * routes between languages (serve/languages.h) and the explorer
 * (serve/explore.h) know of it. */
#ifndef TED_SERVE_MODEL_H
#define TED_SERVE_MODEL_H

#include "ted/ted.h"

typedef struct serve_model {
    const char *name;
    const ted_model *model;
    const char *dir;  /* its directory (the explorer's examples: DIR/test.en), or NULL */
} serve_model;

#endif
