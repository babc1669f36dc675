/* The CUDA build starts without a driver and reports no GPU with the reason
 * (nn/device.h: the probe); with a GPU it describes each device and makes it
 * current (UUID, memory, compute capability against the oldest built arch). */
#include <stdio.h>
#include <string.h>

#include "nn/device.h"
#include "test.h"

int main(void) {
    TEST_EQ_INT(gt_device_built_with_cuda(), 1);
    int n = gt_device_gpu_count();
    gt_device_probe pr;
    gt_device_probe_visible(&pr);
    printf("probe: %s, %d device(s), driver CUDA %d, runtime %d, module '%s' %s\n", gt_device_status_text(pr.status),
           pr.count, pr.driver_version, pr.runtime_version, pr.driver_release, pr.error);
    TEST_EQ_INT(pr.count, n);
    TEST_CHECK(pr.runtime_version > 0);
    TEST_CHECK((pr.status == GT_DEVICE_OK) == (n > 0));
    if (n == 0) TEST_SKIP_NO_GPU("no CUDA device present (%s)", gt_device_status_text(pr.status));
    for (int i = 0; i < n; i++) {
        char buf[256];
        gt_device_describe(i, buf, sizeof buf);
        printf("device %d: %s\n", i, buf);
        TEST_CHECK(strstr(buf, "sm_") != NULL);
        gt_device_info d;
        gt_device_use(i, &d);
        printf("  %s %s %s, %.1f GiB (%.1f free), sm_%d%d, built for >= sm_%d\n", d.name, d.uuid, d.pci_bus_id,
               d.total_bytes / 1073741824.0, d.free_bytes / 1073741824.0, d.cc_major, d.cc_minor, d.min_built_arch);
        TEST_CHECK(!strncmp(d.uuid, "GPU-", 4) && strlen(d.uuid) == 40);
        TEST_CHECK(d.total_bytes > 0 && d.free_bytes > 0 && d.free_bytes <= d.total_bytes);
        TEST_CHECK(10 * d.cc_major + d.cc_minor >= d.min_built_arch);
    }
    TEST_DONE();
}
