/* A source sentence made ready for the encoder (ted_prepare_source): the
 * ids of the config's tokenizer, wrapped in BOS ... EOS when the config
 * asks, with the checks every front end makes before it decodes. */
#include <stdlib.h>

#include "core/error.h"
#include "model/model.h"

bool ted_source_is_blank(const ted_model *m, int count)
{
    return count <= m->config.source_bos + m->config.source_eos;
}

ted_status ted_prepare_source(const ted_model *m, const char *text, ted_source *out,
                              ted_error *err)
{
    TED_REQUIRE(out, err);
    *out = (ted_source){0};
    TED_REQUIRE(m, err);
    TED_REQUIRE(text, err);
    const ted_config *c = ted_model_config(m);
    *out = (ted_source){0};
    ted_status s = ted_encode_source(m, text, &out->ids, &out->count, &out->unknown, err);
    if (s != TED_OK) {
        ted_source_free(out);
        return s;
    }
    if (out->count > c->max_positions) {
        int count = out->count;
        ted_source_free(out);
        return ted_fail(err, TED_ERR_INPUT, "%d tokens, more than the model's max_positions (%d)",
                        count, c->max_positions);
    }
    out->blank = ted_source_is_blank(m, out->count);
    return TED_OK;
}

void ted_source_free(ted_source *source)
{
    if (!source)
        return;
    free(source->ids);
    *source = (ted_source){0};
}
