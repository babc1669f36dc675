/* nn/ops/cpu/loss.c: masked training losses (MSE, L1); per-element math in
 * nn/ops/elementwise.h, shared with the CUDA twin (nn/ops/cuda/reduce.cu). */
#include <math.h>
#include <string.h>

#include "nn/ops/elementwise.h"
#include "nn/ops/ops.h"

static const char *const k_loss_names[GT_LOSS_KIND_COUNT] = {"mse", "l1", "mse+l1"};

const char *gt_loss_kind_name(gt_loss_kind kind) {
    return (unsigned)kind < GT_LOSS_KIND_COUNT ? k_loss_names[kind] : "?";
}

int gt_loss_kind_parse(const char *name) {
    for (int k = 0; k < GT_LOSS_KIND_COUNT; k++)
        if (name && strcmp(name, k_loss_names[k]) == 0) return k;
    return -1;
}

static double mask_sum(const float *mask, size_t n) {
    if (!mask) return (double)n;
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += mask[i];
    return s;
}

double gt_loss_sum_grad(gt_loss_kind kind, float *dpred, const float *pred, const float *y, const float *mask,
                        size_t n, float coef) {
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        const float w = mask ? mask[i] : 1.0f;
        if (w == 0.0f) {
            if (dpred) dpred[i] = 0.0f;
            continue;
        }
        const float d = pred[i] - y[i];
        sum += (double)w * gt_loss_term((int)kind, (double)d);
        if (dpred) dpred[i] = w * gt_loss_grad((int)kind, d) * coef;
    }
    return sum;
}

float gt_loss_masked_forward(gt_loss_kind kind, const float *pred, const float *y, const float *mask, size_t n) {
    double cnt = mask_sum(mask, n);
    return (float)(gt_loss_sum_grad(kind, NULL, pred, y, mask, n, 0.0f) / (cnt > 1.0 ? cnt : 1.0));
}

void gt_loss_masked_backward(gt_loss_kind kind, float *dpred, const float *pred, const float *y,
                             const float *mask, size_t n, float dloss) {
    double cnt = mask_sum(mask, n);
    gt_loss_sum_grad(kind, dpred, pred, y, mask, n, (float)((double)dloss / (cnt > 1.0 ? cnt : 1.0)));
}

float gt_mse_masked_forward(const float *pred, const float *y, const float *mask, size_t n) {
    return gt_loss_masked_forward(GT_LOSS_MSE, pred, y, mask, n);
}

void gt_mse_masked_backward(float *dpred, const float *pred, const float *y, const float *mask,
                            size_t n, float dloss) {
    gt_loss_masked_backward(GT_LOSS_MSE, dpred, pred, y, mask, n, dloss);
}

double gt_gated_loss_sum(float *dpred, const float *pred, const float *y, const float *mask, const float *thr,
                         size_t n, int A, float coef) {
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        const float *p = pred + i * 2 * (size_t)A;
        float *dp = dpred ? dpred + i * 2 * (size_t)A : NULL;
        for (int a = 0; a < A; a++) {
            const size_t j = i * (size_t)A + (size_t)a;
            const float w = mask ? mask[j] : 1.0f;
            if (w == 0.0f) {
                if (dp) dp[a] = dp[A + a] = 0.0f;
                continue;
            }
            const float z = y[j] > thr[a] ? 1.0f : 0.0f, r = p[a], s = p[A + a];
            const double d = (double)r - (double)y[j];
            const double bce = (s > 0.0f ? (double)s : 0.0) - (double)z * s + log1p(exp(-fabs((double)s)));
            sum += (double)w * ((double)z * d * d + bce);
            if (dp) {
                dp[a] = w * z * 2.0f * (r - y[j]) * coef;
                dp[A + a] = w * (1.0f / (1.0f + expf(-s)) - z) * coef;
            }
        }
    }
    return sum;
}
