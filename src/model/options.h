/* The decoding options' table and checks (src/model/options.c; the public
 * part is ted.h's ted_option). */
#ifndef TED_MODEL_OPTIONS_H
#define TED_MODEL_OPTIONS_H

#include "ted/ted.h"

/* Every rule of the table (ted_translate_options_check_given) over the
 * decoding options `d` and `max_length` (0: the model's bound), `given`
 * as there. */
ted_status ted_check_options(const ted_model *model, const ted_decode_options *d,
                             int max_length, unsigned given, ted_error *err);

#endif
