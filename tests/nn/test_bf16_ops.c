/* tests/nn/test_bf16_ops.c: the CPU engine's bf16 products (nn/ops/cpu/gemm.h)
 * against fp32.
 *
 * gemm: every transpose pair, alpha, beta, padded leading dimensions. The
 * bf16 result must equal the fp32 product of the bf16-rounded inputs up to
 * fp32 accumulation error (checks rounding, strides, alpha and beta), and be
 * within the bf16 bound of the fp32 product. Call to call: bit-identical.
 * ops: linear, conv1d, lstm and attention forward and backward in bf16 vs the
 * same op in fp32, normwise relative error ||y_bf16 - y_fp32|| / ||y_fp32||
 * per output. Bounds: bf16 keeps 8 significant bits (unit roundoff
 * u = 2^-9 = 1.95e-3); a product of two rounded inputs is off by up to 2u and
 * random errors add up like a sum of squares, so a single GEMM lands near u
 * (measured 2.0e-3 .. 2.2e-3 on these shapes, on AMX, on oneDNN's AVX-512
 * emulation and on the AVX2 fallback alike). Ops that chain products (LSTM's
 * recurrence through T steps, attention's scores -> softmax -> values, the
 * backward passes) could compound it: the bounds are about 2x the measured
 * error for the single-product ops (gemm, linear, conv1d) and looser for the
 * chained ones (LSTM 2e-2, attention 1e-2 / 2e-2, measured 2.0-2.7e-3), to
 * leave room for longer chains. The backward passes are fed the fp32
 * forward results, so each is checked on its own. Attention runs on several
 * shapes (head sizes 16..80, padded lengths, the rows variant), which cover
 * its fused AMX route and the tile-product route. The finite-difference
 * tests of the backward passes stay in fp32 (test_dense_ops, test_lstm,
 * test_attention). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/ops/attention.h"
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

/* -------------------------------------------------------------------- lstm */
static void test_lstm(void) {
    const int B = 4, T = 24, C = 5, H = 16, G = 4 * H;
    float *x = falloc((size_t)B * T * C), *wih = falloc((size_t)G * C), *whh = falloc((size_t)G * H);
    float *bih = falloc(G), *bhh = falloc(G), *dh = falloc((size_t)B * T * H);
    nt_fill(x, (size_t)B * T * C, 1.0f, 40);
    nt_fill(wih, (size_t)G * C, 0.4f, 41);
    nt_fill(whh, (size_t)G * H, 0.25f, 42);
    nt_fill(bih, G, 0.1f, 43);
    nt_fill(bhh, G, 0.1f, 44);
    nt_fill(dh, (size_t)B * T * H, 1.0f, 45);
    float *h[2], *c[2], *g[2], *dx[2], *dwih[2], *dwhh[2], *dbih[2], *dg = falloc((size_t)B * T * G);
    float *scr = falloc(gt_lstm_scratch_elems(B, H));
    for (int p = 0; p < 2; p++) {
        gt_cpu_set_precision(p ? GT_CPU_BF16 : GT_CPU_FP32);
        h[p] = falloc((size_t)B * T * H), c[p] = falloc((size_t)B * T * H), g[p] = falloc((size_t)B * T * G);
        dx[p] = falloc((size_t)B * T * C), dwih[p] = falloc((size_t)G * C), dwhh[p] = falloc((size_t)G * H);
        dbih[p] = falloc(G);
        gt_lstm_forward(h[p], c[p], g[p], x, wih, whh, bih, bhh, B, T, C, H);
        gt_lstm_backward(dx[p], dwih[p], dwhh[p], dbih[p], NULL, dg, scr, dh, x, wih, whh, h[0], c[0], g[0], B, T,
                         C, H, 0);
    }
    gt_cpu_set_precision(GT_CPU_FP32);
    CHECK_REL("lstm forward h", h[1], h[0], (size_t)B * T * H, 8e-3);
    CHECK_REL("lstm backward dx", dx[1], dx[0], (size_t)B * T * C, 2e-2);
    CHECK_REL("lstm backward dw_ih", dwih[1], dwih[0], (size_t)G * C, 2e-2);
    CHECK_REL("lstm backward dw_hh", dwhh[1], dwhh[0], (size_t)G * H, 2e-2);
    CHECK_REL("lstm backward db_ih", dbih[1], dbih[0], G, 2e-2);
    printf("  lstm: %s\n", gt_gemm_impl(GT_GEMM_LSTM));
}

/* --------------------------------------------------------------- attention */
/* One shape, forward and backward of the query rows [q0, q0 + nq) (all rows:
 * q0 = 0, nq = L) in bf16 against fp32. Head sizes up to 64 take the fused
 * AMX route where oneDNN's ISA is avx512_core_amx (attention_amx.c), larger
 * ones and other ISAs the tile products through gt_gemm. Bounds as above;
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
    const int amx = !strcmp(gt_cpu_isa_name(), "avx512_core_amx");
    printf("  attention: %s\n", gt_gemm_impl(GT_GEMM_ATTENTION));
    TEST_CHECK((strstr(gt_gemm_impl(GT_GEMM_ATTENTION), "fused attention amx_bf16") != NULL) == amx);
    attention_case(1, 40, 160, 2, 0, 40); /* head size 80: the tile products on every ISA */
    TEST_CHECK(strstr(gt_gemm_impl(GT_GEMM_ATTENTION), "onednn") || strstr(gt_gemm_impl(GT_GEMM_ATTENTION), "emulated"));
}

int main(void) {
    if (!gt_cpu_bf16_available()) TEST_SKIP("built without oneDNN: no CPU bf16 products");
    test_gemm(37, 53, 301);
    test_gemm(200, 96, 1024); /* split by rows */
    test_gemm(64, 300, 1024); /* split by columns */
    test_linear();
    test_conv1d();
    test_lstm();
    test_attention();
    TEST_DONE();
}
