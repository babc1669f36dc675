/* dist/allreduce.h: data-parallel gradient exchange: MPI for host buffers,
 * NCCL for device buffers (gt_dist_allreduce_grads picks by where the
 * engine's gradients live), and the replica checks. */
#ifndef GT_DIST_ALLREDUCE_H
#define GT_DIST_ALLREDUCE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "dist/reduce.h" /* gt_dist_allreduce_sum_d and the other small collectives */

/* Collective: grads (n) summed over comm in place, in buckets of bucket_bytes
 * (0 = one call), all buckets in flight at once (MPI_Iallreduce) so large
 * models pipeline the network and the reduction. */
void gt_dist_allreduce_sum(float *grads, size_t n, size_t bucket_bytes, MPI_Comm comm);
/* Collective: the gradient all-reduce of an engine (nn/engine.h): grads (n
 * floats) summed over comm in place, in buckets of bucket_bytes.
 *   on_device 0: host memory, gt_dist_allreduce_sum (MPI; stream ignored).
 *   on_device 1: device memory of the current CUDA device, NCCL on `stream`
 *     (a cudaStream_t: the engine's, gt_engine_stream), queued after the
 *     backward already there and before what follows (no host wait). The
 *     job's NCCL communicator for comm is made on first use (rank 0's
 *     ncclGetUniqueId broadcast over MPI, ncclCommInitRank) and kept until
 *     gt_dist_finalize; a congruent communicator (same ranks, same order)
 *     shares it. One rank: nothing to do. A binary without NCCL ends a
 *     multi-rank job with GT_EXIT_DEVICE.
 * The trainer calls this once per step, whatever the engine. */
void gt_dist_allreduce_grads(float *grads, size_t n, size_t bucket_bytes, int on_device, void *stream,
                             MPI_Comm comm);
/* NCCL version ("2.27.3") when this binary has NCCL, else "". */
const char *gt_dist_nccl_version_string(void);
/* Collective: params (n) copied from rank 0 to all. */
void gt_dist_broadcast(float *params, size_t n, MPI_Comm comm);
/* xxh64 of the bytes of x (n floats). */
uint64_t gt_dist_checksum(const float *x, size_t n);
/* Collective: 1 when every rank holds bit-identical params (checksums compared
 * with an all-gather); otherwise rank 0 logs which ranks differ and 0 is
 * returned on every rank. */
int gt_dist_replicas_identical(const float *params, size_t n, MPI_Comm comm);

#endif
