/* tests/nn/test_gelu_avx2.c: the AVX2 GELU passes of nn/ops/cpu/gelu_avx2.h
 * against the tanh-form GELU and its derivative in double (libm tanh), on
 * lengths with and without a tail of fewer than 8 elements; the gradient
 * also against central differences of the double GELU; the bias + GELU pass
 * against the GELU of the biased rows. The gradient's tanh form loses digits
 * where tanh is near -1 (1 - th^2 cancels, x around -3): there it is held to
 * the scalar form's own error (gt_gelu_grad, nn/ops/elementwise.h). Skips
 * (77) on a CPU without AVX2/FMA. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "nn/ops/cpu/gelu_avx2.h"
#include "nn/ops/elementwise.h" /* the scalar form */
#include "test.h"

static double gelu_d(double x) {
    const double s = sqrt(2.0 / M_PI);
    return 0.5 * x * (1.0 + tanh(s * (x + 0.044715 * x * x * x)));
}

static double gelu_grad_d(double x) {
    const double s = sqrt(2.0 / M_PI), th = tanh(s * (x + 0.044715 * x * x * x));
    return 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * s * (1.0 + 3.0 * 0.044715 * x * x);
}

int main(void) {
    const size_t n = 4099; /* 512 vectors and a tail of 3 */
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float)), *g = malloc(n * sizeof(float));
    float *dy = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        x[i] = -12.0f + 24.0f * (float)i / (float)(n - 1); /* both saturated ends and the middle */
        dy[i] = 0.5f + (float)(i % 7) * 0.25f;
    }
    if (!gt_gelu_tanh_avx2(y, x, n)) {
        printf("no AVX2 + FMA here: skipped\n");
        return 77;
    }
    double e_f = 0, e_g = 0, e_fd = 0, e_scalar = 0;
    for (size_t i = 0; i < n; i++) {
        const double ref = gelu_d(x[i]);
        TEST_CLOSE(y[i], ref, 3e-7, 1e-6);
        if (fabs(y[i] - ref) > e_f) e_f = fabs(y[i] - ref);
    }
    TEST_CHECK(gt_gelu_tanh_grad_avx2(g, dy, x, n));
    for (size_t i = 0; i < n; i++) {
        const double e = fabs(dy[i] * gt_gelu_grad(x[i]) - dy[i] * gelu_grad_d(x[i]));
        if (e > e_scalar) e_scalar = e;
    }
    for (size_t i = 0; i < n; i++) {
        const double ref = dy[i] * gelu_grad_d(x[i]);
        const double h = 1e-5, fd = dy[i] * (gelu_d(x[i] + h) - gelu_d(x[i] - h)) / (2 * h);
        TEST_CLOSE(g[i], ref, 2.0 * e_scalar + 1e-7, 1e-5);
        TEST_CLOSE(g[i], fd, 2.0 * e_scalar + 1e-6, 1e-4);
        if (fabs(g[i] - ref) > e_g) e_g = fabs(g[i] - ref);
        if (fabs(g[i] - fd) > e_fd) e_fd = fabs(g[i] - fd);
    }
    /* in place (out == dout), as the model calls it; a length with no full vector */
    for (size_t i = 0; i < 5; i++) g[i] = dy[i];
    TEST_CHECK(gt_gelu_tanh_grad_avx2(g, g, x, 5));
    for (size_t i = 0; i < 5; i++) TEST_CLOSE(g[i], dy[i] * gelu_grad_d(x[i]), 2.0 * e_scalar + 1e-7, 1e-5);
    /* bias + GELU on rows of 13 columns (a tail in every row) */
    const int rows = 7, cols = 13;
    float bias[13], pre[7 * 13], out[7 * 13];
    for (int j = 0; j < cols; j++) bias[j] = 0.1f * (float)(j - 6);
    for (int i = 0; i < rows * cols; i++) pre[i] = x[(size_t)i * 41];
    TEST_CHECK(gt_bias_gelu_tanh_avx2(out, pre, bias, (size_t)rows, cols));
    for (int i = 0; i < rows * cols; i++) {
        const float z = x[(size_t)i * 41] + bias[i % cols];
        TEST_CHECK(pre[i] == z); /* the biased pre-activation is kept */
        TEST_CLOSE(out[i], gelu_d(z), 3e-7, 1e-6);
    }
    TEST_CHECK(e_scalar < 1e-5);
    printf("gelu avx2: max |err| %.3g, gradient %.3g (vs FD %.3g; the scalar form's %.3g)\n", e_f, e_g, e_fd,
           e_scalar);
    free(x), free(y), free(g), free(dy);
    TEST_DONE();
}
