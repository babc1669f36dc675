/* nn/ops/cpu/layernorm.c: LayerNorm over the last dimension (llm.c form).
 * Row reductions use 16 partial sums so GCC vectorises them (a single float
 * accumulator is a serial dependency chain without -ffast-math). */
#include <math.h>

#include "nn/ops/ops.h"

#define LN_LANES 16

/* sum_i a[i] */
static inline float row_sum(const float *a, int C) {
    float acc[LN_LANES] = {0};
    int i = 0;
    for (; i + LN_LANES <= C; i += LN_LANES)
        for (int j = 0; j < LN_LANES; j++) acc[j] += a[i + j];
    float s = 0.0f;
    for (; i < C; i++) s += a[i];
    for (int j = 0; j < LN_LANES; j++) s += acc[j];
    return s;
}

/* sum_i (a[i] - m)^2 */
static inline float row_sqdev(const float *a, float m, int C) {
    float acc[LN_LANES] = {0};
    int i = 0;
    for (; i + LN_LANES <= C; i += LN_LANES)
        for (int j = 0; j < LN_LANES; j++) {
            float d = a[i + j] - m;
            acc[j] += d * d;
        }
    float s = 0.0f;
    for (; i < C; i++) s += (a[i] - m) * (a[i] - m);
    for (int j = 0; j < LN_LANES; j++) s += acc[j];
    return s;
}

void gt_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                          const float *b, int N, int C, float eps) {
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C; // (C)
        float *o = out + (size_t)n * C;        // (C)
        float m = row_sum(x, C) / (float)C;
        float v = row_sqdev(x, m, C) / (float)C; // biased variance, as PyTorch
        float s = 1.0f / sqrtf(v + eps);
        for (int i = 0; i < C; i++) o[i] = (x[i] - m) * s * w[i] + b[i];
        mean[n] = m;
        rstd[n] = s;
    }
}

void gt_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                           const float *w, const float *mean, const float *rstd, int N, int C) {
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;  // (C)
        const float *g = dout + (size_t)n * C; // (C)
        const float m = mean[n], s = rstd[n];
        // dnorm = g * w; dx = s * (dnorm - mean(dnorm) - xhat * mean(dnorm * xhat))
        float a1[LN_LANES] = {0}, a2[LN_LANES] = {0};
        float dnorm_mean = 0.0f, dnorm_xhat_mean = 0.0f;
        int i = 0;
        for (; i + LN_LANES <= C; i += LN_LANES)
            for (int j = 0; j < LN_LANES; j++) {
                float xhat = (x[i + j] - m) * s;
                float dnorm = g[i + j] * w[i + j];
                a1[j] += dnorm;
                a2[j] += dnorm * xhat;
            }
        for (; i < C; i++) {
            float xhat = (x[i] - m) * s;
            float dnorm = g[i] * w[i];
            dnorm_mean += dnorm;
            dnorm_xhat_mean += dnorm * xhat;
        }
        for (int j = 0; j < LN_LANES; j++) {
            dnorm_mean += a1[j];
            dnorm_xhat_mean += a2[j];
        }
        for (i = 0; i < C; i++) {
            float xhat = (x[i] - m) * s;
            db[i] += g[i];
            dw[i] += g[i] * xhat;
        }
        if (!dinp) continue;
        dnorm_mean /= (float)C;
        dnorm_xhat_mean /= (float)C;
        float *dx = dinp + (size_t)n * C;
        for (i = 0; i < C; i++) {
            float xhat = (x[i] - m) * s;
            dx[i] = s * (g[i] * w[i] - dnorm_mean - xhat * dnorm_xhat_mean);
        }
    }
}
