/* nn/cuda_model.h: the training engine's model on one GPU.
 *
 * A gt_cuda_model is the device twin of a host gt_model (nn/model.h): it is
 * created from a host model of any kind (s2p_cnn, s2p_tf, lstm) and takes its
 * configuration, its parameter table and its activation plan from it, so the
 * device buffers have exactly the host layout:
 *   params, grads, adam_m, adam_v: ONE contiguous device buffer each of
 *     n_params floats, tensor i at [offset_i, offset_i + n_elem_i) in all four
 *     (one NCCL all-reduce over grads, one optimizer launch, one copy to host).
 *   acts: ONE device buffer with the host's activation plan (max_batch), plus
 *     a small GPU-only work area (conv im2col chunks, attention D rows, the
 *     LSTM's shifted hidden states), all allocated by create, none in a step.
 *
 *   gt_model *host = gt_model_create(&cfg); gt_model_init(host, seed);
 *   gt_cuda_model *dm = gt_cuda_model_create(host, GT_PREC_BF16);   // uploads params
 *   for each step:
 *     gt_cuda_model_zero_grad(dm);
 *     for each micro-batch:
 *       gt_cuda_model_forward(dm, x, B, 0);          // x on the host (B, n_x)
 *       gt_cuda_model_loss(dm, y, mask, 0);          // or gt_cuda_model_lstm_loss
 *       gt_cuda_model_backward(dm, 1.0f / n_micro);
 *     [NCCL all-reduce of gt_cuda_model_grads(dm), n_params floats: dist/]
 *     gt_cuda_model_clip_grad_norm(dm, 1.0f);
 *     gt_cuda_model_adamw_step(dm, &opt, lr, step + 1, 0);
 *   gt_cuda_model_get_params(dm, host->params, host->n_params);  // checkpoint
 *   gt_cuda_model_free(dm);
 *
 * Precision (amp): GT_PREC_FP32 (0) strict fp32; GT_PREC_BF16 (1) matrix
 * products with bf16 inputs on the tensor cores, fp32 accumulation, fp32
 * master weights, gradients and optimizer state; GT_PREC_FP16 (2) the same
 * with fp16 inputs: use loss scaling (backward with dloss = scale, then
 * gt_cuda_model_unscale_check with 1/scale; skip the step when it returns 1);
 * GT_PREC_TF32 (3) fp32 storage with TF32 tensor cores. See
 * nn/ops/cuda/ops_cuda.h for what runs in which precision.
 *
 * All work is queued on the model's own stream (gt_cuda_model_stream);
 * functions returning a host value synchronise it. The current CUDA device
 * at create time is the model's device. Not thread-safe: one model per
 * thread. Needs a CUDA build (GT_HAVE_CUDA) and a device. */
#ifndef GT_NN_CUDA_MODEL_H
#define GT_NN_CUDA_MODEL_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#include "nn/ops/cuda/ops_cuda.h" /* first: gives nn/ops/ops.h C linkage under C++ */
#include "nn/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gt_cuda_model gt_cuda_model;

/* Plan from `host_template` (which is only read: its table, plan and current
 * parameters, uploaded), allocate every device buffer, zero grads and AdamW
 * moments. amp: a gt_cuda_prec (0 fp32, 1 bf16, 2 fp16, 3 tf32). Out of
 * device memory ends the job with GT_EXIT_RESOURCE. Caller owns the result. */
gt_cuda_model *gt_cuda_model_create(const gt_model *host_template, int amp);
void gt_cuda_model_free(gt_cuda_model *m); /* NULL allowed */

cudaStream_t gt_cuda_model_stream(const gt_cuda_model *m);
const gt_model_config *gt_cuda_model_config(const gt_cuda_model *m);
size_t gt_cuda_model_n_params(const gt_cuda_model *m);
size_t gt_cuda_model_n_x(const gt_cuda_model *m);
size_t gt_cuda_model_n_y(const gt_cuda_model *m);
gt_cuda_prec gt_cuda_model_precision(const gt_cuda_model *m);
/* Device bytes this model allocated (state + activations + work areas). */
size_t gt_cuda_model_device_bytes(const gt_cuda_model *m);
/* The LSTM's implementation this model runs: "cudnn" or "cudnn-stack"
 * (nn/ops/cuda/lstm_cudnn.cu, chosen by GT_LSTM_IMPL in a build with cuDNN:
 * gt_model_lstm_cudnn) or "kernels" (nn/ops/cuda/lstm.cu, the default);
 * "none" for the other kinds. */
const char *gt_cuda_model_lstm_impl(const gt_cuda_model *m);
/* The convolutions' implementation this model runs: "cudnn" (nn/ops/cuda/
 * conv_cudnn.cu, chosen by GT_CONV_IMPL=cudnn in a build with cuDNN:
 * gt_model_conv_cudnn; "cudnn-unfused" once cuDNN refused the fused bias +
 * activation forward) or "kernels" (im2col + cuBLAS, the default); "none" for
 * the other kinds. */
const char *gt_cuda_model_conv_impl(const gt_cuda_model *m);

/* The four device buffers (n_params floats each), borrowed. */
float *gt_cuda_model_params(gt_cuda_model *m);
float *gt_cuda_model_grads(gt_cuda_model *m);
float *gt_cuda_model_adam_m(gt_cuda_model *m);
float *gt_cuda_model_adam_v(gt_cuda_model *m);

/* Host <-> device copies of whole buffers on the model's stream, complete on
 * return (n must be n_params).
 * A NULL host pointer skips that buffer. */
void gt_cuda_model_set_state(gt_cuda_model *m, const float *params, const float *grads, const float *adam_m,
                             const float *adam_v, size_t n);
void gt_cuda_model_get_state(const gt_cuda_model *m, float *params, float *grads, float *adam_m, float *adam_v,
                             size_t n);
static inline void gt_cuda_model_set_params(gt_cuda_model *m, const float *p, size_t n) {
    gt_cuda_model_set_state(m, p, NULL, NULL, NULL, n);
}
static inline void gt_cuda_model_get_params(const gt_cuda_model *m, float *p, size_t n) {
    gt_cuda_model_get_state(m, p, NULL, NULL, NULL, n);
}
static inline void gt_cuda_model_get_grads(const gt_cuda_model *m, float *g, size_t n) {
    gt_cuda_model_get_state(m, NULL, g, NULL, NULL, n);
}

/* Forward on B <= max_batch samples x (B, n_x); on_device = 1 when x is a
 * device pointer (the model's own input buffer gt_cuda_model_x allowed).
 * Returns the device prediction (B, n_y), borrowed. Asynchronous. */
const float *gt_cuda_model_forward(gt_cuda_model *m, const float *x, int B, int on_device);
float *gt_cuda_model_x(gt_cuda_model *m); /* device (max_batch, n_x) input buffer (= input 0) */
/* The model's two device input buffers (j = 0, 1; max_batch x n_x each): a
 * forward given one of them (on_device = 1) reads it in place, and so do its
 * loss and backward; the caller must not change it until that backward has
 * run. An engine fills one on a copy stream while the model computes on the
 * other (double buffering). Any other x is copied into input 0 first. */
float *gt_cuda_model_input(gt_cuda_model *m, int j);

/* CUDA graphs (off at create): on = 1 captures each forward and backward
 * the second time its shape (batch, input buffer, dropout on/off, dloss) is
 * seen and replays it from then on; a backward is captured in segments, one
 * per layer's readiness report, and the hook is called between segment
 * launches as in the eager backward. Results are those of the eager calls
 * (the graph holds the same kernels; tested on a GPU). A failed capture
 * (a CUDA, cuBLAS or cuDNN call failing inside it included: the check
 * macros defer while capturing, core/check.h) turns graphs off with one
 * warning and the pass runs eagerly. At most 24 shapes are kept; others run
 * eagerly. stats: captures made and replays run so far. graphs: 1 while
 * graphs are on. plant_capture_error (tests only): on = 1 makes every later
 * capture call cudaStreamSynchronize on the capturing stream, which is
 * illegal there (tests/gpu/test_graph_fallback.c). */
void gt_cuda_model_set_graphs(gt_cuda_model *m, int on);
void gt_cuda_model_graph_stats(const gt_cuda_model *m, long *captures, long *replays);
int gt_cuda_model_graphs(const gt_cuda_model *m);
void gt_cuda_model_plant_capture_error(gt_cuda_model *m, int on);
/* Copy the last forward's prediction (B, n_y) to the host (synchronises). */
void gt_cuda_model_get_pred(const gt_cuda_model *m, float *pred_host);
/* The objective's d/d pred of the last forward, (B, n_y), host (on_device 0)
 * or device pointer, into the model's dpred (queued on the model's stream;
 * a host buffer may be reused on return). Then gt_cuda_model_backward. */
void gt_cuda_model_set_dpred(gt_cuda_model *m, const float *dpred, int on_device);

/* Dropout of the next forward and the backward after it (s2p_cnn with
 * cfg.dropout > 0): base (B) the host's per-sample keys (gt_model_set_dropout,
 * copied up on the model's stream; the buffer may be reused on return), NULL
 * for none (evaluation). */
void gt_cuda_model_set_dropout(gt_cuda_model *m, const uint64_t *base, int B);
/* Masked MSE of the last forward: y, mask (B, n_y) (mask NULL = all ones),
 * host or device pointers; writes dpred; returns the loss (synchronises). */
float gt_cuda_model_loss(gt_cuda_model *m, const float *y, const float *mask, int on_device);
/* The same without synchronising: the loss stays on the device until
 * gt_cuda_model_last_loss() reads it. y/mask on the device. */
void gt_cuda_model_loss_async(gt_cuda_model *m, const float *y_dev, const float *mask_dev);
float gt_cuda_model_last_loss(gt_cuda_model *m);
/* lstm only: next-step MSE against the model's own input (gt_model_lstm_loss);
 * async variant keeps the loss on the device. */
float gt_cuda_model_lstm_loss(gt_cuda_model *m);
void gt_cuda_model_lstm_loss_async(gt_cuda_model *m);

/* grads += d(dloss * loss) (dloss: 1/n_micro, or the fp16 loss scale). */
void gt_cuda_model_backward(gt_cuda_model *m, float dloss);
/* The gradient-readiness hook of the next backwards (nn/model.h; fn NULL:
 * none): called on the host as each layer's backward is queued, with the
 * offset from which the grads are final once the work queued so far on the
 * model's stream completes (dist/ records an event there before it starts a
 * bucket's all-reduce on its own stream). */
void gt_cuda_model_set_grad_ready(gt_cuda_model *m, gt_grad_ready_fn fn, void *ctx);
void gt_cuda_model_zero_grad(gt_cuda_model *m);
/* torch.nn.utils.clip_grad_norm_ over the whole grads buffer; returns the
 * norm before clipping (synchronises). max_norm <= 0: norm only. */
double gt_cuda_model_clip_grad_norm(gt_cuda_model *m, float max_norm);
/* Asynchronous clipping (the norm stays on the device). */
void gt_cuda_model_clip_grad_norm_async(gt_cuda_model *m, float max_norm);
/* fp16 loss scaling: grads *= inv_scale; returns 1 when any gradient was
 * inf/NaN (the caller skips the step). Synchronises. */
int gt_cuda_model_unscale_check(gt_cuda_model *m, float inv_scale);
/* AdamW over the whole buffer (one launch), as gt_model_adamw_step. */
void gt_cuda_model_adamw_step(gt_cuda_model *m, const gt_adamw_config *opt, float lr, long t, int decay_all);
void gt_cuda_model_synchronize(gt_cuda_model *m);

#ifdef __cplusplus
}
#endif
#endif
