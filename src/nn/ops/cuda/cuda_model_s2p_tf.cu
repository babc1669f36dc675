// nn/ops/cuda/cuda_model_s2p_tf.cu: s2p_tf on the GPU, the CPU code of
// nn/model_s2p_tf.c with every op replaced by its CUDA twin (the device
// table gt_cuda_kind_s2p_tf, nn/ops/cuda/cuda_model_impl.h).
#include <stdlib.h>

#include "nn/model_s2p_tf.h"
#include "nn/ops/cuda/cuda_model_impl.h"

// The kind's pointers (create: by name, once) and its attention setup.
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
    int fc1_bf16; // the pre-GELU activations are kept in bf16 (gt_model_act_device_bf16)
    gt_attention_tc_kernel attn_kernel; // bf16 attention: wmma (default) or mma (GT_ATTN_IMPL=mma; work sized for it)
};
static tf_tab *tf_of(const gt_cuda_model *m) { return (tf_tab *)m->kind_ctx; }

// =============================================================== s2p_tf ==
static void tf_forward(gt_cuda_model *m, int B) {
    const tf_tab *t = tf_of(m);
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
        if (t->fc1_bf16) { // fp32 pre-activation in the GELU buffer, kept in bf16 for backward
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
    const tf_tab *t = tf_of(m);
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
    gt_cuda_ready(m, t->ln_f_w.g);
    for (int l = N - 1; l >= 0; l--) {
        const bool last = l == N - 1;
        const int R = last ? B : BL;
        float *dcur = last ? dmid : dres; // d loss / d block output (R,d)
        float *res_in = t->blk[l].res_in, *qkv = t->blk[l].qkv;
        float *att = t->blk[l].att, *lse = t->blk[l].lse;
        float *res_mid = t->blk[l].res_mid, *fc1 = t->blk[l].fc1;
        // MLP half
        if (t->fc1_bf16) gt_gelu_forward_from_bf16_cuda(gelu, (const uint16_t *)fc1, (size_t)R * ff, st); // recompute
        else gt_gelu_forward_cuda(gelu, fc1, (size_t)R * ff, st);
        gt_linear_backward_cuda(dff, t->blk[l].fc2_w.g, t->blk[l].fc2_b.g, dcur,
                                gelu, t->blk[l].fc2_w.p, nullptr, nullptr, R, ff, d, GT_ACT_NONE,
                                st);
        gt_layernorm_forward_cuda(lnbuf, ln_mean, ln_rstd, res_mid, t->blk[l].ln2_w.p,
                                  t->blk[l].ln2_b.p, R, d, eps, st);
        // dff *= GELU'(fc1 pre-activation) fused with fc1's bias gradient
        gt_linear_backward_gelu_cuda(da, t->blk[l].fc1_w.g, t->blk[l].fc1_b.g, dff, lnbuf, t->blk[l].fc1_w.p,
                                     t->fc1_bf16 ? nullptr : fc1, t->fc1_bf16 ? (const uint16_t *)fc1 : nullptr,
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
        gt_cuda_ready(m, t->blk[l].ln1_w.g);
    }
    gt_sum_rows_acc_cuda(t->pos.g, dres, (size_t)B, (size_t)L * d, st);
    gt_linear_backward_cuda(nullptr, t->embed_w.g, t->embed_b.g, dres, m->x, t->embed_w.p,
                            nullptr, nullptr, BL, c->n_in, d, GT_ACT_NONE, st);
    gt_cuda_ready(m, t->embed_w.g);
}


static void tf_create(gt_cuda_model *m) {
    const gt_model_config *c = &m->plan.cfg;
    tf_tab *t = (tf_tab *)GT_CALLOC(1, sizeof *t);
    m->kind_ctx = t;
    t->attn_kernel = gt_model_attention_mma() ? GT_ATTENTION_TC_MMA : GT_ATTENTION_TC_WMMA;
    t->fc1_bf16 = gt_model_act_device_bf16(c, "blocks.0.fc1");
    t->embed_w = gt_cuda_pg(m, "embed.weight"), t->embed_b = gt_cuda_pg(m, "embed.bias"), t->pos = gt_cuda_pg(m, "pos");
    t->ln_f_w = gt_cuda_pg(m, "ln_f.weight"), t->ln_f_b = gt_cuda_pg(m, "ln_f.bias");
    t->head_w = gt_cuda_pg(m, "head.weight"), t->head_b = gt_cuda_pg(m, "head.bias");
    for (int l = 0; l < c->n_layers; l++) {
        tf_block_tab *k = &t->blk[l];
        k->ln1_w = gt_cuda_pg(m, "blocks.%d.ln1.weight", l), k->ln1_b = gt_cuda_pg(m, "blocks.%d.ln1.bias", l);
        k->qkv_w = gt_cuda_pg(m, "blocks.%d.attn.qkv.weight", l), k->qkv_b = gt_cuda_pg(m, "blocks.%d.attn.qkv.bias", l);
        k->proj_w = gt_cuda_pg(m, "blocks.%d.attn.proj.weight", l), k->proj_b = gt_cuda_pg(m, "blocks.%d.attn.proj.bias", l);
        k->ln2_w = gt_cuda_pg(m, "blocks.%d.ln2.weight", l), k->ln2_b = gt_cuda_pg(m, "blocks.%d.ln2.bias", l);
        k->fc1_w = gt_cuda_pg(m, "blocks.%d.mlp.fc1.weight", l), k->fc1_b = gt_cuda_pg(m, "blocks.%d.mlp.fc1.bias", l);
        k->fc2_w = gt_cuda_pg(m, "blocks.%d.mlp.fc2.weight", l), k->fc2_b = gt_cuda_pg(m, "blocks.%d.mlp.fc2.bias", l);
        k->res_in = gt_cuda_act(m, "blocks.%d.res_in", l), k->qkv = gt_cuda_act(m, "blocks.%d.qkv", l);
        k->att = gt_cuda_act(m, "blocks.%d.att", l), k->lse = gt_cuda_act(m, "blocks.%d.lse", l);
        k->res_mid = gt_cuda_act(m, "blocks.%d.res_mid", l), k->fc1 = gt_cuda_act(m, "blocks.%d.fc1", l);
        k->ln1_mean = gt_cuda_act(m, "blocks.%d.ln1.mean", l), k->ln1_rstd = gt_cuda_act(m, "blocks.%d.ln1.rstd", l);
        k->ln2_mean = gt_cuda_act(m, "blocks.%d.ln2.mean", l), k->ln2_rstd = gt_cuda_act(m, "blocks.%d.ln2.rstd", l);
        k->res_out = l == c->n_layers - 1 ? gt_cuda_act(m, "hmid") : gt_cuda_act(m, "blocks.%d.res_in", l + 1);
    }
    t->att_mid = gt_cuda_act(m, "att_mid"), t->hmid = gt_cuda_act(m, "hmid");
    t->lnf = gt_cuda_act(m, "ln_f.out"), t->lnf_mean = gt_cuda_act(m, "ln_f.mean"), t->lnf_rstd = gt_cuda_act(m, "ln_f.rstd");
    t->lnbuf = gt_cuda_act(m, "work.ln"), t->gelu = gt_cuda_act(m, "work.gelu");
    t->ln_mean = gt_cuda_act(m, "work.ln_mean"), t->ln_rstd = gt_cuda_act(m, "work.ln_rstd");
    t->dres = gt_cuda_act(m, "grad.res"), t->da = gt_cuda_act(m, "grad.a"), t->db = gt_cuda_act(m, "grad.b");
    t->dqkv = gt_cuda_act(m, "grad.qkv"), t->dff = gt_cuda_act(m, "grad.ff"), t->dlnf = gt_cuda_act(m, "grad.ln_f");
    t->dmid = gt_cuda_act(m, "grad.mid");
    // the attention kernels' shared-memory opt-in (kernel attributes: not inside
    // a capture), only for the kernel classes that fit the device
    // (nn/ops/cuda/attention_plan.h)
    gt_attention_cuda_prepare();
}

static void tf_free(gt_cuda_model *m) {
    free(m->kind_ctx);
    m->kind_ctx = nullptr;
}

// the bf16 attention kernel the work area was sized for
static void tf_before_pass(gt_cuda_model *m) { gt_attention_tc_set_kernel(tf_of(m)->attn_kernel); }

// name, create, free, forward, backward, before_pass, lstm_impl, conv_impl
const gt_cuda_kind gt_cuda_kind_s2p_tf = {"s2p_tf", tf_create, tf_free, tf_forward, tf_backward, tf_before_pass,
                                          nullptr,  nullptr};
