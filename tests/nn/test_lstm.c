/* tests/nn/test_lstm.c: LSTM layer vs a naive double reference; backward vs
 * finite differences for full BPTT; truncated BPTT (K < T) vs finite
 * differences of the explicitly built chunk-detached objective; K = T equals
 * full BPTT; the state is reset per call (two batches in a row give the same
 * results as each alone). All of it at 1 and at 2 threads of the engine's
 * pool (2: the recurrence in blocks of samples, 2 + 1 for B = 3, and the
 * weight gradients in slices of gate rows); 2 threads agree with 1 to float
 * rounding and give the same bits run to run. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "nn/ops/cpu/parallel.h"
#include "nn/ops/lstm.h"
#include "test.h"

typedef struct {
    int B, T, C, H;
} dims;

static double sig(double x) { return 1.0 / (1.0 + exp(-x)); }

/* Naive double LSTM. p = [w_ih (4H,C) | w_hh (4H,H) | b_ih (4H) | b_hh (4H)].
 * h, c (B,T,H) out. With K > 0 and (h0s, c0s) given (B,T,H: the state after
 * every step of an earlier run), the state entering each chunk start t = kK > 0
 * is taken from (h0s, c0s) at t-1 instead of the running state: the
 * chunk-detached forward whose parameter/input derivative TBPTT returns. */
static void ref_forward(double *h, double *c, const double *x, const double *p, dims d, int K,
                        const double *h0s, const double *c0s) {
    int B = d.B, T = d.T, C = d.C, H = d.H;
    const double *wih = p, *whh = p + 4 * H * C, *bih = whh + 4 * H * H, *bhh = bih + 4 * H;
    double *a = malloc(4 * H * sizeof(double));
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const double *hp = NULL, *cp = NULL;
            if (t > 0) {
                size_t rp = ((size_t)b * T + t - 1) * H;
                int detached = K > 0 && t % K == 0 && h0s;
                hp = detached ? h0s + rp : h + rp;
                cp = detached ? c0s + rp : c + rp;
            }
            const double *xt = x + ((size_t)b * T + t) * C;
            for (int k = 0; k < 4 * H; k++) {
                double s = bih[k] + bhh[k];
                for (int i = 0; i < C; i++) s += wih[k * C + i] * xt[i];
                if (hp)
                    for (int i = 0; i < H; i++) s += whh[k * H + i] * hp[i];
                a[k] = s;
            }
            double *ht = h + ((size_t)b * T + t) * H, *ct = c + ((size_t)b * T + t) * H;
            for (int j = 0; j < H; j++) {
                double ig = sig(a[j]), fg = sig(a[H + j]), gg = tanh(a[2 * H + j]), og = sig(a[3 * H + j]);
                ct[j] = fg * (cp ? cp[j] : 0.0) + ig * gg;
                ht[j] = og * tanh(ct[j]);
            }
        }
    free(a);
}

static double objective(const double *h, const float *r, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += h[i] * r[i];
    return s;
}

typedef struct {
    dims d;
    size_t n_x, n_h, n_p;
    float *x, *p, *h, *c, *gates, *dgates, *scratch, *dh, *dx, *dp;
    double *xd, *pd, *hd, *cd, *h0s, *c0s;
} fixture;

static void fixture_init(fixture *f, dims d, uint64_t seed) {
    f->d = d;
    f->n_x = (size_t)d.B * d.T * d.C;
    f->n_h = (size_t)d.B * d.T * d.H;
    f->n_p = (size_t)4 * d.H * (d.C + d.H + 2);
    f->x = malloc(f->n_x * sizeof(float)); // (B,T,C)
    f->p = malloc(f->n_p * sizeof(float)); // w_ih | w_hh | b_ih | b_hh
    f->h = malloc(f->n_h * sizeof(float)); // (B,T,H)
    f->c = malloc(f->n_h * sizeof(float)); // (B,T,H)
    f->gates = malloc(4 * f->n_h * sizeof(float)); // (B,T,4H)
    f->dgates = malloc(4 * f->n_h * sizeof(float)); // (B,T,4H)
    f->scratch = malloc(gt_lstm_scratch_elems(d.B, d.H) * sizeof(float));
    f->dh = malloc(f->n_h * sizeof(float)); // (B,T,H)
    f->dx = malloc(f->n_x * sizeof(float)); // (B,T,C)
    f->dp = malloc(f->n_p * sizeof(float));
    f->xd = malloc(f->n_x * sizeof(double));
    f->pd = malloc(f->n_p * sizeof(double));
    f->hd = malloc(f->n_h * sizeof(double));
    f->cd = malloc(f->n_h * sizeof(double));
    f->h0s = malloc(f->n_h * sizeof(double));
    f->c0s = malloc(f->n_h * sizeof(double));
    gt_rng r;
    gt_rng_init(&r, seed, gt_stream(GT_STREAM_TEST, 2));
    float ws = 1.0f / sqrtf((float)d.H);
    for (size_t i = 0; i < f->n_x; i++) f->x[i] = (float)gt_rng_normal(&r);
    for (size_t i = 0; i < f->n_p; i++) f->p[i] = ws * (2.0f * gt_rng_uniform(&r) - 1.0f) * 1.5f;
    for (size_t i = 0; i < f->n_h; i++) f->dh[i] = (float)gt_rng_normal(&r);
    for (size_t i = 0; i < f->n_x; i++) f->xd[i] = f->x[i];
    for (size_t i = 0; i < f->n_p; i++) f->pd[i] = f->p[i];
}

static void fixture_free(fixture *f) {
    free(f->x);
    free(f->p);
    free(f->h);
    free(f->c);
    free(f->gates);
    free(f->dgates);
    free(f->scratch);
    free(f->dh);
    free(f->dx);
    free(f->dp);
    free(f->xd);
    free(f->pd);
    free(f->hd);
    free(f->cd);
    free(f->h0s);
    free(f->c0s);
}

static void run_fwd(fixture *f) {
    dims d = f->d;
    const float *wih = f->p, *whh = wih + 4 * d.H * d.C, *bih = whh + 4 * d.H * d.H, *bhh = bih + 4 * d.H;
    gt_lstm_forward(f->h, f->c, f->gates, f->x, wih, whh, bih, bhh, d.B, d.T, d.C, d.H);
}

static void run_bwd(fixture *f, int K) {
    dims d = f->d;
    const float *wih = f->p, *whh = wih + 4 * d.H * d.C;
    float *dwih = f->dp, *dwhh = dwih + 4 * d.H * d.C, *dbih = dwhh + 4 * d.H * d.H, *dbhh = dbih + 4 * d.H;
    memset(f->dp, 0, f->n_p * sizeof(float));
    gt_lstm_backward(f->dx, dwih, dwhh, dbih, dbhh, f->dgates, f->scratch, f->dh, f->x, wih, whh, f->h, f->c,
                     f->gates, d.B, d.T, d.C, d.H, K);
}

/* dJ/d(p, x) by central differences of the (chunk-detached for K > 0) double
 * reference, compared with the op's gradient. */
static void check_grad_fd(fixture *f, int K, const char *what) {
    dims d = f->d;
    const double eps = 1e-5;
    const double *h0s = NULL, *c0s = NULL;
    if (K > 0) { // the carried chunk states: values of the unperturbed run
        ref_forward(f->h0s, f->c0s, f->xd, f->pd, d, 0, NULL, NULL);
        h0s = f->h0s;
        c0s = f->c0s;
    }
    double maxerr = 0;
    for (int which = 0; which < 2; which++) {
        double *v = which ? f->xd : f->pd;
        const float *g = which ? f->dx : f->dp;
        size_t n = which ? f->n_x : f->n_p;
        for (size_t i = 0; i < n; i++) {
            double save = v[i];
            v[i] = save + eps;
            ref_forward(f->hd, f->cd, f->xd, f->pd, d, K, h0s, c0s);
            double jp = objective(f->hd, f->dh, f->n_h);
            v[i] = save - eps;
            ref_forward(f->hd, f->cd, f->xd, f->pd, d, K, h0s, c0s);
            double jm = objective(f->hd, f->dh, f->n_h);
            v[i] = save;
            double fd = (jp - jm) / (2 * eps);
            double e = fabs(g[i] - fd) / (1e-2 + fabs(fd));
            if (e > maxerr) maxerr = e;
            TEST_CLOSE(g[i], fd, 1e-4, 1e-3);
        }
    }
    printf("lstm %s (K=%d): max rel err vs FD %.3g over %zu params + %zu inputs\n", what, K, maxerr, f->n_p,
           f->n_x);
}

/* Every check at the calling thread count; f's gradients (full BPTT, K = 4)
 * and h are left in *out for the comparison across thread counts. */
static void check_all(int threads, fixture *out) {
    openblas_set_num_threads(threads);
    TEST_EQ_INT(gt_par_threads(), threads);
    printf("-- %d thread(s)\n", threads);
    dims d = {3, 11, 5, 6};
    fixture f;
    fixture_init(&f, d, 7);

    // forward vs naive reference
    run_fwd(&f);
    ref_forward(f.hd, f.cd, f.xd, f.pd, d, 0, NULL, NULL);
    double maxerr = 0;
    for (size_t i = 0; i < f.n_h; i++) {
        TEST_CLOSE(f.h[i], f.hd[i], 1e-5, 1e-4);
        TEST_CLOSE(f.c[i], f.cd[i], 1e-5, 1e-4);
        if (fabs(f.h[i] - f.hd[i]) > maxerr) maxerr = fabs(f.h[i] - f.hd[i]);
    }
    printf("lstm forward: max |h err| %.3g\n", maxerr);

    // full BPTT vs finite differences
    run_bwd(&f, 0);
    check_grad_fd(&f, 0, "full BPTT");
    float *full_dp = malloc(f.n_p * sizeof(float)), *full_dx = malloc(f.n_x * sizeof(float));
    memcpy(full_dp, f.dp, f.n_p * sizeof(float));
    memcpy(full_dx, f.dx, f.n_x * sizeof(float));

    // K = T (and K > T) is exactly full BPTT
    run_bwd(&f, d.T);
    TEST_CHECK(memcmp(full_dp, f.dp, f.n_p * sizeof(float)) == 0);
    TEST_CHECK(memcmp(full_dx, f.dx, f.n_x * sizeof(float)) == 0);
    run_bwd(&f, d.T + 3);
    TEST_CHECK(memcmp(full_dp, f.dp, f.n_p * sizeof(float)) == 0);

    // truncated BPTT vs the chunk-detached objective; and it really differs from full BPTT
    int ks[] = {1, 3, 4, 5};
    for (int k = 0; k < 4; k++) {
        run_bwd(&f, ks[k]);
        check_grad_fd(&f, ks[k], "TBPTT");
        double diff = 0;
        for (size_t i = 0; i < f.n_p; i++) diff += fabs(f.dp[i] - full_dp[i]);
        TEST_CHECK(diff > 1e-3);
    }

    // state reset: batch 2 after batch 1 == batch 2 alone (fresh fixture)
    {
        fixture f1, f2;
        fixture_init(&f1, d, 7);
        fixture_init(&f2, d, 7);
        for (size_t i = 0; i < f1.n_x; i++) f1.x[i] = -0.5f * f1.x[i] + 0.3f; // a different batch
        run_fwd(&f1);
        run_bwd(&f1, 4);
        memcpy(f1.x, f2.x, f1.n_x * sizeof(float)); // now the same batch as f2, same buffers reused
        run_fwd(&f1);
        run_bwd(&f1, 4);
        run_fwd(&f2);
        run_bwd(&f2, 4);
        TEST_CHECK(memcmp(f1.h, f2.h, f1.n_h * sizeof(float)) == 0);
        TEST_CHECK(memcmp(f1.dp, f2.dp, f1.n_p * sizeof(float)) == 0);
        TEST_CHECK(memcmp(f1.dx, f2.dx, f1.n_x * sizeof(float)) == 0);
        fixture_free(&f1);
        fixture_free(&f2);
    }
    free(full_dp);
    free(full_dx);
    run_fwd(&f);
    run_bwd(&f, 4);
    *out = f;
}

int main(void) {
    openblas_set_num_threads(2); /* before the pool's first query: it plans for 2 threads */
    TEST_EQ_INT(gt_par_max_threads(), 2);
    fixture one, two, again;
    check_all(1, &one);
    check_all(2, &two);
    // 2 threads: the same maths as 1 (other products' summation order at most), the same bits run to run
    for (size_t i = 0; i < one.n_h; i++) TEST_CLOSE(two.h[i], one.h[i], 1e-6, 1e-5);
    for (size_t i = 0; i < one.n_p; i++) TEST_CLOSE(two.dp[i], one.dp[i], 1e-5, 1e-4);
    for (size_t i = 0; i < one.n_x; i++) TEST_CLOSE(two.dx[i], one.dx[i], 1e-5, 1e-4);
    fixture_init(&again, two.d, 7);
    run_fwd(&again);
    run_bwd(&again, 4);
    TEST_CHECK(memcmp(again.h, two.h, two.n_h * sizeof(float)) == 0);
    TEST_CHECK(memcmp(again.dp, two.dp, two.n_p * sizeof(float)) == 0);
    TEST_CHECK(memcmp(again.dx, two.dx, two.n_x * sizeof(float)) == 0);
    fixture_free(&one);
    fixture_free(&two);
    fixture_free(&again);
    TEST_DONE();
}
