// nn/ops/cuda/cuda_model_lstm.cu: lstm on the GPU, the CPU code of
// nn/model_lstm.c with every op replaced by its CUDA twin (the device table
// gt_cuda_kind_lstm, nn/ops/cuda/cuda_model_impl.h), and its next-step loss
// (gt_cuda_model_lstm_loss).
#include <stdlib.h>

#include "nn/model_lstm.h"
#include "nn/ops/cuda/cuda_model_impl.h"

// The kind's pointers (create: by name, once) and its cuDNN state.
struct lstm_tab {
    pg w_ih[GT_LSTM_MAX_LAYERS], w_hh[GT_LSTM_MAX_LAYERS], b_ih[GT_LSTM_MAX_LAYERS], b_hh[GT_LSTM_MAX_LAYERS];
    pg head_w, head_b;
    float *h[GT_LSTM_MAX_LAYERS], *c[GT_LSTM_MAX_LAYERS], *gates[GT_LSTM_MAX_LAYERS];
    float *dh[2], *dgates;
    gt_lstm_cudnn *lstm_dnn; // the LSTM on cuDNN (in work), or NULL: the kernels
    int lstm_dnn_stack;      // lstm_dnn runs the whole stack in one call
};
static lstm_tab *lstm_of(const gt_cuda_model *m) { return (lstm_tab *)m->kind_ctx; }

// ================================================================= lstm ==
static void lstm_forward(gt_cuda_model *m, int B) {
    const lstm_tab *t = lstm_of(m);
    const gt_model_config *c = &m->plan.cfg;
    const int T = c->window, C = c->n_in, H = c->hidden, NL = c->n_layers;
    cudaStream_t st = m->stream;
    const float *inp = m->x;
    if (t->lstm_dnn_stack) { // one call: only the top layer's h is written (the head's input)
        const float *w_ih[GT_LSTM_MAX_LAYERS], *w_hh[GT_LSTM_MAX_LAYERS], *b_ih[GT_LSTM_MAX_LAYERS],
            *b_hh[GT_LSTM_MAX_LAYERS];
        for (int k = 0; k < NL; k++) {
            w_ih[k] = t->w_ih[k].p, w_hh[k] = t->w_hh[k].p;
            b_ih[k] = t->b_ih[k].p, b_hh[k] = t->b_hh[k].p;
        }
        inp = t->h[NL - 1];
        gt_lstm_cudnn_forward_stack(t->lstm_dnn, (float *)inp, m->x, w_ih, w_hh, b_ih, b_hh, B);
    }
    for (int k = 0; k < NL && !t->lstm_dnn_stack; k++) {
        float *h = t->h[k];
        if (t->lstm_dnn) { // lstm.%d.c and lstm.%d.gates stay unused: cuDNN keeps its own in its reserve space
            gt_lstm_cudnn_forward(t->lstm_dnn, k, h, inp, t->w_ih[k].p, t->w_hh[k].p,
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
    const lstm_tab *t = lstm_of(m);
    const gt_model_config *c = &m->plan.cfg;
    const int T = c->window, C = c->n_in, H = c->hidden, NL = c->n_layers, top = NL - 1;
    cudaStream_t st = m->stream;
    float *dh[2] = {t->dh[0], t->dh[1]};
    float *dgates = t->dgates;
    float *dcur = dh[0];
    gt_linear_backward_cuda(dcur, t->head_w.g, t->head_b.g, m->dpred, t->h[top],
                            t->head_w.p, nullptr, nullptr, B * T, H, C, GT_ACT_NONE, st);
    gt_cuda_ready(m, t->head_w.g);
    if (t->lstm_dnn_stack) { // one call; then each layer's report, in the kernels' order
        float *dw_ih[GT_LSTM_MAX_LAYERS], *dw_hh[GT_LSTM_MAX_LAYERS], *db_ih[GT_LSTM_MAX_LAYERS],
            *db_hh[GT_LSTM_MAX_LAYERS];
        for (int k = 0; k < NL; k++) {
            dw_ih[k] = t->w_ih[k].g, dw_hh[k] = t->w_hh[k].g;
            db_ih[k] = t->b_ih[k].g, db_hh[k] = t->b_hh[k].g;
        }
        gt_lstm_cudnn_backward_stack(t->lstm_dnn, nullptr, dw_ih, dw_hh, db_ih, db_hh, dcur, m->x,
                                     t->h[top], B);
        for (int k = top; k >= 0; k--) gt_cuda_ready(m, t->w_ih[k].g);
        return;
    }
    for (int k = top; k >= 0; k--) {
        float *dnext = k > 0 ? dh[(top - k + 1) & 1] : nullptr;
        const float *inp = k > 0 ? t->h[k - 1] : m->x;
        if (t->lstm_dnn) // one layer per call: its gradients are reported as the kernels' are
            gt_lstm_cudnn_backward(t->lstm_dnn, k, dnext, t->w_ih[k].g, t->w_hh[k].g,
                                   t->b_ih[k].g, t->b_hh[k].g, dcur, inp,
                                   t->h[k], B);
        else
            gt_lstm_backward_cuda(dnext, t->w_ih[k].g, t->w_hh[k].g,
                                  t->b_ih[k].g, t->b_hh[k].g, dgates, m->work, dcur, inp,
                                  t->w_ih[k].p, t->w_hh[k].p,
                                  t->h[k], t->c[k], t->gates[k], B, T,
                                  k == 0 ? C : H, H, c->tbptt, st);
        gt_cuda_ready(m, t->w_ih[k].g);
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

static void lstm_create(gt_cuda_model *m) {
    const gt_model_config *c = &m->plan.cfg;
    lstm_tab *t = (lstm_tab *)GT_CALLOC(1, sizeof *t);
    m->kind_ctx = t;
    for (int k = 0; k < c->n_layers; k++) {
        t->w_ih[k] = gt_cuda_pg(m, "lstm.weight_ih_l%d", k), t->w_hh[k] = gt_cuda_pg(m, "lstm.weight_hh_l%d", k);
        t->b_ih[k] = gt_cuda_pg(m, "lstm.bias_ih_l%d", k), t->b_hh[k] = gt_cuda_pg(m, "lstm.bias_hh_l%d", k);
        t->h[k] = gt_cuda_act(m, "lstm.%d.h", k), t->c[k] = gt_cuda_act(m, "lstm.%d.c", k);
        t->gates[k] = gt_cuda_act(m, "lstm.%d.gates", k);
    }
    t->head_w = gt_cuda_pg(m, "head.weight"), t->head_b = gt_cuda_pg(m, "head.bias");
    t->dh[0] = gt_cuda_act(m, "grad.h0"), t->dh[1] = gt_cuda_act(m, "grad.h1"), t->dgates = gt_cuda_act(m, "grad.gates");
    if (gt_model_lstm_cudnn()) { // cuDNN's area: after the kernels' scratch in work
        const size_t ks = gt_lstm_cudnn_al(gt_lstm_cuda_scratch_size(c->max_batch, c->window, c->hidden));
        const int stack = gt_model_lstm_cudnn() == 2;
        t->lstm_dnn = gt_lstm_cudnn_create(c->max_batch, c->window, c->n_in, c->hidden, c->n_layers, c->tbptt, stack,
                                           m->prec, m->work + ks, m->n_work - ks, m->stream);
        t->lstm_dnn_stack = t->lstm_dnn && stack;
    }
}

static void lstm_free(gt_cuda_model *m) {
    lstm_tab *t = lstm_of(m);
    if (!t) return;
    gt_lstm_cudnn_free(t->lstm_dnn);
    free(t);
    m->kind_ctx = nullptr;
}

static const char *lstm_impl(const gt_cuda_model *m) {
    const lstm_tab *t = lstm_of(m);
    return t->lstm_dnn_stack ? "cudnn-stack" : t->lstm_dnn ? "cudnn" : "kernels";
}

// name, create, free, forward, backward, before_pass, lstm_impl, conv_impl
const gt_cuda_kind gt_cuda_kind_lstm = {"lstm", lstm_create, lstm_free, lstm_forward, lstm_backward, nullptr,
                                        lstm_impl, nullptr};

extern "C" void gt_cuda_model_lstm_loss_async(gt_cuda_model *m) {
    const gt_model_config *c = &m->plan.cfg;
    GT_CHECK(m->kind == &gt_cuda_kind_lstm, GT_EXIT_INTERNAL, "gt_cuda_model_lstm_loss on a non-lstm model");
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
