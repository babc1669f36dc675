// nn/ops/cuda/attention_tc.cu: multi-head self-attention (non-causal) on the
// tensor cores, FlashAttention-2 style; the BF16- and FP16-precision path of
// gt_attention_*_cuda (attention.cu dispatches here). Every kernel is a
// template on the 16-bit element type E of its tiles: __nv_bfloat16 (8-bit
// mantissa, fp32's range) or __half (11-bit mantissa, max 65504: more precise
// products; under train.precision=fp16 the loss scaler turns an overflow of
// the scaled dO or dS into a skipped step). The text below says bf16 for
// either. Same layouts, same lse
// convention (natural log of sum exp(score), scores already scaled by
// 1/sqrt(hs)) and same maths as nn/ops/cpu/attention.c and the fp32 SIMT
// kernels of attention.cu: either path's lse and out feed the other's backward.
//
// Storage: q, k, v, out, dout, dqkv and lse stay fp32 in global memory (the
// layouts of nn/ops/attention.h). Each tile is converted to bf16 on its way
// into shared memory (vectorised float4 loads, two bf16x2 stores), so no bf16
// copy of qkv and no extra device memory is needed; cp.async cannot convert,
// so staging is synchronous and latency is hidden by 2-4 resident blocks per
// SM instead. Products on the tensor cores through nvcuda::wmma (16x16x16,
// bf16 inputs, fp32 accumulators); softmax statistics, exp and the dS
// formula in fp32 on the SIMT cores.
//
// Tiles: a block is 4 warps; every kernel stages tiles of 64 rows x HSP
// columns, HSP = head size rounded up to 16, 32, 64 or 128 (zero padded: the
// padding adds zeros to every dot product and is never written back).
// Each warp owns 16 rows of the block's 64 (queries in the forward and dQ
// kernels, keys in the dK/dV kernel); a 16 x 64 score tile goes through a
// per-warp fp32 buffer in shared memory, where two lanes per row (interleaved
// columns) apply the softmax, then back to the tensor cores as bf16.
//
// Forward (grid: query tiles x heads x batch): Q tile staged once; for each
// 64-key tile K, V: S = Q K^T (wmma), online softmax (m, l per row, in log2
// units: exp2f), P (bf16) V (wmma) into the warp's buffer, O = O alpha + P V
// in registers (HSP/2 floats per lane). lse = (m + log2 l) ln 2. Memory
// linear in L: nothing L x L, nothing per (row, key) outside shared memory.
// Backward (D = rowsum(dO * O) by attention.cu first), recomputing P from lse:
//   dQ kernel   per 64-query tile, over key tiles: S = Q K^T, dP = dO V^T,
//               dS = P (dP - D) / sqrt(hs) (bf16), dQ += dS K (accumulators in
//               wmma fragments for the whole loop)
//   dKV kernel  per 64-key tile, over query tiles: S^T = K Q^T, dP^T = V dO^T,
//               dV += P^T dO, dK += dS^T Q (accumulators in fragments)
// Two kernels, no atomics, a fixed loop order: deterministic, run to run.
// Rows past the end (L or q0 + nq) are staged as zeros and masked (p = 0) and
// never written.
//
// Needs sm_80 or newer (bf16 wmma); gt_attention_tc_usable says whether the
// current device has it. Shared memory per block is above the 48 KiB default
// (up to 121 KiB at HSP 128): the opt-in is set once per device and kernel.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include "nn/ops/attention.h"
#include "nn/ops/cuda/attention_plan.h"
#include "nn/ops/cuda/common.cuh"

using namespace nvcuda;
typedef __nv_bfloat16 bf16;
typedef __half f16;

// fp32 <-> E (round to nearest even), one value or a pair (4-byte store)
__device__ __forceinline__ void tc_from(bf16 &d, float v) { d = __float2bfloat16(v); }
__device__ __forceinline__ void tc_from(f16 &d, float v) { d = __float2half_rn(v); }
__device__ __forceinline__ float tc_to(bf16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float tc_to(f16 v) { return __half2float(v); }
__device__ __forceinline__ void tc_from2(bf16 *d, float a, float b) {
    *(__nv_bfloat162 *)d = __floats2bfloat162_rn(a, b);
}
__device__ __forceinline__ void tc_from2(f16 *d, float a, float b) { *(__half2 *)d = __floats2half2_rn(a, b); }

// the block shape and shared-memory plan: nn/ops/cuda/attention_plan.h (one
// formula for these kernels, attention.cu's choice and the fit test)
#define TC_WARPS GT_ATTN_TC_WARPS
#define TC_THREADS (32 * TC_WARPS) // 4 warps
#define TC_ROWS GT_ATTN_TC_ROWS    // rows of every staged tile (queries or keys); 16 per warp
#define TC_SLD GT_ATTN_TC_SLD      // fp32 score tile row stride (floats)
#define TC_PLD GT_ATTN_TC_PLD      // bf16 P / dS tile row stride (elements, a multiple of 8 for wmma)
#define TC_MAX_HS 128
#define TC_LOG2E 1.4426950408889634f
#define TC_LN2 0.6931471805599453f
#define TC_FULL 0xffffffffu
// Resident blocks per SM asked of ptxas (a register cap of 65536 / (128 n)):
// 4 / 3 / 2 / 1 at HSP 16 / 32 / 64 / 128, what shared memory allows anyway;
// without a bound ptxas on sm_80 trades a 72-register allocation for a spill
// in the HSP 16 dQ kernel.
#define TC_MIN_BLOCKS(HSP) ((HSP) <= 16 ? 4 : (HSP) <= 32 ? 3 : (HSP) <= 64 ? 2 : 1)

template <typename E> using frag_a = wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::row_major>;
template <typename E> using frag_b_row = wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::row_major>;
template <typename E> using frag_b_col = wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::col_major>;
typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> frag_c;

// Shared-memory plan per padded head size (bytes; every region a multiple of
// 128 bytes, so every 16-row / 16-column fragment pointer is 32-byte aligned).
template <int HSP>
struct tc_shape {
    static constexpr int LDH = GT_ATTN_TC_LDH(HSP);   // E row stride of a staged (64, HSP) tile
    static constexpr int NK = HSP / 16;               // 16-wide column blocks of a row
    static constexpr int TILE = GT_ATTN_TC_TILE(HSP); // elements of one staged tile
    // forward: per-warp fp32 buffer holds a 16 x 64 score tile, then the 16 x HSP P V
    static constexpr int WF_FWD = GT_ATTN_TC_WF_FWD(HSP);
    // backward: two 16 x 64 fp32 tiles (S, dP); the final 16 x HSP gradient fits in them
    static constexpr int WF_BWD = GT_ATTN_TC_WF_BWD;
    // 3 staged tiles (Q, K, V), P, the warps' buffers, m and l
    static constexpr size_t FWD_BYTES = GT_ATTN_TC_FWD_BYTES(HSP);
    // 4 staged tiles (Q, K, V, dO), dS, the warps' buffers
    static constexpr size_t DQ_BYTES = GT_ATTN_TC_DQ_BYTES(HSP);
    // 4 staged tiles (K, V, Q, dO), P^T and dS^T, the warps' buffers, lse and D
    static constexpr size_t DKV_BYTES = GT_ATTN_TC_DKV_BYTES(HSP);
    static_assert(16 * HSP <= WF_BWD, "the 16 x HSP gradient tile must fit the backward warp buffer");
};

// Stage rows [r0, r0+n) of a strided (rows, hs) fp32 view (row stride ld)
// into s (64, LDH) as E; zero beyond n rows and hs columns. vec: hs, ld and
// src are multiples of 4 floats / 16 bytes (float4 loads). At most 4 float4
// loads in flight per thread, so staging adds few registers to the kernels
// that keep accumulators live across it.
template <int HSP, typename E>
__device__ __forceinline__ void tc_stage(E *s, const float *src, int ld, int r0, int n, int hs, bool vec) {
    using T = tc_shape<HSP>;
    if (vec) {
        constexpr int V = HSP / 4, ITER = TC_ROWS * V / TC_THREADS, CH = ITER < 4 ? ITER : 4;
#pragma unroll
        for (int k0 = 0; k0 < ITER; k0 += CH) {
            float4 v[CH];
#pragma unroll
            for (int k = 0; k < CH; k++) {
                const int idx = threadIdx.x + (k0 + k) * TC_THREADS, r = idx / V, c = 4 * (idx % V);
                v[k] = make_float4(0.f, 0.f, 0.f, 0.f);
                if (r < n && c < hs) v[k] = *(const float4 *)(src + (size_t)(r0 + r) * ld + c);
            }
#pragma unroll
            for (int k = 0; k < CH; k++) {
                const int idx = threadIdx.x + (k0 + k) * TC_THREADS, r = idx / V, c = 4 * (idx % V);
                E *d = s + r * T::LDH + c;
                tc_from2(d, v[k].x, v[k].y);
                tc_from2(d + 2, v[k].z, v[k].w);
            }
        }
        return;
    }
    for (int idx = threadIdx.x; idx < TC_ROWS * HSP; idx += TC_THREADS) {
        const int r = idx / HSP, c = idx % HSP;
        tc_from(s[r * T::LDH + c], r < n && c < hs ? src[(size_t)(r0 + r) * ld + c] : 0.0f);
    }
}

// dst (16, 64) fp32, row stride TC_SLD = A (16, HSP) . Bt (64, HSP)^T: A this
// warp's 16 rows of a staged tile, Bt a whole staged tile (its rows are the
// output columns). Up to HSP 64 the A fragments are loaded once for the four
// column blocks; at 128 they would cost 32 registers more, and are reloaded.
template <int HSP, typename E>
__device__ __forceinline__ void tc_abt(float *dst, const E *A, const E *Bt) {
    using T = tc_shape<HSP>;
    constexpr int NA = T::NK <= 4 ? T::NK : 1;
    frag_a<E> a[NA];
    if (NA == T::NK) {
#pragma unroll
        for (int kk = 0; kk < NA; kk++) wmma::load_matrix_sync(a[kk], A + kk * 16, T::LDH);
    }
#pragma unroll 1
    for (int jn = 0; jn < TC_ROWS / 16; jn++) {
        frag_c c;
        wmma::fill_fragment(c, 0.0f);
#pragma unroll
        for (int kk = 0; kk < T::NK; kk++) {
            if (NA != T::NK) wmma::load_matrix_sync(a[0], A + kk * 16, T::LDH);
            frag_b_col<E> b; // (HSP, 64) = Bt^T: element (d, j) at Bt[j * LDH + d], column-major
            wmma::load_matrix_sync(b, Bt + jn * 16 * T::LDH + kk * 16, T::LDH);
            wmma::mma_sync(c, a[NA == T::NK ? kk : 0], b, c);
        }
        wmma::store_matrix_sync(dst + jn * 16, c, TC_SLD, wmma::mem_row_major);
    }
}

// dst (16, HSP) fp32, row stride HSP = P (16, 64) . B (64, HSP), one 16-column
// block at a time (one accumulator live: the forward keeps its output rows in
// registers already).
template <int HSP, typename E>
__device__ __forceinline__ void tc_pb_store(float *dst, const E *P, const E *B) {
    using T = tc_shape<HSP>;
#pragma unroll 1
    for (int n = 0; n < T::NK; n++) {
        frag_c c;
        wmma::fill_fragment(c, 0.0f);
#pragma unroll
        for (int kk = 0; kk < TC_ROWS / 16; kk++) {
            frag_a<E> a;
            frag_b_row<E> b;
            wmma::load_matrix_sync(a, P + kk * 16, TC_PLD);
            wmma::load_matrix_sync(b, B + kk * 16 * T::LDH + n * 16, T::LDH);
            wmma::mma_sync(c, a, b, c);
        }
        wmma::store_matrix_sync(dst + n * 16, c, HSP, wmma::mem_row_major);
    }
}

// acc[n] += P (16, 64) . B (64, HSP): P this warp's rows of a E (64, TC_PLD)
// tile, B a staged tile (row-major, its rows the contraction index).
template <int HSP, typename E>
__device__ __forceinline__ void tc_pb_acc(frag_c *acc, const E *P, const E *B) {
    using T = tc_shape<HSP>;
    constexpr int UNROLL = T::NK <= 2 ? TC_ROWS / 16 : 1; // wide tiles: B fragments in flight cost registers
#pragma unroll UNROLL
    for (int kk = 0; kk < TC_ROWS / 16; kk++) {
        frag_a<E> a;
        wmma::load_matrix_sync(a, P + kk * 16, TC_PLD);
#pragma unroll
        for (int n = 0; n < T::NK; n++) {
            frag_b_row<E> b;
            wmma::load_matrix_sync(b, B + kk * 16 * T::LDH + n * 16, T::LDH);
            wmma::mma_sync(acc[n], a, b, acc[n]);
        }
    }
}

// Write this warp's 16 x HSP fp32 tile buf (row stride HSP) to rows
// [t0, t0+16) of a strided view (row stride ld), rows below t1 and columns
// below hs only. Lane l handles elements i * 32 + l: coalesced rows.
template <int HSP>
__device__ __forceinline__ void tc_write_rows(float *dst, size_t ld, const float *buf, int t0, int t1, int hs,
                                              int lane) {
#pragma unroll 4
    for (int i = 0; i < HSP / 2; i++) {
        const int e = i * 32 + lane, row = e / HSP, col = e % HSP;
        if (t0 + row < t1 && col < hs) dst[(size_t)(t0 + row) * ld + col] = buf[e];
    }
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define TC_ARCH_GUARD() __trap() // E wmma needs sm_80: the host never launches these there
#else
#define TC_ARCH_GUARD()
#endif

// grid (ceil(nq/64), NH, B)
template <int HSP, typename E>
__global__ void __launch_bounds__(TC_THREADS, TC_MIN_BLOCKS(HSP))
    k_attn_tc_fwd(float *out, float *lse, const float *qkv, int L, int C, int NH, int hs, int q0, int nq, float scale,
                  int vec) {
    TC_ARCH_GUARD();
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    using T = tc_shape<HSP>;
    extern __shared__ __align__(128) unsigned char tc_smem[];
    E *qs = (E *)tc_smem, *ks = qs + T::TILE, *vs = ks + T::TILE, *pb = vs + T::TILE; // (64, LDH) x3, (64, PLD)
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, r = lane >> 1, hf = lane & 1;
    float *wbuf = (float *)(pb + TC_ROWS * TC_PLD) + warp * T::WF_FWD; // this warp's scores, then P V
    float *rowf = (float *)(pb + TC_ROWS * TC_PLD) + TC_WARPS * T::WF_FWD + warp * 16; // per-row factor (16 per warp)
    const int b = blockIdx.z, h = blockIdx.y, C3 = 3 * C;
    const int i0 = q0 + blockIdx.x * TC_ROWS, q1 = q0 + nq, br = q1 - i0 < TC_ROWS ? q1 - i0 : TC_ROWS;
    const float *base = qkv + (size_t)b * L * C3 + (size_t)h * hs;
    const float sl2 = scale * TC_LOG2E; // scores in log2 units: exp2f on the SFU
    tc_stage<HSP, E>(qs, base, C3, i0, br, hs, vec);
    float o[HSP / 2]; // elements i * 32 + lane of this warp's 16 x HSP output tile
#pragma unroll
    for (int i = 0; i < HSP / 2; i++) o[i] = 0.0f;
    float m = -INFINITY, l = 0.0f; // row r's running max (log2 units) and sum, in both lanes of the pair
    const float *srow = wbuf + r * TC_SLD;
    E *prow = pb + (warp * 16 + r) * TC_PLD;
    for (int j0 = 0; j0 < L; j0 += TC_ROWS) {
        const int bc = L - j0 < TC_ROWS ? L - j0 : TC_ROWS;
        __syncthreads(); // the previous tile's K, V are no longer read
        tc_stage<HSP, E>(ks, base + C, C3, j0, bc, hs, vec);
        tc_stage<HSP, E>(vs, base + 2 * C, C3, j0, bc, hs, vec);
        __syncthreads();
        tc_abt<HSP, E>(wbuf, qs + warp * 16 * T::LDH, ks); // S (16, 64), unscaled
        __syncwarp();
        float mt = -INFINITY;
#pragma unroll 8
        for (int j = 0; j < TC_ROWS / 2; j++) {
            const int c = 2 * j + hf; // interleaved columns: the pair's loads fall in different banks
            if (c < bc) mt = fmaxf(mt, srow[c] * sl2);
        }
        mt = fmaxf(mt, __shfl_xor_sync(TC_FULL, mt, 1));
        const float mnew = fmaxf(m, mt); // finite: every key tile has a column
        const float alpha = exp2f(m - mnew); // 0 on the first tile (m = -inf)
        float sum = 0.0f;
#pragma unroll 8
        for (int j = 0; j < TC_ROWS / 2; j++) {
            const int c = 2 * j + hf;
            E p;
            tc_from(p, c < bc ? exp2f(srow[c] * sl2 - mnew) : 0.0f);
            prow[c] = p;
            sum += tc_to(p); // the sum of exactly the weights P V uses
        }
        sum += __shfl_xor_sync(TC_FULL, sum, 1);
        l = l * alpha + sum;
        m = mnew;
        if (hf == 0) rowf[r] = alpha;
        __syncwarp(); // S read, P and alpha written
        tc_pb_store<HSP, E>(wbuf, pb + warp * 16 * TC_PLD, vs); // P V (16, HSP), row stride HSP
        __syncwarp();
#pragma unroll
        for (int i = 0; i < HSP / 2; i++) {
            const int e = i * 32 + lane;
            o[i] = fmaf(o[i], rowf[e / HSP], wbuf[e]);
        }
        __syncwarp(); // wbuf and rowf are rewritten by the next tile
    }
    if (hf == 0) rowf[r] = 1.0f / l;
    __syncwarp();
#pragma unroll
    for (int i = 0; i < HSP / 2; i++) { // reuse wbuf as the output tile, then write it
        const int e = i * 32 + lane;
        wbuf[e] = o[i] * rowf[e / HSP];
    }
    __syncwarp();
    const int t0 = i0 + warp * 16;
    tc_write_rows<HSP>(out + (size_t)b * L * C + (size_t)h * hs, (size_t)C, wbuf, t0, q1, hs, lane);
    if (hf == 0 && t0 + r < q1) lse[((size_t)b * NH + h) * L + t0 + r] = (m + log2f(l)) * TC_LN2;
#endif
}

// grid (ceil(nq/64), NH, B): one block per 64 query rows, all key tiles
template <int HSP, typename E>
__global__ void __launch_bounds__(TC_THREADS, TC_MIN_BLOCKS(HSP))
    k_attn_tc_dq(float *dqkv, const float *dout, const float *qkv, const float *lse, const float *D, int L, int C,
                 int NH, int hs, int q0, int nq, float scale, int vec) {
    TC_ARCH_GUARD();
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    using T = tc_shape<HSP>;
    extern __shared__ __align__(128) unsigned char tc_smem[];
    E *qs = (E *)tc_smem, *gs = qs + T::TILE, *ks = gs + T::TILE, *vs = ks + T::TILE;
    E *dsb = vs + T::TILE; // (64, PLD)
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, r = lane >> 1, hf = lane & 1;
    float *ws = (float *)(dsb + TC_ROWS * TC_PLD) + warp * T::WF_BWD, *wd = ws + 16 * TC_SLD; // S, dP (16, 64)
    const int b = blockIdx.z, h = blockIdx.y, C3 = 3 * C;
    const int i0 = q0 + blockIdx.x * TC_ROWS, q1 = q0 + nq, br = q1 - i0 < TC_ROWS ? q1 - i0 : TC_ROWS;
    const float *base = qkv + (size_t)b * L * C3 + (size_t)h * hs;
    const float *dob = dout + (size_t)b * L * C + (size_t)h * hs;
    const float sl2 = scale * TC_LOG2E;
    tc_stage<HSP, E>(qs, base, C3, i0, br, hs, vec);
    tc_stage<HSP, E>(gs, dob, C, i0, br, hs, vec);
    const int t = i0 + warp * 16 + r;
    const size_t bh = (size_t)b * NH + h;
    const float lr = t < q1 ? lse[bh * L + t] * TC_LOG2E : 0.0f, dr = t < q1 ? D[bh * L + t] : 0.0f;
    frag_c dq[T::NK];
#pragma unroll
    for (int n = 0; n < T::NK; n++) wmma::fill_fragment(dq[n], 0.0f);
    E *dsrow = dsb + (warp * 16 + r) * TC_PLD;
    for (int j0 = 0; j0 < L; j0 += TC_ROWS) {
        const int bc = L - j0 < TC_ROWS ? L - j0 : TC_ROWS;
        __syncthreads();
        tc_stage<HSP, E>(ks, base + C, C3, j0, bc, hs, vec);
        tc_stage<HSP, E>(vs, base + 2 * C, C3, j0, bc, hs, vec);
        __syncthreads();
        tc_abt<HSP, E>(ws, qs + warp * 16 * T::LDH, ks); // S = Q K^T
        tc_abt<HSP, E>(wd, gs + warp * 16 * T::LDH, vs); // dP = dO V^T
        __syncwarp();
#pragma unroll 8
        for (int j = 0; j < TC_ROWS / 2; j++) {
            const int c = 2 * j + hf;
            const float p = c < bc ? exp2f(ws[r * TC_SLD + c] * sl2 - lr) : 0.0f;
            tc_from(dsrow[c], p * (wd[r * TC_SLD + c] - dr) * scale);
        }
        __syncwarp();
        tc_pb_acc<HSP, E>(dq, dsb + warp * 16 * TC_PLD, ks); // dQ += dS K
    }
#pragma unroll
    for (int n = 0; n < T::NK; n++) wmma::store_matrix_sync(ws + n * 16, dq[n], HSP, wmma::mem_row_major);
    __syncwarp();
    tc_write_rows<HSP>(dqkv + (size_t)b * L * C3 + (size_t)h * hs, (size_t)C3, ws, i0 + warp * 16, q1, hs, lane);
#endif
}

// grid (ceil(L/64), NH, B): one block per 64 key rows, query tiles of [q0, q0+nq)
template <int HSP, typename E>
__global__ void __launch_bounds__(TC_THREADS, TC_MIN_BLOCKS(HSP))
    k_attn_tc_dkv(float *dqkv, const float *dout, const float *qkv, const float *lse, const float *D, int L, int C,
                  int NH, int hs, int q0, int nq, float scale, int vec) {
    TC_ARCH_GUARD();
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    using T = tc_shape<HSP>;
    extern __shared__ __align__(128) unsigned char tc_smem[];
    E *ks = (E *)tc_smem, *vs = ks + T::TILE, *qs = vs + T::TILE, *gs = qs + T::TILE;
    E *pb = gs + T::TILE, *dsb = pb + TC_ROWS * TC_PLD; // (64, PLD) each
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, r = lane >> 1, hf = lane & 1;
    float *ws = (float *)(dsb + TC_ROWS * TC_PLD) + warp * T::WF_BWD, *wd = ws + 16 * TC_SLD; // S^T, dP^T (16, 64)
    float *ls = (float *)(dsb + TC_ROWS * TC_PLD) + TC_WARPS * T::WF_BWD, *dsh = ls + TC_ROWS; // lse (log2), D
    const int b = blockIdx.z, h = blockIdx.y, C3 = 3 * C;
    const int s0 = blockIdx.x * TC_ROWS, bk = L - s0 < TC_ROWS ? L - s0 : TC_ROWS;
    const float *base = qkv + (size_t)b * L * C3 + (size_t)h * hs;
    const float *dob = dout + (size_t)b * L * C + (size_t)h * hs;
    const size_t bh = (size_t)b * NH + h;
    const float sl2 = scale * TC_LOG2E;
    tc_stage<HSP, E>(ks, base + C, C3, s0, bk, hs, vec);
    tc_stage<HSP, E>(vs, base + 2 * C, C3, s0, bk, hs, vec);
    frag_c dk[T::NK], dv[T::NK];
#pragma unroll
    for (int n = 0; n < T::NK; n++) {
        wmma::fill_fragment(dk[n], 0.0f);
        wmma::fill_fragment(dv[n], 0.0f);
    }
    E *prow = pb + (warp * 16 + r) * TC_PLD, *dsrow = dsb + (warp * 16 + r) * TC_PLD;
    const int q1 = q0 + nq;
    for (int i0 = q0; i0 < q1; i0 += TC_ROWS) {
        const int br = q1 - i0 < TC_ROWS ? q1 - i0 : TC_ROWS;
        __syncthreads();
        tc_stage<HSP, E>(qs, base, C3, i0, br, hs, vec);
        tc_stage<HSP, E>(gs, dob, C, i0, br, hs, vec);
        if (threadIdx.x < TC_ROWS) {
            const bool in = (int)threadIdx.x < br;
            ls[threadIdx.x] = in ? lse[bh * L + i0 + threadIdx.x] * TC_LOG2E : 0.0f;
            dsh[threadIdx.x] = in ? D[bh * L + i0 + threadIdx.x] : 0.0f;
        }
        __syncthreads();
        tc_abt<HSP, E>(ws, ks + warp * 16 * T::LDH, qs); // S^T = K Q^T (keys x queries)
        tc_abt<HSP, E>(wd, vs + warp * 16 * T::LDH, gs); // dP^T = V dO^T
        __syncwarp();
#pragma unroll 8
        for (int j = 0; j < TC_ROWS / 2; j++) {
            const int c = 2 * j + hf; // query column
            const float p = c < br ? exp2f(ws[r * TC_SLD + c] * sl2 - ls[c]) : 0.0f;
            tc_from(prow[c], p);
            tc_from(dsrow[c], p * (wd[r * TC_SLD + c] - dsh[c]) * scale);
        }
        __syncwarp();
        tc_pb_acc<HSP, E>(dv, pb + warp * 16 * TC_PLD, gs);  // dV += P^T dO
        tc_pb_acc<HSP, E>(dk, dsb + warp * 16 * TC_PLD, qs); // dK += dS^T Q
    }
    float *row = dqkv + (size_t)b * L * C3 + (size_t)h * hs;
    const int t0 = s0 + warp * 16;
#pragma unroll
    for (int n = 0; n < T::NK; n++) wmma::store_matrix_sync(ws + n * 16, dk[n], HSP, wmma::mem_row_major);
    __syncwarp();
    tc_write_rows<HSP>(row + C, (size_t)C3, ws, t0, L, hs, lane);
    __syncwarp();
#pragma unroll
    for (int n = 0; n < T::NK; n++) wmma::store_matrix_sync(ws + n * 16, dv[n], HSP, wmma::mem_row_major);
    __syncwarp();
    tc_write_rows<HSP>(row + 2 * C, (size_t)C3, ws, t0, L, hs, lane);
#endif
}

// ------------------------------------------------------------------ host --

// The padded head size for hs (checked): 16, 32, 64 or 128.
static int tc_check_shapes(int B, int L, int C, int NH, int q0, int nq) {
    GT_CHECK(NH > 0 && C % NH == 0 && L > 0 && B > 0 && q0 >= 0 && nq > 0 && q0 + nq <= L, GT_EXIT_USAGE,
             "attention (CUDA, tensor cores): bad shape B=%d L=%d C=%d NH=%d rows [%d,%d)", B, L, C, NH, q0,
             q0 + nq);
    const int hs = C / NH;
    GT_CHECK(hs <= TC_MAX_HS, GT_EXIT_USAGE,
             "attention (CUDA): head size %d (model.d_model / model.heads) is above %d: use more heads, or "
             "train.device=cpu",
             hs, TC_MAX_HS);
    return hs <= 16 ? 16 : hs <= 32 ? 32 : hs <= 64 ? 64 : 128;
}

// float4 staging: every row start of every strided view a multiple of 16 bytes
static int tc_vec(int hs, const float *a, const float *b) {
    return hs % 4 == 0 && (((uintptr_t)a | (uintptr_t)b) & 15) == 0;
}

// Raise the dynamic shared memory limit of the kernels of one pass (forward;
// backward: dQ and dK/dV) of one head-size class on the current device, once
// per device. cudaFuncSetAttribute is not a stream operation, but a graph
// capture in thread-local mode may refuse it: gt_attention_cuda_prepare
// (attention.cu, at the creation of a model with attention, before any step)
// does it for every class that fits the device, so the calls below find it
// done. A class that does not fit (sm_86 / sm_89 at HSP 128: 101376 B per
// block) is never chosen by attention.cu (nn/ops/cuda/attention_plan.h); a
// direct call of it ends with one line instead of a CUDA error.
template <int HSP, typename E>
static void tc_optin(int pass) {
    static unsigned done[2] = {0, 0}; // one bit per device and pass (per instance: HSP and E)
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    const unsigned bit = dev < 32 ? 1u << dev : 0u;
    if (bit && (done[pass] & bit)) return;
    const size_t limit = gt_attention_smem_optin();
    GT_CHECK(gt_attn_fits(GT_ATTN_WMMA, pass, HSP, limit), GT_EXIT_USAGE,
             "attention (CUDA, wmma): the %s kernels at padded head size %d need %zu B of shared memory per "
             "block, this device allows %zu B (the gt_attention_*_cuda entry points choose kernels that fit)",
             pass == GT_ATTN_FWD ? "forward" : "backward", HSP, gt_attn_pass_smem(GT_ATTN_WMMA, pass, HSP), limit);
    using T = tc_shape<HSP>;
    const cudaFuncAttribute attr = cudaFuncAttributeMaxDynamicSharedMemorySize;
    if (pass == GT_ATTN_FWD) {
        CUDA_CHECK(cudaFuncSetAttribute(k_attn_tc_fwd<HSP, E>, attr, (int)T::FWD_BYTES));
    } else {
        CUDA_CHECK(cudaFuncSetAttribute(k_attn_tc_dq<HSP, E>, attr, (int)T::DQ_BYTES));
        CUDA_CHECK(cudaFuncSetAttribute(k_attn_tc_dkv<HSP, E>, attr, (int)T::DKV_BYTES));
    }
    done[pass] |= bit;
}

template <int HSP, typename E>
static void tc_forward(float *out, float *lse, const float *qkv, int B, int L, int C, int NH, int q0, int nq,
                       cudaStream_t st) {
    const int hs = C / NH;
    tc_optin<HSP, E>(GT_ATTN_FWD);
    k_attn_tc_fwd<HSP, E><<<dim3(gt_cdiv((size_t)nq, TC_ROWS), NH, B), TC_THREADS, tc_shape<HSP>::FWD_BYTES, st>>>(
        out, lse, qkv, L, C, NH, hs, q0, nq, 1.0f / sqrtf((float)hs), tc_vec(hs, qkv, qkv));
    GT_CUDA_LAUNCH_CHECK();
}

template <int HSP, typename E>
static void tc_backward(float *dqkv, const float *D, const float *dout, const float *qkv, const float *lse, int B,
                        int L, int C, int NH, int q0, int nq, cudaStream_t st) {
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    const int vec = tc_vec(hs, qkv, dout);
    tc_optin<HSP, E>(GT_ATTN_BWD);
    k_attn_tc_dq<HSP, E><<<dim3(gt_cdiv((size_t)nq, TC_ROWS), NH, B), TC_THREADS, tc_shape<HSP>::DQ_BYTES, st>>>(
        dqkv, dout, qkv, lse, D, L, C, NH, hs, q0, nq, scale, vec);
    GT_CUDA_LAUNCH_CHECK();
    k_attn_tc_dkv<HSP, E><<<dim3(gt_cdiv((size_t)L, TC_ROWS), NH, B), TC_THREADS, tc_shape<HSP>::DKV_BYTES, st>>>(
        dqkv, dout, qkv, lse, D, L, C, NH, hs, q0, nq, scale, vec);
    GT_CUDA_LAUNCH_CHECK();
}

extern "C" int gt_attention_tc_usable(void) {
    static int major[32];
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    if (dev >= 32) return 0;
    if (!major[dev]) CUDA_CHECK(cudaDeviceGetAttribute(&major[dev], cudaDevAttrComputeCapabilityMajor, dev));
    return major[dev] >= 8;
}

template <typename E>
static void tc_optin_any(int hsp, int pass) {
    switch (hsp) {
    case 16: tc_optin<16, E>(pass); break;
    case 32: tc_optin<32, E>(pass); break;
    case 64: tc_optin<64, E>(pass); break;
    default: tc_optin<128, E>(pass); break;
    }
}
void gt_attention_tc_optin(gt_attention_tc_type type, int hsp, int pass) {
    if (type == GT_ATTENTION_TC_FP16) tc_optin_any<f16>(hsp, pass);
    else tc_optin_any<bf16>(hsp, pass);
}

template <typename E>
static void tc_forward_any(float *out, float *lse, const float *qkv, int B, int L, int C, int NH, int q0, int nq,
                           cudaStream_t st) {
    switch (tc_check_shapes(B, L, C, NH, q0, nq)) {
    case 16: tc_forward<16, E>(out, lse, qkv, B, L, C, NH, q0, nq, st); break;
    case 32: tc_forward<32, E>(out, lse, qkv, B, L, C, NH, q0, nq, st); break;
    case 64: tc_forward<64, E>(out, lse, qkv, B, L, C, NH, q0, nq, st); break;
    default: tc_forward<128, E>(out, lse, qkv, B, L, C, NH, q0, nq, st); break;
    }
}
template <typename E>
static void tc_backward_any(float *dqkv, const float *D, const float *dout, const float *qkv, const float *lse,
                            int B, int L, int C, int NH, int q0, int nq, int hsp, cudaStream_t st) {
    switch (hsp) {
    case 16: tc_backward<16, E>(dqkv, D, dout, qkv, lse, B, L, C, NH, q0, nq, st); break;
    case 32: tc_backward<32, E>(dqkv, D, dout, qkv, lse, B, L, C, NH, q0, nq, st); break;
    case 64: tc_backward<64, E>(dqkv, D, dout, qkv, lse, B, L, C, NH, q0, nq, st); break;
    default: tc_backward<128, E>(dqkv, D, dout, qkv, lse, B, L, C, NH, q0, nq, st); break;
    }
}

extern "C" void gt_attention_tc_forward_rows_cuda(gt_attention_tc_type type, float *out, float *lse,
                                                  const float *qkv, int B, int L, int C, int NH, int q0, int nq,
                                                  cudaStream_t st) {
    GT_CHECK(gt_attention_tc_usable(), GT_EXIT_USAGE,
             "attention (CUDA): the tensor-core kernels need compute capability 8.0 or newer");
    if (type == GT_ATTENTION_TC_FP16) tc_forward_any<f16>(out, lse, qkv, B, L, C, NH, q0, nq, st);
    else tc_forward_any<bf16>(out, lse, qkv, B, L, C, NH, q0, nq, st);
}

extern "C" void gt_attention_tc_backward_rows_cuda(gt_attention_tc_type type, float *dqkv, float *scratch,
                                                   const float *dout, const float *qkv, const float *out,
                                                   const float *lse, int B, int L, int C, int NH, int q0, int nq,
                                                   cudaStream_t st) {
    GT_CHECK(gt_attention_tc_usable(), GT_EXIT_USAGE,
             "attention (CUDA): the tensor-core kernels need compute capability 8.0 or newer");
    const int hsp = tc_check_shapes(B, L, C, NH, q0, nq);
    float *D = scratch; // (B,NH,L), and the q part of dqkv zeroed outside the rows
    gt_attention_backward_prep_cuda(D, dqkv, dout, out, B, L, C, NH, q0, nq, st);
    if (type == GT_ATTENTION_TC_FP16) tc_backward_any<f16>(dqkv, D, dout, qkv, lse, B, L, C, NH, q0, nq, hsp, st);
    else tc_backward_any<bf16>(dqkv, D, dout, qkv, lse, B, L, C, NH, q0, nq, hsp, st);
}
