/* dist/allreduce.h: data-parallel gradient exchange on CPU ranks (MPI).
 * The CUDA backend swaps in NCCL behind the same calls. */
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
/* Collective: params (n) copied from rank 0 to all. */
void gt_dist_broadcast(float *params, size_t n, MPI_Comm comm);
/* xxh64 of the bytes of x (n floats). */
uint64_t gt_dist_checksum(const float *x, size_t n);
/* Collective: 1 when every rank holds bit-identical params (checksums compared
 * with an all-gather); otherwise rank 0 logs which ranks differ and 0 is
 * returned on every rank. */
int gt_dist_replicas_identical(const float *params, size_t n, MPI_Comm comm);

#endif
