/* nn/engine_cuda.c: the CUDA engine, the gt_engine_i table over one
 * gt_cuda_model (nn/cuda_model.h) on the current CUDA device (see engine.h).
 * Built into gt_nn_cuda only: a CPU-only build has no CUDA symbols.
 *
 * The host model is gt_model_create_host_side: the tables, the host copy of
 * params / adam_m / adam_v (filled by pull_state, read by push_state) and the
 * host x / pred / dpred of the trainer's objective and eval. The device model
 * holds everything a step touches; a step crosses the bus three times: x up
 * and pred down in forward (which returns after the copy, so the objective
 * can read pred), dpred up in backward. Precision: the configuration's
 * (gt_model_config.precision, train.precision): fp32 by default (cuBLAS
 * without TF32, so the engine test compares it with the host engine at fp32
 * tolerances), or bf16 / fp16 / tf32 tensor-core products with fp32 storage,
 * master weights and optimizer state. */
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/check_cuda.h"
#include "core/timer.h"
#include "core/trace.h"
#include "nn/cuda_model.h"
#include "nn/engine.h"
#include "nn/engine_impl.h"

static gt_cuda_model *dm(const gt_engine *e) { return (gt_cuda_model *)e->ctx; }

/* ---- the timeline (train.trace): the model's stream as a thread of the
 * trace. While tracing, forward, backward and the optimizer step are bracketed
 * by CUDA events on the stream (created then: nothing when the trace is off);
 * at the end trace_flush turns them into spans: the time of each event after
 * a reference event, whose host time was taken when it completed. At most
 * GT_CUDA_TRACE_MAX spans (later ones are not recorded). */
#define GT_CUDA_TRACE_MAX 8192
typedef struct gpu_span {
    const char *name;
    cudaEvent_t a, b;
} gpu_span;
static struct {
    gpu_span *s;
    int n;
    cudaEvent_t ref;
    double ref_host;
} g_tr;

static int gpu_begin(gt_engine *e) {
    if (!GT_TRACE_ON()) return -1;
    cudaStream_t st = gt_cuda_model_stream(dm(e));
    if (!g_tr.s) {
        g_tr.s = calloc(GT_CUDA_TRACE_MAX, sizeof *g_tr.s);
        if (!g_tr.s) return -1;
        CUDA_CHECK(cudaEventCreate(&g_tr.ref));
        CUDA_CHECK(cudaEventRecord(g_tr.ref, st));
        CUDA_CHECK(cudaEventSynchronize(g_tr.ref));
        g_tr.ref_host = gt_now();
    }
    if (g_tr.n == GT_CUDA_TRACE_MAX) return -1;
    gpu_span *p = &g_tr.s[g_tr.n];
    CUDA_CHECK(cudaEventCreate(&p->a));
    CUDA_CHECK(cudaEventCreate(&p->b));
    CUDA_CHECK(cudaEventRecord(p->a, st));
    return g_tr.n++;
}

static void gpu_end(gt_engine *e, int i, const char *name) {
    if (i < 0) return;
    g_tr.s[i].name = name;
    CUDA_CHECK(cudaEventRecord(g_tr.s[i].b, gt_cuda_model_stream(dm(e))));
}

static void cuda_trace_flush(gt_engine *e) {
    (void)e;
    for (int i = 0; i < g_tr.n; i++) {
        gpu_span *p = &g_tr.s[i];
        float a = 0, b = 0;
        CUDA_CHECK(cudaEventSynchronize(p->b));
        CUDA_CHECK(cudaEventElapsedTime(&a, g_tr.ref, p->a));
        CUDA_CHECK(cudaEventElapsedTime(&b, g_tr.ref, p->b));
        gt_trace_record_tid(GT_TRACE_TID_GPU, p->name, g_tr.ref_host + a / 1e3, g_tr.ref_host + b / 1e3, NULL, 0);
        cudaEventDestroy(p->a);
        cudaEventDestroy(p->b);
    }
    if (g_tr.s) cudaEventDestroy(g_tr.ref);
    free(g_tr.s);
    memset(&g_tr, 0, sizeof g_tr);
}

static void cuda_free(gt_engine *e) {
    gt_cuda_model_free(dm(e));
    gt_model_free(e->host);
}

static const float *cuda_forward(gt_engine *e, const float *x, int B, const gt_dropout_key *key) {
    gt_model *h = e->host;
    gt_model_set_dropout(h, key, B); /* the per-sample keys on the host, uploaded below */
    gt_cuda_model_set_dropout(dm(e), h->drop_on ? h->drop_base : NULL, B);
    int tr = gpu_begin(e);
    gt_cuda_model_forward(dm(e), x, B, 0);   /* x (B, n_x) up, the forward queued */
    gpu_end(e, tr, "gpu forward");
    gt_cuda_model_get_pred(dm(e), h->pred);  /* pred (B, n_y) down: synchronises */
    h->batch = B;
    return h->pred;
}

static float *cuda_input(gt_engine *e) { return e->host->x; }
static float *cuda_dpred(gt_engine *e) { return e->host->dpred; }

static void cuda_backward(gt_engine *e, float dloss) {
    GT_CHECK(e->host->batch > 0, GT_EXIT_INTERNAL, "gt_engine_backward called before gt_engine_forward");
    int tr = gpu_begin(e);
    gt_cuda_model_set_dpred(dm(e), e->host->dpred, 0); /* (B, n_y) up */
    gt_cuda_model_set_grad_ready(dm(e), e->host->grad_ready, e->host->grad_ready_ctx); /* the host model's hook */
    gt_cuda_model_backward(dm(e), dloss);
    gpu_end(e, tr, "gpu backward");
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
    int tr = gpu_begin(e);
    gt_cuda_model_adamw_step(dm(e), opt, lr, t, decay_all);
    gpu_end(e, tr, "gpu optimizer");
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
    .trace_flush = cuda_trace_flush,
};

void gt_engine_cuda_open(gt_engine *e, const gt_model_config *cfg) {
    e->i = &g_cuda;
    e->host = gt_model_create_host_side(cfg);
    _Static_assert((int)GT_PRECISION_BF16 == (int)GT_PREC_BF16 && (int)GT_PRECISION_FP16 == (int)GT_PREC_FP16 &&
                       (int)GT_PRECISION_TF32 == (int)GT_PREC_TF32,
                   "gt_precision and gt_cuda_prec agree");
    e->ctx = gt_cuda_model_create(e->host, (int)cfg->precision);
    e->grads_on_device = 1;
}
