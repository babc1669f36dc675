// nn/ops/cuda/cuda_model.cu: the device model (nn/cuda_model.h), the part
// every kind shares: the buffers (the host model's parameter table and
// activation plan, so layouts are identical), the state copies, the loss, the
// optimizer. Each kind's forward and backward are in cuda_model_<kind>.cu
// (its gt_cuda_kind table, cuda_model_impl.h), listed by the device-kind
// registry cuda_model_kinds.cu; what the kinds use of the shared part is
// cuda_model_kit.cu; the passes (eager, captured, replayed) are in
// cuda_model_graph.cu.
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "nn/ops/cuda/cuda_model_impl.h"
#include "nn/ops/dropout.h"

// Every buffer is zeroed on the model's own stream (non-blocking: it does
// not wait for the legacy default stream, so nothing may be queued there).
static float *dalloc(gt_cuda_model *m, size_t n) {
    m->device_bytes += (n ? n : 1) * sizeof(float);
    return gt_cuda_alloc_floats_on(n, m->stream);
}

extern "C" gt_cuda_model *gt_cuda_model_create(const gt_model *host, int amp) {
    GT_CHECK(host != nullptr, GT_EXIT_INTERNAL, "gt_cuda_model_create: NULL host template");
    GT_CHECK(amp >= 0 && amp <= 3, GT_EXIT_USAGE, "cuda model: amp must be 0 (fp32), 1 (bf16), 2 (fp16), 3 (tf32)");
    gt_cuda_model *m = (gt_cuda_model *)GT_CALLOC(1, sizeof *m);
    m->plan = *host;
    m->plan.params = m->plan.grads = m->plan.adam_m = m->plan.adam_v = m->plan.acts = nullptr;
    m->plan.drop_base = nullptr;
    m->plan.x = m->plan.pred = m->plan.dpred = nullptr;
    m->plan.impl = nullptr;
    m->prec = (gt_cuda_prec)amp;
    m->kind = gt_cuda_kind_of(&m->plan.cfg);
    const gt_model_config *c = &m->plan.cfg;
    const size_t np = m->plan.n_params, B = (size_t)c->max_batch;
    CUDA_CHECK(cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking));
    m->params = dalloc(m, np);
    m->grads = dalloc(m, np);
    m->adam_m = dalloc(m, np);
    m->adam_v = dalloc(m, np);
    { // the device's activation layout (bf16-kept entries take half: nn/model.h)
        size_t *off = (size_t *)GT_CALLOC((size_t)m->plan.n_acts + 1, sizeof *off);
        m->plan.n_act_elems = gt_model_device_act_layout(&m->plan, off);
        for (int j = 0; j < m->plan.n_acts; j++) m->plan.act_table[j].offset = off[j];
        free(off);
    }
    m->acts = dalloc(m, m->plan.n_act_elems);
    m->xbuf[0] = m->x = gt_cuda_act(m, "x");
    m->xbuf[1] = dalloc(m, B * m->plan.n_x); // the second input buffer (gt_cuda_model_input)
    m->slots = gt_cuda_graph_slots_new();
    m->pred = gt_cuda_act(m, "pred");
    m->dpred = gt_cuda_act(m, "dpred");
    m->y = dalloc(m, B * m->plan.n_y);
    m->mask = dalloc(m, B * m->plan.n_y);
    m->n_work = gt_model_device_work_elems(c); /* the planner's formula (nn/model.h) */
    m->work = dalloc(m, m->n_work);
    m->loss_dev = dalloc(m, 2);
    m->sumsq_dev = (double *)dalloc(m, 4); // 2 doubles: clip norm, lstm loss
    m->device_bytes += np;
    CUDA_CHECK(cudaMalloc(&m->decay_flags, np ? np : 1));
    {
        uint8_t *flags = (uint8_t *)GT_CALLOC(np ? np : 1, 1);
        for (int i = 0; i < m->plan.n_tensors; i++)
            memset(flags + m->plan.tensors[i].offset, m->plan.tensors[i].decay ? 1 : 0, m->plan.tensors[i].n_elem);
        CUDA_CHECK(cudaMemcpyAsync(m->decay_flags, flags, np ? np : 1, cudaMemcpyHostToDevice, m->stream));
        CUDA_CHECK(cudaStreamSynchronize(m->stream)); // before the host copy goes
        free(flags);
    }
    if (host->params && np)
        CUDA_CHECK(cudaMemcpyAsync(m->params, host->params, np * sizeof(float), cudaMemcpyHostToDevice, m->stream));
    // the process's reduction scratch now, not lazily inside a step (a step
    // may be captured into a CUDA graph, where cudaMalloc is not allowed)
    gt_cuda_stream_prepare(m->stream);
    // the kind's pointers, its cuDNN state in the work area, what must not
    // happen inside a capture (cuda_model_<kind>.cu)
    m->kind->create(m);
    CUDA_CHECK(cudaStreamSynchronize(m->stream)); // zeroed and uploaded before create returns
    gt_model_sizes sz = {np, host->n_act_elems, m->plan.n_x, m->plan.n_y, 0, m->plan.n_act_elems};
    GT_CHECK(m->device_bytes == gt_model_device_bytes(c, &sz), GT_EXIT_INTERNAL,
             "cuda model: %zu device bytes allocated, the planner's formula says %zu (nn/model.c out of date)",
             m->device_bytes, gt_model_device_bytes(c, &sz));
    return m;
}

extern "C" void gt_cuda_model_free(gt_cuda_model *m) {
    if (!m) return;
    CUDA_CHECK(cudaStreamSynchronize(m->stream));
    m->kind->free(m);
    gt_cuda_free(m->params);
    gt_cuda_free(m->grads);
    gt_cuda_free(m->adam_m);
    gt_cuda_free(m->adam_v);
    gt_cuda_free(m->acts);
    gt_cuda_free(m->xbuf[1]);
    gt_cuda_graph_slots_free(m->slots);
    gt_cuda_free(m->y);
    gt_cuda_free(m->mask);
    gt_cuda_free(m->work);
    gt_cuda_free(m->loss_dev);
    gt_cuda_free(m->sumsq_dev);
    gt_cuda_free(m->decay_flags);
    gt_cuda_stream_release(m->stream);
    CUDA_CHECK(cudaStreamDestroy(m->stream));
    free(m);
}

extern "C" cudaStream_t gt_cuda_model_stream(const gt_cuda_model *m) { return m->stream; }
extern "C" const gt_model_config *gt_cuda_model_config(const gt_cuda_model *m) { return &m->plan.cfg; }
extern "C" size_t gt_cuda_model_n_params(const gt_cuda_model *m) { return m->plan.n_params; }
extern "C" size_t gt_cuda_model_n_x(const gt_cuda_model *m) { return m->plan.n_x; }
extern "C" size_t gt_cuda_model_n_y(const gt_cuda_model *m) { return m->plan.n_y; }
extern "C" gt_cuda_prec gt_cuda_model_precision(const gt_cuda_model *m) { return m->prec; }
extern "C" size_t gt_cuda_model_device_bytes(const gt_cuda_model *m) { return m->device_bytes; }
extern "C" const char *gt_cuda_model_lstm_impl(const gt_cuda_model *m) {
    return m->kind->lstm_impl ? m->kind->lstm_impl(m) : "none";
}
extern "C" const char *gt_cuda_model_conv_impl(const gt_cuda_model *m) {
    return m->kind->conv_impl ? m->kind->conv_impl(m) : "none";
}
extern "C" float *gt_cuda_model_params(gt_cuda_model *m) { return m->params; }
extern "C" float *gt_cuda_model_grads(gt_cuda_model *m) { return m->grads; }
extern "C" float *gt_cuda_model_adam_m(gt_cuda_model *m) { return m->adam_m; }
extern "C" float *gt_cuda_model_adam_v(gt_cuda_model *m) { return m->adam_v; }
extern "C" float *gt_cuda_model_x(gt_cuda_model *m) { return m->xbuf[0]; }
extern "C" float *gt_cuda_model_input(gt_cuda_model *m, int j) { return m->xbuf[j & 1]; }

// Whole-buffer copies on the model's stream, complete on return.
static void copy_on(const gt_cuda_model *m, void *dst, const void *src, size_t n, cudaMemcpyKind kind) {
    if (dst && src && n) CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(float), kind, m->stream));
}

extern "C" void gt_cuda_model_set_state(gt_cuda_model *m, const float *params, const float *grads,
                                        const float *adam_m, const float *adam_v, size_t n) {
    GT_CHECK(n == m->plan.n_params, GT_EXIT_DATA, "parameter count %zu does not match the model's %zu", n,
             m->plan.n_params);
    copy_on(m, m->params, params, n, cudaMemcpyHostToDevice);
    copy_on(m, m->grads, grads, n, cudaMemcpyHostToDevice);
    copy_on(m, m->adam_m, adam_m, n, cudaMemcpyHostToDevice);
    copy_on(m, m->adam_v, adam_v, n, cudaMemcpyHostToDevice);
    CUDA_CHECK(cudaStreamSynchronize(m->stream));
}

extern "C" void gt_cuda_model_get_state(const gt_cuda_model *m, float *params, float *grads, float *adam_m,
                                        float *adam_v, size_t n) {
    GT_CHECK(n == m->plan.n_params, GT_EXIT_DATA, "parameter count %zu does not match the model's %zu", n,
             m->plan.n_params);
    copy_on(m, params, m->params, n, cudaMemcpyDeviceToHost);
    copy_on(m, grads, m->grads, n, cudaMemcpyDeviceToHost);
    copy_on(m, adam_m, m->adam_m, n, cudaMemcpyDeviceToHost);
    copy_on(m, adam_v, m->adam_v, n, cudaMemcpyDeviceToHost);
    CUDA_CHECK(cudaStreamSynchronize(m->stream));
}

extern "C" const float *gt_cuda_model_forward(gt_cuda_model *m, const float *x, int B, int on_device) {
    GT_CHECK(B > 0 && B <= m->plan.cfg.max_batch, GT_EXIT_USAGE, "model forward: batch %d outside [1, max_batch=%d]",
             B, m->plan.cfg.max_batch);
    const size_t n = (size_t)B * m->plan.n_x * sizeof(float);
    if (on_device && (x == m->xbuf[0] || x == m->xbuf[1])) {
        m->x = (float *)x; // read in place: the caller keeps it until the backward has run
    } else {
        m->x = m->xbuf[0];
        CUDA_CHECK(cudaMemcpyAsync(m->x, x, n, on_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice,
                                   m->stream));
    }
    m->batch = B;
    gt_cuda_model_run_pass(m, 0, B, 1.0f);
    return m->pred;
}

extern "C" void gt_cuda_model_get_pred(const gt_cuda_model *m, float *pred_host) {
    copy_on(m, pred_host, m->pred, (size_t)m->batch * m->plan.n_y, cudaMemcpyDeviceToHost);
    CUDA_CHECK(cudaStreamSynchronize(m->stream));
}

extern "C" void gt_cuda_model_set_dpred(gt_cuda_model *m, const float *dpred, int on_device) {
    GT_CHECK(m->batch > 0, GT_EXIT_INTERNAL, "gt_cuda_model_set_dpred called before gt_cuda_model_forward");
    // From pageable host memory the call returns once the source is staged:
    // the caller may overwrite dpred right away.
    copy_on(m, m->dpred, dpred, (size_t)m->batch * m->plan.n_y,
            on_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice);
}

extern "C" void gt_cuda_model_set_dropout(gt_cuda_model *m, const uint64_t *base, int B) {
    m->drop_on = 0;
    if (!base || !(m->plan.cfg.dropout > 0.0f)) return;
    GT_CHECK(B > 0 && B <= m->plan.cfg.max_batch, GT_EXIT_INTERNAL, "dropout keys for batch %d", B);
    GT_CHECK(m->drop_keys, GT_EXIT_INTERNAL, "cuda model: dropout on model kind %s, whose plan has no dropout keys",
             gt_model_kind_name(m->plan.cfg.kind));
    // B uint64 keys = 2B floats of the kind's planned act; staged from pageable memory
    copy_on(m, m->drop_keys, base, 2 * (size_t)B, cudaMemcpyHostToDevice);
    m->drop_on = 1;
}

extern "C" void gt_cuda_model_loss_async(gt_cuda_model *m, const float *y_dev, const float *mask_dev) {
    GT_CHECK(m->batch > 0, GT_EXIT_INTERNAL, "gt_cuda_model_loss called before gt_cuda_model_forward");
    gt_loss_masked_cuda(m->plan.cfg.loss, m->loss_dev, m->dpred, m->pred, y_dev, mask_dev,
                        (size_t)m->batch * m->plan.n_y, 1.0f, m->stream);
}

extern "C" float gt_cuda_model_loss(gt_cuda_model *m, const float *y, const float *mask, int on_device) {
    GT_CHECK(m->batch > 0, GT_EXIT_INTERNAL, "gt_cuda_model_loss called before gt_cuda_model_forward");
    const size_t n = (size_t)m->batch * m->plan.n_y;
    if (!on_device) {
        CUDA_CHECK(cudaMemcpyAsync(m->y, y, n * sizeof(float), cudaMemcpyHostToDevice, m->stream));
        if (mask) CUDA_CHECK(cudaMemcpyAsync(m->mask, mask, n * sizeof(float), cudaMemcpyHostToDevice, m->stream));
        y = m->y;
        mask = mask ? m->mask : nullptr;
    }
    gt_cuda_model_loss_async(m, y, mask);
    return gt_cuda_model_last_loss(m);
}

extern "C" void gt_cuda_model_set_grad_ready(gt_cuda_model *m, gt_grad_ready_fn fn, void *ctx) {
    m->grad_ready = fn;
    m->grad_ready_ctx = ctx;
}

extern "C" void gt_cuda_model_backward(gt_cuda_model *m, float dloss) {
    GT_CHECK(m->batch > 0, GT_EXIT_INTERNAL, "gt_cuda_model_backward called before gt_cuda_model_forward");
    gt_cuda_model_run_pass(m, 1, m->batch, dloss);
}

extern "C" void gt_cuda_model_zero_grad(gt_cuda_model *m) {
    CUDA_CHECK(cudaMemsetAsync(m->grads, 0, m->plan.n_params * sizeof(float), m->stream));
}

extern "C" double gt_cuda_model_clip_grad_norm(gt_cuda_model *m, float max_norm) {
    gt_cuda_model_clip_grad_norm_async(m, max_norm);
    double h = 0.0;
    CUDA_CHECK(cudaMemcpyAsync(&h, m->sumsq_dev, sizeof h, cudaMemcpyDeviceToHost, m->stream));
    CUDA_CHECK(cudaStreamSynchronize(m->stream));
    return sqrt(h);
}

extern "C" void gt_cuda_model_clip_grad_norm_async(gt_cuda_model *m, float max_norm) {
    gt_clip_grad_norm_async_cuda(m->grads, m->plan.n_params, max_norm, m->sumsq_dev, m->stream);
}

extern "C" int gt_cuda_model_unscale_check(gt_cuda_model *m, float inv_scale) {
    return gt_cuda_unscale_check(m->grads, m->plan.n_params, inv_scale, m->stream);
}

extern "C" void gt_cuda_model_adamw_step(gt_cuda_model *m, const gt_adamw_config *opt, float lr, long t,
                                         int decay_all) {
    GT_CHECK(t >= 1, GT_EXIT_INTERNAL, "AdamW step count must be >= 1 (got %ld)", t);
    gt_adamw_scalars sd = gt_adamw_scalars_make(opt, lr, t, 1);
    gt_adamw_scalars sp = decay_all ? sd : gt_adamw_scalars_make(opt, lr, t, 0);
    gt_adamw_update_flags_cuda(m->params, m->grads, m->adam_m, m->adam_v, m->decay_flags, m->plan.n_params, &sd, &sp,
                               m->stream);
}

extern "C" void gt_cuda_model_synchronize(gt_cuda_model *m) { CUDA_CHECK(cudaStreamSynchronize(m->stream)); }
