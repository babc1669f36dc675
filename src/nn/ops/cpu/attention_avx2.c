/* nn/ops/cpu/attention_avx2.c: fused flash-style attention in fp32 on AVX2 +
 * FMA (see attention_avx2.h; the math is attention.c's).
 *
 * Every product is C (rows, 16) (+)= A (rows, K) B (K, 16): a 6 x 16 register
 * block (12 accumulators), A broadcast one element at a time, B one 16-float
 * row per step of K. Per (batch, head) pair the operands that must be read as
 * 16-float rows along the other axis are packed once (keys and queries padded
 * with zeros to a multiple of 16; head size hs a multiple of 16):
 *   forward   Kt  (keys/16, hs, 16) K^T in strips     B of S = Q K^T
 *             Vp  (hs/16, L, 16) V in column strips  B of O = P V
 *   backward  Qt, dOt (queries/16, hs, 16)           B of S^T = K Q^T, dP^T = V dO^T
 * Q, K rows and dout rows are read in place (row strides 3C and C).
 * Forward: per block of 24 query rows the whole score rows (24 x keys, O(L)),
 * then an exact softmax (max, exp, sum) and O = P V / l: no running rescale.
 * Backward (key tiles outer, query tiles inner, as attention.c), on
 * transposed score tiles (keys x queries) so that P^T and dS^T come out of
 * the softmax pass as the A operands of dV = P^T dO and dK = dS^T Q; dS for
 * dQ = dS K is one transpose of that tile. exp: nn/ops/cpu/exp_avx2.h. */
#include "nn/ops/cpu/attention_avx2.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

#include "nn/ops/cpu/exp_avx2.h"
#include "nn/ops/cpu/thread_arena.h"

#define AV_MR 6  /* rows of the register block */
#define AV_FR 24 /* query rows per forward block: 4 register blocks share each B strip in L1 */
#define AV_FK 128 /* keys per chunk of the forward's O = P V, B chunk 8 KiB (L1) */
#ifndef AV_BK
#define AV_BK 64 /* keys per backward tile */
#endif
#ifndef AV_BQ
#define AV_BQ 64 /* queries per backward tile, a multiple of 16 */
#endif

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_ok;

static void avx2_init(void) {
    const char *e = getenv("GT_ATTN_CPU");
    __builtin_cpu_init();
    g_ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && !(e && strcmp(e, "gemm") == 0);
}

int gt_attn_avx2_usable(int hs) {
    pthread_once(&g_once, avx2_init);
    return g_ok && hs > 0 && hs % 16 == 0 && hs <= 128;
}

static size_t carve_size(size_t n_floats) { return (n_floats * sizeof(float) + 63) / 64 * 64; }

/* next 64-byte aligned piece of n_floats floats from *cur */
static float *carve(char **cur, size_t n_floats) {
    float *r = (float *)(void *)*cur;
    *cur += carve_size(n_floats);
    return r;
}

static int round16(int n) { return (n + 15) / 16 * 16; }

#pragma GCC push_options
#pragma GCC target("avx2,fma")

/* C (R, 16) = (acc ? C : 0) + A (R, K) B (K, 16); row strides lda, ldb, ldc.
 * The accumulators are named variables, not an array: GCC keeps an array of
 * fewer rows than its size on the stack (a store and a load per FMA). */
#define MK_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
static inline __attribute__((always_inline)) void mk_rows(const int R, int K, const float *A, size_t lda,
                                                          const float *B, size_t ldb, float *Cm, size_t ldc,
                                                          int acc) {
#define MK_DECL(r) __m256 c##r##0 = _mm256_setzero_ps(), c##r##1 = _mm256_setzero_ps();
    MK_ROWS(MK_DECL)
#define MK_LOAD(r)                                                                                                    \
    if (R > r && acc) {                                                                                                \
        c##r##0 = _mm256_loadu_ps(Cm + r * ldc);                                                                        \
        c##r##1 = _mm256_loadu_ps(Cm + r * ldc + 8);                                                                    \
    }
    MK_ROWS(MK_LOAD)
    for (int k = 0; k < K; k++) {
        const __m256 b0 = _mm256_loadu_ps(B + k * ldb), b1 = _mm256_loadu_ps(B + k * ldb + 8);
#define MK_FMA(r)                                                                                                     \
    if (R > r) {                                                                                                       \
        const __m256 a = _mm256_broadcast_ss(A + r * lda + k);                                                         \
        c##r##0 = _mm256_fmadd_ps(a, b0, c##r##0);                                                                     \
        c##r##1 = _mm256_fmadd_ps(a, b1, c##r##1);                                                                     \
    }
        MK_ROWS(MK_FMA)
    }
#define MK_STORE(r)                                                                                                   \
    if (R > r) {                                                                                                       \
        _mm256_storeu_ps(Cm + r * ldc, c##r##0);                                                                        \
        _mm256_storeu_ps(Cm + r * ldc + 8, c##r##1);                                                                    \
    }
    MK_ROWS(MK_STORE)
#undef MK_DECL
#undef MK_LOAD
#undef MK_FMA
#undef MK_STORE
}

/* C (M, 16) (+)= A (M, K) B (K, 16), rows in blocks of AV_MR */
static void gemm16(int M, int K, const float *A, size_t lda, const float *B, size_t ldb, float *Cm, size_t ldc,
                   int acc) {
    int r = 0;
    for (; r + AV_MR <= M; r += AV_MR) mk_rows(AV_MR, K, A + r * lda, lda, B, ldb, Cm + r * ldc, ldc, acc);
    A += r * lda;
    Cm += r * ldc;
    switch (M - r) {
    case 5: mk_rows(5, K, A, lda, B, ldb, Cm, ldc, acc); break;
    case 4: mk_rows(4, K, A, lda, B, ldb, Cm, ldc, acc); break;
    case 3: mk_rows(3, K, A, lda, B, ldb, Cm, ldc, acc); break;
    case 2: mk_rows(2, K, A, lda, B, ldb, Cm, ldc, acc); break;
    case 1: mk_rows(1, K, A, lda, B, ldb, Cm, ldc, acc); break;
    default: break;
    }
}

static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline float hmax8(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* row s[0, np) of raw scores, valid [0, n), np a multiple of 16: s = exp(scale
 * (s - max)) on the valid entries, 0 on the padding; returns the raw max, the
 * sum in *sum */
static float softmax_row(float *s, int n, int np, float scale, float *sum) {
    for (int j = n; j < np; j++) s[j] = -INFINITY;
    __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0;
    for (int j = 0; j < np; j += 16) {
        m0 = _mm256_max_ps(m0, _mm256_loadu_ps(s + j));
        m1 = _mm256_max_ps(m1, _mm256_loadu_ps(s + j + 8));
    }
    const float m = hmax8(_mm256_max_ps(m0, m1));
    const __m256 vm = _mm256_set1_ps(m), vs = _mm256_set1_ps(scale);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0;
    for (int j = 0; j < np; j += 16) {
        const __m256 p0 = gt_exp8_avx2(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(s + j), vm), vs));
        const __m256 p1 = gt_exp8_avx2(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(s + j + 8), vm), vs));
        _mm256_storeu_ps(s + j, p0);
        _mm256_storeu_ps(s + j + 8, p1);
        if (j + 16 <= n) {
            a0 = _mm256_add_ps(a0, p0);
            a1 = _mm256_add_ps(a1, p1);
        }
    }
    float tail = 0.0f;
    for (int j = n / 16 * 16; j < np; j++) {
        if (j >= n) s[j] = 0.0f;
        tail += s[j];
    }
    *sum = hsum8(_mm256_add_ps(a0, a1)) + tail;
    return m;
}

/* the 8 x 8 block at src (row stride lds) transposed to dst (row stride ldd) */
static inline void transpose8(float *dst, size_t ldd, const float *src, size_t lds) {
    __m256 r[8], t[8];
    for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src + i * lds);
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        _mm256_storeu_ps(dst + i * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
        _mm256_storeu_ps(dst + (i + 4) * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
    }
}

/* dst (n16/16, hs, 16): dst[j][d][u] = src[(16 j + u) ld + d] for rows < n, else 0 */
static void pack_t(float *dst, const float *src, size_t ld, int n, int n16, int hs) {
    float pad[8 * 8];
    for (int t0 = 0; t0 < n16; t0 += 8) {
        float *col = dst + (size_t)(t0 / 16) * hs * 16 + t0 % 16;
        for (int d = 0; d < hs; d += 8) {
            const float *blk = src + (size_t)t0 * ld + d;
            size_t lds = ld;
            if (t0 + 8 > n) { /* rows past n read as zeros */
                for (int i = 0; i < 8; i++)
                    for (int c = 0; c < 8; c++) pad[i * 8 + c] = t0 + i < n ? blk[(size_t)i * ld + c] : 0.0f;
                blk = pad;
                lds = 8;
            }
            transpose8(col + (size_t)d * 16, 16, blk, lds);
        }
    }
}

void gt_attn_avx2_forward_bh(float *out, float *lse, const float *qkv, int b, int h, int L, int C, int NH,
                             int q0, int q1) {
    const int hs = C / NH, C3 = 3 * C, Lp = round16(L);
    const float scale = 1.0f / sqrtf((float)hs);
    const float *q = qkv + (size_t)b * L * C3 + h * hs, *k = q + C, *v = q + 2 * C;
    float *o = out + (size_t)b * L * C + h * hs;
    float *lse_bh = lse + ((size_t)b * NH + h) * L;
    const size_t n_kt = (size_t)hs * Lp, n_vp = (size_t)hs * L, n_s = (size_t)AV_FR * Lp;
    char *cur = gt_cpu_thread_arena(carve_size(n_kt) + carve_size(n_vp) + carve_size(n_s));
    float *Kt = carve(&cur, n_kt), *Vp = carve(&cur, n_vp), *S = carve(&cur, n_s);
    pack_t(Kt, k, C3, L, Lp, hs);
    for (int c = 0; c < hs / 16; c++)
        for (int s = 0; s < L; s++) memcpy(Vp + ((size_t)c * L + s) * 16, v + (size_t)s * C3 + c * 16, 64);

    for (int t0 = q0; t0 < q1; t0 += AV_FR) {
        const int R = q1 - t0 < AV_FR ? q1 - t0 : AV_FR;
        const float *qr = q + (size_t)t0 * C3;
        float inv[AV_FR];
        for (int j = 0; j < Lp / 16; j++) gemm16(R, hs, qr, C3, Kt + (size_t)j * hs * 16, 16, S + j * 16, Lp, 0);
        for (int r = 0; r < R; r++) {
            float sum;
            const float m = softmax_row(S + (size_t)r * Lp, L, Lp, scale, &sum);
            lse_bh[t0 + r] = m * scale + logf(sum);
            inv[r] = 1.0f / sum;
        }
        float *orow = o + (size_t)t0 * C;
        for (int c = 0; c < hs / 16; c++)
            for (int s0 = 0; s0 < L; s0 += AV_FK)
                gemm16(R, L - s0 < AV_FK ? L - s0 : AV_FK, S + s0, Lp, Vp + ((size_t)c * L + s0) * 16, 16,
                       orow + c * 16, C, s0 > 0);
        for (int r = 0; r < R; r++) {
            const __m256 vi = _mm256_set1_ps(inv[r]);
            for (int i = 0; i < hs; i += 8)
                _mm256_storeu_ps(orow + (size_t)r * C + i, _mm256_mul_ps(vi, _mm256_loadu_ps(orow + (size_t)r * C + i)));
        }
    }
}

/* P^T = exp(scale S^T - lse) in st, dS^T = P^T (dP^T - D) scale in dpt;
 * (bk, nq16) tiles of row stride AV_BQ, lse and D per column */
static void softmax_grad_tile(float *st, float *dpt, const float *lq, const float *dq, int bk, int nq16,
                              float scale) {
    const __m256 vs = _mm256_set1_ps(scale);
    for (int r = 0; r < bk; r++) {
        float *sr = st + (size_t)r * AV_BQ, *dr = dpt + (size_t)r * AV_BQ;
        for (int j = 0; j < nq16; j += 8) {
            const __m256 p = gt_exp8_avx2(_mm256_fmsub_ps(_mm256_loadu_ps(sr + j), vs, _mm256_loadu_ps(lq + j)));
            const __m256 g = _mm256_sub_ps(_mm256_loadu_ps(dr + j), _mm256_loadu_ps(dq + j));
            _mm256_storeu_ps(sr + j, p);
            _mm256_storeu_ps(dr + j, _mm256_mul_ps(_mm256_mul_ps(p, g), vs));
        }
    }
}

/* dst (bq, AV_BK stride) = src (bk, AV_BQ stride)^T */
static void transpose_tile(float *dst, const float *src, int bk, int bq) {
    const int bk8 = bk / 8 * 8, bq8 = bq / 8 * 8;
    for (int s = 0; s < bk8; s += 8)
        for (int i = 0; i < bq8; i += 8) transpose8(dst + (size_t)i * AV_BK + s, AV_BK, src + (size_t)s * AV_BQ + i, AV_BQ);
    for (int i = 0; i < bq; i++) /* edges */
        for (int s = i < bq8 ? bk8 : 0; s < bk; s++) dst[(size_t)i * AV_BK + s] = src[(size_t)s * AV_BQ + i];
}

void gt_attn_avx2_backward_bh(float *dqkv, const float *dout, const float *qkv, const float *out,
                              const float *lse, int b, int h, int L, int C, int NH, int q0, int q1) {
    const int hs = C / NH, C3 = 3 * C, NC = hs / 16, nq = q1 - q0, Nqp = round16(nq);
    const float scale = 1.0f / sqrtf((float)hs);
    const float *q = qkv + (size_t)b * L * C3 + h * hs, *k = q + C, *v = q + 2 * C;
    float *dq = dqkv + (size_t)b * L * C3 + h * hs, *dk = dq + C, *dv = dq + 2 * C;
    const float *o = out + (size_t)b * L * C + h * hs, *dob = dout + (size_t)b * L * C + h * hs;
    const float *lse_bh = lse + ((size_t)b * NH + h) * L;
    const size_t n_t = (size_t)hs * Nqp, n_tile = (size_t)AV_BK * AV_BQ;
    char *cur = gt_cpu_thread_arena(2 * carve_size(n_t) + 2 * carve_size((size_t)Nqp) + 3 * carve_size(n_tile));
    float *Qt = carve(&cur, n_t), *dOt = carve(&cur, n_t), *lq = carve(&cur, (size_t)Nqp);
    float *Dq = carve(&cur, (size_t)Nqp), *ST = carve(&cur, n_tile), *dPT = carve(&cur, n_tile);
    float *dS = carve(&cur, n_tile);
    pack_t(Qt, q + (size_t)q0 * C3, C3, nq, Nqp, hs);
    pack_t(dOt, dob + (size_t)q0 * C, C, nq, Nqp, hs);
    for (int i = 0; i < Nqp; i++) { /* padded queries: P^T = 1, dS^T = 0, and no product reads them */
        float acc = 0.0f;
        if (i < nq)
            for (int d = 0; d < hs; d++) acc += o[(size_t)(q0 + i) * C + d] * dob[(size_t)(q0 + i) * C + d];
        Dq[i] = acc;
        lq[i] = i < nq ? lse_bh[q0 + i] : 0.0f;
    }
    for (int t = 0; t < L; t++) {
        memset(dq + (size_t)t * C3, 0, hs * sizeof(float));
        memset(dk + (size_t)t * C3, 0, hs * sizeof(float));
        memset(dv + (size_t)t * C3, 0, hs * sizeof(float));
    }
    for (int s0 = 0; s0 < L; s0 += AV_BK) {
        const int bk = L - s0 < AV_BK ? L - s0 : AV_BK;
        const float *kc = k + (size_t)s0 * C3, *vc = v + (size_t)s0 * C3;
        for (int i0 = 0; i0 < nq; i0 += AV_BQ) {
            const int bq = nq - i0 < AV_BQ ? nq - i0 : AV_BQ, nq16 = round16(bq);
            const float *qr = q + (size_t)(q0 + i0) * C3, *dor = dob + (size_t)(q0 + i0) * C;
            for (int j = 0; j < nq16 / 16; j++) { /* S^T = K_c Q_r^T, dP^T = V_c dO_r^T */
                const size_t off = (size_t)(i0 / 16 + j) * hs * 16;
                gemm16(bk, hs, kc, C3, Qt + off, 16, ST + j * 16, AV_BQ, 0);
                gemm16(bk, hs, vc, C3, dOt + off, 16, dPT + j * 16, AV_BQ, 0);
            }
            softmax_grad_tile(ST, dPT, lq + i0, Dq + i0, bk, nq16, scale);
            for (int c = 0; c < NC; c++) { /* dV_c += P^T dO_r;  dK_c += dS^T Q_r */
                gemm16(bk, bq, ST, AV_BQ, dor + c * 16, C, dv + (size_t)s0 * C3 + c * 16, C3, 1);
                gemm16(bk, bq, dPT, AV_BQ, qr + c * 16, C3, dk + (size_t)s0 * C3 + c * 16, C3, 1);
            }
            transpose_tile(dS, dPT, bk, bq); /* dQ_r += dS K_c */
            for (int c = 0; c < NC; c++)
                gemm16(bq, bk, dS, AV_BK, kc + c * 16, C3, dq + (size_t)(q0 + i0) * C3 + c * 16, C3, 1);
        }
    }
}

#pragma GCC pop_options

#else /* not x86-64 GCC: the tile route of attention.c */

int gt_attn_avx2_usable(int hs) {
    (void)hs;
    return 0;
}

void gt_attn_avx2_forward_bh(float *out, float *lse, const float *qkv, int b, int h, int L, int C, int NH,
                             int q0, int q1) {
    (void)out, (void)lse, (void)qkv, (void)b, (void)h, (void)L, (void)C, (void)NH, (void)q0, (void)q1;
    GT_ASSERT(0);
}

void gt_attn_avx2_backward_bh(float *dqkv, const float *dout, const float *qkv, const float *out,
                              const float *lse, int b, int h, int L, int C, int NH, int q0, int q1) {
    (void)dqkv, (void)dout, (void)qkv, (void)out, (void)lse, (void)b, (void)h, (void)L, (void)C, (void)NH;
    (void)q0, (void)q1;
    GT_ASSERT(0);
}
#endif
