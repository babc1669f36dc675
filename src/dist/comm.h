/* dist/comm.h: the job's communicator, the abort hook and cross-rank tables.
 * Only dist/ calls MPI collectives outside io/ (gradients: allreduce.h; the
 * small ones of the other layers: reduce.h); this file also owns job start-up
 * and shutdown so that every error path ends the whole job. */
#ifndef GT_DIST_COMM_H
#define GT_DIST_COMM_H
#include <mpi.h>
#include <stdio.h>

/* MPI_Init_thread (FUNNELED: only the main thread calls MPI), error handler
 * MPI_ERRORS_RETURN on MPI_COMM_WORLD (so MPI_CHECK reports), rank/size into
 * core/check.h, and the abort hook: with more than one rank a fatal error calls
 * MPI_Abort(MPI_COMM_WORLD, code) so no rank is left waiting in a collective. */
void gt_dist_init(int *argc, char ***argv);
void gt_dist_finalize(void);

/* Collective over comm: the end-of-run table of named timing events
 * (core/timer.h) with min/max/mean seconds across ranks and the max/mean ratio
 * (load imbalance, data stalls). Printed by rank 0 to `out`. Every rank must
 * have registered the same events in the same order (asserted). */
void gt_dist_event_table(MPI_Comm comm, FILE *out);

/* Collective: this rank's index among the ranks of comm on the same node and
 * their count (MPI_Comm_split_type SHARED): the local rank picks the GPU, and
 * the count tells how many ranks share the node's cores. */
void gt_dist_node_rank(MPI_Comm comm, int *local_rank, int *local_size);

/* Collective over comm: how many OTHER ranks on this rank's node pass the
 * same key (at most GT_DIST_KEY_LEN - 1 characters compared), e.g. a GPU's
 * UUID: 0 when this rank's device is its own. */
#define GT_DIST_KEY_LEN 64
int gt_dist_node_shared_key(MPI_Comm comm, const char *key);

/* Where the ranks run. Collective over comm: every rank's host (the MPI
 * processor name), its rank among the ranks on that node and their count
 * (MPI_COMM_TYPE_SHARED, as gt_dist_node_rank), the node's index (nodes
 * numbered in the order of their first rank) and the GPU it uses (`gpu`,
 * -1: none). Returns a malloc'ed array of one entry per rank, the same on
 * every rank, and the number of nodes in *n_nodes. */
#define GT_DIST_HOST_LEN 64
typedef struct {
    char host[GT_DIST_HOST_LEN];
    int local_rank, local_size, node, gpu;
} gt_dist_place;
gt_dist_place *gt_dist_placement(MPI_Comm comm, int gpu, int *n_nodes);

/* "gtn1 ranks 0-1, gtn2 ranks 2-3" (ranks listed as ranges) into buf. */
void gt_dist_placement_describe(const gt_dist_place *p, int n_ranks, char *buf, size_t len);

/* Collective: 1 on every rank when `local_ok` is 1 on every rank. */
int gt_dist_all_ok(MPI_Comm comm, int local_ok);

#endif
