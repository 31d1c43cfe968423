#include "layers/softmax.h"

#include <math.h>

static float max_of(const float *x, int n)
{
    float m = -INFINITY;
    for (int i = 0; i < n; i++)
        if (x[i] > m)
            m = x[i];
    return m;
}

void ted_softmax(float *x, int n)
{
    float m = max_of(x, n);
    float sum = 0.0f;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - m);
        sum += x[i];
    }
    float inv = 1.0f / sum;
    for (int i = 0; i < n; i++)
        x[i] *= inv;
}

void ted_log_softmax(float *x, int n)
{
    float m = max_of(x, n);
    double sum = 0.0;
    for (int i = 0; i < n; i++)
        sum += exp((double)x[i] - m);
    float log_sum = (float)log(sum);
    for (int i = 0; i < n; i++)
        x[i] = x[i] - m - log_sum;
}

int ted_argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}
