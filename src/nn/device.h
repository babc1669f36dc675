/* nn/device.h: which compute devices this process can use (no MPI: the
 * choice across ranks, train.device = auto|cpu|cuda, is train/device.h's).
 *
 * In a CPU-only build every query reports no CUDA (status
 * GT_DEVICE_NOT_BUILT, count 0). In a CUDA build the runtime API answers;
 * no function here ends the job except gt_device_use on a device that the
 * probe listed but cannot be made current. */
#ifndef GT_NN_DEVICE_H
#define GT_NN_DEVICE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* train.device / eval.device: where a model runs. */
typedef enum gt_device_request {
    GT_DEVICE_AUTO = 0, /* a GPU when one is usable, else the CPU */
    GT_DEVICE_CPU = 1,  /* the host engine */
    GT_DEVICE_CUDA = 2, /* a GPU, or an error (never a silent CPU fallback) */
} gt_device_request;
/* "auto" | "cpu" | "cuda" -> the request, -1 for anything else. */
int gt_device_request_parse(const char *name);
const char *gt_device_request_name(gt_device_request r);

/* Why there is or is not a usable GPU. */
typedef enum gt_device_status {
    GT_DEVICE_OK = 0,         /* count >= 1 */
    GT_DEVICE_NOT_BUILT,      /* this binary has no CUDA backend (GT_CUDA=OFF) */
    GT_DEVICE_NO_DRIVER,      /* no NVIDIA driver on this host */
    GT_DEVICE_DRIVER_TOO_OLD, /* a driver older than the runtime this binary was built with */
    GT_DEVICE_NO_DEVICE,      /* a driver but no visible device (none, or CUDA_VISIBLE_DEVICES hides them) */
    GT_DEVICE_ERROR,          /* another runtime error (in `error`) */
} gt_device_status;

typedef struct gt_device_probe {
    gt_device_status status;
    int count;               /* visible devices (0 unless status is GT_DEVICE_OK) */
    int driver_version;      /* CUDA version the driver supports, 1000 major + 10 minor; 0: no driver */
    int runtime_version;     /* this binary's CUDA runtime, same encoding; 0 without CUDA */
    char driver_release[64]; /* the kernel module's release ("580.65.06") when readable, else "" */
    char error[160];         /* the runtime's words for GT_DEVICE_ERROR / TOO_OLD, else "" */
} gt_device_probe;

/* The visible CUDA devices and the driver (cudaGetDeviceCount with the count
 * initialised to 0, cudaDriverGetVersion, cudaRuntimeGetVersion). Clears the
 * runtime's sticky error. Creates no context. */
void gt_device_probe_visible(gt_device_probe *out);
/* One line for status ("no NVIDIA driver on this host" ...). */
const char *gt_device_status_text(gt_device_status s);

typedef struct gt_device_info {
    int ordinal;              /* CUDA device index in this process */
    char name[256];           /* "NVIDIA H200" */
    char uuid[48];            /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx": tells ranks' devices apart */
    char pci_bus_id[32];      /* "0000:1B:00.0" */
    double total_bytes;       /* device memory */
    double free_bytes;        /* free after this process's context was created */
    int cc_major, cc_minor;   /* compute capability */
    int min_built_arch;       /* oldest architecture compiled into this binary (e.g. 80 for sm_80) */
} gt_device_info;

/* Makes device `ordinal` current for this thread (cudaSetDevice; creates the
 * context) and describes it. CUDA builds only (GT_EXIT_INTERNAL otherwise). */
void gt_device_use(int ordinal, gt_device_info *out);

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
