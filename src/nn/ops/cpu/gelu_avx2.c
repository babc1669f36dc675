/* nn/ops/cpu/gelu_avx2.c: the tanh-form GELU in 8 lanes (see gelu_avx2.h).
 * A tail of fewer than 8 elements goes through masked loads and stores, so
 * every element takes the same arithmetic. */
#include "nn/ops/cpu/gelu_avx2.h"

#include <pthread.h>

#include "nn/ops/elementwise.h" /* GT_GELU_SCALE */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#include "nn/ops/cpu/exp_avx2.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_ok;

static void gelu_init(void) {
    __builtin_cpu_init();
    g_ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

static int usable(void) {
    pthread_once(&g_once, gelu_init);
    return g_ok;
}

#pragma GCC push_options
#pragma GCC target("avx2,fma")

/* lanes [0, n) of 8 set */
static inline __m256i lanes(size_t n) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), idx);
}

/* tanh(u) for u = s (x + 0.044715 x^3) */
static inline __m256 tanh_u(__m256 x) {
    const __m256 x2 = _mm256_mul_ps(x, x);
    const __m256 u = _mm256_mul_ps(_mm256_set1_ps(GT_GELU_SCALE),
                                   _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(0.044715f), x2), x, x));
    const __m256 e = gt_exp8_avx2(_mm256_add_ps(u, u));
    return _mm256_sub_ps(_mm256_set1_ps(1.0f), _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f))));
}

static inline __m256 gelu8(__m256 x) {
    const __m256 half_x = _mm256_mul_ps(_mm256_set1_ps(0.5f), x);
    return _mm256_fmadd_ps(half_x, tanh_u(x), half_x);
}

static inline __m256 gelu_grad8(__m256 x) {
    const __m256 th = tanh_u(x), one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(0.5f);
    const __m256 sech2 = _mm256_fnmadd_ps(th, th, one);
    const __m256 du = _mm256_mul_ps(_mm256_set1_ps(GT_GELU_SCALE),
                                    _mm256_fmadd_ps(_mm256_set1_ps(3.0f * 0.044715f), _mm256_mul_ps(x, x), one));
    const __m256 b = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(half, x), sech2), du);
    return _mm256_fmadd_ps(half, _mm256_add_ps(one, th), b);
}

static void gelu_run(float *out, const float *inp, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, gelu8(_mm256_loadu_ps(inp + i)));
    if (i < n) {
        const __m256i m = lanes(n - i);
        _mm256_maskstore_ps(out + i, m, gelu8(_mm256_maskload_ps(inp + i, m)));
    }
}

static void gelu_grad_run(float *out, const float *dout, const float *inp, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(dout + i), gelu_grad8(_mm256_loadu_ps(inp + i))));
    if (i < n) {
        const __m256i m = lanes(n - i);
        const __m256 g = _mm256_mul_ps(_mm256_maskload_ps(dout + i, m), gelu_grad8(_mm256_maskload_ps(inp + i, m)));
        _mm256_maskstore_ps(out + i, m, g);
    }
}

static void bias_gelu_run(float *out, float *pre, const float *bias, size_t rows, int cols) {
    for (size_t r = 0; r < rows; r++) {
        float *p = pre + r * (size_t)cols, *o = out + r * (size_t)cols;
        int j = 0;
        for (; j + 8 <= cols; j += 8) {
            const __m256 x = _mm256_add_ps(_mm256_loadu_ps(p + j), _mm256_loadu_ps(bias + j));
            _mm256_storeu_ps(p + j, x);
            _mm256_storeu_ps(o + j, gelu8(x));
        }
        if (j < cols) {
            const __m256i m = lanes((size_t)(cols - j));
            const __m256 x = _mm256_add_ps(_mm256_maskload_ps(p + j, m), _mm256_maskload_ps(bias + j, m));
            _mm256_maskstore_ps(p + j, m, x);
            _mm256_maskstore_ps(o + j, m, gelu8(x));
        }
    }
}

#pragma GCC pop_options

int gt_gelu_tanh_avx2(float *out, const float *inp, size_t n) {
    if (!usable()) return 0;
    gelu_run(out, inp, n);
    return 1;
}

int gt_gelu_tanh_grad_avx2(float *out, const float *dout, const float *inp, size_t n) {
    if (!usable()) return 0;
    gelu_grad_run(out, dout, inp, n);
    return 1;
}

int gt_bias_gelu_tanh_avx2(float *out, float *pre, const float *bias, size_t rows, int cols) {
    if (!usable()) return 0;
    bias_gelu_run(out, pre, bias, rows, cols);
    return 1;
}

#else /* not x86-64 GCC: the callers' scalar forms */

int gt_gelu_tanh_avx2(float *out, const float *inp, size_t n) {
    (void)out, (void)inp, (void)n;
    return 0;
}

int gt_gelu_tanh_grad_avx2(float *out, const float *dout, const float *inp, size_t n) {
    (void)out, (void)dout, (void)inp, (void)n;
    return 0;
}

int gt_bias_gelu_tanh_avx2(float *out, float *pre, const float *bias, size_t rows, int cols) {
    (void)out, (void)pre, (void)bias, (void)rows, (void)cols;
    return 0;
}
#endif
