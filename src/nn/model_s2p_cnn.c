/* nn/model_s2p_cnn.c: seq2point CNN, see nn/model_s2p_cnn.h. */
#include "nn/model_s2p_cnn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "nn/ops/cuda/sizes.h"
#include "nn/ops/dropout.h"

/* Struct of pointers into one of the same-layout buffers (params or grads). */
typedef struct s2p_cnn_tensors {
    float *conv_w[GT_MODEL_MAX_CONV]; /* (C_l, C_{l-1}, K_l) */
    float *conv_b[GT_MODEL_MAX_CONV]; /* (C_l) */
    float *fc1_w;                     /* (H, C_last*W) */
    float *fc1_b;                     /* (H) */
    float *fc2_w;                     /* (A, H) */
    float *fc2_b;                     /* (A) */
} s2p_cnn_tensors;

typedef struct s2p_cnn {
    int L, W, H, A;                /* conv layers, window, fc1 width, outputs */
    int C[GT_MODEL_MAX_CONV + 1];  /* C[0] = n_in, C[l+1] = channels of conv l */
    int K[GT_MODEL_MAX_CONV];      /* kernel sizes */
    int t_conv_w[GT_MODEL_MAX_CONV], t_conv_b[GT_MODEL_MAX_CONV], t_fc1_w, t_fc1_b, t_fc2_w, t_fc2_b;
    int a_conv[GT_MODEL_MAX_CONV], a_fc1, a_fc1_d, a_fc1_scratch, a_d0, a_d1, a_scratch;
    int a_fc1_drop; /* -1 without dropout */
    s2p_cnn_tensors p, g;
    /* activations (planned for max_batch) */
    float *conv_out[GT_MODEL_MAX_CONV]; /* (B, C_l, W) post-ReLU */
    float *fc1_out;                     /* (B, H) post-ReLU */
    float *fc1_drop;                    /* (B, H) fc1_out after dropout (training forwards; NULL when
                                           cfg.dropout == 0) */
    float *dfc1;                        /* (B, H) d loss / d fc1_out */
    float *fc1_scratch;                 /* (B, H) masked gradient */
    float *dbuf[2];                     /* (B, max C, W) ping-pong conv gradients */
    float *conv_scratch;                /* gt_conv1d_scratch_elems() of the largest layer */
} s2p_cnn;

static void s2p_cnn_defaults(gt_model_config *cfg) {
    static const int ch[5] = {30, 30, 40, 50, 50}, ks[5] = {10, 8, 6, 5, 5};
    cfg->window = 599;
    cfg->n_in = 1;
    cfg->n_out = 15;
    cfg->hidden = 1024;
    cfg->n_layers = 5;
    for (int l = 0; l < 5; l++) {
        cfg->conv_channels[l] = ch[l];
        cfg->conv_kernels[l] = ks[l];
    }
}

static void s2p_cnn_plan(gt_model *m) {
    const gt_model_config *c = &m->cfg;
    GT_CHECK(c->n_layers >= 1 && c->n_layers <= GT_MODEL_MAX_CONV, GT_EXIT_USAGE,
             "s2p_cnn: n_layers (conv layers) must be in [1, %d], got %d", GT_MODEL_MAX_CONV, c->n_layers);
    GT_CHECK(c->hidden > 0, GT_EXIT_USAGE, "s2p_cnn: hidden (fc1 width) must be > 0, got %d", c->hidden);
    s2p_cnn *s = (s2p_cnn *)GT_CALLOC(1, sizeof *s);
    m->impl = s;
    s->L = c->n_layers;
    s->W = c->window;
    s->H = c->hidden;
    s->A = c->n_out;
    s->C[0] = c->n_in;
    for (int l = 0; l < s->L; l++) {
        GT_CHECK(c->conv_channels[l] > 0 && c->conv_kernels[l] > 0, GT_EXIT_USAGE,
                 "s2p_cnn: conv layer %d needs channels > 0 and kernel > 0 (got %d, %d)", l,
                 c->conv_channels[l], c->conv_kernels[l]);
        s->C[l + 1] = c->conv_channels[l];
        s->K[l] = c->conv_kernels[l];
    }
    const int W = s->W, H = s->H, A = s->A, L = s->L;
    const size_t B = (size_t)c->max_batch;
    char name[GT_MODEL_NAME_LEN];

    /* the size table: one row per parameter tensor */
    for (int l = 0; l < L; l++) {
        float bound = 1.0f / sqrtf((float)(s->C[l] * s->K[l]));
        int shw[3] = {s->C[l + 1], s->C[l], s->K[l]}, shb[1] = {s->C[l + 1]};
        snprintf(name, sizeof name, "conv.%d.weight", l);
        s->t_conv_w[l] = gt_model_add_param(m, name, 3, shw, GT_INIT_UNIFORM, bound, 1);
        snprintf(name, sizeof name, "conv.%d.bias", l);
        s->t_conv_b[l] = gt_model_add_param(m, name, 1, shb, GT_INIT_UNIFORM, bound, 0);
    }
    const int F = s->C[L] * W; /* flattened features */
    {
        float bound = 1.0f / sqrtf((float)F);
        int shw[2] = {H, F}, shb[1] = {H};
        s->t_fc1_w = gt_model_add_param(m, "fc1.weight", 2, shw, GT_INIT_UNIFORM, bound, 1);
        s->t_fc1_b = gt_model_add_param(m, "fc1.bias", 1, shb, GT_INIT_UNIFORM, bound, 0);
    }
    {
        float bound = 1.0f / sqrtf((float)H);
        int shw[2] = {A, H}, shb[1] = {A};
        s->t_fc2_w = gt_model_add_param(m, "fc2.weight", 2, shw, GT_INIT_UNIFORM, bound, 1);
        s->t_fc2_b = gt_model_add_param(m, "fc2.bias", 1, shb, GT_INIT_UNIFORM, bound, 0);
    }

    /* activation plan */
    int cmax = 0;
    size_t scratch = 0;
    for (int l = 0; l < L; l++) {
        snprintf(name, sizeof name, "conv.%d.out", l);
        s->a_conv[l] = gt_model_add_act(m, name, B * (size_t)s->C[l + 1] * W);
        if (s->C[l + 1] > cmax) cmax = s->C[l + 1];
        if (s->C[l] > cmax) cmax = s->C[l];
        size_t sc = gt_conv1d_scratch_elems(s->C[l], s->C[l + 1], W, s->K[l]);
        if (sc > scratch) scratch = sc;
    }
    s->a_fc1 = gt_model_add_act(m, "fc1.out", B * H);
    s->a_fc1_d = gt_model_add_act(m, "fc1.dout", B * H);
    s->a_fc1_scratch = gt_model_add_act(m, "fc1.scratch", B * H);
    s->a_fc1_drop = -1;
    if (c->dropout > 0.0f) {
        s->a_fc1_drop = gt_model_add_act(m, "fc1.drop", B * H);
        /* the device copy of m->drop_base (B uint64 = 2B floats; nn/ops/cuda/cuda_model.cu),
         * planned here so the device's buffer sizes follow the host plan */
        gt_model_add_act(m, "fc1.drop_keys", 2 * B);
    }
    s->a_d0 = gt_model_add_act(m, "conv.dbuf0", B * (size_t)cmax * W);
    s->a_d1 = gt_model_add_act(m, "conv.dbuf1", B * (size_t)cmax * W);
    s->a_scratch = gt_model_add_act(m, "conv.scratch", scratch);
    m->n_x = (size_t)c->n_in * W;
    m->n_y = (size_t)A;
}

static void bind_tensors(gt_model *m, s2p_cnn *s, float *buf, s2p_cnn_tensors *t) {
    for (int l = 0; l < s->L; l++) {
        t->conv_w[l] = gt_model_param_ptr(m, buf, s->t_conv_w[l]);
        t->conv_b[l] = gt_model_param_ptr(m, buf, s->t_conv_b[l]);
    }
    t->fc1_w = gt_model_param_ptr(m, buf, s->t_fc1_w);
    t->fc1_b = gt_model_param_ptr(m, buf, s->t_fc1_b);
    t->fc2_w = gt_model_param_ptr(m, buf, s->t_fc2_w);
    t->fc2_b = gt_model_param_ptr(m, buf, s->t_fc2_b);
}

static void s2p_cnn_bind(gt_model *m) {
    s2p_cnn *s = (s2p_cnn *)m->impl;
    bind_tensors(m, s, m->params, &s->p);
    bind_tensors(m, s, m->grads, &s->g);
    for (int l = 0; l < s->L; l++) s->conv_out[l] = gt_model_act_ptr(m, s->a_conv[l]);
    s->fc1_out = gt_model_act_ptr(m, s->a_fc1);
    s->dfc1 = gt_model_act_ptr(m, s->a_fc1_d);
    s->fc1_scratch = gt_model_act_ptr(m, s->a_fc1_scratch);
    s->fc1_drop = s->a_fc1_drop >= 0 ? gt_model_act_ptr(m, s->a_fc1_drop) : NULL;
    s->dbuf[0] = gt_model_act_ptr(m, s->a_d0);
    s->dbuf[1] = gt_model_act_ptr(m, s->a_d1);
    s->conv_scratch = gt_model_act_ptr(m, s->a_scratch);
}

static void s2p_cnn_forward(gt_model *m, int B) {
    s2p_cnn *s = (s2p_cnn *)m->impl;
    const int W = s->W, L = s->L;
    GT_CHECK(!m->drop_on || s->fc1_drop, GT_EXIT_INTERNAL, "s2p_cnn: dropout without its buffer");
    const float *inp = m->x; /* (B, C_0, W) */
    for (int l = 0; l < L; l++) {
        gt_conv1d_forward(s->conv_out[l], s->conv_scratch, inp, s->p.conv_w[l], s->p.conv_b[l], B, s->C[l],
                          s->C[l + 1], W, s->K[l], GT_ACT_RELU);
        inp = s->conv_out[l]; /* (B, C_{l+1}, W) */
    }
    /* flatten is free: (B, C_L, W) row-major is (B, C_L * W) channel-major */
    gt_linear_forward(s->fc1_out, inp, s->p.fc1_w, s->p.fc1_b, B, s->C[L] * W, s->H, GT_ACT_RELU);
    const float *h = s->fc1_out; /* (B, H) fc2's input */
    if (m->drop_on) {            /* training: inverted dropout, masks keyed by m->drop_base */
        gt_dropout_apply(s->fc1_drop, s->fc1_out, m->drop_base, B, s->H, gt_dropout_threshold(m->cfg.dropout),
                         gt_dropout_scale(m->cfg.dropout));
        h = s->fc1_drop;
    }
    gt_linear_forward(m->pred, h, s->p.fc2_w, s->p.fc2_b, B, s->H, s->A, GT_ACT_NONE);
}

static void s2p_cnn_backward(gt_model *m, int B) {
    s2p_cnn *s = (s2p_cnn *)m->impl;
    const int W = s->W, L = s->L;
    double t = gt_model_span_begin();
    gt_linear_backward(s->dfc1, s->g.fc2_w, s->g.fc2_b, m->dpred, m->drop_on ? s->fc1_drop : s->fc1_out,
                       s->p.fc2_w, NULL, NULL, B, s->H, s->A, GT_ACT_NONE);
    /* d fc1_out = d h * the forward's mask * scale: the same keys give the same mask */
    if (m->drop_on)
        gt_dropout_apply(s->dfc1, s->dfc1, m->drop_base, B, s->H, gt_dropout_threshold(m->cfg.dropout),
                         gt_dropout_scale(m->cfg.dropout));
    gt_model_span_end("bwd fc2", t, -1);
    gt_model_grad_ready(m, s->g.fc2_w);
    float *dcur = s->dbuf[0]; /* (B, C_L, W) d loss / d conv_out[L-1] */
    t = gt_model_span_begin();
    gt_linear_backward(dcur, s->g.fc1_w, s->g.fc1_b, s->dfc1, s->conv_out[L - 1], s->p.fc1_w, s->fc1_out,
                       s->fc1_scratch, B, s->C[L] * W, s->H, GT_ACT_RELU);
    gt_model_span_end("bwd fc1", t, -1);
    gt_model_grad_ready(m, s->g.fc1_w);
    for (int l = L - 1; l >= 0; l--) {
        t = gt_model_span_begin();
        float *dnext = (l > 0) ? s->dbuf[(L - l) & 1] : NULL; /* (B, C_l, W); input grad not needed */
        const float *inp = (l > 0) ? s->conv_out[l - 1] : m->x;
        gt_conv1d_backward(dnext, s->g.conv_w[l], s->g.conv_b[l], dcur, inp, s->p.conv_w[l], s->conv_out[l],
                           s->conv_scratch, B, s->C[l], s->C[l + 1], W, s->K[l], GT_ACT_RELU);
        gt_model_span_end("bwd conv", t, l);
        gt_model_grad_ready(m, s->g.conv_w[l]);
        dcur = dnext;
    }
}

static void s2p_cnn_free(gt_model *m) {
    free(m->impl);
    m->impl = NULL;
}

/* model.layers beyond the default five repeat the last layer; model.conv_scale
 * multiplies every layer's channel count (at least 1). */
static void s2p_cnn_resolve(gt_model_config *m, double cs) {
    GT_CHECK(m->n_layers <= GT_MODEL_MAX_CONV, GT_EXIT_USAGE, "model.layers: s2p_cnn has at most %d conv layers",
             GT_MODEL_MAX_CONV);
    for (int l = 0; l < m->n_layers; l++) {
        if (m->conv_channels[l] <= 0) { /* layers beyond the default five repeat the last */
            m->conv_channels[l] = m->conv_channels[l > 0 ? l - 1 : 0];
            m->conv_kernels[l] = m->conv_kernels[l > 0 ? l - 1 : 0];
        }
        const double chd = nearbyint(m->conv_channels[l] * cs);
        /* the same bound as model.hidden: every size computed from it stays in range */
        GT_CHECK(chd <= (1 << 20), GT_EXIT_USAGE,
                 "model.conv_scale = %g gives %.4g channels in conv layer %d (at most %d): give a smaller scale", cs,
                 chd, l + 1, 1 << 20);
        int ch = (int)chd;
        m->conv_channels[l] = ch < 1 ? 1 : ch;
    }
}

static double s2p_cnn_flops(const gt_model_config *c) {
    double f = 0.0, W = c->window, cin = c->n_in;
    for (int l = 0; l < c->n_layers; l++) {
        f += 2.0 * c->conv_channels[l] * cin * c->conv_kernels[l] * W;
        cin = c->conv_channels[l];
    }
    return f + 2.0 * cin * W * c->hidden + 2.0 * c->hidden * c->n_out;
}

/* GT_CONV_IMPL (nn/model.h) */
int gt_model_conv_cudnn(void) {
#ifdef GT_HAVE_CUDNN
    const char *v = getenv("GT_CONV_IMPL");
    return v && strcmp(v, "cudnn") == 0;
#else
    return 0;
#endif
}

/* the largest layer's im2col chunk; with cuDNN, its area after it */
static size_t s2p_cnn_device_work(const gt_model_config *c) {
    size_t w = 0, dnn = 0; /* the largest layer's cuDNN area: one area serves every layer */
    int cin = c->n_in;
    for (int l = 0; l < c->n_layers; l++) {
        size_t s = gt_conv1d_cuda_scratch_size(cin, c->conv_channels[l], c->window, c->conv_kernels[l]);
        if (s > w) w = s;
        s = gt_conv1d_cudnn_area_elems(c->max_batch, cin, c->conv_channels[l], c->window, c->conv_kernels[l]);
        if (s > dnn) dnn = s;
        cin = c->conv_channels[l];
    }
    if (gt_model_conv_cudnn()) w = gt_conv1d_cudnn_al(w) + dnn; /* after the kernels' scratch */
    return w;
}

static void s2p_cnn_describe(const gt_model_config *c, char *buf, size_t n) {
    snprintf(buf, n, " A=%d fc1=%d", c->n_out, c->hidden);
}

const gt_model_vtable gt_model_vtable_s2p_cnn = {
    .name = "s2p_cnn",
    .has = GT_MODEL_HAS_DROPOUT,
    .dropout_where = "on its dense layer",
    .channels_last = 0,
    .seq2point = 1,
    .defaults = s2p_cnn_defaults,
    .resolve = s2p_cnn_resolve,
    .plan = s2p_cnn_plan,
    .bind = s2p_cnn_bind,
    .forward = s2p_cnn_forward,
    .backward = s2p_cnn_backward,
    .free = s2p_cnn_free,
    .forward_flops = s2p_cnn_flops,
    .device_work_elems = s2p_cnn_device_work,
    .gpu_efficiency = 0.03, /* im2col + cuBLAS per 32-sample chunk, unfused glue */
    .bench_batch = 256,
    .describe = s2p_cnn_describe,
};
