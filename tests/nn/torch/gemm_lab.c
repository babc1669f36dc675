/* tests/nn/torch/gemm_lab.c: the fp32 products of the three models, OpenBLAS
 * against oneDNN's f32 matmul, op by op (the numbers behind the fp32 rule
 * in src/nn/ops/cpu/gemm.c; not a test).
 *
 *   gt_gemm_lab [--reps N] [--only NAME-PREFIX] [--conv]  (OPENBLAS_NUM_THREADS)
 *
 * Every workload shape (s2p_cnn B=256 W=599, s2p_tf B=32 L=512 C=128, the
 * LSTM B=64 T=512 H=128) in the transpose pairs the ops issue, with the
 * ops' alpha and beta. The two routes alternate rep by rep (A, B, A, B, ...:
 * a loaded machine slows both alike); each call is timed in the calling
 * thread's CPU time (preemption not counted) and in wall time, best of the
 * reps. At 1 thread thread CPU time is the measure; at more threads the
 * products run on several threads and only wall time (and the process CPU
 * time) say something. Columns: GFLOP/s of OpenBLAS, of oneDNN, the ratio
 * oneDNN / OpenBLAS (> 1: oneDNN faster), and the largest |difference|
 * relative to max |C|.
 * --conv: s2p_cnn's conv1d layers instead (B=256 W=599, ReLU), the im2col
 * route (gt_conv1d_*, GT_CPU_CONV1D=im2col) against oneDNN's convolution
 * (gt_conv1d_dnnl_*): forward, backward without dinp (the weight gradient
 * alone: the first layer's) and the full backward; ms of thread CPU time
 * (at 1 thread) and the ratio im2col / oneDNN. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nn/ops/cpu/conv1d_dnnl.h"
#include "nn/ops/cpu/gemm.h"
#include "nn/ops/ops.h"

typedef struct shape {
    const char *name;
    int ta, tb, M, N, K;
    float beta;
} shape;

#define T CblasTrans
#define N_ CblasNoTrans
static const shape k_shapes[] = {
    /* s2p_cnn: fc1 (29950 -> 1024), fc2 (1024 -> 15): forward, weight gradient (beta 1), input gradient */
    {"cnn.fc1.fwd", N_, T, 256, 1024, 29950, 0},   {"cnn.fc1.dw", T, N_, 1024, 29950, 256, 1},
    {"cnn.fc1.dinp", N_, N_, 256, 29950, 1024, 0}, {"cnn.fc2.fwd", N_, T, 256, 15, 1024, 0},
    {"cnn.fc2.dw", T, N_, 15, 1024, 256, 1},       {"cnn.fc2.dinp", N_, N_, 256, 1024, 15, 0},
    /* s2p_cnn's conv1d im2col products, a chunk of 4 samples (2396 columns): 30->30 k8 and 50->50 k5 */
    {"cnn.conv30.fwd", N_, N_, 30, 2396, 240, 0},  {"cnn.conv30.dw", N_, T, 30, 240, 2396, 0},
    {"cnn.conv30.dcol", T, N_, 240, 2396, 30, 0},  {"cnn.conv50.fwd", N_, N_, 50, 2396, 250, 0},
    {"cnn.conv50.dw", N_, T, 50, 250, 2396, 0},    {"cnn.conv50.dcol", T, N_, 250, 2396, 50, 0},
    /* s2p_tf: 16384 rows, C=128: qkv (384), proj (128), ffn (512, then back to 128) */
    {"tf.qkv.fwd", N_, T, 16384, 384, 128, 0},     {"tf.qkv.dw", T, N_, 384, 128, 16384, 1},
    {"tf.qkv.dinp", N_, N_, 16384, 128, 384, 0},   {"tf.proj.fwd", N_, T, 16384, 128, 128, 0},
    {"tf.proj.dw", T, N_, 128, 128, 16384, 1},     {"tf.proj.dinp", N_, N_, 16384, 128, 128, 0},
    {"tf.ffn1.fwd", N_, T, 16384, 512, 128, 0},    {"tf.ffn1.dw", T, N_, 512, 128, 16384, 1},
    {"tf.ffn1.dinp", N_, N_, 16384, 128, 512, 0},  {"tf.ffn2.fwd", N_, T, 16384, 128, 512, 0},
    {"tf.ffn2.dw", T, N_, 128, 512, 16384, 1},     {"tf.ffn2.dinp", N_, N_, 16384, 512, 128, 0},
    /* attention's tiles (64 query rows, 256 keys, head size 32) */
    {"tf.att.qk", N_, T, 64, 256, 32, 0},          {"tf.att.pv", N_, N_, 64, 32, 256, 1},
    {"tf.att.dv", T, N_, 256, 32, 64, 1},          {"tf.att.dq", N_, N_, 64, 32, 256, 1},
    /* LSTM B=64 T=512 H=128 (G=512): input projection (layer 2: 128 inputs), step, backward */
    {"lstm.xproj", N_, T, 32768, 512, 128, 1},     {"lstm.step", N_, T, 64, 512, 128, 1},
    {"lstm.dh", N_, N_, 64, 128, 512, 0},          {"lstm.dwhh", T, N_, 512, 128, 511, 1},
    {"lstm.dwih", T, N_, 512, 128, 32768, 1},      {"lstm.dx", N_, N_, 32768, 128, 512, 0},
};
#undef T
#undef N_

static double now(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void fill(float *x, size_t n, unsigned s) {
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
}

#ifdef GT_HAVE_DNNL
typedef struct conv_shape {
    int IC, OC, K;
} conv_shape;
static const conv_shape k_convs[] = {{1, 30, 10}, {30, 30, 8}, {30, 40, 6}, {40, 50, 5}, {50, 50, 5}};

/* pass 0 forward, 1 weight gradient only, 2 full backward, 3 the input
 * gradient alone (oneDNN; im2col has no such pass: its time is 2 - 1); route 0 im2col, 1 oneDNN */
static void conv_call(int pass, int route, const conv_shape *c, int B, int W, float *out, float *scratch,
                      const float *inp, const float *w, const float *b, float *dinp, float *dw, float *db,
                      const float *dout) {
    if (pass == 0 && !route) gt_conv1d_forward(out, scratch, inp, w, b, B, c->IC, c->OC, W, c->K, GT_ACT_RELU);
    else if (pass == 0)
        gt_conv1d_dnnl_forward(GT_CPU_FP32, out, inp, w, b, B, c->IC, c->OC, W, c->K, GT_ACT_RELU);
    else if (!route)
        gt_conv1d_backward(pass == 2 ? dinp : NULL, dw, db, dout, inp, w, out, scratch, B, c->IC, c->OC, W, c->K,
                           GT_ACT_RELU);
    else
        gt_conv1d_dnnl_backward(GT_CPU_FP32, pass >= 2 ? dinp : NULL, pass == 3 ? NULL : dw, db, dout, inp, w, out,
                                B, c->IC, c->OC, W, c->K, GT_ACT_RELU);
}

static void conv_lab(int reps) {
    const int B = 256, W = 599;
    printf("%-12s | %-22s | %-22s | %-22s | %-22s   thread CPU ms im2col / onednn (ratio)\n", "layer", "forward",
           "weight grad", "backward", "input grad");
    for (size_t s = 0; s < sizeof k_convs / sizeof *k_convs; s++) {
        const conv_shape *c = &k_convs[s];
        if (!gt_conv1d_dnnl_usable(GT_CPU_FP32, B, c->IC, c->OC, W, c->K)) {
            printf("%2d->%-2d k%-2d   no oneDNN kernel\n", c->IC, c->OC, c->K);
            continue;
        }
        const size_t ni = (size_t)B * c->IC * W, no = (size_t)B * c->OC * W, nw = (size_t)c->OC * c->IC * c->K;
        float *inp = malloc(ni * 4), *w = malloc(nw * 4), *b = malloc(c->OC * 4), *out = malloc(no * 4);
        float *dout = malloc(no * 4), *dinp = malloc(ni * 4), *dw = calloc(nw, 4), *db = calloc(c->OC, 4);
        float *scratch = malloc(gt_conv1d_scratch_elems(c->IC, c->OC, W, c->K) * 4);
        fill(inp, ni, 1), fill(w, nw, 2), fill(b, c->OC, 3), fill(dout, no, 4);
        double best[4][2];
        for (int p = 0; p < 4; p++) best[p][0] = best[p][1] = 1e30;
        for (int r = 0; r < reps + 1; r++)
            for (int p = 0; p < 4; p++)
                for (int v = p == 3; v < 2; v++) {
                    const double c0 = now(CLOCK_THREAD_CPUTIME_ID);
                    conv_call(p, v, c, B, W, out, scratch, inp, w, b, dinp, dw, db, dout);
                    const double dt = now(CLOCK_THREAD_CPUTIME_ID) - c0;
                    if (r && dt < best[p][v]) best[p][v] = dt;
                }
        printf("%2d->%-2d k%-2d   ", c->IC, c->OC, c->K);
        best[3][0] = best[2][0] - best[1][0];
        for (int p = 0; p < 4; p++)
            printf("| %6.1f / %6.1f (%4.2f) ", 1e3 * best[p][0], 1e3 * best[p][1], best[p][0] / best[p][1]);
        printf("\n");
        fflush(stdout);
        free(inp), free(w), free(b), free(out), free(dout), free(dinp), free(dw), free(db), free(scratch);
    }
    printf("# conv1d: %s\n", gt_gemm_impl(GT_GEMM_CONV1D));
}
#endif

int main(int argc, char **argv) {
    int reps = 5, conv = 0;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--conv")) conv = 1;
        else {
            fprintf(stderr, "usage: gt_gemm_lab [--reps N] [--only NAME-PREFIX] [--conv]\n");
            return 2;
        }
    }
    const int threads = openblas_get_num_threads();
    setenv("GT_CPU_CONV1D", "im2col", 1);      /* gt_conv1d_* is the im2col route */
    if (conv) {
#ifdef GT_HAVE_DNNL
        printf("# isa %s, %d OpenBLAS threads, best of %d\n", gt_cpu_isa_name(), openblas_get_num_threads(), reps);
        conv_lab(reps);
        return 0;
#else
        fprintf(stderr, "gt_gemm_lab: --conv needs a build with oneDNN\n");
        return 2;
#endif
    }
    printf("# isa %s, %d OpenBLAS threads, best of %d, thread CPU ms (wall ms)\n", gt_cpu_isa_name(),
           openblas_get_num_threads(), reps);
    printf("%-16s %2s %6s %6s %6s | %18s %18s %18s | %6s %6s %5s %5s | %s\n", "shape", "tt", "M", "N", "K",
           "openblas ms", "onednn ms", "route ms", "GF/s", "GF/s", "dnn/ob", "route", "max|d|/max|C|");
    for (size_t s = 0; s < sizeof k_shapes / sizeof *k_shapes; s++) {
        const shape *sh = &k_shapes[s];
        if (only && strncmp(sh->name, only, strlen(only))) continue;
        const int M = sh->M, Nn = sh->N, K = sh->K;
        const size_t na = (size_t)M * K, nb = (size_t)K * Nn, nc = (size_t)M * Nn;
        float *A = malloc(na * 4), *B = malloc(nb * 4), *C0 = malloc(nc * 4), *C[3] = {malloc(nc * 4), malloc(nc * 4), malloc(nc * 4)};
        fill(A, na, 1 + (unsigned)s), fill(B, nb, 7 + (unsigned)s), fill(C0, nc, 3);
        const int lda = sh->ta == CblasTrans ? M : K, ldb = sh->tb == CblasTrans ? K : Nn;
        double best[3] = {1e30, 1e30, 1e30}, wbest[3] = {1e30, 1e30, 1e30};
        static const gt_cpu_prec k_route[3] = {GT_CPU_FP32_OPENBLAS, GT_CPU_FP32_ONEDNN, GT_CPU_FP32};
        for (int r = 0; r < reps + 1; r++) /* rep 0 creates the primitives and warms the caches */
            for (int v = 0; v < 3; v++) {
                memcpy(C[v], C0, nc * 4);
                const double c0 = now(CLOCK_THREAD_CPUTIME_ID), w0 = now(CLOCK_MONOTONIC);
                gt_gemm_prec(k_route[v], GT_GEMM_OTHER, sh->ta, sh->tb, M, Nn, K, 1.0f, A, lda, B, ldb, sh->beta,
                             C[v], Nn);
                const double c1 = now(CLOCK_THREAD_CPUTIME_ID), w1 = now(CLOCK_MONOTONIC);
                if (r && c1 - c0 < best[v]) best[v] = c1 - c0;
                if (r && w1 - w0 < wbest[v]) wbest[v] = w1 - w0;
            }
        if (threads > 1) { /* C[0] <- the route at 1 thread, for the bits */
            memcpy(C[0], C0, nc * 4);
            openblas_set_num_threads(1);
            gt_gemm_prec(GT_CPU_FP32, GT_GEMM_OTHER, sh->ta, sh->tb, M, Nn, K, 1.0f, A, lda, B, ldb, sh->beta, C[0],
                         Nn);
            openblas_set_num_threads(threads);
        }
        double dmax = 0, cmax = 0;
        int same = 1;
        for (size_t i = 0; i < nc; i++) {
            const double d = fabs((double)C[0][i] - C[1][i]), c = fabs((double)C[0][i]);
            if (d > dmax) dmax = d;
            if (c > cmax) cmax = c;
            same &= C[2][i] == C[threads > 1 ? 0 : 2][i];
        }
        const double fl = 2.0 * M * Nn * K;
        printf("%-16s %c%c %6d %6d %6d | %8.3f (%7.3f) %8.3f (%7.3f) %8.3f (%7.3f) | %6.1f %6.1f %5.2f %5.2f | %.1e %s\n",
               sh->name, sh->ta == CblasTrans ? 'T' : 'N', sh->tb == CblasTrans ? 'T' : 'N', M, Nn, K, 1e3 * best[0],
               1e3 * wbest[0], 1e3 * best[1], 1e3 * wbest[1], 1e3 * best[2], 1e3 * wbest[2], fl / best[0] * 1e-9,
               fl / best[1] * 1e-9, best[0] / best[1], wbest[0] / wbest[2], cmax > 0 ? dmax / cmax : 0.0,
               threads > 1 ? (same ? "bits as at 1 thread" : "bits differ from 1 thread") : "");
        fflush(stdout);
        free(A), free(B), free(C0), free(C[0]), free(C[1]), free(C[2]);
    }
    printf("# products: %s\n", gt_gemm_impl(GT_GEMM_OTHER));
    return 0;
}
