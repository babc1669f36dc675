/* nn/engine.c: the engine kinds, creation and the calls every engine shares
 * (see engine.h); the tables are in engine_host.c and engine_cuda.c. */
#include "nn/engine.h"

#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "nn/engine_impl.h"
#include "nn/ops/cpu/gemm.h"

static const char *const g_kind_names[GT_ENGINE_KIND_COUNT] = {
    "host",
#ifdef GT_HAVE_CUDA
    "cuda",
#endif
};

const char *gt_engine_kind_name(gt_engine_kind kind) {
    return (unsigned)kind < GT_ENGINE_KIND_COUNT ? g_kind_names[kind] : "?";
}

int gt_engine_kind_parse(const char *name) {
    for (int k = 0; k < GT_ENGINE_KIND_COUNT; k++)
        if (name && !strcmp(name, g_kind_names[k])) return k;
    return -1;
}

gt_precision gt_engine_auto_precision(gt_engine_kind kind, int gpu_cc_major, const char **why) {
    const char *w;
    int units;
    if (kind == GT_ENGINE_HOST) {
        units = gt_cpu_has_bf16_units();
        w = units                    ? "the CPU has bf16 units"
            : gt_cpu_bf16_available() ? "no bf16 units on this CPU as oneDNN sees it"
                                      : "this build has no oneDNN";
    } else {
        units = gpu_cc_major >= 8;
        w = units ? "GPU with bf16 tensor cores"
            : gpu_cc_major > 0 ? "GPU without bf16 tensor cores"
                               : "the GPU's compute capability is not known here";
    }
    if (why) *why = w;
    return units ? GT_PRECISION_BF16 : GT_PRECISION_FP32;
}

gt_engine *gt_engine_create(gt_engine_kind kind, const gt_model_config *cfg) {
    GT_CHECK((unsigned)kind < GT_ENGINE_KIND_COUNT, GT_EXIT_USAGE, "engine kind %d is not built into this binary",
             (int)kind);
    gt_engine *e = GT_CALLOC(1, sizeof *e);
    e->kind = kind;
    switch (kind) {
#ifdef GT_HAVE_CUDA
    case GT_ENGINE_CUDA: gt_engine_cuda_open(e, cfg); break;
#endif
    default: gt_engine_host_open(e, cfg); break;
    }
    return e;
}

void gt_engine_free(gt_engine *e) {
    if (!e) return;
    e->i->free(e);
    free(e);
}

void gt_engine_init(gt_engine *e, uint64_t seed) {
    gt_model_init(e->host, seed);
    gt_engine_push_state(e);
}

/* ------------------------------------------------- the table's calls -- */
gt_engine_kind gt_engine_kind_of(const gt_engine *e) { return e->kind; }
const char *gt_engine_name(const gt_engine *e) { return e->i->name; }
int gt_engine_grads_on_device(const gt_engine *e) { return e->grads_on_device; }
gt_model *gt_engine_model(const gt_engine *e) { return e->host; }
const gt_model_config *gt_engine_config(const gt_engine *e) { return &e->host->cfg; }
size_t gt_engine_n_params(const gt_engine *e) { return e->host->n_params; }
size_t gt_engine_n_x(const gt_engine *e) { return e->host->n_x; }
size_t gt_engine_n_y(const gt_engine *e) { return e->host->n_y; }
int gt_engine_max_batch(const gt_engine *e) { return e->host->cfg.max_batch; }

const float *gt_engine_forward(gt_engine *e, const float *x, int B) { return e->i->forward(e, x, B, NULL); }
const float *gt_engine_forward_train(gt_engine *e, const float *x, int B, const gt_dropout_key *key) {
    return e->i->forward(e, x, B, key);
}
float *gt_engine_input(gt_engine *e) { return e->i->input(e); }
float *gt_engine_dpred(gt_engine *e) { return e->i->dpred(e); }
void gt_engine_backward(gt_engine *e, float dloss) { e->i->backward(e, dloss); }
void gt_engine_zero_grad(gt_engine *e) { e->i->zero_grad(e); }
void gt_engine_set_grad_ready(gt_engine *e, gt_grad_ready_fn fn, void *ctx) { e->i->set_grad_ready(e, fn, ctx); }
float *gt_engine_grads(gt_engine *e) { return e->i->grads(e); }
int gt_engine_unscale(gt_engine *e, float inv_scale) { return e->i->unscale(e, inv_scale); }
double gt_engine_grad_norm(gt_engine *e) { return e->i->grad_norm(e); }
void gt_engine_scale_grads(gt_engine *e, float coef) { e->i->scale_grads(e, coef); }
void gt_engine_adamw_step(gt_engine *e, const gt_adamw_config *opt, float lr, long t, int decay_all) {
    e->i->adamw_step(e, opt, lr, t, decay_all);
}
void gt_engine_pull_state(gt_engine *e) { e->i->pull_state(e); }
void gt_engine_push_state(gt_engine *e) { e->i->push_state(e); }
void gt_engine_memory(const gt_engine *e, gt_engine_mem *out) { e->i->memory(e, out); }
void *gt_engine_stream(gt_engine *e) { return e->i->stream(e); }
double gt_engine_input_stall(gt_engine *e) { return e->i->input_stall ? e->i->input_stall(e) : -1.0; }
void gt_engine_trace_flush(gt_engine *e) {
    if (e->i->trace_flush) e->i->trace_flush(e);
}
void gt_engine_graph_stats(gt_engine *e, long *captures, long *replays) {
    if (captures) *captures = 0;
    if (replays) *replays = 0;
    if (e->i->graph_stats) e->i->graph_stats(e, captures, replays);
}
