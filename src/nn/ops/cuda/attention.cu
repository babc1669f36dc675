// nn/ops/cuda/attention.cu: flash-style multi-head self-attention (non-causal)
// on the GPU, twin of nn/ops/cpu/attention.c (same layouts, same maths).
//
// A query (or key) row is held by a GROUP of G lanes of one warp, each lane
// keeping S = HSP / G of the row's HSP elements in registers (element
// c = i * G + lane, interleaved so the group reads a shared-memory row
// without bank conflicts); dot products are per-lane partial sums added
// across the group with xor shuffles (every lane of the group ends with the
// same bits: each butterfly step adds a pair both ways, and float addition
// commutes). S <= 16, so no kernel keeps more than 4 x 16 row values in
// registers: nothing spills at any head size (the ctest gpu_register_spills
// checks the sm_90 build).
//
// HSP is the head size rounded up to a supported tile width (8, 16, 32, 64,
// 128); elements [hs, HSP) are zero in registers and shared memory and never
// written, so any head size up to 128 runs (the CPU twin takes any).
//
// Forward: key/value tiles of ATT_BC rows staged in shared memory, online
// softmax per tile (m, l), lse = m + log l stored per row. Nothing L x L.
// Backward (recompute from q, k and lse; D = rowsum(dO * O) precomputed):
//   dQ kernel   one group per query row, loops over key tiles:
//               p = exp(s - lse), dp = dO.v, ds = p (dp - D) scale, dq += ds k
//   dKV kernel  one group per key row, loops over query tiles:
//               dv += p dO, dk += ds q
// Two kernels, no atomics: deterministic. fp32 FMA on the SIMT cores in every
// precision mode but BF16 and FP16, where the entry points below hand calls of
// 64 rows or more to the tensor-core kernels of attention_tc.cu (or
// attention_mma.cu), pass by pass, where their shared memory fits the device
// (nn/ops/cuda/attention_plan.h: at head sizes above 64 on sm_86 / sm_89 the
// backward, and the mma forward, stay here). Rows past the end are computed on
// zeros (the whole warp takes part in every shuffle) and not written. Static
// shared memory only: 2 x 32 x HSP floats (+ 256 B), 32.3 KiB at HSP 128.
#include "nn/ops/attention.h"
#include "nn/ops/cuda/attention_plan.h"
#include "nn/ops/cuda/common.cuh"
#include "nn/ops/fast_exp.h"

#define ATT_THREADS 128 // threads per block; rows per block = ATT_THREADS / G
#define ATT_BC 32       // keys (forward, dQ) or queries (dKV) per shared-memory tile
#define ATT_MAX_HS 128

template <int HSP>
struct att_shape {
    static constexpr int S = HSP < 16 ? HSP : 16; // row elements per lane
    static constexpr int G = HSP / S;             // lanes per row (1, 2, 4, 8)
    static constexpr int ROWS = ATT_THREADS / G;  // rows per block
};

// Sum over the G lanes of this lane's group (aligned groups of a warp).
template <int G>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
    for (int o = G / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Stage rows [r0, r0+n) of a (L, hs) strided view (row stride ld) into s
// (ATT_BC, HSP), zero beyond n rows and hs columns. vec: hs == HSP and the
// views' base pointers are 16-byte aligned (att_vec, on the host), so every
// row start is (HSP >= 8: C = NH * hs and ld multiples of 4 floats).
template <int HSP>
__device__ __forceinline__ void stage_tile(float *s, const float *src, int ld, int r0, int n, int hs, bool vec) {
    if (vec) { // whole rows of 16-byte aligned float4
        constexpr int V = HSP / 4;
        float4 *s4 = (float4 *)s;
        for (int idx = threadIdx.x; idx < ATT_BC * V; idx += blockDim.x) {
            int r = idx / V, c = idx % V;
            float4 val = make_float4(0.f, 0.f, 0.f, 0.f);
            if (r < n) val = *(const float4 *)(src + (size_t)(r0 + r) * ld + 4 * c);
            s4[idx] = val;
        }
        return;
    }
    for (int idx = threadIdx.x; idx < ATT_BC * HSP; idx += blockDim.x) {
        int r = idx / HSP, c = idx % HSP;
        s[idx] = (r < n && c < hs) ? src[(size_t)(r0 + r) * ld + c] : 0.0f;
    }
}

// This lane's part of a row held in registers . a shared-memory row, summed over the group.
template <int HSP>
__device__ __forceinline__ float dot_row(const float *reg, const float *sh_row, int lane) {
    using A = att_shape<HSP>;
    float a = 0.0f;
#pragma unroll
    for (int i = 0; i < A::S; i++) a = fmaf(reg[i], sh_row[i * A::G + lane], a);
    return group_sum<A::G>(a);
}

// reg += a * (this lane's part of a shared-memory row)
template <int HSP>
__device__ __forceinline__ void axpy_row(float *reg, float a, const float *sh_row, int lane) {
    using A = att_shape<HSP>;
#pragma unroll
    for (int i = 0; i < A::S; i++) reg[i] = fmaf(a, sh_row[i * A::G + lane], reg[i]);
}

// Load this lane's part of row `t` of a strided (L, hs) view (zeros when inactive or past hs).
template <int HSP>
__device__ __forceinline__ void load_row(float *reg, const float *src, size_t off, bool active, int hs, int lane) {
    using A = att_shape<HSP>;
#pragma unroll
    for (int i = 0; i < A::S; i++) {
        const int c = i * A::G + lane;
        reg[i] = active && c < hs ? src[off + c] : 0.0f;
    }
}

template <int HSP>
__device__ __forceinline__ void store_row(float *dst, const float *reg, float scale, int hs, int lane) {
    using A = att_shape<HSP>;
#pragma unroll
    for (int i = 0; i < A::S; i++) {
        const int c = i * A::G + lane;
        if (c < hs) dst[c] = reg[i] * scale;
    }
}

// grid (ceil(nq/ROWS), NH, B)
template <int HSP>
__global__ void __launch_bounds__(ATT_THREADS) k_attn_fwd(float *out, float *lse, const float *qkv, int L, int C,
                                                          int NH, int hs, int q0, int nq, float scale, bool vec) {
    using A = att_shape<HSP>;
    __shared__ __align__(16) float ks[ATT_BC * HSP];
    __shared__ __align__(16) float vs[ATT_BC * HSP];
    const int b = blockIdx.z, h = blockIdx.y, C3 = 3 * C, lane = threadIdx.x % A::G;
    const int t = q0 + blockIdx.x * A::ROWS + threadIdx.x / A::G;
    const bool active = t < q0 + nq;
    const float *base = qkv + (size_t)b * L * C3 + (size_t)h * hs;
    float q[A::S], o[A::S];
    load_row<HSP>(q, base, (size_t)t * C3, active, hs, lane);
#pragma unroll
    for (int i = 0; i < A::S; i++) o[i] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    for (int j0 = 0; j0 < L; j0 += ATT_BC) {
        const int bc = L - j0 < ATT_BC ? L - j0 : ATT_BC;
        __syncthreads();
        stage_tile<HSP>(ks, base + C, C3, j0, bc, hs, vec);
        stage_tile<HSP>(vs, base + 2 * C, C3, j0, bc, hs, vec);
        __syncthreads();
        float s[ATT_BC];
        float mt = -INFINITY;
#pragma unroll
        for (int j = 0; j < ATT_BC; j++) {
            const float d = dot_row<HSP>(q, ks + j * HSP, lane); // every lane: the shuffles need the whole warp
            s[j] = j < bc ? scale * d : -INFINITY;
            mt = fmaxf(mt, s[j]);
        }
        const float mnew = fmaxf(m, mt);
        const float alpha = expf(m - mnew); // 0 on the first tile (m = -inf)
        float sum = 0.0f;
#pragma unroll
        for (int i = 0; i < A::S; i++) o[i] *= alpha;
#pragma unroll
        for (int j = 0; j < ATT_BC; j++) {
            if (j < bc) {
                const float p = gt_expf_poly(s[j] - mnew);
                sum += p;
                axpy_row<HSP>(o, p, vs + j * HSP, lane);
            }
        }
        l = l * alpha + sum;
        m = mnew;
    }
    if (!active) return;
    store_row<HSP>(out + ((size_t)b * L + t) * C + (size_t)h * hs, o, 1.0f / l, hs, lane);
    if (lane == 0) lse[((size_t)b * NH + h) * L + t] = m + logf(l);
}

// grid (ceil(nq/ROWS), NH, B): one group per query row
template <int HSP>
__global__ void __launch_bounds__(ATT_THREADS) k_attn_dq(float *dqkv, const float *dout, const float *qkv,
                                                         const float *lse, const float *D, int L, int C, int NH,
                                                         int hs, int q0, int nq, float scale, bool vec) {
    using A = att_shape<HSP>;
    __shared__ __align__(16) float ks[ATT_BC * HSP];
    __shared__ __align__(16) float vs[ATT_BC * HSP];
    const int b = blockIdx.z, h = blockIdx.y, C3 = 3 * C, lane = threadIdx.x % A::G;
    const int t = q0 + blockIdx.x * A::ROWS + threadIdx.x / A::G;
    const bool active = t < q0 + nq;
    const float *base = qkv + (size_t)b * L * C3 + (size_t)h * hs;
    const float *dob = dout + (size_t)b * L * C + (size_t)h * hs;
    float q[A::S], g[A::S], dq[A::S];
    load_row<HSP>(q, base, (size_t)t * C3, active, hs, lane);
    load_row<HSP>(g, dob, (size_t)t * C, active, hs, lane);
#pragma unroll
    for (int i = 0; i < A::S; i++) dq[i] = 0.0f;
    const size_t bh = (size_t)b * NH + h;
    const float lr = active ? lse[bh * L + t] : 0.0f, dr = active ? D[bh * L + t] : 0.0f;
    for (int j0 = 0; j0 < L; j0 += ATT_BC) {
        const int bc = L - j0 < ATT_BC ? L - j0 : ATT_BC;
        __syncthreads();
        stage_tile<HSP>(ks, base + C, C3, j0, bc, hs, vec);
        stage_tile<HSP>(vs, base + 2 * C, C3, j0, bc, hs, vec);
        __syncthreads();
        for (int j = 0; j < bc; j++) { // bc is the same for the whole block
            const float p = gt_expf_poly(scale * dot_row<HSP>(q, ks + j * HSP, lane) - lr);
            const float dp = dot_row<HSP>(g, vs + j * HSP, lane);
            const float ds = p * (dp - dr) * scale;
            axpy_row<HSP>(dq, ds, ks + j * HSP, lane);
        }
    }
    if (!active) return;
    store_row<HSP>(dqkv + ((size_t)b * L + t) * C3 + (size_t)h * hs, dq, 1.0f, hs, lane);
}

// grid (ceil(L/ROWS), NH, B): one group per key row, queries in [q0, q0+nq)
template <int HSP>
__global__ void __launch_bounds__(ATT_THREADS) k_attn_dkv(float *dqkv, const float *dout, const float *qkv,
                                                          const float *lse, const float *D, int L, int C, int NH,
                                                          int hs, int q0, int nq, float scale, bool vec) {
    using A = att_shape<HSP>;
    __shared__ __align__(16) float qs[ATT_BC * HSP];
    __shared__ __align__(16) float gs[ATT_BC * HSP];
    __shared__ float ls[ATT_BC], dsh[ATT_BC];
    const int b = blockIdx.z, h = blockIdx.y, C3 = 3 * C, lane = threadIdx.x % A::G;
    const int s = blockIdx.x * A::ROWS + threadIdx.x / A::G;
    const bool active = s < L;
    const float *base = qkv + (size_t)b * L * C3 + (size_t)h * hs;
    const float *dob = dout + (size_t)b * L * C + (size_t)h * hs;
    const size_t bh = (size_t)b * NH + h;
    float k[A::S], v[A::S], dk[A::S], dv[A::S];
    load_row<HSP>(k, base + C, (size_t)s * C3, active, hs, lane);
    load_row<HSP>(v, base + 2 * C, (size_t)s * C3, active, hs, lane);
#pragma unroll
    for (int i = 0; i < A::S; i++) {
        dk[i] = 0.0f;
        dv[i] = 0.0f;
    }
    const int q1 = q0 + nq;
    for (int i0 = q0; i0 < q1; i0 += ATT_BC) {
        const int br = q1 - i0 < ATT_BC ? q1 - i0 : ATT_BC;
        __syncthreads();
        stage_tile<HSP>(qs, base, C3, i0, br, hs, vec);
        stage_tile<HSP>(gs, dob, C, i0, br, hs, vec);
        if (threadIdx.x < ATT_BC) {
            ls[threadIdx.x] = threadIdx.x < br ? lse[bh * L + i0 + threadIdx.x] : 0.0f;
            dsh[threadIdx.x] = threadIdx.x < br ? D[bh * L + i0 + threadIdx.x] : 0.0f;
        }
        __syncthreads();
        for (int r = 0; r < br; r++) { // br is the same for the whole block
            const float p = gt_expf_poly(scale * dot_row<HSP>(k, qs + r * HSP, lane) - ls[r]);
            axpy_row<HSP>(dv, p, gs + r * HSP, lane);
            const float dp = dot_row<HSP>(v, gs + r * HSP, lane);
            const float ds = p * (dp - dsh[r]) * scale;
            axpy_row<HSP>(dk, ds, qs + r * HSP, lane);
        }
    }
    if (!active) return;
    float *row = dqkv + ((size_t)b * L + s) * C3 + (size_t)h * hs;
    store_row<HSP>(row + C, dk, 1.0f, hs, lane);
    store_row<HSP>(row + 2 * C, dv, 1.0f, hs, lane);
}

extern "C" size_t gt_attention_cuda_scratch_elems(int B, int L, int NH) {
    return gt_attention_cuda_scratch_size(B, L, NH);
}

// The tile width for head size hs (checked): 8, 16, 32, 64 or 128.
static int check_shapes(int B, int L, int C, int NH, int q0, int nq) {
    GT_CHECK(NH > 0 && C % NH == 0 && L > 0 && B > 0 && q0 >= 0 && nq > 0 && q0 + nq <= L, GT_EXIT_USAGE,
             "attention (CUDA): bad shape B=%d L=%d C=%d NH=%d rows [%d,%d)", B, L, C, NH, q0, q0 + nq);
    const int hs = C / NH;
    GT_CHECK(hs <= ATT_MAX_HS, GT_EXIT_USAGE,
             "attention (CUDA): head size %d (model.d_model / model.heads) is above %d: use more heads, or "
             "train.device=cpu",
             hs, ATT_MAX_HS);
    return hs <= 8 ? 8 : hs <= 16 ? 16 : hs <= 32 ? 32 : hs <= 64 ? 64 : 128;
}

// float4 staging: whole padded rows (hs == hsp) and 16-byte aligned views
// (every row start then is: C and the row strides are multiples of 4 floats)
static bool att_vec(int hs, int hsp, const float *a, const float *b) {
    return hs == hsp && (((uintptr_t)a | (uintptr_t)b) & 15) == 0;
}

#define ATT_LAUNCH(HSP, KERNEL, n_rows, ...)                                                        \
    KERNEL<HSP><<<dim3(gt_cdiv((size_t)(n_rows), att_shape<HSP>::ROWS), NH, B), ATT_THREADS, 0, st>>>( \
        __VA_ARGS__)
#define ATT_DISPATCH(hsp, KERNEL, n_rows, ...)                          \
    switch (hsp) {                                                      \
    case 8: ATT_LAUNCH(8, KERNEL, n_rows, __VA_ARGS__); break;          \
    case 16: ATT_LAUNCH(16, KERNEL, n_rows, __VA_ARGS__); break;        \
    case 32: ATT_LAUNCH(32, KERNEL, n_rows, __VA_ARGS__); break;        \
    case 64: ATT_LAUNCH(64, KERNEL, n_rows, __VA_ARGS__); break;        \
    default: ATT_LAUNCH(128, KERNEL, n_rows, __VA_ARGS__); break;       \
    }

// The kernels of one call (nn/ops/cuda/attention_plan.h, the function the fit
// test checks): BF16 and FP16 precision run attention on the tensor cores
// (attention_tc.cu, tiles in bf16 or fp16; bf16 on attention_mma.cu when
// gt_attention_tc_set_kernel(GT_ATTENTION_TC_MMA)) where the device has them
// (sm_80+) and their shared memory fits the device, for calls of at least
// one 64-row query tile: a row range of a few rows (s2p_tf's midpoint row)
// would fill one tile row in 64, and the SIMT kernels cost little there.
// FP32 and TF32 keep the fp32 SIMT kernels below.
static gt_attn_choice plan_call(int pass, int hs, int nq, gt_attention_tc_type *type) {
    const gt_cuda_prec p = gt_cuda_get_precision();
    *type = p == GT_PREC_FP16 ? GT_ATTENTION_TC_FP16 : GT_ATTENTION_TC_BF16;
    const int tiles = p == GT_PREC_BF16 ? GT_ATTN_TILES_BF16 : p == GT_PREC_FP16 ? GT_ATTN_TILES_FP16
                                                                                 : GT_ATTN_TILES_NONE;
    int major = 0;
    size_t optin = 0;
    if (tiles != GT_ATTN_TILES_NONE) gt_attention_device_limits(&major, &optin); // FP32: no device query at all
    return gt_attn_choose(pass, tiles, gt_attention_tc_get_kernel() == GT_ATTENTION_TC_MMA, hs, nq, major, optin);
}

extern "C" gt_attn_variant gt_attention_cuda_variant(int pass, int hs, int nq) {
    gt_attention_tc_type type;
    return plan_call(pass, hs, nq, &type).variant;
}

extern "C" int gt_attention_cuda_fits(gt_attn_variant v, int pass, int hs) {
    if (v == GT_ATTN_SIMT) return 1;
    int major = 0;
    size_t optin = 0;
    gt_attention_device_limits(&major, &optin);
    return major >= 8 && gt_attn_fits(v, pass, gt_attn_hsp(v, hs), optin);
}

// Every tensor-core class (16-bit type, padded head size, pass) whose kernels
// fit the device is opted in now, outside any step (a capture may refuse
// cudaFuncSetAttribute); the others are never chosen.
extern "C" void gt_attention_cuda_prepare(void) {
    int major = 0;
    size_t optin = 0;
    gt_attention_device_limits(&major, &optin);
    if (major < 8) return;
    for (int pass = GT_ATTN_FWD; pass <= GT_ATTN_BWD; pass++)
        for (int hsp = 16; hsp <= 128; hsp *= 2) {
            if (gt_attn_fits(GT_ATTN_WMMA, pass, hsp, optin)) {
                gt_attention_tc_optin(GT_ATTENTION_TC_BF16, hsp, pass);
                gt_attention_tc_optin(GT_ATTENTION_TC_FP16, hsp, pass);
            }
            if (gt_attn_fits(GT_ATTN_MMA, pass, hsp, optin)) gt_attention_mma_optin(hsp, pass);
        }
}

extern "C" void gt_attention_forward_rows_cuda(float *out, float *lse, float *scratch, const float *qkv, int B,
                                               int L, int C, int NH, int q0, int nq, cudaStream_t st) {
    const int hsp = check_shapes(B, L, C, NH, q0, nq);
    const int hs = C / NH;
    gt_attention_tc_type type;
    const gt_attn_choice k = plan_call(GT_ATTN_FWD, hs, nq, &type);
    if (k.variant == GT_ATTN_MMA) {
        gt_attention_mma_forward_rows_cuda(out, lse, scratch, qkv, B, L, C, NH, q0, nq, st);
        return;
    }
    if (k.variant == GT_ATTN_WMMA) {
        gt_attention_tc_forward_rows_cuda(type, out, lse, qkv, B, L, C, NH, q0, nq, st);
        return;
    }
    const float scale = 1.0f / sqrtf((float)hs);
    ATT_DISPATCH(hsp, k_attn_fwd, nq, out, lse, qkv, L, C, NH, hs, q0, nq, scale, att_vec(hs, hsp, qkv, qkv));
    GT_CUDA_LAUNCH_CHECK();
}

extern "C" void gt_attention_forward_cuda(float *out, float *lse, float *scratch, const float *qkv, int B, int L,
                                          int C, int NH, cudaStream_t st) {
    gt_attention_forward_rows_cuda(out, lse, scratch, qkv, B, L, C, NH, 0, L, st);
}

extern "C" void gt_attention_backward_rows_cuda(float *dqkv, float *scratch, const float *dout, const float *qkv,
                                                const float *out, const float *lse, int B, int L, int C, int NH,
                                                int q0, int nq, cudaStream_t st) {
    const int hsp = check_shapes(B, L, C, NH, q0, nq);
    const int hs = C / NH;
    gt_attention_tc_type type;
    const gt_attn_choice k = plan_call(GT_ATTN_BWD, hs, nq, &type);
    if (k.variant == GT_ATTN_MMA) {
        gt_attention_mma_backward_rows_cuda(dqkv, scratch, dout, qkv, out, lse, B, L, C, NH, q0, nq, st);
        return;
    }
    if (k.variant == GT_ATTN_WMMA) {
        gt_attention_tc_backward_rows_cuda(type, dqkv, scratch, dout, qkv, out, lse, B, L, C, NH, q0, nq, st);
        return;
    }
    const float scale = 1.0f / sqrtf((float)hs);
    float *D = scratch; // (B,NH,L)
    gt_attention_backward_prep_cuda(D, dqkv, dout, out, B, L, C, NH, q0, nq, st);
    const bool vec = att_vec(hs, hsp, qkv, dout);
    ATT_DISPATCH(hsp, k_attn_dq, nq, dqkv, dout, qkv, lse, D, L, C, NH, hs, q0, nq, scale, vec);
    GT_CUDA_LAUNCH_CHECK();
    ATT_DISPATCH(hsp, k_attn_dkv, L, dqkv, dout, qkv, lse, D, L, C, NH, hs, q0, nq, scale, vec);
    GT_CUDA_LAUNCH_CHECK();
}

extern "C" void gt_attention_backward_cuda(float *dqkv, float *scratch, const float *dout, const float *qkv,
                                           const float *out, const float *lse, int B, int L, int C, int NH,
                                           cudaStream_t st) {
    gt_attention_backward_rows_cuda(dqkv, scratch, dout, qkv, out, lse, B, L, C, NH, 0, L, st);
}
