/* nn/ops/cpu/activation.c: ReLU and GELU (tanh form), elementwise. */
#include "nn/ops/ops.h"

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
