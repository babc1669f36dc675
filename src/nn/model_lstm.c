/* nn/model_lstm.c: stacked LSTM next-step predictor, see nn/model_lstm.h. */
#include "nn/model_lstm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "nn/ops/cuda/sizes.h"
#include "nn/ops/lstm.h"

/* Struct of pointers into one of the same-layout buffers (params or grads). */
typedef struct lstm_tensors {
    float *w_ih[GT_LSTM_MAX_LAYERS]; /* (4H, in_k) */
    float *w_hh[GT_LSTM_MAX_LAYERS]; /* (4H, H) */
    float *b_ih[GT_LSTM_MAX_LAYERS]; /* (4H) */
    float *b_hh[GT_LSTM_MAX_LAYERS]; /* (4H) */
    float *head_w, *head_b; /* (C, H), (C) */
} lstm_tensors;

typedef struct lstm_model {
    int T, C, H, NL, K;
    int t_w_ih[GT_LSTM_MAX_LAYERS], t_w_hh[GT_LSTM_MAX_LAYERS], t_b_ih[GT_LSTM_MAX_LAYERS],
        t_b_hh[GT_LSTM_MAX_LAYERS], t_head_w, t_head_b;
    int a_h[GT_LSTM_MAX_LAYERS], a_c[GT_LSTM_MAX_LAYERS], a_gates[GT_LSTM_MAX_LAYERS], a_dgates, a_dh0, a_dh1,
        a_scratch;
    lstm_tensors p, g;
    float *h[GT_LSTM_MAX_LAYERS]; /* (B,T,H) hidden states of layer k */
    float *c[GT_LSTM_MAX_LAYERS]; /* (B,T,H) cell states */
    float *gates[GT_LSTM_MAX_LAYERS]; /* (B,T,4H) activated gates */
    float *dgates; /* (B,T,4H) backward work, shared by the layers */
    float *dh[2]; /* (B,T,H) ping-pong d loss / d h^k */
    float *scratch; /* gt_lstm_scratch_elems(B,H) */
} lstm_model;

static void lstm_defaults(gt_model_config *cfg) {
    cfg->window = 512;
    cfg->n_in = 32;
    cfg->n_out = 32;
    cfg->hidden = 128;
    cfg->n_layers = 2;
    cfg->tbptt = 0;
    cfg->max_batch = 64;
}

static void lstm_plan(gt_model *m) {
    const gt_model_config *cf = &m->cfg;
    GT_CHECK(cf->n_layers >= 1 && cf->n_layers <= GT_LSTM_MAX_LAYERS, GT_EXIT_USAGE,
             "lstm: n_layers must be in [1, %d], got %d", GT_LSTM_MAX_LAYERS, cf->n_layers);
    GT_CHECK(cf->hidden > 0, GT_EXIT_USAGE, "lstm: hidden must be > 0, got %d", cf->hidden);
    GT_CHECK(cf->n_out == cf->n_in, GT_EXIT_USAGE,
             "lstm: n_out (%d) must equal n_in (%d): the model predicts the next step's channels", cf->n_out,
             cf->n_in);
    GT_CHECK(cf->window >= 2, GT_EXIT_USAGE, "lstm: window must be >= 2 (next-step targets), got %d",
             cf->window);
    GT_CHECK(cf->tbptt >= 0, GT_EXIT_USAGE, "lstm: tbptt must be >= 0, got %d", cf->tbptt);
    lstm_model *s = (lstm_model *)GT_CALLOC(1, sizeof *s);
    m->impl = s;
    s->T = cf->window;
    s->C = cf->n_in;
    s->H = cf->hidden;
    s->NL = cf->n_layers;
    s->K = cf->tbptt;
    const int H = s->H, G = 4 * s->H;
    const size_t BT = (size_t)cf->max_batch * s->T;
    const float bound = 1.0f / sqrtf((float)H);
    char name[GT_MODEL_NAME_LEN];

    for (int k = 0; k < s->NL; k++) {
        int in = k == 0 ? s->C : H;
        int sh_ih[2] = {G, in}, sh_hh[2] = {G, H}, sh_b[1] = {G};
        snprintf(name, sizeof name, "lstm.weight_ih_l%d", k);
        s->t_w_ih[k] = gt_model_add_param(m, name, 2, sh_ih, GT_INIT_UNIFORM, bound, 1);
        snprintf(name, sizeof name, "lstm.weight_hh_l%d", k);
        s->t_w_hh[k] = gt_model_add_param(m, name, 2, sh_hh, GT_INIT_UNIFORM, bound, 1);
        snprintf(name, sizeof name, "lstm.bias_ih_l%d", k);
        s->t_b_ih[k] = gt_model_add_param(m, name, 1, sh_b, GT_INIT_UNIFORM, bound, 0);
        snprintf(name, sizeof name, "lstm.bias_hh_l%d", k);
        s->t_b_hh[k] = gt_model_add_param(m, name, 1, sh_b, GT_INIT_UNIFORM, bound, 0);
    }
    {
        int shw[2] = {s->C, H}, shb[1] = {s->C};
        s->t_head_w = gt_model_add_param(m, "head.weight", 2, shw, GT_INIT_UNIFORM, bound, 1);
        s->t_head_b = gt_model_add_param(m, "head.bias", 1, shb, GT_INIT_UNIFORM, bound, 0);
    }
    for (int k = 0; k < s->NL; k++) {
        snprintf(name, sizeof name, "lstm.%d.h", k);
        s->a_h[k] = gt_model_add_act(m, name, BT * H);
        snprintf(name, sizeof name, "lstm.%d.c", k);
        s->a_c[k] = gt_model_add_act(m, name, BT * H);
        snprintf(name, sizeof name, "lstm.%d.gates", k);
        s->a_gates[k] = gt_model_add_act(m, name, BT * G);
    }
    s->a_dgates = gt_model_add_act(m, "grad.gates", BT * G);
    s->a_dh0 = gt_model_add_act(m, "grad.h0", BT * H);
    s->a_dh1 = gt_model_add_act(m, "grad.h1", BT * (size_t)(H > s->C ? H : s->C));
    s->a_scratch = gt_model_add_act(m, "work.lstm", gt_lstm_scratch_elems(cf->max_batch, H));
    m->n_x = (size_t)s->T * s->C;
    m->n_y = (size_t)s->T * s->C;
}

static void bind_tensors(gt_model *m, lstm_model *s, float *buf, lstm_tensors *t) {
    for (int k = 0; k < s->NL; k++) {
        t->w_ih[k] = gt_model_param_ptr(m, buf, s->t_w_ih[k]);
        t->w_hh[k] = gt_model_param_ptr(m, buf, s->t_w_hh[k]);
        t->b_ih[k] = gt_model_param_ptr(m, buf, s->t_b_ih[k]);
        t->b_hh[k] = gt_model_param_ptr(m, buf, s->t_b_hh[k]);
    }
    t->head_w = gt_model_param_ptr(m, buf, s->t_head_w);
    t->head_b = gt_model_param_ptr(m, buf, s->t_head_b);
}

static void lstm_bind(gt_model *m) {
    lstm_model *s = (lstm_model *)m->impl;
    bind_tensors(m, s, m->params, &s->p);
    bind_tensors(m, s, m->grads, &s->g);
    for (int k = 0; k < s->NL; k++) {
        s->h[k] = gt_model_act_ptr(m, s->a_h[k]);
        s->c[k] = gt_model_act_ptr(m, s->a_c[k]);
        s->gates[k] = gt_model_act_ptr(m, s->a_gates[k]);
    }
    s->dgates = gt_model_act_ptr(m, s->a_dgates);
    s->dh[0] = gt_model_act_ptr(m, s->a_dh0);
    s->dh[1] = gt_model_act_ptr(m, s->a_dh1);
    s->scratch = gt_model_act_ptr(m, s->a_scratch);
}

static void lstm_forward(gt_model *m, int B) {
    lstm_model *s = (lstm_model *)m->impl;
    const float *inp = m->x; /* (B,T,C) */
    for (int k = 0; k < s->NL; k++) {
        gt_lstm_forward(s->h[k], s->c[k], s->gates[k], inp, s->p.w_ih[k], s->p.w_hh[k], s->p.b_ih[k],
                        s->p.b_hh[k], B, s->T, k == 0 ? s->C : s->H, s->H);
        inp = s->h[k]; /* (B,T,H) */
    }
    gt_linear_forward(m->pred, inp, s->p.head_w, s->p.head_b, B * s->T, s->H, s->C, GT_ACT_NONE);
}

static void lstm_backward(gt_model *m, int B) {
    lstm_model *s = (lstm_model *)m->impl;
    const int top = s->NL - 1;
    float *dcur = s->dh[0]; /* (B,T,H) d loss / d h^top */
    double t = gt_model_span_begin();
    gt_linear_backward(dcur, s->g.head_w, s->g.head_b, m->dpred, s->h[top], s->p.head_w, NULL, NULL, B * s->T,
                       s->H, s->C, GT_ACT_NONE);
    gt_model_span_end("bwd head", t, -1);
    gt_model_grad_ready(m, s->g.head_w);
    for (int k = top; k >= 0; k--) {
        t = gt_model_span_begin();
        float *dnext = k > 0 ? s->dh[(top - k + 1) & 1] : NULL; /* (B,T,H) d loss / d h^{k-1} */
        const float *inp = k > 0 ? s->h[k - 1] : m->x;
        gt_lstm_backward(dnext, s->g.w_ih[k], s->g.w_hh[k], s->g.b_ih[k], s->g.b_hh[k], s->dgates, s->scratch,
                         dcur, inp, s->p.w_ih[k], s->p.w_hh[k], s->h[k], s->c[k], s->gates[k], B, s->T,
                         k == 0 ? s->C : s->H, s->H, s->K);
        gt_model_span_end("bwd lstm", t, k);
        gt_model_grad_ready(m, s->g.w_ih[k]);
        dcur = dnext;
    }
}

static void lstm_free(gt_model *m) {
    lstm_model *s = (lstm_model *)m->impl;
    for (int k = 0; s && k < s->NL; k++) gt_lstm_release(s->gates[k]);
    free(m->impl);
    m->impl = NULL;
}

static double lstm_flops(const gt_model_config *c) {
    double f = 0.0, T = c->window, H = c->hidden, cin = c->n_in;
    for (int l = 0; l < c->n_layers; l++) {
        f += T * 2.0 * 4.0 * H * (cin + H);
        cin = H;
    }
    return f + T * 2.0 * H * c->n_out;
}

/* GT_LSTM_IMPL (nn/model.h) */
int gt_model_lstm_cudnn(void) {
#ifdef GT_HAVE_CUDNN
    const char *v = getenv("GT_LSTM_IMPL");
    if (!v) return 0;
    return strcmp(v, "cudnn") == 0 ? 1 : strcmp(v, "cudnn-stack") == 0 ? 2 : 0;
#else
    return 0;
#endif
}

/* the kernels' shifted hidden states; with cuDNN, its area after them, 256-byte aligned */
static size_t lstm_device_work(const gt_model_config *c) {
    size_t w = gt_lstm_cuda_scratch_size(c->max_batch, c->window, c->hidden);
    if (gt_model_lstm_cudnn())
        w = gt_lstm_cudnn_al(w) +
            gt_lstm_cudnn_area_elems(c->max_batch, c->window, c->n_in, c->hidden, c->n_layers, c->tbptt);
    return w;
}

static void lstm_describe(const gt_model_config *c, char *buf, size_t n) {
    snprintf(buf, n, " C=%d H=%d layers=%d tbptt=%d", c->n_in, c->hidden, c->n_layers, c->tbptt);
}

const gt_model_vtable gt_model_vtable_lstm = {
    .name = "lstm",
    .has = GT_MODEL_HAS_TBPTT,
    .channels_last = 1,
    .seq2point = 0,
    .defaults = lstm_defaults,
    .plan = lstm_plan,
    .bind = lstm_bind,
    .forward = lstm_forward,
    .backward = lstm_backward,
    .free = lstm_free,
    .forward_flops = lstm_flops,
    .self_loss = gt_model_lstm_loss, /* next-step MSE on x */
    .next_step_targets = gt_model_lstm_targets,
    .device_work_elems = lstm_device_work,
    .gpu_efficiency = 0.005, /* one GEMM + one cell kernel per step and layer: launch-bound */
    .bench_batch = 64,
    .describe = lstm_describe,
};

/* ------------------------------------------------------- next-step loss -- */
void gt_model_lstm_targets(float *y, float *mask, const float *x, int B, int T, int C) {
    for (int b = 0; b < B; b++) {
        const float *xb = x + (size_t)b * T * C; /* (T,C) */
        float *yb = y + (size_t)b * T * C, *mb = mask + (size_t)b * T * C;
        memcpy(yb, xb + C, (size_t)(T - 1) * C * sizeof(float));
        memset(yb + (size_t)(T - 1) * C, 0, (size_t)C * sizeof(float));
        for (size_t i = 0; i < (size_t)(T - 1) * C; i++) mb[i] = 1.0f;
        memset(mb + (size_t)(T - 1) * C, 0, (size_t)C * sizeof(float));
    }
}

float gt_model_lstm_loss(gt_model *m) {
    GT_CHECK(m->cfg.kind == GT_MODEL_LSTM, GT_EXIT_INTERNAL, "gt_model_lstm_loss on a non-lstm model");
    GT_CHECK(m->batch > 0, GT_EXIT_INTERNAL, "gt_model_lstm_loss called before gt_model_forward");
    const lstm_model *s = (const lstm_model *)m->impl;
    const int B = m->batch, T = s->T, C = s->C;
    const size_t n_per = (size_t)(T - 1) * C; /* targets per sample */
    const float scale = 2.0f / (float)((double)B * n_per);
    double sum = 0.0;
    for (int b = 0; b < B; b++) {
        const float *p = m->pred + (size_t)b * T * C, *y = m->x + (size_t)b * T * C + C;
        float *dp = m->dpred + (size_t)b * T * C;
        for (size_t i = 0; i < n_per; i++) {
            float e = p[i] - y[i];
            sum += (double)e * e;
            dp[i] = scale * e;
        }
        memset(dp + n_per, 0, (size_t)C * sizeof(float));
    }
    m->loss = (float)(sum / ((double)B * n_per));
    return m->loss;
}

void gt_model_lstm_step_errors(const gt_model *m, float *err) {
    GT_CHECK(m->cfg.kind == GT_MODEL_LSTM, GT_EXIT_INTERNAL, "gt_model_lstm_step_errors on a non-lstm model");
    GT_CHECK(m->batch > 0, GT_EXIT_INTERNAL, "gt_model_lstm_step_errors called before gt_model_forward");
    const lstm_model *s = (const lstm_model *)m->impl;
    const int B = m->batch, T = s->T, C = s->C;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T - 1; t++) {
            const float *p = m->pred + ((size_t)b * T + t) * C, *y = m->x + ((size_t)b * T + t + 1) * C;
            float acc = 0.0f;
            for (int c = 0; c < C; c++) {
                float e = p[c] - y[c];
                acc += e * e;
            }
            err[(size_t)b * (T - 1) + t] = acc / (float)C;
        }
}
