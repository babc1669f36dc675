/* tests/nn/test_lstm_model.c: the stacked-LSTM next-step predictor through
 * the generic model API: full backward vs finite differences of an
 * independent double reference, for full BPTT and for truncated BPTT (against
 * the explicitly chunk-detached objective), K = T equals full BPTT, the
 * next-step loss helpers agree with gt_model_loss, per-step errors, state
 * reset between batches, and a short training run on a learnable toy problem. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "nn/model.h"
#include "nn/model_lstm.h"
#include "nn_test_util.h"
#include "test.h"

static gt_model_config cfg_make(int T, int C, int H, int NL, int K, int B) {
    gt_model_config c;
    gt_model_config_default(&c, GT_MODEL_LSTM);
    c.window = T;
    c.n_in = C;
    c.n_out = C;
    c.hidden = H;
    c.n_layers = NL;
    c.tbptt = K;
    c.max_batch = B;
    return c;
}

/* ---------------------------------------------- double reference model --
 * Independent of the C model: parameters fetched by PyTorch name. With K > 0
 * and saved (hs, cs) (per layer, (B,T,H): states of an earlier full run), the
 * state entering each chunk start t = kK > 0 is the saved value, i.e. a
 * constant: the chunk-detached objective. Returns the next-step MSE. */
typedef struct {
    const gt_model *m;
    const double *p; /* (n_params) parameters in double, same layout */
    const double *x; /* (B,T,C) */
    int B, T, C, H, NL, K;
    double *hs[4], *cs[4]; /* saved states (B,T,H) per layer, or NULL */
} ref_ctx;

static const double *pt(const ref_ctx *r, const char *fmt, int k) {
    char name[64];
    snprintf(name, sizeof name, fmt, k);
    int i = gt_model_find_tensor(r->m, name);
    TEST_REQUIRE(i >= 0);
    return r->p + gt_model_tensor(r->m, i)->offset;
}

static double sigd(double v) { return 1.0 / (1.0 + exp(-v)); }

static double ref_loss(const ref_ctx *r, int record) {
    const int B = r->B, T = r->T, C = r->C, H = r->H;
    double *in = malloc((size_t)B * T * (C > H ? C : H) * sizeof(double));
    double *h = malloc((size_t)B * T * H * sizeof(double)), *c = malloc((size_t)B * T * H * sizeof(double));
    double *a = malloc(4 * H * sizeof(double));
    memcpy(in, r->x, (size_t)B * T * C * sizeof(double));
    int n_in = C;
    for (int k = 0; k < r->NL; k++) {
        const double *wih = pt(r, "lstm.weight_ih_l%d", k), *whh = pt(r, "lstm.weight_hh_l%d", k);
        const double *bih = pt(r, "lstm.bias_ih_l%d", k), *bhh = pt(r, "lstm.bias_hh_l%d", k);
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                const double *hp = NULL, *cp = NULL;
                if (t > 0) {
                    size_t o = ((size_t)b * T + t - 1) * H;
                    int det = r->K > 0 && t % r->K == 0 && !record;
                    hp = det ? r->hs[k] + o : h + o;
                    cp = det ? r->cs[k] + o : c + o;
                }
                const double *xt = in + ((size_t)b * T + t) * n_in;
                for (int j = 0; j < 4 * H; j++) {
                    double s = bih[j] + bhh[j];
                    for (int i = 0; i < n_in; i++) s += wih[j * n_in + i] * xt[i];
                    if (hp)
                        for (int i = 0; i < H; i++) s += whh[j * H + i] * hp[i];
                    a[j] = s;
                }
                double *ht = h + ((size_t)b * T + t) * H, *ct = c + ((size_t)b * T + t) * H;
                for (int j = 0; j < H; j++) {
                    ct[j] = sigd(a[H + j]) * (cp ? cp[j] : 0.0) + sigd(a[j]) * tanh(a[2 * H + j]);
                    ht[j] = sigd(a[3 * H + j]) * tanh(ct[j]);
                }
            }
        if (record) {
            memcpy(r->hs[k], h, (size_t)B * T * H * sizeof(double));
            memcpy(r->cs[k], c, (size_t)B * T * H * sizeof(double));
        }
        memcpy(in, h, (size_t)B * T * H * sizeof(double));
        n_in = H;
    }
    const double *hw = pt(r, "head.weight", 0), *hb = pt(r, "head.bias", 0);
    double loss = 0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t + 1 < T; t++)
            for (int o = 0; o < C; o++) {
                double s = hb[o];
                for (int i = 0; i < H; i++) s += hw[o * H + i] * in[((size_t)b * T + t) * H + i];
                double e = s - r->x[((size_t)b * T + t + 1) * C + o];
                loss += e * e;
            }
    free(in);
    free(h);
    free(c);
    free(a);
    return loss / ((double)B * (T - 1) * C);
}

/* model gradient (tbptt K) vs central differences of the reference */
static void check_model_grad(int K) {
    const int B = 2, T = 9, C = 3, H = 5, NL = 2;
    gt_model_config cfg = cfg_make(T, C, H, NL, K, B);
    gt_model *m = gt_model_create(&cfg);
    gt_model_init(m, 11);
    size_t nx = (size_t)B * T * C;
    float *x = malloc(nx * sizeof(float));
    nt_fill(x, nx, 1.5f, 21);
    gt_model_zero_grad(m);
    gt_model_forward(m, x, B);
    float loss = gt_model_lstm_loss(m);
    gt_model_backward(m, 1.0f);

    double *p = malloc(m->n_params * sizeof(double)), *xd = malloc(nx * sizeof(double));
    for (size_t i = 0; i < m->n_params; i++) p[i] = m->params[i];
    for (size_t i = 0; i < nx; i++) xd[i] = x[i];
    ref_ctx r = {m, p, xd, B, T, C, H, NL, K, {0}, {0}};
    for (int k = 0; k < NL; k++) {
        r.hs[k] = malloc((size_t)B * T * H * sizeof(double));
        r.cs[k] = malloc((size_t)B * T * H * sizeof(double));
    }
    double l0 = ref_loss(&r, 1); // full run, records the carried states
    TEST_CLOSE(loss, l0, 1e-6, 1e-5);
    double maxrel = 0;
    for (size_t i = 0; i < m->n_params; i++) {
        const double h = 1e-5, save = p[i];
        p[i] = save + h;
        double lp = ref_loss(&r, 0);
        p[i] = save - h;
        double lm = ref_loss(&r, 0);
        p[i] = save;
        double fd = (lp - lm) / (2 * h);
        double rel = fabs(m->grads[i] - fd) / (1e-4 + fabs(fd));
        if (rel > maxrel) maxrel = rel;
        TEST_CLOSE(m->grads[i], fd, 1e-6, 1e-3);
    }
    printf("lstm model K=%d: %zu params vs FD of the %s objective, max rel err %.3g\n", K, m->n_params,
           K > 0 && K < T ? "chunk-detached" : "full", maxrel);
    for (int k = 0; k < NL; k++) {
        free(r.hs[k]);
        free(r.cs[k]);
    }
    free(p);
    free(xd);
    free(x);
    gt_model_free(m);
}

/* gradients of one step for (K, x) on a fresh model with seed 5 */
static float *grads_of(int K, const float *x, const float *x_before) {
    const int B = 3, T = 12, C = 4, H = 6;
    gt_model_config cfg = cfg_make(T, C, H, 2, K, B);
    gt_model *m = gt_model_create(&cfg);
    gt_model_init(m, 5);
    if (x_before) { // an earlier batch through the same model (forward + backward)
        gt_model_forward(m, x_before, B);
        gt_model_lstm_loss(m);
        gt_model_backward(m, 1.0f);
    }
    gt_model_zero_grad(m);
    gt_model_forward(m, x, B);
    gt_model_lstm_loss(m);
    gt_model_backward(m, 1.0f);
    float *g = malloc(m->n_params * sizeof(float));
    memcpy(g, m->grads, m->n_params * sizeof(float));
    gt_model_free(m);
    return g;
}

static void test_equivalences(void) {
    const int B = 3, T = 12, C = 4, H = 6;
    size_t nx = (size_t)B * T * C;
    float *x = malloc(nx * sizeof(float)), *x2 = malloc(nx * sizeof(float));
    nt_fill(x, nx, 1.0f, 31);
    nt_fill(x2, nx, 2.0f, 32);
    gt_model_config cfg = cfg_make(T, C, H, 2, 0, B);
    gt_model *tmp = gt_model_create(&cfg);
    size_t n_bytes = tmp->n_params * sizeof(float);
    gt_model_free(tmp);

    float *g_full = grads_of(0, x, NULL), *g_kt = grads_of(T, x, NULL), *g_k4 = grads_of(4, x, NULL);
    TEST_CHECK(memcmp(g_full, g_kt, n_bytes) == 0); // K = T is full BPTT, bit for bit
    TEST_CHECK(memcmp(g_full, g_k4, n_bytes) != 0); // K < T truncates
    // state reset: a batch after another batch == that batch alone
    float *g_after = grads_of(4, x, x2);
    TEST_CHECK(memcmp(g_k4, g_after, n_bytes) == 0);
    free(g_full);
    free(g_kt);
    free(g_k4);
    free(g_after);

    // loss helpers: gt_model_lstm_loss == gt_model_loss with next-step targets;
    // per-step errors average to the loss
    gt_model *m = gt_model_create(&cfg);
    gt_model_init(m, 5);
    gt_model_forward(m, x, B);
    float l1 = gt_model_lstm_loss(m);
    float *d1 = malloc((size_t)B * m->n_y * sizeof(float));
    memcpy(d1, m->dpred, (size_t)B * m->n_y * sizeof(float));
    float *y = malloc(nx * sizeof(float)), *mask = malloc(nx * sizeof(float));
    gt_model_lstm_targets(y, mask, x, B, T, C);
    { // the kind's table gives the same targets (what a task asks: gt_model_next_step_targets); s2p kinds have none
        TEST_CHECK(gt_model_kind_next_step(GT_MODEL_LSTM));
        TEST_CHECK(!gt_model_kind_next_step(GT_MODEL_S2P_CNN) && !gt_model_kind_next_step(GT_MODEL_S2P_TF));
        float *y2 = malloc(nx * sizeof(float)), *mask2 = malloc(nx * sizeof(float));
        memset(y2, 0xff, nx * sizeof(float));
        memset(mask2, 0xff, nx * sizeof(float));
        gt_model_next_step_targets(GT_MODEL_LSTM, y2, mask2, x, B, T, C);
        TEST_CHECK(memcmp(y, y2, nx * sizeof(float)) == 0 && memcmp(mask, mask2, nx * sizeof(float)) == 0);
        TEST_CHECK(y2[(size_t)(T - 2) * C] == x[(size_t)(T - 1) * C] && mask2[(size_t)(T - 1) * C] == 0.0f);
        free(y2);
        free(mask2);
    }
    float l2 = gt_model_loss(m, y, mask);
    TEST_CLOSE(l1, l2, 1e-7, 1e-6);
    for (size_t i = 0; i < (size_t)B * m->n_y; i++) TEST_CLOSE(d1[i], m->dpred[i], 1e-9, 1e-5);
    float *err = malloc((size_t)B * (T - 1) * sizeof(float));
    gt_model_lstm_step_errors(m, err);
    double mean = 0;
    for (int i = 0; i < B * (T - 1); i++) mean += err[i] / (double)(B * (T - 1));
    TEST_CLOSE(mean, l1, 1e-7, 1e-5);
    { // err[b=1, t=5] by hand
        double e = 0;
        for (int c = 0; c < C; c++) {
            double d = m->pred[((size_t)1 * T + 5) * C + c] - x[((size_t)1 * T + 6) * C + c];
            e += d * d / C;
        }
        TEST_CLOSE(err[1 * (T - 1) + 5], e, 1e-7, 1e-5);
    }
    free(err);
    free(y);
    free(mask);
    free(d1);
    gt_model_free(m);
    free(x);
    free(x2);
}

/* toy: each channel a sinusoid with random phase and amplitude: the next
 * step is predictable from the past */
static void test_train_toy(int K) {
    const int B = 16, T = 32, C = 4, H = 32, steps = 200;
    gt_model_config cfg = cfg_make(T, C, H, 2, K, B);
    gt_model *m = gt_model_create(&cfg);
    gt_model_init(m, 3);
    gt_adamw_config opt = {0.9f, 0.999f, 1e-8f, 0.0f};
    float *x = malloc((size_t)B * T * C * sizeof(float));
    gt_rng r;
    gt_rng_init(&r, 17, gt_stream(GT_STREAM_TEST, 6));
    double first = 0, last = 0;
    for (int step = 0; step < steps; step++) {
        for (int b = 0; b < B; b++)
            for (int c = 0; c < C; c++) {
                double ph = 6.283 * gt_rng_uniform(&r), amp = 0.5 + gt_rng_uniform(&r);
                double w = 0.3 + 0.2 * c;
                for (int t = 0; t < T; t++) x[((size_t)b * T + t) * C + c] = (float)(amp * sin(w * t + ph));
            }
        gt_model_zero_grad(m);
        gt_model_forward(m, x, B);
        float loss = gt_model_lstm_loss(m);
        gt_model_backward(m, 1.0f);
        gt_clip_grad_norm(m->grads, m->n_params, 1.0f);
        gt_model_adamw_step(m, &opt, 1e-2f, step + 1, 0);
        if (step < 10) first += loss / 10;
        if (step >= steps - 10) last += loss / 10;
    }
    printf("lstm toy training (K=%d): loss %.4f -> %.4f\n", K, first, last);
    TEST_CHECK(last < 0.1 * first);
    free(x);
    gt_model_free(m);
}

int main(void) {
    TEST_REQUIRE(gt_model_kind_available(GT_MODEL_LSTM));
    check_model_grad(0);
    check_model_grad(4);
    check_model_grad(3);
    test_equivalences();
    test_train_toy(0);
    test_train_toy(8);
    TEST_DONE();
}
