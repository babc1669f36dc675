/* nn/engine_cuda.c: the CUDA engine, the gt_engine_i table over one
 * gt_cuda_model (nn/cuda_model.h) on the current CUDA device (see engine.h).
 * Built into gt_nn_cuda only: a CPU-only build has no CUDA symbols.
 *
 * The host model is gt_model_create_host_side: the tables, the host copy of
 * params / adam_m / adam_v (filled by pull_state, read by push_state) and the
 * configuration. x, pred and dpred of the trainer's objective and eval are
 * the engine's pinned buffers (below). The device model holds everything a
 * step touches; a step crosses the bus three times: x up (on a copy stream,
 * overlapping the previous backward) and pred down in forward (which returns
 * after the copy, so the objective can read pred), dpred up in backward.
 * train.graphs (cfg->graphs): forward and backward replayed as CUDA graphs
 * (nn/cuda_model.h gt_cuda_model_set_graphs). Precision: the configuration's
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

/* ---- input: pinned, double-buffered copies. Input j (j = 0, 1) is a pinned
 * host buffer xpin[j] and the model's device input j; a forward copies its
 * x into xpin[j] (nothing to copy when the loader filled gt_engine_input in
 * place), then up on the copy stream while the model's stream may still run
 * the previous micro-batch's backward on input j^1; the model's stream waits
 * for that copy only. consumed[j] marks the end of the work queued on input
 * j (recorded when the next forward switches away from it), and the copy
 * into input j waits for it. pred comes down into a pinned buffer and dpred
 * goes up from one (the objective writes it between the two: the forward's
 * synchronisation orders it after the previous dpred's copy).
 *
 * The device's input wait ("stall" below) is measured with events on the
 * model's stream: from the end of the last work queued before a forward
 * (the previous backward or optimizer step) to the forward's start, after its
 * input has arrived: the time the GPU had nothing to do before that forward.
 * Event pairs are read once complete (no synchronisation in a step). */
#define GT_CUDA_STALL_RING 64
typedef struct cuda_eng {
    gt_cuda_model *m;
    cudaStream_t copy;
    float *xpin[2];
    float *pred_pin, *dpred_pin;
    cudaEvent_t copied[2], consumed[2];
    int last; /* input of the last forward, -1 before the first */
    /* stall: pair i = (end of the work before forward i, forward i's start) */
    cudaEvent_t st_a[GT_CUDA_STALL_RING], st_b[GT_CUDA_STALL_RING];
    int st_head, st_tail; /* pairs [tail, head) recorded, not read yet */
    int st_end_marked;    /* st_a[head] holds the end of the work queued so far */
    double stall_s;       /* summed over read pairs */
} cuda_eng;

static cuda_eng *ce(const gt_engine *e) { return (cuda_eng *)e->ctx; }
static gt_cuda_model *dm(const gt_engine *e) { return ce(e)->m; }

static void *pinned(size_t bytes) {
    void *p = NULL;
    CUDA_CHECK(cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault));
    return p;
}

/* Mark the end of the work queued so far on the model's stream (the start of
 * a possible idle gap before the next forward). */
static void mark_end(cuda_eng *c) {
    CUDA_CHECK(cudaEventRecord(c->st_a[c->st_head], gt_cuda_model_stream(c->m)));
    c->st_end_marked = 1;
}

/* Read the completed pairs (all of them when wait: synchronises). */
static void stall_harvest(cuda_eng *c, int wait) {
    while (c->st_tail != c->st_head) {
        const int i = c->st_tail;
        if (wait) CUDA_CHECK(cudaEventSynchronize(c->st_b[i]));
        else {
            const cudaError_t q = cudaEventQuery(c->st_b[i]);
            if (q == cudaErrorNotReady) break; /* still ahead: not an error, and nothing to clear */
            CUDA_CHECK(q); /* anything else (a failed kernel reported here) is */
        }
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, c->st_a[i], c->st_b[i]));
        if (ms > 0) c->stall_s += ms / 1e3;
        c->st_tail = (i + 1) % GT_CUDA_STALL_RING;
    }
}

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
    cuda_eng *c = ce(e);
    gt_cuda_model_free(c->m); /* synchronises the model's stream */
    CUDA_CHECK(cudaStreamSynchronize(c->copy));
    for (int j = 0; j < 2; j++) {
        cudaFreeHost(c->xpin[j]);
        cudaEventDestroy(c->copied[j]);
        cudaEventDestroy(c->consumed[j]);
    }
    for (int i = 0; i < GT_CUDA_STALL_RING; i++) {
        cudaEventDestroy(c->st_a[i]);
        cudaEventDestroy(c->st_b[i]);
    }
    cudaFreeHost(c->pred_pin);
    cudaFreeHost(c->dpred_pin);
    cudaStreamDestroy(c->copy);
    free(c);
    gt_model_free(e->host);
}

static const float *cuda_forward(gt_engine *e, const float *x, int B, const gt_dropout_key *key) {
    cuda_eng *c = ce(e);
    gt_model *h = e->host;
    GT_CHECK(B > 0 && B <= h->cfg.max_batch, GT_EXIT_USAGE, "model forward: batch %d outside [1, max_batch=%d]", B,
             h->cfg.max_batch);
    cudaStream_t st = gt_cuda_model_stream(c->m);
    gt_model_set_dropout(h, key, B); /* the per-sample keys on the host, uploaded below */
    gt_cuda_model_set_dropout(c->m, h->drop_on ? h->drop_base : NULL, B);
    /* input j: the pinned buffer x already is, else the one not used last */
    const int j = x == c->xpin[0] ? 0 : x == c->xpin[1] ? 1 : (c->last == 0 ? 1 : 0);
    const size_t nb = (size_t)B * h->n_x * sizeof(float);
    if (x != c->xpin[j]) memcpy(c->xpin[j], x, nb); /* its previous copy ended before the last forward's pred */
    if (c->last >= 0) CUDA_CHECK(cudaEventRecord(c->consumed[c->last], st)); /* the work on input `last` ends here */
    float *xd = gt_cuda_model_input(c->m, j);
    CUDA_CHECK(cudaStreamWaitEvent(c->copy, c->consumed[j], 0));
    CUDA_CHECK(cudaMemcpyAsync(xd, c->xpin[j], nb, cudaMemcpyHostToDevice, c->copy));
    CUDA_CHECK(cudaEventRecord(c->copied[j], c->copy));
    CUDA_CHECK(cudaStreamWaitEvent(st, c->copied[j], 0));
    c->last = j;
    /* the idle gap before this forward (see the top): needs an end mark */
    if (c->st_end_marked) {
        const int nxt = (c->st_head + 1) % GT_CUDA_STALL_RING;
        if (nxt == c->st_tail) stall_harvest(c, 1); /* ring full: rare, read them all */
        CUDA_CHECK(cudaEventRecord(c->st_b[c->st_head], st));
        c->st_head = nxt;
        c->st_end_marked = 0;
    }
    int tr = gpu_begin(e);
    gt_cuda_model_forward(c->m, xd, B, 1); /* reads input j in place */
    gpu_end(e, tr, "gpu forward");
    gt_cuda_model_get_pred(c->m, c->pred_pin); /* pred (B, n_y) down: synchronises */
    stall_harvest(c, 0);
    h->batch = B;
    return c->pred_pin;
}

static float *cuda_input(gt_engine *e) { return ce(e)->xpin[ce(e)->last == 0 ? 1 : 0]; }
static float *cuda_dpred(gt_engine *e) { return ce(e)->dpred_pin; }

static void cuda_backward(gt_engine *e, float dloss) {
    GT_CHECK(e->host->batch > 0, GT_EXIT_INTERNAL, "gt_engine_backward called before gt_engine_forward");
    cuda_eng *c = ce(e);
    int tr = gpu_begin(e);
    gt_cuda_model_set_dpred(c->m, c->dpred_pin, 0); /* (B, n_y) up from pinned memory, asynchronous */
    gt_cuda_model_backward(c->m, dloss);
    gpu_end(e, tr, "gpu backward");
    mark_end(c);
}

static double cuda_input_stall(gt_engine *e) {
    stall_harvest(ce(e), 1);
    return ce(e)->stall_s;
}

static void cuda_zero_grad(gt_engine *e) { gt_cuda_model_zero_grad(dm(e)); }
/* the device model reports as each layer's backward is queued; the host model keeps the hook too */
static void cuda_set_grad_ready(gt_engine *e, gt_grad_ready_fn fn, void *ctx) {
    gt_model_set_grad_ready(e->host, fn, ctx);
    gt_cuda_model_set_grad_ready(dm(e), fn, ctx);
}
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
    mark_end(ce(e));
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
    out->device_bytes = gt_cuda_model_device_bytes(dm(e)); /* both device inputs included */
    out->state_bytes = 4 * np * sizeof(float);
    /* the rest: activations, targets, the work area and the weight-decay flags */
    out->act_bytes = out->device_bytes > out->state_bytes ? out->device_bytes - out->state_bytes : 0;
}

static void cuda_graph_stats(gt_engine *e, long *captures, long *replays) {
    gt_cuda_model_graph_stats(dm(e), captures, replays);
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
    .set_grad_ready = cuda_set_grad_ready,
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
    .input_stall = cuda_input_stall,
    .graph_stats = cuda_graph_stats,
};

void gt_engine_cuda_open(gt_engine *e, const gt_model_config *cfg) {
    e->i = &g_cuda;
    e->host = gt_model_create_host_side(cfg);
    _Static_assert((int)GT_PRECISION_BF16 == (int)GT_PREC_BF16 && (int)GT_PRECISION_FP16 == (int)GT_PREC_FP16 &&
                       (int)GT_PRECISION_TF32 == (int)GT_PREC_TF32,
                   "gt_precision and gt_cuda_prec agree");
    cuda_eng *c = GT_CALLOC(1, sizeof *c);
    c->m = gt_cuda_model_create(e->host, (int)cfg->precision);
    gt_cuda_model_set_graphs(c->m, cfg->graphs);
    CUDA_CHECK(cudaStreamCreateWithFlags(&c->copy, cudaStreamNonBlocking));
    const size_t B = (size_t)cfg->max_batch;
    for (int j = 0; j < 2; j++) {
        c->xpin[j] = pinned(B * e->host->n_x * sizeof(float));
        CUDA_CHECK(cudaEventCreateWithFlags(&c->copied[j], cudaEventDisableTiming));
        CUDA_CHECK(cudaEventCreateWithFlags(&c->consumed[j], cudaEventDisableTiming));
        CUDA_CHECK(cudaEventRecord(c->consumed[j], gt_cuda_model_stream(c->m)));
    }
    for (int i = 0; i < GT_CUDA_STALL_RING; i++) {
        CUDA_CHECK(cudaEventCreate(&c->st_a[i]));
        CUDA_CHECK(cudaEventCreate(&c->st_b[i]));
    }
    c->pred_pin = pinned(B * e->host->n_y * sizeof(float));
    c->dpred_pin = pinned(B * e->host->n_y * sizeof(float));
    c->last = -1;
    e->ctx = c;
    e->grads_on_device = 1;
}
