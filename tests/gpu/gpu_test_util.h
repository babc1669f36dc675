/* tests/gpu/gpu_test_util.h: helpers for the CPU-vs-GPU tests (header-only,
 * static functions, C). Tolerance rule (style.md): |got - ref| <= atol +
 * rtol * |ref| per element, with atol given as a fraction of max |ref| of the
 * tensor so one rule serves tensors of any scale. */
#ifndef GT_TESTS_GPU_TEST_UTIL_H
#define GT_TESTS_GPU_TEST_UTIL_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/device.h"
#include "nn/ops/cuda/ops_cuda.h"
#include "test.h"

static uint64_t gtu_state = 0x9E3779B97F4A7C15ull;
static inline float gtu_uniform(void) { /* xorshift64*, U(-1, 1) */
    gtu_state ^= gtu_state >> 12;
    gtu_state ^= gtu_state << 25;
    gtu_state ^= gtu_state >> 27;
    uint64_t r = gtu_state * 2685821657736338717ull;
    return (float)((double)(r >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}
static inline float *gtu_rand(size_t n, float scale) {
    float *p = (float *)malloc((n ? n : 1) * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = scale * gtu_uniform();
    return p;
}
static inline float *gtu_dev(const float *h, size_t n) {
    float *d = gt_cuda_alloc_floats(n);
    if (h) gt_cuda_upload(d, h, n);
    return d;
}
static inline float *gtu_host(const float *d, size_t n) {
    float *h = (float *)malloc((n ? n : 1) * sizeof(float));
    cudaDeviceSynchronize();
    gt_cuda_download(h, d, n);
    return h;
}
static inline float *gtu_copy(const float *h, size_t n) {
    float *p = (float *)malloc((n ? n : 1) * sizeof(float));
    memcpy(p, h, n * sizeof(float));
    return p;
}
static inline double gtu_maxabs(const float *a, size_t n) {
    double m = 0.0;
    for (size_t i = 0; i < n; i++) m = fabs(a[i]) > m ? fabs(a[i]) : m;
    return m;
}

/* Checks got vs ref; atol_frac * max|ref| + rtol * |ref|. Prints one line. */
static inline int gtu_close(const char *what, const float *got, const float *ref, size_t n, double atol_frac, double rtol) {
    double atol = atol_frac * gtu_maxabs(ref, n);
    if (atol == 0.0) atol = 1e-30;
    size_t bad = 0, worst = 0;
    double worst_ratio = 0.0;
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - (double)ref[i]);
        double lim = atol + rtol * fabs((double)ref[i]);
        double ratio = err / lim;
        if (!(err <= lim)) bad++;
        if (!(ratio <= worst_ratio)) {
            worst_ratio = ratio;
            worst = i;
        }
    }
    printf("  %-40s n=%-8zu max err/tol %.3f at %zu (got %.7g ref %.7g)%s\n", what, n, worst_ratio, worst,
           n ? got[worst] : 0.0f, n ? ref[worst] : 0.0f, bad ? "  FAIL" : "");
    if (bad) {
        fprintf(stderr, "%s: %zu of %zu elements outside atol %.3g rtol %.3g\n", what, bad, n, atol, rtol);
        gt_test_failures++;
    }
    return bad == 0;
}

/* Relative L2 error ||got - ref|| / ||ref|| <= tol (for the loose bf16 checks). */
static inline int gtu_rel_l2(const char *what, const float *got, const float *ref, size_t n, double tol) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)got[i] - (double)ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    double r = den > 0 ? sqrt(num / den) : sqrt(num);
    int ok = r <= tol;
    printf("  %-40s n=%-8zu rel L2 err %.3e (tol %.1e)%s\n", what, n, r, tol, ok ? "" : "  FAIL");
    if (!ok) gt_test_failures++;
    return ok;
}

/* Distance in float ulps (same sign assumed; 0 for equal values). */
static inline int64_t gtu_ulps(float a, float b) {
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    if (ia < 0) ia = (int32_t)0x80000000 - ia;
    if (ib < 0) ib = (int32_t)0x80000000 - ib;
    int64_t d = (int64_t)ia - (int64_t)ib;
    return d < 0 ? -d : d;
}

#define GTU_REQUIRE_GPU()                                                                 \
    do {                                                                                  \
        if (gt_device_gpu_count() == 0) TEST_SKIP_NO_GPU("no CUDA device present");       \
    } while (0)
#endif
