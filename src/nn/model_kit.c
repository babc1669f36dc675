/* nn/model_kit.c: what a kind's file (nn/model_<kind>.c) uses of the
 * framework: the parameter and activation tables its plan fills and the trace
 * spans of its layers. Uses nothing of the registry (nn/model_kinds.c) nor of
 * the generic API (nn/model.c). */
#include "nn/model.h"

#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "core/timer.h"
#include "core/trace.h"

/* ------------------------------------------------------------- planning -- */
int gt_model_add_param(gt_model *m, const char *name, int ndim, const int *shape, gt_init_kind init,
                       float init_scale, int decay) {
    GT_ASSERT(m->n_tensors < GT_MODEL_MAX_TENSORS);
    GT_ASSERT(ndim >= 1 && ndim <= 4);
    GT_ASSERT(strlen(name) < GT_MODEL_NAME_LEN);
    gt_param_tensor *t = &m->tensors[m->n_tensors];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = ndim;
    t->n_elem = 1;
    for (int d = 0; d < ndim; d++) {
        GT_CHECK(shape[d] > 0, GT_EXIT_USAGE, "parameter %s: dimension %d is %d (must be > 0)", name, d,
                 shape[d]);
        t->shape[d] = shape[d];
        t->n_elem *= (size_t)shape[d];
    }
    t->offset = m->n_params;
    t->init = init;
    t->init_scale = init_scale;
    t->decay = decay;
    m->n_params += t->n_elem;
    return m->n_tensors++;
}

int gt_model_add_act(gt_model *m, const char *name, size_t n_elem) {
    GT_ASSERT(m->n_acts < GT_MODEL_MAX_ACTS);
    GT_ASSERT(strlen(name) < GT_MODEL_NAME_LEN);
    gt_act_tensor *a = &m->act_table[m->n_acts];
    snprintf(a->name, sizeof a->name, "%s", name);
    a->n_elem = n_elem;
    a->offset = m->n_act_elems;
    m->n_act_elems += (n_elem + GT_MODEL_ACT_ALIGN_ELEMS - 1) / GT_MODEL_ACT_ALIGN_ELEMS * GT_MODEL_ACT_ALIGN_ELEMS;
    return m->n_acts++;
}

double gt_model_span_begin(void) { return GT_TRACE_ON() ? gt_now() : -1.0; }

void gt_model_span_end(const char *name, double t0, int64_t layer) {
    if (t0 >= 0) gt_trace_record(name, t0, gt_now(), layer >= 0 ? "layer" : NULL, layer);
}

