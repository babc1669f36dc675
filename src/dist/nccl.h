/* dist/nccl.h: the gradient all-reduce of device buffers over NCCL, without
 * MPI (library gt_dist_nccl, built with the CUDA backend when NCCL is found,
 * also without the pipeline: tests/gpu uses it on a machine without MPI).
 * dist/allreduce.h builds the job's communicator with these and MPI.
 *
 * Plain types only (no <nccl.h>, no CUDA headers): a communicator is a
 * ncclComm_t as void *, a stream a cudaStream_t as void *. Every call ends
 * the job through NCCL_CHECK / CUDA_CHECK on failure. */
#ifndef GT_DIST_NCCL_H
#define GT_DIST_NCCL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GT_DIST_NCCL_ID_BYTES 128 /* NCCL_UNIQUE_ID_BYTES */

/* 1 when this binary has NCCL (the functions below work), else 0. */
int gt_dist_nccl_available(void);
/* A new unique id (ncclGetUniqueId) into id (GT_DIST_NCCL_ID_BYTES): rank 0
 * makes it, the others receive it. */
void gt_dist_nccl_unique_id(void *id);
/* Collective over the nranks processes that call it with the same id: the
 * communicator of `rank` on the current CUDA device (ncclCommInitRank). */
void *gt_dist_nccl_comm_init(int nranks, const void *id, int rank);
/* Single process, every device of devs[0..n-1] (ncclCommInitAll): comms[i]
 * is device devs[i]'s communicator (tests). */
void gt_dist_nccl_comm_init_all(void **comms, int n, const int *devs);
void gt_dist_nccl_comm_destroy(void *comm); /* NULL allowed */
int gt_dist_nccl_comm_size(void *comm);

/* ncclGroupStart / ncclGroupEnd: a single thread driving several devices
 * wraps their calls in one group (tests/gpu). */
void gt_dist_nccl_group_start(void);
void gt_dist_nccl_group_end(void);

/* Collective over comm: dev (n floats, device memory) := the sum over the
 * ranks, in place, in buckets of bucket_bytes (0: one call), all queued on
 * `stream` in one NCCL group (ordered after the work already queued there,
 * before what follows: no host synchronisation). Every rank gets the same
 * bits (NCCL reduces each element once and distributes it). */
void gt_dist_nccl_allreduce_sum(void *comm, float *dev, size_t n, size_t bucket_bytes, void *stream);

/* The overlapped exchange (dist/grads.h): a non-blocking stream and an
 * event (timing off) on the current device, as plain handles, and
 * `waiter` made to wait (on the device) for the work queued so far on
 * `signaller` (ev recorded there). */
void *gt_dist_nccl_stream_create(void);
void gt_dist_nccl_stream_destroy(void *stream); /* NULL allowed */
void *gt_dist_nccl_event_create(void);
void gt_dist_nccl_event_destroy(void *ev); /* NULL allowed */
void gt_dist_nccl_stream_after(void *waiter, void *signaller, void *ev);

/* NCCL's version as "2.27.3", or "" without NCCL. */
const char *gt_dist_nccl_version(void);

#ifdef __cplusplus
}
#endif
#endif
