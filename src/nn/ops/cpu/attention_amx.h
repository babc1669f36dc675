/* nn/ops/cpu/attention_amx.h: attention's fused bf16 route on the AMX tile
 * units (nn/ops/cpu/attention_amx.c); attention.c decides when it runs.
 *
 * One (batch, head) pair per call, the same arguments and the same results
 * (up to bf16 rounding) as the fp32 tile route of attention.c: q, k, v, dout
 * are rounded to bf16 once per pair into VNNI-packed copies, the score and
 * gradient products run as AMX TDPBF16PS on 16 x 16 x 32 tiles with fp32
 * accumulation, the softmax, its gradient and every accumulator stay fp32.
 * No L x L buffer: per thread O(L * head size) of packed copies plus
 * fixed-size tiles (grown once, thread-local). */
#ifndef GT_NN_OPS_CPU_ATTENTION_AMX_H
#define GT_NN_OPS_CPU_ATTENTION_AMX_H

/* 1 when the fused route can run for head size hs here:
 * oneDNN's effective ISA is avx512_core_amx (so ONEDNN_MAX_CPU_ISA below it
 * turns the route off too), the kernel granted the tile state, hs <= 64; a
 * GCC build for x86-64 (other compilers and CPUs: 0). */
int gt_attn_amx_usable(int hs);

/* Forward of pair (b, h) for the query rows [q0, q1): out rows and lse (see
 * nn/ops/attention.h for the layout). */
void gt_attn_amx_forward_bh(float *out, float *lse, const float *qkv, int b, int h, int L, int C, int NH,
                            int q0, int q1);

/* Backward of pair (b, h): assigns that pair's columns of dqkv in full. */
void gt_attn_amx_backward_bh(float *dqkv, const float *dout, const float *qkv, const float *out,
                             const float *lse, int b, int h, int L, int C, int NH, int q0, int q1);

#endif
