/* nn/engine_cuda.c: the CUDA engine, the gt_engine_i table over one
 * gt_cuda_model (nn/cuda_model.h) on the current CUDA device (see engine.h).
 * Built into gt_nn_cuda only: a CPU-only build has no CUDA symbols.
 *
 * The host model is gt_model_create_host_side: the tables, the host copy of
 * params / adam_m / adam_v (filled by pull_state, read by push_state) and the
 * host x / pred / dpred of the trainer's objective and eval. The device model
 * holds everything a step touches; a step crosses the bus three times: x up
 * and pred down in forward (which returns after the copy, so the objective
 * can read pred), dpred up in backward. Precision fp32 (GT_PREC_FP32:
 * cuBLAS without TF32), so the engine test compares it with the host engine
 * at fp32 tolerances. */
#include <stdlib.h>

#include "core/check.h"
#include "nn/cuda_model.h"
#include "nn/engine.h"
#include "nn/engine_impl.h"

static gt_cuda_model *dm(const gt_engine *e) { return (gt_cuda_model *)e->ctx; }

static void cuda_free(gt_engine *e) {
    gt_cuda_model_free(dm(e));
    gt_model_free(e->host);
}

static const float *cuda_forward(gt_engine *e, const float *x, int B) {
    gt_model *h = e->host;
    gt_cuda_model_forward(dm(e), x, B, 0);   /* x (B, n_x) up, the forward queued */
    gt_cuda_model_get_pred(dm(e), h->pred);  /* pred (B, n_y) down: synchronises */
    h->batch = B;
    return h->pred;
}

static float *cuda_input(gt_engine *e) { return e->host->x; }
static float *cuda_dpred(gt_engine *e) { return e->host->dpred; }

static void cuda_backward(gt_engine *e, float dloss) {
    GT_CHECK(e->host->batch > 0, GT_EXIT_INTERNAL, "gt_engine_backward called before gt_engine_forward");
    gt_cuda_model_set_dpred(dm(e), e->host->dpred, 0); /* (B, n_y) up */
    gt_cuda_model_backward(dm(e), dloss);
}

static void cuda_zero_grad(gt_engine *e) { gt_cuda_model_zero_grad(dm(e)); }
static float *cuda_grads(gt_engine *e) { return gt_cuda_model_grads(dm(e)); }

/* 1 when every gradient is finite (the host engine's convention). */
static int cuda_unscale(gt_engine *e, float inv) {
    gt_cuda_model *m = dm(e);
    size_t n = gt_cuda_model_n_params(m);
    if (inv == 1.0f) return !gt_cuda_grads_nonfinite(gt_cuda_model_grads(m), n, gt_cuda_model_stream(m));
    return !gt_cuda_model_unscale_check(m, inv);
}

static double cuda_grad_norm(gt_engine *e) {
    gt_cuda_model *m = dm(e);
    return gt_grad_norm_cuda(gt_cuda_model_grads(m), gt_cuda_model_n_params(m), gt_cuda_model_stream(m));
}

static void cuda_scale_grads(gt_engine *e, float c) {
    gt_cuda_model *m = dm(e);
    gt_scale_cuda(gt_cuda_model_grads(m), gt_cuda_model_n_params(m), c, gt_cuda_model_stream(m));
}

static void cuda_adamw_step(gt_engine *e, const gt_adamw_config *opt, float lr, long t, int decay_all) {
    gt_cuda_model_adamw_step(dm(e), opt, lr, t, decay_all);
}

static void cuda_pull_state(gt_engine *e) {
    gt_model *h = e->host;
    gt_cuda_model_get_state(dm(e), h->params, NULL, h->adam_m, h->adam_v, h->n_params);
}

static void cuda_push_state(gt_engine *e) {
    gt_model *h = e->host;
    gt_cuda_model_set_state(dm(e), h->params, NULL, h->adam_m, h->adam_v, h->n_params);
}

static void cuda_memory(const gt_engine *e, gt_engine_mem *out) {
    const size_t np = e->host->n_params;
    out->device_bytes = gt_cuda_model_device_bytes(dm(e));
    out->state_bytes = 4 * np * sizeof(float);
    /* the rest: activations, targets, the work area and the weight-decay flags */
    out->act_bytes = out->device_bytes > out->state_bytes ? out->device_bytes - out->state_bytes : 0;
}

static void *cuda_stream(gt_engine *e) { return (void *)gt_cuda_model_stream(dm(e)); }

static const gt_engine_i g_cuda = {
    .name = "cuda",
    .free = cuda_free,
    .forward = cuda_forward,
    .input = cuda_input,
    .dpred = cuda_dpred,
    .backward = cuda_backward,
    .zero_grad = cuda_zero_grad,
    .grads = cuda_grads,
    .unscale = cuda_unscale,
    .grad_norm = cuda_grad_norm,
    .scale_grads = cuda_scale_grads,
    .adamw_step = cuda_adamw_step,
    .pull_state = cuda_pull_state,
    .push_state = cuda_push_state,
    .memory = cuda_memory,
    .stream = cuda_stream,
};

void gt_engine_cuda_open(gt_engine *e, const gt_model_config *cfg) {
    e->i = &g_cuda;
    e->host = gt_model_create_host_side(cfg);
    e->ctx = gt_cuda_model_create(e->host, GT_PREC_FP32);
    e->grads_on_device = 1;
}
