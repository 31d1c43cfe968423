#include "layers/softmax.h"

#include <math.h>

#include "kernels/kernels.h"

void ted_softmax(float *x, int n)
{
    float m = ted_max(x, n);
    ted_scale(x, n, (float)(1.0 / ted_exp_shifted(x, n, m)));
}

void ted_log_softmax(float *x, int n)
{
    float m = ted_max(x, n);
    /* Only the sum of the exponentials is needed; x keeps its logits. */
    float log_sum = (float)log(ted_sum_exp_shifted(x, n, m));
    for (int i = 0; i < n; i++)
        x[i] = x[i] - m - log_sum;
}

void ted_log_softmax_terms_at(const float *values, const int *ids, int count, int n,
                              float *max, float *log_sum)
{
    *max = ted_max(values, count);
    *log_sum = (float)log(ted_sum_exp_shifted_at(values, ids, count, n, *max));
}
