/* core/check_h5.h: H5_CHECK. Include only where hdf5.h is available.
 * HDF5 returns negative values on failure; the library's own error stack is
 * silenced by io/ and replaced by this one line (set GT_DEBUG=1 to keep it). */
#ifndef GT_CORE_CHECK_H5_H
#define GT_CORE_CHECK_H5_H
#include <hdf5.h>

#include "core/check.h"

#define H5_CHECK(call)                                                                      \
    __extension__({                                                                         \
        __typeof__(call) gt_h5_rc_ = (call);                                                \
        if (gt_h5_rc_ < 0)                                                                  \
            gt_fatal_lib("HDF5", #call, "returned a negative status",                       \
                         "the file may be damaged, truncated or not written by gridtrain; " \
                         "run 'gridtrain inspect FILE'",                                    \
                         __FILE__, __LINE__);                                               \
        gt_h5_rc_;                                                                          \
    })
#endif
