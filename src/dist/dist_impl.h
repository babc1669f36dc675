/* dist/dist_impl.h: what the files of dist/ share (internal to dist/). */
#ifndef GT_DIST_DIST_IMPL_H
#define GT_DIST_DIST_IMPL_H

/* allreduce.c: destroys the NCCL communicators (gt_dist_finalize, before
 * MPI_Finalize); nothing without NCCL. */
void gt_dist_nccl_release_all(void);

#endif
