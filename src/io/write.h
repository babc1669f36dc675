/* io/write.h: the collective writers, what callers include.
 *
 * The options and statistics of a write and the file protocol every writer
 * shares (a new unique "<path>.tmp.XXXXXX", renamed to `path` only after
 * every rank has finished and the file is closed, so a failure never damages
 * an existing output) are in io/kind.h; the writers of the built-in kinds and
 * their source types in io/kind_nilm.h (gt_nilm_write) and io/kind_pdm.h
 * (gt_pdm_write), included here. Sources over the synthetic generators are
 * in synth/synth_source.h. */
#ifndef GT_IO_WRITE_H
#define GT_IO_WRITE_H

#include "io/kind.h"
#include "io/kind_nilm.h"
#include "io/kind_pdm.h"

#endif
