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

void gt_lstm_forward(float *h, float *c, float *gates, const float *x, const float *w_ih, const float *w_hh,
                     const float *b_ih, const float *b_hh, int B, int T, int C, int H) {
    GT_ASSERT(B > 0 && T > 0 && C > 0 && H > 0);
    if (!cell_forced() && gt_lstm_onednn_forward(gates, h, x, w_ih, w_hh, b_ih, b_hh, B, T, C, H)) return;
    gt_lstm_onednn_release(gates); /* a backward on these buffers follows this forward's route */
    const int G = 4 * H;
    const size_t n_rows = (size_t)B * T;
    // gates = b_ih + b_hh + x W_ih^T for all steps at once: one GEMM (B*T,C)x(C,4H)
    for (int k = 0; k < G; k++) gates[k] = (b_ih ? b_ih[k] : 0.0f) + (b_hh ? b_hh[k] : 0.0f);
    for (size_t r = 1; r < n_rows; r++) memcpy(gates + r * G, gates, (size_t)G * sizeof(float));
    gt_gemm(GT_GEMM_LSTM | GT_GEMM_B_PARAM, CblasNoTrans, CblasTrans, (int)n_rows, G, C, 1.0f, x, C, w_ih, C, 1.0f, gates,
                G);
    for (int t = 0; t < T; t++) {
        // gates[:,t] += h[:,t-1] W_hh^T   (B,H)x(H,4H); h_{-1} = 0 (state reset per window)
        if (t > 0)
            gt_gemm(GT_GEMM_LSTM | GT_GEMM_B_PARAM, CblasNoTrans, CblasTrans, B, G, H, 1.0f, h + (size_t)(t - 1) * H,
                        T * H, w_hh, H, 1.0f, gates + (size_t)t * G, T * G);
        for (int b = 0; b < B; b++) {
            const size_t r = (size_t)b * T + t;
            // gates (4H) i|f|g|o, c_t, h_t (H), c_{t-1} (H) or none at t = 0
            cell_forward_row(gates + r * G, c + r * H, h + r * H, t > 0 ? c + (r - 1) * H : NULL, H);
        }
    }
}

size_t gt_lstm_scratch_elems(int B, int H) { return 2 * (size_t)B * H + 4 * (size_t)H; }

void gt_lstm_backward(float *dx, float *dw_ih, float *dw_hh, float *db_ih, float *db_hh, float *dgates,
                      float *scratch, const float *dh, const float *x, const float *w_ih, const float *w_hh,
                      const float *h, const float *c, const float *gates, int B, int T, int C, int H, int K) {
    GT_ASSERT(B > 0 && T > 0 && C > 0 && H > 0);
    if (gt_lstm_onednn_backward(gates, dx, dw_ih, dw_hh, db_ih, db_hh, dh, x, w_ih, w_hh, h, B, T, C, H, K)) return;
    const int G = 4 * H;
    const size_t n_rows = (size_t)B * T;
    if (K <= 0 || K > T) K = T;
    float *dh_rec = scratch; // (B,H) dL/dh_t through h_t's use at step t+1
    float *dc_rec = scratch + (size_t)B * H; // (B,H) dL/dc_t through c_t's use at step t+1
    float *dbias = dc_rec + (size_t)B * H; // (4H) sum over rows of dA

    for (int t = T - 1; t >= 0; t--) {
        // last step of a chunk: nothing flows back from the next chunk (its
        // initial state is a constant), nor from beyond the window
        if (t == T - 1 || (t + 1) % K == 0) {
            memset(dh_rec, 0, (size_t)B * H * sizeof(float));
            memset(dc_rec, 0, (size_t)B * H * sizeof(float));
        }
        for (int b = 0; b < B; b++) {
            const size_t r = (size_t)b * T + t;
            cell_backward_row(dgates + r * G, dc_rec + (size_t)b * H, gates + r * G, c + r * H,
                              t > 0 ? c + (r - 1) * H : NULL, dh + r * H, dh_rec + (size_t)b * H, H);
        }
        // dL/dh_{t-1} through the recurrence, unless t starts a chunk (or the window)
        if (t % K != 0)
            gt_gemm(GT_GEMM_LSTM | GT_GEMM_B_PARAM, CblasNoTrans, CblasNoTrans, B, H, G, 1.0f, dgates + (size_t)t * G,
                        T * G, w_hh, H, 0.0f, dh_rec, H);
    }
    // parameter gradients for all steps at once
    // dW_hh += sum_{b, t>=1} dA[b,t]^T h[b,t-1]   (h_{-1} = 0 adds nothing)
    if (T > 1)
        for (int b = 0; b < B; b++)
            gt_gemm(GT_GEMM_LSTM, CblasTrans, CblasNoTrans, G, H, T - 1, 1.0f,
                        dgates + ((size_t)b * T + 1) * G, G, h + (size_t)b * T * H, H, 1.0f, dw_hh, H);
    // dW_ih += dA^T x   (4H,B*T)x(B*T,C)
    gt_gemm(GT_GEMM_LSTM, CblasTrans, CblasNoTrans, G, C, (int)n_rows, 1.0f, dgates, G, x, C, 1.0f,
                dw_ih, C);
    // db_ih += sum_rows dA, db_hh += the same
    if (db_ih || db_hh) {
        memset(dbias, 0, (size_t)G * sizeof(float));
        for (size_t r = 0; r < n_rows; r++) {
            const float *dg = dgates + r * G;
            for (int k = 0; k < G; k++) dbias[k] += dg[k];
        }
        for (int k = 0; k < G; k++) {
            if (db_ih) db_ih[k] += dbias[k];
            if (db_hh) db_hh[k] += dbias[k];
        }
    }
    // dx = dA W_ih   (B*T,4H)x(4H,C)
    if (dx)
        gt_gemm(GT_GEMM_LSTM | GT_GEMM_B_PARAM, CblasNoTrans, CblasNoTrans, (int)n_rows, C, G, 1.0f, dgates, G, w_ih, C,
                    0.0f, dx, C);
}

void gt_lstm_release(const float *gates) { gt_lstm_onednn_release(gates); }
