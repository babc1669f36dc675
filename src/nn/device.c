#include "nn/device.h"

#include <stdio.h>

#ifndef GT_HAVE_CUDA
int gt_device_gpu_count(void) { return 0; }
const char *gt_device_describe(int i, char *buf, int len) {
    snprintf(buf, (size_t)len, "cpu");
    return buf;
}
int gt_device_built_with_cuda(void) { return 0; }
#endif
