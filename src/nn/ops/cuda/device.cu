// nn/ops/cuda/device.cu: device discovery for the CUDA backend.
#include <stdio.h>

#include "core/check_cuda.h"
#include "nn/device.h"

extern "C" int gt_device_gpu_count(void) {
    int n = 0; /* cudaGetDeviceCount leaves n untouched when no driver is present */
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess) {
        (void)cudaGetLastError(); /* clear the sticky error */
        return 0;
    }
    return n;
}

extern "C" const char *gt_device_describe(int i, char *buf, int len) {
    cudaDeviceProp p;
    CUDA_CHECK(cudaGetDeviceProperties(&p, i));
    snprintf(buf, (size_t)len, "%s, %.1f GiB, sm_%d%d", p.name,
             (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0), p.major, p.minor);
    return buf;
}

extern "C" int gt_device_built_with_cuda(void) { return 1; }
