/* nn/model.c: generic model API: creation from the kind's plan, device
 * sizes, per-kind dispatch, deterministic init, AdamW over the flat buffers.
 * The kind registry and the rules read from its tables: nn/model_kinds.c;
 * the tables a kind's plan fills and the trace spans: nn/model_kit.c. */
#include "nn/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "nn/ops/cpu/gemm.h"
#include "nn/ops/dropout.h"

/* ------------------------------------------------------------- planning -- */
static float *alloc_floats(size_t n) {
    size_t n_bytes = (n ? n : 1) * sizeof(float);
    n_bytes = (n_bytes + 63) / 64 * 64;
    float *p = (float *)GT_ALIGNED_ALLOC(n_bytes);
    memset(p, 0, n_bytes);
    return p;
}

/* The tables of a model (parameters, activations), nothing allocated but the
 * kind's small struct; the framework's acts x, pred, dpred are the last three. */
static gt_model *plan_model(const gt_model_config *cfg) {
    const gt_model_vtable *vt = gt_model_kind_table_checked(cfg->kind);
    GT_CHECK(cfg->max_batch > 0, GT_EXIT_USAGE, "model: max_batch must be > 0 (got %d)", cfg->max_batch);
    GT_CHECK((unsigned)cfg->loss < GT_LOSS_KIND_COUNT, GT_EXIT_USAGE, "model: unknown loss kind %d",
             (int)cfg->loss);
    GT_CHECK(cfg->window > 0 && cfg->n_in > 0 && cfg->n_out > 0, GT_EXIT_USAGE,
             "model: window, n_in and n_out must be > 0 (got %d, %d, %d)", cfg->window, cfg->n_in,
             cfg->n_out);
    gt_model_config_check_dropout(cfg);
    gt_model *m = (gt_model *)GT_CALLOC(1, sizeof *m);
    m->cfg = *cfg;
    m->vt = vt;
    vt->plan(m);
    GT_ASSERT(m->n_x > 0 && m->n_y > 0);
    size_t B = (size_t)cfg->max_batch;
    gt_model_add_act(m, "x", B * m->n_x);
    gt_model_add_act(m, "pred", B * m->n_y);
    gt_model_add_act(m, "dpred", B * m->n_y);
    return m;
}

int gt_model_act_device_bf16(const gt_model_config *cfg, const char *name) {
    const gt_model_vtable *vt = gt_model_kind_table_checked(cfg->kind);
    return vt->act_device_bf16 ? vt->act_device_bf16(cfg, name) : 0;
}

size_t gt_model_device_act_layout(const gt_model *m, size_t *offsets) {
    size_t off = 0;
    for (int j = 0; j < m->n_acts; j++) {
        const gt_act_tensor *a = &m->act_table[j];
        size_t floats = gt_model_act_device_bf16(&m->cfg, a->name) ? (a->n_elem + 1) / 2 : a->n_elem;
        if (offsets) offsets[j] = off;
        off += (floats + GT_MODEL_ACT_ALIGN_ELEMS - 1) / GT_MODEL_ACT_ALIGN_ELEMS * GT_MODEL_ACT_ALIGN_ELEMS;
    }
    return off;
}

void gt_model_plan_sizes(const gt_model_config *cfg, gt_model_sizes *out) {
    gt_model *m = plan_model(cfg);
    out->n_params = m->n_params;
    out->n_act_elems = m->n_act_elems;
    out->n_act_elems_device = gt_model_device_act_layout(m, NULL);
    out->n_x = m->n_x;
    out->n_y = m->n_y;
    out->host_bytes = gt_model_state_bytes(m) + gt_model_act_bytes(m);
    gt_model_free(m);
}

size_t gt_model_device_work_elems(const gt_model_config *c) {
    const gt_model_vtable *vt = gt_model_kind_table_checked(c->kind);
    return vt->device_work_elems ? vt->device_work_elems(c) : 0;
}

size_t gt_model_device_bytes(const gt_model_config *cfg, const gt_model_sizes *s) {
    /* every buffer of gt_cuda_model_create (nn/ops/cuda/cuda_model.cu), as it counts them */
#define DALLOC(n) (((size_t)(n) > 0 ? (size_t)(n) : 1) * sizeof(float))
    size_t b = 4 * DALLOC(s->n_params) + DALLOC(s->n_act_elems_device) + 2 * DALLOC((size_t)cfg->max_batch * s->n_y);
    b += DALLOC((size_t)cfg->max_batch * s->n_x); /* the second input buffer (double-buffered copies) */
    b += DALLOC(gt_model_device_work_elems(cfg)) + DALLOC(2) + DALLOC(4);
    b += s->n_params; /* weight-decay flags, one byte per parameter */
#undef DALLOC
    return b;
}

gt_model *gt_model_create(const gt_model_config *cfg) {
    gt_model *m = plan_model(cfg);
    const gt_model_vtable *vt = m->vt;
    int ix = m->n_acts - 3, ip = m->n_acts - 2, id = m->n_acts - 1;

    m->params = alloc_floats(m->n_params);
    m->grads = alloc_floats(m->n_params);
    m->adam_m = alloc_floats(m->n_params);
    m->adam_v = alloc_floats(m->n_params);
    m->acts = alloc_floats(m->n_act_elems);
    m->drop_base = (uint64_t *)GT_CALLOC((size_t)cfg->max_batch, sizeof(uint64_t));
    m->x = gt_model_act_ptr(m, ix);
    m->pred = gt_model_act_ptr(m, ip);
    m->dpred = gt_model_act_ptr(m, id);
    if (vt->bind) vt->bind(m);
    return m;
}

gt_model *gt_model_create_host_side(const gt_model_config *cfg) {
    gt_model *m = plan_model(cfg);
    const size_t B = (size_t)cfg->max_batch;
    m->host_side = 1;
    m->params = alloc_floats(m->n_params);
    m->grads = alloc_floats(m->n_params);
    m->adam_m = alloc_floats(m->n_params);
    m->adam_v = alloc_floats(m->n_params);
    /* x, pred, dpred in one small block (the device keeps the activation plan) */
    m->acts = alloc_floats(B * (m->n_x + 2 * m->n_y));
    m->drop_base = (uint64_t *)GT_CALLOC(B, sizeof(uint64_t));
    m->x = m->acts;
    m->pred = m->x + B * m->n_x;
    m->dpred = m->pred + B * m->n_y;
    return m;
}

void gt_model_free(gt_model *m) {
    if (!m) return;
    if (m->vt && m->vt->free) m->vt->free(m);
    free(m->params);
    free(m->grads);
    free(m->adam_m);
    free(m->adam_v);
    free(m->acts);
    free(m->drop_base);
    free(m);
}

void gt_model_init(gt_model *m, uint64_t seed) {
    for (int i = 0; i < m->n_tensors; i++) {
        const gt_param_tensor *t = &m->tensors[i];
        float *p = m->params + t->offset;
        gt_rng r;
        gt_rng_init(&r, seed, gt_stream(GT_STREAM_INIT, (uint32_t)i));
        switch (t->init) {
        case GT_INIT_ZEROS:
            for (size_t k = 0; k < t->n_elem; k++) p[k] = 0.0f;
            break;
        case GT_INIT_ONES:
            for (size_t k = 0; k < t->n_elem; k++) p[k] = 1.0f;
            break;
        case GT_INIT_UNIFORM:
            for (size_t k = 0; k < t->n_elem; k++)
                p[k] = t->init_scale * (2.0f * gt_rng_uniform(&r) - 1.0f);
            break;
        case GT_INIT_NORMAL:
            for (size_t k = 0; k < t->n_elem; k++) p[k] = (float)(t->init_scale * gt_rng_normal(&r));
            break;
        default: GT_ASSERT(0);
        }
    }
    gt_model_zero_grad(m);
    memset(m->adam_m, 0, m->n_params * sizeof(float));
    memset(m->adam_v, 0, m->n_params * sizeof(float));
}

/* ------------------------------------------------------------ training -- */
void gt_model_set_dropout(gt_model *m, const gt_dropout_key *key, int B) {
    m->drop_on = 0;
    if (!key || !(m->cfg.dropout > 0.0f)) return;
    GT_CHECK(B > 0 && B <= m->cfg.max_batch && key->ids, GT_EXIT_INTERNAL, "dropout key: batch %d, ids %p", B,
             (const void *)key->ids);
    for (int b = 0; b < B; b++) m->drop_base[b] = gt_dropout_base(key->seed, (uint64_t)key->step, key->ids[b]);
    m->drop_on = 1;
}

/* The CPU ops' products for this model: its own precision (nn/ops/cpu/gemm.h),
 * set around its forward and backward; the engines resolved auto before. */
static gt_cpu_prec model_cpu_prec(const gt_model *m) {
    return m->cfg.precision == GT_PRECISION_BF16 ? GT_CPU_BF16 : GT_CPU_FP32;
}

static const float *model_forward(gt_model *m, const float *x, int B) {
    GT_CHECK(B > 0 && B <= m->cfg.max_batch, GT_EXIT_USAGE,
             "model forward: batch %d outside [1, max_batch=%d]", B, m->cfg.max_batch);
    GT_CHECK(!m->host_side, GT_EXIT_INTERNAL, "gt_model_forward on the host side of a device model");
    if (x != m->x) memcpy(m->x, x, (size_t)B * m->n_x * sizeof(float));
    m->batch = B;
    gt_cpu_params_changed(); /* the CPU ops' bf16 copies of the parameters are made afresh */
    const gt_cpu_prec prev = gt_cpu_set_precision(model_cpu_prec(m));
    m->vt->forward(m, B);
    gt_cpu_set_precision(prev);
    return m->pred;
}

/* Evaluation, predict and every caller without a key: never dropout. */
const float *gt_model_forward(gt_model *m, const float *x, int B) {
    m->drop_on = 0;
    return model_forward(m, x, B);
}

const float *gt_model_forward_train(gt_model *m, const float *x, int B, const gt_dropout_key *key) {
    gt_model_set_dropout(m, key, B);
    return model_forward(m, x, B);
}

float gt_model_loss(gt_model *m, const float *y, const float *mask) {
    GT_CHECK(m->batch > 0, GT_EXIT_INTERNAL, "gt_model_loss called before gt_model_forward");
    size_t n = (size_t)m->batch * m->n_y;
    m->loss = gt_loss_masked_forward(m->cfg.loss, m->pred, y, mask, n);
    gt_loss_masked_backward(m->cfg.loss, m->dpred, m->pred, y, mask, n, 1.0f);
    return m->loss;
}

void gt_model_backward(gt_model *m, float dloss) {
    GT_CHECK(m->batch > 0, GT_EXIT_INTERNAL, "gt_model_backward called before gt_model_forward");
    GT_CHECK(!m->host_side, GT_EXIT_INTERNAL, "gt_model_backward on the host side of a device model");
    if (dloss != 1.0f) gt_scale(m->dpred, (size_t)m->batch * m->n_y, dloss);
    const gt_cpu_prec prev = gt_cpu_set_precision(model_cpu_prec(m));
    m->vt->backward(m, m->batch);
    gt_cpu_set_precision(prev);
}

void gt_model_zero_grad(gt_model *m) { memset(m->grads, 0, m->n_params * sizeof(float)); }

void gt_model_adamw_step(gt_model *m, const gt_adamw_config *opt, float lr, long t, int decay_all) {
    GT_CHECK(t >= 1, GT_EXIT_INTERNAL, "AdamW step count must be >= 1 (got %ld)", t);
    gt_adamw_scalars s_decay = gt_adamw_scalars_make(opt, lr, t, 1);
    gt_adamw_scalars s_plain = gt_adamw_scalars_make(opt, lr, t, 0);
    for (int i = 0; i < m->n_tensors; i++) {
        const gt_param_tensor *tt = &m->tensors[i];
        size_t o = tt->offset;
        gt_adamw_update(m->params + o, m->grads + o, m->adam_m + o, m->adam_v + o, tt->n_elem,
                        (decay_all || tt->decay) ? &s_decay : &s_plain);
    }
}

/* ------------------------------------------------- parameter access -- */
size_t gt_model_n_params(const gt_model *m) { return m->n_params; }
float *gt_model_params(gt_model *m) { return m->params; }

void gt_model_set_params(gt_model *m, const float *src, size_t n_params) {
    GT_CHECK(n_params == m->n_params, GT_EXIT_DATA, "parameter count %zu does not match the model's %zu",
             n_params, m->n_params);
    memcpy(m->params, src, n_params * sizeof(float));
}

void gt_model_get_params(const gt_model *m, float *dst, size_t n_params) {
    GT_CHECK(n_params == m->n_params, GT_EXIT_DATA, "parameter count %zu does not match the model's %zu",
             n_params, m->n_params);
    memcpy(dst, m->params, n_params * sizeof(float));
}

int gt_model_n_tensors(const gt_model *m) { return m->n_tensors; }

const gt_param_tensor *gt_model_tensor(const gt_model *m, int i) {
    GT_ASSERT(i >= 0 && i < m->n_tensors);
    return &m->tensors[i];
}

int gt_model_find_tensor(const gt_model *m, const char *name) {
    for (int i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0) return i;
    return -1;
}

size_t gt_model_act_bytes(const gt_model *m) { return m->n_act_elems * sizeof(float); }
size_t gt_model_state_bytes(const gt_model *m) { return 4 * m->n_params * sizeof(float); }
