/* nn/ops/cpu/activation.c: ReLU, GELU (tanh form) and dropout, elementwise. */
#include "nn/ops/ops.h"
#include "nn/ops/dropout.h"

void gt_relu_forward(float *out, const float *inp, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = gt_relu(inp[i]);
}

void gt_relu_backward(float *dinp, const float *dout, const float *out, size_t n) {
    for (size_t i = 0; i < n; i++) dinp[i] = gt_relu_grad_from_out(out[i], dout[i]);
}

void gt_gelu_forward(float *out, const float *inp, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = gt_gelu(inp[i]);
}

void gt_gelu_backward(float *dinp, const float *dout, const float *inp, size_t n) {
    for (size_t i = 0; i < n; i++) dinp[i] = dout[i] * gt_gelu_grad(inp[i]);
}

void gt_dropout_apply(float *out, const float *inp, const uint64_t *base, int N, int C, uint32_t threshold,
                      float scale) {
    for (int n = 0; n < N; n++) {
        const uint64_t k = base[n];
        const size_t row = (size_t)n * (size_t)C;
        for (int c = 0; c < C; c++) out[row + c] = inp[row + c] * gt_dropout_factor(k, (uint64_t)c, threshold, scale);
    }
}
