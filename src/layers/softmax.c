#include "layers/softmax.h"

#include <math.h>

#include "layers/simd.h"

static float max_of(const float *x, int n)
{
    float m = -INFINITY;
    for (int i = 0; i < n; i++)
        if (x[i] > m)
            m = x[i];
    return m;
}

/* x[i] = exp(x[i] - shift) over n floats; returns their sum. The final
 * Linear + Softmax runs over the whole target vocabulary at every step of
 * beam search and sampling, so this is vectorized. */
static double exp_shifted(float *x, int n, float shift)
{
    ted_vec sum = {0};
    int i = 0;
    for (; i + TED_VEC_FLOATS <= n; i += TED_VEC_FLOATS) {
        ted_vec e = ted_vec_exp(ted_vec_load(x + i) - shift);
        ted_vec_store(x + i, e);
        sum += e;
    }
    double total = ted_vec_sum(sum);
    for (; i < n; i++) {
        x[i] = expf(x[i] - shift);
        total += x[i];
    }
    return total;
}

void ted_softmax(float *x, int n)
{
    float m = max_of(x, n);
    float inv = (float)(1.0 / exp_shifted(x, n, m));
    for (int i = 0; i < n; i++)
        x[i] *= inv;
}

void ted_log_softmax(float *x, int n)
{
    float m = max_of(x, n);
    /* Only the sum of the exponentials is needed; x keeps its logits. */
    double sum = 0.0;
    int i = 0;
    for (; i + TED_VEC_FLOATS <= n; i += TED_VEC_FLOATS)
        sum += ted_vec_sum(ted_vec_exp(ted_vec_load(x + i) - m));
    for (; i < n; i++)
        sum += expf(x[i] - m);
    float log_sum = (float)log(sum);
    for (i = 0; i < n; i++)
        x[i] = x[i] - m - log_sum;
}

/* The largest value by vectors, then the first index holding it: greedy
 * decoding scans the whole target vocabulary for every sentence at every
 * step. Like a scalar scan with '>', it skips NaN and returns 0 when no
 * value is larger than -inf. */
int ted_argmax(const float *x, int n)
{
    ted_vec best = (ted_vec){0} - __builtin_inff();
    int i = 0;
    for (; i + TED_VEC_FLOATS <= n; i += TED_VEC_FLOATS) {
        ted_vec v = ted_vec_load(x + i);
        best = ted_vec_select(v > best, v, best);
    }
    float best_value = -__builtin_inff();
    for (int lane = 0; lane < TED_VEC_FLOATS; lane++)
        if (best[lane] > best_value)
            best_value = best[lane];
    for (; i < n; i++)
        if (x[i] > best_value)
            best_value = x[i];
    for (i = 0; i < n; i++)
        if (x[i] == best_value)
            return i;
    return 0;
}
