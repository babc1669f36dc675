/* core/rank.h: the rank of this process and the size of its world, as the
 * prefix of log and error lines (core/log.c, core/check.c) reads them. Set
 * once by dist/ (gt_set_rank); a serial run is rank 0 of 1. */
#ifndef GT_CORE_RANK_H
#define GT_CORE_RANK_H

#ifdef __cplusplus
extern "C" {
#endif

void gt_set_rank(int rank, int size);
int gt_rank(void);
int gt_nranks(void);

#ifdef __cplusplus
}
#endif
#endif
