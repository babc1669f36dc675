/* train/device.h: where the model runs, chosen once per job (train.device,
 * eval.device: auto | cpu | cuda), for the trainer, eval, predict and
 * `bench train`.
 *
 *   cpu   the host engine.
 *   cuda  one GPU per rank, or an error (exit 7, GT_EXIT_DEVICE): never a
 *         silent CPU fallback.
 *   auto  cuda when this binary has CUDA and a usable GPU is visible, else the
 *         host engine; every rank must come to the same answer.
 *
 * GPU per rank: the rank's index among the ranks on its node (MPI shared-
 * memory split) modulo the GPUs visible to it, so `mpirun -n 4` on a 4-GPU
 * node puts rank r on GPU r, and a per-task binding (Slurm --gpus-per-task=1,
 * --gpu-bind, CUDA_VISIBLE_DEVICES set per rank) puts each rank on the one
 * GPU it sees. Two ranks of a node on the same GPU (by UUID) is an error.
 *
 * Errors (one line naming the fix, exit 7 on every rank): cuda requested and
 * the binary has no CUDA, or no usable GPU is visible; the driver is older
 * than the CUDA runtime (auto too: a GPU is there but unusable); more ranks
 * on a node than GPUs; a GPU older than the oldest architecture built;
 * auto coming to different answers on different ranks. */
#ifndef GT_TRAIN_DEVICE_H
#define GT_TRAIN_DEVICE_H

#include <mpi.h>
#include <stdio.h>

#include "nn/device.h"
#include "nn/engine.h"

typedef struct gt_train_device {
    gt_device_request requested;
    gt_engine_kind engine;     /* GT_ENGINE_HOST or (CUDA builds) GT_ENGINE_CUDA */
    int ranks, nodes_max_ranks;/* ranks of comm; the most ranks on one node */
    int local_rank, local_size;/* this rank on its node */
    gt_device_probe probe;     /* the driver and the visible devices (every request) */
    gt_device_info info;       /* engine cuda: this rank's GPU (ordinal, name, memory, UUID) */
    char nccl_version[32];     /* "" without NCCL */
} gt_train_device;

/* Collective over comm. Makes this rank's GPU current when the engine is
 * cuda; rank 0 logs one line (the device, driver and runtime; at debug level
 * when quiet). `what` names the setting in messages ("train.device",
 * "eval.device"). */
void gt_train_device_select(gt_device_request req, const char *what, int quiet, MPI_Comm comm,
                            gt_train_device *out);

/* One line: "cuda: NVIDIA H200 (139.8 GiB, sm_90), driver 580.65.06 (CUDA
 * 13.0), runtime CUDA 13.0" or "cpu (host engine)". */
void gt_train_device_describe(const gt_train_device *d, char *buf, size_t n);

/* "13.0" from 13000. */
void gt_train_cuda_version(int v, char *buf, size_t n);

#endif
