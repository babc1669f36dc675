// nn/ops/cuda/lstm.cu: one LSTM layer over a window on the GPU, twin of
// nn/ops/cpu/lstm.c (same maths: gt_lstm_cell_forward/backward from
// nn/ops/lstm.h; same truncated-BPTT gradient).
//
// Forward: gates = b_ih + b_hh + x W_ih^T for all steps (one GEMM), then per
// step one GEMM gates[:,t] += h[:,t-1] W_hh^T over the (B,4H) rows of step t
// (row stride T*4H, no copies) and one fused cell kernel over B*H elements.
// Backward: per step (reverse) one fused cell-backward kernel and one GEMM for
// dL/dh_{t-1} through the recurrence (skipped at chunk starts: TBPTT), then
// the parameter gradients for all steps at once (three GEMMs and two column
// sums). State reset per window: h_{-1} = c_{-1} = 0 in every call.
#include "nn/ops/cuda/common.cuh"
#include "nn/ops/lstm.h"

__global__ void k_lstm_bias(float *gates, const float *b_ih, const float *b_hh, size_t rows, int G) {
    const size_t n = rows * G;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        int k = (int)(i % G);
        gates[i] = (b_ih ? b_ih[k] : 0.0f) + (b_hh ? b_hh[k] : 0.0f);
    }
}

// step t: for (b, j) in B x H
__global__ void k_lstm_cell_fwd(float *h, float *c, float *gates, int B, int T, int H, int t) {
    const int n = B * H;
    for (int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < n; idx += gridDim.x * blockDim.x) {
        const int b = idx / H, j = idx % H;
        const size_t r = (size_t)b * T + t;
        float *g = gates + r * 4 * H;
        const float cp = t > 0 ? c[(r - 1) * H + j] : 0.0f;
        gt_lstm_cell_forward(g + j, g + H + j, g + 2 * H + j, g + 3 * H + j, cp, c + r * H + j, h + r * H + j);
    }
}

// step t backward: dgates row (b,t); dc (B,H) in/out; dh outside, dhr recurrent
__global__ void k_lstm_cell_bwd(float *dgates, float *dc, const float *gates, const float *c, const float *dh,
                                const float *dhr, int B, int T, int H, int t) {
    const int n = B * H;
    for (int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < n; idx += gridDim.x * blockDim.x) {
        const int b = idx / H, j = idx % H;
        const size_t r = (size_t)b * T + t;
        const float *g = gates + r * 4 * H;
        float *dg = dgates + r * 4 * H;
        const float cp = t > 0 ? c[(r - 1) * H + j] : 0.0f;
        float dcv = dc[idx];
        gt_lstm_cell_backward(dg + j, dg + H + j, dg + 2 * H + j, dg + 3 * H + j, &dcv, g[j], g[H + j],
                              g[2 * H + j], g[3 * H + j], c[r * H + j], cp, dh[r * H + j] + dhr[idx]);
        dc[idx] = dcv;
    }
}

// hprev (B,T,H): hprev[b,t] = h[b,t-1], 0 at t = 0
__global__ void k_lstm_shift(float *hprev, const float *h, int B, int T, int H) {
    const size_t n = (size_t)B * T * H;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        int t = (int)((i / H) % T);
        hprev[i] = t > 0 ? h[i - H] : 0.0f;
    }
}

extern "C" void gt_lstm_forward_cuda(float *h, float *c, float *gates, const float *x, const float *w_ih,
                                     const float *w_hh, const float *b_ih, const float *b_hh, int B, int T, int C,
                                     int H, cudaStream_t st) {
    GT_CHECK(B > 0 && T > 0 && C > 0 && H > 0, GT_EXIT_USAGE, "lstm (CUDA): bad shape B=%d T=%d C=%d H=%d", B, T,
             C, H);
    const int G = 4 * H;
    const size_t rows = (size_t)B * T;
    k_lstm_bias<<<gt_grid_1d(rows * G, 256), 256, 0, st>>>(gates, b_ih, b_hh, rows, G);
    GT_CUDA_LAUNCH_CHECK();
    gt_cuda_gemm(st, false, true, (int)rows, G, C, 1.0f, x, C, w_ih, C, 1.0f, gates, G);
    const unsigned cg = gt_grid_1d((size_t)B * H, 128);
    for (int t = 0; t < T; t++) {
        if (t > 0)
            gt_cuda_gemm(st, false, true, B, G, H, 1.0f, h + (size_t)(t - 1) * H, T * H, w_hh, H, 1.0f,
                         gates + (size_t)t * G, T * G);
        k_lstm_cell_fwd<<<cg, 128, 0, st>>>(h, c, gates, B, T, H, t);
        GT_CUDA_LAUNCH_CHECK();
    }
}

extern "C" size_t gt_lstm_cuda_scratch_elems(int B, int T, int H) { return gt_lstm_cuda_scratch_size(B, T, H); }

extern "C" void gt_lstm_backward_cuda(float *dx, float *dw_ih, float *dw_hh, float *db_ih, float *db_hh,
                                      float *dgates, float *scratch, const float *dh, const float *x,
                                      const float *w_ih, const float *w_hh, const float *h, const float *c,
                                      const float *gates, int B, int T, int C, int H, int K, cudaStream_t st) {
    GT_CHECK(B > 0 && T > 0 && C > 0 && H > 0, GT_EXIT_USAGE, "lstm (CUDA): bad shape B=%d T=%d C=%d H=%d", B, T,
             C, H);
    const int G = 4 * H;
    const size_t rows = (size_t)B * T;
    if (K <= 0 || K > T) K = T;
    float *dh_rec = scratch;                   // (B,H)
    float *dc_rec = scratch + (size_t)B * H;   // (B,H)
    float *hprev = dc_rec + (size_t)B * H;     // (B,T,H)
    const unsigned cg = gt_grid_1d((size_t)B * H, 128);
    for (int t = T - 1; t >= 0; t--) {
        if (t == T - 1 || (t + 1) % K == 0) { // chunk end: nothing flows back from the next chunk
            CUDA_CHECK(cudaMemsetAsync(dh_rec, 0, 2 * (size_t)B * H * sizeof(float), st));
        }
        k_lstm_cell_bwd<<<cg, 128, 0, st>>>(dgates, dc_rec, gates, c, dh, dh_rec, B, T, H, t);
        GT_CUDA_LAUNCH_CHECK();
        if (t % K != 0) // dL/dh_{t-1} = dA_t W_hh  (B,4H)x(4H,H)
            gt_cuda_gemm(st, false, false, B, H, G, 1.0f, dgates + (size_t)t * G, T * G, w_hh, H, 0.0f, dh_rec, H);
    }
    // dW_hh += sum_{b,t} dA[b,t]^T h[b,t-1]  (h_{-1} = 0): one GEMM on the shifted copy
    k_lstm_shift<<<gt_grid_1d(rows * H, 256), 256, 0, st>>>(hprev, h, B, T, H);
    GT_CUDA_LAUNCH_CHECK();
    gt_cuda_gemm(st, true, false, G, H, (int)rows, 1.0f, dgates, G, hprev, H, 1.0f, dw_hh, H);
    // dW_ih += dA^T x
    gt_cuda_gemm(st, true, false, G, C, (int)rows, 1.0f, dgates, G, x, C, 1.0f, dw_ih, C);
    if (db_ih) gt_sum_rows_acc_cuda(db_ih, dgates, rows, G, st);
    if (db_hh) gt_sum_rows_acc_cuda(db_hh, dgates, rows, G, st);
    if (dx) gt_cuda_gemm(st, false, false, (int)rows, C, G, 1.0f, dgates, G, w_ih, C, 0.0f, dx, C);
}
