// nn/ops/cuda/attention_mma.cu: multi-head self-attention (non-causal) on the
// bf16 tensor cores with register-resident score fragments, FlashAttention-2
// style: mma.sync.m16n8k16 through inline PTX, ldmatrix for the operand
// fragments, cp.async double-buffered tiles. A lab variant beside the wmma
// kernels of attention_tc.cu (the default): chosen by
// gt_attention_tc_set_kernel(GT_ATTENTION_TC_MMA) (the device model sets it
// from GT_ATTN_IMPL=mma) in BF16 precision, or called directly (the lab
// tests/gpu/dev/attention.c, row mma_bf16; tests/gpu/test_attention_mma.c).
// Same layouts, same lse convention (natural log of sum exp(score), scores
// scaled by 1/sqrt(hs)), same maths and the same bf16 rounding points as
// attention_tc.cu (P and dS rounded to bf16, the forward's row sum adding the
// rounded P): either path's out and lse feed the other's backward.
//
// Head sizes: any up to 128, padded to HSP = 16, 32, 64 or 128 (as the wmma
// kernels); HSP 128 runs one block per SM and its dK/dV kernel reloads the K
// and V fragments from shared memory instead of holding them. fp16 tiles
// (FP16 precision) always take the wmma kernels.
//
// Staging: a bf16 copy, not register staging. cp.async copies global ->
// shared without passing through registers but cannot convert, and q, k, v
// and dout are fp32. Two ways out: (a) stage through registers (fp32 loads of
// tile j+1 held in registers during tile j, converted and stored after it),
// which costs HSP registers per thread for a 64-row K+V tile (64 at HSP 64, on
// top of the accumulators) and reads fp32 from L2 on every query tile; or (b)
// one conversion kernel per call writes bf16 copies of q, k, v (and dout in
// the backward) into the op's scratch, head-major and zero-padded, (B, NH, L,
// HSP) each, which the kernels then stream with cp.async. We take (b): the
// K/V stream of each block, L x HSP x 2 tensors, is read once per query tile
// (L / 128 times per head), so it dominates global/L2 traffic, and bf16 halves
// it; every row is HSP x 2 bytes, 16-byte aligned, padded with zeros (no
// column masks, no scalar staging path for odd head sizes); and the
// registers stay with the accumulators. Cost: one read of q, k, v (and dout)
// and one write of the copies per call (6 bytes per element: 25 M elements,
// ~40 us at 4 TB/s, for the forward at s2p_tf's shape below, ~10 % of its
// expected 0.4 ms; 34 M, ~50 us, ~4 % of the backward), and memory: the
// scratch grows from D (B NH L floats) to D + 4 bf16 copies,
// gt_attention_mma_scratch_size (sizes.h) = B NH L + 2 B NH L HSP floats
// (64 MiB at B 8, L 4096, 8 heads, HSP 32; one area shared by all layers, as
// D is), counted by the planner when GT_ATTN_IMPL=mma
// (gt_model_device_work_elems).
//
// Tiles: blocks of 8 warps (256 threads). The forward and dQ kernels own 128
// query rows (16 per warp) and stream 64-key tiles; the dK/dV kernel owns 128
// key rows and streams 64-query tiles. Shared-memory rows are HSP + 8
// elements apart: 8 consecutive rows of an ldmatrix fall in 8 different
// 16-byte bank groups (stride = an odd multiple of 16 bytes mod 128), so
// neither ldmatrix nor cp.async has bank conflicts. Streamed tiles are double
// buffered: tile j+1 is in flight (cp.async, one commit group per tile, wait
// for all but the newest) while tile j is computed.
//
// Forward, per warp (16 query rows), per 64-key tile:
//   S = Q K^T          Q's A fragments loaded once (ldmatrix, kept in
//                      registers); K's B fragments by ldmatrix (no .trans);
//                      S stays in 8 C fragments (32 floats per lane)
//   online softmax     per lane on its two rows (g, g + 8), row max over the
//                      quad by two xor shuffles, exp2f in log2 units, P
//                      rounded to bf16 in place, O and the lane's partial row
//                      sums rescaled by alpha
//   O += P V           P's A fragments packed from the C fragments in
//                      registers (no shared memory), V's B fragments by
//                      ldmatrix.trans; O in HSP/8 C fragments (HSP/2 floats)
//   at the end: row sums over the quad, O / l, lse = (m + log2 l) ln 2.
// Backward (D = rowsum(dO O) first, as attention_tc.cu; P recomputed from
// lse), 16 keys (or queries) at a time, so only 2 score and 2 dP fragments
// are live:
//   dQ kernel   per 128-query tile over 64-key tiles: S = Q K^T, dP = dO V^T,
//               dS = P (dP - D) / sqrt(hs) -> bf16 A fragments, dQ += dS K
//               (K's B fragments by ldmatrix.trans)
//   dKV kernel  per 128-key tile over 64-query tiles: S^T = K Q^T,
//               dP^T = V dO^T, P^T and dS^T -> A fragments, dV += P^T dO,
//               dK += dS^T Q (dO, Q by ldmatrix.trans); lse and D of the
//               query tile staged with it
// Two kernels, no atomics, a fixed order: deterministic run to run. Rows
// past the end are zero-filled by cp.async (src-size 0), masked (p = 0) and
// never written.
//
// Index maths: every lane -> (row, column) map of the fragments and the
// per-element softmax / gradient formulas are the inline functions of
// nn/ops/cuda/mma_frag.h, which tests/nn/test_attention_mma_host.c uses to
// emulate one warp's ldmatrix + mma on the CPU and these kernels' tile
// loops against the CPU attention (ctest test_nn_attention_mma_host).
//
// Expected figures, by counting (NOT MEASURED: no GPU has run these kernels).
// s2p_tf: B 8, L 4096, NH 8, hs 32 (HSP 32); one layer's forward is 4 B NH
// L^2 hs = 137 GFLOP, backward 2.5x (the lab's metric). H100/H200 SXM: 132
// SMs at ~1.83 GHz, 989 TFLOP/s dense bf16 = ~4100 FLOPs per clock per SM;
// 35 % of it is ~1430.
//   L2 / DRAM. Per 64-key tile a block does 4 x 128 x 64 x HSP FLOPs and
//   streams 2 x 64 x HSP bf16 elements (K and V): 128 FLOPs per byte at any
//   HSP (128 rows per block). At 35 % of peak that is 2.7 TB/s from L2 (the
//   fp32 staging of attention_tc.cu with 64-row tiles needs 4x that); DRAM
//   sees each head's K and V (0.5 MiB at HSP 32) about once while they stay
//   in L2.
//   Shared memory. Per warp and 64-key tile, ldmatrix reads K and V whole
//   (64 x HSP x 2 bytes each) for 4 x 16 x 64 x HSP FLOPs: 16 FLOPs per byte,
//   ~90 B per clock per SM at 35 % against 128 B per clock: 70 % of the
//   shared-memory bandwidth, where attention_tc.cu moves every score through
//   shared memory about five times (which bounds it near 15 %).
//   Exponentials. One exp2 per score (MUFU: 16 per clock per SM) against
//   4 x HSP tensor FLOPs per score: at HSP 32 the MUFU alone caps the forward
//   at 16 x 128 = 2048 FLOPs per clock, 50 % of peak, and 35 % needs 70 % of
//   the MUFU rate plus ~6 FP32 instructions per score (scale, max, subtract,
//   convert, sum, mask: about half the FP32 issue rate). At hs 32 the
//   softmax, not the tensor cores, is the bound: expected 30-40 % of peak
//   forward at hs 32, 40-50 % at hs 64 (the same softmax work, twice the
//   FLOPs per score). Backward: 14 HSP tensor FLOPs per score done (dQ
//   kernel S, dP, dQ; dK/dV kernel S, dP, dV, dK) for 10 HSP counted and 2
//   exp2 per score: 25-30 % of peak expected (the HSP 64 dK/dV kernel holds
//   165 registers: one block of 8 warps per SM, little latency hiding).
//   Registers (ptxas, CUDA 13; sm_90 / sm_80) at HSP 16, 32, 64, 128:
//     forward  84 / 83,  102 / 98,  128 / 128, 206 / 202
//     dQ       66 / 66,   88 / 88,  121 / 121, 205 / 205
//     dK/dV    79 / 75,  115 / 111, 167 / 165, 215 / 207
//   no spills, no stack frame (ctest gpu_register_spills); conversion
//   kernel 28 / 26.
//   Occupancy. Launch bounds ask 2 blocks of 256 threads per SM (<= 128
//   registers, 16 warps) up to HSP 64 but for the HSP 64 dK/dV kernel, 1
//   block (8 warps) there and at HSP 128. Shared memory per block: (HSP + 8)
//   x 2 bytes x (128 + 4 x 64) rows forward = 30 / 54 / 102 KiB at HSP 32 /
//   64 / 128; (2 x 128 + 4 x 64) rows backward = 40 / 72 / 136 KiB (+ 1 KiB
//   for lse and D, double-buffered, in dK/dV: 140288 B at HSP 128). Grid at s2p_tf's shape: B NH L / 128 = 2048
//   blocks over 132 SMs, 7.8 waves at 2 per SM.
// Needs sm_80 or newer (bf16 mma, ldmatrix, cp.async).
#include <cuda_bf16.h>

#include "nn/ops/attention.h"
#include "nn/ops/cuda/attention_plan.h"
#include "nn/ops/cuda/common.cuh"
#include "nn/ops/cuda/mma_frag.h"
#include "nn/ops/cuda/sizes.h"

typedef __nv_bfloat16 bf16;

#define MM_WARPS GT_ATTN_MMA_WARPS
#define MM_THREADS (32 * MM_WARPS)
#define MM_OWN GT_ATTN_MMA_OWN // rows a block owns: queries (forward, dQ) or keys (dK/dV); 16 per warp
#define MM_STR GT_ATTN_MMA_STR // rows of a streamed tile: keys (forward, dQ) or queries (dK/dV)
#define MM_MAX_HSP 128
#define MM_LOG2E 1.4426950408889634f

// Resident blocks asked of ptxas: 2 (a 128-register cap) where the kernel's
// live state fits; the HSP 64 dK/dV kernel holds two HSP-wide accumulators
// (dK, dV: 64 floats per lane) and K, V fragments, and gets the whole
// register file (1 block of 8 warps; capped at 128 it would spill), as does
// every kernel at HSP 128.
#define MM_MIN_BLOCKS(HSP) ((HSP) <= 64 ? 2 : 1)
#define MM_MIN_BLOCKS_DKV(HSP) ((HSP) <= 32 ? 2 : 1)

template <int HSP>
struct mm_shape {
    static constexpr int LDH = HSP + 8;  // bf16 row stride of a shared-memory tile (gt_attn_mma_ldh)
    static constexpr int NK = HSP / 16;  // 16-wide k-chunks of a head row (S = Q K^T)
    static constexpr int NN = HSP / 8;   // 8-wide n-tiles of a head row (O, dQ, dK, dV)
    static constexpr int OWN = MM_OWN * LDH;
    static constexpr int STR = MM_STR * LDH;
    // the shared-memory plan: nn/ops/cuda/attention_plan.h (one formula for these
    // kernels, attention.cu's choice and the fit test)
    static constexpr size_t FWD_BYTES = GT_ATTN_MMA_FWD_BYTES(HSP); // Q, K and V double-buffered
    static constexpr size_t DQ_BYTES = GT_ATTN_MMA_DQ_BYTES(HSP);   // Q, dO, K and V double-buffered
    static constexpr size_t DKV_BYTES = GT_ATTN_MMA_DKV_BYTES(HSP); // K, V, Q and dO double-buffered, lse, D
    static_assert(FWD_BYTES == (size_t)(OWN + 4 * STR) * 2 && DQ_BYTES == (size_t)(2 * OWN + 4 * STR) * 2,
                  "attention_plan.h's formula is this layout's");
    static_assert(HSP % 16 == 0 && HSP <= MM_MAX_HSP, "HSP: 16, 32, 64 or 128");
    static_assert((LDH * 2) % 16 == 0 && ((LDH * 2 / 16) & 1) == 1, "row stride: an odd multiple of 16 bytes");
};

// ------------------------------------------------------------------ PTX --
__device__ __forceinline__ uint32_t mm_smem(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

// four 8x8 b16 matrices; lane l gives the address of row (l & 7) of matrix l >> 3
__device__ __forceinline__ void mm_ldm_x4(uint32_t r[4], const bf16 *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(mm_smem(p))
                 : "memory");
}
__device__ __forceinline__ void mm_ldm_x4_t(uint32_t r[4], const bf16 *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(mm_smem(p))
                 : "memory");
}
// d += A B (16x8x16, bf16 in, fp32 accumulate)
__device__ __forceinline__ void mm_mma(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// 16 bytes global -> shared, bypassing L1; zeros when !valid (src-size 0: nothing read)
__device__ __forceinline__ void mm_cp16(void *dst, const void *src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(mm_smem(dst)), "l"(src),
                 "r"(valid ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void mm_commit(void) { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// every group but the newest N complete (this thread's copies; __syncthreads after it for the block's)
template <int N>
__device__ __forceinline__ void mm_wait(void) {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
// two floats -> one register of two bf16 (lo in the low half), round to nearest even
__device__ __forceinline__ uint32_t mm_pack(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    uint32_t u;
    memcpy(&u, &v, 4);
    return u;
}

// The A fragment of the 16-column chunk kk of a score tile held as C
// fragments c[2 kk], c[2 kk + 1] (mma_frag.h, gt_c2a_*).
__device__ __forceinline__ void mm_c2a(uint32_t a[4], const float c0[4], const float c1[4]) {
#pragma unroll
    for (int r = 0; r < 4; r++) {
        const float *c = gt_c2a_tile(r) ? c1 : c0;
        a[r] = mm_pack(c[gt_c2a_elem(r, 0)], c[gt_c2a_elem(r, 1)]);
    }
}

// Rows [r0, r0 + R) of a (rows, HSP) bf16 tensor into s (R, LDH), cp.async;
// rows at or past rend zero-filled (the address stays row r0's, valid).
template <int HSP, int R>
__device__ __forceinline__ void mm_load(bf16 *s, const bf16 *src, int r0, int rend) {
    constexpr int CPR = HSP / 8; // 16-byte chunks per row
#pragma unroll
    for (int idx = threadIdx.x; idx < R * CPR; idx += MM_THREADS) {
        const int r = idx / CPR, c = (idx % CPR) * 8;
        const bool ok = r0 + r < rend;
        mm_cp16(s + r * mm_shape<HSP>::LDH + c, src + (size_t)(ok ? r0 + r : r0) * HSP + c, ok);
    }
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define MM_ARCH_GUARD() __trap() // bf16 mma, ldmatrix, cp.async: sm_80; the host never launches these there
#define MM_ARCH_OK 0
#else
#define MM_ARCH_GUARD()
#define MM_ARCH_OK 1
#endif

// ------------------------------------------------------------ kernels --

// (B, NH, L, HSP) bf16 copy of rows [t0, t1) of a strided (B, L, ld) fp32
// view, head h at columns h hs .. h hs + hs - 1; columns [hs, HSP) zero.
__global__ void k_mm_to_bf16(bf16 *dst, const float *src, int B, int L, int NH, int hs, int hsp, int ld, int t0,
                             int t1) {
    const int half = hsp / 2, nt = t1 - t0;
    const size_t n = (size_t)B * NH * nt * half;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        const int c = 2 * (int)(idx % half);
        const size_t rest = idx / half;
        const int t = t0 + (int)(rest % nt);
        const size_t bh = rest / nt;
        const int h = (int)(bh % NH), b = (int)(bh / NH);
        const float *s = src + ((size_t)b * L + t) * ld + (size_t)h * hs;
        const float x = c < hs ? s[c] : 0.0f, y = c + 1 < hs ? s[c + 1] : 0.0f;
        *(__nv_bfloat162 *)(dst + (bh * L + t) * hsp + c) = __floats2bfloat162_rn(x, y);
    }
}

// grid (ceil(nq/128), NH, B): 128 query rows per block, all key tiles
template <int HSP>
__global__ void __launch_bounds__(MM_THREADS, MM_MIN_BLOCKS(HSP))
    k_attn_mma_fwd(float *out, float *lse, const bf16 *qb, const bf16 *kb, const bf16 *vb, int L, int C, int NH,
                   int hs, int q0, int nq, float scale) {
    MM_ARCH_GUARD();
#if MM_ARCH_OK
    using T = mm_shape<HSP>;
    extern __shared__ __align__(128) unsigned char mm_smem_buf[];
    bf16 *qs = (bf16 *)mm_smem_buf, *ks = qs + T::OWN, *vs = ks + 2 * T::STR; // Q (128), K[2], V[2] (64 each)
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const size_t bh = (size_t)blockIdx.z * NH + blockIdx.y;
    const int i0 = q0 + blockIdx.x * MM_OWN, q1 = q0 + nq, ntiles = (L + MM_STR - 1) / MM_STR;
    const bf16 *qg = qb + bh * L * HSP, *kg = kb + bh * L * HSP, *vg = vb + bh * L * HSP;
    const float sl2 = scale * MM_LOG2E; // scores in log2 units: exp2f
    mm_load<HSP, MM_OWN>(qs, qg, i0, q1);
    mm_commit(); // group: Q
    mm_load<HSP, MM_STR>(ks, kg, 0, L);
    mm_load<HSP, MM_STR>(vs, vg, 0, L);
    mm_commit(); // group: key tile 0
    mm_wait<1>();
    __syncthreads();
    uint32_t qf[T::NK][4]; // this warp's 16 query rows as A fragments, loaded once
#pragma unroll
    for (int kk = 0; kk < T::NK; kk++)
        mm_ldm_x4(qf[kk], qs + gt_ldm_a_off(lane, warp * 16, kk * 16, T::LDH));
    float o[T::NN][4];     // O (16, HSP), C fragments
#pragma unroll
    for (int n = 0; n < T::NN; n++)
#pragma unroll
        for (int i = 0; i < 4; i++) o[n][i] = 0.0f;
    float m[2] = {-INFINITY, -INFINITY}, lp[2] = {0.0f, 0.0f}; // rows g, g + 8: max (log2 units), partial sum
    for (int jt = 0; jt < ntiles; jt++) {
        const int buf = jt & 1, j0 = jt * MM_STR, bc = L - j0 < MM_STR ? L - j0 : MM_STR;
        if (jt + 1 < ntiles) { // the other buffer was last read in iteration jt - 1 (ended by a barrier)
            mm_load<HSP, MM_STR>(ks + (buf ^ 1) * T::STR, kg, j0 + MM_STR, L);
            mm_load<HSP, MM_STR>(vs + (buf ^ 1) * T::STR, vg, j0 + MM_STR, L);
        }
        mm_commit(); // possibly empty: one group per iteration, so wait<1> below means "tile jt is here"
        mm_wait<1>();
        __syncthreads();
        const bf16 *kt = ks + buf * T::STR, *vt = vs + buf * T::STR;
        float s[MM_STR / 8][4]; // S (16, 64): 8 C fragments
#pragma unroll
        for (int j = 0; j < MM_STR / 8; j++)
#pragma unroll
            for (int i = 0; i < 4; i++) s[j][i] = 0.0f;
#pragma unroll
        for (int np = 0; np < MM_STR / 16; np++)
#pragma unroll
            for (int kk = 0; kk < T::NK; kk++) {
                uint32_t b[4];
                mm_ldm_x4(b, kt + gt_ldm_bn_off(lane, np * 16, kk * 16, T::LDH));
                mm_mma(s[2 * np], qf[kk], b[0], b[1]);
                mm_mma(s[2 * np + 1], qf[kk], b[2], b[3]);
            }
        float mx[2] = {m[0], m[1]};
#pragma unroll
        for (int j = 0; j < MM_STR / 8; j++) gt_attn_frag_max(s[j], sl2, 8 * j, lane, bc, mx);
#pragma unroll
        for (int r = 0; r < 2; r++) { // the quad's 4 lanes hold the row's 64 columns
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
            const float alpha = gt_attn_alpha(m[r], mx[r]); // finite mx: every key tile has a column
            m[r] = mx[r];
            lp[r] *= alpha;
#pragma unroll
            for (int n = 0; n < T::NN; n++) {
                o[n][2 * r] *= alpha;
                o[n][2 * r + 1] *= alpha;
            }
        }
#pragma unroll
        for (int j = 0; j < MM_STR / 8; j++) gt_attn_frag_exp(s[j], sl2, 8 * j, lane, bc, m, lp);
#pragma unroll
        for (int kk = 0; kk < MM_STR / 16; kk++) { // O += P V, P from registers
            uint32_t pa[4];
            mm_c2a(pa, s[2 * kk], s[2 * kk + 1]);
#pragma unroll
            for (int np = 0; np < T::NN / 2; np++) {
                uint32_t b[4];
                mm_ldm_x4_t(b, vt + gt_ldm_bk_off(lane, kk * 16, np * 16, T::LDH));
                mm_mma(o[2 * np], pa, b[0], b[1]);
                mm_mma(o[2 * np + 1], pa, b[2], b[3]);
            }
        }
        __syncthreads(); // buffer buf is refilled by iteration jt + 1's prefetch
    }
    float inv[2], l[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] = lp[r] + __shfl_xor_sync(0xffffffffu, lp[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
        inv[r] = 1.0f / l[r];
    }
    const int t0 = i0 + warp * 16;
    float *ob = out + (size_t)blockIdx.z * L * C + (size_t)blockIdx.y * hs;
#pragma unroll
    for (int n = 0; n < T::NN; n++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int row = t0 + gt_mma_c_row(lane, i), col = 8 * n + gt_mma_c_col(lane, i);
            if (row < q1 && col < hs) ob[(size_t)row * C + col] = o[n][i] * inv[i >> 1];
        }
    if (gt_mma_quad(lane) == 0) {
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int row = t0 + gt_mma_c_row(lane, 2 * r);
            if (row < q1) lse[bh * L + row] = gt_attn_lse(m[r], l[r]);
        }
    }
#endif
}

// grid (ceil(nq/128), NH, B): 128 query rows per block, all key tiles
template <int HSP>
__global__ void __launch_bounds__(MM_THREADS, MM_MIN_BLOCKS(HSP))
    k_attn_mma_dq(float *dqkv, const bf16 *qb, const bf16 *kb, const bf16 *vb, const bf16 *gb, const float *lse,
                  const float *D, int L, int C, int NH, int hs, int q0, int nq, float scale) {
    MM_ARCH_GUARD();
#if MM_ARCH_OK
    using T = mm_shape<HSP>;
    extern __shared__ __align__(128) unsigned char mm_smem_buf[];
    bf16 *qs = (bf16 *)mm_smem_buf, *gs = qs + T::OWN, *ks = gs + T::OWN, *vs = ks + 2 * T::STR;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const size_t bh = (size_t)blockIdx.z * NH + blockIdx.y;
    const int i0 = q0 + blockIdx.x * MM_OWN, q1 = q0 + nq, ntiles = (L + MM_STR - 1) / MM_STR;
    const bf16 *qg = qb + bh * L * HSP, *gg = gb + bh * L * HSP, *kg = kb + bh * L * HSP, *vg = vb + bh * L * HSP;
    const float sl2 = scale * MM_LOG2E;
    mm_load<HSP, MM_OWN>(qs, qg, i0, q1);
    mm_load<HSP, MM_OWN>(gs, gg, i0, q1);
    mm_commit(); // group: Q, dO
    mm_load<HSP, MM_STR>(ks, kg, 0, L);
    mm_load<HSP, MM_STR>(vs, vg, 0, L);
    mm_commit(); // group: key tile 0
    mm_wait<1>();
    __syncthreads();
    const int t0 = i0 + warp * 16;
    float lr[2], dr[2]; // rows g, g + 8: lse (log2 units) and D
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int row = t0 + gt_mma_c_row(lane, 2 * r);
        lr[r] = row < q1 ? lse[bh * L + row] * MM_LOG2E : 0.0f;
        dr[r] = row < q1 ? D[bh * L + row] : 0.0f;
    }
    uint32_t qf[T::NK][4], gf[T::NK][4]; // this warp's Q and dO rows as A fragments, loaded once
#pragma unroll
    for (int kk = 0; kk < T::NK; kk++) {
        const int off = gt_ldm_a_off(lane, warp * 16, kk * 16, T::LDH);
        mm_ldm_x4(qf[kk], qs + off);
        mm_ldm_x4(gf[kk], gs + off);
    }
    float dq[T::NN][4];
#pragma unroll
    for (int n = 0; n < T::NN; n++)
#pragma unroll
        for (int i = 0; i < 4; i++) dq[n][i] = 0.0f;
    for (int jt = 0; jt < ntiles; jt++) {
        const int buf = jt & 1, j0 = jt * MM_STR, bc = L - j0 < MM_STR ? L - j0 : MM_STR;
        if (jt + 1 < ntiles) {
            mm_load<HSP, MM_STR>(ks + (buf ^ 1) * T::STR, kg, j0 + MM_STR, L);
            mm_load<HSP, MM_STR>(vs + (buf ^ 1) * T::STR, vg, j0 + MM_STR, L);
        }
        mm_commit();
        mm_wait<1>();
        __syncthreads();
        const bf16 *kt = ks + buf * T::STR, *vt = vs + buf * T::STR;
#pragma unroll 1 // one 16-key chunk's fragments live at a time (unrolled, ptxas hoists the next chunks' loads)
        for (int kc = 0; kc < MM_STR / 16; kc++) { // 16 keys at a time
            float s[2][4] = {}, dp[2][4] = {};
#pragma unroll
            for (int kk = 0; kk < T::NK; kk++) {
                const int off = gt_ldm_bn_off(lane, kc * 16, kk * 16, T::LDH);
                uint32_t b[4];
                mm_ldm_x4(b, kt + off); // S = Q K^T
                mm_mma(s[0], qf[kk], b[0], b[1]);
                mm_mma(s[1], qf[kk], b[2], b[3]);
                mm_ldm_x4(b, vt + off); // dP = dO V^T
                mm_mma(dp[0], gf[kk], b[0], b[1]);
                mm_mma(dp[1], gf[kk], b[2], b[3]);
            }
            float ds[2][4];
#pragma unroll
            for (int j = 0; j < 2; j++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    float p;
                    gt_attn_elem_bwd(s[j][i], dp[j][i], sl2, lr[i >> 1], dr[i >> 1], scale,
                                     kc * 16 + 8 * j + gt_mma_c_col(lane, i) < bc, &p, &ds[j][i]);
                }
            uint32_t da[4];
            mm_c2a(da, ds[0], ds[1]);
#pragma unroll
            for (int np = 0; np < T::NN / 2; np++) { // dQ += dS K
                uint32_t b[4];
                mm_ldm_x4_t(b, kt + gt_ldm_bk_off(lane, kc * 16, np * 16, T::LDH));
                mm_mma(dq[2 * np], da, b[0], b[1]);
                mm_mma(dq[2 * np + 1], da, b[2], b[3]);
            }
        }
        __syncthreads();
    }
    float *row0 = dqkv + (size_t)blockIdx.z * L * 3 * C + (size_t)blockIdx.y * hs;
#pragma unroll
    for (int n = 0; n < T::NN; n++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int row = t0 + gt_mma_c_row(lane, i), col = 8 * n + gt_mma_c_col(lane, i);
            if (row < q1 && col < hs) row0[(size_t)row * 3 * C + col] = dq[n][i];
        }
#endif
}

// grid (ceil(L/128), NH, B): 128 key rows per block, query tiles of [q0, q0 + nq)
template <int HSP>
__global__ void __launch_bounds__(MM_THREADS, MM_MIN_BLOCKS_DKV(HSP))
    k_attn_mma_dkv(float *dqkv, const bf16 *qb, const bf16 *kb, const bf16 *vb, const bf16 *gb, const float *lse,
                   const float *D, int L, int C, int NH, int hs, int q0, int nq, float scale) {
    MM_ARCH_GUARD();
#if MM_ARCH_OK
    using T = mm_shape<HSP>;
    extern __shared__ __align__(128) unsigned char mm_smem_buf[];
    bf16 *ks = (bf16 *)mm_smem_buf, *vs = ks + T::OWN, *qs = vs + T::OWN, *gs = qs + 2 * T::STR;
    float *ls = (float *)(gs + 2 * T::STR), *dsh = ls + 2 * MM_STR; // lse (log2 units), D: [2][64] each
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const size_t bh = (size_t)blockIdx.z * NH + blockIdx.y;
    const int s0 = blockIdx.x * MM_OWN, q1 = q0 + nq, ntiles = (nq + MM_STR - 1) / MM_STR;
    const bf16 *qg = qb + bh * L * HSP, *gg = gb + bh * L * HSP, *kg = kb + bh * L * HSP, *vg = vb + bh * L * HSP;
    const float sl2 = scale * MM_LOG2E;
    mm_load<HSP, MM_OWN>(ks, kg, s0, L);
    mm_load<HSP, MM_OWN>(vs, vg, s0, L);
    mm_commit(); // group: K, V
    mm_load<HSP, MM_STR>(qs, qg, q0, q1);
    mm_load<HSP, MM_STR>(gs, gg, q0, q1);
    mm_commit(); // group: query tile 0
    if (threadIdx.x < MM_STR) { // plain loads: visible after the loop's first barrier
        const int t = q0 + threadIdx.x;
        ls[threadIdx.x] = t < q1 ? lse[bh * L + t] * MM_LOG2E : 0.0f;
        dsh[threadIdx.x] = t < q1 ? D[bh * L + t] : 0.0f;
    }
    mm_wait<1>();
    __syncthreads();
    // This warp's K and V rows as A fragments: loaded once and held up to HSP
    // 64; at HSP 128 (64 more registers beside dK and dV's 128) reloaded from
    // shared memory at each use.
    constexpr bool HOLD = HSP <= 64;
    uint32_t kf[HOLD ? T::NK : 1][4], vf[HOLD ? T::NK : 1][4];
    if constexpr (HOLD) {
#pragma unroll
        for (int kk = 0; kk < T::NK; kk++) {
            const int off = gt_ldm_a_off(lane, warp * 16, kk * 16, T::LDH);
            mm_ldm_x4(kf[kk], ks + off);
            mm_ldm_x4(vf[kk], vs + off);
        }
    }
    float dk[T::NN][4], dv[T::NN][4];
#pragma unroll
    for (int n = 0; n < T::NN; n++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            dk[n][i] = 0.0f;
            dv[n][i] = 0.0f;
        }
    for (int it = 0; it < ntiles; it++) {
        const int buf = it & 1, i0 = q0 + it * MM_STR, br = q1 - i0 < MM_STR ? q1 - i0 : MM_STR;
        if (it + 1 < ntiles) {
            const int n0 = i0 + MM_STR;
            mm_load<HSP, MM_STR>(qs + (buf ^ 1) * T::STR, qg, n0, q1);
            mm_load<HSP, MM_STR>(gs + (buf ^ 1) * T::STR, gg, n0, q1);
            if (threadIdx.x < MM_STR) {
                const int t = n0 + threadIdx.x;
                ls[(buf ^ 1) * MM_STR + threadIdx.x] = t < q1 ? lse[bh * L + t] * MM_LOG2E : 0.0f;
                dsh[(buf ^ 1) * MM_STR + threadIdx.x] = t < q1 ? D[bh * L + t] : 0.0f;
            }
        }
        mm_commit();
        mm_wait<1>();
        __syncthreads();
        const bf16 *qt = qs + buf * T::STR, *gt = gs + buf * T::STR;
        const float *lt = ls + buf * MM_STR, *dt = dsh + buf * MM_STR;
#pragma unroll 1 // as in the dQ kernel
        for (int qc = 0; qc < MM_STR / 16; qc++) { // 16 queries at a time
            float s[2][4] = {}, dp[2][4] = {};
#pragma unroll
            for (int kk = 0; kk < T::NK; kk++) {
                const int off = gt_ldm_bn_off(lane, qc * 16, kk * 16, T::LDH);
                uint32_t b[4];
                const int ka = HOLD ? kk : 0;
                if constexpr (!HOLD) {
                    const int offa = gt_ldm_a_off(lane, warp * 16, kk * 16, T::LDH);
                    mm_ldm_x4(kf[0], ks + offa);
                    mm_ldm_x4(vf[0], vs + offa);
                }
                mm_ldm_x4(b, qt + off); // S^T = K Q^T (keys x queries)
                mm_mma(s[0], kf[ka], b[0], b[1]);
                mm_mma(s[1], kf[ka], b[2], b[3]);
                mm_ldm_x4(b, gt + off); // dP^T = V dO^T
                mm_mma(dp[0], vf[ka], b[0], b[1]);
                mm_mma(dp[1], vf[ka], b[2], b[3]);
            }
            float p[2][4], ds[2][4];
#pragma unroll
            for (int j = 0; j < 2; j++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const int c = qc * 16 + 8 * j + gt_mma_c_col(lane, i); // query column in the tile
                    gt_attn_elem_bwd(s[j][i], dp[j][i], sl2, lt[c], dt[c], scale, c < br, &p[j][i], &ds[j][i]);
                }
            uint32_t pa[4], da[4];
            mm_c2a(pa, p[0], p[1]);
            mm_c2a(da, ds[0], ds[1]);
#pragma unroll
            for (int np = 0; np < T::NN / 2; np++) {
                const int off = gt_ldm_bk_off(lane, qc * 16, np * 16, T::LDH);
                uint32_t b[4];
                mm_ldm_x4_t(b, gt + off); // dV += P^T dO
                mm_mma(dv[2 * np], pa, b[0], b[1]);
                mm_mma(dv[2 * np + 1], pa, b[2], b[3]);
                mm_ldm_x4_t(b, qt + off); // dK += dS^T Q
                mm_mma(dk[2 * np], da, b[0], b[1]);
                mm_mma(dk[2 * np + 1], da, b[2], b[3]);
            }
        }
        __syncthreads();
    }
    float *row0 = dqkv + (size_t)blockIdx.z * L * 3 * C + (size_t)blockIdx.y * hs;
    const int t0 = s0 + warp * 16;
#pragma unroll
    for (int n = 0; n < T::NN; n++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int row = t0 + gt_mma_c_row(lane, i), col = 8 * n + gt_mma_c_col(lane, i);
            if (row < L && col < hs) {
                row0[(size_t)row * 3 * C + C + col] = dk[n][i];
                row0[(size_t)row * 3 * C + 2 * C + col] = dv[n][i];
            }
        }
#endif
}

// ------------------------------------------------------------------ host --

static gt_attention_tc_kernel g_tc_kernel = GT_ATTENTION_TC_WMMA;
extern "C" void gt_attention_tc_set_kernel(gt_attention_tc_kernel k) { g_tc_kernel = k; }
extern "C" gt_attention_tc_kernel gt_attention_tc_get_kernel(void) { return g_tc_kernel; }

extern "C" size_t gt_attention_mma_scratch_elems(int B, int L, int C, int NH) {
    return gt_attention_mma_scratch_size(B, L, C, NH);
}

// The dynamic shared memory opt-in of one pass (forward; backward: dQ and
// dK/dV) at one head-size class, once per device: as tc_optin in
// attention_tc.cu (gt_attention_cuda_prepare does it for every class that
// fits the device, before any step; HSP 128 does not fit sm_86 / sm_89).
template <int HSP>
static void mm_optin(int pass) {
    static unsigned done[2] = {0, 0}; // one bit per device and pass
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    const unsigned bit = dev < 32 ? 1u << dev : 0u;
    if (bit && (done[pass] & bit)) return;
    const size_t limit = gt_attention_smem_optin();
    GT_CHECK(gt_attn_fits(GT_ATTN_MMA, pass, HSP, limit), GT_EXIT_USAGE,
             "attention (CUDA, mma): the %s kernels at padded head size %d need %zu B of shared memory per "
             "block, this device allows %zu B (the gt_attention_*_cuda entry points choose kernels that fit)",
             pass == GT_ATTN_FWD ? "forward" : "backward", HSP, gt_attn_pass_smem(GT_ATTN_MMA, pass, HSP), limit);
    using T = mm_shape<HSP>;
    const cudaFuncAttribute attr = cudaFuncAttributeMaxDynamicSharedMemorySize;
    if (pass == GT_ATTN_FWD) {
        CUDA_CHECK(cudaFuncSetAttribute(k_attn_mma_fwd<HSP>, attr, (int)T::FWD_BYTES));
    } else {
        CUDA_CHECK(cudaFuncSetAttribute(k_attn_mma_dq<HSP>, attr, (int)T::DQ_BYTES));
        CUDA_CHECK(cudaFuncSetAttribute(k_attn_mma_dkv<HSP>, attr, (int)T::DKV_BYTES));
    }
    done[pass] |= bit;
}

void gt_attention_mma_optin(int hsp, int pass) {
    switch (hsp) {
    case 16: mm_optin<16>(pass); break;
    case 32: mm_optin<32>(pass); break;
    case 64: mm_optin<64>(pass); break;
    default: mm_optin<128>(pass); break;
    }
}

// The scratch's pieces: D (B NH L floats, rounded up to 64), then the bf16
// copies q, k, v, dout, (B, NH, L, HSP) each.
typedef struct mm_scratch {
    float *D;
    bf16 *q, *k, *v, *g;
} mm_scratch;
static mm_scratch mm_carve(float *scratch, int B, int L, int NH, int hsp) {
    const size_t nd = ((size_t)B * NH * L + 63) / 64 * 64, nc = (size_t)B * NH * L * hsp;
    GT_CHECK(((uintptr_t)scratch & 15) == 0, GT_EXIT_INTERNAL, "attention (mma): scratch not 16-byte aligned");
    mm_scratch s;
    s.D = scratch;
    s.q = (bf16 *)(scratch + nd);
    s.k = s.q + nc;
    s.v = s.k + nc;
    s.g = s.v + nc;
    return s;
}

static void mm_convert(bf16 *dst, const float *src, int B, int L, int NH, int hs, int hsp, int ld, int t0, int t1,
                       cudaStream_t st) {
    const size_t n = (size_t)B * NH * (t1 - t0) * (hsp / 2);
    k_mm_to_bf16<<<gt_grid_1d(n, 256), 256, 0, st>>>(dst, src, B, L, NH, hs, hsp, ld, t0, t1);
    GT_CUDA_LAUNCH_CHECK();
}

// The padded head size for hs (checked): 16, 32, 64 or 128.
static int mm_hsp(int B, int L, int C, int NH, int q0, int nq) {
    GT_CHECK(NH > 0 && C % NH == 0 && L > 0 && B > 0 && q0 >= 0 && nq > 0 && q0 + nq <= L, GT_EXIT_USAGE,
             "attention (CUDA, mma): bad shape B=%d L=%d C=%d NH=%d rows [%d,%d)", B, L, C, NH, q0, q0 + nq);
    GT_CHECK(C / NH <= MM_MAX_HSP, GT_EXIT_USAGE,
             "attention (CUDA): head size %d (model.d_model / model.heads) is above %d: use more heads, or "
             "train.device=cpu",
             C / NH, MM_MAX_HSP);
    return gt_attention_mma_hsp(C / NH);
}

template <int HSP>
static void mm_forward(float *out, float *lse, const mm_scratch *s, int B, int L, int C, int NH, int q0, int nq,
                       cudaStream_t st) {
    const int hs = C / NH;
    mm_optin<HSP>(GT_ATTN_FWD);
    k_attn_mma_fwd<HSP><<<dim3(gt_cdiv((size_t)nq, MM_OWN), NH, B), MM_THREADS, mm_shape<HSP>::FWD_BYTES, st>>>(
        out, lse, s->q, s->k, s->v, L, C, NH, hs, q0, nq, 1.0f / sqrtf((float)hs));
    GT_CUDA_LAUNCH_CHECK();
}

template <int HSP>
static void mm_backward(float *dqkv, const mm_scratch *s, const float *lse, int B, int L, int C, int NH, int q0, int nq,
                        cudaStream_t st) {
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    mm_optin<HSP>(GT_ATTN_BWD);
    k_attn_mma_dq<HSP><<<dim3(gt_cdiv((size_t)nq, MM_OWN), NH, B), MM_THREADS, mm_shape<HSP>::DQ_BYTES, st>>>(
        dqkv, s->q, s->k, s->v, s->g, lse, s->D, L, C, NH, hs, q0, nq, scale);
    GT_CUDA_LAUNCH_CHECK();
    k_attn_mma_dkv<HSP><<<dim3(gt_cdiv((size_t)L, MM_OWN), NH, B), MM_THREADS, mm_shape<HSP>::DKV_BYTES, st>>>(
        dqkv, s->q, s->k, s->v, s->g, lse, s->D, L, C, NH, hs, q0, nq, scale);
    GT_CUDA_LAUNCH_CHECK();
}

extern "C" void gt_attention_mma_forward_rows_cuda(float *out, float *lse, float *scratch, const float *qkv, int B,
                                                   int L, int C, int NH, int q0, int nq, cudaStream_t st) {
    GT_CHECK(gt_attention_tc_usable(), GT_EXIT_USAGE,
             "attention (CUDA): the tensor-core kernels need compute capability 8.0 or newer");
    const int hsp = mm_hsp(B, L, C, NH, q0, nq);
    const int hs = C / NH;
    const mm_scratch s = mm_carve(scratch, B, L, NH, hsp);
    mm_convert(s.q, qkv, B, L, NH, hs, hsp, 3 * C, q0, q0 + nq, st); // only the rows read
    mm_convert(s.k, qkv + C, B, L, NH, hs, hsp, 3 * C, 0, L, st);
    mm_convert(s.v, qkv + 2 * C, B, L, NH, hs, hsp, 3 * C, 0, L, st);
    switch (hsp) {
    case 16: mm_forward<16>(out, lse, &s, B, L, C, NH, q0, nq, st); break;
    case 32: mm_forward<32>(out, lse, &s, B, L, C, NH, q0, nq, st); break;
    case 64: mm_forward<64>(out, lse, &s, B, L, C, NH, q0, nq, st); break;
    default: mm_forward<128>(out, lse, &s, B, L, C, NH, q0, nq, st); break;
    }
}

extern "C" void gt_attention_mma_backward_rows_cuda(float *dqkv, float *scratch, const float *dout, const float *qkv,
                                                    const float *out, const float *lse, int B, int L, int C, int NH,
                                                    int q0, int nq, cudaStream_t st) {
    GT_CHECK(gt_attention_tc_usable(), GT_EXIT_USAGE,
             "attention (CUDA): the tensor-core kernels need compute capability 8.0 or newer");
    const int hsp = mm_hsp(B, L, C, NH, q0, nq);
    const int hs = C / NH;
    const mm_scratch s = mm_carve(scratch, B, L, NH, hsp);
    gt_attention_backward_prep_cuda(s.D, dqkv, dout, out, B, L, C, NH, q0, nq, st);
    mm_convert(s.q, qkv, B, L, NH, hs, hsp, 3 * C, q0, q0 + nq, st);
    mm_convert(s.k, qkv + C, B, L, NH, hs, hsp, 3 * C, 0, L, st);
    mm_convert(s.v, qkv + 2 * C, B, L, NH, hs, hsp, 3 * C, 0, L, st);
    mm_convert(s.g, dout, B, L, NH, hs, hsp, C, q0, q0 + nq, st); // dout is read at the rows only
    switch (hsp) {
    case 16: mm_backward<16>(dqkv, &s, lse, B, L, C, NH, q0, nq, st); break;
    case 32: mm_backward<32>(dqkv, &s, lse, B, L, C, NH, q0, nq, st); break;
    case 64: mm_backward<64>(dqkv, &s, lse, B, L, C, NH, q0, nq, st); break;
    default: mm_backward<128>(dqkv, &s, lse, B, L, C, NH, q0, nq, st); break;
    }
}
