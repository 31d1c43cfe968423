/* T5's relative position bias as the learning tools show it (ted/learn.h):
 * the model's tables and the bucket rule of layers/relative_position.h,
 * the one the attention itself applies. */
#include "ted/learn.h"

#include <string.h>

#include "layers/relative_position.h"
#include "model/model.h"

bool ted_learn_position_bias_of(const ted_learn_trace *t, ted_learn_attention which,
                                int layer, ted_learn_position_bias *out)
{
    const ted_config *c = t->config;
    memset(out, 0, sizeof *out);
    if (c->positional_layout != TED_POSITIONS_RELATIVE || which == TED_LEARN_CROSS)
        return false;
    bool encoder = which == TED_LEARN_ENCODER_SELF;
    int layers = encoder ? c->encoder_layers : c->decoder_layers;
    if (layer < 0 || layer >= layers)
        return false;
    const ted_weights *w = &t->model->weights;
    const ted_position_bias *b = encoder ? &w->encoder_bias : &w->decoder_bias;
    if (!b->table)
        return false;
    *out = (ted_learn_position_bias){b->table, c->relative_buckets, c->heads,
                                     c->relative_max_distance, encoder};
    return true;
}

bool ted_learn_buckets(const ted_learn_trace *t, ted_learn_attention which, int layer,
                       int query, int keys, int *out)
{
    ted_learn_position_bias b;
    if (!ted_learn_position_bias_of(t, which, layer, &b))
        return false;
    ted_bucket_rule rule = {b.buckets, b.max_distance, b.bidirectional};
    for (int k = 0; k < keys; k++)
        out[k] = ted_relative_bucket(k - query, rule);
    return true;
}
