/* nn/ops/cpu/attention_vnni.h: the body of the fused bf16 attention kernels
 * on VNNI-paired operands, shared by two tile engines; included (once each)
 * by attention_amx.c (AMX tile registers and TDPBF16PS) and
 * attention_avx512bf16.c (16 x 16 fp32 tiles in AVX-512 registers and
 * VDPBF16PS), inside their target pragmas. Not a public header.
 *
 * The including file defines the tile operations on 16 rows x 64 bytes:
 *   VT_BEGIN / VT_END   the tile state taken and given back (statements)
 *   VT_ZERO(t)          accumulator tile t = 0
 *   VT_LOAD(t, p, ld)   tile t = 16 rows of 64 bytes at p, row stride ld bytes
 *   VT_DP(c, a, b)      c (16 x 16 fp32) += a (16 x 32 bf16) b (32 x 16 bf16 in pairs)
 *   VT_STORE(t, p, ld)  the 16 rows of tile t to p
 * with tile numbers 0..7. An accumulator tile the body VT_LOADs it VT_STOREs
 * back to the same place, and reads that place only through the tile in
 * between (the AVX512-BF16 engine accumulates there in place). The including
 * file gets vnni_forward_bh / vnni_backward_bh with
 * the arguments of gt_attn_amx_forward_bh / gt_attn_amx_backward_bh.
 *
 * All tiles are 16 rows x 64 bytes: A = 16 x 32 bf16, B = 32 x 16 bf16 in
 * VNNI pairs (row p holds rows 2p and 2p+1 of B interleaved, as 32-bit
 * words), C = 16 x 16 fp32. Per (batch, head) pair the operands are packed
 * once, head size padded with zeros to a multiple of 32 (hsp), keys to a
 * multiple of 32:
 *   forward   Qb  (queries, hsp) bf16         A of S = Q K^T
 *             Kt  (hsp/2, keys) pairs of K^T  B of S
 *             Vv  (keys/2, hsp) pairs of V    B of O = P V
 *   backward  Kb, Vb (keys, hsp) bf16         A of S^T = K Q^T and dP^T = V dO^T
 *             Qt, dOt (hsp/2, queries)        B of those
 *             Qv, dOv (queries/2, hsp)        B of dK = dS^T Q and dV = P^T dO
 *             KT (hsp, keys) bf16             A of dQ^T = K^T dS^T
 * The backward works on transposed score tiles (keys x queries), so P^T and
 * dS^T come out of the softmax pass in the A layout that dV and dK need and
 * dS^T in the VNNI layout dQ^T needs, with no transposes of score tiles; dQ
 * is accumulated transposed (hsp x queries, fp32) and written back once.
 * Scores are taken in the log2 domain (scale * log2 e folded into one
 * multiply) and exponentiated by an AVX-512 exp2 (degree-6 polynomial,
 * relative error ~2e-7); padded keys and queries are masked to zero. */
#ifndef GT_NN_OPS_CPU_ATTENTION_VNNI_H
#define GT_NN_OPS_CPU_ATTENTION_VNNI_H

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "nn/ops/cpu/thread_arena.h"

#define VNNI_BC 256 /* keys per block of the forward's online softmax */

/* next 64-byte aligned piece of `bytes` from *cur */
static void *carve(char **cur, size_t bytes) {
    void *r = *cur;
    *cur += (bytes + 63) / 64 * 64;
    return r;
}

static size_t carve_size(size_t bytes) { return (bytes + 63) / 64 * 64; }

/* 2^x, x <= 128; below -126 it returns 2^-126 (masked lanes are zeroed by the callers); NaN stays NaN */
static inline __m512 exp2_ps(__m512 x) {
    x = _mm512_max_ps(_mm512_set1_ps(-126.0f), x);
    const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_sub_ps(x, n); /* [-0.5, 0.5] */
    __m512 p = _mm512_set1_ps(1.5403530e-4f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3333558e-3f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6181291e-3f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5504109e-2f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022651e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314718e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

/* lanes [0, n) of 16 */
static inline __mmask16 lanes(int n) { return n >= 16 ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1); }

static inline void store_bf16x16(uint16_t *d, __m512 x) { _mm256_storeu_si256((__m256i *)(void *)d, (__m256i)_mm512_cvtneps_pbh(x)); }

/* dst (rows, hsp) bf16 <- rows [0, nvalid) of src (row stride ld, hs columns); the rest zero */
static void pack_rows(uint16_t *dst, const float *src, size_t ld, int nvalid, int rows, int hs, int hsp) {
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < hsp; i += 16) {
            const __m512 x = r < nvalid ? _mm512_maskz_loadu_ps(lanes(hs - i), src + (size_t)r * ld + i)
                                        : _mm512_setzero_ps();
            store_bf16x16(dst + (size_t)r * hsp + i, x);
        }
}

/* 16 words lo | hi << 16 of the bf16 of two fp32 vectors */
static inline __m512i pair16(__m512 lo, __m512 hi) {
    const __m512i a = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(lo));
    const __m512i b = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(hi));
    return _mm512_or_si512(a, _mm512_slli_epi32(b, 16));
}

/* dst (rows/2, hsp) VNNI pairs of rows 2p, 2p+1 of src (as pack_rows) */
static void pack_pairs(uint32_t *dst, const float *src, size_t ld, int nvalid, int rows, int hs, int hsp) {
    for (int p = 0; p < rows / 2; p++)
        for (int i = 0; i < hsp; i += 16) {
            const __mmask16 m = lanes(hs - i);
            const int r = 2 * p;
            const __m512 lo = r < nvalid ? _mm512_maskz_loadu_ps(m, src + (size_t)r * ld + i) : _mm512_setzero_ps();
            const __m512 hi = r + 1 < nvalid ? _mm512_maskz_loadu_ps(m, src + (size_t)(r + 1) * ld + i) : _mm512_setzero_ps();
            _mm512_store_si512((void *)(dst + (size_t)p * hsp + i), pair16(lo, hi));
        }
}

/* dst (hsp/2, n) with row stride ldd: the 32-bit words of the bf16 rows
 * transposed, dst[p][t] = word p of row t (n a multiple of 16) */
static void words_T(uint32_t *dst, size_t ldd, const uint16_t *rows16, int n, int hsp) {
    const int hp = hsp / 2;
    const __m512i idx = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                           _mm512_set1_epi32(hp));
    const int *w = (const int *)(const void *)rows16;
    for (int t0 = 0; t0 < n; t0 += 16)
        for (int p = 0; p < hp; p++)
            _mm512_storeu_si512((void *)(dst + (size_t)p * ldd + t0),
                                _mm512_i32gather_epi32(idx, w + (size_t)t0 * hp + p, 4));
}

#define LOG2E 1.44269504088896341f
#define LN2 0.69314718055994531f

static void vnni_forward_bh(float *out, float *lse, const float *qkv, int b, int h, int L, int C, int NH,
                            int q0, int q1) {
    const int hs = C / NH, C3 = 3 * C, hsp = (hs + 31) / 32 * 32, KC = hsp / 32, NT = hsp / 16;
    const int nq = q1 - q0, nq32 = (nq + 31) / 32 * 32, Lk = (L + 31) / 32 * 32, BC = VNNI_BC;
    const float sl2 = LOG2E / sqrtf((float)hs);
    const float *q = qkv + (size_t)b * L * C3 + h * hs, *k = q + C, *v = q + 2 * C;
    float *o = out + (size_t)b * L * C + h * hs;
    float *lse_bh = lse + ((size_t)b * NH + h) * L;

    const size_t n_qb = carve_size((size_t)nq32 * hsp * 2), n_kt = carve_size((size_t)hsp * Lk * 2),
                 n_vv = carve_size((size_t)Lk * hsp * 2), n_s = carve_size((size_t)32 * BC * 4),
                 n_p = carve_size((size_t)32 * BC * 2), n_o = carve_size((size_t)32 * hsp * 4),
                 n_k16 = carve_size((size_t)Lk * hsp * 2);
    char *cur = gt_cpu_thread_arena(n_qb + n_kt + n_vv + n_s + n_p + n_o + n_k16);
    uint16_t *Qb = carve(&cur, n_qb);
    uint32_t *Kt = carve(&cur, n_kt), *Vv = carve(&cur, n_vv);
    float *S = carve(&cur, n_s);
    uint16_t *Pb = carve(&cur, n_p);
    float *Oacc = carve(&cur, n_o);
    uint16_t *K16 = carve(&cur, n_k16);

    pack_rows(Qb, q + (size_t)q0 * C3, C3, nq, nq32, hs, hsp);
    pack_rows(K16, k, C3, L, Lk, hs, hsp); /* K rows in bf16, then their words transposed */
    words_T(Kt, Lk, K16, Lk, hsp);
    pack_pairs(Vv, v, C3, L, Lk, hs, hsp);

    /* 32 query rows at a time: two row tiles, so that each step below keeps
     * four independent accumulator tiles in flight (tmm0, 3, 5, 6; A in 1, 4;
     * B in 2, 7) */
    VT_BEGIN;
    const size_t ldq = (size_t)hsp * 2, lds = (size_t)BC * 4, ldp = (size_t)BC * 2, ldo = (size_t)hsp * 4;
    for (int r0 = 0; r0 < nq32; r0 += 32) {
        float m[32], l[32];
        for (int r = 0; r < 32; r++) {
            m[r] = -INFINITY;
            l[r] = 0.0f;
        }
        memset(Oacc, 0, (size_t)32 * hsp * 4);
        const uint16_t *qa = Qb + (size_t)r0 * hsp, *qb = qa + (size_t)16 * hsp;
        for (int j0 = 0; j0 < L; j0 += BC) {
            const int bc = L - j0 < BC ? L - j0 : BC, bc32 = (bc + 31) / 32 * 32;
            /* S (32, bc32) = Qi Kj^T, unscaled */
            for (int nt = 0; nt < bc32 / 16; nt += 2) {
                VT_ZERO(0);
                VT_ZERO(3);
                VT_ZERO(5);
                VT_ZERO(6);
                for (int kc = 0; kc < KC; kc++) {
                    const uint32_t *kt = Kt + (size_t)16 * kc * Lk + j0 + 16 * nt;
                    VT_LOAD(1, qa + 32 * kc, ldq);
                    VT_LOAD(4, qb + 32 * kc, ldq);
                    VT_LOAD(2, kt, Lk * 4);
                    VT_LOAD(7, kt + 16, Lk * 4);
                    VT_DP(0, 1, 2);
                    VT_DP(3, 4, 2);
                    VT_DP(5, 1, 7);
                    VT_DP(6, 4, 7);
                }
                VT_STORE(0, S + 16 * nt, lds);
                VT_STORE(3, S + (size_t)16 * BC + 16 * nt, lds);
                VT_STORE(5, S + 16 * nt + 16, lds);
                VT_STORE(6, S + (size_t)16 * BC + 16 * nt + 16, lds);
            }
            /* online softmax in the log2 domain (scale * log2 e > 0: the max of
             * the raw scores gives the max of the scaled ones), P in bf16 */
            const __m512 vsl2 = _mm512_set1_ps(sl2);
            for (int r = 0; r < 32; r++) {
                const float *sr = S + (size_t)r * BC;
                __m512 vm = _mm512_set1_ps(-INFINITY);
                for (int c = 0; c < bc32; c += 16) vm = _mm512_mask_max_ps(vm, lanes(bc - c), vm, _mm512_load_ps(sr + c));
                const float mt = _mm512_reduce_max_ps(vm) * sl2;
                const float mnew = mt > m[r] ? mt : m[r];
                const __m512 vmn = _mm512_set1_ps(mnew);
                __m512 vs = _mm512_setzero_ps();
                for (int c = 0; c < bc32; c += 16) {
                    const __m512 p =
                        _mm512_maskz_mov_ps(lanes(bc - c), exp2_ps(_mm512_fmsub_ps(_mm512_load_ps(sr + c), vsl2, vmn)));
                    vs = _mm512_add_ps(vs, p);
                    store_bf16x16(Pb + (size_t)r * BC + c, p);
                }
                const float alpha = exp2f(m[r] - mnew); /* 0 on the first block (m = -inf) */
                l[r] = l[r] * alpha + _mm512_reduce_add_ps(vs);
                m[r] = mnew;
                if (alpha != 1.0f) {
                    const __m512 va = _mm512_set1_ps(alpha);
                    float *orow = Oacc + (size_t)r * hsp;
                    for (int i = 0; i < hsp; i += 16) _mm512_store_ps(orow + i, _mm512_mul_ps(_mm512_load_ps(orow + i), va));
                }
            }
            /* Oacc (32, hsp) += P Vj, two head-size tiles at a time */
            for (int nt = 0; nt < NT; nt += 2) {
                float *oa = Oacc + 16 * nt, *ob = Oacc + (size_t)16 * hsp + 16 * nt;
                VT_LOAD(0, oa, ldo);
                VT_LOAD(3, ob, ldo);
                VT_LOAD(5, oa + 16, ldo);
                VT_LOAD(6, ob + 16, ldo);
                for (int kc = 0; kc < bc32 / 32; kc++) {
                    const uint32_t *vv = Vv + (size_t)((j0 + 32 * kc) / 2) * hsp + 16 * nt;
                    VT_LOAD(1, Pb + 32 * kc, ldp);
                    VT_LOAD(4, Pb + (size_t)16 * BC + 32 * kc, ldp);
                    VT_LOAD(2, vv, ldo);
                    VT_LOAD(7, vv + 16, ldo);
                    VT_DP(0, 1, 2);
                    VT_DP(3, 4, 2);
                    VT_DP(5, 1, 7);
                    VT_DP(6, 4, 7);
                }
                VT_STORE(0, oa, ldo);
                VT_STORE(3, ob, ldo);
                VT_STORE(5, oa + 16, ldo);
                VT_STORE(6, ob + 16, ldo);
            }
        }
        for (int r = 0; r < 32 && r0 + r < nq; r++) {
            const int t = q0 + r0 + r;
            const float inv = 1.0f / l[r];
            float *orow = o + (size_t)t * C;
            for (int i = 0; i < hs; i++) orow[i] = Oacc[(size_t)r * hsp + i] * inv;
            lse_bh[t] = m[r] * LN2 + logf(l[r]);
        }
    }
    VT_END;
}

static void vnni_backward_bh(float *dqkv, const float *dout, const float *qkv, const float *out,
                             const float *lse, int b, int h, int L, int C, int NH, int q0, int q1) {
    const int hs = C / NH, C3 = 3 * C, hsp = (hs + 31) / 32 * 32, KC = hsp / 32, NT = hsp / 16;
    const int nq = q1 - q0, nq32 = (nq + 31) / 32 * 32, Lk = (L + 31) / 32 * 32;
    const float scale = 1.0f / sqrtf((float)hs), sl2 = LOG2E * scale;
    const float *q = qkv + (size_t)b * L * C3 + h * hs, *k = q + C, *v = q + 2 * C;
    float *dq = dqkv + (size_t)b * L * C3 + h * hs, *dk = dq + C, *dv = dq + 2 * C;
    const float *o = out + (size_t)b * L * C + h * hs, *dob = dout + (size_t)b * L * C + h * hs;
    const float *lse_bh = lse + ((size_t)b * NH + h) * L;

    const size_t n_k = carve_size((size_t)Lk * hsp * 2), n_q = carve_size((size_t)nq32 * hsp * 2),
                 n_v = carve_size((size_t)nq32 * 4), n_dqt = carve_size((size_t)hsp * nq32 * 4),
                 n_t32 = carve_size(32 * 32 * 4), n_t16 = carve_size(32 * 32 * 2),
                 n_acc = carve_size((size_t)32 * hsp * 4);
    const size_t n_tmp = carve_size((size_t)(Lk > nq32 ? Lk : nq32) * hsp * 2);
    char *cur = gt_cpu_thread_arena(3 * n_k + 4 * n_q + 2 * n_v + n_dqt + 3 * n_t32 + 2 * n_t16 + 2 * n_acc + n_tmp);
    uint16_t *Kb = carve(&cur, n_k), *Vb = carve(&cur, n_k), *KT = carve(&cur, n_k);
    uint32_t *Qt = carve(&cur, n_q), *dOt = carve(&cur, n_q), *Qv = carve(&cur, n_q), *dOv = carve(&cur, n_q);
    float *D = carve(&cur, n_v), *ls2 = carve(&cur, n_v), *dQt = carve(&cur, n_dqt);
    float *sT = carve(&cur, n_t32), *dpT = carve(&cur, n_t32);
    uint32_t *dSv = carve(&cur, n_t32);
    uint16_t *PT = carve(&cur, n_t16), *dST = carve(&cur, n_t16);
    float *dKa = carve(&cur, n_acc), *dVa = carve(&cur, n_acc);
    uint32_t *tmp = carve(&cur, n_tmp);

    pack_rows(Kb, k, C3, L, Lk, hs, hsp);
    pack_rows(Vb, v, C3, L, Lk, hs, hsp);
    /* K^T in bf16: the halves of K's words transposed (tmp: (hsp/2, Lk) words) */
    words_T(tmp, Lk, Kb, Lk, hsp);
    for (int p = 0; p < hsp / 2; p++)
        for (int n = 0; n < Lk; n += 16) {
            const __m512i w = _mm512_loadu_si512((const void *)(tmp + (size_t)p * Lk + n));
            _mm256_storeu_si256((__m256i *)(void *)(KT + (size_t)(2 * p) * Lk + n), _mm512_cvtepi32_epi16(w));
            _mm256_storeu_si256((__m256i *)(void *)(KT + (size_t)(2 * p + 1) * Lk + n),
                                _mm512_cvtepi32_epi16(_mm512_srli_epi32(w, 16)));
        }
    /* local query index t: row q0 + t; rows >= nq are zero */
    uint16_t *rows16 = (uint16_t *)tmp;
    pack_rows(rows16, q + (size_t)q0 * C3, C3, nq, nq32, hs, hsp);
    words_T(Qt, nq32, rows16, nq32, hsp);
    pack_rows(rows16, dob + (size_t)q0 * C, C, nq, nq32, hs, hsp);
    words_T(dOt, nq32, rows16, nq32, hsp);
    pack_pairs(Qv, q + (size_t)q0 * C3, C3, nq, nq32, hs, hsp);
    pack_pairs(dOv, dob + (size_t)q0 * C, C, nq, nq32, hs, hsp);
    for (int t = 0; t < nq32; t++) {
        float acc = 0.0f;
        if (t < nq) {
            const float *ot = o + (size_t)(q0 + t) * C, *dot = dob + (size_t)(q0 + t) * C;
            __m512 va = _mm512_setzero_ps();
            for (int i = 0; i < hs; i += 16) {
                const __mmask16 m = lanes(hs - i);
                va = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, ot + i), _mm512_maskz_loadu_ps(m, dot + i), va);
            }
            acc = _mm512_reduce_add_ps(va);
        }
        D[t] = acc;
        ls2[t] = t < nq ? lse_bh[q0 + t] * LOG2E : 0.0f;
    }
    memset(dQt, 0, (size_t)hsp * nq32 * 4);

    VT_BEGIN;
    const __m512 vsl2 = _mm512_set1_ps(sl2), vscale = _mm512_set1_ps(scale);
    for (int kb0 = 0; kb0 < Lk; kb0 += 32) {
        memset(dKa, 0, (size_t)32 * hsp * 4);
        memset(dVa, 0, (size_t)32 * hsp * 4);
        for (int qb0 = 0; qb0 < nq32; qb0 += 32) {
            /* S^T = Kj Qi^T and dP^T = Vj dOi^T, (32 keys, 32 queries) each */
            for (int mi = 0; mi < 2; mi++)
                for (int ni = 0; ni < 2; ni++) {
                    VT_ZERO(0);
                    VT_ZERO(3);
                    for (int kc = 0; kc < KC; kc++) {
                        VT_LOAD(1, Kb + (size_t)(kb0 + 16 * mi) * hsp + 32 * kc, hsp * 2);
                        VT_LOAD(2, Qt + (size_t)16 * kc * nq32 + qb0 + 16 * ni, nq32 * 4);
                        VT_DP(0, 1, 2);
                        VT_LOAD(4, Vb + (size_t)(kb0 + 16 * mi) * hsp + 32 * kc, hsp * 2);
                        VT_LOAD(5, dOt + (size_t)16 * kc * nq32 + qb0 + 16 * ni, nq32 * 4);
                        VT_DP(3, 4, 5);
                    }
                    VT_STORE(0, sT + 16 * mi * 32 + 16 * ni, 128);
                    VT_STORE(3, dpT + 16 * mi * 32 + 16 * ni, 128);
                }
            /* P^T = exp(scale S^T - lse), dS^T = P^T (dP^T - D) scale; padded keys and queries zero */
            for (int r = 0; r < 32; r++) {
                const int kvalid = kb0 + r < L;
                for (int hh = 0; hh < 2; hh++) {
                    const int c = qb0 + 16 * hh;
                    const __mmask16 mk = kvalid ? lanes(nq - c) : 0;
                    float *sp = sT + r * 32 + 16 * hh, *dp = dpT + r * 32 + 16 * hh;
                    const __m512 x = _mm512_fmsub_ps(_mm512_load_ps(sp), vsl2, _mm512_load_ps(ls2 + c));
                    const __m512 p = _mm512_maskz_mov_ps(mk, exp2_ps(x));
                    const __m512 ds =
                        _mm512_mul_ps(_mm512_mul_ps(p, _mm512_sub_ps(_mm512_load_ps(dp), _mm512_load_ps(D + c))), vscale);
                    store_bf16x16(PT + r * 32 + 16 * hh, p);
                    store_bf16x16(dST + r * 32 + 16 * hh, ds);
                    _mm512_store_ps(dp, ds);
                }
            }
            /* dS^T in VNNI pairs of key rows: B of dQ^T */
            for (int p = 0; p < 16; p++)
                for (int hh = 0; hh < 2; hh++) {
                    const __m512i lo = _mm512_cvtepu16_epi32(
                        (__m256i)_mm512_cvtneps_pbh(_mm512_load_ps(dpT + (2 * p) * 32 + 16 * hh)));
                    const __m512i hi = _mm512_cvtepu16_epi32(
                        (__m256i)_mm512_cvtneps_pbh(_mm512_load_ps(dpT + (2 * p + 1) * 32 + 16 * hh)));
                    _mm512_store_si512((void *)(dSv + p * 32 + 16 * hh), _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
                }
            /* dVj += P^T dOi, dKj += dS^T Qi  (32 keys, hsp) */
            for (int mi = 0; mi < 2; mi++)
                for (int nt = 0; nt < NT; nt++) {
                    float *cv = dVa + (size_t)16 * mi * hsp + 16 * nt, *ck = dKa + (size_t)16 * mi * hsp + 16 * nt;
                    VT_LOAD(0, cv, hsp * 4);
                    VT_LOAD(1, PT + 16 * mi * 32, 64);
                    VT_LOAD(2, dOv + (size_t)(qb0 / 2) * hsp + 16 * nt, hsp * 4);
                    VT_DP(0, 1, 2);
                    VT_STORE(0, cv, hsp * 4);
                    VT_LOAD(3, ck, hsp * 4);
                    VT_LOAD(4, dST + 16 * mi * 32, 64);
                    VT_LOAD(5, Qv + (size_t)(qb0 / 2) * hsp + 16 * nt, hsp * 4);
                    VT_DP(3, 4, 5);
                    VT_STORE(3, ck, hsp * 4);
                }
            /* dQi^T (hsp, 32 queries) += Kj^T dS^T */
            for (int mt = 0; mt < NT; mt++)
                for (int ni = 0; ni < 2; ni++) {
                    float *cq = dQt + (size_t)16 * mt * nq32 + qb0 + 16 * ni;
                    VT_LOAD(0, cq, nq32 * 4);
                    VT_LOAD(1, KT + (size_t)16 * mt * Lk + kb0, Lk * 2);
                    VT_LOAD(2, dSv + 16 * ni, 128);
                    VT_DP(0, 1, 2);
                    VT_STORE(0, cq, nq32 * 4);
                }
        }
        for (int r = 0; r < 32 && kb0 + r < L; r++) {
            const size_t row = (size_t)(kb0 + r) * C3;
            for (int i = 0; i < hs; i++) {
                dk[row + i] = dKa[(size_t)r * hsp + i];
                dv[row + i] = dVa[(size_t)r * hsp + i];
            }
        }
    }
    VT_END;
    for (int t = 0; t < L; t++) {
        float *dr = dq + (size_t)t * C3;
        if (t < q0 || t >= q1) {
            memset(dr, 0, (size_t)hs * sizeof(float));
            continue;
        }
        const __m512i idx = _mm512_mullo_epi32(
            _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi32(nq32));
        for (int i = 0; i < hs; i += 16)
            _mm512_mask_storeu_ps(dr + i, lanes(hs - i),
                                  _mm512_i32gather_ps(idx, dQt + (size_t)i * nq32 + (t - q0), 4));
    }
}


#endif
