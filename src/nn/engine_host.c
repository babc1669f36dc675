/* nn/engine_host.c: the host engine (OpenBLAS + the engine thread pool):
 * the gt_engine_i table over a gt_model (see engine.h). The host model is
 * the state itself, so every entry is the gt_model_* call it names. */
#include "nn/engine.h"

#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "nn/engine_impl.h"
#include "core/watchdog.h"

static void host_free(gt_engine *e) { gt_model_free(e->host); }
static const float *host_forward(gt_engine *e, const float *x, int B, const gt_dropout_key *key) {
    gt_watchdog_beat("engine forward (nn/engine_host.c)");
    return gt_model_forward_train(e->host, x, B, key);
}
static float *host_input(gt_engine *e) { return e->host->x; }
static float *host_dpred(gt_engine *e) { return e->host->dpred; }
static void host_backward(gt_engine *e, float dloss) {
    gt_watchdog_beat("engine backward (nn/engine_host.c)");
    gt_model_backward(e->host, dloss);
}
static void host_zero_grad(gt_engine *e) { gt_model_zero_grad(e->host); }
static void host_set_grad_ready(gt_engine *e, gt_grad_ready_fn fn, void *ctx) { gt_model_set_grad_ready(e->host, fn, ctx); }
static float *host_grads(gt_engine *e) { return e->host->grads; }
static int host_unscale(gt_engine *e, float inv) { return gt_unscale_check(e->host->grads, e->host->n_params, inv); }
static double host_grad_norm(gt_engine *e) { return gt_grad_norm(e->host->grads, e->host->n_params); }
static void host_scale_grads(gt_engine *e, float c) { gt_scale(e->host->grads, e->host->n_params, c); }
static void host_adamw_step(gt_engine *e, const gt_adamw_config *opt, float lr, long t, int decay_all) {
    gt_model_adamw_step(e->host, opt, lr, t, decay_all);
}
static void host_state_noop(gt_engine *e) { (void)e; } /* the host model is the state */
static void host_memory(const gt_engine *e, gt_engine_mem *out) {
    out->state_bytes = gt_model_state_bytes(e->host);
    out->act_bytes = gt_model_act_bytes(e->host);
    out->device_bytes = 0;
}

static void *host_stream(gt_engine *e) {
    (void)e;
    return NULL;
}

static const gt_engine_i g_host = {
    .name = "host",
    .free = host_free,
    .forward = host_forward,
    .input = host_input,
    .dpred = host_dpred,
    .backward = host_backward,
    .zero_grad = host_zero_grad,
    .set_grad_ready = host_set_grad_ready,
    .grads = host_grads,
    .unscale = host_unscale,
    .grad_norm = host_grad_norm,
    .scale_grads = host_scale_grads,
    .adamw_step = host_adamw_step,
    .pull_state = host_state_noop,
    .push_state = host_state_noop,
    .memory = host_memory,
    .stream = host_stream,
};

void gt_engine_host_open(gt_engine *e, const gt_model_config *cfg) {
    e->i = &g_host;
    /* the CPU ops' products follow the model's own cfg.precision (nn/model.c sets them around
     * each forward and backward: nn/ops/cpu/gemm.h) */
    e->host = gt_model_create(cfg);
    e->grads_on_device = 0;
}
