/* nn/ops/cpu/attention_avx512bf16.c: the fused bf16 attention of
 * attention_vnni.h on AVX512-BF16 (see attention_avx512bf16.h).
 *
 * A tile is 16 rows of 64 bytes in memory. VT_LOAD only notes where a tile's
 * rows are (an operand is read in place, an accumulator loaded from memory is
 * updated in place, and its store back there is free); VT_ZERO starts one in
 * the tile's own rows without writing them; VT_DP keeps the 16 VNNI rows of B in zmm registers and runs,
 * for each accumulator row (four at a time), one VDPBF16PS per row of B with
 * A's pair broadcast from memory: 256 instructions of 16 lanes x 2 products
 * for one 16 x 16 x 32 tile product, the sums in the order TDPBF16PS's
 * definition gives (pair by pair, fp32). */
#include "nn/ops/cpu/attention_avx512bf16.h"

#include <string.h>

#include "core/check.h"
#include "nn/ops/cpu/gemm.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#include <stdint.h>

int gt_attn_avx512bf16_usable(int hs) {
    /* oneDNN's ISA: it honours ONEDNN_MAX_CPU_ISA and names AMX CPUs avx512_core_amx */
    return !strcmp(gt_cpu_isa_name(), "avx512_core_bf16") && hs > 0 && hs <= 64;
}

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")

typedef struct vt_tile {
    _Alignas(64) float c[16 * 16]; /* the rows of an accumulator started by VT_ZERO */
    char *p;                       /* where the rows are (VT_LOAD), or c */
    size_t ld;
    int zero; /* 1: all zero, nothing written yet */
} vt_tile;

/* A tile loaded from memory is read in place. The body stores an accumulator
 * it loaded back to the place it loaded it from (attention_vnni.h), so a
 * product into such a tile accumulates in place and the store is then a
 * no-op; a store elsewhere copies. */
static inline void vt_load(vt_tile *t, const void *p, size_t ld) {
    t->p = (char *)(uintptr_t)p;
    t->ld = ld;
    t->zero = 0;
}

static inline void vt_zero(vt_tile *t) {
    t->p = (char *)t->c;
    t->ld = 64;
    t->zero = 1;
}

/* the 16 VNNI rows of B stay in registers; four accumulator rows at a time
 * run their 16 pairs each (four independent chains), A's pair broadcast */
static inline void vt_dp(vt_tile *c, const vt_tile *a, const vt_tile *b) {
    __m512bh bk[16];
#pragma GCC unroll 16
    for (int k = 0; k < 16; k++) bk[k] = (__m512bh)_mm512_loadu_si512((const void *)(b->p + k * b->ld));
    char *dst = c->p;
    const size_t ldc = c->ld;
    const int zero = c->zero;
#pragma GCC unroll 1
    for (int m = 0; m < 16; m += 4) {
        __m512 acc[4];
        const char *am[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            acc[i] = zero ? _mm512_setzero_ps() : _mm512_loadu_ps(dst + (m + i) * ldc);
            am[i] = a->p + (m + i) * a->ld;
        }
#pragma GCC unroll 16
        for (int k = 0; k < 16; k++)
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) {
                int32_t w;
                memcpy(&w, am[i] + 4 * k, 4);
                acc[i] = _mm512_dpbf16_ps(acc[i], (__m512bh)_mm512_set1_epi32(w), bk[k]);
            }
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) _mm512_storeu_ps(dst + (m + i) * ldc, acc[i]);
    }
    c->zero = 0;
}

static inline void vt_store(const vt_tile *t, void *p, size_t ld) {
    if (p == (void *)t->p && ld == t->ld) return; /* accumulated in place */
    for (int m = 0; m < 16; m++) {
        if (t->zero)
            memset((char *)p + m * ld, 0, 64);
        else
            memcpy((char *)p + m * ld, t->p + m * t->ld, 64);
    }
}

#define VT_BEGIN vt_tile vt_[8]
#define VT_END (void)0
#define VT_ZERO(t) vt_zero(&vt_[t])
#define VT_LOAD(t, p, ld) vt_load(&vt_[t], p, ld)
#define VT_DP(c, a, b) vt_dp(&vt_[c], &vt_[a], &vt_[b])
#define VT_STORE(t, p, ld) vt_store(&vt_[t], p, ld)
#include "nn/ops/cpu/attention_vnni.h"

void gt_attn_avx512bf16_forward_bh(float *out, float *lse, const float *qkv, int b, int h, int L, int C, int NH,
                                   int q0, int q1) {
    vnni_forward_bh(out, lse, qkv, b, h, L, C, NH, q0, q1);
}

void gt_attn_avx512bf16_backward_bh(float *dqkv, const float *dout, const float *qkv, const float *out,
                                    const float *lse, int b, int h, int L, int C, int NH, int q0, int q1) {
    vnni_backward_bh(dqkv, dout, qkv, out, lse, b, h, L, C, NH, q0, q1);
}

#pragma GCC pop_options

#else /* not x86-64 GCC */

int gt_attn_avx512bf16_usable(int hs) {
    (void)hs;
    return 0;
}
void gt_attn_avx512bf16_forward_bh(float *out, float *lse, const float *qkv, int b, int h, int L, int C, int NH,
                                   int q0, int q1) {
    (void)out, (void)lse, (void)qkv, (void)b, (void)h, (void)L, (void)C, (void)NH, (void)q0, (void)q1;
    GT_ASSERT(0);
}
void gt_attn_avx512bf16_backward_bh(float *dqkv, const float *dout, const float *qkv, const float *out,
                                    const float *lse, int b, int h, int L, int C, int NH, int q0, int q1) {
    (void)dqkv, (void)dout, (void)qkv, (void)out, (void)lse, (void)b, (void)h, (void)L, (void)C, (void)NH,
        (void)q0, (void)q1;
    GT_ASSERT(0);
}

#endif
