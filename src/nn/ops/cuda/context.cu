// nn/ops/cuda/context.cu: precision setting, the cuBLAS handle, GEMM
// wrappers, device allocation helpers.
#include <cublas_v2.h>
#include <stdio.h>
#include <string.h>

#include "nn/ops/cuda/common.cuh"

static gt_cuda_prec g_prec = GT_PREC_FP32;
static size_t g_alloc_bytes = 0;

// One entry per (device, stream) that ran an op: its cuBLAS handle and
// workspace and its scratch (common.cuh). Few streams live in a process (a
// model's, a test's): a small table searched linearly.
#define GT_CUDA_MAX_STREAMS 32
typedef struct stream_ctx {
    cudaStream_t st;
    int dev, used;
    cublasHandle_t cublas;
    void *ws;
    double *dscratch, *dparts;
    float *colparts;
#ifdef GT_HAVE_CUDNN
    cudnnHandle_t cudnn; // NULL until gt_cuda_cudnn asks (only the LSTM on cuDNN needs one)
    cudnnDropoutDescriptor_t no_dropout;
    void *dropout_states;
#endif
} stream_ctx;
static stream_ctx g_ctx[GT_CUDA_MAX_STREAMS];

static stream_ctx *ctx_for(cudaStream_t st) {
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    stream_ctx *free_slot = nullptr;
    for (int i = 0; i < GT_CUDA_MAX_STREAMS; i++) {
        if (g_ctx[i].used && g_ctx[i].st == st && g_ctx[i].dev == dev) return &g_ctx[i];
        if (!g_ctx[i].used && !free_slot) free_slot = &g_ctx[i];
    }
    GT_CHECK(free_slot, GT_EXIT_INTERNAL, "more than %d CUDA streams run model ops", GT_CUDA_MAX_STREAMS);
    stream_ctx *c = free_slot;
    c->st = st;
    c->dev = dev;
    CUBLAS_CHECK(cublasCreate(&c->cublas));
    // A fixed workspace: no allocation inside a step, so a step can be
    // captured into a CUDA graph.
    CUDA_CHECK(cudaMalloc(&c->ws, GT_CUBLAS_WS_BYTES));
    // The stream first: cublasSetStream resets the workspace to the default
    // pool, so the workspace is set after it.
    CUBLAS_CHECK(cublasSetStream(c->cublas, st));
    CUBLAS_CHECK(cublasSetWorkspace(c->cublas, c->ws, GT_CUBLAS_WS_BYTES));
    CUBLAS_CHECK(cublasSetMathMode(c->cublas, CUBLAS_DEFAULT_MATH));
    CUDA_CHECK(cudaMalloc(&c->dscratch, 16 * sizeof(double)));
    CUDA_CHECK(cudaMalloc(&c->dparts, GT_CUDA_MAX_PARTS * sizeof(double)));
    CUDA_CHECK(cudaMalloc(&c->colparts, GT_CUDA_COL_PARTS * sizeof(float)));
    c->used = 1;
    return c;
}

void gt_cuda_stream_prepare(cudaStream_t st) { (void)ctx_for(st); }

void gt_cuda_stream_release(cudaStream_t st) {
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    for (int i = 0; i < GT_CUDA_MAX_STREAMS; i++) {
        stream_ctx *c = &g_ctx[i];
        if (!c->used || c->st != st || c->dev != dev) continue;
        CUDA_CHECK(cudaStreamSynchronize(st));
        CUBLAS_CHECK(cublasDestroy(c->cublas));
        CUDA_CHECK(cudaFree(c->ws));
        CUDA_CHECK(cudaFree(c->dscratch));
        CUDA_CHECK(cudaFree(c->dparts));
        CUDA_CHECK(cudaFree(c->colparts));
#ifdef GT_HAVE_CUDNN
        if (c->cudnn) {
            CUDNN_CHECK(cudnnDestroyDropoutDescriptor(c->no_dropout));
            CUDA_CHECK(cudaFree(c->dropout_states));
            CUDNN_CHECK(cudnnDestroy(c->cudnn));
        }
#endif
        memset(c, 0, sizeof *c);
    }
}

#ifdef GT_HAVE_CUDNN
// One cuDNN handle per stream, like the cuBLAS handle; the dropout descriptor
// (dropout 0: the RNN descriptors are one layer each, cuDNN applies no
// dropout) gets its RNG states here too, once, outside any step.
static stream_ctx *ctx_cudnn(cudaStream_t st) {
    stream_ctx *c = ctx_for(st);
    if (!c->cudnn) {
        CUDNN_CHECK(cudnnCreate(&c->cudnn));
        CUDNN_CHECK(cudnnSetStream(c->cudnn, st));
        size_t n_bytes = 0;
        CUDNN_CHECK(cudnnDropoutGetStatesSize(c->cudnn, &n_bytes));
        CUDA_CHECK(cudaMalloc(&c->dropout_states, n_bytes ? n_bytes : 1));
        CUDNN_CHECK(cudnnCreateDropoutDescriptor(&c->no_dropout));
        CUDNN_CHECK(cudnnSetDropoutDescriptor(c->no_dropout, c->cudnn, 0.0f, c->dropout_states, n_bytes, 0));
    }
    return c;
}
cudnnHandle_t gt_cuda_cudnn(cudaStream_t st) { return ctx_cudnn(st)->cudnn; }
cudnnDropoutDescriptor_t gt_cuda_cudnn_no_dropout(cudaStream_t st) { return ctx_cudnn(st)->no_dropout; }
#endif

double *gt_cuda_dscratch(cudaStream_t st) { return ctx_for(st)->dscratch; }
double *gt_cuda_dpartials(cudaStream_t st) { return ctx_for(st)->dparts; }
float *gt_cuda_col_partials(cudaStream_t st) { return ctx_for(st)->colparts; }


extern "C" void gt_cuda_set_precision(gt_cuda_prec prec) { g_prec = prec; }
extern "C" gt_cuda_prec gt_cuda_get_precision(void) { return g_prec; }
extern "C" const char *gt_cuda_prec_name(gt_cuda_prec prec) {
    switch (prec) {
    case GT_PREC_FP32: return "fp32";
    case GT_PREC_BF16: return "bf16";
    case GT_PREC_FP16: return "fp16";
    case GT_PREC_TF32: return "tf32";
    }
    return "?";
}

static cublasHandle_t handle(cudaStream_t st) { return ctx_for(st)->cublas; } // bound to st

static cublasComputeType_t compute_type(void) {
    switch (g_prec) {
    case GT_PREC_BF16: return CUBLAS_COMPUTE_32F_FAST_16BF;
    case GT_PREC_FP16: return CUBLAS_COMPUTE_32F_FAST_16F;
    case GT_PREC_TF32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    default: return CUBLAS_COMPUTE_32F;
    }
}

// Row-major C (M,N) = op(A) op(B) is column-major C^T (N,M) = op(B)^T op(A)^T:
// swap the operands, keep the transpose flags.
void gt_cuda_gemm(cudaStream_t stream, bool ta, bool tb, int M, int N, int K, float alpha, const float *A,
                  int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    cublasHandle_t h = handle(stream);
    CUBLAS_CHECK(cublasGemmEx(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha,
                              B, CUDA_R_32F, ldb, A, CUDA_R_32F, lda, &beta, C, CUDA_R_32F, ldc, compute_type(),
                              CUBLAS_GEMM_DEFAULT));
}

void gt_cuda_gemm_batched(cudaStream_t stream, bool ta, bool tb, int M, int N, int K, float alpha,
                          const float *A, int lda, long long sA, const float *B, int ldb, long long sB,
                          float beta, float *C, int ldc, long long sC, int batch) {
    if (M <= 0 || N <= 0 || batch <= 0) return;
    cublasHandle_t h = handle(stream);
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N,
                                            M, K, &alpha, B, CUDA_R_32F, ldb, sB, A, CUDA_R_32F, lda, sA, &beta,
                                            C, CUDA_R_32F, ldc, sC, batch, compute_type(), CUBLAS_GEMM_DEFAULT));
}


// cudaMalloc of n floats (rounded up to 256 bytes), out of memory a user error.
static float *alloc_raw(size_t n, size_t *n_bytes_out) {
    size_t n_bytes = (n ? n : 1) * sizeof(float);
    n_bytes = (n_bytes + 255) / 256 * 256;
    void *p = nullptr;
    cudaError_t rc = cudaMalloc(&p, n_bytes);
    if (rc != cudaSuccess) {
        (void)cudaGetLastError();
        size_t fr = 0, tot = 0;
        (void)cudaMemGetInfo(&fr, &tot);
        GT_FAIL(GT_EXIT_RESOURCE,
                "device out of memory allocating %.1f MiB (%.1f MiB free of %.1f MiB): lower train.micro_batch "
                "(gradients accumulate, train.batch unchanged); 'gridtrain plan CONFIG --gpu-mem SIZE' shows what fits",
                n_bytes / 1048576.0, fr / 1048576.0, tot / 1048576.0);
    }
    g_alloc_bytes += n_bytes;
    *n_bytes_out = n_bytes;
    return (float *)p;
}


extern "C" float *gt_cuda_alloc_floats(size_t n) {
    size_t n_bytes = 0;
    float *p = alloc_raw(n, &n_bytes);
    // cudaMemset runs on the legacy default stream and may return before it
    // is done; work on a non-blocking stream does not wait for it: finish it.
    CUDA_CHECK(cudaMemset(p, 0, n_bytes));
    CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
    return p;
}

extern "C" float *gt_cuda_alloc_floats_on(size_t n, cudaStream_t stream) {
    size_t n_bytes = 0;
    float *p = alloc_raw(n, &n_bytes);
    CUDA_CHECK(cudaMemsetAsync(p, 0, n_bytes, stream)); // ordered before everything later on `stream`
    return p;
}

extern "C" void gt_cuda_free(void *p) {
    if (!p) return;
    // Bytes are not tracked per pointer; the counter is a high-water mark of
    // live allocations only approximately (models free everything at once).
    CUDA_CHECK(cudaFree(p));
}

extern "C" size_t gt_cuda_allocated_bytes(void) { return g_alloc_bytes; }

extern "C" void gt_cuda_upload(float *dev, const float *host, size_t n) {
    if (!n) return;
    // A pageable host-to-device cudaMemcpy may return before the DMA lands;
    // kernels on non-blocking streams would not wait for it.
    CUDA_CHECK(cudaMemcpy(dev, host, n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
}
extern "C" void gt_cuda_download(float *host, const float *dev, size_t n) {
    if (n) CUDA_CHECK(cudaMemcpy(host, dev, n * sizeof(float), cudaMemcpyDeviceToHost));
}
extern "C" void gt_cuda_mem_info(size_t *free_bytes, size_t *total_bytes) {
    size_t f = 0, t = 0;
    CUDA_CHECK(cudaMemGetInfo(&f, &t));
    if (free_bytes) *free_bytes = f;
    if (total_bytes) *total_bytes = t;
}

extern "C" int gt_cuda_cudnn_available(void) {
#ifdef GT_HAVE_CUDNN
    return 1;
#else
    return 0;
#endif
}
