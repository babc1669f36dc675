/* nn/ops/cpu/attention_avx2.h: attention's fused fp32 route on AVX2 + FMA
 * (nn/ops/cpu/attention_avx2.c); attention.c decides when it runs.
 *
 * One (batch, head) pair per call, the same arguments and the same math as
 * the tile route of attention.c (flash-style: no L x L buffer, the backward
 * recomputes the scores from q, k and the log-sum-exp), with every product
 * on one register-blocked kernel (6 rows x 16 columns, broadcast A, FMA)
 * instead of OpenBLAS calls on small tiles. fp32 throughout; the sums run in
 * another order than the tile route's, so the last bits differ from it.
 * Per thread O(L * head size) of packed copies plus fixed-size tiles (grown
 * once, thread-local). */
#ifndef GT_NN_OPS_CPU_ATTENTION_AVX2_H
#define GT_NN_OPS_CPU_ATTENTION_AVX2_H

/* 1 when the fused route can run for head size hs here: a GCC build for
 * x86-64, a CPU with AVX2 and FMA (asked at run time, so a build for an
 * older baseline still runs there on the tile route), hs a multiple of 16 and
 * at most 128, and GT_ATTN_CPU not "gemm" (which keeps the tile route). */
int gt_attn_avx2_usable(int hs);

/* Forward of pair (b, h) for the query rows [q0, q1): out rows and lse (see
 * nn/ops/attention.h for the layout). */
void gt_attn_avx2_forward_bh(float *out, float *lse, const float *qkv, int b, int h, int L, int C, int NH,
                             int q0, int q1);

/* Backward of pair (b, h): assigns that pair's columns of dqkv in full. */
void gt_attn_avx2_backward_bh(float *dqkv, const float *dout, const float *qkv, const float *out,
                              const float *lse, int b, int h, int L, int C, int NH, int q0, int q1);

#endif
