/* tests/nn/nn_test_util.h: helpers shared by the nn tests (random fills,
 * dot products in double, central finite differences). */
#ifndef GT_TESTS_NN_UTIL_H
#define GT_TESTS_NN_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "core/rng.h"

/* x (n) ~ U(-scale, scale) from Philox stream (GT_STREAM_TEST, tag). */
static inline void nt_fill(float *x, size_t n, float scale, uint32_t tag) {
    gt_rng r;
    gt_rng_init(&r, 1234, gt_stream(GT_STREAM_TEST, tag));
    for (size_t i = 0; i < n; i++) x[i] = scale * (2.0f * gt_rng_uniform(&r) - 1.0f);
}

static inline double nt_dot(const float *a, const float *b, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * (double)b[i];
    return s;
}

/* Objective L(ctx) evaluated in double from a float forward pass. */
typedef double (*nt_objective)(void *ctx);

/* Central difference (L(x_i + h) - L(x_i - h)) / 2h (h as rounded in float);
 * restores x[i]. */
static inline double nt_fd(nt_objective f, void *ctx, float *x, size_t i, float h) {
    float x0 = x[i], xp = x0 + h, xm = x0 - h;
    x[i] = xp;
    double lp = f(ctx);
    x[i] = xm;
    double lm = f(ctx);
    x[i] = x0;
    return (lp - lm) / ((double)xp - (double)xm); /* the step actually taken */
}

#endif
