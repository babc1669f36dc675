/* tests/nn/test_dense_ops.c: forward of every dense op vs a double reference,
 * backward vs central finite differences of L = sum(out * R) (R random).
 * linear/conv1d without activation are linear in each input and parameter,
 * so the central difference is exact up to float rounding: tight tolerances.
 * Fused ReLU is checked as an identity: backward(act=RELU, dout) must equal
 * backward(act=NONE, dout * (out > 0)) exactly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/ops/cpu/gemm.h"
#include "nn/ops/ops.h"
#include "nn_test_util.h"
#include "test.h"

static float *falloc(size_t n) { return (float *)calloc(n ? n : 1, sizeof(float)); }

/* ------------------------------------------------------------------ linear */
typedef struct {
    float *out, *inp, *w, *b, *R;
    int N, C, OC;
} lin_ctx;

static double lin_obj(void *p) {
    lin_ctx *c = (lin_ctx *)p;
    gt_linear_forward(c->out, c->inp, c->w, c->b, c->N, c->C, c->OC, GT_ACT_NONE);
    return nt_dot(c->out, c->R, (size_t)c->N * c->OC);
}

static void test_linear(void) {
    const int N = 5, C = 7, OC = 3;
    lin_ctx c = {falloc(N * OC), falloc(N * C), falloc(OC * C), falloc(OC), falloc(N * OC), N, C, OC};
    nt_fill(c.inp, N * C, 1.0f, 1);
    nt_fill(c.w, OC * C, 0.5f, 2);
    nt_fill(c.b, OC, 0.5f, 3);
    nt_fill(c.R, N * OC, 1.0f, 4);
    // forward vs double reference
    gt_linear_forward(c.out, c.inp, c.w, c.b, N, C, OC, GT_ACT_NONE);
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            double s = c.b[o];
            for (int i = 0; i < C; i++) s += (double)c.inp[n * C + i] * c.w[o * C + i];
            TEST_CLOSE(c.out[n * OC + o], s, 1e-6, 1e-6);
        }
    // backward: dout = R; grads accumulate onto a preset value 0.25
    float *dinp = falloc(N * C), *dw = falloc(OC * C), *db = falloc(OC);
    for (int i = 0; i < OC * C; i++) dw[i] = 0.25f;
    for (int i = 0; i < OC; i++) db[i] = 0.25f;
    for (int i = 0; i < N * C; i++) dinp[i] = 99.0f; // must be overwritten
    gt_linear_backward(dinp, dw, db, c.R, c.inp, c.w, NULL, NULL, N, C, OC, GT_ACT_NONE);
    for (int i = 0; i < N * C; i++) TEST_CLOSE(dinp[i], nt_fd(lin_obj, &c, c.inp, i, 1e-2f), 1e-4, 1e-4);
    for (int i = 0; i < OC * C; i++) TEST_CLOSE(dw[i] - 0.25f, nt_fd(lin_obj, &c, c.w, i, 1e-2f), 1e-4, 1e-4);
    for (int i = 0; i < OC; i++) TEST_CLOSE(db[i] - 0.25f, nt_fd(lin_obj, &c, c.b, i, 1e-2f), 1e-4, 1e-4);

    // fused ReLU: forward = relu(forward none); backward identity
    float *outr = falloc(N * OC), *scratch = falloc(N * OC), *dmask = falloc(N * OC);
    gt_linear_forward(c.out, c.inp, c.w, c.b, N, C, OC, GT_ACT_NONE);
    gt_linear_forward(outr, c.inp, c.w, c.b, N, C, OC, GT_ACT_RELU);
    int n_pos = 0;
    for (int i = 0; i < N * OC; i++) {
        TEST_CHECK(outr[i] == (c.out[i] > 0.0f ? c.out[i] : 0.0f));
        dmask[i] = outr[i] > 0.0f ? c.R[i] : 0.0f;
        n_pos += outr[i] > 0.0f;
    }
    TEST_CHECK(n_pos > 0 && n_pos < N * OC); // both branches exercised
    float *dinp2 = falloc(N * C), *dw2 = falloc(OC * C), *db2 = falloc(OC);
    memset(dw, 0, OC * C * sizeof(float));
    memset(db, 0, OC * sizeof(float));
    gt_linear_backward(dinp, dw, db, c.R, c.inp, c.w, outr, scratch, N, C, OC, GT_ACT_RELU);
    gt_linear_backward(dinp2, dw2, db2, dmask, c.inp, c.w, NULL, NULL, N, C, OC, GT_ACT_NONE);
    TEST_CHECK(memcmp(dinp, dinp2, N * C * sizeof(float)) == 0);
    TEST_CHECK(memcmp(dw, dw2, OC * C * sizeof(float)) == 0);
    TEST_CHECK(memcmp(db, db2, OC * sizeof(float)) == 0);
    free(c.out); free(c.inp); free(c.w); free(c.b); free(c.R);
    free(dinp); free(dw); free(db); free(outr); free(scratch); free(dmask); free(dinp2); free(dw2); free(db2);
}

/* A layer whose three products (2 MFLOP each) run on oneDNN's f32 matmul
 * where nn/ops/cpu/gemm.c's rule sends them there (AVX-512, AVX2: the weight
 * gradient's K = N = 64): forward against double, backward against central
 * differences at every 29th element (the objective is linear: a large step). */
static void test_linear_large(void) {
    const int N = 64, C = 136, OC = 120;
    lin_ctx c = {falloc(N * OC), falloc(N * C), falloc(OC * C), falloc(OC), falloc(N * OC), N, C, OC};
    nt_fill(c.inp, N * C, 1.0f, 31);
    nt_fill(c.w, OC * C, 0.5f, 32);
    nt_fill(c.b, OC, 0.5f, 33);
    nt_fill(c.R, N * OC, 1.0f, 34);
    gt_linear_forward(c.out, c.inp, c.w, c.b, N, C, OC, GT_ACT_NONE);
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            double s = c.b[o];
            for (int i = 0; i < C; i++) s += (double)c.inp[n * C + i] * c.w[o * C + i];
            TEST_CLOSE(c.out[n * OC + o], s, 1e-5, 1e-5);
        }
    float *dinp = falloc(N * C), *dw = falloc(OC * C), *db = falloc(OC);
    for (int i = 0; i < OC * C; i++) dw[i] = 0.25f;
    gt_linear_backward(dinp, dw, db, c.R, c.inp, c.w, NULL, NULL, N, C, OC, GT_ACT_NONE);
    for (int i = 0; i < N * C; i += 29) TEST_CLOSE(dinp[i], nt_fd(lin_obj, &c, c.inp, i, 0.25f), 2e-4, 1e-4);
    for (int i = 0; i < OC * C; i += 29) TEST_CLOSE(dw[i] - 0.25f, nt_fd(lin_obj, &c, c.w, i, 0.25f), 2e-4, 1e-4);
    for (int i = 0; i < OC; i += 7) TEST_CLOSE(db[i], nt_fd(lin_obj, &c, c.b, i, 0.25f), 2e-4, 1e-4);
#ifdef GT_HAVE_DNNL
    const char *isa = gt_cpu_isa_name();
    printf("linear %dx%dx%d on %s: %s\n", N, OC, C, isa, gt_gemm_impl(GT_GEMM_LINEAR));
    if (!strncmp(isa, "avx2", 4) || !strncmp(isa, "avx512", 6))
        TEST_CHECK(strstr(gt_gemm_impl(GT_GEMM_LINEAR), "onednn") != NULL);
#endif
    free(c.out); free(c.inp); free(c.w); free(c.b); free(c.R); free(dinp); free(dw); free(db);
}

/* ------------------------------------------------------------------ conv1d */
typedef struct {
    float *out, *scratch, *inp, *w, *b, *R;
    int B, IC, OC, W, K;
} conv_ctx;

static double conv_obj(void *p) {
    conv_ctx *c = (conv_ctx *)p;
    gt_conv1d_forward(c->out, c->scratch, c->inp, c->w, c->b, c->B, c->IC, c->OC, c->W, c->K, GT_ACT_NONE);
    return nt_dot(c->out, c->R, (size_t)c->B * c->OC * c->W);
}

/* fd_step: central differences at every fd_step-th element (1: all), step h */
static void test_conv1d_case_fd(int B, int IC, int OC, int W, int K, size_t fd_step, float h) {
    const size_t n_in = (size_t)B * IC * W, n_out = (size_t)B * OC * W, n_w = (size_t)OC * IC * K;
    conv_ctx c = {falloc(n_out), falloc(gt_conv1d_scratch_elems(IC, OC, W, K)), falloc(n_in), falloc(n_w),
                  falloc(OC), falloc(n_out), B, IC, OC, W, K};
    nt_fill(c.inp, n_in, 1.0f, 11);
    nt_fill(c.w, n_w, 0.5f, 12);
    nt_fill(c.b, OC, 0.5f, 13);
    nt_fill(c.R, n_out, 1.0f, 14);
    // forward vs direct double convolution with PyTorch 'same' padding:
    // left (K-1)/2, right K/2  =>  out[t] = sum_k w[k] * in[t + k - (K-1)/2]
    gt_conv1d_forward(c.out, c.scratch, c.inp, c.w, c.b, B, IC, OC, W, K, GT_ACT_NONE);
    const int pad_l = (K - 1) / 2;
    for (int b = 0; b < B; b++)
        for (int o = 0; o < OC; o++)
            for (int t = 0; t < W; t++) {
                double s = c.b[o];
                for (int i = 0; i < IC; i++)
                    for (int k = 0; k < K; k++) {
                        int u = t + k - pad_l;
                        if (u >= 0 && u < W) s += (double)c.w[(o * IC + i) * K + k] * c.inp[(b * IC + i) * W + u];
                    }
                TEST_CLOSE(c.out[(b * OC + o) * W + t], s, 1e-5, 1e-5);
            }
    // backward vs central differences
    float *dinp = falloc(n_in), *dw = falloc(n_w), *db = falloc(OC);
    for (size_t i = 0; i < n_w; i++) dw[i] = 0.25f;
    for (int i = 0; i < OC; i++) db[i] = 0.25f;
    for (size_t i = 0; i < n_in; i++) dinp[i] = 99.0f;
    gt_conv1d_backward(dinp, dw, db, c.R, c.inp, c.w, NULL, c.scratch, B, IC, OC, W, K, GT_ACT_NONE);
    for (size_t i = 0; i < n_in; i += fd_step) TEST_CLOSE(dinp[i], nt_fd(conv_obj, &c, c.inp, i, h), 2e-4, 1e-4);
    for (size_t i = 0; i < n_w; i += fd_step) TEST_CLOSE(dw[i] - 0.25f, nt_fd(conv_obj, &c, c.w, i, h), 2e-4, 1e-4);
    for (int i = 0; i < OC; i++) TEST_CLOSE(db[i] - 0.25f, nt_fd(conv_obj, &c, c.b, i, h), 2e-4, 1e-4);

    // fused ReLU
    float *outr = falloc(n_out), *dmask = falloc(n_out);
    gt_conv1d_forward(c.out, c.scratch, c.inp, c.w, c.b, B, IC, OC, W, K, GT_ACT_NONE);
    gt_conv1d_forward(outr, c.scratch, c.inp, c.w, c.b, B, IC, OC, W, K, GT_ACT_RELU);
    for (size_t i = 0; i < n_out; i++) {
        TEST_CHECK(outr[i] == (c.out[i] > 0.0f ? c.out[i] : 0.0f));
        dmask[i] = outr[i] > 0.0f ? c.R[i] : 0.0f;
    }
    float *dinp2 = falloc(n_in), *dw2 = falloc(n_w), *db2 = falloc(OC);
    memset(dw, 0, n_w * sizeof(float));
    memset(db, 0, OC * sizeof(float));
    gt_conv1d_backward(dinp, dw, db, c.R, c.inp, c.w, outr, c.scratch, B, IC, OC, W, K, GT_ACT_RELU);
    gt_conv1d_backward(dinp2, dw2, db2, dmask, c.inp, c.w, NULL, c.scratch, B, IC, OC, W, K, GT_ACT_NONE);
    TEST_CHECK(memcmp(dinp, dinp2, n_in * sizeof(float)) == 0);
    TEST_CHECK(memcmp(dw, dw2, n_w * sizeof(float)) == 0);
    TEST_CHECK(memcmp(db, db2, OC * sizeof(float)) == 0);
    // dinp = NULL (first layer) leaves the parameter gradients unchanged
    memset(dw2, 0, n_w * sizeof(float));
    memset(db2, 0, OC * sizeof(float));
    gt_conv1d_backward(NULL, dw2, db2, c.R, c.inp, c.w, outr, c.scratch, B, IC, OC, W, K, GT_ACT_RELU);
    TEST_CHECK(memcmp(dw, dw2, n_w * sizeof(float)) == 0);
    TEST_CHECK(memcmp(db, db2, OC * sizeof(float)) == 0);
    free(c.out); free(c.scratch); free(c.inp); free(c.w); free(c.b); free(c.R);
    free(dinp); free(dw); free(db); free(outr); free(dmask); free(dinp2); free(dw2); free(db2);
}

static void test_conv1d_case(int B, int IC, int OC, int W, int K) { test_conv1d_case_fd(B, IC, OC, W, K, 1, 1e-2f); }

/* -------------------------------------------------------- relu, gelu */
typedef struct {
    float *out, *inp, *R;
    size_t n;
    int gelu;
} act_ctx;

static double act_obj(void *p) {
    act_ctx *c = (act_ctx *)p;
    if (c->gelu) gt_gelu_forward(c->out, c->inp, c->n);
    else gt_relu_forward(c->out, c->inp, c->n);
    return nt_dot(c->out, c->R, c->n);
}

static void test_activations(void) {
    const size_t n = 64;
    act_ctx c = {falloc(n), falloc(n), falloc(n), n, 0};
    nt_fill(c.inp, n, 4.0f, 21);
    nt_fill(c.R, n, 1.0f, 22);
    for (size_t i = 0; i < n; i++) // keep ReLU inputs away from the kink at 0
        if (fabsf(c.inp[i]) < 0.05f) c.inp[i] = 0.1f;
    float *dinp = falloc(n);
    for (int g = 0; g < 2; g++) {
        c.gelu = g;
        act_obj(&c);
        for (size_t i = 0; i < n; i++) {
            double x = c.inp[i];
            double ref = g ? 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))) : (x > 0 ? x : 0);
            TEST_CLOSE(c.out[i], ref, 1e-6, 1e-5);
        }
        if (g) gt_gelu_backward(dinp, c.R, c.inp, n);
        else gt_relu_backward(dinp, c.R, c.out, n);
        for (size_t i = 0; i < n; i++) TEST_CLOSE(dinp[i], nt_fd(act_obj, &c, c.inp, i, 1e-3f), 1e-3, 1e-3);
    }
    free(c.out); free(c.inp); free(c.R); free(dinp);
}

/* ---------------------------------------------------------------- layernorm */
typedef struct {
    float *out, *mean, *rstd, *inp, *w, *b, *R;
    int N, C;
} ln_ctx;

static double ln_obj(void *p) {
    ln_ctx *c = (ln_ctx *)p;
    gt_layernorm_forward(c->out, c->mean, c->rstd, c->inp, c->w, c->b, c->N, c->C, 1e-5f);
    return nt_dot(c->out, c->R, (size_t)c->N * c->C);
}

static void test_layernorm(void) {
    const int N = 4, C = 9;
    ln_ctx c = {falloc(N * C), falloc(N), falloc(N), falloc(N * C), falloc(C), falloc(C), falloc(N * C), N, C};
    nt_fill(c.inp, N * C, 2.0f, 31);
    nt_fill(c.w, C, 1.0f, 32);
    nt_fill(c.b, C, 1.0f, 33);
    nt_fill(c.R, N * C, 1.0f, 34);
    ln_obj(&c);
    for (int n = 0; n < N; n++) { // double reference, biased variance
        double m = 0, v = 0;
        for (int i = 0; i < C; i++) m += c.inp[n * C + i];
        m /= C;
        for (int i = 0; i < C; i++) v += (c.inp[n * C + i] - m) * (c.inp[n * C + i] - m);
        v /= C;
        for (int i = 0; i < C; i++)
            TEST_CLOSE(c.out[n * C + i], (c.inp[n * C + i] - m) / sqrt(v + 1e-5) * c.w[i] + c.b[i], 1e-5, 1e-5);
    }
    float *dinp = falloc(N * C), *dw = falloc(C), *db = falloc(C);
    gt_layernorm_backward(dinp, dw, db, c.R, c.inp, c.w, c.mean, c.rstd, N, C);
    // nonlinear: float rounding / 2h dominates, hence the looser tolerance
    for (int i = 0; i < N * C; i++) TEST_CLOSE(dinp[i], nt_fd(ln_obj, &c, c.inp, i, 1e-2f), 2e-3, 5e-3);
    for (int i = 0; i < C; i++) TEST_CLOSE(dw[i], nt_fd(ln_obj, &c, c.w, i, 1e-2f), 1e-4, 1e-4);
    for (int i = 0; i < C; i++) TEST_CLOSE(db[i], nt_fd(ln_obj, &c, c.b, i, 1e-2f), 1e-4, 1e-4);
    free(c.out); free(c.mean); free(c.rstd); free(c.inp); free(c.w); free(c.b); free(c.R);
    free(dinp); free(dw); free(db);
}

/* -------------------------------------------------------------- masked MSE */
typedef struct {
    float *pred, *y, *mask;
    size_t n;
} mse_ctx;

static double mse_obj(void *p) {
    mse_ctx *c = (mse_ctx *)p;
    return gt_mse_masked_forward(c->pred, c->y, c->mask, c->n);
}

static void test_mse(void) {
    // hand-computed: pred-y = {1,-2,3,0.5}, mask {1,0,1,1}: (1 + 9 + 0.25) / 3
    float pred[4] = {2, -1, 3, 1.5f}, y[4] = {1, 1, 0, 1}, mask[4] = {1, 0, 1, 1}, d[4];
    TEST_CLOSE(gt_mse_masked_forward(pred, y, mask, 4), 10.25 / 3.0, 1e-7, 1e-7);
    TEST_CLOSE(gt_mse_masked_forward(pred, y, NULL, 4), 14.25 / 4.0, 1e-7, 1e-7);
    gt_mse_masked_backward(d, pred, y, mask, 4, 0.5f);
    TEST_CLOSE(d[0], 0.5 * 2 * 1 / 3.0, 1e-7, 1e-6);
    TEST_CHECK(d[1] == 0.0f);
    TEST_CLOSE(d[2], 0.5 * 2 * 3 / 3.0, 1e-7, 1e-6);
    TEST_CLOSE(d[3], 0.5 * 2 * 0.5 / 3.0, 1e-7, 1e-6);
    float zero[4] = {0, 0, 0, 0}; // an all-masked batch gives 0, not NaN
    TEST_CHECK(gt_mse_masked_forward(pred, y, zero, 4) == 0.0f);
    // FD on a random case (quadratic: exact up to rounding)
    const size_t n = 20;
    mse_ctx c = {falloc(n), falloc(n), falloc(n), n};
    nt_fill(c.pred, n, 1.0f, 41);
    nt_fill(c.y, n, 1.0f, 42);
    for (size_t i = 0; i < n; i++) c.mask[i] = (float)(i % 3 != 0);
    float *dp = falloc(n);
    gt_mse_masked_backward(dp, c.pred, c.y, c.mask, n, 1.0f);
    for (size_t i = 0; i < n; i++) TEST_CLOSE(dp[i], nt_fd(mse_obj, &c, c.pred, i, 1e-2f), 1e-5, 1e-4);
    free(c.pred); free(c.y); free(c.mask); free(dp);
}

typedef struct {
    mse_ctx c;
    gt_loss_kind kind;
} loss_ctx;

static double loss_obj(void *p) {
    loss_ctx *c = (loss_ctx *)p;
    return gt_loss_masked_forward(c->kind, c->c.pred, c->c.y, c->c.mask, c->c.n);
}

static void test_l1(void) {
    // hand-computed: pred-y = {1,-2,3,-0.5,0}, mask {1,0,1,1,1}: (1 + 3 + 0.5 + 0) / 4
    float pred[5] = {2, -1, 3, 0.5f, 7}, y[5] = {1, 1, 0, 1, 7}, mask[5] = {1, 0, 1, 1, 1}, d[5];
    TEST_CLOSE(gt_loss_masked_forward(GT_LOSS_L1, pred, y, mask, 5), 4.5 / 4.0, 1e-7, 1e-7);
    TEST_CLOSE(gt_loss_masked_forward(GT_LOSS_L1, pred, y, NULL, 5), 6.5 / 5.0, 1e-7, 1e-7);
    gt_loss_masked_backward(GT_LOSS_L1, d, pred, y, mask, 5, 0.5f);
    TEST_CLOSE(d[0], 0.5 / 4.0, 1e-7, 1e-6);
    TEST_CHECK(d[1] == 0.0f);  // masked
    TEST_CLOSE(d[2], 0.5 / 4.0, 1e-7, 1e-6);
    TEST_CLOSE(d[3], -0.5 / 4.0, 1e-7, 1e-6);
    TEST_CHECK(d[4] == 0.0f);  // d = 0: subgradient 0, as torch's abs
    float zero[5] = {0};
    TEST_CHECK(gt_loss_masked_forward(GT_LOSS_L1, pred, y, zero, 5) == 0.0f);
    // the MSE kind is the MSE functions, bit for bit
    float dm[5], dk[5];
    gt_mse_masked_backward(dm, pred, y, mask, 5, 0.37f);
    gt_loss_masked_backward(GT_LOSS_MSE, dk, pred, y, mask, 5, 0.37f);
    TEST_CHECK(memcmp(dm, dk, sizeof dm) == 0);
    // names round-trip; unknown names are refused
    TEST_CHECK(gt_loss_kind_parse("l1") == GT_LOSS_L1 && gt_loss_kind_parse("mse") == GT_LOSS_MSE);
    TEST_CHECK(gt_loss_kind_parse("huber") == -1 && gt_loss_kind_parse(NULL) == -1);
    TEST_CHECK(strcmp(gt_loss_kind_name(GT_LOSS_L1), "l1") == 0);
    // FD away from the kinks (|pred - y| >= 0.05 > step): piecewise linear, exact up to rounding
    const size_t n = 20;
    loss_ctx c = {{falloc(n), falloc(n), falloc(n), n}, GT_LOSS_L1};
    nt_fill(c.c.pred, n, 1.0f, 43);
    nt_fill(c.c.y, n, 1.0f, 44);
    for (size_t i = 0; i < n; i++) {
        c.c.mask[i] = (float)(i % 4 != 1);
        float dd = c.c.pred[i] - c.c.y[i];
        if (fabsf(dd) < 0.05f) c.c.pred[i] = c.c.y[i] + (dd < 0 ? -0.05f : 0.05f);
    }
    float *dp = falloc(n);
    gt_loss_masked_backward(GT_LOSS_L1, dp, c.c.pred, c.c.y, c.c.mask, n, 1.0f);
    for (size_t i = 0; i < n; i++) TEST_CLOSE(dp[i], nt_fd(loss_obj, &c, c.c.pred, i, 1e-2f), 1e-5, 1e-4);
    free(c.c.pred); free(c.c.y); free(c.c.mask); free(dp);
}

typedef struct {
    float *pred, *y, *mask, *thr;
    size_t n;
    int A;
} gated_ctx;

static double gated_obj(void *p) {
    gated_ctx *c = (gated_ctx *)p;
    return gt_gated_loss_sum(NULL, c->pred, c->y, c->mask, c->thr, c->n, c->A, 0.0f);
}

static void test_gated(void) {
    // hand-computed, n = 1, A = 2: appliance 0 on (y 2 > thr 0.5): (r - y)^2 + bce(s, 1);
    // appliance 1 off (y -0.3 <= thr 0): power not trained, bce(s, 0) only
    float pred[4] = {1.5f, 7.0f, 0.4f, -1.2f}, y[2] = {2.0f, -0.3f}, thr[2] = {0.5f, 0.0f}, d[4];
    double bce_on = log1p(exp(-0.4)), bce_off = log1p(exp(-1.2));  // softplus(-s) / softplus(s)
    TEST_CLOSE(gt_gated_loss_sum(d, pred, y, NULL, thr, 1, 2, 0.5f), 0.25 + bce_on + bce_off, 1e-12, 1e-7);
    TEST_CLOSE(d[0], 0.5 * 2 * (1.5 - 2.0), 1e-7, 1e-6);
    TEST_CHECK(d[1] == 0.0f);  // off: the power output gets no gradient
    TEST_CLOSE(d[2], 0.5 * (1 / (1 + exp(-0.4)) - 1), 1e-7, 1e-6);
    TEST_CLOSE(d[3], 0.5 * (1 / (1 + exp(1.2))), 1e-7, 1e-6);
    float mask[2] = {0, 1};
    TEST_CLOSE(gt_gated_loss_sum(d, pred, y, mask, thr, 1, 2, 1.0f), bce_off, 1e-12, 1e-7);
    TEST_CHECK(d[0] == 0.0f && d[2] == 0.0f);
    // large logits stay finite (the stable form)
    float big[4] = {0, 0, 80.0f, -80.0f};
    TEST_CLOSE(gt_gated_loss_sum(NULL, big, y, NULL, thr, 1, 2, 0.0f), 4.0 + 2 * log1p(exp(-80.0)), 1e-9, 1e-7);
    // FD on a random case: n = 5 samples, A = 3, a third of the targets masked
    const size_t n = 5;
    const int A = 3;
    gated_ctx c = {falloc(n * 2 * A), falloc(n * A), falloc(n * A), falloc(A), n, A};
    nt_fill(c.pred, n * 2 * A, 1.0f, 45);
    nt_fill(c.y, n * A, 1.0f, 46);
    for (size_t i = 0; i < n * A; i++) c.mask[i] = (float)(i % 3 != 1);
    c.thr[0] = -0.2f, c.thr[1] = 0.0f, c.thr[2] = 0.3f;
    float *dp = falloc(n * 2 * A);
    gt_gated_loss_sum(dp, c.pred, c.y, c.mask, c.thr, n, A, 1.0f);
    for (size_t i = 0; i < n * 2 * A; i++) TEST_CLOSE(dp[i], nt_fd(gated_obj, &c, c.pred, i, 1e-2f), 2e-4, 2e-3);
    free(c.pred); free(c.y); free(c.mask); free(c.thr); free(dp);
}

int main(void) {
    test_linear();
    test_linear_large();
    test_conv1d_case(2, 3, 4, 11, 5);  // odd K
    test_conv1d_case(3, 2, 3, 9, 4);   // even K: left 1, right 2
    test_conv1d_case(5, 1, 3, 7, 10);  // IC = 1 (first layer), K > W, B not a multiple of the chunk
    test_conv1d_case(1, 2, 2, 6, 1);   // K = 1
    test_conv1d_case(17, 16, 3, 9, 4); // 16 input channels: oneDNN's fp32 convolution where the ISA has it
                                       // (nn/ops/cpu/conv1d.c's rule); one chunk of 16 and one of 1
    test_conv1d_case_fd(4, 12, 12, 256, 7, 13, 0.25f); // im2col products of 2 MFLOP: oneDNN's matmul where
                                                       // nn/ops/cpu/gemm.c's rule sends them (AVX2, AVX-512)
    test_activations();
    test_layernorm();
    test_mse();
    test_l1();
    test_gated();
    TEST_DONE();
}
