/* dist/balance.h: equal shares of a global batch.
 *
 * Exact global sampling (data/dataset.h) gives each rank the windows of the
 * global batch that live in its own households or turbines: about g/P +-
 * sqrt(g/P) per step, so every step waits for the rank that drew the most.
 * gt_dist_balance_rows moves the surplus rows (a few windows) to the ranks
 * short of their share, so every rank computes g/P (+1) samples: the same
 * global batch, the same per-sample gradients, summed in another grouping. */
#ifndef GT_DIST_BALANCE_H
#define GT_DIST_BALANCE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* Collective. *n rows of n_arrays parallel arrays (array a: rows of
 * row_bytes[a] bytes from bufs[a], room for cap rows each) are moved between
 * the ranks so that rank r ends with total/P rows, +1 for r < total % P
 * (total: the sum of *n over comm). Ranks above their share send their last
 * rows, in rank order, to the ranks below theirs, in rank order, appended
 * after their own rows: the outcome is a function of the counts only (the
 * same on every run). *n is updated. Returns the rows received (> 0), sent
 * (< 0) or 0. A share above cap ends the job (GT_EXIT_INTERNAL). */
int64_t gt_dist_balance_rows(int64_t *n, int64_t cap, void *const *bufs, const size_t *row_bytes, int n_arrays,
                             MPI_Comm comm);

#endif
