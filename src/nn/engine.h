/* nn/engine.h: the numeric engine, one table of functions per device
 * (ggml's backend table is the model).
 *
 * Everything above nn/ that runs a model (the trainer, validation, eval,
 * predict, `bench train`) calls only these functions, never gt_model_*
 * directly, so an engine for another device plugs in by filling one
 * gt_engine_i table (nn/engine_impl.h: the table and the struct, internal
 * to nn/; gt_engine is opaque above it):
 *
 *   gt_engine *e = gt_engine_create(GT_ENGINE_HOST, &cfg);  // plans + allocates
 *   gt_engine_init(e, seed);
 *   per step:
 *     gt_engine_zero_grad(e);
 *     per micro-batch:
 *       const float *pred = gt_engine_forward_train(e, x, B, &key);  // x host (B, n_x) -> pred host (B, n_y)
 *                                                        // (gt_engine_forward: evaluation, no dropout)
 *       task objective writes gt_engine_dpred(e) (B, n_y)
 *       gt_engine_backward(e, 1.0f);                     // grads += d objective / d params
 *     all-reduce gt_engine_grads(e) (dist/: MPI for host grads, NCCL on
 *       gt_engine_stream(e) when gt_engine_grads_on_device(e)), each bucket started
 *       during the last micro-batch's backward (gt_engine_set_grad_ready)
 *     gt_engine_unscale(e, 1 / loss scale); gt_engine_grad_norm(e); gt_engine_scale_grads(e, c);
 *     gt_engine_adamw_step(e, &opt, lr, step + 1, 0);
 *   checkpoints: gt_engine_pull_state(e), then gt_engine_model(e) (table + host state);
 *   restore: load into gt_engine_model(e), then gt_engine_push_state(e).
 *
 * The host model (gt_engine_model) carries the configuration, the parameter
 * table and a host copy of params / adam_m / adam_v, and the host side of
 * every forward/backward (x, pred, dpred), so a task's objective and eval's
 * metrics read and write host buffers on every engine. On the host engine it
 * IS the state (pull/push are no-ops).
 *
 * Engines:
 *   GT_ENGINE_HOST  OpenBLAS + the engine's thread pool (nn/ops/cpu/).
 *   GT_ENGINE_CUDA  (CUDA builds only: GT_HAVE_CUDA) one gt_cuda_model
 *                   (nn/cuda_model.h) on the current CUDA device, products
 *                   in cfg->precision (fp32 unless asked), fp32 state; its
 *                   host model is gt_model_create_host_side (no host
 *                   activations). forward copies x up (pinned, double-
 *                   buffered: on a copy stream, overlapping the previous
 *                   backward; gt_engine_input is the pinned buffer of the
 *                   next forward) and pred down (the call synchronises the
 *                   model's stream), backward copies dpred up (pinned) and
 *                   queues the backward; with cfg->graphs each forward and
 *                   backward shape is replayed as a CUDA graph after one
 *                   eager warm-up; grads live on the device
 *                   (gt_engine_grads_on_device = 1), gt_engine_stream is the model's
 *                   stream; unscale and grad_norm return host values (they
 *                   synchronise); pull/push copy params, adam_m and adam_v
 *                   between the device and the host model; memory reports
 *                   device bytes. The caller makes the CUDA device current
 *                   before gt_engine_create (train/device.h picks it).
 *
 * Not thread-safe: one engine per thread. No MPI, no files. */
#ifndef GT_NN_ENGINE_H
#define GT_NN_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "nn/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gt_engine_kind {
    GT_ENGINE_HOST = 0, /* OpenBLAS + the engine's thread pool (nn/ops/cpu/) */
#ifdef GT_HAVE_CUDA
    GT_ENGINE_CUDA = 1, /* one GPU (nn/cuda_model.h) */
#endif
    GT_ENGINE_KIND_COUNT
} gt_engine_kind;

/* Opaque: each engine fills its table (nn/engine_impl.h) behind these calls. */
typedef struct gt_engine gt_engine;

/* Bytes an engine holds (for logs and the memory planner's check). */
typedef struct gt_engine_mem {
    size_t state_bytes;  /* params, grads and the two AdamW moments */
    size_t act_bytes;    /* activations and scratch at max_batch */
    size_t device_bytes; /* on the device (0 on the host engine) */
} gt_engine_mem;

/* Kind name ("host", "cuda") / parse (-1 if unknown or not built in). */
const char *gt_engine_kind_name(gt_engine_kind kind);
int gt_engine_kind_parse(const char *name);

/* train.precision = auto for an engine of `kind`: the one rule (training,
 * evaluation, bench model). The CPU engine: bf16 where oneDNN sees bf16 units
 * (AMX / AVX512-BF16: gt_cpu_has_bf16_units), else fp32. A GPU engine: bf16
 * on compute capability >= 8 (bf16 tensor cores), else fp32; gpu_cc_major is
 * the device's major compute capability, <= 0 when the caller does not know
 * it (fp32 then). *why (when why is not NULL) gets the reason, for the log. */
gt_precision gt_engine_auto_precision(gt_engine_kind kind, int gpu_cc_major, const char **why);

/* Plan and allocate a model of cfg on the engine (parameters zero: call
 * gt_engine_init or load a checkpoint). Errors as gt_model_create. Caller
 * owns the result. */
gt_engine *gt_engine_create(gt_engine_kind kind, const gt_model_config *cfg);
void gt_engine_free(gt_engine *e); /* NULL allowed */

/* The engine's kind and name ("host", "cuda"). */
gt_engine_kind gt_engine_kind_of(const gt_engine *e);
const char *gt_engine_name(const gt_engine *e);
/* 1 when gt_engine_grads is a device pointer (the all-reduce runs there). */
int gt_engine_grads_on_device(const gt_engine *e);
/* The host model: configuration, parameter table, host copy of the state. */
gt_model *gt_engine_model(const gt_engine *e);
const gt_model_config *gt_engine_config(const gt_engine *e);
size_t gt_engine_n_params(const gt_engine *e);
size_t gt_engine_n_x(const gt_engine *e);
size_t gt_engine_n_y(const gt_engine *e);
int gt_engine_max_batch(const gt_engine *e);

/* Deterministic init (gt_model_init) on the host copy, then pushed. */
void gt_engine_init(gt_engine *e, uint64_t seed);

/* x host (B, n_x), 1 <= B <= max_batch (x may be gt_engine_input(e));
 * returns the prediction, a host view (B, n_y) valid until the next forward. */
const float *gt_engine_forward(gt_engine *e, const float *x, int B);
/* The training forward: as gt_engine_forward, with the dropout masks of key
 * (model.dropout; nn/ops/dropout.h) on models that have dropout. The same key
 * gives the same masks on every engine. */
const float *gt_engine_forward_train(gt_engine *e, const float *x, int B, const gt_dropout_key *key);
float *gt_engine_input(gt_engine *e);
/* Host (max_batch, n_y): the objective writes d objective / d pred here
 * before gt_engine_backward. */
float *gt_engine_dpred(gt_engine *e);
/* grads += gradient of (dloss x the objective whose d/d pred is in dpred);
 * parameter gradients accumulate over micro-batches. */
void gt_engine_backward(gt_engine *e, float dloss);
void gt_engine_zero_grad(gt_engine *e);
/* The gradient-readiness hook of the next backwards (nn/model.h
 * gt_grad_ready_fn; fn NULL: none): called during backward each time the
 * gradients from an offset to the end are final (the host engine: computed;
 * a device engine: queued on gt_engine_stream, final when that work is
 * done). dist/'s gradient exchange starts each bucket from it (overlap). */
void gt_engine_set_grad_ready(gt_engine *e, gt_grad_ready_fn fn, void *ctx);
/* The gradient buffer (n_params; host or device, see gt_engine_grads_on_device). */
float *gt_engine_grads(gt_engine *e);
/* grads *= inv_scale (exact for a power of two; 1 skips the product);
 * returns 1 when every gradient is finite. */
int gt_engine_unscale(gt_engine *e, float inv_scale);
/* Global L2 norm of the gradients, summed in double (gt_grad_norm). */
double gt_engine_grad_norm(gt_engine *e);
void gt_engine_scale_grads(gt_engine *e, float coef);
/* AdamW over every parameter (gt_model_adamw_step). */
void gt_engine_adamw_step(gt_engine *e, const gt_adamw_config *opt, float lr, long t, int decay_all);
/* Device state -> host copy (params, adam_m, adam_v) / host copy -> device. */
void gt_engine_pull_state(gt_engine *e);
void gt_engine_push_state(gt_engine *e);
void gt_engine_memory(const gt_engine *e, gt_engine_mem *out);
/* The stream of a device engine (cudaStream_t as void *, for dist/'s NCCL
 * all-reduce), NULL for the host engine. */
void *gt_engine_stream(gt_engine *e);

/* A device engine's CUDA graph counters (captures made, replays run; the
 * CUDA engine with cfg->graphs); 0, 0 for an engine without graphs. */
void gt_engine_graph_stats(gt_engine *e, long *captures, long *replays);

/* Seconds a device engine's device waited before forwards so far (see
 * nn/engine_impl.h gt_engine_i.input_stall); -1 when the engine does not measure it. */
double gt_engine_input_stall(gt_engine *e);

/* The device's timeline spans into core/trace.h (a no-op on the host engine). */
void gt_engine_trace_flush(gt_engine *e);

#ifdef __cplusplus
}
#endif
#endif
