/* nn/ops/cpu/lstm.c: LSTM layer forward and (truncated) backward through time.
 * See nn/ops/lstm.h for the maths and the exact gradient TBPTT computes.
 *
 * Batch-major buffers (B,T,*) are used directly by the per-step GEMMs through
 * their leading dimension: the rows of step t are b*T + t, i.e. a (B,n) matrix
 * with row stride T*n, so no transposes or copies are needed.
 *
 * Routes (the one place that picks them): in bf16 on a CPU with bf16 units
 * the layer runs on oneDNN's LSTM primitive (lstm_onednn.h: one primitive run
 * per block of samples and chunk of steps instead of a product per step;
 * measured in docs/benchmarks.md); otherwise, and in fp32, the cell below
 * with its products through gt_gemm. The backward follows the route its
 * forward took (the oneDNN route keeps its gate values itself and leaves c
 * and gates unwritten).
 *
 * Threads (the cell): at one thread the whole batch, products on the calling
 * thread. At more, the recurrence runs in one block of samples per thread of
 * the engine's pool (nn/ops/cpu/parallel.h), each block's input projection,
 * steps and (backward) dx a chain of one-thread products with no join per
 * step; then the weight and bias gradients in slices of gate rows, each
 * summed over all samples in the one-thread order. Measured on 2 Zen 3
 * cores (docs/benchmarks.md, "The LSTM in fp32 on AVX2"): OpenBLAS's own
 * threading of the per-step products (one fork and join per step) cost 1.5x
 * the CPU time of one thread, the blocks 1.15x. Results depend on the thread
 * count through the block split only (fixed for a count: the same bits run
 * to run).
 *
 * Vectorisation: GCC 12 does not vectorise the cell's loops under its
 * default -ftrapping-math (the clamps of gt_expf_poly become branches: the
 * cell ran scalar, ~25 % of an fp32 train step at H = 128). This file is
 * compiled without trapping math (no FP exceptions are ever enabled here);
 * the values are the same IEEE operations, 8 lanes at a time on AVX2. */
#pragma GCC optimize("no-trapping-math")
#include "nn/ops/lstm.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "nn/ops/cpu/gemm.h"
#include "nn/ops/cpu/lstm_onednn.h"
#include "nn/ops/cpu/parallel.h"

/* One row (one sample, one step) of the cell, split on whether a previous
 * state exists so that each loop is branch-free and vectorises. Kept out of
 * line: inlined into the step loop, GCC 12 no longer vectorises it.
 * g (4H) pre-activations in, activated gates out; c, h (H) out; cp (H) c_{t-1}. */
__attribute__((noinline)) static void cell_forward_row(float *restrict g, float *restrict c,
                                                       float *restrict h, const float *restrict cp, int H) {
    if (cp) {
        for (int j = 0; j < H; j++)
            gt_lstm_cell_forward(g + j, g + H + j, g + 2 * H + j, g + 3 * H + j, cp[j], c + j, h + j);
    } else {
        for (int j = 0; j < H; j++)
            gt_lstm_cell_forward(g + j, g + H + j, g + 2 * H + j, g + 3 * H + j, 0.0f, c + j, h + j);
    }
}

/* dg (4H) out; dc (H) in: dL/dc_t via step t+1, out: dL/dc_{t-1}; dh (H) the
 * outside gradient, dhr (H) the recurrent one; g, c, cp as in forward. */
__attribute__((noinline)) static void cell_backward_row(float *restrict dg, float *restrict dc,
                                                        const float *restrict g, const float *restrict c,
                                                        const float *restrict cp, const float *restrict dh,
                                                        const float *restrict dhr, int H) {
    if (cp) {
        for (int j = 0; j < H; j++)
            gt_lstm_cell_backward(dg + j, dg + H + j, dg + 2 * H + j, dg + 3 * H + j, dc + j, g[j], g[H + j],
                                  g[2 * H + j], g[3 * H + j], c[j], cp[j], dh[j] + dhr[j]);
    } else {
        for (int j = 0; j < H; j++)
            gt_lstm_cell_backward(dg + j, dg + H + j, dg + 2 * H + j, dg + 3 * H + j, dc + j, g[j], g[H + j],
                                  g[2 * H + j], g[3 * H + j], c[j], 0.0f, dh[j] + dhr[j]);
    }
}

/* GT_LSTM_IMPL=cell: the cell below in bf16 too (measurements of the two routes side by side) */
static int cell_forced(void) {
    const char *v = getenv("GT_LSTM_IMPL");
    return v && !strcmp(v, "cell");
}

/* One layer's arguments, for the blocks and slices below. */
typedef struct lstm_args {
    float *h, *c, *gates; /* forward outputs */
    const float *x, *w_ih, *w_hh, *b_ih, *b_hh;
    float *dx, *dw_ih, *dw_hh, *db_ih, *db_hh, *dgates, *scratch; /* backward outputs, work */
    const float *dh, *hc, *cc, *gc; /* backward inputs: dL/dh from outside, h, c, gates of the forward */
    int B, T, C, H, K;
    int NB; /* samples per block of the recurrence */
    int GS; /* gate rows (of 4H) per slice of the weight gradients */
} lstm_args;

/* The forward of samples [b0, b0 + n): their rows of every buffer are one
 * contiguous range (batch-major), the steps' rows within it at stride T. */
static void forward_block(const lstm_args *a, int b0, int n) {
    const int T = a->T, C = a->C, H = a->H, G = 4 * H;
    const size_t r0 = (size_t)b0 * T, n_rows = (size_t)n * T;
    float *gates = a->gates + r0 * G, *h = a->h + r0 * H, *c = a->c + r0 * H;
    const float *x = a->x + r0 * C;
    // gates = b_ih + b_hh + x W_ih^T for all steps at once: one GEMM (n*T,C)x(C,4H)
    for (int k = 0; k < G; k++) gates[k] = (a->b_ih ? a->b_ih[k] : 0.0f) + (a->b_hh ? a->b_hh[k] : 0.0f);
    for (size_t r = 1; r < n_rows; r++) memcpy(gates + r * G, gates, (size_t)G * sizeof(float));
    gt_gemm(GT_GEMM_LSTM | GT_GEMM_B_PARAM, CblasNoTrans, CblasTrans, (int)n_rows, G, C, 1.0f, x, C, a->w_ih, C, 1.0f,
            gates, G);
    for (int t = 0; t < T; t++) {
        // gates[:,t] += h[:,t-1] W_hh^T   (n,H)x(H,4H); h_{-1} = 0 (state reset per window)
        if (t > 0)
            gt_gemm(GT_GEMM_LSTM | GT_GEMM_B_PARAM, CblasNoTrans, CblasTrans, n, G, H, 1.0f, h + (size_t)(t - 1) * H,
                    T * H, a->w_hh, H, 1.0f, gates + (size_t)t * G, T * G);
        for (int b = 0; b < n; b++) {
            const size_t r = (size_t)b * T + t;
            // gates (4H) i|f|g|o, c_t, h_t (H), c_{t-1} (H) or none at t = 0
            cell_forward_row(gates + r * G, c + r * H, h + r * H, t > 0 ? c + (r - 1) * H : NULL, H);
        }
    }
}

static int block_len(const lstm_args *a, int task) {
    const int b0 = task * a->NB;
    return a->B - b0 < a->NB ? a->B - b0 : a->NB;
}

static void forward_task(void *ctx, int task, int tid) {
    (void)tid;
    const lstm_args *a = ctx;
    forward_block(a, task * a->NB, block_len(a, task));
}

/* Work split at more than one thread of the engine's pool: the recurrence in
 * one block of samples per thread (each a chain of one-thread products, no
 * join per step), the weight gradients in slices of gate rows (each sums over
 * all samples: no partial sums to add). 0: one thread, the whole batch. */
static int plan_blocks(lstm_args *a) {
    const int nthr = gt_par_threads(), G = 4 * a->H;
    a->NB = a->B;
    a->GS = G;
    if (nthr <= 1 || a->B < 2) return 0;
    a->NB = (a->B + nthr - 1) / nthr;
    a->GS = ((G + nthr - 1) / nthr + 15) / 16 * 16;
    return 1;
}

void gt_lstm_forward(float *h, float *c, float *gates, const float *x, const float *w_ih, const float *w_hh,
                     const float *b_ih, const float *b_hh, int B, int T, int C, int H) {
    GT_ASSERT(B > 0 && T > 0 && C > 0 && H > 0);
    if (!cell_forced() && gt_lstm_onednn_forward(gates, h, x, w_ih, w_hh, b_ih, b_hh, B, T, C, H)) return;
    gt_lstm_onednn_release(gates); /* a backward on these buffers follows this forward's route */
    lstm_args a = {.h = h, .c = c, .gates = gates, .x = x, .w_ih = w_ih, .w_hh = w_hh, .b_ih = b_ih, .b_hh = b_hh,
                   .B = B, .T = T, .C = C, .H = H};
    if (plan_blocks(&a))
        gt_par_for((B + a.NB - 1) / a.NB, forward_task, &a);
    else
        forward_block(&a, 0, B);
}

size_t gt_lstm_scratch_elems(int B, int H) { return 2 * (size_t)B * H + 4 * (size_t)H; }

/* The backward through time of samples [b0, b0 + n) (dgates of their rows,
 * their slices of the running dL/dh, dL/dc in scratch), then their rows of dx. */
static void backward_block(const lstm_args *a, int b0, int n) {
    const int T = a->T, C = a->C, H = a->H, G = 4 * H, K = a->K;
    const size_t r0 = (size_t)b0 * T;
    float *dh_rec = a->scratch + (size_t)b0 * H; // (n,H) dL/dh_t through h_t's use at step t+1
    float *dc_rec = a->scratch + ((size_t)a->B + b0) * H; // (n,H) dL/dc_t through c_t's use at step t+1
    float *dgates = a->dgates + r0 * G;
    const float *gates = a->gc + r0 * G, *c = a->cc + r0 * H, *dh = a->dh + r0 * H;
    for (int t = T - 1; t >= 0; t--) {
        // last step of a chunk: nothing flows back from the next chunk (its
        // initial state is a constant), nor from beyond the window
        if (t == T - 1 || (t + 1) % K == 0) {
            memset(dh_rec, 0, (size_t)n * H * sizeof(float));
            memset(dc_rec, 0, (size_t)n * H * sizeof(float));
        }
        for (int b = 0; b < n; b++) {
            const size_t r = (size_t)b * T + t;
            cell_backward_row(dgates + r * G, dc_rec + (size_t)b * H, gates + r * G, c + r * H,
                              t > 0 ? c + (r - 1) * H : NULL, dh + r * H, dh_rec + (size_t)b * H, H);
        }
        // dL/dh_{t-1} through the recurrence, unless t starts a chunk (or the window)
        if (t % K != 0)
            gt_gemm(GT_GEMM_LSTM | GT_GEMM_B_PARAM, CblasNoTrans, CblasNoTrans, n, H, G, 1.0f, dgates + (size_t)t * G,
                    T * G, a->w_hh, H, 0.0f, dh_rec, H);
    }
    // dx = dA W_ih   (n*T,4H)x(4H,C)
    if (a->dx)
        gt_gemm(GT_GEMM_LSTM | GT_GEMM_B_PARAM, CblasNoTrans, CblasNoTrans, n * T, C, G, 1.0f, dgates, G, a->w_ih, C,
                0.0f, a->dx + r0 * C, C);
}

/* Gate rows [g0, g0 + gn) of the parameter gradients, summed over all steps
 * and samples (each element in the same order whatever the slice). */
static void weight_grads(const lstm_args *a, int g0, int gn) {
    const int B = a->B, T = a->T, C = a->C, H = a->H, G = 4 * H;
    const size_t n_rows = (size_t)B * T;
    const float *dgates = a->dgates + g0;
    // dW_hh += sum_{b, t>=1} dA[b,t]^T h[b,t-1]   (h_{-1} = 0 adds nothing)
    if (T > 1)
        for (int b = 0; b < B; b++)
            gt_gemm(GT_GEMM_LSTM, CblasTrans, CblasNoTrans, gn, H, T - 1, 1.0f, dgates + ((size_t)b * T + 1) * G, G,
                    a->hc + (size_t)b * T * H, H, 1.0f, a->dw_hh + (size_t)g0 * H, H);
    // dW_ih += dA^T x   (4H,B*T)x(B*T,C)
    gt_gemm(GT_GEMM_LSTM, CblasTrans, CblasNoTrans, gn, C, (int)n_rows, 1.0f, dgates, G, a->x, C, 1.0f,
            a->dw_ih + (size_t)g0 * C, C);
    // db_ih += sum_rows dA, db_hh += the same
    if (a->db_ih || a->db_hh) {
        float *dbias = a->scratch + 2 * (size_t)B * H + g0; // (gn) sum over rows of dA
        memset(dbias, 0, (size_t)gn * sizeof(float));
        for (size_t r = 0; r < n_rows; r++) {
            const float *dg = dgates + r * G;
            for (int k = 0; k < gn; k++) dbias[k] += dg[k];
        }
        for (int k = 0; k < gn; k++) {
            if (a->db_ih) a->db_ih[g0 + k] += dbias[k];
            if (a->db_hh) a->db_hh[g0 + k] += dbias[k];
        }
    }
}

static void backward_task(void *ctx, int task, int tid) {
    (void)tid;
    const lstm_args *a = ctx;
    backward_block(a, task * a->NB, block_len(a, task));
}

static void weight_grads_task(void *ctx, int task, int tid) {
    (void)tid;
    const lstm_args *a = ctx;
    const int g0 = task * a->GS, G = 4 * a->H;
    weight_grads(a, g0, G - g0 < a->GS ? G - g0 : a->GS);
}

void gt_lstm_backward(float *dx, float *dw_ih, float *dw_hh, float *db_ih, float *db_hh, float *dgates,
                      float *scratch, const float *dh, const float *x, const float *w_ih, const float *w_hh,
                      const float *h, const float *c, const float *gates, int B, int T, int C, int H, int K) {
    GT_ASSERT(B > 0 && T > 0 && C > 0 && H > 0);
    if (gt_lstm_onednn_backward(gates, dx, dw_ih, dw_hh, db_ih, db_hh, dh, x, w_ih, w_hh, h, B, T, C, H, K)) return;
    lstm_args a = {.x = x, .w_ih = w_ih, .w_hh = w_hh, .dx = dx, .dw_ih = dw_ih, .dw_hh = dw_hh, .db_ih = db_ih,
                   .db_hh = db_hh, .dgates = dgates, .scratch = scratch, .dh = dh, .hc = h, .cc = c, .gc = gates,
                   .B = B, .T = T, .C = C, .H = H, .K = K <= 0 || K > T ? T : K};
    if (plan_blocks(&a)) {
        gt_par_for((B + a.NB - 1) / a.NB, backward_task, &a);
        gt_par_for((4 * H + a.GS - 1) / a.GS, weight_grads_task, &a);
    } else {
        backward_block(&a, 0, B);
        weight_grads(&a, 0, 4 * H);
    }
}

void gt_lstm_release(const float *gates) { gt_lstm_onednn_release(gates); }
