/* nn/ops/cpu/loss.c: masked mean squared error. */
#include "nn/ops/ops.h"

static double mask_sum(const float *mask, size_t n) {
    if (!mask) return (double)n;
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += mask[i];
    return s;
}

float gt_mse_masked_forward(const float *pred, const float *y, const float *mask, size_t n) {
    double acc = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)pred[i] - (double)y[i];
        acc += (mask ? mask[i] : 1.0) * d * d;
    }
    double cnt = mask_sum(mask, n);
    return (float)(acc / (cnt > 1.0 ? cnt : 1.0));
}

void gt_mse_masked_backward(float *dpred, const float *pred, const float *y, const float *mask,
                            size_t n, float dloss) {
    double cnt = mask_sum(mask, n);
    float scale = (float)(2.0 * (double)dloss / (cnt > 1.0 ? cnt : 1.0));
    for (size_t i = 0; i < n; i++) {
        float d = scale * (pred[i] - y[i]);
        dpred[i] = mask ? d * mask[i] : d;
    }
}
