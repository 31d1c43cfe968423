#include "layers/linear.h"

#include <cblas.h>
#include <string.h>

void ted_linear(float *y, const float *x, const float *W, const float *b, int rows,
                int in_features, int out_features)
{
    float beta = 0.0f;
    if (b) {
        for (int r = 0; r < rows; r++)
            memcpy(y + (size_t)r * out_features, b, sizeof(float) * out_features);
        beta = 1.0f;
    }
    /* One row is a matrix-vector product: sgemm with M = 1 re-packs W and
     * runs several times slower than sgemv. */
    if (rows == 1)
        cblas_sgemv(CblasRowMajor, CblasNoTrans, out_features, in_features, 1.0f, W,
                    in_features, x, 1, beta, y, 1);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, out_features, in_features,
                    1.0f, x, in_features, W, in_features, beta, y, out_features);
}
