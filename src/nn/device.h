/* nn/device.h: which compute backend runs the model.
 * Without a CUDA build, or without a usable GPU/driver, the CPU is chosen. */
#ifndef GT_NN_DEVICE_H
#define GT_NN_DEVICE_H
#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable CUDA devices; 0 when the build has no CUDA or no driver/GPU
 * is present (cudaErrorInsufficientDriver counts as none). */
int gt_device_gpu_count(void);
/* Short description of device `i` ("NVIDIA H200, 139.8 GiB, sm_90"). */
const char *gt_device_describe(int i, char *buf, int len);
/* 1 when the binary was built with the CUDA backend. */
int gt_device_built_with_cuda(void);

#ifdef __cplusplus
}
#endif
#endif
