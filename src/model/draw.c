/* Sampling's pieces: the seeded random generator and one draw from a row
 * of logits (model/decoding.h). */
#include <math.h>

#include "model/decoding.h"

ted_sampling_params ted_sampling_default_params(void)
{
    return (ted_sampling_params){.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .seed = 0};
}

/* ---- PCG32 ---------------------------------------------------------------- */

ted_rng ted_rng_seed(uint64_t seed, uint64_t stream)
{
    ted_rng rng = {0, (stream << 1) | 1u};
    ted_rng_next(&rng);
    rng.state += seed;
    ted_rng_next(&rng);
    return rng;
}

uint32_t ted_rng_next(ted_rng *rng)
{
    uint64_t old = rng->state;
    rng->state = old * 6364136223846793005ULL + rng->increment;
    uint32_t xorshifted = (uint32_t)(((old >> 18) ^ old) >> 27);
    uint32_t rotation = (uint32_t)(old >> 59);
    return (xorshifted >> rotation) | (xorshifted << ((0u - rotation) & 31u));
}

double ted_rng_uniform(ted_rng *rng)
{
    uint64_t high = ted_rng_next(rng) >> 5;  /* 27 bits */
    uint64_t low = ted_rng_next(rng) >> 6;   /* 26 bits */
    return (double)((high << 26) | low) * (1.0 / 9007199254740992.0);  /* 2^-53 */
}

/* ---- one draw ------------------------------------------------------------ */

/* The candidates of a draw into ids[0..n): the top_k most likely, in
 * order, when a cut needs them sorted; else every token, in id order. */
static int take_candidates(const float *logits, int vocab, const ted_sampling_params *p,
                           int *ids)
{
    int k = p->top_k > 0 && p->top_k < vocab ? p->top_k : vocab;
    if (k < vocab || p->top_p < 1.0f)
        return ted_top_k(logits, vocab, k, ids, NULL);
    for (int i = 0; i < vocab; i++)
        ids[i] = i;
    return vocab;
}

/* weights[i] = exp((logits[ids[i]] - max) / temperature); returns their sum. */
static double weigh(const float *logits, const ted_sampling_params *p,
                    const ted_draw_scratch *s, int n)
{
    double inverse_t = 1.0 / p->temperature, total = 0.0;
    float max = logits[s->ids[0]];
    for (int i = 1; i < n; i++)
        if (logits[s->ids[i]] > max)
            max = logits[s->ids[i]];
    for (int i = 0; i < n; i++) {
        s->weights[i] = exp(((double)logits[s->ids[i]] - max) * inverse_t);
        total += s->weights[i];
    }
    return total;
}

int ted_sample_token(const float *logits, int vocab, const ted_sampling_params *p,
                     ted_rng *rng, const ted_draw_scratch *s)
{
    int n = take_candidates(logits, vocab, p, s->ids);
    double total = weigh(logits, p, s, n);
    if (p->top_p < 1.0f) {  /* the candidates are sorted: keep the nucleus */
        double need = (double)p->top_p * total, sum = 0.0;
        int kept = 0;
        while (kept < n && sum < need)
            sum += s->weights[kept++];
        n = kept > 0 ? kept : 1;
        total = sum > 0.0 ? sum : s->weights[0];
    }
    double u = ted_rng_uniform(rng) * total, sum = 0.0;
    int last = 0;  /* the last candidate that can be drawn, should u round up to total */
    for (int i = 0; i < n; i++) {
        if (s->weights[i] == 0.0)
            continue;
        sum += s->weights[i];
        if (u < sum)
            return s->ids[i];
        last = i;
    }
    return s->ids[last];
}

