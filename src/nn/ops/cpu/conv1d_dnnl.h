/* nn/ops/cpu/conv1d_dnnl.h: conv1d on oneDNN's convolution primitives (the
 * route conv1d.c picks per layer shape and precision; see there).
 *
 * Same semantics as gt_conv1d_forward / gt_conv1d_backward (nn/ops/ops.h) in
 * precision p (GT_CPU_BF16: inputs, weights and the output gradient rounded
 * to bf16 (nearest even), fp32 accumulation and fp32 results; GT_CPU_FP32:
 * oneDNN's fp32 convolution), without the caller's scratch (the buffers are
 * each thread's own). Samples run in chunks of GT_CONV1D_DNNL_NB, each chunk a
 * task of the engine's pool (nn/ops/cpu/parallel.h) on a one-thread primitive
 * (oneDNN never starts its OpenMP team); the weight and bias gradients of a
 * chunk are added in chunk order, so results are the same for any thread
 * count. The activations stay (B,C,W): each chunk is reordered to the
 * primitives' (N,W,C) layout (rounded to bf16 there in bf16) and back by
 * oneDNN's jit reorders; the bias and the ReLU are applied to the (B,C,W)
 * result in fp32, and the ReLU mask and the bias gradient to the fp32 output
 * gradient, as on the im2col route.
 * Primitives are created once per (shape, chunk size, precision) and cached
 * for the life of the process; the weights are reordered to the primitives'
 * blocked layouts at every call (no copy that could go stale). Only in
 * builds with oneDNN (GT_HAVE_DNNL). */
#ifndef GT_NN_OPS_CPU_CONV1D_DNNL_H
#define GT_NN_OPS_CPU_CONV1D_DNNL_H

#include "nn/ops/cpu/gemm.h"
#include "nn/ops/ops.h"

#ifndef GT_CONV1D_DNNL_NB
#define GT_CONV1D_DNNL_NB 16 /* samples per chunk; measured on the s2p_cnn shapes (8..64) */
#endif

#ifdef GT_HAVE_DNNL
/* 1 when oneDNN has a real (not reference) kernel for all three passes of
 * this layer at precision p (GT_CPU_FP32 or GT_CPU_BF16) and batch B; creates
 * and caches the primitives. */
int gt_conv1d_dnnl_usable(gt_cpu_prec p, int B, int IC, int OC, int W, int K);
void gt_conv1d_dnnl_forward(gt_cpu_prec p, float *out, const float *inp, const float *w, const float *b, int B,
                            int IC, int OC, int W, int K, gt_act act);
/* dinp NULL: the weight and bias gradients alone; dw NULL: the input
 * gradient alone (dw and db are not touched: the route that computes the
 * weight gradient elsewhere). */
void gt_conv1d_dnnl_backward(gt_cpu_prec p, float *dinp, float *dw, float *db, const float *dout,
                             const float *inp, const float *w, const float *out, int B, int IC, int OC, int W,
                             int K, gt_act act);
#endif

#endif
