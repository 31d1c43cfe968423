/* Rows that decode on their own (model/rows.h). */
#include "model/rows.h"

#include "io/config.h"
#include "model/decoding.h"

int ted_row_samples(const ted_decode_options *o)
{
    return o->strategy == TED_DECODE_SAMPLE ? o->n_best : 1;
}

void ted_row_sentence_start(ted_row_sentence *s, const ted_model *m,
                            const ted_decode_options *o, uint64_t stream)
{
    s->samples = ted_row_samples(o);
    s->eos = ted_model_config(m)->eos_id;
    s->first = true;
    s->sampling = o->strategy == TED_DECODE_SAMPLE ? &o->sampling : NULL;
    s->rules = ted_logits_rules_on(&o->rules) ? &o->rules : NULL;
    s->rng = ted_rng_seed(o->sampling.seed, stream);
}

void ted_row_sentence_finish(ted_row_sentence *s)
{
    for (int k = 0; k < s->samples; k++)
        ted_hypothesis_total(&s->found[k]);
    ted_hypotheses_sort(s->found, s->samples);
}

ted_choice ted_row_plan(ted_row_sentence *s, int sample, int row, int *tokens,
                        float *log_probs)
{
    int at = s->first ? 0 : s->found[sample].length;
    return (ted_choice){
        .row = row,
        .draws = s->first ? s->samples : 1,
        .forced = ted_prefix_forced(s->prefix_ids, s->prefix_length, at),
        .sampling = s->sampling,
        .rng = &s->rng,
        .rules = s->rules,
        .history = s->found[sample].ids,
        .history_length = at,
        .source = s->source,
        .tokens = tokens,
        .log_probs = s->scored ? log_probs : NULL,
    };
}

ted_status ted_row_take(ted_row_sentence *s, int sample, const ted_choice *ch,
                        ted_rows_next next, int *kept, ted_error *err)
{
    int from = s->first ? 0 : sample;
    s->first = false;
    for (int k = 0; k < ch->draws; k++) {
        int j = from + k, token = ch->tokens[k];
        ted_hypothesis *h = &s->found[j];
        float log_prob = ch->log_probs ? ch->log_probs[k] : 0.0f;
        ted_status status = ted_hypothesis_append(h, &s->room[j], s->max_length, token,
                                                  log_prob, err);
        if (status)
            return status;
        if (token == s->eos || h->length >= s->max_length)
            continue;
        next.keep[*kept] = ch->row;
        next.sample[*kept] = j;
        next.tokens[(*kept)++] = token;
    }
    return TED_OK;
}

bool ted_rows_keep_all(const int *keep, int kept, int rows)
{
    if (kept != rows)
        return false;
    for (int r = 0; r < kept; r++)
        if (keep[r] != r)
            return false;
    return true;
}
