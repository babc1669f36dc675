/* nn/ops/attention.h: multi-head self-attention, non-causal, memory linear in L.
 *
 * Flash-attention style (Dao et al. 2022, FA-2 loop order for the backward):
 * the forward walks key tiles with an online softmax and keeps only the
 * per-row log-sum-exp; the backward recomputes each score tile from q, k and
 * that log-sum-exp. No L x L matrix is ever stored: working memory is two
 * tiles of GT_ATTN_BR x GT_ATTN_BC floats plus O(L) per call, independent of B
 * and NH, so a 4096-point window costs 8x the memory of a 512-point one, not 64x.
 *
 * Layout (as produced by one linear layer C -> 3C, q/k/v stacked in that order,
 * heads contiguous inside each, head size hs = C / NH):
 *   q[b,t,h,:] = qkv[b, t, 0*C + h*hs : ...]
 *   k[b,t,h,:] = qkv[b, t, 1*C + h*hs : ...]
 *   v[b,t,h,:] = qkv[b, t, 2*C + h*hs : ...]
 *   out[b,t,h*hs + i] = sum_s softmax_s(q[b,t,h]·k[b,s,h] / sqrt(hs)) v[b,s,h,i]
 * i.e. exactly PyTorch's scaled_dot_product_attention on the (B,NH,L,hs) views,
 * with the heads re-joined along the channel axis, before the output projection.
 *
 * Follows nn/ops/ops.h conventions: nothing allocates; the caller passes
 * `scratch` of gt_attention_scratch_elems(L) floats: per engine thread two tiles
 * + L ((batch, head) pairs run on the engine threads, nn/ops/cpu/parallel.h).
 * The tile GEMMs go through gt_gemm (nn/ops/cpu/gemm.h: OpenBLAS in fp32,
 * oneDNN in bf16), one thread per (batch, head) pair. In bf16 on a CPU with
 * AMX and head size <= 64 the pairs run the fused kernels of
 * nn/ops/cpu/attention_amx.c instead, in fp32 on a CPU with AVX2 and FMA and
 * a head size that is a multiple of 16 (<= 128) those of
 * nn/ops/cpu/attention_avx2.c (GT_ATTN_CPU=gemm keeps the tile products);
 * their O(L * head size) packed copies live in per-thread buffers of their
 * own, not in `scratch`. */
#ifndef GT_NN_OPS_ATTENTION_H
#define GT_NN_OPS_ATTENTION_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Tile sizes (query rows x key columns) of the score blocks. */
#ifndef GT_ATTN_BR
#define GT_ATTN_BR 64
#endif
#ifndef GT_ATTN_BC
#define GT_ATTN_BC 256
#endif

/* Forward.
 *   out  (B,L,C)   assigned: attention output, heads concatenated
 *   lse  (B,NH,L)  assigned: log sum_s exp(score[t,s]) per row, kept for backward
 *   qkv  (B,L,3C)  input
 *   scratch        gt_attention_scratch_elems(L) floats, clobbered
 * C must be a multiple of NH. All buffers are owned by the caller. */
void gt_attention_forward(float *out, float *lse, float *scratch, const float *qkv, int B, int L,
                          int C, int NH);

/* Backward.
 *   dqkv (B,L,3C)  assigned (=): gradient w.r.t. qkv
 *   dout (B,L,C)   gradient w.r.t. out
 *   qkv, out, lse  exactly as used/produced by gt_attention_forward. */
void gt_attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv, const float *out,
                           const float *lse, int B, int L, int C, int NH);

/* The same for the query rows [q0, q0 + nq) only (keys and values: all L).
 * Forward writes only those rows of out and lse. Backward reads dout, out and
 * lse only at those rows and returns the gradient of sum over those rows of
 * dout . out: dqkv is assigned in full (its q part is zero outside the rows).
 * seq2point's last block needs only the midpoint row (q0 = L/2, nq = 1). */
void gt_attention_forward_rows(float *out, float *lse, float *scratch, const float *qkv, int B, int L,
                               int C, int NH, int q0, int nq);
void gt_attention_backward_rows(float *dqkv, float *scratch, const float *dout, const float *qkv,
                                const float *out, const float *lse, int B, int L, int C, int NH, int q0,
                                int nq);

/* Floats of `scratch` a forward or backward call needs:
 * gt_par_max_threads() * (2*BR*BC + L). */
size_t gt_attention_scratch_elems(int L);

#ifdef __cplusplus
}
#endif
#endif
