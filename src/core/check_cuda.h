/* core/check_cuda.h: CUDA_CHECK, CUBLAS_CHECK, CUDNN_CHECK (NCCL_CHECK is in
 * core/check_nccl.h, for dist/ only). Include only in CUDA translation units
 * (nn/ops/cuda, the CUDA engine, dist/ with NCCL). Each macro prints the
 * failing call, file:line, rank and a hint, then ends the job; while the
 * thread captures a CUDA graph (gt_lib_defer_begin, core/check.h) it records
 * the first failure and goes on instead, and the capture falls back to eager
 * (nn/ops/cuda/cuda_model_graph.cu). */
#ifndef GT_CORE_CHECK_CUDA_H
#define GT_CORE_CHECK_CUDA_H
#include <cuda_runtime.h>

#include "core/check.h"

#define CUDA_CHECK(call)                                                                       \
    do {                                                                                       \
        cudaError_t gt_cu_rc_ = (call);                                                        \
        if (gt_cu_rc_ != cudaSuccess)                                                          \
            gt_lib_failed("CUDA", #call, cudaGetErrorString(gt_cu_rc_),                         \
                         gt_cu_rc_ == cudaErrorMemoryAllocation                                \
                             ? "out of device memory: run 'gridtrain plan CONFIG' and lower "  \
                               "train.micro_batch (gradients accumulate over micro-batches, "  \
                               "train.batch unchanged) or train.batch"                         \
                             : "check nvidia-smi for Xid/ECC errors and CUDA_VISIBLE_DEVICES", \
                         __FILE__, __LINE__);                                                  \
    } while (0)

#ifdef GT_HAVE_CUBLAS
#include <cublas_v2.h>
#define CUBLAS_CHECK(call)                                                                  \
    do {                                                                                    \
        cublasStatus_t gt_cb_rc_ = (call);                                                  \
        if (gt_cb_rc_ != CUBLAS_STATUS_SUCCESS)                                             \
            gt_lib_failed("cuBLAS", #call, cublasGetStatusString(gt_cb_rc_),                 \
                         "an invalid shape or an exhausted workspace; rerun with "          \
                         "CUBLAS_LOGINFO_DBG=1",                                            \
                         __FILE__, __LINE__);                                               \
    } while (0)
#endif

#ifdef GT_HAVE_CUDNN
#include <cudnn.h>
#define CUDNN_CHECK(call)                                                               \
    do {                                                                                \
        cudnnStatus_t gt_dn_rc_ = (call);                                               \
        if (gt_dn_rc_ != CUDNN_STATUS_SUCCESS)                                          \
            gt_lib_failed("cuDNN", #call, cudnnGetErrorString(gt_dn_rc_),                \
                         "set CUDNN_LOGERR_DBG=1 CUDNN_LOGDEST_DBG=stderr for details", \
                         __FILE__, __LINE__);                                           \
    } while (0)
#endif


#endif
