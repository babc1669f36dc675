// nn/ops/cuda/common.cuh: helpers shared by the CUDA op files (internal).
#pragma once
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "core/check_cuda.h"
#include "nn/ops/cuda/ops_cuda.h"

#define GT_CUDA_LAUNCH_CHECK() CUDA_CHECK(cudaGetLastError())

static inline unsigned gt_cdiv(size_t a, size_t b) { return (unsigned)((a + b - 1) / b); }

// Grid size for a grid-stride elementwise loop over n elements.
static inline unsigned gt_grid_1d(size_t n, int threads) {
    size_t g = (n + (size_t)threads - 1) / (size_t)threads;
    if (g > 65535u * 8u) g = 65535u * 8u;
    return g ? (unsigned)g : 1u;
}

template <typename T>
__device__ __forceinline__ T gt_warp_sum(T v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float gt_warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
// Sum over the block (blockDim.x a multiple of 32, <= 1024); result valid in
// every thread. Uses 32 elements of static shared memory.
template <typename T>
__device__ __forceinline__ T gt_block_sum(T v) {
    __shared__ T part[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = gt_warp_sum(v);
    __syncthreads();  // protect `part` from a previous call
    if (lane == 0) part[warp] = v;
    __syncthreads();
    T r = lane < nw ? part[lane] : (T)0;
    return gt_warp_sum(r);
}

// Row-major GEMM on the tensor cores / SIMT per the current precision:
//   C (M,N) = alpha op(A) (M,K) op(B) (K,N) + beta C, leading dims in elements.
void gt_cuda_gemm(cudaStream_t stream, bool ta, bool tb, int M, int N, int K, float alpha, const float *A,
                  int lda, const float *B, int ldb, float beta, float *C, int ldc);
// Strided batched form (strides in elements, 0 allowed for a shared operand).
void gt_cuda_gemm_batched(cudaStream_t stream, bool ta, bool tb, int M, int N, int K, float alpha,
                          const float *A, int lda, long long sA, const float *B, int ldb, long long sB,
                          float beta, float *C, int ldc, long long sC, int batch);
// Per-stream resources (context.cu): each stream that runs these ops has its
// own cuBLAS handle and workspace and its own scratch, so work on two streams
// never shares a buffer. gt_cuda_stream_prepare makes them (outside a step: a
// step may be captured into a CUDA graph, where cudaMalloc is not allowed;
// the accessors below also make them on first use), gt_cuda_stream_release
// frees them before the stream is destroyed.
void gt_cuda_stream_prepare(cudaStream_t st);
void gt_cuda_stream_release(cudaStream_t st);
#ifdef GT_HAVE_CUDNN
// The stream's cuDNN handle (bound to st) and a dropout descriptor with
// dropout 0 for cudnnSetRNNDescriptor_v8; made on first use, which must be
// outside a step (lstm_cudnn.cu asks at model creation).
cudnnHandle_t gt_cuda_cudnn(cudaStream_t st);
cudnnDropoutDescriptor_t gt_cuda_cudnn_no_dropout(cudaStream_t st);
#endif
// Small device scratch (16 doubles), for reductions whose result goes back to
// the host.
double *gt_cuda_dscratch(cudaStream_t st);
// Per-block partial sums of the fixed-order reductions (GT_CUDA_MAX_PARTS
// doubles, nn/ops/cuda/sizes.h).
double *gt_cuda_dpartials(cudaStream_t st);
// Per-block column partial sums of the fixed-order column reductions (bias
// and LayerNorm parameter gradients, dense.cu): GT_CUDA_COL_PARTS floats, the
// most any (rows, columns) shape needs with dense.cu's grid rule (the size:
// nn/ops/cuda/sizes.h, which the planner counts per stream).
float *gt_cuda_col_partials(cudaStream_t st);

// Attention backward, first step of every path (attention_common.cu): D (B,NH,L) =
// rowsum(dO * O) at the rows [q0, q0+nq), and the q part of dqkv zeroed
// outside them.
void gt_attention_backward_prep_cuda(float *D, float *dqkv, const float *dout, const float *out, int B, int L, int C,
                                     int NH, int q0, int nq, cudaStream_t st);
// The dynamic shared memory a block may opt in to on the current device
// (cudaDevAttrMaxSharedMemoryPerBlockOptin), read once per device
// (attention_common.cu): what nn/ops/cuda/attention_plan.h's choice is made against.
size_t gt_attention_smem_optin(void);
// The current device's compute capability major and that opt-in limit.
void gt_attention_device_limits(int *major, size_t *optin);
// The shared-memory opt-in of the kernels of one pass (GT_ATTN_FWD,
// GT_ATTN_BWD) at padded head size hsp on the current device, once per
// device: the wmma kernels of attention_tc.cu, the mma kernels of
// attention_mma.cu. Outside any graph capture (gt_attention_cuda_prepare
// does every class that fits first); a class that does not fit ends the job
// with one line.
void gt_attention_tc_optin(gt_attention_tc_type type, int hsp, int pass);
void gt_attention_mma_optin(int hsp, int pass);
