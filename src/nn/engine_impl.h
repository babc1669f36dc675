/* nn/engine_impl.h: the engine table and struct behind nn/engine.h (internal
 * to nn/). An engine for another device fills one gt_engine_i and opens into
 * a gt_engine: gt_engine_create dispatches to its open function, which fills
 * e->i, e->host, e->grads_on_device, e->ctx. */
#ifndef GT_NN_ENGINE_IMPL_H
#define GT_NN_ENGINE_IMPL_H

#include "nn/engine.h"

/* One table per engine kind. Slots marked optional may be NULL. */
typedef struct gt_engine_i {
    const char *name; /* "host", "cuda" */
    void (*free)(gt_engine *e);
    /* x host (B, n_x) -> prediction; returns a host view (B, n_y). key: the
     * dropout masks of a training forward (gt_model_set_dropout), NULL for
     * evaluation; the backward after it applies the same masks. */
    const float *(*forward)(gt_engine *e, const float *x, int B, const gt_dropout_key *key);
    float *(*input)(gt_engine *e); /* host (max_batch, n_x) buffer a loader may fill in place */
    float *(*dpred)(gt_engine *e); /* host (max_batch, n_y): d objective / d pred of the last forward */
    void (*backward)(gt_engine *e, float dloss);
    void (*zero_grad)(gt_engine *e);
    /* the gradient-readiness hook of the next backwards (gt_engine_set_grad_ready) */
    void (*set_grad_ready)(gt_engine *e, gt_grad_ready_fn fn, void *ctx);
    float *(*grads)(gt_engine *e); /* (n_params) the buffer the gradient all-reduce runs on */
    int (*unscale)(gt_engine *e, float inv_scale);
    double (*grad_norm)(gt_engine *e);
    void (*scale_grads)(gt_engine *e, float coef);
    void (*adamw_step)(gt_engine *e, const gt_adamw_config *opt, float lr, long t, int decay_all);
    void (*pull_state)(gt_engine *e);
    void (*push_state)(gt_engine *e);
    void (*memory)(const gt_engine *e, gt_engine_mem *out);
    void *(*stream)(gt_engine *e); /* the device stream work is queued on (a cudaStream_t); NULL on the host */
    /* optional. train.trace (core/trace.h): adds the device's spans (CUDA
     * events around forward, backward, the optimizer step, recorded while
     * tracing) to the timeline as thread GT_TRACE_TID_GPU. */
    void (*trace_flush)(gt_engine *e);
    /* optional. Seconds the device has waited before forwards so far, for
     * its input or for the host (measured with events on the device;
     * synchronises). NULL: not measured (host engine: the trainer's own
     * data-wait timer). */
    double (*input_stall)(gt_engine *e);
    /* optional. CUDA graph counters (captures made, replays run). */
    void (*graph_stats)(gt_engine *e, long *captures, long *replays);
} gt_engine_i;

struct gt_engine {
    const gt_engine_i *i;
    gt_engine_kind kind;
    gt_model *host;      /* configuration, parameter table, host state (see nn/engine.h) */
    int grads_on_device; /* 1: gt_engine_grads is a device pointer */
    void *ctx;           /* engine-private */
};

void gt_engine_host_open(gt_engine *e, const gt_model_config *cfg); /* nn/engine_host.c */
#ifdef GT_HAVE_CUDA
void gt_engine_cuda_open(gt_engine *e, const gt_model_config *cfg); /* nn/engine_cuda.c (library gt_nn_cuda) */
#endif

#endif
