/* core/check_h5.h: H5_CHECK. Include only where hdf5.h is available.
 * HDF5 returns negative values on failure; the library's own error stack is
 * silenced by io/ and replaced by this one line (set GT_DEBUG=1 to keep it).
 * A failure because the disk is full (no space, a quota or a file size limit:
 * errno after the call, the system error HDF5 and MPI-IO put on the error
 * stack, or the output in progress that cannot grow any more) ends the job
 * with GT_EXIT_RESOURCE, any other with GT_EXIT_LIBRARY. */
#ifndef GT_CORE_CHECK_H5_H
#define GT_CORE_CHECK_H5_H
#include <errno.h>
#include <hdf5.h>
#include <string.h>

#include "core/check.h"

static inline herr_t gt_h5_disk_full_cb_(unsigned n, const H5E_error2_t *e, void *data) {
    (void)n;
    static const char *const needles[] = {"No space left", "File too large", "Disk quota", "errno = 28,",
                                          "errno = 27,", "errno = 122,", "MPI_ERR_NO_SPACE", "MPI_ERR_QUOTA"};
    if (e && e->desc)
        for (size_t k = 0; k < sizeof needles / sizeof needles[0]; k++)
            if (strstr(e->desc, needles[k])) *(int *)data = 1;
    return 0;
}

/* 1 when the failed HDF5 call left a disk-full cause (errno_after: errno
 * right after the call). */
static inline int gt_h5_failed_disk_full(int errno_after) {
    int full = gt_errno_is_disk_full(errno_after);
    if (!full) H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, gt_h5_disk_full_cb_, &full);
    if (!full) full = gt_output_disk_full(); /* MPI-IO may lose errno: probe the output itself */
    return full;
}

static inline _Noreturn void gt_h5_fatal_(const char *expr, int errno_after, const char *file, int line) {
    int full = gt_h5_failed_disk_full(errno_after);
    gt_fatal_lib_code(full ? GT_EXIT_RESOURCE : GT_EXIT_LIBRARY, "HDF5", expr,
                      full ? "no space left (disk full, quota or file size limit)" : "returned a negative status",
                      "the file may be damaged, truncated or not written by gridtrain; run 'gridtrain inspect FILE'",
                      file, line);
}

#define H5_CHECK(call)                                                                      \
    __extension__({                                                                         \
        errno = 0;                                                                          \
        __typeof__(call) gt_h5_rc_ = (call);                                                \
        if (gt_h5_rc_ < 0) gt_h5_fatal_(#call, errno, __FILE__, __LINE__);                  \
        gt_h5_rc_;                                                                          \
    })
#endif
