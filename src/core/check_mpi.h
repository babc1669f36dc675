/* core/check_mpi.h: MPI_CHECK. Include only where mpi.h is available. */
#ifndef GT_CORE_CHECK_MPI_H
#define GT_CORE_CHECK_MPI_H
#include <mpi.h>

#include "core/check.h"
#include "core/watchdog.h"

#define GT_MPI_STR_(x) #x
#define GT_MPI_STR(x) GT_MPI_STR_(x)
/* Every checked MPI call marks progress for the watchdog (core/watchdog.h)
 * before and after: a rank stuck in a collective is reported naming it. */
#define MPI_CHECK(call)                                                                   \
    do {                                                                                  \
        gt_watchdog_beat("entered " #call " [" __FILE__ ":" GT_MPI_STR(__LINE__) "]");     \
        int gt_mpi_rc_ = (call);                                                          \
        gt_watchdog_beat("returned from " #call " [" __FILE__ ":" GT_MPI_STR(__LINE__) "]"); \
        if (gt_mpi_rc_ != MPI_SUCCESS) {                                                  \
            char gt_mpi_msg_[MPI_MAX_ERROR_STRING];                                       \
            int gt_mpi_len_ = 0;                                                          \
            MPI_Error_string(gt_mpi_rc_, gt_mpi_msg_, &gt_mpi_len_);                      \
            gt_fatal_lib("MPI", #call, gt_mpi_msg_,                                       \
                         "check that every rank reached the same collective; run with "   \
                         "GT_LOG_ALL_RANKS=1 to see each rank's progress",                \
                         __FILE__, __LINE__);                                             \
        }                                                                                 \
    } while (0)
#endif
