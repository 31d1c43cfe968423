/* The Linear layer every projection is made of: y = x W^T + b. */
#ifndef TED_LAYERS_LINEAR_H
#define TED_LAYERS_LINEAR_H

/* x (rows, in_features) -> y (rows, out_features).
 * W is (out_features, in_features), as PyTorch's nn.Linear stores it;
 * b is (out_features) or NULL. */
void ted_linear(float *y, const float *x, const float *W, const float *b, int rows,
                int in_features, int out_features);

#endif
