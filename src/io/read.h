/* io/read.h: the collective sharded readers, what callers include.
 *
 * Every kind's reader is reached through its row (io/kind.h gt_io_read);
 * the typed readers of the built-in kinds and their shard types are in the
 * kinds' headers, included here: io/kind_nilm.h (gt_nilm_shard_read),
 * io/kind_pdm.h (gt_pdm_shard_read, the /care_events and /legend tables).
 * Value limits are read options the caller passes (gt_read_opts). */
#ifndef GT_IO_READ_H
#define GT_IO_READ_H

#include "io/kind.h"
#include "io/kind_nilm.h"
#include "io/kind_pdm.h"

#endif
