/* nn/ops/fast_exp.h: branch-free exp / sigmoid / tanh for float.
 *
 * Written once as plain C so the same arithmetic runs on host and device
 * (GT_HD), and so GCC vectorises loops that call them (AVX2 / AVX-512 with
 * -march=native) without -ffast-math: the libm expf/tanhf are scalar calls
 * and would dominate attention softmax and the LSTM cell.
 *
 * gt_expf_poly: Cephes expf (range reduction by ln2 in two parts, degree-5
 * polynomial), input clamped to [-87, 88]; relative error ~2 ulp. Never
 * returns 0 or inf (exp(-87) ~ 1.6e-38 stands in for underflow).
 * gt_sigmoidf / gt_tanhf build on it; tanh uses 1 - 2/(exp(2x)+1), absolute
 * error ~1e-7 (relative error grows only for |x| < 1e-4, where the value
 * itself is below 1e-4). */
#ifndef GT_NN_OPS_FAST_EXP_H
#define GT_NN_OPS_FAST_EXP_H

#include <stdint.h>

#include "core/hd.h" /* GT_HD */

static inline GT_HD float gt_expf_poly(float x) {
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    /* n = round(x / ln2) by the 1.5*2^23 trick (no libm call, vectorises) */
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = x - n * 0.693359375f; /* ln2 split: hi part exact in float */
    r = r + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    /* NaN input: p is NaN whatever the scale; keep the conversion and the
     * shift defined (n of a NaN would convert to INT_MIN) */
    n = n == n ? n : 0.0f;
    union {
        int32_t i;
        float f;
    } s = {.i = ((int32_t)n + 127) << 23}; /* 2^n, n in [-126, 127] */
    return p * s.f;
}

static inline GT_HD float gt_sigmoidf(float x) { return 1.0f / (1.0f + gt_expf_poly(-x)); }

static inline GT_HD float gt_tanhf(float x) { return 1.0f - 2.0f / (gt_expf_poly(2.0f * x) + 1.0f); }

#endif
