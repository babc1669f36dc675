/* nn/ops/cpu/attention_avx512bf16.h: attention's fused bf16 route on a CPU
 * with AVX512-BF16 but no AMX (Cooper Lake, AMD Zen 4 and 5); attention.c
 * decides when it runs.
 *
 * The algorithm, operands and results are those of the AMX route
 * (attention_amx.h, the body shared in attention_vnni.h): q, k, v, dout
 * rounded to bf16 once per (batch, head) pair into VNNI-paired copies, every
 * product a sequence of 16 x 16 x 32 tile products with fp32 accumulation,
 * here each one 256 VDPBF16PS on 16 fp32 accumulator registers; softmax, its
 * gradient and every accumulator fp32. No L x L buffer. */
#ifndef GT_NN_OPS_CPU_ATTENTION_AVX512BF16_H
#define GT_NN_OPS_CPU_ATTENTION_AVX512BF16_H

/* 1 when the route can run for head size hs here: oneDNN's effective ISA is
 * avx512_core_bf16 (an AMX CPU capped by ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16
 * takes it too; below that cap it is off), hs <= 64, a GCC build for x86-64. */
int gt_attn_avx512bf16_usable(int hs);

/* as gt_attn_amx_forward_bh / gt_attn_amx_backward_bh */
void gt_attn_avx512bf16_forward_bh(float *out, float *lse, const float *qkv, int b, int h, int L, int C, int NH,
                                   int q0, int q1);
void gt_attn_avx512bf16_backward_bh(float *dqkv, const float *dout, const float *qkv, const float *out,
                                    const float *lse, int b, int h, int L, int C, int NH, int q0, int q1);

#endif
