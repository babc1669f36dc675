/* nn/ops/ops.h: dense CPU ops (linear, conv1d, activations, layernorm, masked
 * MSE, AdamW, gradient clipping, learning-rate schedule).
 *
 * Conventions (llm.c):
 *   - All tensors are row-major float32, shapes in comments, e.g. (N,C).
 *   - *_forward(out, [cache...], inp, params..., dims) writes `out` (=).
 *   - *_backward(dinp, dparams..., dout, inp, params..., dims):
 *       parameter gradients are ACCUMULATED (+=), so micro-batches add up;
 *       activation gradients (dinp) are ASSIGNED (=). Pass dinp = NULL to skip
 *       it (e.g. the first layer, whose input needs no gradient).
 *   - No function allocates; scratch memory is passed in and its size is given
 *     by a *_scratch_elems() function, so models plan all memory up front.
 *   - Buffers are borrowed: the caller owns everything.
 *   - The CUDA twin of gt_X_forward is gt_X_forward_cuda(..., cudaStream_t)
 *     with the same arguments plus the stream (nn/ops/cuda/), and uses the
 *     same per-element math from nn/ops/elementwise.h.
 * Counts of elements are int for per-tensor dims (each dim < 2^31) and size_t
 * for flat lengths (n). */
#ifndef GT_NN_OPS_OPS_H
#define GT_NN_OPS_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "nn/ops/elementwise.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fused activation applied by an op after its bias. */
typedef enum gt_act {
    GT_ACT_NONE = 0,
    GT_ACT_RELU = 1,
} gt_act;

/* ------------------------------------------------------------------ linear --
 * out = inp @ w^T + b   (PyTorch nn.Linear layout)
 *   out (N,OC), inp (N,C), w (OC,C), b (OC) or NULL.  sgemm via OpenBLAS.
 *   act = GT_ACT_RELU fuses out = relu(out) (backward then needs `out`). */
void gt_linear_forward(float *out, const float *inp, const float *w, const float *b, int N, int C,
                       int OC, gt_act act);
/* dinp (N,C) = dout' @ w          (assigned; NULL to skip)
 * dw   (OC,C) += dout'^T @ inp     db (OC) += sum_n dout'  (db NULL when no bias)
 * dout (N,OC) gradient wrt the op's output; with act = GT_ACT_RELU, `out`
 * (N,OC) is the forward output and dout' = dout * (out > 0) is formed in
 * `scratch` (N*OC elements; NULL allowed when act = GT_ACT_NONE). */
void gt_linear_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                        const float *w, const float *out, float *scratch, int N, int C, int OC,
                        gt_act act);

/* ------------------------------------------------------------------ conv1d --
 * Stride 1, dilation 1, 'same' padding (left (K-1)/2, right K/2, which is
 * what PyTorch's padding="same" does for even K too), PyTorch layouts:
 *   out (B,OC,W) = act(conv(inp (B,IC,W), w (OC,IC,K)) + b (OC))
 * Implemented as im2col + sgemm on chunks of samples spread over the engine
 * threads (nn/ops/cpu/parallel.h); `scratch` holds
 * gt_conv1d_scratch_elems(IC,OC,W,K) floats: one slice per thread,
 * independent of B. */
size_t gt_conv1d_scratch_elems(int IC, int OC, int W, int K);
void gt_conv1d_forward(float *out, float *scratch, const float *inp, const float *w, const float *b,
                       int B, int IC, int OC, int W, int K, gt_act act);
/* dinp (B,IC,W) = conv^T(dout')    (assigned; NULL to skip)
 * dw (OC,IC,K) += ..., db (OC) += ... (db NULL when no bias)
 * dout (B,OC,W); with act = GT_ACT_RELU `out` (B,OC,W) is the forward output
 * and dout' = dout * (out > 0); otherwise `out` may be NULL. */
void gt_conv1d_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                        const float *w, const float *out, float *scratch, int B, int IC, int OC,
                        int W, int K, gt_act act);

/* ---------------------------------------------------------- activations --
 * out (n) = relu(inp (n)); in place allowed (out == inp). */
void gt_relu_forward(float *out, const float *inp, size_t n);
/* dinp (n) = dout * (out > 0); `out` is the forward output. In place allowed
 * (dinp == dout). */
void gt_relu_backward(float *dinp, const float *dout, const float *out, size_t n);
/* out (n) = gelu_tanh(inp (n)). */
void gt_gelu_forward(float *out, const float *inp, size_t n);
/* dinp (n) = dout * gelu'(inp); in place allowed (dinp == dout). */
void gt_gelu_backward(float *dinp, const float *dout, const float *inp, size_t n);

/* ------------------------------------------------------------- dropout --
 * out (N,C) = inp * gt_dropout_factor(base[n], c, threshold, scale)
 * (nn/ops/dropout.h): the forward of inverted dropout, and, applied to the
 * output gradient with the same keys, its backward. In place allowed. */
void gt_dropout_apply(float *out, const float *inp, const uint64_t *base, int N, int C, uint32_t threshold,
                      float scale);

/* --------------------------------------------------------------- layernorm --
 * Over the last dim C (nn.LayerNorm(C, eps)):
 *   out (N,C) = (inp - mean) * rstd * w (C) + b (C)
 *   mean (N), rstd (N): saved for backward (biased variance, as PyTorch). */
void gt_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
                          const float *b, int N, int C, float eps);
/* dinp (N,C) assigned (NULL to skip); dw (C), db (C) accumulated. */
void gt_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                           const float *w, const float *mean, const float *rstd, int N, int C);

/* ----------------------------------------------------------- masked loss --
 * loss = sum_i mask_i term(pred_i - y_i) / max(sum_i mask_i, 1)
 *   GT_LOSS_MSE: term(d) = d^2   ((pred-y)**2 * mask).sum() / mask.sum()
 *   GT_LOSS_L1:  term(d) = |d|   ((pred-y).abs() * mask).sum() / mask.sum()
 *   GT_LOSS_MSE_L1: term(d) = d^2 + |d| (the sum of the two)
 * (the PyTorch expressions hold when sum mask > 0). pred, y, mask all (n);
 * mask NULL means all ones. Sums in double. L1 fits the conditional median
 * (0 while an appliance is more likely off than on), which is what the L1
 * metrics (MAE, EA) and the on/off state reward; MSE fits the mean. */
typedef enum gt_loss_kind { GT_LOSS_MSE = 0, GT_LOSS_L1 = 1, GT_LOSS_MSE_L1 = 2, GT_LOSS_KIND_COUNT } gt_loss_kind;
const char *gt_loss_kind_name(gt_loss_kind kind);
/* "mse" / "l1" / "mse+l1" -> kind; -1 when unknown. */
int gt_loss_kind_parse(const char *name);
float gt_loss_masked_forward(gt_loss_kind kind, const float *pred, const float *y, const float *mask, size_t n);
/* The sum form both build on (and the trainer's global-batch loss): returns
 * sum mask term(pred - y) in double; dpred (NULL: none) = mask term'(pred - y) coef. */
double gt_loss_sum_grad(gt_loss_kind kind, float *dpred, const float *pred, const float *y, const float *mask,
                        size_t n, float coef);
/* dpred (n) = dloss * mask * term'(pred - y) / max(sum mask, 1)   (assigned) */
void gt_loss_masked_backward(gt_loss_kind kind, float *dpred, const float *pred, const float *y,
                             const float *mask, size_t n, float dloss);
/* Gated NILM head: pred (n, 2A) = [r_0 .. r_{A-1} | s_0 .. s_{A-1}] (power in
 * normalised units, on/off logit), y and mask (n, A), thr (A) the on-threshold
 * in normalised units, state z = y > thr. Returns the sum over masked
 * elements of  z (r - y)^2 + bce(s, z),  bce = max(s,0) - z s + log(1 + e^-|s|)
 * (torch's binary_cross_entropy_with_logits), in double: the power head
 * learns the power while on, the logit the state. dpred (n, 2A) (NULL: loss
 * only) = coef * mask * (2 z (r - y), sigmoid(s) - z). Inference: power r
 * where s > 0, else 0 W. */
double gt_gated_loss_sum(float *dpred, const float *pred, const float *y, const float *mask, const float *thr,
                         size_t n, int A, float coef);
/* The GT_LOSS_MSE case. */
float gt_mse_masked_forward(const float *pred, const float *y, const float *mask, size_t n);
void gt_mse_masked_backward(float *dpred, const float *pred, const float *y, const float *mask,
                            size_t n, float dloss);

/* ----------------------------------------------------------------- AdamW --
 * Hyper-parameters of torch.optim.AdamW (defaults: beta1 0.9, beta2 0.999,
 * eps 1e-8, weight_decay 0.01). */
typedef struct gt_adamw_config {
    double beta1, beta2, eps, weight_decay; /* double, like torch's Python floats */
} gt_adamw_config;

/* The per-step scalars for step t >= 1 (1-based, as torch's state["step"]) at
 * learning rate lr; `decay` = 0 gives the scalars for tensors without weight
 * decay. All in double (see the formula in elementwise.h). */
gt_adamw_scalars gt_adamw_scalars_make(const gt_adamw_config *cfg, float lr, long t, int decay);
/* One AdamW step over n elements: params, m, v (n) updated in place with
 * grads (n), elementwise gt_adamw_element(). */
void gt_adamw_update(float *params, const float *grads, float *m, float *v, size_t n,
                     const gt_adamw_scalars *s);

/* ------------------------------------------------------------ clipping --
 * Global L2 norm sqrt(sum g^2) of grads (n), summed in double. */
double gt_grad_norm(const float *grads, size_t n);
/* torch.nn.utils.clip_grad_norm_: with norm = gt_grad_norm(),
 * coef = max_norm / (norm + 1e-6); if coef < 1, grads *= coef (as float).
 * Returns the norm before clipping. max_norm <= 0 disables clipping. */
double gt_clip_grad_norm(float *grads, size_t n, float max_norm);
/* Scale grads (n) by coef (used after an all-reduce computes the norm). */
void gt_scale(float *x, size_t n, float coef);
/* Loss-scale removal: grads (n) *= inv_scale (skipped when inv_scale == 1;
 * exact for a power of two); returns 1 when every element is finite. */
int gt_unscale_check(float *grads, size_t n, float inv_scale);

/* ------------------------------------------------------- lr schedule --
 * Linear warmup then cosine decay, for 0-based optimizer step s:
 *   s <  warmup:          lr_max * (s + 1) / warmup
 *   warmup <= s < total:  lr_min + 0.5 (lr_max - lr_min) (1 + cos(pi p)),
 *                         p = (s - warmup) / max(total - warmup, 1)
 *   s >= total:           lr_min
 * total <= 0 means no decay (constant lr_max after warmup). */
float gt_lr_schedule(long s, long warmup, long total, float lr_max, float lr_min);

#ifdef __cplusplus
}
#endif
#endif
