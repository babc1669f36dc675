/* The CUDA build starts without a driver and reports no GPU (CPU fallback);
 * with a GPU it describes each device. */
#include <stdio.h>
#include <string.h>

#include "nn/device.h"
#include "test.h"

int main(void) {
    TEST_EQ_INT(gt_device_built_with_cuda(), 1);
    int n = gt_device_gpu_count();
    if (n == 0) TEST_SKIP("no CUDA device present");
    for (int i = 0; i < n; i++) {
        char buf[256];
        gt_device_describe(i, buf, sizeof buf);
        printf("device %d: %s\n", i, buf);
        TEST_CHECK(strstr(buf, "sm_") != NULL);
    }
    TEST_DONE();
}
