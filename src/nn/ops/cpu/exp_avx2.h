/* nn/ops/cpu/exp_avx2.h: e^x in 8 lanes on AVX2 + FMA, for the AVX2 kernels
 * (attention_avx2.c, gelu_avx2.c). Include it only in x86-64 GCC builds;
 * callers reach it from functions compiled for avx2,fma and run those only
 * after asking the CPU (__builtin_cpu_supports).
 *
 * gt_expf_poly's (nn/ops/fast_exp.h) range reduction and degree-5 Cephes
 * polynomial, with FMA: input clamped to [-87, 88], relative error ~2 ulp,
 * NaN stays NaN. */
#ifndef GT_NN_OPS_CPU_EXP_AVX2_H
#define GT_NN_OPS_CPU_EXP_AVX2_H

#include <immintrin.h>

__attribute__((target("avx2,fma"))) static inline __m256 gt_exp8_avx2(__m256 x) {
    x = _mm256_max_ps(_mm256_set1_ps(-87.0f), x); /* the second operand when either is NaN */
    x = _mm256_min_ps(_mm256_set1_ps(88.0f), x);
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x); /* ln2 in two parts */
    r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    /* 2^n, n in [-126, 127] (a NaN lane's p is NaN whatever this is) */
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

#endif
