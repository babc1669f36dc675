/* dist/reduce.h: the small collectives of the layers above dist/ (counts,
 * sums, extremes, one broadcast value, gathers of per-item records, a
 * barrier), so that only dist/ calls MPI collectives outside io/ (which
 * does MPI-IO). Gradients travel through dist/allreduce.h instead.
 *
 * Every function here is collective over comm: every rank of comm calls it,
 * in the same order, with the same n; the root is always rank 0. Each one
 * is a single MPI call (two for the gathers: counts, then records) with the
 * datatype and operation its name says, so results are those of that MPI
 * call; integer sums, minima and maxima are exact and the same for any
 * number of ranks. A failing call ends the job through MPI_CHECK. */
#ifndef GT_DIST_REDUCE_H
#define GT_DIST_REDUCE_H

#include <mpi.h>
#include <stdint.h>

/* ---- scalars: every rank gets the result (MPI_Allreduce) ---- */

/* Sum of x over the ranks (MPI_INT64_T, MPI_SUM). */
int64_t gt_dist_sum_i64(int64_t x, MPI_Comm comm);
/* Maximum of x over the ranks (MPI_INT64_T, MPI_MAX). */
int64_t gt_dist_max_i64(int64_t x, MPI_Comm comm);
/* Minimum / maximum of x over the ranks (MPI_INT, MPI_MIN / MPI_MAX). */
int gt_dist_min_int(int x, MPI_Comm comm);
int gt_dist_max_int(int x, MPI_Comm comm);
/* Maximum of x over the ranks (MPI_FLOAT, MPI_MAX); NaN handling is MPI's. */
float gt_dist_max_f(float x, MPI_Comm comm);
/* Maximum of x over the ranks (MPI_DOUBLE, MPI_MAX). */
double gt_dist_max_d(double x, MPI_Comm comm);

/* ---- arrays in place: every rank gets the element-wise result ---- */

/* v (n) := element-wise sum over the ranks (MPI_DOUBLE, MPI_SUM): loss
 * sums, moments. The order in which MPI adds the ranks' values is MPI's:
 * the same for the same rank count, not across rank counts. */
void gt_dist_allreduce_sum_d(double *v, int n, MPI_Comm comm);
/* v (n) := element-wise sum over the ranks (MPI_INT64_T, MPI_SUM). */
void gt_dist_allreduce_sum_i64(int64_t *v, int n, MPI_Comm comm);
/* v (n) := element-wise minimum / maximum over the ranks (MPI_DOUBLE). */
void gt_dist_allreduce_min_d(double *v, int n, MPI_Comm comm);
void gt_dist_allreduce_max_d(double *v, int n, MPI_Comm comm);
/* v (n) := element-wise maximum over the ranks (MPI_INT64_T). */
void gt_dist_allreduce_max_i64(int64_t *v, int n, MPI_Comm comm);

/* ---- rank 0 only ---- */

/* Maximum of x over the ranks, returned on rank 0 (MPI_Reduce to root 0,
 * MPI_DOUBLE / MPI_INT64_T, MPI_MAX); the other ranks get 0. */
double gt_dist_reduce_max_d(double x, MPI_Comm comm);
int64_t gt_dist_reduce_max_i64(int64_t x, MPI_Comm comm);
/* Rank 0's x, returned on every rank (MPI_Bcast from root 0, MPI_DOUBLE);
 * the other ranks' x is ignored. */
double gt_dist_bcast_d(double x, MPI_Comm comm);
/* buf (n_bytes) := rank 0's bytes on every rank (MPI_Bcast, MPI_BYTE, root 0;
 * n_bytes the same on every rank, at most INT_MAX). */
void gt_dist_bcast_bytes(void *buf, size_t n_bytes, MPI_Comm comm);

/* ---- gathers of variable-length records ---- */

/* Every rank's n_mine elements of `type` at mine (NULL allowed when
 * n_mine is 0), concatenated in rank order, on every rank (MPI_Allgather of
 * the counts as MPI_INT, then MPI_Allgatherv). Returns a new buffer
 * (caller frees; room for one element more than *n_all, so never of size 0)
 * and the total element count in *n_all. When the total exceeds INT_MAX (MPI
 * counts are int), every rank fails with GT_EXIT_RESOURCE and the message
 * too_large, printed as given. */
void *gt_dist_allgatherv(const void *mine, int n_mine, MPI_Datatype type, int64_t *n_all, const char *too_large,
                         MPI_Comm comm);
/* The same gathered to rank 0 only (MPI_Gather of the counts, then
 * MPI_Gatherv to root 0): rank 0 gets the new buffer (caller frees) and
 * *n_all; the other ranks get NULL and *n_all = 0. The INT_MAX check, with
 * the message too_large, runs on rank 0. */
void *gt_dist_gatherv(const void *mine, int n_mine, MPI_Datatype type, int64_t *n_all, const char *too_large,
                      MPI_Comm comm);

/* Returns when every rank of comm has called it (MPI_Barrier). */
void gt_dist_barrier(MPI_Comm comm);

#endif
