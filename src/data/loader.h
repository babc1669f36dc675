/* data/loader.h: the prefetch thread. While the trainer computes step k, a
 * background thread fills the batch of step k+1 into the other of two
 * 64-byte-aligned (pinnable) host buffers. The trainer measures how long it
 * waits for a batch: that is the data stall. */
#ifndef GT_DATA_LOADER_H
#define GT_DATA_LOADER_H

#include <stdint.h>

#include "data/dataset.h"

typedef struct gt_batch {
    int64_t n;         /* samples on this rank (may be 0) */
    int64_t g_batch;   /* samples over all ranks (the loss divisor) */
    uint64_t epoch;
    int64_t k;         /* batch number within the epoch */
    float *x;          /* (n, n_x) */
    float *y;          /* (n, n_y) */
    float *mask;       /* (n, n_y) */
    gt_window_ref *refs; /* (n) */
} gt_batch;

typedef struct gt_loader gt_loader;

/* Iterates global batches (epoch, k) of split s, starting at (epoch0, k0)
 * (resume), g_batch samples per global batch; the local part of each is at
 * most max_local samples (buffers are sized for it; extra samples beyond it
 * are an internal error: pass g_batch). prefetch = 0 fills synchronously in
 * gt_loader_next (for tests and timing comparisons). */
gt_loader *gt_loader_create(const gt_dataset *ds, gt_split s, int64_t g_batch, uint64_t epoch0,
                            int64_t k0, int prefetch);
/* The next batch (valid until the next call). Returns seconds spent waiting. */
double gt_loader_next(gt_loader *l, const gt_batch **out);
/* Collective over the ranks sharing the global batch: the batch just
 * returned by gt_loader_next is rebalanced in place (dist/balance.h) so that
 * every rank holds g_batch/P (+1) of its samples, whichever households they
 * came from; moved samples keep their refs (id, rows, times) with item = -1
 * (not a local item of the receiver). Returns the samples received (> 0) or
 * sent (< 0). */
int64_t gt_loader_balance(gt_loader *l, const gt_batch *b, MPI_Comm comm);
void gt_loader_free(gt_loader *l);
/* Bytes of the batch buffers. */
int64_t gt_loader_bytes(const gt_loader *l);
/* The same before creating a loader: two slots for global batch g_batch of
 * samples with n_x inputs and n_y targets (the memory planner, plan/). */
int64_t gt_loader_bytes_for(int64_t g_batch, int64_t n_x, int64_t n_y);

#endif
