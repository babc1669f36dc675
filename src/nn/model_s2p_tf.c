/* nn/model_s2p_tf.c: seq2point Transformer encoder, see nn/model_s2p_tf.h. */
#include "nn/model_s2p_tf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "nn/ops/attention.h"
#include "nn/ops/cpu/gelu_avx2.h"
#include "nn/ops/cpu/parallel.h"
#include "nn/ops/cuda/sizes.h"
#include "nn/ops/fast_exp.h"

/* ------------------------------------------------------------------ GELU --
 * The tanh-form GELU of nn/ops/elementwise.h with tanh from fast_exp.h: the
 * libm tanhf there is a scalar call (about 12 ns per element here, 1.6 s of a
 * 4 s training step at the default size); this form vectorises (~0.4 ns).
 * Absolute difference to the libm form below 2e-7. */
static inline float tf_gelu(float x) {
    float u = GT_GELU_SCALE * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + gt_tanhf(u));
}
static inline float tf_gelu_grad(float x) {
    float u = GT_GELU_SCALE * (x + 0.044715f * x * x * x);
    float th = gt_tanhf(u);
    return 0.5f * (1.0f + th) +
           0.5f * x * (1.0f - th * th) * GT_GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
}
/* The elementwise glue (GELU, its gradient, residual adds) runs in chunks on
 * the engine's threads (nn/ops/cpu/parallel.h); each element's value does
 * not depend on the split. The GELU passes run in 8 lanes where the CPU has
 * AVX2 and FMA (nn/ops/cpu/gelu_avx2.h: the same formula with FMA, about 10x
 * faster than the scalar form below, which the compiler does not vectorise). */
typedef enum tf_ew_kind { TF_GELU, TF_GELU_GRAD, TF_ADD, TF_BIAS_GELU } tf_ew_kind;
typedef struct tf_ew {
    tf_ew_kind kind;
    float *out;
    const float *a, *b;
    size_t n;
    size_t chunk; /* elements per task */
    float *pre; /* TF_BIAS_GELU: (rows, cols) pre-activation, bias b added in place */
    int cols;
} tf_ew;
#define TF_EW_CHUNK ((size_t)1 << 15)

/* 512-bit vectors where the build has AVX-512 (GCC's default for such targets
 * is 256): the GELU loops run 1.3x faster, lane by lane the same arithmetic */
#if defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__)
#define TF_WIDE __attribute__((target("prefer-vector-width=512")))
#else
#define TF_WIDE
#endif

TF_WIDE static void tf_ew_task(void *ctx, int task, int tid) {
    (void)tid;
    const tf_ew *e = ctx;
    const size_t i0 = (size_t)task * e->chunk, i1 = i0 + e->chunk < e->n ? i0 + e->chunk : e->n;
    float *out = e->out;
    const float *a = e->a, *b = e->b;
    switch (e->kind) {
    case TF_GELU:
        if (gt_gelu_tanh_avx2(out + i0, a + i0, i1 - i0)) break;
        for (size_t i = i0; i < i1; i++) out[i] = tf_gelu(a[i]);
        break;
    case TF_GELU_GRAD: /* out = a * gelu'(b); out may be a */
        if (gt_gelu_tanh_grad_avx2(out + i0, a + i0, b + i0, i1 - i0)) break;
        for (size_t i = i0; i < i1; i++) out[i] = a[i] * tf_gelu_grad(b[i]);
        break;
    case TF_ADD: /* out may be a */
        for (size_t i = i0; i < i1; i++) out[i] = a[i] + b[i];
        break;
    case TF_BIAS_GELU: /* pre += b row by row (the linear layer's bias pass), out = gelu(pre) */
        if (gt_bias_gelu_tanh_avx2(out + i0, e->pre + i0, b, (i1 - i0) / e->cols, e->cols)) break;
        for (size_t r = i0 / e->cols; r < i1 / e->cols; r++) {
            float *p = e->pre + r * e->cols, *o = out + r * e->cols;
            for (int j = 0; j < e->cols; j++) p[j] += b[j];
            for (int j = 0; j < e->cols; j++) o[j] = tf_gelu(p[j]);
        }
        break;
    }
}

static void tf_ew_run(tf_ew_kind kind, float *out, const float *a, const float *b, size_t n) {
    tf_ew e = {.kind = kind, .out = out, .a = a, .b = b, .n = n, .chunk = TF_EW_CHUNK};
    if (n <= TF_EW_CHUNK) tf_ew_task(&e, 0, 0);
    else gt_par_for((int)((n + TF_EW_CHUNK - 1) / TF_EW_CHUNK), tf_ew_task, &e);
}

static void tf_gelu_forward(float *out, const float *inp, size_t n) { tf_ew_run(TF_GELU, out, inp, NULL, n); }

/* pre (rows, cols) += bias per row, out = gelu(pre): fc1's bias and the GELU
 * in one pass (the same values as gt_linear_forward's bias pass followed by
 * the GELU); whole rows per chunk */
static void tf_bias_gelu(float *out, float *pre, const float *bias, int rows, int cols) {
    const size_t per = TF_EW_CHUNK / (size_t)cols > 0 ? TF_EW_CHUNK / (size_t)cols : 1; /* rows per chunk */
    tf_ew e = {.kind = TF_BIAS_GELU, .out = out, .b = bias, .pre = pre, .cols = cols, .n = (size_t)rows * cols,
               .chunk = per * (size_t)cols};
    if (e.n <= e.chunk) tf_ew_task(&e, 0, 0);
    else gt_par_for((int)((e.n + e.chunk - 1) / e.chunk), tf_ew_task, &e);
}

/* dinp = dout * gelu'(inp); in place allowed */
static void tf_gelu_backward(float *dinp, const float *dout, const float *inp, size_t n) {
    tf_ew_run(TF_GELU_GRAD, dinp, dout, inp, n);
}

/* out (n) = a + b; out may alias a */
static void add_to(float *out, const float *a, const float *b, size_t n) { tf_ew_run(TF_ADD, out, a, b, n); }

/* ------------------------------------------------------------- structure -- */
typedef struct tf_block_tensors {
    float *ln1_w, *ln1_b; /* (d) */
    float *qkv_w, *qkv_b; /* (3d, d), (3d) */
    float *proj_w, *proj_b; /* (d, d), (d) */
    float *ln2_w, *ln2_b; /* (d) */
    float *fc1_w, *fc1_b; /* (ff, d), (ff) */
    float *fc2_w, *fc2_b; /* (d, ff), (d) */
} tf_block_tensors;

/* Struct of pointers into one of the same-layout buffers (params or grads). */
typedef struct s2p_tf_tensors {
    float *embed_w, *embed_b; /* (d, n_in), (d) */
    float *pos; /* (L, d) */
    tf_block_tensors blk[GT_S2P_TF_MAX_LAYERS];
    float *lnf_w, *lnf_b; /* (d) */
    float *head_w, *head_b; /* (A, d), (A) */
} s2p_tf_tensors;

/* Activations kept from forward to backward, per block. */
/* Activations kept from forward to backward, per block. The last block only
 * feeds the midpoint vector to the head, so after its attention it works on
 * that one row per sample: its res_mid, ln2 statistics and fc1 are (B,d),
 * (B), (B,ff) instead of (B,L,...), and its attention computes only the
 * midpoint query (keys and values still span the window). */
typedef struct tf_block_acts {
    float *res_in; /* (B,L,d) residual stream entering the block */
    float *ln1_mean, *ln1_rstd; /* (B,L) */
    float *qkv; /* (B,L,3d) */
    float *att; /* (B,L,d) attention output before proj (last block: mid rows only) */
    float *lse; /* (B,NH,L) attention log-sum-exp */
    float *res_mid; /* (B,L,d) res_in + proj(att); last block (B,d) */
    float *ln2_mean, *ln2_rstd; /* (B,L); last block (B) */
    float *fc1; /* (B,L,ff) pre-GELU; last block (B,ff) */
} tf_block_acts;

#define TF_N_BLOCK_TENSORS 12
#define TF_N_BLOCK_ACTS 10

typedef struct s2p_tf {
    int L, d, NH, ff, N, A, n_in, mid;
    int t_embed_w, t_embed_b, t_pos, t_blk[GT_S2P_TF_MAX_LAYERS][TF_N_BLOCK_TENSORS], t_lnf_w, t_lnf_b,
        t_head_w, t_head_b;
    int a_blk[GT_S2P_TF_MAX_LAYERS][TF_N_BLOCK_ACTS];
    int a_att_mid, a_hmid, a_lnf, a_lnf_mean, a_lnf_rstd, a_lnbuf, a_ln_mean, a_ln_rstd, a_gelu,
        a_attn_scratch, a_dres, a_da, a_db, a_dqkv, a_dff, a_dlnf, a_dmid;
    s2p_tf_tensors p, g;
    tf_block_acts blk[GT_S2P_TF_MAX_LAYERS];
    float *att_mid; /* (B,d) last block's attention output at the midpoint */
    float *hmid; /* (B,d) output of the last block at the midpoint */
    float *lnf; /* (B,d) ln_f(hmid) */
    float *lnf_mean, *lnf_rstd; /* (B) */
    /* shared work areas, reused by every block */
    float *lnbuf; /* (B,L,d) LayerNorm output / linear output before the residual add */
    float *ln_mean, *ln_rstd; /* (B,L) statistics of a recomputed LayerNorm */
    float *gelu; /* (B,L,ff) GELU output (recomputed in backward) */
    float *attn_scratch; /* gt_attention_scratch_elems(L) */
    float *dres; /* (B,L,d) d loss / d residual stream */
    float *da, *db; /* (B,L,d) gradient work */
    float *dqkv; /* (B,L,3d) */
    float *dff; /* (B,L,ff) */
    float *dlnf, *dmid; /* (B,d) */
} s2p_tf;

static void s2p_tf_defaults(gt_model_config *cfg) {
    cfg->window = 512;
    cfg->n_in = 1;
    cfg->n_out = 15;
    cfg->d_model = 128;
    cfg->n_heads = 4;
    cfg->d_ff = 512;
    cfg->n_layers = 8;
    cfg->max_batch = 32;
}

/* prefix.weight (out, in) and prefix.bias (out), nn.Linear init; returns the
 * weight's index, the bias's in *t_b. Names longer than the table's limit
 * trip gt_model_add_param's check. */
static int add_linear(gt_model *m, const char *prefix, int out, int in, int *t_b) {
    char name[2 * GT_MODEL_NAME_LEN];
    float bound = 1.0f / sqrtf((float)in);
    int shw[2] = {out, in}, shb[1] = {out};
    snprintf(name, sizeof name, "%s.weight", prefix);
    int t_w = gt_model_add_param(m, name, 2, shw, GT_INIT_UNIFORM, bound, 1);
    snprintf(name, sizeof name, "%s.bias", prefix);
    *t_b = gt_model_add_param(m, name, 1, shb, GT_INIT_UNIFORM, bound, 0);
    return t_w;
}

/* prefix.weight (d) = 1, prefix.bias (d) = 0 */
static int add_layernorm(gt_model *m, const char *prefix, int d, int *t_b) {
    char name[2 * GT_MODEL_NAME_LEN];
    int sh[1] = {d};
    snprintf(name, sizeof name, "%s.weight", prefix);
    int t_w = gt_model_add_param(m, name, 1, sh, GT_INIT_ONES, 0.0f, 0);
    snprintf(name, sizeof name, "%s.bias", prefix);
    *t_b = gt_model_add_param(m, name, 1, sh, GT_INIT_ZEROS, 0.0f, 0);
    return t_w;
}

static void s2p_tf_plan(gt_model *m) {
    const gt_model_config *c = &m->cfg;
    GT_CHECK(c->n_layers >= 1 && c->n_layers <= GT_S2P_TF_MAX_LAYERS, GT_EXIT_USAGE,
             "s2p_tf: n_layers (blocks) must be in [1, %d], got %d", GT_S2P_TF_MAX_LAYERS, c->n_layers);
    GT_CHECK(c->d_model > 0 && c->n_heads > 0 && c->d_model % c->n_heads == 0, GT_EXIT_USAGE,
             "s2p_tf: d_model (%d) must be a positive multiple of n_heads (%d)", c->d_model, c->n_heads);
    GT_CHECK(c->d_ff > 0, GT_EXIT_USAGE, "s2p_tf: d_ff must be > 0, got %d", c->d_ff);
    s2p_tf *s = (s2p_tf *)GT_CALLOC(1, sizeof *s);
    m->impl = s;
    s->L = c->window;
    s->d = c->d_model;
    s->NH = c->n_heads;
    s->ff = c->d_ff;
    s->N = c->n_layers;
    s->A = c->n_out;
    s->n_in = c->n_in;
    s->mid = c->window / 2;
    const int L = s->L, d = s->d, ff = s->ff;
    const size_t B = (size_t)c->max_batch, BL = B * L;
    char name[GT_MODEL_NAME_LEN];

    /* the size table: one row per parameter tensor, PyTorch state_dict order */
    s->t_embed_w = add_linear(m, "embed", d, s->n_in, &s->t_embed_b);
    {
        int sh[2] = {L, d};
        s->t_pos = gt_model_add_param(m, "pos", 2, sh, GT_INIT_NORMAL, 0.02f, 1);
    }
    for (int l = 0; l < s->N; l++) {
        int *t = s->t_blk[l];
        snprintf(name, sizeof name, "blocks.%d.ln1", l);
        t[0] = add_layernorm(m, name, d, &t[1]);
        snprintf(name, sizeof name, "blocks.%d.attn.qkv", l);
        t[2] = add_linear(m, name, 3 * d, d, &t[3]);
        snprintf(name, sizeof name, "blocks.%d.attn.proj", l);
        t[4] = add_linear(m, name, d, d, &t[5]);
        snprintf(name, sizeof name, "blocks.%d.ln2", l);
        t[6] = add_layernorm(m, name, d, &t[7]);
        snprintf(name, sizeof name, "blocks.%d.mlp.fc1", l);
        t[8] = add_linear(m, name, ff, d, &t[9]);
        snprintf(name, sizeof name, "blocks.%d.mlp.fc2", l);
        t[10] = add_linear(m, name, d, ff, &t[11]);
    }
    s->t_lnf_w = add_layernorm(m, "ln_f", d, &s->t_lnf_b);
    s->t_head_w = add_linear(m, "head", s->A, d, &s->t_head_b);

    /* activation plan: everything linear in L */
    for (int l = 0; l < s->N; l++) {
        int *a = s->a_blk[l];
        static const char *const nm[TF_N_BLOCK_ACTS] = {"res_in", "ln1.mean", "ln1.rstd", "qkv",      "att",
                                                        "lse",    "res_mid",  "ln2.mean", "ln2.rstd", "fc1"};
        const size_t R = l + 1 < s->N ? BL : B; /* rows after attention: the last block keeps mid only */
        const size_t n[TF_N_BLOCK_ACTS] = {BL * d,     BL,    BL, BL * 3 * d, BL * d,
                                           BL * s->NH, R * d, R,  R,          R * ff};
        for (int k = 0; k < TF_N_BLOCK_ACTS; k++) {
            snprintf(name, sizeof name, "blocks.%d.%s", l, nm[k]);
            a[k] = gt_model_add_act(m, name, n[k]);
        }
    }
    s->a_att_mid = gt_model_add_act(m, "att_mid", B * d);
    s->a_hmid = gt_model_add_act(m, "hmid", B * d);
    s->a_lnf = gt_model_add_act(m, "ln_f.out", B * d);
    s->a_lnf_mean = gt_model_add_act(m, "ln_f.mean", B);
    s->a_lnf_rstd = gt_model_add_act(m, "ln_f.rstd", B);
    s->a_lnbuf = gt_model_add_act(m, "work.ln", BL * d);
    s->a_ln_mean = gt_model_add_act(m, "work.ln_mean", BL);
    s->a_ln_rstd = gt_model_add_act(m, "work.ln_rstd", BL);
    s->a_gelu = gt_model_add_act(m, "work.gelu", BL * ff);
    s->a_attn_scratch = gt_model_add_act(m, "work.attn", gt_attention_scratch_elems(L));
    s->a_dres = gt_model_add_act(m, "grad.res", BL * d);
    s->a_da = gt_model_add_act(m, "grad.a", BL * d);
    s->a_db = gt_model_add_act(m, "grad.b", BL * d);
    s->a_dqkv = gt_model_add_act(m, "grad.qkv", BL * 3 * d);
    s->a_dff = gt_model_add_act(m, "grad.ff", BL * ff);
    s->a_dlnf = gt_model_add_act(m, "grad.ln_f", B * d);
    s->a_dmid = gt_model_add_act(m, "grad.mid", B * d);
    m->n_x = (size_t)L * s->n_in;
    m->n_y = (size_t)s->A;
}

static void bind_tensors(gt_model *m, s2p_tf *s, float *buf, s2p_tf_tensors *t) {
    t->embed_w = gt_model_param_ptr(m, buf, s->t_embed_w);
    t->embed_b = gt_model_param_ptr(m, buf, s->t_embed_b);
    t->pos = gt_model_param_ptr(m, buf, s->t_pos);
    for (int l = 0; l < s->N; l++) {
        float **dst[TF_N_BLOCK_TENSORS] = {&t->blk[l].ln1_w, &t->blk[l].ln1_b,  &t->blk[l].qkv_w,
                                           &t->blk[l].qkv_b, &t->blk[l].proj_w, &t->blk[l].proj_b,
                                           &t->blk[l].ln2_w, &t->blk[l].ln2_b,  &t->blk[l].fc1_w,
                                           &t->blk[l].fc1_b, &t->blk[l].fc2_w,  &t->blk[l].fc2_b};
        for (int k = 0; k < TF_N_BLOCK_TENSORS; k++) *dst[k] = gt_model_param_ptr(m, buf, s->t_blk[l][k]);
    }
    t->lnf_w = gt_model_param_ptr(m, buf, s->t_lnf_w);
    t->lnf_b = gt_model_param_ptr(m, buf, s->t_lnf_b);
    t->head_w = gt_model_param_ptr(m, buf, s->t_head_w);
    t->head_b = gt_model_param_ptr(m, buf, s->t_head_b);
}

static void s2p_tf_bind(gt_model *m) {
    s2p_tf *s = (s2p_tf *)m->impl;
    bind_tensors(m, s, m->params, &s->p);
    bind_tensors(m, s, m->grads, &s->g);
    for (int l = 0; l < s->N; l++) {
        tf_block_acts *a = &s->blk[l];
        float **dst[TF_N_BLOCK_ACTS] = {&a->res_in, &a->ln1_mean, &a->ln1_rstd, &a->qkv,      &a->att,
                                        &a->lse,    &a->res_mid,  &a->ln2_mean, &a->ln2_rstd, &a->fc1};
        for (int k = 0; k < TF_N_BLOCK_ACTS; k++) *dst[k] = gt_model_act_ptr(m, s->a_blk[l][k]);
    }
    s->att_mid = gt_model_act_ptr(m, s->a_att_mid);
    s->hmid = gt_model_act_ptr(m, s->a_hmid);
    s->lnf = gt_model_act_ptr(m, s->a_lnf);
    s->lnf_mean = gt_model_act_ptr(m, s->a_lnf_mean);
    s->lnf_rstd = gt_model_act_ptr(m, s->a_lnf_rstd);
    s->lnbuf = gt_model_act_ptr(m, s->a_lnbuf);
    s->ln_mean = gt_model_act_ptr(m, s->a_ln_mean);
    s->ln_rstd = gt_model_act_ptr(m, s->a_ln_rstd);
    s->gelu = gt_model_act_ptr(m, s->a_gelu);
    s->attn_scratch = gt_model_act_ptr(m, s->a_attn_scratch);
    s->dres = gt_model_act_ptr(m, s->a_dres);
    s->da = gt_model_act_ptr(m, s->a_da);
    s->db = gt_model_act_ptr(m, s->a_db);
    s->dqkv = gt_model_act_ptr(m, s->a_dqkv);
    s->dff = gt_model_act_ptr(m, s->a_dff);
    s->dlnf = gt_model_act_ptr(m, s->a_dlnf);
    s->dmid = gt_model_act_ptr(m, s->a_dmid);
}

/* Blocks 0..N-2: every row. res_out (B,L,d) = block(a->res_in). */
static void block_forward(s2p_tf *s, int l, int B, float *res_out) {
    const int L = s->L, d = s->d, ff = s->ff, BL = B * L;
    const tf_block_tensors *w = &s->p.blk[l];
    tf_block_acts *a = &s->blk[l];
    const float eps = GT_S2P_TF_LN_EPS;
    /* attention half */
    gt_layernorm_forward(s->lnbuf, a->ln1_mean, a->ln1_rstd, a->res_in, w->ln1_w, w->ln1_b, BL, d, eps);
    gt_linear_forward(a->qkv, s->lnbuf, w->qkv_w, w->qkv_b, BL, d, 3 * d, GT_ACT_NONE);
    gt_attention_forward(a->att, a->lse, s->attn_scratch, a->qkv, B, L, d, s->NH);
    gt_linear_forward(s->lnbuf, a->att, w->proj_w, w->proj_b, BL, d, d, GT_ACT_NONE);
    add_to(a->res_mid, a->res_in, s->lnbuf, (size_t)BL * d);
    /* MLP half */
    gt_layernorm_forward(s->lnbuf, a->ln2_mean, a->ln2_rstd, a->res_mid, w->ln2_w, w->ln2_b, BL, d, eps);
    gt_linear_forward(a->fc1, s->lnbuf, w->fc1_w, NULL, BL, d, ff, GT_ACT_NONE);
    tf_bias_gelu(s->gelu, a->fc1, w->fc1_b, BL, ff);
    gt_linear_forward(s->lnbuf, s->gelu, w->fc2_w, w->fc2_b, BL, ff, d, GT_ACT_NONE);
    add_to(res_out, a->res_mid, s->lnbuf, (size_t)BL * d);
}

/* Block N-1: keys/values over the window, everything after them on the
 * midpoint row only (exact: the head reads nothing else). hmid (B,d). */
static void last_block_forward(s2p_tf *s, int B) {
    const int l = s->N - 1, L = s->L, d = s->d, ff = s->ff, BL = B * L, mid = s->mid;
    const tf_block_tensors *w = &s->p.blk[l];
    tf_block_acts *a = &s->blk[l];
    const float eps = GT_S2P_TF_LN_EPS;
    gt_layernorm_forward(s->lnbuf, a->ln1_mean, a->ln1_rstd, a->res_in, w->ln1_w, w->ln1_b, BL, d, eps);
    gt_linear_forward(a->qkv, s->lnbuf, w->qkv_w, w->qkv_b, BL, d, 3 * d, GT_ACT_NONE);
    gt_attention_forward_rows(a->att, a->lse, s->attn_scratch, a->qkv, B, L, d, s->NH, mid, 1);
    for (int b = 0; b < B; b++)
        memcpy(s->att_mid + (size_t)b * d, a->att + ((size_t)b * L + mid) * d, (size_t)d * sizeof(float));
    gt_linear_forward(s->lnbuf, s->att_mid, w->proj_w, w->proj_b, B, d, d, GT_ACT_NONE);
    for (int b = 0; b < B; b++)
        add_to(a->res_mid + (size_t)b * d, a->res_in + ((size_t)b * L + mid) * d, s->lnbuf + (size_t)b * d,
               (size_t)d);
    gt_layernorm_forward(s->lnbuf, a->ln2_mean, a->ln2_rstd, a->res_mid, w->ln2_w, w->ln2_b, B, d, eps);
    gt_linear_forward(a->fc1, s->lnbuf, w->fc1_w, NULL, B, d, ff, GT_ACT_NONE);
    tf_bias_gelu(s->gelu, a->fc1, w->fc1_b, B, ff);
    gt_linear_forward(s->lnbuf, s->gelu, w->fc2_w, w->fc2_b, B, ff, d, GT_ACT_NONE);
    add_to(s->hmid, a->res_mid, s->lnbuf, (size_t)B * d);
}

static void s2p_tf_forward(gt_model *m, int B) {
    s2p_tf *s = (s2p_tf *)m->impl;
    const int L = s->L, d = s->d;

    /* h = embed(x) + pos: x (B,L,n_in) -> (B,L,d) */
    float *h = s->blk[0].res_in;
    gt_linear_forward(h, m->x, s->p.embed_w, s->p.embed_b, B * L, s->n_in, d, GT_ACT_NONE);
    for (int b = 0; b < B; b++) add_to(h + (size_t)b * L * d, h + (size_t)b * L * d, s->p.pos, (size_t)L * d);
    for (int l = 0; l + 1 < s->N; l++) block_forward(s, l, B, s->blk[l + 1].res_in);
    last_block_forward(s, B);
    /* head on the midpoint vector */
    gt_layernorm_forward(s->lnf, s->lnf_mean, s->lnf_rstd, s->hmid, s->p.lnf_w, s->p.lnf_b, B, d,
                         GT_S2P_TF_LN_EPS);
    gt_linear_forward(m->pred, s->lnf, s->p.head_w, s->p.head_b, B, d, s->A, GT_ACT_NONE);
}

/* Blocks 0..N-2. In: s->dres (B,L,d) = d loss / d res_out; out: d loss / d res_in. */
static void block_backward(s2p_tf *s, int l, int B) {
    const int L = s->L, d = s->d, ff = s->ff, BL = B * L;
    const size_t n_bld = (size_t)BL * d;
    const float eps = GT_S2P_TF_LN_EPS;
    const tf_block_tensors *w = &s->p.blk[l];
    tf_block_tensors *gw = &s->g.blk[l];
    const tf_block_acts *a = &s->blk[l];
    /* MLP half: res_out = res_mid + fc2(gelu(fc1(ln2(res_mid)))) */
    tf_gelu_forward(s->gelu, a->fc1, (size_t)BL * ff); /* recompute */
    gt_linear_backward(s->dff, gw->fc2_w, gw->fc2_b, s->dres, s->gelu, w->fc2_w, NULL, NULL, BL, ff, d,
                       GT_ACT_NONE);
    tf_gelu_backward(s->dff, s->dff, a->fc1, (size_t)BL * ff);
    gt_layernorm_forward(s->lnbuf, s->ln_mean, s->ln_rstd, a->res_mid, w->ln2_w, w->ln2_b, BL, d, eps);
    gt_linear_backward(s->da, gw->fc1_w, gw->fc1_b, s->dff, s->lnbuf, w->fc1_w, NULL, NULL, BL, d, ff,
                       GT_ACT_NONE);
    gt_layernorm_backward(s->db, gw->ln2_w, gw->ln2_b, s->da, a->res_mid, w->ln2_w, a->ln2_mean, a->ln2_rstd,
                          BL, d);
    add_to(s->dres, s->dres, s->db, n_bld); /* now d/d res_mid */
    /* attention half: res_mid = res_in + proj(attn(qkv(ln1(res_in)))) */
    gt_linear_backward(s->da, gw->proj_w, gw->proj_b, s->dres, a->att, w->proj_w, NULL, NULL, BL, d, d,
                       GT_ACT_NONE);
    gt_attention_backward(s->dqkv, s->attn_scratch, s->da, a->qkv, a->att, a->lse, B, L, d, s->NH);
    gt_layernorm_forward(s->lnbuf, s->ln_mean, s->ln_rstd, a->res_in, w->ln1_w, w->ln1_b, BL, d, eps);
    gt_linear_backward(s->da, gw->qkv_w, gw->qkv_b, s->dqkv, s->lnbuf, w->qkv_w, NULL, NULL, BL, d, 3 * d,
                       GT_ACT_NONE);
    gt_layernorm_backward(s->db, gw->ln1_w, gw->ln1_b, s->da, a->res_in, w->ln1_w, a->ln1_mean, a->ln1_rstd,
                          BL, d);
    add_to(s->dres, s->dres, s->db, n_bld); /* now d/d res_in */
}

/* Block N-1. In: s->dmid (B,d) = d loss / d hmid (clobbered); out: s->dres
 * (B,L,d) = d loss / d res_in of the block. */
static void last_block_backward(s2p_tf *s, int B) {
    const int l = s->N - 1, L = s->L, d = s->d, ff = s->ff, BL = B * L, mid = s->mid;
    const float eps = GT_S2P_TF_LN_EPS;
    const tf_block_tensors *w = &s->p.blk[l];
    tf_block_tensors *gw = &s->g.blk[l];
    const tf_block_acts *a = &s->blk[l];
    /* MLP half on the midpoint rows: hmid = res_mid + fc2(gelu(fc1(ln2(res_mid)))) */
    tf_gelu_forward(s->gelu, a->fc1, (size_t)B * ff);
    gt_linear_backward(s->dff, gw->fc2_w, gw->fc2_b, s->dmid, s->gelu, w->fc2_w, NULL, NULL, B, ff, d,
                       GT_ACT_NONE);
    tf_gelu_backward(s->dff, s->dff, a->fc1, (size_t)B * ff);
    gt_layernorm_forward(s->lnbuf, s->ln_mean, s->ln_rstd, a->res_mid, w->ln2_w, w->ln2_b, B, d, eps);
    gt_linear_backward(s->da, gw->fc1_w, gw->fc1_b, s->dff, s->lnbuf, w->fc1_w, NULL, NULL, B, d, ff,
                       GT_ACT_NONE);
    gt_layernorm_backward(s->db, gw->ln2_w, gw->ln2_b, s->da, a->res_mid, w->ln2_w, a->ln2_mean, a->ln2_rstd,
                          B, d);
    add_to(s->dmid, s->dmid, s->db, (size_t)B * d); /* now d/d res_mid (B,d) */
    /* attention half: only the midpoint query row carries gradient */
    gt_linear_backward(s->da, gw->proj_w, gw->proj_b, s->dmid, s->att_mid, w->proj_w, NULL, NULL, B, d, d,
                       GT_ACT_NONE); /* da (B,d) = d/d att_mid */
    for (int b = 0; b < B; b++) /* as (B,L,d) rows at mid: the rows op reads nothing else */
        memcpy(s->db + ((size_t)b * L + mid) * d, s->da + (size_t)b * d, (size_t)d * sizeof(float));
    gt_attention_backward_rows(s->dqkv, s->attn_scratch, s->db, a->qkv, a->att, a->lse, B, L, d, s->NH, mid,
                               1);
    gt_layernorm_forward(s->lnbuf, s->ln_mean, s->ln_rstd, a->res_in, w->ln1_w, w->ln1_b, BL, d, eps);
    gt_linear_backward(s->da, gw->qkv_w, gw->qkv_b, s->dqkv, s->lnbuf, w->qkv_w, NULL, NULL, BL, d, 3 * d,
                       GT_ACT_NONE);
    gt_layernorm_backward(s->dres, gw->ln1_w, gw->ln1_b, s->da, a->res_in, w->ln1_w, a->ln1_mean, a->ln1_rstd,
                          BL, d);
    for (int b = 0; b < B; b++) { /* residual path: res_in[:, mid] -> res_mid */
        float *dr = s->dres + ((size_t)b * L + mid) * d;
        add_to(dr, dr, s->dmid + (size_t)b * d, (size_t)d);
    }
}

static void s2p_tf_backward(gt_model *m, int B) {
    s2p_tf *s = (s2p_tf *)m->impl;
    const int L = s->L, d = s->d;
    double t = gt_model_span_begin();
    gt_linear_backward(s->dlnf, s->g.head_w, s->g.head_b, m->dpred, s->lnf, s->p.head_w, NULL, NULL, B, d,
                       s->A, GT_ACT_NONE);
    gt_layernorm_backward(s->dmid, s->g.lnf_w, s->g.lnf_b, s->dlnf, s->hmid, s->p.lnf_w, s->lnf_mean,
                          s->lnf_rstd, B, d);
    gt_model_span_end("bwd head", t, -1);
    gt_model_grad_ready(m, s->g.lnf_w);
    t = gt_model_span_begin();
    last_block_backward(s, B);
    gt_model_span_end("bwd block", t, s->N - 1);
    gt_model_grad_ready(m, s->g.blk[s->N - 1].ln1_w);
    for (int l = s->N - 2; l >= 0; l--) {
        t = gt_model_span_begin();
        block_backward(s, l, B);
        gt_model_span_end("bwd block", t, l);
        gt_model_grad_ready(m, s->g.blk[l].ln1_w);
    }
    /* embedding: h0 = x embed_w^T + embed_b + pos */
    for (int b = 0; b < B; b++) add_to(s->g.pos, s->g.pos, s->dres + (size_t)b * L * d, (size_t)L * d);
    gt_linear_backward(NULL, s->g.embed_w, s->g.embed_b, s->dres, m->x, s->p.embed_w, NULL, NULL, B * L,
                       s->n_in, d, GT_ACT_NONE);
    gt_model_grad_ready(m, s->g.embed_w);
}

static void s2p_tf_free(gt_model *m) {
    free(m->impl);
    m->impl = NULL;
}

static double s2p_tf_flops(const gt_model_config *c) {
    double f = 0.0, L = c->window, d = c->d_model, ff = c->d_ff;
    f += 2.0 * L * c->n_in * d;
    /* qkv, QK^T + PV, output projection, FFN */
    f += c->n_layers * (2.0 * L * d * 3.0 * d + 4.0 * L * L * d + 2.0 * L * d * d + 4.0 * L * d * ff);
    return f + 2.0 * d * c->n_out; /* head on one position */
}

/* attention's scores: B x heads x L^2 per block */
static double s2p_tf_bytes_extra(const gt_model_config *c, int B) {
    return 4.0 * 4 * B * (double)c->n_heads * c->window * c->window * c->n_layers;
}

/* GT_ATTN_IMPL (nn/model.h) */
int gt_model_attention_mma(void) {
    const char *v = getenv("GT_ATTN_IMPL");
    return v && strcmp(v, "mma") == 0;
}

/* attention's D rows, or with the mma kernels D and their bf16 copies of q, k, v, dout */
static size_t s2p_tf_device_work(const gt_model_config *c) {
    return gt_model_attention_mma() ? gt_attention_mma_scratch_size(c->max_batch, c->window, c->d_model, c->n_heads)
                                    : gt_attention_cuda_scratch_size(c->max_batch, c->window, c->n_heads);
}

/* bf16 precision: the pre-GELU MLP activations "blocks.<l>.fc1" (nn/model.h) */
static int s2p_tf_act_device_bf16(const gt_model_config *cfg, const char *name) {
    if (cfg->precision != GT_PRECISION_BF16) return 0;
    int l = -1, n = 0;
    return sscanf(name, "blocks.%d.fc1%n", &l, &n) == 1 && name[n] == '\0' && l >= 0;
}

static void s2p_tf_describe(const gt_model_config *c, char *buf, size_t n) {
    snprintf(buf, n, " d=%d heads=%d ff=%d N=%d", c->d_model, c->n_heads, c->d_ff, c->n_layers);
}

const gt_model_vtable gt_model_vtable_s2p_tf = {
    .name = "s2p_tf",
    .channels_last = 1,
    .seq2point = 1,
    .defaults = s2p_tf_defaults,
    .plan = s2p_tf_plan,
    .bind = s2p_tf_bind,
    .forward = s2p_tf_forward,
    .backward = s2p_tf_backward,
    .free = s2p_tf_free,
    .forward_flops = s2p_tf_flops,
    .bytes_estimate_extra = s2p_tf_bytes_extra,
    .device_work_elems = s2p_tf_device_work,
    .act_device_bf16 = s2p_tf_act_device_bf16,
    .gpu_efficiency = 0.02, /* fp32 SIMT attention, one query row per lane group */
    .bench_batch = 32,
    .describe = s2p_tf_describe,
    .bench_mem_check = 1,
};
