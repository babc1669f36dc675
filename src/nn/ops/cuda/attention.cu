// nn/ops/cuda/attention.cu: flash-style multi-head self-attention (non-causal)
// on the GPU, twin of nn/ops/cpu/attention.c (same layouts, same maths).
//
// Forward: one thread per query row (q and the output accumulator live in
// registers), key/value tiles of ATT_BC rows staged in shared memory, online
// softmax per tile (m, l), lse = m + log l stored per row. Nothing L x L.
// Backward (recompute from q, k and lse; D = rowsum(dO * O) precomputed):
//   dQ kernel   one thread per query row, loops over key tiles:
//               p = exp(s - lse), dp = dO.v, ds = p (dp - D) scale, dq += ds k
//   dKV kernel  one thread per key row, loops over query tiles:
//               dv += p dO, dk += ds q
// Two kernels, no atomics: deterministic. fp32 FMA on the SIMT cores in every
// precision mode (see the report in tests/gpu for the tensor-core follow-up).
#include "nn/ops/attention.h"
#include "nn/ops/cuda/common.cuh"
#include "nn/ops/fast_exp.h"

#define ATT_ROWS 128 // threads per block = rows (queries or keys) per block
#define ATT_BC 32    // keys (forward, dQ) or queries (dKV) per shared-memory tile

// Stage rows [r0, r0+n) of a (L, HS) strided view (row stride ld) into s (ATT_BC, HS), zero-padded.
template <int HS>
__device__ __forceinline__ void stage_tile(float *s, const float *src, int ld, int r0, int n) {
    constexpr int V = HS / 4; // float4 per row
    float4 *s4 = (float4 *)s;
    for (int idx = threadIdx.x; idx < ATT_BC * V; idx += blockDim.x) {
        int r = idx / V, c = idx % V;
        float4 val = make_float4(0.f, 0.f, 0.f, 0.f);
        if (r < n) val = *(const float4 *)(src + (size_t)(r0 + r) * ld + 4 * c);
        s4[idx] = val;
    }
}

template <int HS>
__device__ __forceinline__ float dot_sh(const float *reg, const float *sh_row) {
    const float4 *r4 = (const float4 *)sh_row;
    float a = 0.0f;
#pragma unroll
    for (int i = 0; i < HS / 4; i++) {
        float4 k = r4[i];
        a = fmaf(reg[4 * i], k.x, a);
        a = fmaf(reg[4 * i + 1], k.y, a);
        a = fmaf(reg[4 * i + 2], k.z, a);
        a = fmaf(reg[4 * i + 3], k.w, a);
    }
    return a;
}

template <int HS>
__device__ __forceinline__ void axpy_sh(float *reg, float a, const float *sh_row) {
    const float4 *r4 = (const float4 *)sh_row;
#pragma unroll
    for (int i = 0; i < HS / 4; i++) {
        float4 k = r4[i];
        reg[4 * i] = fmaf(a, k.x, reg[4 * i]);
        reg[4 * i + 1] = fmaf(a, k.y, reg[4 * i + 1]);
        reg[4 * i + 2] = fmaf(a, k.z, reg[4 * i + 2]);
        reg[4 * i + 3] = fmaf(a, k.w, reg[4 * i + 3]);
    }
}

// grid (ceil(nq/ATT_ROWS), NH, B)
template <int HS>
__global__ void __launch_bounds__(ATT_ROWS) k_attn_fwd(float *out, float *lse, const float *qkv, int L, int C,
                                                       int NH, int q0, int nq, float scale) {
    __shared__ __align__(16) float ks[ATT_BC * HS];
    __shared__ __align__(16) float vs[ATT_BC * HS];
    const int b = blockIdx.z, h = blockIdx.y, C3 = 3 * C;
    const int t = q0 + blockIdx.x * ATT_ROWS + threadIdx.x;
    const bool active = t < q0 + nq;
    const float *base = qkv + (size_t)b * L * C3 + h * HS;
    float q[HS], o[HS];
#pragma unroll
    for (int i = 0; i < HS; i++) {
        q[i] = active ? base[(size_t)t * C3 + i] : 0.0f;
        o[i] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    for (int j0 = 0; j0 < L; j0 += ATT_BC) {
        const int bc = L - j0 < ATT_BC ? L - j0 : ATT_BC;
        __syncthreads();
        stage_tile<HS>(ks, base + C, C3, j0, bc);
        stage_tile<HS>(vs, base + 2 * C, C3, j0, bc);
        __syncthreads();
        if (!active) continue;
        float s[ATT_BC];
        float mt = -INFINITY;
#pragma unroll
        for (int j = 0; j < ATT_BC; j++) {
            s[j] = j < bc ? scale * dot_sh<HS>(q, ks + j * HS) : -INFINITY;
            mt = fmaxf(mt, s[j]);
        }
        const float mnew = fmaxf(m, mt);
        const float alpha = expf(m - mnew); // 0 on the first tile (m = -inf)
        float sum = 0.0f;
#pragma unroll
        for (int i = 0; i < HS; i++) o[i] *= alpha;
#pragma unroll
        for (int j = 0; j < ATT_BC; j++) {
            if (j < bc) {
                float p = gt_expf_poly(s[j] - mnew);
                sum += p;
                axpy_sh<HS>(o, p, vs + j * HS);
            }
        }
        l = l * alpha + sum;
        m = mnew;
    }
    if (!active) return;
    const float inv = 1.0f / l;
    float *orow = out + ((size_t)b * L + t) * C + h * HS;
#pragma unroll
    for (int i = 0; i < HS; i++) orow[i] = o[i] * inv;
    lse[((size_t)b * NH + h) * L + t] = m + logf(l);
}

// D[b,h,t] = sum_i dO[b,t,h,i] O[b,t,h,i] for t in [q0, q0+nq)
__global__ void k_attn_d(float *D, const float *dout, const float *out, int B, int L, int C, int NH, int hs,
                         int q0, int nq) {
    const size_t n = (size_t)B * NH * nq;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        int t = q0 + (int)(idx % nq);
        size_t bh = idx / nq;
        int h = (int)(bh % NH), b = (int)(bh / NH);
        const float *o = out + ((size_t)b * L + t) * C + h * hs, *g = dout + ((size_t)b * L + t) * C + h * hs;
        float a = 0.0f;
        for (int i = 0; i < hs; i++) a += o[i] * g[i];
        D[bh * L + t] = a;
    }
}

// zero the q part of dqkv outside [q0, q0+nq)
__global__ void k_zero_dq(float *dqkv, int B, int L, int C, int q0, int nq) {
    const size_t n = (size_t)B * L * C;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        int t = (int)((idx / C) % L);
        if (t >= q0 && t < q0 + nq) continue;
        size_t row = idx / C;
        dqkv[row * 3 * C + idx % C] = 0.0f;
    }
}

// grid (ceil(nq/ATT_ROWS), NH, B): one thread per query row
template <int HS>
__global__ void __launch_bounds__(ATT_ROWS) k_attn_dq(float *dqkv, const float *dout, const float *qkv,
                                                      const float *lse, const float *D, int L, int C, int NH,
                                                      int q0, int nq, float scale) {
    __shared__ __align__(16) float ks[ATT_BC * HS];
    __shared__ __align__(16) float vs[ATT_BC * HS];
    const int b = blockIdx.z, h = blockIdx.y, C3 = 3 * C;
    const int t = q0 + blockIdx.x * ATT_ROWS + threadIdx.x;
    const bool active = t < q0 + nq;
    const float *base = qkv + (size_t)b * L * C3 + h * HS;
    const float *dob = dout + (size_t)b * L * C + h * HS;
    float q[HS], g[HS], dq[HS];
#pragma unroll
    for (int i = 0; i < HS; i++) {
        q[i] = active ? base[(size_t)t * C3 + i] : 0.0f;
        g[i] = active ? dob[(size_t)t * C + i] : 0.0f;
        dq[i] = 0.0f;
    }
    const size_t bh = (size_t)b * NH + h;
    const float lr = active ? lse[bh * L + t] : 0.0f, dr = active ? D[bh * L + t] : 0.0f;
    for (int j0 = 0; j0 < L; j0 += ATT_BC) {
        const int bc = L - j0 < ATT_BC ? L - j0 : ATT_BC;
        __syncthreads();
        stage_tile<HS>(ks, base + C, C3, j0, bc);
        stage_tile<HS>(vs, base + 2 * C, C3, j0, bc);
        __syncthreads();
        if (!active) continue;
        for (int j = 0; j < bc; j++) {
            float p = gt_expf_poly(scale * dot_sh<HS>(q, ks + j * HS) - lr);
            float dp = dot_sh<HS>(g, vs + j * HS);
            float ds = p * (dp - dr) * scale;
            axpy_sh<HS>(dq, ds, ks + j * HS);
        }
    }
    if (!active) return;
    float *dqrow = dqkv + ((size_t)b * L + t) * C3 + h * HS;
#pragma unroll
    for (int i = 0; i < HS; i++) dqrow[i] = dq[i];
}

// grid (ceil(L/ATT_ROWS), NH, B): one thread per key row, queries in [q0, q0+nq)
template <int HS>
__global__ void __launch_bounds__(ATT_ROWS) k_attn_dkv(float *dqkv, const float *dout, const float *qkv,
                                                       const float *lse, const float *D, int L, int C, int NH,
                                                       int q0, int nq, float scale) {
    __shared__ __align__(16) float qs[ATT_BC * HS];
    __shared__ __align__(16) float gs[ATT_BC * HS];
    __shared__ float ls[ATT_BC], dsh[ATT_BC];
    const int b = blockIdx.z, h = blockIdx.y, C3 = 3 * C;
    const int s = blockIdx.x * ATT_ROWS + threadIdx.x;
    const bool active = s < L;
    const float *base = qkv + (size_t)b * L * C3 + h * HS;
    const float *dob = dout + (size_t)b * L * C + h * HS;
    const size_t bh = (size_t)b * NH + h;
    float k[HS], v[HS], dk[HS], dv[HS];
#pragma unroll
    for (int i = 0; i < HS; i++) {
        k[i] = active ? base[(size_t)s * C3 + C + i] : 0.0f;
        v[i] = active ? base[(size_t)s * C3 + 2 * C + i] : 0.0f;
        dk[i] = 0.0f;
        dv[i] = 0.0f;
    }
    const int q1 = q0 + nq;
    for (int i0 = q0; i0 < q1; i0 += ATT_BC) {
        const int br = q1 - i0 < ATT_BC ? q1 - i0 : ATT_BC;
        __syncthreads();
        stage_tile<HS>(qs, base, C3, i0, br);
        stage_tile<HS>(gs, dob, C, i0, br);
        if (threadIdx.x < ATT_BC) {
            ls[threadIdx.x] = threadIdx.x < br ? lse[bh * L + i0 + threadIdx.x] : 0.0f;
            dsh[threadIdx.x] = threadIdx.x < br ? D[bh * L + i0 + threadIdx.x] : 0.0f;
        }
        __syncthreads();
        if (!active) continue;
        for (int r = 0; r < br; r++) {
            float p = gt_expf_poly(scale * dot_sh<HS>(k, qs + r * HS) - ls[r]);
            axpy_sh<HS>(dv, p, gs + r * HS);
            float dp = dot_sh<HS>(v, gs + r * HS);
            float ds = p * (dp - dsh[r]) * scale;
            axpy_sh<HS>(dk, ds, qs + r * HS);
        }
    }
    if (!active) return;
    float *row = dqkv + ((size_t)b * L + s) * C3 + h * HS;
#pragma unroll
    for (int i = 0; i < HS; i++) {
        row[C + i] = dk[i];
        row[2 * C + i] = dv[i];
    }
}

extern "C" size_t gt_attention_cuda_scratch_elems(int B, int L, int NH) {
    return gt_attention_cuda_scratch_size(B, L, NH);
}

static void check_shapes(int B, int L, int C, int NH, int q0, int nq) {
    GT_CHECK(NH > 0 && C % NH == 0 && L > 0 && B > 0 && q0 >= 0 && nq > 0 && q0 + nq <= L, GT_EXIT_USAGE,
             "attention (CUDA): bad shape B=%d L=%d C=%d NH=%d rows [%d,%d)", B, L, C, NH, q0, q0 + nq);
    const int hs = C / NH;
    GT_CHECK(hs == 8 || hs == 16 || hs == 32 || hs == 64 || hs == 128, GT_EXIT_USAGE,
             "attention (CUDA): head size %d not supported (8, 16, 32, 64 or 128)", hs);
}

#define ATT_DISPATCH(hs, KERNEL, grid, ...)                                         \
    switch (hs) {                                                                   \
    case 8: KERNEL<8><<<grid, ATT_ROWS, 0, st>>>(__VA_ARGS__); break;               \
    case 16: KERNEL<16><<<grid, ATT_ROWS, 0, st>>>(__VA_ARGS__); break;             \
    case 32: KERNEL<32><<<grid, ATT_ROWS, 0, st>>>(__VA_ARGS__); break;             \
    case 64: KERNEL<64><<<grid, ATT_ROWS, 0, st>>>(__VA_ARGS__); break;             \
    default: KERNEL<128><<<grid, ATT_ROWS, 0, st>>>(__VA_ARGS__); break;            \
    }

extern "C" void gt_attention_forward_rows_cuda(float *out, float *lse, float *scratch, const float *qkv, int B,
                                               int L, int C, int NH, int q0, int nq, cudaStream_t st) {
    check_shapes(B, L, C, NH, q0, nq);
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    dim3 grid(gt_cdiv((size_t)nq, ATT_ROWS), NH, B);
    ATT_DISPATCH(hs, k_attn_fwd, grid, out, lse, qkv, L, C, NH, q0, nq, scale);
    GT_CUDA_LAUNCH_CHECK();
}

extern "C" void gt_attention_forward_cuda(float *out, float *lse, float *scratch, const float *qkv, int B, int L,
                                          int C, int NH, cudaStream_t st) {
    gt_attention_forward_rows_cuda(out, lse, scratch, qkv, B, L, C, NH, 0, L, st);
}

extern "C" void gt_attention_backward_rows_cuda(float *dqkv, float *scratch, const float *dout, const float *qkv,
                                                const float *out, const float *lse, int B, int L, int C, int NH,
                                                int q0, int nq, cudaStream_t st) {
    check_shapes(B, L, C, NH, q0, nq);
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    float *D = scratch; // (B,NH,L)
    size_t nd = (size_t)B * NH * nq;
    k_attn_d<<<gt_grid_1d(nd, 256), 256, 0, st>>>(D, dout, out, B, L, C, NH, hs, q0, nq);
    GT_CUDA_LAUNCH_CHECK();
    if (nq < L) {
        k_zero_dq<<<gt_grid_1d((size_t)B * L * C, 256), 256, 0, st>>>(dqkv, B, L, C, q0, nq);
        GT_CUDA_LAUNCH_CHECK();
    }
    dim3 gq(gt_cdiv((size_t)nq, ATT_ROWS), NH, B);
    ATT_DISPATCH(hs, k_attn_dq, gq, dqkv, dout, qkv, lse, D, L, C, NH, q0, nq, scale);
    GT_CUDA_LAUNCH_CHECK();
    dim3 gk(gt_cdiv((size_t)L, ATT_ROWS), NH, B);
    ATT_DISPATCH(hs, k_attn_dkv, gk, dqkv, dout, qkv, lse, D, L, C, NH, q0, nq, scale);
    GT_CUDA_LAUNCH_CHECK();
}

extern "C" void gt_attention_backward_cuda(float *dqkv, float *scratch, const float *dout, const float *qkv,
                                           const float *out, const float *lse, int B, int L, int C, int NH,
                                           cudaStream_t st) {
    gt_attention_backward_rows_cuda(dqkv, scratch, dout, qkv, out, lse, B, L, C, NH, 0, L, st);
}
