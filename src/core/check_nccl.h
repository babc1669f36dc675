/* core/check_nccl.h: NCCL_CHECK. Only dist/ includes it (the map lets only
 * dist/ use <nccl.h>; cmake/layers.cmake). Prints the failing call,
 * file:line, rank and a hint, then ends the job. */
#ifndef GT_CORE_CHECK_NCCL_H
#define GT_CORE_CHECK_NCCL_H
#include <nccl.h>

#include "core/check.h"

#define NCCL_CHECK(call)                                                                    \
    do {                                                                                    \
        ncclResult_t gt_nc_rc_ = (call);                                                    \
        if (gt_nc_rc_ != ncclSuccess)                                                       \
            gt_fatal_lib("NCCL", #call, ncclGetErrorString(gt_nc_rc_),                      \
                         "rerun with NCCL_DEBUG=INFO; on hosts without InfiniBand set "     \
                         "NCCL_IB_DISABLE=1, and pick the interface with NCCL_SOCKET_IFNAME", \
                         __FILE__, __LINE__);                                               \
    } while (0)

#endif
