/* nn/ops/cuda/sizes.h: device memory of the CUDA ops and model, as plain C
 * (no CUDA headers), so the memory planner (plan/) computes what a GPU run
 * allocates in any build, CPU-only included. The .cu files use these same
 * functions to size their buffers: one formula, two users. */
#ifndef GT_NN_OPS_CUDA_SIZES_H
#define GT_NN_OPS_CUDA_SIZES_H

#include <stddef.h>

/* conv1d: im2col + GEMM in chunks of GT_CONV1D_CUDA_NB samples */
#define GT_CONV1D_CUDA_NB 32
/* Per (device, stream) that runs model ops, made once outside any step
 * (nn/ops/cuda/context.cu; no allocation inside a step): a cuBLAS handle with
 * its own workspace, and the reductions' scratch: 16 doubles, the per-block
 * partial sums (GT_CUDA_MAX_PARTS doubles) and the column partial sums of the
 * bias / LayerNorm parameter gradients (GT_CUDA_COL_PARTS floats). Every
 * device model (gt_cuda_model_create) has its own stream, so each model
 * alive holds one of these on top of gt_model_device_bytes (nn/model.h). */
#define GT_CUBLAS_WS_BYTES ((size_t)32 << 20)
#define GT_CUDA_MAX_PARTS 2048
#define GT_CUDA_COL_PARTS (1056 * 32)
static inline size_t gt_cuda_stream_ctx_bytes(void) {
    return GT_CUBLAS_WS_BYTES + 16 * sizeof(double) + GT_CUDA_MAX_PARTS * sizeof(double) +
           GT_CUDA_COL_PARTS * sizeof(float);
}

static inline size_t gt_conv1d_cuda_scratch_size(int IC, int OC, int W, int K) {
    return ((size_t)IC * K + (size_t)OC) * GT_CONV1D_CUDA_NB * (size_t)W;
}
/* attention backward: D = rowsum(dO * O) per (batch, head, row): linear in L */
static inline size_t gt_attention_cuda_scratch_size(int B, int L, int NH) { return (size_t)B * NH * L; }
/* attention on the mma kernels (attention_mma.cu, GT_ATTENTION_TC_MMA): the
 * padded head size HSP of head size hs (16, 32, 64 or 128), and the scratch:
 * D (B NH L floats, rounded up to 64 so the copies start 256-byte aligned)
 * then bf16 copies of q, k, v and dout, (B, NH, L, HSP) each: 2 B NH L HSP
 * floats. */
static inline int gt_attention_mma_hsp(int hs) { return hs <= 16 ? 16 : hs <= 32 ? 32 : hs <= 64 ? 64 : 128; }
static inline size_t gt_attention_mma_scratch_size(int B, int L, int C, int NH) {
    const size_t nd = ((size_t)B * NH * L + 63) / 64 * 64;
    return nd + 2 * (size_t)B * NH * L * gt_attention_mma_hsp(C / NH);
}
/* LSTM: two (B, H) state rows and the shifted hidden states (B, T, H) */
static inline size_t gt_lstm_cuda_scratch_size(int B, int T, int H) {
    return 2 * (size_t)B * H + (size_t)B * T * H;
}

/* LSTM on cuDNN (nn/ops/cuda/lstm_cudnn.cu): one area of the device work
 * buffer, carved at model creation, holding per layer cuDNN's weight space
 * and its gradient, the state (h, c) at every TBPTT chunk end and one reserve
 * space per chunk; one shared workspace; staging for chunk copies (K < T);
 * the device sequence lengths. cuDNN's own sizes are only known on a GPU
 * (cudnnGetRNNWeightSpaceSize, cudnnGetRNNTempSpaceSizes), so the planner
 * counts these bounds and creation checks every queried size against its
 * bound (the model falls back to the kernels, with a warning naming the
 * sizes, when one does not fit). Bounds in floats, each piece 256-byte aligned:
 *   weight space   4H(In+H) + 8H plus 16 x 64 alignment (8 matrices, 8 biases)
 *   reserve        B L (10H + In) + 64Ki per chunk of L steps (the gates, c,
 *                  h and cuDNN's own per-step rows: about 6H measured by others)
 *   workspace      B K (10H + 2 In) + 1Mi (seq-major copies of x, y, dy, dx
 *                  and the per-step gate gradients)
 * With K the chunk length (T for full BPTT) and In the layer's input size. */
#define GT_LSTM_CUDNN_ALIGN 64
static inline size_t gt_lstm_cudnn_al(size_t n) {
    return (n + GT_LSTM_CUDNN_ALIGN - 1) / GT_LSTM_CUDNN_ALIGN * GT_LSTM_CUDNN_ALIGN;
}
static inline int gt_lstm_cudnn_chunk(int T, int K) { return (K <= 0 || K > T) ? T : K; }
static inline size_t gt_lstm_cudnn_weight_elems(int In, int H) {
    return gt_lstm_cudnn_al(4 * (size_t)H * (In + H) + 8 * (size_t)H) + 16 * GT_LSTM_CUDNN_ALIGN;
}
static inline size_t gt_lstm_cudnn_reserve_elems(int B, int L, int In, int H) {
    return gt_lstm_cudnn_al((size_t)B * L * (10 * (size_t)H + In)) + ((size_t)1 << 16);
}
static inline size_t gt_lstm_cudnn_workspace_elems(int B, int K, int In, int H) {
    return gt_lstm_cudnn_al((size_t)B * K * (10 * (size_t)H + 2 * (size_t)In)) + ((size_t)1 << 20);
}
/* The whole area for NL layers (input size C, hidden H), batch B, window T, chunk K. */
static inline size_t gt_lstm_cudnn_area_elems(int B, int T, int C, int H, int NL, int K) {
    const int Kc = gt_lstm_cudnn_chunk(T, K), nch = (T + Kc - 1) / Kc, last = T - (nch - 1) * Kc;
    const int In_max = C > H ? C : H;
    size_t n = gt_lstm_cudnn_al(2 * (size_t)B); /* device sequence lengths: K and the last chunk's */
    for (int l = 0; l < NL; l++) {
        const int In = l == 0 ? C : H;
        n += 2 * gt_lstm_cudnn_weight_elems(In, H);
        n += gt_lstm_cudnn_al(2 * (size_t)nch * B * H);
        n += (size_t)(nch - 1) * gt_lstm_cudnn_reserve_elems(B, Kc, In, H);
        n += gt_lstm_cudnn_reserve_elems(B, last, In, H);
    }
    n += gt_lstm_cudnn_workspace_elems(B, Kc, In_max, H);
    n += 2 * gt_lstm_cudnn_al((size_t)B * Kc * In_max) + 2 * gt_lstm_cudnn_al((size_t)B * Kc * H);
    return n;
}

/* conv1d on cuDNN (nn/ops/cuda/conv_cudnn.cu): one area, shared by every
 * layer of a model (the layers run one after the other on one stream; nothing
 * in it lives from a forward to its backward): the masked output gradient
 * dz (B, OC, W); for an even kernel the input padded on the right by one
 * zero column and its gradient, (B, IC, W+1) each ('same' padding puts one
 * more zero on the right than on the left, and cuDNN pads symmetrically); and
 * cuDNN's workspace. cuDNN's workspace sizes are only known on a GPU
 * (cudnnGet*WorkspaceSize), so the planner counts a fixed bound and creation
 * checks every size cuDNN asks for, at every batch up to max_batch, against
 * it (the model keeps the kernels, with a warning naming the size, when one
 * does not fit). Floats, each piece 256-byte aligned. */
#define GT_CONV1D_CUDNN_WS_ELEMS ((size_t)8 << 20) /* 32 MiB */
static inline size_t gt_conv1d_cudnn_al(size_t n) { return (n + 63) / 64 * 64; }
static inline size_t gt_conv1d_cudnn_area_elems(int B, int IC, int OC, int W, int K) {
    size_t n = gt_conv1d_cudnn_al((size_t)B * OC * W);
    if (K % 2 == 0) n += 2 * gt_conv1d_cudnn_al((size_t)B * IC * ((size_t)W + 1));
    return n + GT_CONV1D_CUDNN_WS_ELEMS;
}

#endif
