/* io/shard.h: deterministic assignment of households/turbines to ranks.
 *
 * Pure functions (no MPI, no I/O): every rank computes the same plan from the
 * same item sizes, so no communication is needed to agree on it. */
#ifndef GT_IO_SHARD_H
#define GT_IO_SHARD_H

#include <stdint.h>

/* Assigns items to n_ranks ranks, balancing the summed weights.
 *   weight [n_items]  >= 0 (rows of each household/turbine)
 *   owner  [n_items]  out: rank of each item, in 0..n_ranks-1
 * Two candidates are computed:
 *   - the contiguous partition with the smallest possible maximum load (binary
 *     search on the bottleneck), which makes each rank's share one hyperslab;
 *   - largest-first greedy (LPT: items by weight descending, ties by lower index,
 *     each to the least loaded rank, ties to the lower rank).
 * The contiguous one is taken when its maximum load is within 2% of LPT's,
 * otherwise LPT. Either way every item gets exactly one owner and
 *   max load <= mean load + max weight   (list-scheduling bound).
 * Returns the maximum load. Deterministic. */
int64_t gt_shard_assign(const int64_t *weight, int n_items, int n_ranks, int *owner);

/* Largest-first greedy alone (used by gt_shard_assign; exposed for tests). */
int64_t gt_shard_assign_lpt(const int64_t *weight, int n_items, int n_ranks, int *owner);
/* Best contiguous partition alone (item i to rank owner[i], non-decreasing). */
int64_t gt_shard_assign_contiguous(const int64_t *weight, int n_items, int n_ranks, int *owner);

/* Loads per rank: load[n_ranks] = sum of weight of items owned. Returns max/mean
 * (1.0 when the total is 0). */
double gt_shard_imbalance(const int64_t *weight, const int *owner, int n_items, int n_ranks,
                          int64_t *load);

#endif
