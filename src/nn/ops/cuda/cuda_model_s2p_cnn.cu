// nn/ops/cuda/cuda_model_s2p_cnn.cu: s2p_cnn on the GPU, the CPU code of
// nn/model_s2p_cnn.c with every op replaced by its CUDA twin (the device
// table gt_cuda_kind_s2p_cnn, nn/ops/cuda/cuda_model_impl.h).
#include <stdlib.h>

#include "nn/ops/cuda/cuda_model_impl.h"
#include "nn/ops/dropout.h"

// The kind's pointers (create: by name, once) and its cuDNN state.
struct cnn_tab {
    pg conv_w[GT_MODEL_MAX_CONV], conv_b[GT_MODEL_MAX_CONV]; // (C[l+1], C[l], K[l]), (C[l+1])
    pg fc1_w, fc1_b, fc2_w, fc2_b;
    float *conv_out[GT_MODEL_MAX_CONV]; // (B, C[l+1], W)
    float *fc1, *dfc1, *fc1_scratch;     // (B, H)
    float *fc1_drop;                     // (B, H); NULL without dropout in the plan
    uint64_t *drop_keys;                 // (B) in act "fc1.drop_keys"; NULL without dropout
    float *dbuf[2];                      // (B, Cmax, W)
    gt_conv1d_cudnn *conv_dnn[GT_MODEL_MAX_CONV]; // the layers on cuDNN (one area in work), or NULL: the kernels
};
static cnn_tab *cnn_of(const gt_cuda_model *m) { return (cnn_tab *)m->kind_ctx; }

// ============================================================== s2p_cnn ==
struct cnn_dims {
    int L, W, H, A, C[GT_MODEL_MAX_CONV + 1], K[GT_MODEL_MAX_CONV];
};
static cnn_dims cnn_get(const gt_model_config *c) {
    cnn_dims d;
    d.L = c->n_layers;
    d.W = c->window;
    d.H = c->hidden;
    d.A = c->n_out;
    d.C[0] = c->n_in;
    for (int l = 0; l < d.L; l++) {
        d.C[l + 1] = c->conv_channels[l];
        d.K[l] = c->conv_kernels[l];
    }
    return d;
}
static void cnn_forward(gt_cuda_model *m, int B) {
    const cnn_tab *t = cnn_of(m);
    const cnn_dims d = cnn_get(&m->plan.cfg);
    cudaStream_t st = m->stream;
    const float *inp = m->x;
    for (int l = 0; l < d.L; l++) {
        float *out = t->conv_out[l];
        if (t->conv_dnn[l])
            gt_conv1d_cudnn_forward(t->conv_dnn[l], out, inp, t->conv_w[l].p, t->conv_b[l].p, B, GT_ACT_RELU);
        else
            gt_conv1d_forward_cuda(out, m->work, inp, t->conv_w[l].p, t->conv_b[l].p, B, d.C[l], d.C[l + 1], d.W,
                                   d.K[l], GT_ACT_RELU, st);
        inp = out;
    }
    float *fc1 = t->fc1;
    gt_linear_forward_cuda(fc1, inp, t->fc1_w.p, t->fc1_b.p, B, d.C[d.L] * d.W, d.H, GT_ACT_RELU, st);
    const float *h = fc1;
    if (m->drop_on) { // the CPU's inverted dropout (nn/model_s2p_cnn.c), same keys, same masks
        const float p = m->plan.cfg.dropout;
        float *hd = t->fc1_drop;
        gt_dropout_apply_cuda(hd, fc1, t->drop_keys, B, d.H, gt_dropout_threshold(p),
                              gt_dropout_scale(p), st);
        h = hd;
    }
    gt_linear_forward_cuda(m->pred, h, t->fc2_w.p, t->fc2_b.p, B, d.H, d.A, GT_ACT_NONE, st);
}

static void cnn_backward(gt_cuda_model *m, int B) {
    const cnn_tab *t = cnn_of(m);
    const cnn_dims d = cnn_get(&m->plan.cfg);
    cudaStream_t st = m->stream;
    const int L = d.L;
    float *fc1 = t->fc1, *dfc1 = t->dfc1, *fsc = t->fc1_scratch;
    float *dbuf[2] = {t->dbuf[0], t->dbuf[1]};
    const float p = m->plan.cfg.dropout;
    const uint64_t *keys = m->drop_on ? t->drop_keys : nullptr;
    gt_linear_backward_cuda(dfc1, t->fc2_w.g, t->fc2_b.g, m->dpred, keys ? t->fc1_drop : fc1,
                            t->fc2_w.p, nullptr, nullptr, B, d.H, d.A, GT_ACT_NONE, st);
    if (keys) gt_dropout_apply_cuda(dfc1, dfc1, keys, B, d.H, gt_dropout_threshold(p), gt_dropout_scale(p), st);
    gt_cuda_ready(m, t->fc2_w.g);
    float *dcur = dbuf[0];
    gt_linear_backward_cuda(dcur, t->fc1_w.g, t->fc1_b.g, dfc1, t->conv_out[L - 1],
                            t->fc1_w.p, fc1, fsc, B, d.C[L] * d.W, d.H, GT_ACT_RELU, st);
    gt_cuda_ready(m, t->fc1_w.g);
    for (int l = L - 1; l >= 0; l--) {
        float *dnext = l > 0 ? dbuf[(L - l) & 1] : nullptr;
        const float *inp = l > 0 ? t->conv_out[l - 1] : m->x;
        if (t->conv_dnn[l])
            gt_conv1d_cudnn_backward(t->conv_dnn[l], dnext, t->conv_w[l].g, t->conv_b[l].g, dcur, inp,
                                     t->conv_w[l].p, t->conv_out[l], B, GT_ACT_RELU);
        else
            gt_conv1d_backward_cuda(dnext, t->conv_w[l].g, t->conv_b[l].g, dcur, inp, t->conv_w[l].p,
                                    t->conv_out[l], m->work, B, d.C[l], d.C[l + 1], d.W, d.K[l], GT_ACT_RELU, st);
        gt_cuda_ready(m, t->conv_w[l].g);
        dcur = dnext;
    }
}


static void cnn_create(gt_cuda_model *m) {
    const gt_model_config *c = &m->plan.cfg;
    cnn_tab *t = (cnn_tab *)GT_CALLOC(1, sizeof *t);
    m->kind_ctx = t;
    for (int l = 0; l < c->n_layers; l++) {
        t->conv_w[l] = gt_cuda_pg(m, "conv.%d.weight", l);
        t->conv_b[l] = gt_cuda_pg(m, "conv.%d.bias", l);
        t->conv_out[l] = gt_cuda_act(m, "conv.%d.out", l);
    }
    t->fc1_w = gt_cuda_pg(m, "fc1.weight"), t->fc1_b = gt_cuda_pg(m, "fc1.bias");
    t->fc2_w = gt_cuda_pg(m, "fc2.weight"), t->fc2_b = gt_cuda_pg(m, "fc2.bias");
    t->fc1 = gt_cuda_act(m, "fc1.out"), t->dfc1 = gt_cuda_act(m, "fc1.dout"), t->fc1_scratch = gt_cuda_act(m, "fc1.scratch");
    t->fc1_drop = gt_cuda_act_find(m, "fc1.drop"); // planned only with dropout > 0
    t->drop_keys = (uint64_t *)gt_cuda_act_find(m, "fc1.drop_keys");
    t->dbuf[0] = gt_cuda_act(m, "conv.dbuf0"), t->dbuf[1] = gt_cuda_act(m, "conv.dbuf1");
    m->drop_keys = t->drop_keys;
    if (gt_model_conv_cudnn()) { // one area after the kernels' scratch, all layers
        const cnn_dims d = cnn_get(c);
        size_t ks = 0;
        for (int l = 0; l < d.L; l++) {
            const size_t s = gt_conv1d_cuda_scratch_size(d.C[l], d.C[l + 1], d.W, d.K[l]);
            ks = s > ks ? s : ks;
        }
        ks = gt_conv1d_cudnn_al(ks);
        int ok = 1;
        for (int l = 0; l < d.L && ok; l++) {
            t->conv_dnn[l] = gt_conv1d_cudnn_create(c->max_batch, d.C[l], d.C[l + 1], d.W, d.K[l], m->prec,
                                                    m->work + ks, m->n_work - ks, m->stream);
            ok = t->conv_dnn[l] != nullptr;
        }
        if (!ok) // all layers or none: one way per model
            for (int l = 0; l < d.L; l++) {
                gt_conv1d_cudnn_free(t->conv_dnn[l]);
                t->conv_dnn[l] = nullptr;
            }
    }
}

static void cnn_free(gt_cuda_model *m) {
    cnn_tab *t = cnn_of(m);
    if (!t) return;
    for (int l = 0; l < GT_MODEL_MAX_CONV; l++) gt_conv1d_cudnn_free(t->conv_dnn[l]);
    free(t);
    m->kind_ctx = nullptr;
}

static const char *cnn_conv_impl(const gt_cuda_model *m) {
    const cnn_tab *t = cnn_of(m);
    if (!t->conv_dnn[0]) return "kernels";
    return gt_conv1d_cudnn_fused(t->conv_dnn[0]) ? "cudnn" : "cudnn-unfused";
}

// name, create, free, forward, backward, before_pass, lstm_impl, conv_impl
const gt_cuda_kind gt_cuda_kind_s2p_cnn = {"s2p_cnn", cnn_create, cnn_free, cnn_forward, cnn_backward,
                                           nullptr,   nullptr,    cnn_conv_impl};
