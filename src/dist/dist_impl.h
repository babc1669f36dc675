/* dist/dist_impl.h: what the files of dist/ share (internal to dist/). */
#ifndef GT_DIST_DIST_IMPL_H
#define GT_DIST_DIST_IMPL_H

/* allreduce.c: destroys the NCCL communicators (gt_dist_finalize, before
 * MPI_Finalize); nothing without NCCL. */
void gt_dist_nccl_release_all(void);
/* allreduce.c, builds without NCCL: ends the job (exit GT_EXIT_DEVICE) with
 * the one line saying that `size` ranks on GPUs need NCCL; at the exchange's
 * set-up (grads.c), and at any device all-reduce. */
void gt_dist_fail_no_nccl(int size);

#ifdef GT_HAVE_NCCL
#include <mpi.h>
/* allreduce.c: the job's NCCL communicator for comm (made on first use:
 * collective then), kept until gt_dist_finalize. */
void *gt_dist_nccl_comm_for(MPI_Comm comm);
#endif

#endif
