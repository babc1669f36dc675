// nn/ops/cuda/device.cu: device discovery for the CUDA backend (nn/device.h).
#include <stdio.h>
#include <string.h>

#include "core/check_cuda.h"
#include "nn/device.h"

#ifndef GT_CUDA_MIN_ARCH
#define GT_CUDA_MIN_ARCH 0 // CMake passes the oldest entry of GT_CUDA_ARCHITECTURES
#endif

// The kernel module's release, e.g. "580.65.06" from
// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 ...".
static void driver_release(char *buf, size_t n) {
    buf[0] = 0;
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (!f) return;
    char line[512];
    if (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "Kernel Module");
        if (p) {
            p += strlen("Kernel Module");
            while (*p == ' ' || *p == '\t') p++;
            size_t k = 0;
            while (p[k] && p[k] != ' ' && p[k] != '\t' && p[k] != '\n' && k + 1 < n) k++;
            snprintf(buf, n, "%.*s", (int)k, p);
        }
    }
    fclose(f);
}

extern "C" void gt_device_probe_visible(gt_device_probe *out) {
    memset(out, 0, sizeof *out);
    int drv = 0, rt = 0;
    (void)cudaDriverGetVersion(&drv); // 0 when no driver is installed
    (void)cudaRuntimeGetVersion(&rt);
    out->driver_version = drv;
    out->runtime_version = rt;
    driver_release(out->driver_release, sizeof out->driver_release);
    int n = 0; // cudaGetDeviceCount leaves n untouched on error: 0 means none
    cudaError_t rc = cudaGetDeviceCount(&n);
    (void)cudaGetLastError(); // clear a sticky error
    if (rc == cudaSuccess && n > 0) {
        out->status = GT_DEVICE_OK;
        out->count = n;
        return;
    }
    out->count = 0;
    if (rc == cudaSuccess || rc == cudaErrorNoDevice) {
        out->status = drv > 0 ? GT_DEVICE_NO_DEVICE : GT_DEVICE_NO_DRIVER;
    } else if (rc == cudaErrorInsufficientDriver) {
        // without a driver the runtime says "insufficient driver" too
        out->status = drv > 0 ? GT_DEVICE_DRIVER_TOO_OLD : GT_DEVICE_NO_DRIVER;
        if (drv > 0) snprintf(out->error, sizeof out->error, "%s", cudaGetErrorString(rc));
    } else {
        out->status = GT_DEVICE_ERROR;
        snprintf(out->error, sizeof out->error, "%s (cudaError %d)", cudaGetErrorString(rc), (int)rc);
    }
}

extern "C" void gt_device_use(int ordinal, gt_device_info *out) {
    memset(out, 0, sizeof *out);
    CUDA_CHECK(cudaSetDevice(ordinal));
    CUDA_CHECK(cudaFree(nullptr)); // create the context now, so free memory below is what the run gets
    cudaDeviceProp p;
    CUDA_CHECK(cudaGetDeviceProperties(&p, ordinal));
    out->ordinal = ordinal;
    snprintf(out->name, sizeof out->name, "%s", p.name);
    const unsigned char *u = (const unsigned char *)p.uuid.bytes;
    snprintf(out->uuid, sizeof out->uuid,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3],
             u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    if (cudaDeviceGetPCIBusId(out->pci_bus_id, (int)sizeof out->pci_bus_id, ordinal) != cudaSuccess) {
        (void)cudaGetLastError();
        out->pci_bus_id[0] = 0;
    }
    size_t fr = 0, tot = 0;
    CUDA_CHECK(cudaMemGetInfo(&fr, &tot));
    out->total_bytes = (double)tot;
    out->free_bytes = (double)fr;
    out->cc_major = p.major;
    out->cc_minor = p.minor;
    out->min_built_arch = GT_CUDA_MIN_ARCH;
}

extern "C" int gt_device_gpu_count(void) {
    gt_device_probe pr;
    gt_device_probe_visible(&pr);
    return pr.count;
}

extern "C" const char *gt_device_describe(int i, char *buf, int len) {
    cudaDeviceProp p;
    CUDA_CHECK(cudaGetDeviceProperties(&p, i));
    snprintf(buf, (size_t)len, "%s, %.1f GiB, sm_%d%d", p.name,
             (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0), p.major, p.minor);
    return buf;
}

extern "C" int gt_device_built_with_cuda(void) { return 1; }
