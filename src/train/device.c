/* train/device.c: train.device = auto | cpu | cuda (see train/device.h). */
#include "train/device.h"

#include <string.h>

#include "core/check.h"
#include "core/log.h"
#include "dist/allreduce.h"
#include "dist/comm.h"
#include "dist/reduce.h"

void gt_train_cuda_version(int v, char *buf, size_t n) {
    if (v <= 0) snprintf(buf, n, "none");
    else snprintf(buf, n, "%d.%d", v / 1000, v % 1000 / 10);
}

/* No usable GPU on this rank: the one-line reason with the driver and runtime. */
static void why_none(const gt_device_probe *p, char *buf, size_t n) {
    char drv[16], rt[16];
    gt_train_cuda_version(p->driver_version, drv, sizeof drv);
    gt_train_cuda_version(p->runtime_version, rt, sizeof rt);
    switch (p->status) {
    case GT_DEVICE_DRIVER_TOO_OLD:
        snprintf(buf, n,
                 "the NVIDIA driver%s%s supports CUDA %s, older than this binary's CUDA runtime %s (%s): update the "
                 "driver to one for CUDA %s or newer, or use a gridtrain built with an older CUDA toolkit",
                 p->driver_release[0] ? " " : "", p->driver_release, drv, rt, p->error, rt);
        break;
    case GT_DEVICE_ERROR:
        snprintf(buf, n, "the CUDA runtime fails: %s (driver CUDA %s, runtime %s): check nvidia-smi and dmesg for Xid "
                 "errors, and that no other job holds the GPU in exclusive mode", p->error, drv, rt);
        break;
    default: snprintf(buf, n, "%s", gt_device_status_text(p->status)); break;
    }
}

void gt_train_device_select(gt_device_request req, const char *what, int quiet, MPI_Comm comm,
                            gt_train_device *out) {
    const int lv = quiet ? GT_LOG_DEBUG : GT_LOG_INFO;
    memset(out, 0, sizeof *out);
    out->requested = req;
    out->engine = GT_ENGINE_HOST;
    MPI_Comm_size(comm, &out->ranks);
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    gt_dist_node_rank(comm, &out->local_rank, &out->local_size);
    out->nodes_max_ranks = gt_dist_max_int(out->local_size, comm);
    gt_device_probe_visible(&out->probe);
    const gt_device_probe *p = &out->probe;
    char why[512];
    why_none(p, why, sizeof why);
    if (req == GT_DEVICE_CPU) {
        if (rank == 0) gt_log(lv, "device: cpu (%s=cpu), host engine", what);
        return;
    }
    /* a GPU that is there but unusable is an error for auto too (never a silent fallback) */
    const int broken = p->status == GT_DEVICE_DRIVER_TOO_OLD || p->status == GT_DEVICE_ERROR;
    GT_CHECK(!broken, GT_EXIT_DEVICE, "%s=%s: %s; or set %s=cpu", what, gt_device_request_name(req), why, what);
    GT_CHECK(req != GT_DEVICE_CUDA || p->status == GT_DEVICE_OK, GT_EXIT_DEVICE, "%s=cuda but no usable GPU: %s: %s, or set %s=cpu",
             what, why,
             p->status == GT_DEVICE_NOT_BUILT ? "rebuild with -DGT_CUDA=ON where the CUDA toolkit is installed"
                                              : "run on a GPU node (check nvidia-smi and CUDA_VISIBLE_DEVICES)",
             what);
    int use_gpu = p->status == GT_DEVICE_OK;
    if (req == GT_DEVICE_AUTO) {
        int lo = gt_dist_min_int(use_gpu, comm), hi = gt_dist_max_int(use_gpu, comm);
        GT_CHECK(lo == hi, GT_EXIT_DEVICE,
                 "%s=auto: some ranks see a usable GPU and others do not (rank %d: %s): run on GPU nodes only with "
                 "%s=cuda, or set %s=cpu",
                 what, rank, use_gpu ? "a GPU" : why, what, what);
    }
    if (!use_gpu) {
        if (rank == 0) gt_log(lv, "device: cpu (%s=auto: %s), host engine", what, why);
        return;
    }
#ifdef GT_HAVE_CUDA
    out->engine = GT_ENGINE_CUDA;
    const int ordinal = out->local_rank % p->count;
    gt_device_use(ordinal, &out->info);
    const gt_device_info *d = &out->info;
    int shared = gt_dist_node_shared_key(comm, d->uuid);
    int all_own = gt_dist_all_ok(comm, shared == 0);
    GT_CHECK(all_own, GT_EXIT_DEVICE,
             "%d ranks on a node but only %d GPU%s for them (rank %d would share GPU %d, %s, with %d other rank%s): "
             "start at most one rank per GPU (mpirun -n / srun --ntasks-per-node), or bind one GPU per task "
             "(srun --gpus-per-task=1), or set %s=cpu",
             out->nodes_max_ranks, p->count, p->count == 1 ? "" : "s", rank, ordinal, d->uuid, shared,
             shared == 1 ? "" : "s", what);
    const int cc = 10 * d->cc_major + d->cc_minor;
    GT_CHECK(d->min_built_arch <= 0 || cc >= d->min_built_arch, GT_EXIT_DEVICE,
             "GPU %d (%s) is sm_%d, older than the oldest architecture this gridtrain was built for (sm_%d): rebuild "
             "with -DGT_CUDA_ARCHITECTURES=%d, or set %s=cpu",
             ordinal, d->name, cc, d->min_built_arch, cc, what);
    if (p->driver_version < p->runtime_version && rank == 0 && !quiet) {
        char drv[16], rt[16];
        gt_train_cuda_version(p->driver_version, drv, sizeof drv);
        gt_train_cuda_version(p->runtime_version, rt, sizeof rt);
        GT_WARN("device: the driver supports CUDA %s, the runtime is %s: running under CUDA minor version "
                "compatibility (PTX JIT unavailable)", drv, rt);
    }
    snprintf(out->nccl_version, sizeof out->nccl_version, "%s", gt_dist_nccl_version_string());
    GT_DEBUG("device: rank %d (local %d of %d) on GPU %d %s %s", rank, out->local_rank, out->local_size, ordinal,
             d->pci_bus_id, d->uuid);
    if (rank == 0) {
        char line[512];
        gt_train_device_describe(out, line, sizeof line);
        gt_log(lv, "device: %s (%s=%s); %d rank%s, at most %d per node, GPU = node-local rank mod %d visible", line, what,
                gt_device_request_name(req), out->ranks, out->ranks == 1 ? "" : "s", out->nodes_max_ranks, p->count);
    }
#else
    GT_FAIL(GT_EXIT_INTERNAL, "a GPU reported in a build without CUDA");
#endif
}

void gt_train_device_describe(const gt_train_device *d, char *buf, size_t n) {
    if (d->engine == GT_ENGINE_HOST) {
        snprintf(buf, n, "cpu (host engine)");
        return;
    }
    char drv[16], rt[16];
    gt_train_cuda_version(d->probe.driver_version, drv, sizeof drv);
    gt_train_cuda_version(d->probe.runtime_version, rt, sizeof rt);
    snprintf(buf, n, "cuda: GPU %d %s (%.1f GiB, sm_%d%d), driver %s%s(CUDA %s), runtime CUDA %s%s%s",
             d->info.ordinal, d->info.name, d->info.total_bytes / 1073741824.0, d->info.cc_major, d->info.cc_minor,
             d->probe.driver_release, d->probe.driver_release[0] ? " " : "", drv, rt,
             d->nccl_version[0] ? ", NCCL " : "", d->nccl_version);
}
