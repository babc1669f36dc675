// nn/ops/cuda/dense.cu: linear, conv1d, activations, LayerNorm and small
// elementwise helpers on the GPU (twins of nn/ops/cpu/*.c).
#include <cuda_bf16.h>

#include "nn/ops/cuda/common.cuh"
#include "nn/ops/dropout.h"
#include "nn/ops/elementwise.h"

// ------------------------------------------------------------- elementwise --
__global__ void k_bias_act(float *out, const float *b, size_t N, int OC, int relu) {
    size_t n = N * (size_t)OC;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float v = out[i] + (b ? b[i % OC] : 0.0f);
        out[i] = relu ? gt_relu(v) : v;
    }
}

__global__ void k_relu_fwd(float *out, const float *inp, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = gt_relu(inp[i]);
}
__global__ void k_relu_bwd(float *dinp, const float *dout, const float *out, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dinp[i] = gt_relu_grad_from_out(out[i], dout[i]);
}
// inverted dropout (nn/ops/dropout.h): the per-element math the CPU runs
__global__ void k_dropout(float *out, const float *inp, const uint64_t *base, size_t N, int C, uint32_t thr,
                          float scale) {
    size_t n = N * (size_t)C;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = inp[i] * gt_dropout_factor(base[i / C], (uint64_t)(i % C), thr, scale);
}
__global__ void k_gelu_fwd(float *out, const float *inp, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = gt_gelu(inp[i]);
}
__global__ void k_gelu_bwd(float *dinp, const float *dout, const float *inp, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dinp[i] = __fmul_rn(dout[i], gt_gelu_grad(inp[i]));
}
// bf16-kept GELU inputs (the bits of __nv_bfloat16, as uint16_t in the C API)
__global__ void k_gelu_fwd_keep(float *out, __nv_bfloat16 *keep, const float *inp, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float v = inp[i];
        keep[i] = __float2bfloat16_rn(v);
        out[i] = gt_gelu(v);
    }
}
__global__ void k_gelu_fwd_bf16(float *out, const __nv_bfloat16 *inp, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = gt_gelu(__bfloat162float(inp[i]));
}
__global__ void k_gelu_bwd_bf16(float *dinp, const float *dout, const __nv_bfloat16 *inp, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dinp[i] = __fmul_rn(dout[i], gt_gelu_grad(__bfloat162float(inp[i])));
}
__global__ void k_add(float *out, const float *a, const float *b, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = a[i] + b[i];
}
__global__ void k_add_bcast(float *out, const float *a, const float *b, size_t R, size_t n) {
    size_t tot = R * n;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < tot; i += (size_t)gridDim.x * blockDim.x)
        out[i] = a[i] + b[i % n];
}
__global__ void k_gather_rows(float *dst, size_t dst_stride, const float *src, size_t src_stride, size_t R,
                              size_t n) {
    size_t tot = R * n;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < tot; i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / n, j = i % n;
        dst[r * dst_stride + j] = src[r * src_stride + j];
    }
}

// Column sums in a fixed order (no atomics: a step is bit-identical run to
// run, so a resumed GPU run matches an uninterrupted one). Block (32, 8):
// x over columns, y over rows; grid.y splits the rows into gy stripes. Each
// block sums its rows per column (thread y: rows y, y + 8 gy, ..., then the
// 8 partials in order) and either adds the result to db (gy = 1: one block
// per column) or writes it to part[blockIdx.y][col]; k_colsum_fin then adds
// the gy partials in order.
//   MODE_PLAIN: v = a, masked by relu(out) when out != NULL (written to
//               `masked` when != NULL: the linear layer's masked dout);
//   MODE_XHAT:  v = a * (x - mean[r]) * rstd[r] (LayerNorm's weight gradient);
//   MODE_GELU:  v = a * GELU'(pre) with pre = (const float *)out, written to
//               `masked` (k_gelu_bwd's product, then the linear layer's bias
//               gradient: one pass instead of two);
//   MODE_GELU_BF16: the same with pre the bf16 bits kept by the forward.
// The products are __fmul_rn: never contracted into the sum, so v and the
// sums are the bits of the unfused kernels.
enum { MODE_PLAIN = 0, MODE_XHAT = 1, MODE_GELU = 2, MODE_GELU_BF16 = 3 };
template <int MODE>
__global__ void k_colsum(float *db, float *part, const float *a, const void *out_, float *masked, const float *x,
                         const float *mean, const float *rstd, size_t R, int n) {
    const float *out = (const float *)out_;
    __shared__ float sh[8][33];
    const int col = blockIdx.x * 32 + threadIdx.x;
    float acc = 0.0f;
    if (col < n) {
        for (size_t r = blockIdx.y * 8 + threadIdx.y; r < R; r += (size_t)gridDim.y * 8) {
            size_t i = r * (size_t)n + col;
            float v = a[i];
            if (MODE == MODE_PLAIN) {
                if (out) v = gt_relu_grad_from_out(out[i], v);
                if (masked) masked[i] = v;
            } else if (MODE == MODE_GELU) {
                v = __fmul_rn(v, gt_gelu_grad(out[i]));
                masked[i] = v;
            } else if (MODE == MODE_GELU_BF16) {
                v = __fmul_rn(v, gt_gelu_grad(__bfloat162float(((const __nv_bfloat16 *)out_)[i])));
                masked[i] = v;
            } else {
                v *= (x[i] - mean[r]) * rstd[r];
            }
            acc += v;
        }
    }
    sh[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && col < n && db) {
        float s = 0.0f;
        for (int k = 0; k < 8; k++) s += sh[k][threadIdx.x];
        if (gridDim.y == 1) db[col] += s;
        else part[(size_t)blockIdx.y * n + col] = s;
    }
}

__global__ void k_colsum_fin(float *db, const float *part, int gy, int n) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= n) return;
    float s = 0.0f;
    for (int k = 0; k < gy; k++) s += part[(size_t)k * n + col];
    db[col] += s;
}

// The grid: gx = ceil(n / 32) column blocks, gy ~ R / 64 row stripes, at most
// 1056 blocks in all when gy > 1 (so gy x n <= GT_CUDA_COL_PARTS): a function
// of (R, n) only, never of the device, so the sums are the same on any GPU.
template <int MODE>
static void colsum_run(float *db, const float *a, const void *out, float *masked, const float *x,
                       const float *mean, const float *rstd, size_t R, int n, cudaStream_t st) {
    dim3 blk(32, 8);
    unsigned gx = gt_cdiv((size_t)n, 32);
    size_t gy = (R + 63) / 64; // ~64 rows per block
    unsigned max_gy = gx >= 264 ? 1u : (unsigned)(264 * 4 / gx);
    if (gy > max_gy) gy = max_gy;
    if (gy < 1 || !db) gy = 1;
    float *part = gy > 1 ? gt_cuda_col_partials(st) : nullptr;
    k_colsum<MODE><<<dim3(gx, (unsigned)gy), blk, 0, st>>>(db, part, a, out, masked, x, mean, rstd, R, n);
    GT_CUDA_LAUNCH_CHECK();
    if (gy > 1) {
        k_colsum_fin<<<gt_cdiv((size_t)n, 256), 256, 0, st>>>(db, part, (int)gy, n);
        GT_CUDA_LAUNCH_CHECK();
    }
}

// db (n) += column sums of a (R,n); optionally masks a by relu(out) and writes
// the masked values to `masked` on the way.
static void colsum(float *db, const float *a, const float *out, float *masked, size_t R, int n,
                   cudaStream_t st) {
    colsum_run<MODE_PLAIN>(db, a, out, masked, nullptr, nullptr, nullptr, R, n, st);
}

extern "C" void gt_relu_forward_cuda(float *out, const float *inp, size_t n, cudaStream_t st) {
    if (!n) return;
    k_relu_fwd<<<gt_grid_1d(n, 256), 256, 0, st>>>(out, inp, n);
    GT_CUDA_LAUNCH_CHECK();
}
extern "C" void gt_relu_backward_cuda(float *dinp, const float *dout, const float *out, size_t n,
                                      cudaStream_t st) {
    if (!n) return;
    k_relu_bwd<<<gt_grid_1d(n, 256), 256, 0, st>>>(dinp, dout, out, n);
    GT_CUDA_LAUNCH_CHECK();
}
extern "C" void gt_gelu_forward_cuda(float *out, const float *inp, size_t n, cudaStream_t st) {
    if (!n) return;
    k_gelu_fwd<<<gt_grid_1d(n, 256), 256, 0, st>>>(out, inp, n);
    GT_CUDA_LAUNCH_CHECK();
}
extern "C" void gt_gelu_forward_keep_bf16_cuda(float *out, uint16_t *keep, const float *inp, size_t n,
                                               cudaStream_t st) {
    if (!n) return;
    k_gelu_fwd_keep<<<gt_grid_1d(n, 256), 256, 0, st>>>(out, (__nv_bfloat16 *)keep, inp, n);
    GT_CUDA_LAUNCH_CHECK();
}
extern "C" void gt_gelu_forward_from_bf16_cuda(float *out, const uint16_t *inp, size_t n, cudaStream_t st) {
    if (!n) return;
    k_gelu_fwd_bf16<<<gt_grid_1d(n, 256), 256, 0, st>>>(out, (const __nv_bfloat16 *)inp, n);
    GT_CUDA_LAUNCH_CHECK();
}
extern "C" void gt_gelu_backward_from_bf16_cuda(float *dinp, const float *dout, const uint16_t *inp, size_t n,
                                                cudaStream_t st) {
    if (!n) return;
    k_gelu_bwd_bf16<<<gt_grid_1d(n, 256), 256, 0, st>>>(dinp, dout, (const __nv_bfloat16 *)inp, n);
    GT_CUDA_LAUNCH_CHECK();
}
extern "C" void gt_gelu_backward_cuda(float *dinp, const float *dout, const float *inp, size_t n,
                                      cudaStream_t st) {
    if (!n) return;
    k_gelu_bwd<<<gt_grid_1d(n, 256), 256, 0, st>>>(dinp, dout, inp, n);
    GT_CUDA_LAUNCH_CHECK();
}
extern "C" void gt_dropout_apply_cuda(float *out, const float *inp, const uint64_t *base, int N, int C,
                                      uint32_t thr, float scale, cudaStream_t st) {
    size_t n = (size_t)N * (size_t)C;
    if (!n) return;
    k_dropout<<<gt_grid_1d(n, 256), 256, 0, st>>>(out, inp, base, (size_t)N, C, thr, scale);
    GT_CUDA_LAUNCH_CHECK();
}
extern "C" void gt_add_cuda(float *out, const float *a, const float *b, size_t n, cudaStream_t st) {
    if (!n) return;
    k_add<<<gt_grid_1d(n, 256), 256, 0, st>>>(out, a, b, n);
    GT_CUDA_LAUNCH_CHECK();
}
extern "C" void gt_add_bcast_cuda(float *out, const float *a, const float *b, size_t R, size_t n,
                                  cudaStream_t st) {
    if (!R || !n) return;
    k_add_bcast<<<gt_grid_1d(R * n, 256), 256, 0, st>>>(out, a, b, R, n);
    GT_CUDA_LAUNCH_CHECK();
}
extern "C" void gt_sum_rows_acc_cuda(float *db, const float *a, size_t R, size_t n, cudaStream_t st) {
    if (!R || !n) return;
    colsum(db, a, nullptr, nullptr, R, (int)n, st);
}
extern "C" void gt_gather_rows_cuda(float *dst, size_t dst_stride, const float *src, size_t src_stride, size_t R,
                                    size_t n, cudaStream_t st) {
    if (!R || !n) return;
    k_gather_rows<<<gt_grid_1d(R * n, 256), 256, 0, st>>>(dst, dst_stride, src, src_stride, R, n);
    GT_CUDA_LAUNCH_CHECK();
}

// ------------------------------------------------------------------ linear --
extern "C" void gt_linear_forward_cuda(float *out, const float *inp, const float *w, const float *b, int N, int C,
                                       int OC, gt_act act, cudaStream_t st) {
    // out (N,OC) = inp (N,C) @ w^T
    gt_cuda_gemm(st, false, true, N, OC, C, 1.0f, inp, C, w, C, 0.0f, out, OC);
    if (b || act == GT_ACT_RELU) {
        size_t n = (size_t)N * OC;
        k_bias_act<<<gt_grid_1d(n, 256), 256, 0, st>>>(out, b, (size_t)N, OC, act == GT_ACT_RELU);
        GT_CUDA_LAUNCH_CHECK();
    }
}

extern "C" void gt_linear_backward_cuda(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                                        const float *w, const float *out, float *scratch, int N, int C, int OC,
                                        gt_act act, cudaStream_t st) {
    const float *dz = dout; // (N,OC)
    if (act == GT_ACT_RELU) {
        // one pass: scratch = dout * (out > 0), db += column sums
        colsum(db, dout, out, scratch, (size_t)N, OC, st);
        dz = scratch;
    } else if (db) {
        colsum(db, dout, nullptr, nullptr, (size_t)N, OC, st);
    }
    // dw (OC,C) += dz^T (OC,N) @ inp (N,C)
    gt_cuda_gemm(st, true, false, OC, C, N, 1.0f, dz, OC, inp, C, 1.0f, dw, C);
    // dinp (N,C) = dz (N,OC) @ w (OC,C)
    if (dinp) gt_cuda_gemm(st, false, false, N, C, OC, 1.0f, dz, OC, w, C, 0.0f, dinp, C);
}

// s2p_tf's fc1: dz = dout * GELU'(pre) in place and db += its column sums in
// one pass, then the two GEMMs (as gt_linear_backward_cuda).
extern "C" void gt_linear_backward_gelu_cuda(float *dinp, float *dw, float *db, float *dout, const float *inp,
                                             const float *w, const float *pre, const uint16_t *pre_bf16, int N,
                                             int C, int OC, cudaStream_t st) {
    if (N <= 0) return;
    if (pre)
        colsum_run<MODE_GELU>(db, dout, pre, dout, nullptr, nullptr, nullptr, (size_t)N, OC, st);
    else
        colsum_run<MODE_GELU_BF16>(db, dout, pre_bf16, dout, nullptr, nullptr, nullptr, (size_t)N, OC, st);
    gt_cuda_gemm(st, true, false, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dw, C);
    if (dinp) gt_cuda_gemm(st, false, false, N, C, OC, 1.0f, dout, OC, w, C, 0.0f, dinp, C);
}

// pre (N,OC) += bias; out = GELU(pre); with keep the pre-activation is kept in
// bf16 instead (pre is then scratch and may be out). k_bias_act's add, then
// k_gelu_fwd / k_gelu_fwd_keep's math: the same bits in one pass.
__global__ void k_bias_gelu(float *out, float *pre, __nv_bfloat16 *keep, const float *bias, size_t N, int OC) {
    size_t n = N * (size_t)OC;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float v = pre[i] + (bias ? bias[i % OC] : 0.0f);
        if (keep) keep[i] = __float2bfloat16_rn(v);
        else pre[i] = v;
        out[i] = gt_gelu(v);
    }
}
extern "C" void gt_bias_gelu_forward_cuda(float *out, float *pre, uint16_t *keep, const float *bias, size_t N,
                                          int OC, cudaStream_t st) {
    size_t n = N * (size_t)OC;
    if (!n) return;
    k_bias_gelu<<<gt_grid_1d(n, 256), 256, 0, st>>>(out, pre, (__nv_bfloat16 *)keep, bias, N, OC);
    GT_CUDA_LAUNCH_CHECK();
}

// ------------------------------------------------------------------ conv1d --
extern "C" size_t gt_conv1d_cuda_scratch_elems(int IC, int OC, int W, int K) {
    return gt_conv1d_cuda_scratch_size(IC, OC, W, K);
}

// col (IC*K, nb*W): col[(ic*K+k), j*W + t] = inp[b0+j, ic, t + k - pad_l] (0 outside)
__global__ void k_im2col(float *col, const float *inp, int nb, int IC, int W, int K) {
    const size_t ld = (size_t)nb * W, n = (size_t)IC * K * ld;
    const int pad_l = (K - 1) / 2;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        size_t row = i / ld, cidx = i % ld;
        int ic = (int)(row / K), k = (int)(row % K);
        int j = (int)(cidx / W), t = (int)(cidx % W);
        int s = t + k - pad_l;
        col[i] = (s >= 0 && s < W) ? inp[((size_t)j * IC + ic) * W + s] : 0.0f;
    }
}

// dinp[j, ic, s] = sum_k dcol[(ic*K+k), j*W + (s - k + pad_l)]   (gather, no atomics)
__global__ void k_col2im(float *dinp, const float *dcol, int nb, int IC, int W, int K) {
    const size_t ld = (size_t)nb * W, n = (size_t)nb * IC * W;
    const int pad_l = (K - 1) / 2;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        int s = (int)(i % W);
        size_t r = i / W;
        int ic = (int)(r % IC), j = (int)(r / IC);
        float acc = 0.0f;
        for (int k = 0; k < K; k++) {
            int t = s - k + pad_l;
            if (t >= 0 && t < W) acc += dcol[((size_t)ic * K + k) * ld + (size_t)j * W + t];
        }
        dinp[i] = acc;
    }
}

// dz (OC, nb*W) <- masked dout (nb, OC, W); db[oc] += sum (one block per oc).
__global__ void k_conv_dz(float *dz, float *db, const float *dout, const float *out, int nb, int OC, int W) {
    const int oc = blockIdx.x;
    const size_t ld = (size_t)nb * W;
    float acc = 0.0f;
    for (size_t c = threadIdx.x; c < ld; c += blockDim.x) {
        int j = (int)(c / W), t = (int)(c % W);
        size_t o = ((size_t)j * OC + oc) * W + t;
        float v = out ? gt_relu_grad_from_out(out[o], dout[o]) : dout[o];
        dz[(size_t)oc * ld + c] = v;
        acc += v;
    }
    acc = gt_block_sum(acc);
    if (threadIdx.x == 0 && db) db[oc] += acc;
}

__global__ void k_conv_bias_act(float *out, const float *b, size_t n, int OC, int W, int relu) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float v = out[i] + (b ? b[(i / W) % OC] : 0.0f);
        out[i] = relu ? gt_relu(v) : v;
    }
}

extern "C" void gt_conv1d_forward_cuda(float *out, float *scratch, const float *inp, const float *w,
                                       const float *b, int B, int IC, int OC, int W, int K, gt_act act,
                                       cudaStream_t st) {
    const int CK = IC * K;
    for (int b0 = 0; b0 < B; b0 += GT_CONV1D_CUDA_NB) {
        const int nb = (B - b0) < GT_CONV1D_CUDA_NB ? (B - b0) : GT_CONV1D_CUDA_NB;
        const size_t ld = (size_t)nb * W;
        float *col = scratch; // (CK, nb*W)
        k_im2col<<<gt_grid_1d((size_t)CK * ld, 256), 256, 0, st>>>(col, inp + (size_t)b0 * IC * W, nb, IC, W, K);
        GT_CUDA_LAUNCH_CHECK();
        // out_j (OC,W) = w (OC,CK) @ col[:, j*W : (j+1)*W] for each sample j
        gt_cuda_gemm_batched(st, false, false, OC, W, CK, 1.0f, w, CK, 0, col, (int)ld, W, 0.0f,
                             out + (size_t)b0 * OC * W, W, (long long)OC * W, nb);
    }
    if (b || act == GT_ACT_RELU) {
        size_t n = (size_t)B * OC * W; // bias per channel of (B,OC,W), then ReLU
        k_conv_bias_act<<<gt_grid_1d(n, 256), 256, 0, st>>>(out, b, n, OC, W, act == GT_ACT_RELU);
        GT_CUDA_LAUNCH_CHECK();
    }
}

extern "C" void gt_conv1d_backward_cuda(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                                        const float *w, const float *out, float *scratch, int B, int IC, int OC,
                                        int W, int K, gt_act act, cudaStream_t st) {
    const int CK = IC * K;
    for (int b0 = 0; b0 < B; b0 += GT_CONV1D_CUDA_NB) {
        const int nb = (B - b0) < GT_CONV1D_CUDA_NB ? (B - b0) : GT_CONV1D_CUDA_NB;
        const size_t ld = (size_t)nb * W;
        float *col = scratch;                  // (CK, nb*W)
        float *dz = scratch + (size_t)CK * ld; // (OC, nb*W)
        const size_t off = (size_t)b0 * OC * W;
        k_conv_dz<<<OC, 256, 0, st>>>(dz, db, dout + off, act == GT_ACT_RELU ? out + off : nullptr, nb, OC, W);
        GT_CUDA_LAUNCH_CHECK();
        k_im2col<<<gt_grid_1d((size_t)CK * ld, 256), 256, 0, st>>>(col, inp + (size_t)b0 * IC * W, nb, IC, W, K);
        GT_CUDA_LAUNCH_CHECK();
        // dw (OC,CK) += dz (OC, nb*W) @ col^T (nb*W, CK)
        gt_cuda_gemm(st, false, true, OC, CK, (int)ld, 1.0f, dz, (int)ld, col, (int)ld, 1.0f, dw, CK);
        if (dinp) {
            // dcol (CK, nb*W) = w^T (CK,OC) @ dz (OC, nb*W), into col's space
            gt_cuda_gemm(st, true, false, CK, (int)ld, OC, 1.0f, w, CK, dz, (int)ld, 0.0f, col, (int)ld);
            size_t n = (size_t)nb * IC * W;
            k_col2im<<<gt_grid_1d(n, 256), 256, 0, st>>>(dinp + (size_t)b0 * IC * W, col, nb, IC, W, K);
            GT_CUDA_LAUNCH_CHECK();
        }
    }
}

// --------------------------------------------------------------- layernorm --
// One warp per row; two-pass mean/variance like the CPU (biased variance).
// The row's statistics and output from its sum s of x (this lane's part):
// shared by the plain and the fused forward, so both give the same bits.
__device__ __forceinline__ void ln_row(float *o, float *mean, float *rstd, const float *x, float s, const float *w,
                                       const float *b, int row, int C, float eps, int lane) {
    const float m = gt_warp_sum(s) / (float)C;
    float v = 0.0f;
    for (int i = lane; i < C; i += 32) {
        float d = x[i] - m;
        v += d * d;
    }
    const float r = 1.0f / sqrtf(gt_warp_sum(v) / (float)C + eps);
    for (int i = lane; i < C; i += 32) o[i] = (x[i] - m) * r * w[i] + b[i];
    if (lane == 0) {
        mean[row] = m;
        rstd[row] = r;
    }
}

__global__ void k_ln_fwd(float *out, float *mean, float *rstd, const float *inp, const float *w, const float *b,
                         int N, int C, float eps) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= N) return;
    const float *x = inp + (size_t)row * C;
    float s = 0.0f;
    for (int i = lane; i < C; i += 32) s += x[i];
    ln_row(out + (size_t)row * C, mean, rstd, x, s, w, b, row, C, eps, lane);
}

// Residual add + LayerNorm, one warp per row: sum = a + (b + b_bias), then
// k_ln_fwd's math on sum. Row r of b is row r % b_rows (b_rows = N: a plain
// add; L: a (L,C) table broadcast over batches, s2p_tf's positions). Each lane
// reads and writes only its own elements, so sum may alias a and out may
// alias b; the adds are k_bias_act's and k_add's, in their order: the bits of
// the unfused kernels.
__global__ void k_add_ln_fwd(float *sum, float *out, float *mean, float *rstd, const float *a, const float *b,
                             int b_rows, const float *b_bias, const float *w, const float *bias, int N, int C,
                             float eps) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= N) return;
    const float *xa = a + (size_t)row * C, *xb = b + (size_t)(row % b_rows) * C;
    float *x = sum + (size_t)row * C;
    float s = 0.0f;
    for (int i = lane; i < C; i += 32) {
        float v = b_bias ? xb[i] + b_bias[i] : xb[i];
        v = xa[i] + v;
        x[i] = v;
        s += v;
    }
    ln_row(out + (size_t)row * C, mean, rstd, x, s, w, bias, row, C, eps, lane);
}

// One warp per row: dinp only (dw and db are fixed-order column sums). ACC:
// dinp += the gradient (__fadd_rn: k_add's sum of the stored gradient).
template <bool ACC>
__global__ void k_ln_bwd(float *dinp, const float *dout, const float *inp, const float *w, const float *mean,
                         const float *rstd, int N, int C) {
    const int lane = threadIdx.x & 31, wpb = blockDim.x >> 5;
    for (int row = blockIdx.x * wpb + (threadIdx.x >> 5); row < N; row += gridDim.x * wpb) {
        const float *x = inp + (size_t)row * C, *g = dout + (size_t)row * C;
        const float m = mean[row], s = rstd[row];
        float a1 = 0.0f, a2 = 0.0f;
        for (int i = lane; i < C; i += 32) {
            float xhat = (x[i] - m) * s;
            float dn = g[i] * w[i];
            a1 += dn;
            a2 += dn * xhat;
        }
        const float dnm = gt_warp_sum(a1) / (float)C, dnx = gt_warp_sum(a2) / (float)C;
        float *dx = dinp + (size_t)row * C;
        for (int i = lane; i < C; i += 32) {
            float xhat = (x[i] - m) * s;
            const float v = s * (g[i] * w[i] - dnm - xhat * dnx);
            dx[i] = ACC ? __fadd_rn(dx[i], v) : v;
        }
    }
}

extern "C" void gt_layernorm_forward_cuda(float *out, float *mean, float *rstd, const float *inp, const float *w,
                                          const float *b, int N, int C, float eps, cudaStream_t st) {
    if (N <= 0) return;
    k_ln_fwd<<<gt_cdiv((size_t)N, 8), 256, 0, st>>>(out, mean, rstd, inp, w, b, N, C, eps);
    GT_CUDA_LAUNCH_CHECK();
}

extern "C" void gt_add_layernorm_forward_cuda(float *sum, float *out, float *mean, float *rstd, const float *a,
                                              const float *b, int b_rows, const float *b_bias, const float *w,
                                              const float *bias, int N, int C, float eps, cudaStream_t st) {
    if (N <= 0) return;
    k_add_ln_fwd<<<gt_cdiv((size_t)N, 8), 256, 0, st>>>(sum, out, mean, rstd, a, b, b_rows > 0 ? b_rows : N,
                                                        b_bias, w, bias, N, C, eps);
    GT_CUDA_LAUNCH_CHECK();
}

static void ln_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *w,
                        const float *mean, const float *rstd, int N, int C, bool acc, cudaStream_t st) {
    if (N <= 0) return;
    if (db) colsum_run<MODE_PLAIN>(db, dout, nullptr, nullptr, nullptr, nullptr, nullptr, (size_t)N, C, st);
    if (dw) colsum_run<MODE_XHAT>(dw, dout, nullptr, nullptr, inp, mean, rstd, (size_t)N, C, st);
    if (!dinp) return;
    unsigned grid = gt_cdiv((size_t)N, 8 * 16); // ~16 rows per warp
    if (grid > 1024) grid = 1024;
    if (acc) k_ln_bwd<true><<<grid, 256, 0, st>>>(dinp, dout, inp, w, mean, rstd, N, C);
    else k_ln_bwd<false><<<grid, 256, 0, st>>>(dinp, dout, inp, w, mean, rstd, N, C);
    GT_CUDA_LAUNCH_CHECK();
}
extern "C" void gt_layernorm_backward_cuda(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                                           const float *w, const float *mean, const float *rstd, int N, int C,
                                           cudaStream_t st) {
    ln_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C, false, st);
}
extern "C" void gt_layernorm_backward_acc_cuda(float *dinp, float *dw, float *db, const float *dout,
                                               const float *inp, const float *w, const float *mean,
                                               const float *rstd, int N, int C, cudaStream_t st) {
    ln_backward(dinp, dw, db, dout, inp, w, mean, rstd, N, C, true, st);
}
