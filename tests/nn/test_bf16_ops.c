/* tests/nn/test_bf16_ops.c: the CPU engine's bf16 products (nn/ops/cpu/gemm.h)
 * against fp32.
 *
 * gemm: every transpose pair, alpha, beta, padded leading dimensions. The
 * bf16 result must equal the fp32 product of the bf16-rounded inputs up to
 * fp32 accumulation error (checks rounding, strides, alpha and beta), and be
 * within the bf16 bound of the fp32 product. Call to call: bit-identical.
 * ops: linear, conv1d, lstm and attention forward and backward in bf16 vs the
 * same op in fp32, normwise relative error ||y_bf16 - y_fp32|| / ||y_fp32||
 * per output. conv1d twice: a thin layer (3 input channels: the im2col route)
 * and a layer of 24 input channels, batch 37 (two chunks of 16 and one of 5)
 * with ReLU, which nn/ops/cpu/conv1d.c's rule gives to oneDNN's convolution
 * where the ISA has the kernels (AMX/AVX512-BF16 in bf16, AVX-512 in fp32),
 * plus oneDNN's bf16 convolution called directly on every ISA that has a
 * real kernel for it (the AVX-512 emulation too); there also against a
 * direct double convolution, bit-identical call to call and at 1 thread
 * against the current thread count. Bounds: bf16 keeps 8 significant bits (unit roundoff
 * u = 2^-9 = 1.95e-3); a product of two rounded inputs is off by up to 2u and
 * random errors add up like a sum of squares, so a single GEMM lands near u
 * (measured 2.0e-3 .. 2.2e-3 on these shapes, on AMX, on oneDNN's AVX-512
 * emulation and on the AVX2 fallback alike). Ops that chain products (LSTM's
 * recurrence through T steps, attention's scores -> softmax -> values, the
 * backward passes) could compound it: the bounds are about 2x the measured
 * error for the single-product ops (gemm, linear, conv1d) and looser for the
 * chained ones (LSTM 2e-2, attention 1e-2 / 2e-2, measured 2.0-2.7e-3), to
 * leave room for longer chains. The backward passes are fed the fp32
 * forward results, so each is checked on its own, except the LSTM's: its bf16
 * route on bf16 units (oneDNN's LSTM primitive) keeps its own gate values,
 * so its backward follows its own bf16 forward. Attention runs on several
 * shapes (head sizes 16..80, padded lengths, the rows variant), which cover
 * its fused AMX route and the tile-product route. The finite-difference
 * tests of the backward passes stay in fp32 (test_dense_ops, test_lstm,
 * test_attention). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "nn/bench.h"
#include "nn/model.h"
#include "nn/ops/attention.h"
#include "nn/ops/cpu/conv1d_dnnl.h"
#include "nn/ops/cpu/gemm.h"
#include "nn/ops/cpu/parallel.h"
#include "nn/ops/lstm.h"
#include "nn/ops/ops.h"
#include "nn_test_util.h"
#include "test.h"

static float *falloc(size_t n) { return (float *)calloc(n ? n : 1, sizeof(float)); }

static double rel_err(const float *a, const float *ref, size_t n) {
    double d = 0, r = 0;
    for (size_t i = 0; i < n; i++) {
        d += ((double)a[i] - ref[i]) * ((double)a[i] - ref[i]);
        r += (double)ref[i] * ref[i];
    }
    return r > 0 ? sqrt(d / r) : sqrt(d);
}

#define CHECK_REL(name, a, ref, n, bound)                                                       \
    do {                                                                                        \
        double e_ = rel_err((a), (ref), (n));                                                   \
        printf("  %-28s rel err %.2e (bound %.1e)\n", (name), e_, (double)(bound));             \
        TEST_CHECK(e_ <= (bound) && e_ > 0);                                                    \
    } while (0)

/* ------------------------------------------------------------------- gemm */
/* M x N x K; above 32 MFLOP at 2 threads (OPENBLAS_NUM_THREADS=2) the product is
 * split over the engine's threads (rows when M >= N, else columns) */
static void test_gemm(const int M, const int N, const int K) {
    TEST_REQUIRE(gt_cpu_bf16_available());
    const int ta_[2] = {0, 1}, tb_[2] = {0, 1};
    const float alphas[2] = {1.0f, 0.125f}, betas[3] = {0.0f, 1.0f, 0.5f};
    double worst = 0, worst_round = 0;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            for (int s = 0; s < 2; s++)
                for (int u = 0; u < 3; u++) {
                    const int ta = ta_[i], tb = tb_[j];
                    const int ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
                    const int lda = ac + 3, ldb = bc + 5, ldc = N + 7;
                    float *A = falloc((size_t)ar * lda), *B = falloc((size_t)br * ldb);
                    float *Ar = falloc((size_t)ar * lda), *Br = falloc((size_t)br * ldb);
                    float *C0 = falloc((size_t)M * ldc), *C1 = falloc((size_t)M * ldc);
                    float *C2 = falloc((size_t)M * ldc), *C3 = falloc((size_t)M * ldc);
                    nt_fill(A, (size_t)ar * lda, 1.0f, 10);
                    nt_fill(B, (size_t)br * ldb, 1.0f, 11);
                    nt_fill(C0, (size_t)M * ldc, 1.0f, 12);
                    for (size_t q = 0; q < (size_t)ar * lda; q++) Ar[q] = gt_bf16_round(A[q]);
                    for (size_t q = 0; q < (size_t)br * ldb; q++) Br[q] = gt_bf16_round(B[q]);
                    memcpy(C1, C0, (size_t)M * ldc * 4);
                    memcpy(C2, C0, (size_t)M * ldc * 4);
                    memcpy(C3, C0, (size_t)M * ldc * 4);
                    const CBLAS_TRANSPOSE TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
                    gt_gemm_prec(GT_CPU_FP32, GT_GEMM_OTHER, TA, TB, M, N, K, alphas[s], A, lda, B, ldb,
                                 betas[u], C0, ldc); /* fp32 product */
                    gt_gemm_prec(GT_CPU_FP32, GT_GEMM_OTHER, TA, TB, M, N, K, alphas[s], Ar, lda, Br, ldb,
                                 betas[u], C1, ldc); /* fp32 product of the rounded inputs */
                    gt_gemm_prec(GT_CPU_BF16, GT_GEMM_OTHER, TA, TB, M, N, K, alphas[s], A, lda, B, ldb,
                                 betas[u], C2, ldc);
                    gt_gemm_prec(GT_CPU_BF16, GT_GEMM_OTHER, TA, TB, M, N, K, alphas[s], A, lda, B, ldb,
                                 betas[u], C3, ldc);
                    double e_round = 0, e_fp32 = 0, r = 0;
                    for (int m = 0; m < M; m++)
                        for (int n = 0; n < ldc; n++) {
                            size_t q = (size_t)m * ldc + n;
                            if (n >= N) { /* the padding of C is not touched */
                                TEST_CHECK(C2[q] == C0[q]);
                                continue;
                            }
                            e_round = fmax(e_round, fabs((double)C2[q] - C1[q]));
                            e_fp32 += ((double)C2[q] - C0[q]) * ((double)C2[q] - C0[q]);
                            r += (double)C0[q] * C0[q];
                        }
                    /* |entries| of the product ~ sqrt(K/9) ~ 6: fp32 accumulation error < 1e-4 */
                    TEST_CHECK(e_round < 2e-4 * (alphas[s] * 8 + 1));
                    TEST_CHECK(sqrt(e_fp32 / r) < 4e-3);
                    worst = fmax(worst, sqrt(e_fp32 / r));
                    worst_round = fmax(worst_round, e_round);
                    TEST_CHECK(!memcmp(C2, C3, (size_t)M * ldc * 4));
                    free(A), free(B), free(Ar), free(Br), free(C0), free(C1), free(C2), free(C3);
                }
    printf("  gemm %dx%dx%d, %d threads: rel err vs fp32 at most %.2e (bound 4e-3); |bf16 - fp32 of rounded inputs| at most %.1e\n", M, N, K,
           gt_par_threads(), worst, worst_round);
    printf("  gemm: %s (ISA %s, flags %s)\n", gt_gemm_impl(GT_GEMM_OTHER), gt_cpu_isa_name(), gt_cpu_flags());
    /* oneDNN 2.6 has bf16 matmuls from AVX-512 on (emulated there without AVX512-BF16); below it
     * gt_gemm emulates on OpenBLAS (ONEDNN_MAX_CPU_ISA=AVX2 exercises that here) */
    const int avx512 = !strncmp(gt_cpu_isa_name(), "avx512", 6);
    TEST_CHECK(strstr(gt_gemm_impl(GT_GEMM_OTHER), avx512 ? "onednn" : "emulated") != NULL);
    if (getenv("GT_EXPECT_ISA")) TEST_CHECK(!strcmp(gt_cpu_isa_name(), getenv("GT_EXPECT_ISA")));
}

/* ------------------------------------------------------------------ linear */
static void test_linear(void) {
    const int N = 96, C = 160, OC = 72;
    float *inp = falloc((size_t)N * C), *w = falloc((size_t)OC * C), *b = falloc(OC), *dout = falloc((size_t)N * OC);
    nt_fill(inp, (size_t)N * C, 1.0f, 20);
    nt_fill(w, (size_t)OC * C, 0.1f, 21);
    nt_fill(b, OC, 0.1f, 22);
    nt_fill(dout, (size_t)N * OC, 1.0f, 23);
    float *out[2], *dinp[2], *dw[2], *db[2], *scr = falloc((size_t)N * OC);
    for (int p = 0; p < 2; p++) {
        gt_cpu_set_precision(p ? GT_CPU_BF16 : GT_CPU_FP32);
        out[p] = falloc((size_t)N * OC), dinp[p] = falloc((size_t)N * C), dw[p] = falloc((size_t)OC * C);
        db[p] = falloc(OC);
        gt_linear_forward(out[p], inp, w, b, N, C, OC, GT_ACT_RELU);
        /* the fp32 forward output for both: a ReLU mask moved by bf16 is not the backward's error */
        gt_linear_backward(dinp[p], dw[p], db[p], dout, inp, w, out[0], scr, N, C, OC, GT_ACT_RELU);
    }
    gt_cpu_set_precision(GT_CPU_FP32);
    CHECK_REL("linear forward", out[1], out[0], (size_t)N * OC, 4e-3);
    CHECK_REL("linear backward dinp", dinp[1], dinp[0], (size_t)N * C, 6e-3);
    CHECK_REL("linear backward dw", dw[1], dw[0], (size_t)OC * C, 6e-3);
    TEST_CHECK(rel_err(db[1], db[0], OC) < 1e-6); /* no product: the same fp32 sums */
    printf("  linear: %s\n", gt_gemm_impl(GT_GEMM_LINEAR));
}

/* ------------------------------------------------------------------ conv1d */
static void test_conv1d(void) {
    const int B = 5, IC = 3, OC = 8, W = 61, K = 7;
    float *inp = falloc((size_t)B * IC * W), *w = falloc((size_t)OC * IC * K), *b = falloc(OC);
    float *dout = falloc((size_t)B * OC * W), *scr = falloc(gt_conv1d_scratch_elems(IC, OC, W, K));
    nt_fill(inp, (size_t)B * IC * W, 1.0f, 30);
    nt_fill(w, (size_t)OC * IC * K, 0.3f, 31);
    nt_fill(b, OC, 0.1f, 32);
    nt_fill(dout, (size_t)B * OC * W, 1.0f, 33);
    float *out[2], *dinp[2], *dw[2], *db[2];
    for (int p = 0; p < 2; p++) {
        gt_cpu_set_precision(p ? GT_CPU_BF16 : GT_CPU_FP32);
        out[p] = falloc((size_t)B * OC * W), dinp[p] = falloc((size_t)B * IC * W);
        dw[p] = falloc((size_t)OC * IC * K), db[p] = falloc(OC);
        gt_conv1d_forward(out[p], scr, inp, w, b, B, IC, OC, W, K, GT_ACT_NONE);
        gt_conv1d_backward(dinp[p], dw[p], db[p], dout, inp, w, out[p], scr, B, IC, OC, W, K, GT_ACT_NONE);
    }
    gt_cpu_set_precision(GT_CPU_FP32);
    CHECK_REL("conv1d forward", out[1], out[0], (size_t)B * OC * W, 4e-3);
    CHECK_REL("conv1d backward dinp", dinp[1], dinp[0], (size_t)B * IC * W, 4e-3);
    CHECK_REL("conv1d backward dw", dw[1], dw[0], (size_t)OC * IC * K, 4e-3);
    TEST_CHECK(rel_err(db[1], db[0], OC) < 1e-6); /* no product: the same fp32 sums */
    printf("  conv1d: %s\n", gt_gemm_impl(GT_GEMM_CONV1D));
}

/* conv1d as nn/ops/cpu/conv1d.c's rule routes it (and oneDNN's bf16 route called directly),
 * B = 37: two chunks of GT_CONV1D_DNNL_NB = 16 and one of 5; ReLU; even K */
static void conv_ref(double *out, const float *inp, const float *w, const float *b, int B, int IC, int OC, int W,
                     int K) {
    const int pad_l = (K - 1) / 2;
    for (int n = 0; n < B; n++)
        for (int o = 0; o < OC; o++)
            for (int t = 0; t < W; t++) {
                double s = b[o];
                for (int i = 0; i < IC; i++)
                    for (int k = 0; k < K; k++) {
                        const int u = t + k - pad_l;
                        if (u >= 0 && u < W) s += (double)w[(o * IC + i) * K + k] * inp[((size_t)n * IC + i) * W + u];
                    }
                out[((size_t)n * OC + o) * W + t] = s > 0 ? s : 0;
            }
}

static void test_conv1d_wide(void) {
    const int B = 37, IC = 24, OC = 20, W = 61, K = 6;
    const size_t ni = (size_t)B * IC * W, no = (size_t)B * OC * W, nw = (size_t)OC * IC * K;
    float *inp = falloc(ni), *w = falloc(nw), *b = falloc(OC), *dout = falloc(no);
    float *scr = falloc(gt_conv1d_scratch_elems(IC, OC, W, K));
    nt_fill(inp, ni, 1.0f, 60);
    nt_fill(w, nw, 0.1f, 61);
    nt_fill(b, OC, 0.1f, 62);
    nt_fill(dout, no, 1.0f, 63);
    double *ref = (double *)calloc(no, sizeof(double));
    conv_ref(ref, inp, w, b, B, IC, OC, W, K);
    float *out[3], *dinp[3], *dw[3], *db[3];
    for (int p = 0; p < 3; p++) { /* fp32, bf16 by the rule, bf16 on oneDNN directly */
        out[p] = falloc(no), dinp[p] = falloc(ni), dw[p] = falloc(nw), db[p] = falloc(OC);
        if (p == 2) continue;
        gt_cpu_set_precision(p ? GT_CPU_BF16 : GT_CPU_FP32);
        gt_conv1d_forward(out[p], scr, inp, w, b, B, IC, OC, W, K, GT_ACT_RELU);
        gt_conv1d_backward(dinp[p], dw[p], db[p], dout, inp, w, out[0], scr, B, IC, OC, W, K, GT_ACT_RELU);
        printf("  conv1d %d->%d %s: %s\n", IC, OC, p ? "bf16" : "fp32", gt_gemm_impl(GT_GEMM_CONV1D));
    }
    gt_cpu_set_precision(GT_CPU_FP32);
    double e = 0, r = 0;
    for (size_t i = 0; i < no; i++) e += (out[0][i] - ref[i]) * (out[0][i] - ref[i]), r += ref[i] * ref[i];
    printf("  conv1d wide fp32 forward rel err vs double %.2e (bound 1e-6)\n", sqrt(e / r));
    TEST_CHECK(sqrt(e / r) < 1e-6);
    CHECK_REL("conv1d wide forward", out[1], out[0], no, 4e-3);
    CHECK_REL("conv1d wide backward dinp", dinp[1], dinp[0], ni, 4e-3);
    CHECK_REL("conv1d wide backward dw", dw[1], dw[0], nw, 4e-3);
    TEST_CHECK(rel_err(db[1], db[0], OC) < 1e-6);
#ifdef GT_HAVE_DNNL
    if (gt_conv1d_dnnl_usable(GT_CPU_BF16, B, IC, OC, W, K)) {
        gt_conv1d_dnnl_forward(GT_CPU_BF16, out[2], inp, w, b, B, IC, OC, W, K, GT_ACT_RELU);
        gt_conv1d_dnnl_backward(GT_CPU_BF16, dinp[2], dw[2], db[2], dout, inp, w, out[0], B, IC, OC, W, K,
                                GT_ACT_RELU);
        CHECK_REL("conv1d onednn bf16 forward", out[2], out[0], no, 4e-3);
        CHECK_REL("conv1d onednn bf16 dinp", dinp[2], dinp[0], ni, 4e-3);
        CHECK_REL("conv1d onednn bf16 dw", dw[2], dw[0], nw, 4e-3);
        TEST_CHECK(rel_err(db[2], db[0], OC) < 1e-6);
        /* call to call and 1 thread against this run's count: bit-identical (chunk-order sums) */
        const int threads = openblas_get_num_threads();
        for (int rep = 0; rep < 2; rep++) {
            if (rep) openblas_set_num_threads(1);
            float *o2 = falloc(no), *di2 = falloc(ni), *dw2 = falloc(nw), *db2 = falloc(OC);
            gt_conv1d_dnnl_forward(GT_CPU_BF16, o2, inp, w, b, B, IC, OC, W, K, GT_ACT_RELU);
            gt_conv1d_dnnl_backward(GT_CPU_BF16, di2, dw2, db2, dout, inp, w, out[0], B, IC, OC, W, K, GT_ACT_RELU);
            TEST_CHECK(!memcmp(o2, out[2], no * 4) && !memcmp(di2, dinp[2], ni * 4));
            TEST_CHECK(!memcmp(dw2, dw[2], nw * 4) && !memcmp(db2, db[2], OC * 4));
            free(o2), free(di2), free(dw2), free(db2);
        }
        openblas_set_num_threads(threads);
        printf("  conv1d onednn bf16 at %d and 1 threads: bit-identical\n", threads);
    } else {
        printf("  conv1d onednn bf16: no oneDNN kernel on %s (the im2col route only)\n", gt_cpu_isa_name());
    }
#endif
    /* the rule: oneDNN's convolution in bf16 where the CPU has bf16 units, in fp32 on AVX-512; never on
     * AVX2 (im2col, whose products may be oneDNN matmuls: "onednn gemm:jit:avx2") */
    const int avx512 = !strncmp(gt_cpu_isa_name(), "avx512", 6);
    const char *conv_impl = gt_gemm_impl(GT_GEMM_CONV1D);
    TEST_CHECK((strstr(conv_impl, "onednn brgconv:") || strstr(conv_impl, "onednn jit:")) ==
               (avx512 || gt_cpu_has_bf16_units()));
    for (int p = 0; p < 3; p++) free(out[p]), free(dinp[p]), free(dw[p]), free(db[p]);
    free(inp), free(w), free(b), free(dout), free(scr), free(ref);
}

/* -------------------------------------------------------------------- lstm */
/* One layer forward + backward in precision p on its own buffers (the bf16
 * route on bf16 units keeps its gate values itself: the backward follows its
 * own forward). B = 40 in blocks of 32 and 8 (GT_LSTM_BATCH_BLOCK=32); T =
 * 150 in chunks of 64, 64 and 22 steps (GT_LSTM_CHUNK=64), so both partial
 * shapes run. */
enum { LB = 40, LT = 150, LC = 5, LH = 16, LG = 4 * LH };
typedef struct lstm_out {
    float *h, *dx, *dwih, *dwhh, *dbih, *dbhh;
} lstm_out;

static lstm_out lstm_run(gt_cpu_prec p, int K, const float *x, const float *wih, const float *whh, const float *bih,
                         const float *bhh, const float *dh) {
    lstm_out o = {falloc((size_t)LB * LT * LH), falloc((size_t)LB * LT * LC), falloc((size_t)LG * LC),
                  falloc((size_t)LG * LH), falloc(LG), falloc(LG)};
    float *c = falloc((size_t)LB * LT * LH), *g = falloc((size_t)LB * LT * LG), *dg = falloc((size_t)LB * LT * LG);
    float *scr = falloc(gt_lstm_scratch_elems(LB, LH));
    gt_cpu_set_precision(p);
    gt_lstm_forward(o.h, c, g, x, wih, whh, bih, bhh, LB, LT, LC, LH);
    gt_lstm_backward(o.dx, o.dwih, o.dwhh, o.dbih, o.dbhh, dg, scr, dh, x, wih, whh, o.h, c, g, LB, LT, LC, LH, K);
    gt_cpu_set_precision(GT_CPU_FP32);
    gt_lstm_release(g);
    free(c), free(g), free(dg), free(scr);
    return o;
}

static void lstm_free_out(lstm_out *o) { free(o->h), free(o->dx), free(o->dwih), free(o->dwhh), free(o->dbih), free(o->dbhh); }

static int lstm_same(const lstm_out *a, const lstm_out *b) {
    return !memcmp(a->h, b->h, sizeof(float) * LB * LT * LH) && !memcmp(a->dx, b->dx, sizeof(float) * LB * LT * LC) &&
           !memcmp(a->dwih, b->dwih, sizeof(float) * LG * LC) && !memcmp(a->dwhh, b->dwhh, sizeof(float) * LG * LH) &&
           !memcmp(a->dbih, b->dbih, sizeof(float) * LG) && !memcmp(a->dbhh, b->dbhh, sizeof(float) * LG);
}

static void test_lstm(void) {
    float *x = falloc((size_t)LB * LT * LC), *wih = falloc((size_t)LG * LC), *whh = falloc((size_t)LG * LH);
    float *bih = falloc(LG), *bhh = falloc(LG), *dh = falloc((size_t)LB * LT * LH);
    nt_fill(x, (size_t)LB * LT * LC, 1.0f, 40);
    nt_fill(wih, (size_t)LG * LC, 0.4f, 41);
    nt_fill(whh, (size_t)LG * LH, 0.25f, 42);
    nt_fill(bih, LG, 0.1f, 43);
    nt_fill(bhh, LG, 0.1f, 44);
    nt_fill(dh, (size_t)LB * LT * LH, 1.0f, 45);
    /* full BPTT; TBPTT 64 (the forward's chunk edges); TBPTT 50 (inside the chunks: the backward runs the forward
     * again on chunks of 50): each against the fp32 op with the same K (the state carried across the TBPTT
     * boundaries as a value, the gradient cut there) */
    const int Ks[3] = {0, 64, 50};
    setenv("GT_LSTM_BATCH_BLOCK", "32", 1);
    setenv("GT_LSTM_CHUNK", "64", 1);
    lstm_out full_bf16 = {0};
    for (int i = 0; i < 3; i++) {
        lstm_out f = lstm_run(GT_CPU_FP32, Ks[i], x, wih, whh, bih, bhh, dh);
        lstm_out b = lstm_run(GT_CPU_BF16, Ks[i], x, wih, whh, bih, bhh, dh);
        printf("  lstm K=%d:\n", Ks[i]);
        CHECK_REL("lstm forward h", b.h, f.h, (size_t)LB * LT * LH, 8e-3);
        CHECK_REL("lstm backward dx", b.dx, f.dx, (size_t)LB * LT * LC, 2e-2);
        CHECK_REL("lstm backward dw_ih", b.dwih, f.dwih, (size_t)LG * LC, 2e-2);
        CHECK_REL("lstm backward dw_hh", b.dwhh, f.dwhh, (size_t)LG * LH, 2e-2);
        CHECK_REL("lstm backward db_ih", b.dbih, f.dbih, LG, 2e-2);
        TEST_CHECK(!memcmp(b.dbih, b.dbhh, sizeof(float) * LG)); /* one bias sum, added to both */
        if (i > 0) { /* the cut changes the gradient: a TBPTT run that equals full BPTT would be a leak */
            TEST_CHECK(rel_err(b.dwhh, full_bf16.dwhh, (size_t)LG * LH) > 1e-3);
            TEST_CHECK(!memcmp(b.h, full_bf16.h, sizeof(float) * LB * LT * LH)); /* the forward does not depend on K */
            lstm_free_out(&b);
        } else {
            full_bf16 = b;
        }
        lstm_free_out(&f);
    }
    /* deterministic: the same bits again, and with the whole window as one chunk the same forward (the state handed
     * over at the chunk edges exactly) and the backward within fp32 accumulation error */
    lstm_out again = lstm_run(GT_CPU_BF16, 0, x, wih, whh, bih, bhh, dh);
    TEST_CHECK(lstm_same(&again, &full_bf16));
    lstm_free_out(&again);
    if (gt_cpu_has_bf16_units()) {
        TEST_CHECK(strstr(gt_gemm_impl(GT_GEMM_LSTM), "onednn rnn") != NULL);
        setenv("GT_LSTM_CHUNK", "150", 1);
        lstm_out one = lstm_run(GT_CPU_BF16, 0, x, wih, whh, bih, bhh, dh);
        setenv("GT_LSTM_CHUNK", "64", 1);
        TEST_CHECK(!memcmp(one.h, full_bf16.h, sizeof(float) * LB * LT * LH));
        const double e = rel_err(one.dwhh, full_bf16.dwhh, (size_t)LG * LH) + rel_err(one.dx, full_bf16.dx, (size_t)LB * LT * LC);
        printf("  lstm one chunk vs chunks of 64: backward rel diff %.2e\n", e);
        TEST_CHECK(e < 1e-5);
        lstm_free_out(&one);
    }
    /* on oneDNN's LSTM with a fixed block size the thread count does not change the bits (block sums in order;
     * the cell on gt_gemm's emulated route depends on OpenBLAS's threads) */
    if (gt_cpu_has_bf16_units() && gt_par_max_threads() >= 2) {
        const int was = openblas_get_num_threads();
        openblas_set_num_threads(2);
        lstm_out two = lstm_run(GT_CPU_BF16, 64, x, wih, whh, bih, bhh, dh);
        openblas_set_num_threads(1);
        lstm_out one = lstm_run(GT_CPU_BF16, 64, x, wih, whh, bih, bhh, dh);
        openblas_set_num_threads(was);
        TEST_CHECK(lstm_same(&one, &two));
        printf("  lstm 1 vs 2 threads: %s\n", lstm_same(&one, &two) ? "same bits" : "DIFFERENT");
        lstm_free_out(&one);
        lstm_free_out(&two);
        /* the default split (one block per thread): run to run the same bits at 2 threads; against 1 thread the
         * same forward (the samples are independent) and the weight gradients summed in another order */
        unsetenv("GT_LSTM_BATCH_BLOCK");
        openblas_set_num_threads(2);
        lstm_out t2a = lstm_run(GT_CPU_BF16, 64, x, wih, whh, bih, bhh, dh);
        lstm_out t2b = lstm_run(GT_CPU_BF16, 64, x, wih, whh, bih, bhh, dh);
        openblas_set_num_threads(1);
        lstm_out t1 = lstm_run(GT_CPU_BF16, 64, x, wih, whh, bih, bhh, dh);
        openblas_set_num_threads(was);
        TEST_CHECK(lstm_same(&t2a, &t2b));
        TEST_CHECK(!memcmp(t1.h, t2a.h, sizeof(float) * LB * LT * LH));
        TEST_CHECK(!memcmp(t1.dx, t2a.dx, sizeof(float) * LB * LT * LC));
        const double e = rel_err(t2a.dwhh, t1.dwhh, (size_t)LG * LH) + rel_err(t2a.dwih, t1.dwih, (size_t)LG * LC);
        printf("  lstm default split, 1 vs 2 threads: weight gradients rel diff %.2e\n", e);
        TEST_CHECK(e < 1e-5);
        lstm_free_out(&t1), lstm_free_out(&t2a), lstm_free_out(&t2b);
    }
    unsetenv("GT_LSTM_BATCH_BLOCK");
    unsetenv("GT_LSTM_CHUNK");
    lstm_free_out(&full_bf16);
    printf("  lstm: %s\n", gt_gemm_impl(GT_GEMM_LSTM));
}

/* --------------------------------------------------------------- attention */
/* One shape, forward and backward of the query rows [q0, q0 + nq) (all rows:
 * q0 = 0, nq = L) in bf16 against fp32. Head sizes up to 64 take the fused
 * AMX route where oneDNN's ISA is avx512_core_amx (attention_amx.c), the
 * same kernels on AVX-512 where it is avx512_core_bf16
 * (attention_avx512bf16.c), larger ones and other ISAs the tile products
 * through gt_gemm. Bounds as above;
 * the same bits call to call. */
static void attention_case(int B, int L, int C, int NH, int q0, int nq) {
    const size_t nqkv = (size_t)B * L * 3 * C, no = (size_t)B * L * C, nl = (size_t)B * NH * L;
    float *qkv = falloc(nqkv), *dout = falloc(no), *scr = falloc(gt_attention_scratch_elems(L));
    nt_fill(qkv, nqkv, 1.0f, 50 + L);
    nt_fill(dout, no, 1.0f, 51 + L);
    float *out[3], *lse[3], *dqkv[3];
    for (int p = 0; p < 3; p++) { /* fp32, bf16, bf16 again */
        gt_cpu_set_precision(p ? GT_CPU_BF16 : GT_CPU_FP32);
        out[p] = falloc(no), lse[p] = falloc(nl), dqkv[p] = falloc(nqkv);
        gt_attention_forward_rows(out[p], lse[p], scr, qkv, B, L, C, NH, q0, nq);
        gt_attention_backward_rows(dqkv[p], scr, dout, qkv, out[0], lse[0], B, L, C, NH, q0, nq);
    }
    gt_cpu_set_precision(GT_CPU_FP32);
    printf("  attention B=%d L=%d C=%d NH=%d (head size %d) rows [%d, %d):\n", B, L, C, NH, C / NH, q0, q0 + nq);
    /* only the rows' outputs are defined: compare those */
    float *o[2], *ls[2];
    for (int p = 0; p < 2; p++) {
        o[p] = falloc((size_t)B * nq * C), ls[p] = falloc((size_t)B * NH * nq);
        for (int b = 0; b < B; b++) {
            memcpy(o[p] + (size_t)b * nq * C, out[p] + ((size_t)b * L + q0) * C, (size_t)nq * C * sizeof(float));
            for (int h = 0; h < NH; h++)
                memcpy(ls[p] + ((size_t)b * NH + h) * nq, lse[p] + ((size_t)b * NH + h) * L + q0, (size_t)nq * sizeof(float));
        }
    }
    CHECK_REL("attention forward", o[1], o[0], (size_t)B * nq * C, 1e-2);
    CHECK_REL("attention forward lse", ls[1], ls[0], (size_t)B * NH * nq, 2e-3);
    CHECK_REL("attention backward dqkv", dqkv[1], dqkv[0], nqkv, 2e-2);
    TEST_CHECK(!memcmp(out[1], out[2], no * sizeof(float)) && !memcmp(lse[1], lse[2], nl * sizeof(float)) &&
               !memcmp(dqkv[1], dqkv[2], nqkv * sizeof(float)));
    for (int p = 0; p < 3; p++) free(out[p]), free(lse[p]), free(dqkv[p]);
    for (int p = 0; p < 2; p++) free(o[p]), free(ls[p]);
    free(qkv), free(dout), free(scr);
}

static void test_attention(void) {
    attention_case(2, 80, 32, 2, 0, 80);   /* head size 16, padded to 32 */
    attention_case(2, 77, 128, 4, 0, 77);  /* 32, as s2p_tf; L not a multiple of 16 */
    attention_case(1, 300, 96, 2, 0, 300); /* 48 (padded to 64), two key blocks of the online softmax */
    attention_case(2, 64, 128, 2, 0, 64);  /* 64 */
    attention_case(2, 80, 128, 4, 40, 1);  /* the midpoint row alone (s2p_tf's last block) */
    attention_case(2, 90, 64, 2, 7, 37);   /* a band of rows */
    const int amx = !strcmp(gt_cpu_isa_name(), "avx512_core_amx"), vdp = !strcmp(gt_cpu_isa_name(), "avx512_core_bf16");
    printf("  attention: %s\n", gt_gemm_impl(GT_GEMM_ATTENTION));
    TEST_CHECK((strstr(gt_gemm_impl(GT_GEMM_ATTENTION), "fused attention amx_bf16") != NULL) == amx);
    TEST_CHECK((strstr(gt_gemm_impl(GT_GEMM_ATTENTION), "fused attention avx512_bf16") != NULL) == vdp);
    attention_case(1, 40, 160, 2, 0, 40); /* head size 80: the tile products on every ISA */
    TEST_CHECK(strstr(gt_gemm_impl(GT_GEMM_ATTENTION), "onednn") || strstr(gt_gemm_impl(GT_GEMM_ATTENTION), "emulated"));
}

/* ------------------------------------------------- precision per model --
 * The products' precision belongs to the model (nn/model.c sets it from
 * cfg.precision around its forward and backward): an fp32 model gives the
 * same bits whether or not a bf16 model ran in the same process in between,
 * and the caller's precision is what it was after either ran. */
static void test_model_precision(void) {
    gt_nn_bench_config bc;
    gt_nn_bench_config_default(&bc, GT_MODEL_S2P_CNN);
    bc.batch = 20, bc.window = 40, bc.hidden = 16;
    gt_model_config mc[2];
    gt_model *m[2];
    for (int p = 0; p < 2; p++) {
        gt_nn_bench_model_config(&bc, &mc[p]);
        mc[p].conv_channels[1] = 24; /* a layer oneDNN's convolution runs where the ISA has it */
        mc[p].precision = p ? GT_PRECISION_BF16 : GT_PRECISION_FP32;
        m[p] = gt_model_create(&mc[p]);
        gt_model_init(m[p], 5);
    }
    const size_t nx = (size_t)bc.batch * m[0]->n_x, ny = (size_t)bc.batch * m[0]->n_y;
    float *x = falloc(nx), *ref = falloc(ny), *y = falloc(ny);
    nt_fill(x, nx, 1.0f, 70);
    memcpy(ref, gt_model_forward(m[0], x, bc.batch), ny * 4);
    const float *yb = gt_model_forward(m[1], x, bc.batch);
    TEST_CHECK(gt_cpu_get_precision() == GT_CPU_FP32);
    CHECK_REL("s2p_cnn bf16 model vs fp32 model", yb, ref, ny, 2e-2);
    memcpy(y, gt_model_forward(m[0], x, bc.batch), ny * 4);
    TEST_CHECK(!memcmp(y, ref, ny * 4));
    gt_cpu_set_precision(GT_CPU_BF16); /* the caller's precision does not leak into a model */
    memcpy(y, gt_model_forward(m[0], x, bc.batch), ny * 4);
    TEST_CHECK(!memcmp(y, ref, ny * 4));
    TEST_CHECK(gt_cpu_get_precision() == GT_CPU_BF16);
    gt_cpu_set_precision(GT_CPU_FP32);
    printf("  precision per model: the fp32 model bit-identical around a bf16 model and a bf16 caller\n");
    gt_model_free(m[0]), gt_model_free(m[1]);
    free(x), free(ref), free(y);
}

/* oneDNN's ISA names in the order the caps nest; -1 for another name */
static int isa_rank(const char *isa) {
    static const char *const order[] = {"sse41", "avx", "avx2", "avx2_vnni", "avx512_core", "avx512_core_vnni",
                                        "avx512_core_bf16", "avx512_core_amx"};
    for (int i = 0; i < 8; i++)
        if (!strcmp(isa, order[i])) return i;
    return -1;
}

int main(void) {
    if (!gt_cpu_bf16_available()) TEST_SKIP("built without oneDNN: no CPU bf16 products");
    /* ONEDNN_MAX_CPU_ISA only caps: a CPU without the ISA named by GT_EXPECT_ISA
     * cannot run that leg (an AVX2-only CPU and the avx512_core leg) */
    const char *want = getenv("GT_EXPECT_ISA");
    if (want && isa_rank(gt_cpu_isa_name()) < isa_rank(want)) {
        printf("this CPU has no %s (oneDNN's ISA: %s, flags %s)\n", want, gt_cpu_isa_name(), gt_cpu_flags());
        TEST_SKIP("the CPU lacks the ISA of this leg");
    }
    test_gemm(37, 53, 301);
    test_gemm(200, 96, 1024); /* split by rows */
    test_gemm(64, 300, 1024); /* split by columns */
    test_linear();
    test_conv1d();
    test_conv1d_wide();
    test_lstm();
    test_attention();
    test_model_precision();
    TEST_DONE();
}
