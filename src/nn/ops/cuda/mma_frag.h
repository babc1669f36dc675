/* nn/ops/cuda/mma_frag.h: which lane of a warp holds which element of the
 * operands of the warp-level tensor-core instructions that attention_mma.cu
 * uses, and the per-element attention maths of its fragments, as plain
 * inline functions for the host (C) and the device (CUDA). One definition,
 * two users: the kernels index their fragments through these functions, and
 * the CPU test tests/nn/test_attention_mma_host.c emulates one warp's
 * ldmatrix and mma, and the kernels' whole tile loops, through the same
 * functions (no GPU needed).
 *
 * Notation (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point
 * type" and "ldmatrix"): lane l of the warp, g = l >> 2 (groupID), t = l & 3
 * (threadID_in_group). bf16 elements travel in pairs in 32-bit registers,
 * the lower-indexed element in the low 16 bits.
 *
 * mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32: D (16x8) = A (16x16) B (16x8) + C.
 *   A  4 registers r = 0..3, 2 elements e each (a_{2r+e}):
 *      row g + 8 (r & 1), column 2t + e + 8 (r >> 1)
 *   B  2 registers r = 0..1, 2 elements e each (b_{2r+e}):
 *      row (k) 2t + e + 8 r, column (n) g
 *   C, D  4 floats i = 0..3: row g + 8 (i >> 1), column 2t + (i & 1)
 * ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16: four 8x8 b16 matrices;
 *   lane l gives the address of row (l & 7) of matrix (l >> 3); register j
 *   of lane l receives matrix j's elements (row l >> 2, columns 2t, 2t + 1)
 *   or, with .trans, (rows 2t, 2t + 1, column l >> 2).
 *
 * The kernels' three ways of feeding an mma from a row-major bf16 tile in
 * shared memory (a 16x16 block at (r0, c0), row stride ld), each one
 * ldmatrix.x4 whose per-lane address is (r0 + row(l), c0 + col(l)):
 *   gt_ldm_a_*    the A fragment of the block (rows m, columns k), no .trans
 *   gt_ldm_bn_*   B fragments of two n-tiles from a block stored (n, k): rows
 *                 n0..n0+15 of the tile are B's columns (S = Q K^T: K's rows
 *                 are the keys); registers 0, 1 = n-tile n0, 2, 3 = n0 + 8; no .trans
 *   gt_ldm_bk_*   B fragments of two n-tiles from a block stored (k, n) (P V:
 *                 V's rows are the contraction index); registers 0, 1 =
 *                 n-tile c0, 2, 3 = c0 + 8; .trans
 * And one way from registers: the A fragment of a 16-column chunk kk of a
 * score tile held as C fragments of n-tiles 2 kk and 2 kk + 1 (FlashAttention-2's
 * P V without a shared-memory round trip): register r takes n-tile
 * 2 kk + gt_c2a_tile(r), elements gt_c2a_elem(r, 0) and gt_c2a_elem(r, 1). */
#ifndef GT_NN_OPS_CUDA_MMA_FRAG_H
#define GT_NN_OPS_CUDA_MMA_FRAG_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "nn/ops/cuda/attention_plan.h"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#define GT_MMA_FN static __host__ __device__ __forceinline__
#else
#define GT_MMA_FN static inline
#endif

/* ------------------------------------------------------------- lanes -- */
GT_MMA_FN int gt_mma_group(int lane) { return lane >> 2; }
GT_MMA_FN int gt_mma_quad(int lane) { return lane & 3; }

/* A (16x16): register r (0..3), element e (0..1) */
GT_MMA_FN int gt_mma_a_row(int lane, int r, int e) { (void)e; return gt_mma_group(lane) + 8 * (r & 1); }
GT_MMA_FN int gt_mma_a_col(int lane, int r, int e) { return 2 * gt_mma_quad(lane) + e + 8 * (r >> 1); }
/* B (16x8, k x n): register r (0..1), element e (0..1) */
GT_MMA_FN int gt_mma_b_k(int lane, int r, int e) { return 2 * gt_mma_quad(lane) + e + 8 * r; }
GT_MMA_FN int gt_mma_b_n(int lane, int r, int e) { (void)r; (void)e; return gt_mma_group(lane); }
/* C, D (16x8 fp32): element i (0..3) */
GT_MMA_FN int gt_mma_c_row(int lane, int i) { return gt_mma_group(lane) + 8 * (i >> 1); }
GT_MMA_FN int gt_mma_c_col(int lane, int i) { return 2 * gt_mma_quad(lane) + (i & 1); }

/* ldmatrix .x4: the matrix and the row of it whose address lane l gives */
GT_MMA_FN int gt_ldm_src_matrix(int lane) { return lane >> 3; }
GT_MMA_FN int gt_ldm_src_row(int lane) { return lane & 7; }
/* element e of register j of lane l is element (row, col) of matrix j */
GT_MMA_FN int gt_ldm_dst_row(int lane, int e, int trans) { return trans ? 2 * gt_mma_quad(lane) + e : lane >> 2; }
GT_MMA_FN int gt_ldm_dst_col(int lane, int e, int trans) { return trans ? lane >> 2 : 2 * gt_mma_quad(lane) + e; }

/* The kernels' per-lane ldmatrix.x4 addresses inside a 16x16 block (above) */
GT_MMA_FN int gt_ldm_a_row(int lane) { return (lane & 7) + 8 * ((lane >> 3) & 1); }
GT_MMA_FN int gt_ldm_a_col(int lane) { return 8 * (lane >> 4); }
GT_MMA_FN int gt_ldm_bn_row(int lane) { return (lane & 7) + 8 * (lane >> 4); }
GT_MMA_FN int gt_ldm_bn_col(int lane) { return 8 * ((lane >> 3) & 1); }
GT_MMA_FN int gt_ldm_bk_row(int lane) { return (lane & 7) + 8 * ((lane >> 3) & 1); }
GT_MMA_FN int gt_ldm_bk_col(int lane) { return 8 * (lane >> 4); }

/* ... and as element offsets in a row-major tile of row stride ld, for the
 * block at (r0, c0): what the kernels hand to ldmatrix */
GT_MMA_FN int gt_ldm_a_off(int lane, int r0, int c0, int ld) {
    return (r0 + gt_ldm_a_row(lane)) * ld + c0 + gt_ldm_a_col(lane);
}
GT_MMA_FN int gt_ldm_bn_off(int lane, int r0, int c0, int ld) {
    return (r0 + gt_ldm_bn_row(lane)) * ld + c0 + gt_ldm_bn_col(lane);
}
GT_MMA_FN int gt_ldm_bk_off(int lane, int r0, int c0, int ld) {
    return (r0 + gt_ldm_bk_row(lane)) * ld + c0 + gt_ldm_bk_col(lane);
}

/* C fragments -> A fragment (registers, no shared memory) */
GT_MMA_FN int gt_c2a_tile(int r) { return r >> 1; }
GT_MMA_FN int gt_c2a_elem(int r, int e) { return 2 * (r & 1) + e; }

/* ------------------------------------------- the kernels' block shape --
 * Blocks of GT_ATTN_MMA_WARPS warps own GT_ATTN_MMA_OWN rows (16 per warp:
 * queries in the forward and dQ kernels, keys in the dK/dV kernel) and stream
 * tiles of GT_ATTN_MMA_STR rows (keys, or queries); shared-memory tiles have
 * rows of gt_attn_mma_ldh(HSP) bf16 elements (HSP + 8: an odd multiple of 16
 * bytes, so the 8 rows of an ldmatrix hit 8 different bank groups). */
/* GT_ATTN_MMA_WARPS, GT_ATTN_MMA_OWN, GT_ATTN_MMA_STR: nn/ops/cuda/attention_plan.h */
GT_MMA_FN int gt_attn_mma_ldh(int hsp) { return hsp + 8; }

/* ------------------------------------------------------------- bf16 -- */
/* x rounded to the nearest bf16 (ties to even), as __float2bfloat16 (finite x) */
GT_MMA_FN float gt_bf16_round(float x) {
#if defined(__CUDA_ARCH__)
    return __bfloat162float(__float2bfloat16(x));
#else
    uint32_t u;
    memcpy(&u, &x, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&x, &u, 4);
    return x;
#endif
}

/* ------------------------------------------- attention on fragments --
 * Scores s of one C fragment (n-tile whose first column is col0 inside the
 * key tile; columns at or past nvalid are keys past the end), in log2 units
 * after multiplying by sl2 = log2(e) / sqrt(hs). mx[0] is row g's running
 * maximum, mx[1] row g + 8's (this lane's part; the kernel then takes the
 * maximum over the 4 lanes of the quad). */
GT_MMA_FN void gt_attn_frag_max(const float s[4], float sl2, int col0, int lane, int nvalid, float mx[2]) {
    for (int i = 0; i < 4; i++)
        if (col0 + gt_mma_c_col(lane, i) < nvalid) mx[i >> 1] = fmaxf(mx[i >> 1], s[i] * sl2);
}
/* Forward: s becomes p = exp2(s sl2 - m) rounded to bf16 (0 past nvalid),
 * the weights P V uses; lsum (this lane's row sums, rows g and g + 8) adds
 * exactly those rounded weights. */
GT_MMA_FN void gt_attn_frag_exp(float s[4], float sl2, int col0, int lane, int nvalid, const float m[2],
                                float lsum[2]) {
    for (int i = 0; i < 4; i++) {
        const float p = col0 + gt_mma_c_col(lane, i) < nvalid ? gt_bf16_round(exp2f(s[i] * sl2 - m[i >> 1])) : 0.0f;
        s[i] = p;
        lsum[i >> 1] += p;
    }
}
/* The rescale factor of the running sums and outputs when a row's maximum
 * moves from m_old to m_new (0 on the first tile, m_old = -inf). */
GT_MMA_FN float gt_attn_alpha(float m_old, float m_new) { return exp2f(m_old - m_new); }
/* lse (natural log) of a row from its maximum m (log2 units) and sum l */
GT_MMA_FN float gt_attn_lse(float m, float l) { return (m + log2f(l)) * 0.6931471805599453f; }
/* Backward, one score element: p = exp2(s sl2 - lse2) (lse2 = lse log2(e)),
 * ds = p (dp - D) / sqrt(hs); both 0 when the element is masked. */
GT_MMA_FN void gt_attn_elem_bwd(float s, float dp, float sl2, float lse2, float D, float scale, int valid, float *p,
                                float *ds) {
    const float pv = valid ? exp2f(s * sl2 - lse2) : 0.0f;
    *p = pv;
    *ds = pv * (dp - D) * scale;
}

#endif
