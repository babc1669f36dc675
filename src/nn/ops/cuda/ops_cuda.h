/* nn/ops/cuda/ops_cuda.h: the CUDA twins of the CPU ops (nn/ops/ops.h,
 * attention.h, lstm.h) and the small device helpers they need.
 *
 * Conventions (llm.c): gt_X_cuda has the arguments of the CPU gt_X plus a
 * cudaStream_t, every pointer is DEVICE memory unless its name ends in
 * _host, forward assigns, backward accumulates (+=) parameter gradients and
 * assigns activation gradients, nothing allocates (scratch is passed in; its
 * size comes from a *_cuda_scratch_elems() function, which may differ from the
 * CPU one). All calls are asynchronous on `stream` except those documented as
 * returning a host value (they synchronise the stream).
 *
 * Precision of the matrix products (gt_cuda_set_precision, per process):
 *   GT_PREC_FP32  strict fp32 (CUBLAS_COMPUTE_32F: no TF32)
 *   GT_PREC_TF32  fp32 storage, TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32)
 *   GT_PREC_BF16  fp32 storage and master weights, products with bf16 inputs
 *                 on the tensor cores and fp32 accumulation
 *                 (CUBLAS_COMPUTE_32F_FAST_16BF)
 *   GT_PREC_FP16  the same with fp16 inputs (CUBLAS_COMPUTE_32F_FAST_16F):
 *                 needs loss scaling (gt_cuda_unscale_check)
 * Elementwise ops, reductions, LayerNorm and the LSTM cell run in fp32 (sums
 * of losses and norms in double) in every mode; attention too, except in
 * GT_PREC_BF16, where its products run on the bf16 tensor cores (below).
 *
 * One cuBLAS handle per process (created on first use, bound to the current
 * device; cublasSetStream before each call, so calls from one thread on any
 * stream are ordered on that stream); the helpers that return a host value share one small device
 * scratch. Not thread-safe: one model per thread, as the CPU engine. */
#ifndef GT_NN_OPS_CUDA_OPS_CUDA_H
#define GT_NN_OPS_CUDA_OPS_CUDA_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
/* nn/ops/ops.h has no extern "C" guard of its own: give its declarations C
 * linkage here (math.h first, outside the block). */
#include <math.h>
extern "C" {
#include "nn/ops/ops.h"
#else
#include "nn/ops/ops.h"
#endif
#include "nn/ops/cuda/sizes.h" /* static inline only: no linkage to give */
#include "nn/ops/cuda/attention_plan.h" /* likewise */

typedef enum gt_cuda_prec {
    GT_PREC_FP32 = 0,
    GT_PREC_BF16 = 1,
    GT_PREC_FP16 = 2,
    GT_PREC_TF32 = 3,
} gt_cuda_prec;

void gt_cuda_set_precision(gt_cuda_prec prec);
gt_cuda_prec gt_cuda_get_precision(void);
const char *gt_cuda_prec_name(gt_cuda_prec prec);

/* ---------------------------------------------------------- memory -- */
/* cudaMalloc of n floats (zeroed, the zeroing finished on return); ends the
 * job with a clear message when the device is out of memory. gt_cuda_free
 * accepts NULL. */
float *gt_cuda_alloc_floats(size_t n);
/* The same, zeroed by cudaMemsetAsync on `stream` (ordered before the
 * stream's later work; no host synchronisation). */
float *gt_cuda_alloc_floats_on(size_t n, cudaStream_t stream);
void gt_cuda_free(void *p);
/* Synchronous copies of n floats (host <-> device), complete on return. */
void gt_cuda_upload(float *dev, const float *host, size_t n);
void gt_cuda_download(float *host, const float *dev, size_t n);
/* Bytes allocated through gt_cuda_alloc_floats so far in this process (cumulative). */
size_t gt_cuda_allocated_bytes(void);
/* Free and total device memory (cudaMemGetInfo), bytes. */
void gt_cuda_mem_info(size_t *free_bytes, size_t *total_bytes);

/* ------------------------------------------------------------ linear -- */
void gt_linear_forward_cuda(float *out, const float *inp, const float *w, const float *b, int N, int C,
                            int OC, gt_act act, cudaStream_t stream);
/* scratch (N*OC) needed only for act = GT_ACT_RELU (dout masked there). */
void gt_linear_backward_cuda(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                             const float *w, const float *out, float *scratch, int N, int C, int OC,
                             gt_act act, cudaStream_t stream);

/* ------------------------------------------------------------ conv1d --
 * im2col + GEMM in chunks of GT_CONV1D_CUDA_NB samples; scratch holds
 * gt_conv1d_cuda_scratch_elems(IC,OC,W,K) floats (independent of B). */
size_t gt_conv1d_cuda_scratch_elems(int IC, int OC, int W, int K);
void gt_conv1d_forward_cuda(float *out, float *scratch, const float *inp, const float *w, const float *b,
                            int B, int IC, int OC, int W, int K, gt_act act, cudaStream_t stream);
void gt_conv1d_backward_cuda(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                             const float *w, const float *out, float *scratch, int B, int IC, int OC,
                             int W, int K, gt_act act, cudaStream_t stream);

/* ---------------------------------------------------- conv1d on cuDNN --
 * nn/ops/cuda/conv_cudnn.cu: the same layer (layouts (B,C,W), 'same'
 * padding: pad_l = (K-1)/2 zeros on the left, K-1-pad_l on the right) through
 * cuDNN's convolution API on 2-D descriptors of height 1, with algorithms
 * fixed at creation, all deterministic (a run is bit-identical to a rerun):
 *   forward   cudnnConvolutionBiasActivationForward (bias and ReLU fused),
 *             CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM; where cuDNN
 *             refuses the fused call, cudnnConvolutionForward with the same
 *             algorithm and a bias + activation kernel;
 *   dinput    cudnnConvolutionBackwardData, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
 *   dweight   cudnnConvolutionBackwardFilter, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
 *             beta = 1 (accumulates);
 *   dbias     a fixed-order block sum per output channel (no atomics).
 * An object serves one layer shape at any batch B <= max_batch; its buffers
 * are pieces of `area` (gt_conv1d_cudnn_area_elems(max_batch, IC, OC, W, K)
 * floats, nn/ops/cuda/sizes.h), owned by the caller and shareable between
 * objects used one after the other on one stream: nothing allocates after
 * creation, so the calls can be captured into a CUDA graph. */
/* 1 when the build has cuDNN (GT_HAVE_CUDNN): the LSTM and conv cuDNN paths exist. */
int gt_cuda_cudnn_available(void);
typedef struct gt_conv1d_cudnn gt_conv1d_cudnn;
/* Make the object on `stream` (its cuDNN handle: gt_cuda_cudnn). prec picks
 * the math: FP32 plain FMA, the other modes let cuDNN use TF32 tensor cores.
 * Returns NULL, with a warning saying why, when the build has no cuDNN or a
 * workspace cuDNN asks for exceeds the area's bound; creation only (host
 * queries, no stream work). */
gt_conv1d_cudnn *gt_conv1d_cudnn_create(int max_batch, int IC, int OC, int W, int K, gt_cuda_prec prec,
                                        float *area, size_t n_area, cudaStream_t stream);
void gt_conv1d_cudnn_free(gt_conv1d_cudnn *c); /* NULL allowed; the area stays the caller's */
/* out (B,OC,W) = act(conv(inp (B,IC,W), w (OC,IC,K)) + b (OC)); b may be NULL. */
void gt_conv1d_cudnn_forward(gt_conv1d_cudnn *c, float *out, const float *inp, const float *w, const float *b,
                             int B, gt_act act);
/* dinp (B,IC,W) assigned (NULL: not needed); dw (OC,IC,K), db (OC) accumulated
 * (+=; db may be NULL); dout (B,OC,W); out: the forward's output (read for
 * GT_ACT_RELU). */
void gt_conv1d_cudnn_backward(gt_conv1d_cudnn *c, float *dinp, float *dw, float *db, const float *dout,
                              const float *inp, const float *w, const float *out, int B, gt_act act);
/* 1 while the forward runs the fused bias + activation call (0 after cuDNN
 * refused it once: the unfused way from then on). */
int gt_conv1d_cudnn_fused(const gt_conv1d_cudnn *c);

/* ------------------------------------------------------- activations -- */
void gt_relu_forward_cuda(float *out, const float *inp, size_t n, cudaStream_t stream);
void gt_relu_backward_cuda(float *dinp, const float *dout, const float *out, size_t n, cudaStream_t stream);
void gt_gelu_forward_cuda(float *out, const float *inp, size_t n, cudaStream_t stream);
void gt_gelu_backward_cuda(float *dinp, const float *dout, const float *inp, size_t n, cudaStream_t stream);
/* bf16 activation storage (nn/model.h gt_model_act_device_bf16): the
 * forward keeps bf16(inp) (keep: n bf16 values, round to nearest even) and
 * computes out = GELU(inp) from the fp32 values (out may be inp); backward's
 * recompute and gradient read the kept bf16 values. */
void gt_gelu_forward_keep_bf16_cuda(float *out, uint16_t *keep, const float *inp, size_t n, cudaStream_t stream);
void gt_gelu_forward_from_bf16_cuda(float *out, const uint16_t *inp, size_t n, cudaStream_t stream);
void gt_gelu_backward_from_bf16_cuda(float *dinp, const float *dout, const uint16_t *inp, size_t n,
                                     cudaStream_t stream);
/* gt_dropout_apply (nn/ops/ops.h) on the device; base (N) a device array. */
void gt_dropout_apply_cuda(float *out, const float *inp, const uint64_t *base, int N, int C, uint32_t threshold,
                           float scale, cudaStream_t stream);
/* out (n) = a + b; out may alias a or b. */
void gt_add_cuda(float *out, const float *a, const float *b, size_t n, cudaStream_t stream);
/* out (R,n) = a (R,n) + b (n) broadcast over rows; out may alias a. */
void gt_add_bcast_cuda(float *out, const float *a, const float *b, size_t R, size_t n, cudaStream_t stream);
/* db (n) += sum_r a (R,n) over rows. */
void gt_sum_rows_acc_cuda(float *db, const float *a, size_t R, size_t n, cudaStream_t stream);
/* Row r of dst (at dst + r*dst_stride) = row r of src (at src + r*src_stride), n floats each. */
void gt_gather_rows_cuda(float *dst, size_t dst_stride, const float *src, size_t src_stride, size_t R,
                         size_t n, cudaStream_t stream);

/* ------------------------------------------ s2p_tf's fused glue ops --
 * Each replaces a sequence of the ops above with one pass over memory and
 * gives that sequence's bits (the same float operations in the same order;
 * tests/gpu/test_fused_cuda.c checks both against the unfused ops and the
 * CPU).
 * fc1 forward: pre (N,OC) holds the GEMM without bias; pre += bias, out =
 * GELU(pre). With keep != NULL the pre-activation goes to keep in bf16
 * (gt_gelu_forward_keep_bf16_cuda's rounding) and pre may be out. */
void gt_bias_gelu_forward_cuda(float *out, float *pre, uint16_t *keep, const float *bias, size_t N, int OC,
                               cudaStream_t stream);
/* fc1 backward: dout (N,OC) *= GELU'(pre) in place (pre fp32, or the kept
 * bf16 bits pre_bf16 when pre is NULL), db (OC) += its column sums, then dw,
 * dinp as gt_linear_backward_cuda. */
void gt_linear_backward_gelu_cuda(float *dinp, float *dw, float *db, float *dout, const float *inp, const float *w,
                                  const float *pre, const uint16_t *pre_bf16, int N, int C, int OC,
                                  cudaStream_t stream);
/* Residual add + LayerNorm: sum (N,C) = a + (b + b_bias), then out, mean,
 * rstd = LayerNorm(sum) as gt_layernorm_forward_cuda. Row r of b is row r %
 * b_rows (b_rows <= 0: N); b_bias (C) may be NULL (the bias of the GEMM that
 * wrote b). sum may alias a, out may alias b; out must not alias sum. */
void gt_add_layernorm_forward_cuda(float *sum, float *out, float *mean, float *rstd, const float *a, const float *b,
                                   int b_rows, const float *b_bias, const float *w, const float *bias, int N, int C,
                                   float eps, cudaStream_t stream);
/* gt_layernorm_backward_cuda with dinp += the input gradient (the residual
 * branch's gradient already there). */
void gt_layernorm_backward_acc_cuda(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                                    const float *w, const float *mean, const float *rstd, int N, int C,
                                    cudaStream_t stream);

/* --------------------------------------------------------- layernorm -- */
void gt_layernorm_forward_cuda(float *out, float *mean, float *rstd, const float *inp, const float *w,
                               const float *b, int N, int C, float eps, cudaStream_t stream);
void gt_layernorm_backward_cuda(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                                const float *w, const float *mean, const float *rstd, int N, int C,
                                cudaStream_t stream);

/* ------------------------------------------------ masked loss (MSE, L1) --
 * Forward returns the loss to the host (synchronises `stream`). */
float gt_mse_masked_forward_cuda(const float *pred, const float *y, const float *mask, size_t n,
                                 cudaStream_t stream);
void gt_mse_masked_backward_cuda(float *dpred, const float *pred, const float *y, const float *mask, size_t n,
                                 float dloss, cudaStream_t stream);
/* Both at once without a host round trip: loss_dev (1 float, device) gets the
 * loss, dpred the gradient scaled by dloss. */
void gt_mse_masked_cuda(float *loss_dev, float *dpred, const float *pred, const float *y, const float *mask,
                        size_t n, float dloss, cudaStream_t stream);
/* Any gt_loss_kind (same per-element math as gt_loss_masked_forward/backward). */
float gt_loss_masked_forward_cuda(gt_loss_kind kind, const float *pred, const float *y, const float *mask,
                                  size_t n, cudaStream_t stream);
void gt_loss_masked_cuda(gt_loss_kind kind, float *loss_dev, float *dpred, const float *pred, const float *y,
                         const float *mask, size_t n, float dloss, cudaStream_t stream);

/* -------------------------------------------------------------- AdamW --
 * Same per-element math as the CPU (gt_adamw_element, in double). */
void gt_adamw_update_cuda(float *params, const float *grads, float *m, float *v, size_t n,
                          const gt_adamw_scalars *s, cudaStream_t stream);
/* One launch over a whole model buffer: element i uses s_decay when
 * decay_flags[i] != 0 (device, n bytes), else s_plain. */
void gt_adamw_update_flags_cuda(float *params, const float *grads, float *m, float *v,
                                const uint8_t *decay_flags, size_t n, const gt_adamw_scalars *s_decay,
                                const gt_adamw_scalars *s_plain, cudaStream_t stream);

/* ---------------------------------------------------------- clipping --
 * Returned to the host (synchronise). Sums in double on the device. */
double gt_grad_norm_cuda(const float *grads, size_t n, cudaStream_t stream);
double gt_clip_grad_norm_cuda(float *grads, size_t n, float max_norm, cudaStream_t stream);
void gt_scale_cuda(float *x, size_t n, float coef, cudaStream_t stream);
/* Asynchronous form: sumsq_dev (1 double, device) = sum g^2, then grads are
 * scaled on the device by min(1, max_norm / (sqrt(sumsq) + 1e-6)). */
void gt_clip_grad_norm_async_cuda(float *grads, size_t n, float max_norm, double *sumsq_dev,
                                  cudaStream_t stream);

/* ------------------------------------------- loss scaling (fp16 AMP) --
 * 1 when any of g (n) is inf or NaN (synchronises). */
int gt_cuda_grads_nonfinite(const float *g, size_t n, cudaStream_t stream);
/* g *= inv_scale in place, and returns 1 when any element (before
 * scaling) was non-finite (torch._amp_foreach_non_finite_check_and_unscale_).
 * Synchronises. The trainer's scaler (train/amp.h) then skips the step and
 * lowers the scale. */
int gt_cuda_unscale_check(float *g, size_t n, float inv_scale, cudaStream_t stream);

/* ---------------------------------------------------------- attention --
 * Flash-style, non-causal (see nn/ops/attention.h for layouts).
 * scratch: gt_attention_cuda_scratch_elems(B,L,NH) floats (D = rowsum(dO*O)
 * for the backward; linear in L). Any head size hs = C/NH up to 128 (padded
 * to a tile width with zeros).
 * Precision: fp32 SIMT kernels (attention.cu) in every mode but GT_PREC_BF16,
 * where calls of 64 or more query rows run the bf16 tensor-core kernels
 * (attention_tc.cu: bf16 products, fp32 softmax and accumulation) on devices
 * of compute capability 8.0 or newer (or, for bf16 when selected by
 * gt_attention_tc_set_kernel(GT_ATTENTION_TC_MMA), the mma.sync kernels of
 * attention_mma.cu, whose scratch is larger: see below). All paths share the
 * layouts and the lse convention: either's forward feeds either's backward. */
size_t gt_attention_cuda_scratch_elems(int B, int L, int NH);
void gt_attention_forward_cuda(float *out, float *lse, float *scratch, const float *qkv, int B, int L, int C,
                               int NH, cudaStream_t stream);
void gt_attention_backward_cuda(float *dqkv, float *scratch, const float *dout, const float *qkv,
                                const float *out, const float *lse, int B, int L, int C, int NH,
                                cudaStream_t stream);
void gt_attention_forward_rows_cuda(float *out, float *lse, float *scratch, const float *qkv, int B, int L,
                                    int C, int NH, int q0, int nq, cudaStream_t stream);
void gt_attention_backward_rows_cuda(float *dqkv, float *scratch, const float *dout, const float *qkv,
                                     const float *out, const float *lse, int B, int L, int C, int NH, int q0,
                                     int nq, cudaStream_t stream);
/* Shared memory. The tensor-core kernels ask for more than the 48 KiB default
 * of dynamic shared memory per block (up to 123392 B wmma, 140288 B mma at
 * head sizes 65..128), more than sm_86 and sm_89 allow (101376 B). The calls
 * above choose per call and pass with nn/ops/cuda/attention_plan.h's
 * gt_attn_choose against the device's opt-in limit: a pass whose kernels do
 * not fit falls back, mma -> wmma -> SIMT. gt_attention_cuda_prepare() opts
 * every class that fits the current device in (kernel attributes: outside any
 * graph capture); the device model calls it at the creation of a model with
 * attention. gt_attention_cuda_variant says which variant the calls above run
 * for a pass (GT_ATTN_FWD, GT_ATTN_BWD) at head size hs and nq query rows, in
 * the current precision on the current device; gt_attention_cuda_fits
 * whether a variant's kernels of a pass fit the current device at all (the
 * direct calls below end the job with one line when they do not). */
void gt_attention_cuda_prepare(void);
gt_attn_variant gt_attention_cuda_variant(int pass, int hs, int nq);
int gt_attention_cuda_fits(gt_attn_variant v, int pass, int hs);
/* The tensor-core kernels directly, in any precision mode (tests, the
 * kernel lab tests/gpu/dev/attention.cu), their tiles in bf16 or fp16 (the
 * BF16 and FP16 precision modes' choice in the calls above): same arguments
 * and results as the _rows_cuda calls above (the forward needs no scratch).
 * They end the job with a message on a device below compute capability 8.0;
 * gt_attention_tc_usable() says whether the current device has them. */
typedef enum gt_attention_tc_type { GT_ATTENTION_TC_BF16 = 0, GT_ATTENTION_TC_FP16 = 1 } gt_attention_tc_type;
int gt_attention_tc_usable(void);
void gt_attention_tc_forward_rows_cuda(gt_attention_tc_type type, float *out, float *lse, const float *qkv, int B,
                                       int L, int C, int NH, int q0, int nq, cudaStream_t stream);
void gt_attention_tc_backward_rows_cuda(gt_attention_tc_type type, float *dqkv, float *scratch, const float *dout,
                                        const float *qkv, const float *out, const float *lse, int B, int L, int C,
                                        int NH, int q0, int nq, cudaStream_t stream);
/* Which bf16 tensor-core kernels the calls above run in GT_PREC_BF16 (per
 * process, like the precision): GT_ATTENTION_TC_WMMA (the default) the wmma
 * kernels of attention_tc.cu; GT_ATTENTION_TC_MMA the mma.sync kernels of
 * attention_mma.cu (register-resident scores, cp.async, a lab variant), which
 * then need scratch of gt_attention_mma_scratch_elems(B,L,C,NH) floats in
 * both calls (the device model sizes its work area so when GT_ATTN_IMPL=mma,
 * nn/model.h gt_model_attention_mma). FP16 keeps the wmma kernels. */
typedef enum gt_attention_tc_kernel { GT_ATTENTION_TC_WMMA = 0, GT_ATTENTION_TC_MMA = 1 } gt_attention_tc_kernel;
void gt_attention_tc_set_kernel(gt_attention_tc_kernel kernel);
gt_attention_tc_kernel gt_attention_tc_get_kernel(void);
/* The mma kernels directly, in any precision mode (tests, the lab): same
 * arguments and results as the _tc_ calls with GT_ATTENTION_TC_BF16, but both
 * take scratch of gt_attention_mma_scratch_elems(B,L,C,NH) floats (D and bf16
 * copies of q, k, v, dout: nn/ops/cuda/sizes.h). Any head size up to 128. */
size_t gt_attention_mma_scratch_elems(int B, int L, int C, int NH);
void gt_attention_mma_forward_rows_cuda(float *out, float *lse, float *scratch, const float *qkv, int B, int L, int C,
                                        int NH, int q0, int nq, cudaStream_t stream);
void gt_attention_mma_backward_rows_cuda(float *dqkv, float *scratch, const float *dout, const float *qkv,
                                         const float *out, const float *lse, int B, int L, int C, int NH, int q0,
                                         int nq, cudaStream_t stream);

/* --------------------------------------------------------------- LSTM --
 * Per step: one cuBLAS GEMM (B,H)x(H,4H) and one fused cell kernel; the
 * input GEMM of all steps at once. TBPTT exactly as nn/ops/lstm.h.
 * scratch: gt_lstm_cuda_scratch_elems(B,T,H) floats. */
void gt_lstm_forward_cuda(float *h, float *c, float *gates, const float *x, const float *w_ih,
                          const float *w_hh, const float *b_ih, const float *b_hh, int B, int T, int C, int H,
                          cudaStream_t stream);
size_t gt_lstm_cuda_scratch_elems(int B, int T, int H);
void gt_lstm_backward_cuda(float *dx, float *dw_ih, float *dw_hh, float *db_ih, float *db_hh, float *dgates,
                           float *scratch, const float *dh, const float *x, const float *w_ih,
                           const float *w_hh, const float *h, const float *c, const float *gates, int B,
                           int T, int C, int H, int K, cudaStream_t stream);

/* ------------------------------------------------------ LSTM on cuDNN --
 * nn/ops/cuda/lstm_cudnn.cu: the same layer maths, state reset and TBPTT
 * gradient as gt_lstm_forward/backward (nn/ops/lstm.h), through cuDNN's v8
 * RNN API (cudnnRNNForward, cudnnRNNBackwardData_v8, cudnnRNNBackwardWeights_v8;
 * CUDNN_LSTM, CUDNN_RNN_DOUBLE_BIAS, the standard algorithm). One object
 * serves a stack of NL layers (input size C for layer 0, H above) at any
 * batch B <= max_batch, either layer by layer (stack = 0: one cuDNN
 * descriptor per layer, every layer's h comes out) or as one call for the
 * whole stack (stack = 1: one descriptor of NL layers, cuDNN may overlap the
 * layers, only the top layer's h comes out); every buffer is a piece of `area`
 * (gt_lstm_cudnn_area_elems floats, nn/ops/cuda/sizes.h), owned by the
 * caller, so nothing allocates after creation and the calls can be captured
 * into a CUDA graph. The window is cut into chunks of K steps (K <= 0 or
 * K >= T: one chunk); each chunk is one cuDNN call that starts from the
 * previous chunk's final (h, c): in the backward each chunk starts with
 * dh, dc = 0 at its end and drops dL/d(h, c) at its start, which is the
 * truncation of nn/ops/lstm.h, while the weight gradients see the carried
 * state as the CPU's do. Parameters keep PyTorch's layout in the caller's
 * buffers: the forward copies them into cuDNN's weight space, the backward
 * adds cuDNN's weight gradient to the caller's (+=). */
typedef struct gt_lstm_cudnn gt_lstm_cudnn;
/* Make the object on `stream` (its cuDNN handle: gt_cuda_stream_prepare's
 * table). prec picks the math: FP32 plain FMA, the other modes let cuDNN use
 * the tensor cores on the fp32 data (TF32). Returns NULL, with a warning
 * saying why, when the build has no cuDNN or a size cuDNN asks for exceeds
 * its planned bound; synchronises the stream (creation only). */
gt_lstm_cudnn *gt_lstm_cudnn_create(int max_batch, int T, int C, int H, int NL, int K, int stack,
                                    gt_cuda_prec prec, float *area, size_t n_area, cudaStream_t stream);
void gt_lstm_cudnn_free(gt_lstm_cudnn *d); /* NULL allowed; the area stays the caller's */
/* Layer by layer (an object made with stack = 0).
 * Layer l forward over B samples (state zero at t = 0):
 *   h (B,T,H) assigned; x (B,T,In); w_ih (4H,In), w_hh (4H,H), b_ih, b_hh (4H).
 * Keeps the chunk states and reserve spaces for gt_lstm_cudnn_backward. */
void gt_lstm_cudnn_forward(gt_lstm_cudnn *d, int l, float *h, const float *x, const float *w_ih,
                           const float *w_hh, const float *b_ih, const float *b_hh, int B);
/* Layer l backward after its forward with the same B and inputs:
 *   dx (B,T,In) assigned (NULL: not needed); dw_ih, dw_hh, db_ih, db_hh
 *   accumulated (+=); dh (B,T,H) dL/dh_t from outside the recurrence;
 *   x, h: the forward's input and output. */
void gt_lstm_cudnn_backward(gt_lstm_cudnn *d, int l, float *dx, float *dw_ih, float *dw_hh, float *db_ih,
                            float *db_hh, const float *dh, const float *x, const float *h, int B);
/* The whole stack in one call (an object made with stack = 1); the
 * parameter and gradient arguments are arrays of NL pointers, layer 0 first.
 *   forward:  h_top (B,T,H) the top layer's h, assigned; x (B,T,C).
 *   backward: dx (B,T,C) assigned (NULL: not needed); gradients +=;
 *             dh_top (B,T,H) dL/dh of the top layer; x, h_top as in the forward. */
void gt_lstm_cudnn_forward_stack(gt_lstm_cudnn *d, float *h_top, const float *x, const float *const *w_ih,
                                 const float *const *w_hh, const float *const *b_ih, const float *const *b_hh,
                                 int B);
void gt_lstm_cudnn_backward_stack(gt_lstm_cudnn *d, float *dx, float *const *dw_ih, float *const *dw_hh,
                                  float *const *db_ih, float *const *db_hh, const float *dh_top, const float *x,
                                  const float *h_top, int B);

#ifdef __cplusplus
}
#endif
#endif
