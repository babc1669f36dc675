// nn/ops/cuda/context.cu: precision setting, the cuBLAS handle, GEMM
// wrappers, device allocation helpers.
#include <cublas_v2.h>
#include <stdio.h>

#include "nn/ops/cuda/common.cuh"

static gt_cuda_prec g_prec = GT_PREC_FP32;
static cublasHandle_t g_cublas = nullptr;
static void *g_cublas_ws = nullptr;
static double *g_dscratch = nullptr;
static double *g_dparts = nullptr;
static size_t g_alloc_bytes = 0;


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

static cublasHandle_t handle(void) {
    if (!g_cublas) {
        CUBLAS_CHECK(cublasCreate(&g_cublas));
        // A fixed workspace: no allocation inside a step, so a step can be
        // captured into a CUDA graph.
        CUDA_CHECK(cudaMalloc(&g_cublas_ws, GT_CUBLAS_WS_BYTES));
        CUBLAS_CHECK(cublasSetWorkspace(g_cublas, g_cublas_ws, GT_CUBLAS_WS_BYTES));
        CUBLAS_CHECK(cublasSetMathMode(g_cublas, CUBLAS_DEFAULT_MATH));
    }
    return g_cublas;
}

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
    cublasHandle_t h = handle();
    CUBLAS_CHECK(cublasSetStream(h, stream));
    CUBLAS_CHECK(cublasGemmEx(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha,
                              B, CUDA_R_32F, ldb, A, CUDA_R_32F, lda, &beta, C, CUDA_R_32F, ldc, compute_type(),
                              CUBLAS_GEMM_DEFAULT));
}

void gt_cuda_gemm_batched(cudaStream_t stream, bool ta, bool tb, int M, int N, int K, float alpha,
                          const float *A, int lda, long long sA, const float *B, int ldb, long long sB,
                          float beta, float *C, int ldc, long long sC, int batch) {
    if (M <= 0 || N <= 0 || batch <= 0) return;
    cublasHandle_t h = handle();
    CUBLAS_CHECK(cublasSetStream(h, stream));
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N,
                                            M, K, &alpha, B, CUDA_R_32F, ldb, sB, A, CUDA_R_32F, lda, sA, &beta,
                                            C, CUDA_R_32F, ldc, sC, batch, compute_type(), CUBLAS_GEMM_DEFAULT));
}

double *gt_cuda_dscratch(void) {
    if (!g_dscratch) CUDA_CHECK(cudaMalloc(&g_dscratch, 16 * sizeof(double)));
    return g_dscratch;
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

double *gt_cuda_dpartials(void) {
    if (!g_dparts) CUDA_CHECK(cudaMalloc(&g_dparts, GT_CUDA_MAX_PARTS * sizeof(double)));
    return g_dparts;
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
