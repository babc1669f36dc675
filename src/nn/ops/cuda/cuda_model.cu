// nn/ops/cuda/cuda_model.cu: the device model (nn/cuda_model.h). The three
// kinds' forward/backward are the CPU code of nn/model_<kind>.c with every op
// replaced by its CUDA twin; pointers come from the host model's parameter
// table and activation plan, looked up by name once at creation into a
// table per kind (tables_build), so layouts are identical.
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "nn/cuda_model.h"
#include "nn/model_lstm.h"
#include "nn/model_s2p_tf.h"
#include "nn/ops/cuda/common.cuh"
#include "nn/ops/dropout.h"

// A captured forward or backward of one shape. A backward is captured in
// segments, one per readiness report (ready()), so a replay can report each
// layer's gradients between segment launches exactly as the eager backward
// does (dist/'s overlapped exchange works with graphs too).
#define GT_CUDA_GRAPH_SLOTS 24
#define GT_CUDA_GRAPH_SEGS (GT_MODEL_MAX_TENSORS + 1)
struct graph_seg {
    cudaGraphExec_t exec; // NULL for an empty segment (nothing queued between two reports)
    size_t ready_off; // report this offset after the segment (backward), if has_ready
    int has_ready;
};
struct graph_slot {
    int used;       // the key is set
    int seen;       // eager runs of this key so far (capture at the second: the first warms up)
    int backward;   // 0 forward, 1 backward
    int B, drop_on;
    const float *x; // the device input it reads
    float dloss;    // backward: the scale of dpred baked into the graph
    graph_seg *seg;
    int n_seg;
};

// Parameter and activation pointers of each kind, resolved by name once in
// gt_cuda_model_create (tables_build): forward and backward format no names
// and search no tables. A parameter's value p and gradient g share the offset.
struct pg {
    float *p, *g;
};
struct cnn_tab {
    pg conv_w[GT_MODEL_MAX_CONV], conv_b[GT_MODEL_MAX_CONV]; // (C[l+1], C[l], K[l]), (C[l+1])
    pg fc1_w, fc1_b, fc2_w, fc2_b;
    float *conv_out[GT_MODEL_MAX_CONV]; // (B, C[l+1], W)
    float *fc1, *dfc1, *fc1_scratch;     // (B, H)
    float *fc1_drop;                     // (B, H); NULL without dropout in the plan
    uint64_t *drop_keys;                 // (B) in act "fc1.drop_keys"; NULL without dropout
    float *dbuf[2];                      // (B, Cmax, W)
};
struct tf_block_tab {
    pg ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b, ln2_w, ln2_b, fc1_w, fc1_b, fc2_w, fc2_b;
    float *res_in, *qkv, *att, *lse, *res_mid, *fc1; // fc1: bf16 bits when fc1_bf16
    float *ln1_mean, *ln1_rstd, *ln2_mean, *ln2_rstd;
    float *res_out; // the next block's res_in, or "hmid" for the last block
};
struct tf_tab {
    pg embed_w, embed_b, pos, ln_f_w, ln_f_b, head_w, head_b;
    tf_block_tab blk[GT_S2P_TF_MAX_LAYERS];
    float *att_mid, *hmid, *lnf, *lnf_mean, *lnf_rstd;
    float *lnbuf, *gelu, *ln_mean, *ln_rstd;
    float *dres, *da, *db, *dqkv, *dff, *dlnf, *dmid;
};
struct lstm_tab {
    pg w_ih[GT_LSTM_MAX_LAYERS], w_hh[GT_LSTM_MAX_LAYERS], b_ih[GT_LSTM_MAX_LAYERS], b_hh[GT_LSTM_MAX_LAYERS];
    pg head_w, head_b;
    float *h[GT_LSTM_MAX_LAYERS], *c[GT_LSTM_MAX_LAYERS], *gates[GT_LSTM_MAX_LAYERS];
    float *dh[2], *dgates;
};

struct gt_cuda_model {
    gt_model plan; // copy of the host template's table and plan (host buffer pointers cleared)
    gt_cuda_prec prec;
    cudaStream_t stream;
    float *params, *grads, *adam_m, *adam_v; // (n_params) each
    float *acts;                             // (n_act_elems)
    float *x;                                // the input of the current forward/backward: xbuf[0] or xbuf[1]
    float *xbuf[2];                          // device inputs: act "x" and a second buffer (double buffering)
    float *pred, *dpred;                     // in acts
    float *y, *mask;                         // (max_batch, n_y) targets staged from the host
    float *work;                             // GPU-only work area
    size_t n_work;
    gt_lstm_cudnn *lstm_dnn;             // the LSTM on cuDNN (in work), or NULL: the kernels
    int lstm_dnn_stack;                  // lstm_dnn runs the whole stack in one call
    gt_attention_tc_kernel attn_kernel;  // bf16 attention: wmma (default) or mma (GT_ATTN_IMPL=mma; work sized for it)
    gt_conv1d_cudnn *conv_dnn[GT_MODEL_MAX_CONV]; // s2p_cnn's layers on cuDNN (one area in work), or NULL: the kernels
    float *loss_dev;     // (1)
    double *sumsq_dev;   // (1)
    uint8_t *decay_flags; // (n_params)
    size_t device_bytes;
    int batch;
    float loss;
    int fc1_bf16; // s2p_tf: the pre-GELU activations are kept in bf16 (gt_model_act_device_bf16)
    int drop_on; // the next forward (and its backward) applies dropout: keys in act "fc1.drop_keys"
    gt_grad_ready_fn grad_ready; // nn/model.h: called as each layer's backward is queued
    void *grad_ready_ctx;
    // CUDA graphs (gt_cuda_model_set_graphs): captured forwards and backwards
    // by shape, replayed instead of launching every kernel
    int graphs;           // 1: capture and replay; 0: eager (also after a failed capture)
    graph_slot *slots;    // GT_CUDA_GRAPH_SLOTS
    graph_slot *cap;      // the slot being captured (ready() closes a segment), or NULL
    long graph_replays, graph_captures;
    cudaError_t cap_err; // the first failure of the capture in progress
    int plant_capture_error; // tests: an illegal call inside the next captures (gt_cuda_model_plant_capture_error)
    // pointers of the model's kind (tables_build); only the kind's own is set
    cnn_tab cnn;
    tf_tab tf;
    lstm_tab lstm;
};

static void capture_segment_end(gt_cuda_model *m, size_t off, int has_ready);
static void capture_segment_begin(gt_cuda_model *m);

// The gradients from g (in m->grads) to the end are final once the work
// queued so far on m->stream completes. While a backward is being captured
// this closes the current segment instead (its replay reports).
static void ready(gt_cuda_model *m, const float *g) {
    const size_t off = (size_t)(g - m->grads);
    if (m->cap) {
        capture_segment_end(m, off, 1);
        capture_segment_begin(m);
        return;
    }
    if (m->grad_ready) m->grad_ready(m->grad_ready_ctx, off);
}

// ---------------------------------------------------------------- lookup --
// By name: model creation only (tables_build, the framework's buffers).
static float *act_find(gt_cuda_model *m, const char *name) {
    for (int j = 0; j < m->plan.n_acts; j++)
        if (strcmp(m->plan.act_table[j].name, name) == 0) return m->acts + m->plan.act_table[j].offset;
    return nullptr;
}
static float *act(gt_cuda_model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static float *act(gt_cuda_model *m, const char *fmt, ...) {
    char name[2 * GT_MODEL_NAME_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    float *a = act_find(m, name);
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
static pg PG(gt_cuda_model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static pg PG(gt_cuda_model *m, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t o = tensor_off(m, fmt, ap);
    va_end(ap);
    return pg{m->params + o, m->grads + o};
}

// Every buffer is zeroed on the model's own stream (non-blocking: it does
// not wait for the legacy default stream, so nothing may be queued there).
static float *dalloc(gt_cuda_model *m, size_t n) {
    m->device_bytes += (n ? n : 1) * sizeof(float);
    return gt_cuda_alloc_floats_on(n, m->stream);
}

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
    const cnn_tab *t = &m->cnn;
    const cnn_dims d = cnn_get(&m->plan.cfg);
    cudaStream_t st = m->stream;
    const float *inp = m->x;
    for (int l = 0; l < d.L; l++) {
        float *out = t->conv_out[l];
        if (m->conv_dnn[l])
            gt_conv1d_cudnn_forward(m->conv_dnn[l], out, inp, t->conv_w[l].p, t->conv_b[l].p, B, GT_ACT_RELU);
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
    const cnn_tab *t = &m->cnn;
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
    ready(m, t->fc2_w.g);
    float *dcur = dbuf[0];
    gt_linear_backward_cuda(dcur, t->fc1_w.g, t->fc1_b.g, dfc1, t->conv_out[L - 1],
                            t->fc1_w.p, fc1, fsc, B, d.C[L] * d.W, d.H, GT_ACT_RELU, st);
    ready(m, t->fc1_w.g);
    for (int l = L - 1; l >= 0; l--) {
        float *dnext = l > 0 ? dbuf[(L - l) & 1] : nullptr;
        const float *inp = l > 0 ? t->conv_out[l - 1] : m->x;
        if (m->conv_dnn[l])
            gt_conv1d_cudnn_backward(m->conv_dnn[l], dnext, t->conv_w[l].g, t->conv_b[l].g, dcur, inp,
                                     t->conv_w[l].p, t->conv_out[l], B, GT_ACT_RELU);
        else
            gt_conv1d_backward_cuda(dnext, t->conv_w[l].g, t->conv_b[l].g, dcur, inp, t->conv_w[l].p,
                                    t->conv_out[l], m->work, B, d.C[l], d.C[l + 1], d.W, d.K[l], GT_ACT_RELU, st);
        ready(m, t->conv_w[l].g);
        dcur = dnext;
    }
}

// =============================================================== s2p_tf ==
static void tf_forward(gt_cuda_model *m, int B) {
    const tf_tab *t = &m->tf;
    const gt_model_config *c = &m->plan.cfg;
    const int L = c->window, d = c->d_model, ff = c->d_ff, NH = c->n_heads, N = c->n_layers, mid = L / 2;
    const int BL = B * L;
    const float eps = GT_S2P_TF_LN_EPS;
    cudaStream_t st = m->stream;
    float *lnbuf = t->lnbuf, *gelu = t->gelu;
    // Every LayerNorm follows a residual add (or the positions' add) and is
    // fused with it, and the bias of the GEMM feeding the add with them; fc1's
    // bias and GELU are one pass (nn/ops/cuda/ops_cuda.h: the unfused bits).
    float *h = t->blk[0].res_in;
    gt_linear_forward_cuda(h, m->x, t->embed_w.p, t->embed_b.p, BL, c->n_in, d, GT_ACT_NONE, st);
    gt_add_layernorm_forward_cuda(h, lnbuf, t->blk[0].ln1_mean, t->blk[0].ln1_rstd, h, t->pos.p, L, nullptr,
                                  t->blk[0].ln1_w.p, t->blk[0].ln1_b.p, BL, d, eps, st);
    for (int l = 0; l < N; l++) { // lnbuf holds LN1(res_in) of block l
        const bool last = l == N - 1;
        float *res_in = t->blk[l].res_in, *qkv = t->blk[l].qkv;
        float *att = t->blk[l].att, *lse = t->blk[l].lse;
        float *res_mid = t->blk[l].res_mid, *fc1 = t->blk[l].fc1;
        gt_linear_forward_cuda(qkv, lnbuf, t->blk[l].qkv_w.p, t->blk[l].qkv_b.p,
                               BL, d, 3 * d, GT_ACT_NONE, st);
        const int R = last ? B : BL; // rows after attention
        const float *att_rows = att;
        if (!last) {
            gt_attention_forward_cuda(att, lse, m->work, qkv, B, L, d, NH, st);
        } else {
            gt_attention_forward_rows_cuda(att, lse, m->work, qkv, B, L, d, NH, mid, 1, st);
            float *att_mid = t->att_mid;
            gt_gather_rows_cuda(att_mid, d, att + (size_t)mid * d, (size_t)L * d, B, d, st);
            att_rows = att_mid;
        }
        gt_linear_forward_cuda(lnbuf, att_rows, t->blk[l].proj_w.p, nullptr, R, d, d, GT_ACT_NONE, st);
        const float *res_src = res_in;
        if (last) { // the midpoint rows of the residual stream
            gt_gather_rows_cuda(res_mid, d, res_in + (size_t)mid * d, (size_t)L * d, B, d, st);
            res_src = res_mid;
        }
        // res_mid = res_src + (proj + bias); lnbuf = LN2(res_mid)
        gt_add_layernorm_forward_cuda(res_mid, lnbuf, t->blk[l].ln2_mean, t->blk[l].ln2_rstd, res_src, lnbuf, R,
                                      t->blk[l].proj_b.p, t->blk[l].ln2_w.p, t->blk[l].ln2_b.p, R, d, eps, st);
        if (m->fc1_bf16) { // fp32 pre-activation in the GELU buffer, kept in bf16 for backward
            gt_linear_forward_cuda(gelu, lnbuf, t->blk[l].fc1_w.p, nullptr, R, d, ff, GT_ACT_NONE, st);
            gt_bias_gelu_forward_cuda(gelu, gelu, (uint16_t *)fc1, t->blk[l].fc1_b.p, (size_t)R, ff, st);
        } else {
            gt_linear_forward_cuda(fc1, lnbuf, t->blk[l].fc1_w.p, nullptr, R, d, ff, GT_ACT_NONE, st);
            gt_bias_gelu_forward_cuda(gelu, fc1, nullptr, t->blk[l].fc1_b.p, (size_t)R, ff, st);
        }
        gt_linear_forward_cuda(lnbuf, gelu, t->blk[l].fc2_w.p, nullptr, R, ff, d, GT_ACT_NONE, st);
        // res_out = res_mid + (fc2 + bias), then the next LayerNorm: the next
        // block's LN1, or ln_f after the last block
        if (!last)
            gt_add_layernorm_forward_cuda(t->blk[l].res_out, lnbuf, t->blk[l + 1].ln1_mean, t->blk[l + 1].ln1_rstd,
                                          res_mid, lnbuf, R, t->blk[l].fc2_b.p, t->blk[l + 1].ln1_w.p,
                                          t->blk[l + 1].ln1_b.p, R, d, eps, st);
        else
            gt_add_layernorm_forward_cuda(t->hmid, t->lnf, t->lnf_mean, t->lnf_rstd, res_mid, lnbuf, R,
                                          t->blk[l].fc2_b.p, t->ln_f_w.p, t->ln_f_b.p, B, d, eps, st);
    }
    gt_linear_forward_cuda(m->pred, t->lnf, t->head_w.p, t->head_b.p, B, d, c->n_out, GT_ACT_NONE, st);
}

static void tf_backward(gt_cuda_model *m, int B) {
    const tf_tab *t = &m->tf;
    const gt_model_config *c = &m->plan.cfg;
    const int L = c->window, d = c->d_model, ff = c->d_ff, NH = c->n_heads, N = c->n_layers, mid = L / 2;
    const int BL = B * L;
    const float eps = GT_S2P_TF_LN_EPS;
    cudaStream_t st = m->stream;
    float *lnbuf = t->lnbuf, *gelu = t->gelu;
    float *ln_mean = t->ln_mean, *ln_rstd = t->ln_rstd;
    float *dres = t->dres, *da = t->da, *db = t->db;
    float *dqkv = t->dqkv, *dff = t->dff, *dlnf = t->dlnf,
          *dmid = t->dmid;
    gt_linear_backward_cuda(dlnf, t->head_w.g, t->head_b.g, m->dpred, t->lnf,
                            t->head_w.p, nullptr, nullptr, B, d, c->n_out, GT_ACT_NONE, st);
    gt_layernorm_backward_cuda(dmid, t->ln_f_w.g, t->ln_f_b.g, dlnf, t->hmid,
                               t->ln_f_w.p, t->lnf_mean, t->lnf_rstd, B, d, st);
    ready(m, t->ln_f_w.g);
    for (int l = N - 1; l >= 0; l--) {
        const bool last = l == N - 1;
        const int R = last ? B : BL;
        float *dcur = last ? dmid : dres; // d loss / d block output (R,d)
        float *res_in = t->blk[l].res_in, *qkv = t->blk[l].qkv;
        float *att = t->blk[l].att, *lse = t->blk[l].lse;
        float *res_mid = t->blk[l].res_mid, *fc1 = t->blk[l].fc1;
        // MLP half
        if (m->fc1_bf16) gt_gelu_forward_from_bf16_cuda(gelu, (const uint16_t *)fc1, (size_t)R * ff, st); // recompute
        else gt_gelu_forward_cuda(gelu, fc1, (size_t)R * ff, st);
        gt_linear_backward_cuda(dff, t->blk[l].fc2_w.g, t->blk[l].fc2_b.g, dcur,
                                gelu, t->blk[l].fc2_w.p, nullptr, nullptr, R, ff, d, GT_ACT_NONE,
                                st);
        gt_layernorm_forward_cuda(lnbuf, ln_mean, ln_rstd, res_mid, t->blk[l].ln2_w.p,
                                  t->blk[l].ln2_b.p, R, d, eps, st);
        // dff *= GELU'(fc1 pre-activation) fused with fc1's bias gradient
        gt_linear_backward_gelu_cuda(da, t->blk[l].fc1_w.g, t->blk[l].fc1_b.g, dff, lnbuf, t->blk[l].fc1_w.p,
                                     m->fc1_bf16 ? nullptr : fc1, m->fc1_bf16 ? (const uint16_t *)fc1 : nullptr,
                                     R, d, ff, st);
        gt_layernorm_backward_acc_cuda(dcur, t->blk[l].ln2_w.g, t->blk[l].ln2_b.g, da, res_mid,
                                       t->blk[l].ln2_w.p, t->blk[l].ln2_mean,
                                       t->blk[l].ln2_rstd, R, d, st); // dcur is now d/d res_mid
        // attention half
        if (!last) {
            gt_linear_backward_cuda(da, t->blk[l].proj_w.g, t->blk[l].proj_b.g,
                                    dres, att, t->blk[l].proj_w.p, nullptr, nullptr, BL, d, d,
                                    GT_ACT_NONE, st);
            gt_attention_backward_cuda(dqkv, m->work, da, qkv, att, lse, B, L, d, NH, st);
        } else {
            gt_linear_backward_cuda(da, t->blk[l].proj_w.g, t->blk[l].proj_b.g,
                                    dmid, t->att_mid, t->blk[l].proj_w.p, nullptr, nullptr,
                                    B, d, d, GT_ACT_NONE, st);
            // da (B,d) -> db rows at mid of a (B,L,d) view: the rows op reads nothing else
            gt_gather_rows_cuda(db + (size_t)mid * d, (size_t)L * d, da, d, B, d, st);
            gt_attention_backward_rows_cuda(dqkv, m->work, db, qkv, att, lse, B, L, d, NH, mid, 1, st);
        }
        gt_layernorm_forward_cuda(lnbuf, ln_mean, ln_rstd, res_in, t->blk[l].ln1_w.p,
                                  t->blk[l].ln1_b.p, BL, d, eps, st);
        gt_linear_backward_cuda(da, t->blk[l].qkv_w.g, t->blk[l].qkv_b.g, dqkv,
                                lnbuf, t->blk[l].qkv_w.p, nullptr, nullptr, BL, d, 3 * d,
                                GT_ACT_NONE, st);
        if (!last) {
            gt_layernorm_backward_acc_cuda(dres, t->blk[l].ln1_w.g, t->blk[l].ln1_b.g, da, res_in,
                                           t->blk[l].ln1_w.p, t->blk[l].ln1_mean,
                                           t->blk[l].ln1_rstd, BL, d, st); // dres is now d/d res_in
        } else {
            gt_layernorm_backward_cuda(dres, t->blk[l].ln1_w.g, t->blk[l].ln1_b.g, da,
                                       res_in, t->blk[l].ln1_w.p, t->blk[l].ln1_mean,
                                       t->blk[l].ln1_rstd, BL, d, st);
            // residual path res_in[:, mid] -> res_mid: dres[:, mid] += dmid (da is free now)
            gt_gather_rows_cuda(da, d, dres + (size_t)mid * d, (size_t)L * d, B, d, st);
            gt_add_cuda(da, da, dmid, (size_t)B * d, st);
            gt_gather_rows_cuda(dres + (size_t)mid * d, (size_t)L * d, da, d, B, d, st);
        }
        ready(m, t->blk[l].ln1_w.g);
    }
    gt_sum_rows_acc_cuda(t->pos.g, dres, (size_t)B, (size_t)L * d, st);
    gt_linear_backward_cuda(nullptr, t->embed_w.g, t->embed_b.g, dres, m->x, t->embed_w.p,
                            nullptr, nullptr, BL, c->n_in, d, GT_ACT_NONE, st);
    ready(m, t->embed_w.g);
}

// ================================================================= lstm ==
static void lstm_forward(gt_cuda_model *m, int B) {
    const lstm_tab *t = &m->lstm;
    const gt_model_config *c = &m->plan.cfg;
    const int T = c->window, C = c->n_in, H = c->hidden, NL = c->n_layers;
    cudaStream_t st = m->stream;
    const float *inp = m->x;
    if (m->lstm_dnn_stack) { // one call: only the top layer's h is written (the head's input)
        const float *w_ih[GT_LSTM_MAX_LAYERS], *w_hh[GT_LSTM_MAX_LAYERS], *b_ih[GT_LSTM_MAX_LAYERS],
            *b_hh[GT_LSTM_MAX_LAYERS];
        for (int k = 0; k < NL; k++) {
            w_ih[k] = t->w_ih[k].p, w_hh[k] = t->w_hh[k].p;
            b_ih[k] = t->b_ih[k].p, b_hh[k] = t->b_hh[k].p;
        }
        inp = t->h[NL - 1];
        gt_lstm_cudnn_forward_stack(m->lstm_dnn, (float *)inp, m->x, w_ih, w_hh, b_ih, b_hh, B);
    }
    for (int k = 0; k < NL && !m->lstm_dnn_stack; k++) {
        float *h = t->h[k];
        if (m->lstm_dnn) { // lstm.%d.c and lstm.%d.gates stay unused: cuDNN keeps its own in its reserve space
            gt_lstm_cudnn_forward(m->lstm_dnn, k, h, inp, t->w_ih[k].p, t->w_hh[k].p,
                                  t->b_ih[k].p, t->b_hh[k].p, B);
            inp = h;
            continue;
        }
        gt_lstm_forward_cuda(h, t->c[k], t->gates[k], inp, t->w_ih[k].p,
                             t->w_hh[k].p, t->b_ih[k].p, t->b_hh[k].p,
                             B, T, k == 0 ? C : H, H, st);
        inp = h;
    }
    gt_linear_forward_cuda(m->pred, inp, t->head_w.p, t->head_b.p, B * T, H, C, GT_ACT_NONE, st);
}

static void lstm_backward(gt_cuda_model *m, int B) {
    const lstm_tab *t = &m->lstm;
    const gt_model_config *c = &m->plan.cfg;
    const int T = c->window, C = c->n_in, H = c->hidden, NL = c->n_layers, top = NL - 1;
    cudaStream_t st = m->stream;
    float *dh[2] = {t->dh[0], t->dh[1]};
    float *dgates = t->dgates;
    float *dcur = dh[0];
    gt_linear_backward_cuda(dcur, t->head_w.g, t->head_b.g, m->dpred, t->h[top],
                            t->head_w.p, nullptr, nullptr, B * T, H, C, GT_ACT_NONE, st);
    ready(m, t->head_w.g);
    if (m->lstm_dnn_stack) { // one call; then each layer's report, in the kernels' order
        float *dw_ih[GT_LSTM_MAX_LAYERS], *dw_hh[GT_LSTM_MAX_LAYERS], *db_ih[GT_LSTM_MAX_LAYERS],
            *db_hh[GT_LSTM_MAX_LAYERS];
        for (int k = 0; k < NL; k++) {
            dw_ih[k] = t->w_ih[k].g, dw_hh[k] = t->w_hh[k].g;
            db_ih[k] = t->b_ih[k].g, db_hh[k] = t->b_hh[k].g;
        }
        gt_lstm_cudnn_backward_stack(m->lstm_dnn, nullptr, dw_ih, dw_hh, db_ih, db_hh, dcur, m->x,
                                     t->h[top], B);
        for (int k = top; k >= 0; k--) ready(m, t->w_ih[k].g);
        return;
    }
    for (int k = top; k >= 0; k--) {
        float *dnext = k > 0 ? dh[(top - k + 1) & 1] : nullptr;
        const float *inp = k > 0 ? t->h[k - 1] : m->x;
        if (m->lstm_dnn) // one layer per call: its gradients are reported as the kernels' are
            gt_lstm_cudnn_backward(m->lstm_dnn, k, dnext, t->w_ih[k].g, t->w_hh[k].g,
                                   t->b_ih[k].g, t->b_hh[k].g, dcur, inp,
                                   t->h[k], B);
        else
            gt_lstm_backward_cuda(dnext, t->w_ih[k].g, t->w_hh[k].g,
                                  t->b_ih[k].g, t->b_hh[k].g, dgates, m->work, dcur, inp,
                                  t->w_ih[k].p, t->w_hh[k].p,
                                  t->h[k], t->c[k], t->gates[k], B, T,
                                  k == 0 ? C : H, H, c->tbptt, st);
        ready(m, t->w_ih[k].g);
        dcur = dnext;
    }
}

// next-step MSE: pred[b,t] vs x[b,t+1] for t < T-1 (s[0] += sum e^2, in double)
__global__ void k_lstm_loss(double *s, float *dpred, const float *pred, const float *x, int B, int T, int C,
                            float scale) {
    const size_t n = (size_t)B * T * C;
    double acc = 0.0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        int t = (int)((i / C) % T);
        if (t == T - 1) {
            dpred[i] = 0.0f;
            continue;
        }
        float e = pred[i] - x[i + C];
        acc += (double)e * e;
        dpred[i] = scale * e;
    }
    acc = gt_block_sum(acc);
    if (threadIdx.x == 0) atomicAdd(s, acc);
}
__global__ void k_lstm_loss_fin(float *loss, const double *s, double denom) { *loss = (float)(s[0] / denom); }

// =========================================================== generic API ==
// The kind's pointer table, by name, once (m->acts and m->params placed).
static void tables_build(gt_cuda_model *m) {
    const gt_model_config *c = &m->plan.cfg;
    if (c->kind == GT_MODEL_S2P_CNN) {
        cnn_tab *t = &m->cnn;
        for (int l = 0; l < c->n_layers; l++) {
            t->conv_w[l] = PG(m, "conv.%d.weight", l);
            t->conv_b[l] = PG(m, "conv.%d.bias", l);
            t->conv_out[l] = act(m, "conv.%d.out", l);
        }
        t->fc1_w = PG(m, "fc1.weight"), t->fc1_b = PG(m, "fc1.bias");
        t->fc2_w = PG(m, "fc2.weight"), t->fc2_b = PG(m, "fc2.bias");
        t->fc1 = act(m, "fc1.out"), t->dfc1 = act(m, "fc1.dout"), t->fc1_scratch = act(m, "fc1.scratch");
        t->fc1_drop = act_find(m, "fc1.drop"); // planned only with dropout > 0
        t->drop_keys = (uint64_t *)act_find(m, "fc1.drop_keys");
        t->dbuf[0] = act(m, "conv.dbuf0"), t->dbuf[1] = act(m, "conv.dbuf1");
    } else if (c->kind == GT_MODEL_S2P_TF) {
        tf_tab *t = &m->tf;
        t->embed_w = PG(m, "embed.weight"), t->embed_b = PG(m, "embed.bias"), t->pos = PG(m, "pos");
        t->ln_f_w = PG(m, "ln_f.weight"), t->ln_f_b = PG(m, "ln_f.bias");
        t->head_w = PG(m, "head.weight"), t->head_b = PG(m, "head.bias");
        for (int l = 0; l < c->n_layers; l++) {
            tf_block_tab *k = &t->blk[l];
            k->ln1_w = PG(m, "blocks.%d.ln1.weight", l), k->ln1_b = PG(m, "blocks.%d.ln1.bias", l);
            k->qkv_w = PG(m, "blocks.%d.attn.qkv.weight", l), k->qkv_b = PG(m, "blocks.%d.attn.qkv.bias", l);
            k->proj_w = PG(m, "blocks.%d.attn.proj.weight", l), k->proj_b = PG(m, "blocks.%d.attn.proj.bias", l);
            k->ln2_w = PG(m, "blocks.%d.ln2.weight", l), k->ln2_b = PG(m, "blocks.%d.ln2.bias", l);
            k->fc1_w = PG(m, "blocks.%d.mlp.fc1.weight", l), k->fc1_b = PG(m, "blocks.%d.mlp.fc1.bias", l);
            k->fc2_w = PG(m, "blocks.%d.mlp.fc2.weight", l), k->fc2_b = PG(m, "blocks.%d.mlp.fc2.bias", l);
            k->res_in = act(m, "blocks.%d.res_in", l), k->qkv = act(m, "blocks.%d.qkv", l);
            k->att = act(m, "blocks.%d.att", l), k->lse = act(m, "blocks.%d.lse", l);
            k->res_mid = act(m, "blocks.%d.res_mid", l), k->fc1 = act(m, "blocks.%d.fc1", l);
            k->ln1_mean = act(m, "blocks.%d.ln1.mean", l), k->ln1_rstd = act(m, "blocks.%d.ln1.rstd", l);
            k->ln2_mean = act(m, "blocks.%d.ln2.mean", l), k->ln2_rstd = act(m, "blocks.%d.ln2.rstd", l);
            k->res_out = l == c->n_layers - 1 ? act(m, "hmid") : act(m, "blocks.%d.res_in", l + 1);
        }
        t->att_mid = act(m, "att_mid"), t->hmid = act(m, "hmid");
        t->lnf = act(m, "ln_f.out"), t->lnf_mean = act(m, "ln_f.mean"), t->lnf_rstd = act(m, "ln_f.rstd");
        t->lnbuf = act(m, "work.ln"), t->gelu = act(m, "work.gelu");
        t->ln_mean = act(m, "work.ln_mean"), t->ln_rstd = act(m, "work.ln_rstd");
        t->dres = act(m, "grad.res"), t->da = act(m, "grad.a"), t->db = act(m, "grad.b");
        t->dqkv = act(m, "grad.qkv"), t->dff = act(m, "grad.ff"), t->dlnf = act(m, "grad.ln_f");
        t->dmid = act(m, "grad.mid");
    } else {
        lstm_tab *t = &m->lstm;
        for (int k = 0; k < c->n_layers; k++) {
            t->w_ih[k] = PG(m, "lstm.weight_ih_l%d", k), t->w_hh[k] = PG(m, "lstm.weight_hh_l%d", k);
            t->b_ih[k] = PG(m, "lstm.bias_ih_l%d", k), t->b_hh[k] = PG(m, "lstm.bias_hh_l%d", k);
            t->h[k] = act(m, "lstm.%d.h", k), t->c[k] = act(m, "lstm.%d.c", k);
            t->gates[k] = act(m, "lstm.%d.gates", k);
        }
        t->head_w = PG(m, "head.weight"), t->head_b = PG(m, "head.bias");
        t->dh[0] = act(m, "grad.h0"), t->dh[1] = act(m, "grad.h1"), t->dgates = act(m, "grad.gates");
    }
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
    m->attn_kernel = gt_model_attention_mma() ? GT_ATTENTION_TC_MMA : GT_ATTENTION_TC_WMMA;
    m->fc1_bf16 = gt_model_act_device_bf16(&m->plan.cfg, "blocks.0.fc1");
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
    m->xbuf[0] = m->x = act(m, "x");
    m->xbuf[1] = dalloc(m, B * m->plan.n_x); // the second input buffer (gt_cuda_model_input)
    m->slots = (graph_slot *)GT_CALLOC(GT_CUDA_GRAPH_SLOTS, sizeof *m->slots);
    m->pred = act(m, "pred");
    m->dpred = act(m, "dpred");
    m->y = dalloc(m, B * m->plan.n_y);
    m->mask = dalloc(m, B * m->plan.n_y);
    GT_CHECK(c->kind == GT_MODEL_S2P_CNN || c->kind == GT_MODEL_S2P_TF || c->kind == GT_MODEL_LSTM, GT_EXIT_USAGE,
             "cuda model: kind %d not supported", (int)c->kind);
    tables_build(m);
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
    // the attention kernels' shared-memory opt-in (kernel attributes: not inside
    // a capture), only for a model with attention and only for the kernel
    // classes that fit the device (nn/ops/cuda/attention_plan.h)
    if (c->kind == GT_MODEL_S2P_TF) gt_attention_cuda_prepare();
    if (c->kind == GT_MODEL_LSTM && gt_model_lstm_cudnn()) { // cuDNN's area: after the kernels' scratch in work
        const size_t ks = gt_lstm_cudnn_al(gt_lstm_cuda_scratch_size(c->max_batch, c->window, c->hidden));
        const int stack = gt_model_lstm_cudnn() == 2;
        m->lstm_dnn = gt_lstm_cudnn_create(c->max_batch, c->window, c->n_in, c->hidden, c->n_layers, c->tbptt, stack,
                                           m->prec, m->work + ks, m->n_work - ks, m->stream);
        m->lstm_dnn_stack = m->lstm_dnn && stack;
    }
    if (c->kind == GT_MODEL_S2P_CNN && gt_model_conv_cudnn()) { // one area after the kernels' scratch, all layers
        const cnn_dims d = cnn_get(c);
        size_t ks = 0;
        for (int l = 0; l < d.L; l++) {
            const size_t s = gt_conv1d_cuda_scratch_size(d.C[l], d.C[l + 1], d.W, d.K[l]);
            ks = s > ks ? s : ks;
        }
        ks = gt_conv1d_cudnn_al(ks);
        int ok = 1;
        for (int l = 0; l < d.L && ok; l++) {
            m->conv_dnn[l] = gt_conv1d_cudnn_create(c->max_batch, d.C[l], d.C[l + 1], d.W, d.K[l], m->prec,
                                                    m->work + ks, m->n_work - ks, m->stream);
            ok = m->conv_dnn[l] != nullptr;
        }
        if (!ok) // all layers or none: one way per model
            for (int l = 0; l < d.L; l++) {
                gt_conv1d_cudnn_free(m->conv_dnn[l]);
                m->conv_dnn[l] = nullptr;
            }
    }
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
    gt_lstm_cudnn_free(m->lstm_dnn);
    for (int l = 0; l < GT_MODEL_MAX_CONV; l++) gt_conv1d_cudnn_free(m->conv_dnn[l]);
    gt_cuda_free(m->params);
    gt_cuda_free(m->grads);
    gt_cuda_free(m->adam_m);
    gt_cuda_free(m->adam_v);
    gt_cuda_free(m->acts);
    gt_cuda_free(m->xbuf[1]);
    for (int i = 0; i < GT_CUDA_GRAPH_SLOTS; i++) {
        for (int k = 0; k < m->slots[i].n_seg; k++) cudaGraphExecDestroy(m->slots[i].seg[k].exec);
        free(m->slots[i].seg);
    }
    free(m->slots);
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
    if (m->plan.cfg.kind != GT_MODEL_LSTM) return "none";
    return m->lstm_dnn_stack ? "cudnn-stack" : m->lstm_dnn ? "cudnn" : "kernels";
}
extern "C" const char *gt_cuda_model_conv_impl(const gt_cuda_model *m) {
    if (m->plan.cfg.kind != GT_MODEL_S2P_CNN) return "none";
    if (!m->conv_dnn[0]) return "kernels";
    return gt_conv1d_cudnn_fused(m->conv_dnn[0]) ? "cudnn" : "cudnn-unfused";
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

static void forward_kernels(gt_cuda_model *m, int B) {
    switch (m->plan.cfg.kind) {
    case GT_MODEL_S2P_CNN: cnn_forward(m, B); break;
    case GT_MODEL_S2P_TF: tf_forward(m, B); break;
    default: lstm_forward(m, B); break;
    }
}

static void backward_kernels(gt_cuda_model *m, int B, float dloss) {
    if (dloss != 1.0f) gt_scale_cuda(m->dpred, (size_t)B * m->plan.n_y, dloss, m->stream);
    switch (m->plan.cfg.kind) {
    case GT_MODEL_S2P_CNN: cnn_backward(m, B); break;
    case GT_MODEL_S2P_TF: tf_backward(m, B); break;
    default: lstm_backward(m, B); break;
    }
}

// ------------------------------------------------------------ CUDA graphs --
// A forward or backward runs eagerly the first time its key (direction,
// batch, input buffer, dropout, dloss) is seen (warm-up: cuBLAS picks its
// algorithms, lazily loaded kernels load), is captured the second time and
// replayed from then on. A capture that fails turns graphs off for the model
// (warning once) and the work runs eagerly: results never depend on it, the
// graph holds exactly the kernels of the eager call.
static graph_slot *graph_find(gt_cuda_model *m, int backward, int B, float dloss) {
    graph_slot *free_slot = nullptr;
    for (int i = 0; i < GT_CUDA_GRAPH_SLOTS; i++) {
        graph_slot *g = &m->slots[i];
        if (!g->used) {
            if (!free_slot) free_slot = g;
            continue;
        }
        if (g->backward == backward && g->B == B && g->x == m->x && g->drop_on == m->drop_on &&
            (!backward || g->dloss == dloss))
            return g;
    }
    if (!free_slot) return nullptr; // full: eager from now on for new keys
    free_slot->used = 1;
    free_slot->backward = backward;
    free_slot->B = B;
    free_slot->x = m->x;
    free_slot->drop_on = m->drop_on;
    free_slot->dloss = dloss;
    return free_slot;
}

static void graph_give_up(gt_cuda_model *m, const char *what, const char *why) {
    (void)cudaGetLastError(); // a failed capture leaves no sticky error; clear the last one
    if (m->graphs)
        GT_WARN("CUDA graphs off for this run: capturing the %s failed (%s); every step runs eagerly", what, why);
    m->graphs = 0;
}

// After a capture, whatever failed inside it: the stream is out of capture
// mode (a capture still open, e.g. after a failure between segments, is
// ended and its graph dropped), else the job ends.
static void capture_leave(gt_cuda_model *m) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaError_t e = cudaStreamIsCapturing(m->stream, &st);
    if (e == cudaSuccess && st != cudaStreamCaptureStatusNone) {
        cudaGraph_t g = nullptr;
        (void)cudaStreamEndCapture(m->stream, &g);
        if (g) cudaGraphDestroy(g);
        e = cudaStreamIsCapturing(m->stream, &st);
    }
    GT_CHECK(e == cudaSuccess && st == cudaStreamCaptureStatusNone, GT_EXIT_INTERNAL,
             "cuda model: the stream is still capturing after a capture ended (%s)", cudaGetErrorString(e));
}

static void capture_segment_begin(gt_cuda_model *m) {
    cudaError_t e = cudaStreamBeginCapture(m->stream, cudaStreamCaptureModeThreadLocal);
    GT_CHECK(e == cudaSuccess, GT_EXIT_INTERNAL, "cudaStreamBeginCapture: %s", cudaGetErrorString(e));
}

// Close the segment being captured: instantiate it into the slot (an
// instantiation failure is recorded as a NULL exec and ends the capture).
static void capture_segment_end(gt_cuda_model *m, size_t off, int has_ready) {
    graph_slot *g = m->cap;
    cudaGraph_t graph = nullptr;
    cudaError_t e = cudaStreamEndCapture(m->stream, &graph);
    GT_CHECK(g->n_seg < GT_CUDA_GRAPH_SEGS, GT_EXIT_INTERNAL, "cuda model: more than %d graph segments",
             GT_CUDA_GRAPH_SEGS);
    graph_seg *s = &g->seg[g->n_seg++];
    s->exec = nullptr;
    s->ready_off = off;
    s->has_ready = has_ready;
    size_t n_nodes = 0;
    if (e == cudaSuccess) e = cudaGraphGetNodes(graph, nullptr, &n_nodes);
    if (e == cudaSuccess && n_nodes > 0) e = cudaGraphInstantiate(&s->exec, graph, 0);
    if (graph) cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
        s->exec = nullptr;
        if (m->cap_err == cudaSuccess) m->cap_err = e;
    }
}

static void graph_drop(graph_slot *g) {
    for (int k = 0; k < g->n_seg; k++)
        if (g->seg[k].exec) cudaGraphExecDestroy(g->seg[k].exec);
    free(g->seg);
    g->seg = nullptr;
    g->n_seg = 0;
}

// Capture the forward (backward = 0) or the backward into g; 1 on success.
// While capturing, a failing CUDA/cuBLAS/cuDNN call inside the kernels is
// recorded (gt_lib_defer_begin, core/check.h) instead of ending the job: the
// capture still ends, the stream is verified out of capture mode, the error
// is cleared, graphs go off with one warning and the caller runs the pass
// eagerly (where a real error ends the job as usual).
static int graph_capture(gt_cuda_model *m, graph_slot *g, int B, float dloss) {
    g->seg = (graph_seg *)GT_CALLOC(GT_CUDA_GRAPH_SEGS, sizeof *g->seg);
    g->n_seg = 0;
    m->cap = g;
    m->cap_err = cudaSuccess;
    gt_lib_defer_begin();
    capture_segment_begin(m);
    if (m->plant_capture_error) CUDA_CHECK(cudaStreamSynchronize(m->stream)); // illegal while capturing
    if (g->backward) backward_kernels(m, B, dloss);
    else forward_kernels(m, B);
    capture_segment_end(m, 0, 0);
    char first[512];
    const int n_failed = gt_lib_defer_end(first, sizeof first);
    m->cap = nullptr;
    capture_leave(m);
    if (n_failed > 0 || m->cap_err != cudaSuccess) {
        graph_drop(g);
        graph_give_up(m, g->backward ? "backward" : "forward", n_failed > 0 ? first : cudaGetErrorString(m->cap_err));
        return 0;
    }
    m->graph_captures++;
    return 1;
}

static void graph_replay(gt_cuda_model *m, const graph_slot *g) {
    for (int k = 0; k < g->n_seg; k++) {
        if (g->seg[k].exec) CUDA_CHECK(cudaGraphLaunch(g->seg[k].exec, m->stream));
        if (g->seg[k].has_ready && m->grad_ready) m->grad_ready(m->grad_ready_ctx, g->seg[k].ready_off);
    }
    m->graph_replays++;
}

// Forward (backward = 0) or backward of B samples: replayed, captured or eager.
static void run_pass(gt_cuda_model *m, int backward, int B, float dloss) {
    gt_cuda_set_precision(m->prec);
    gt_attention_tc_set_kernel(m->attn_kernel); // the one the work area was sized for
    graph_slot *g = m->graphs ? graph_find(m, backward, B, dloss) : nullptr;
    if (g && g->n_seg > 0) {
        graph_replay(m, g);
        return;
    }
    if (g && g->seen++ >= 1 && graph_capture(m, g, B, dloss)) {
        graph_replay(m, g);
        return;
    }
    if (backward) backward_kernels(m, B, dloss);
    else forward_kernels(m, B);
}

extern "C" void gt_cuda_model_set_graphs(gt_cuda_model *m, int on) { m->graphs = on ? 1 : 0; }
extern "C" int gt_cuda_model_graphs(const gt_cuda_model *m) { return m->graphs; }
extern "C" void gt_cuda_model_plant_capture_error(gt_cuda_model *m, int on) { m->plant_capture_error = on ? 1 : 0; }
extern "C" void gt_cuda_model_graph_stats(const gt_cuda_model *m, long *captures, long *replays) {
    if (captures) *captures = m->graph_captures;
    if (replays) *replays = m->graph_replays;
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
    run_pass(m, 0, B, 1.0f);
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
    // B uint64 keys = 2B floats of the planned act "fc1.drop_keys"; staged from pageable memory
    float *keys = m->cnn.drop_keys ? (float *)m->cnn.drop_keys : act(m, "fc1.drop_keys");
    copy_on(m, keys, base, 2 * (size_t)B, cudaMemcpyHostToDevice);
    m->drop_on = 1;
}

extern "C" void gt_cuda_model_loss_async(gt_cuda_model *m, const float *y_dev, const float *mask_dev) {
    GT_CHECK(m->batch > 0, GT_EXIT_INTERNAL, "gt_cuda_model_loss called before gt_cuda_model_forward");
    gt_loss_masked_cuda(m->plan.cfg.loss, m->loss_dev, m->dpred, m->pred, y_dev, mask_dev,
                        (size_t)m->batch * m->plan.n_y, 1.0f, m->stream);
}

extern "C" float gt_cuda_model_last_loss(gt_cuda_model *m) {
    float h = 0.0f;
    CUDA_CHECK(cudaMemcpyAsync(&h, m->loss_dev, sizeof h, cudaMemcpyDeviceToHost, m->stream));
    CUDA_CHECK(cudaStreamSynchronize(m->stream));
    m->loss = h;
    return h;
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

extern "C" void gt_cuda_model_lstm_loss_async(gt_cuda_model *m) {
    const gt_model_config *c = &m->plan.cfg;
    GT_CHECK(c->kind == GT_MODEL_LSTM, GT_EXIT_INTERNAL, "gt_cuda_model_lstm_loss on a non-lstm model");
    GT_CHECK(m->batch > 0, GT_EXIT_INTERNAL, "gt_cuda_model_lstm_loss called before gt_cuda_model_forward");
    const int B = m->batch, T = c->window, C = c->n_in;
    const size_t n_per = (size_t)(T - 1) * C;
    const float scale = 2.0f / (float)((double)B * n_per);
    double *s = m->sumsq_dev + 1;
    CUDA_CHECK(cudaMemsetAsync(s, 0, sizeof(double), m->stream));
    size_t n = (size_t)B * T * C;
    unsigned g = gt_grid_1d(n, 256);
    if (g > 1056) g = 1056;
    k_lstm_loss<<<g, 256, 0, m->stream>>>(s, m->dpred, m->pred, m->x, B, T, C, scale);
    GT_CUDA_LAUNCH_CHECK();
    k_lstm_loss_fin<<<1, 1, 0, m->stream>>>(m->loss_dev, s, (double)B * n_per);
    GT_CUDA_LAUNCH_CHECK();
}

extern "C" float gt_cuda_model_lstm_loss(gt_cuda_model *m) {
    gt_cuda_model_lstm_loss_async(m);
    return gt_cuda_model_last_loss(m);
}

extern "C" void gt_cuda_model_set_grad_ready(gt_cuda_model *m, gt_grad_ready_fn fn, void *ctx) {
    m->grad_ready = fn;
    m->grad_ready_ctx = ctx;
}

extern "C" void gt_cuda_model_backward(gt_cuda_model *m, float dloss) {
    GT_CHECK(m->batch > 0, GT_EXIT_INTERNAL, "gt_cuda_model_backward called before gt_cuda_model_forward");
    run_pass(m, 1, m->batch, dloss);
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
