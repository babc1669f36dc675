/* nn/device.c: the device request names (every build) and, in a CPU-only
 * build, the device queries (no CUDA); a CUDA build has them in
 * nn/ops/cuda/device.cu. */
#include "nn/device.h"

#include <stdio.h>
#include <string.h>

#include "core/check.h"

static const char *const g_req_names[] = {"auto", "cpu", "cuda"};

int gt_device_request_parse(const char *name) {
    for (int i = 0; i < 3; i++)
        if (name && !strcmp(name, g_req_names[i])) return i;
    return -1;
}

const char *gt_device_request_name(gt_device_request r) { return (unsigned)r < 3 ? g_req_names[r] : "?"; }

const char *gt_device_status_text(gt_device_status s) {
    switch (s) {
    case GT_DEVICE_OK: return "a usable GPU is visible";
    case GT_DEVICE_NOT_BUILT: return "this gridtrain was built without CUDA (GT_CUDA=OFF, or no CUDA toolkit at build time)";
    case GT_DEVICE_NO_DRIVER: return "no NVIDIA driver on this host";
    case GT_DEVICE_DRIVER_TOO_OLD: return "the NVIDIA driver is older than this binary's CUDA runtime";
    case GT_DEVICE_NO_DEVICE: return "no GPU visible (none installed, or CUDA_VISIBLE_DEVICES hides them)";
    case GT_DEVICE_ERROR: return "the CUDA runtime reports an error";
    }
    return "?";
}

#ifndef GT_HAVE_CUDA
void gt_device_probe_visible(gt_device_probe *out) {
    memset(out, 0, sizeof *out);
    out->status = GT_DEVICE_NOT_BUILT;
}
void gt_device_use(int ordinal, gt_device_info *out) {
    (void)out;
    GT_FAIL(GT_EXIT_INTERNAL, "gt_device_use(%d) in a build without CUDA", ordinal);
}
int gt_device_gpu_count(void) { return 0; }
const char *gt_device_describe(int i, char *buf, int len) {
    (void)i;
    snprintf(buf, (size_t)len, "cpu");
    return buf;
}
int gt_device_built_with_cuda(void) { return 0; }
#endif
