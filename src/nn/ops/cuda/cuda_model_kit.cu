// nn/ops/cuda/cuda_model_kit.cu: what a kind's device file
// (cuda_model_<kind>.cu) uses of the shared device model: its activations and
// parameters by name (at creation) and the last loss. Uses nothing of the
// registry (cuda_model_kinds.cu) nor of the shared part (cuda_model.cu).
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "nn/ops/cuda/cuda_model_impl.h"

// ---------------------------------------------------------------- lookup --
// By name: model creation only (the kinds' create, the framework's buffers).
float *gt_cuda_act_find(gt_cuda_model *m, const char *name) {
    for (int j = 0; j < m->plan.n_acts; j++)
        if (strcmp(m->plan.act_table[j].name, name) == 0) return m->acts + m->plan.act_table[j].offset;
    return nullptr;
}
float *gt_cuda_act(gt_cuda_model *m, const char *fmt, ...) {
    char name[2 * GT_MODEL_NAME_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    float *a = gt_cuda_act_find(m, name);
    if (a) return a;
    GT_FAIL(GT_EXIT_INTERNAL, "cuda model: activation '%s' not in the host plan (kind %s)", name,
            gt_model_kind_name(m->plan.cfg.kind));
}

static size_t tensor_off(const gt_cuda_model *m, const char *fmt, va_list ap) {
    char name[2 * GT_MODEL_NAME_LEN];
    vsnprintf(name, sizeof name, fmt, ap);
    for (int i = 0; i < m->plan.n_tensors; i++)
        if (strcmp(m->plan.tensors[i].name, name) == 0) return m->plan.tensors[i].offset;
    GT_FAIL(GT_EXIT_INTERNAL, "cuda model: parameter '%s' not in the host table", name);
}
pg gt_cuda_pg(gt_cuda_model *m, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t o = tensor_off(m, fmt, ap);
    va_end(ap);
    return pg{m->params + o, m->grads + o};
}

extern "C" float gt_cuda_model_last_loss(gt_cuda_model *m) {
    float h = 0.0f;
    CUDA_CHECK(cudaMemcpyAsync(&h, m->loss_dev, sizeof h, cudaMemcpyDeviceToHost, m->stream));
    CUDA_CHECK(cudaStreamSynchronize(m->stream));
    m->loss = h;
    return h;
}
