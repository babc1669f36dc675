/* nn/ops/cuda/sizes.h: device memory of the CUDA ops and model, as plain C
 * (no CUDA headers), so the memory planner (plan/) computes what a GPU run
 * allocates in any build, CPU-only included. The .cu files use these same
 * functions to size their buffers: one formula, two users. */
#ifndef GT_NN_OPS_CUDA_SIZES_H
#define GT_NN_OPS_CUDA_SIZES_H

#include <stddef.h>

/* conv1d: im2col + GEMM in chunks of GT_CONV1D_CUDA_NB samples */
#define GT_CONV1D_CUDA_NB 32
/* the cuBLAS workspace set once per process (no allocation inside a step) */
#define GT_CUBLAS_WS_BYTES ((size_t)32 << 20)

static inline size_t gt_conv1d_cuda_scratch_size(int IC, int OC, int W, int K) {
    return ((size_t)IC * K + (size_t)OC) * GT_CONV1D_CUDA_NB * (size_t)W;
}
/* attention backward: D = rowsum(dO * O) per (batch, head, row): linear in L */
static inline size_t gt_attention_cuda_scratch_size(int B, int L, int NH) { return (size_t)B * NH * L; }
/* LSTM: two (B, H) state rows and the shifted hidden states (B, T, H) */
static inline size_t gt_lstm_cuda_scratch_size(int B, int T, int H) {
    return 2 * (size_t)B * H + (size_t)B * T * H;
}

#endif
