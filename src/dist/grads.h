/* dist/grads.h: the gradient exchange of a training step, overlapped with
 * backward (PyTorch DDP's bucketed reducer is the model).
 *
 * Buckets are planned once from the parameter table's tensor starts, from
 * the top of the buffer down (backward finishes the last layers first): a
 * bucket is a run of whole tensors and closes as soon as it holds
 * bucket_bytes, so every rank has the same buckets whatever its data. While
 * the last micro-batch of a step runs backward, the engine calls
 * gt_dist_grads_ready(g, lo) (nn/model.h gt_grad_ready_fn) whenever
 * grads[lo, n) are final: every bucket inside [lo, n) that has not started
 * starts then, top first, and the started ones are progressed:
 *   host buffers:   MPI_Iallreduce, progressed by MPI_Testall at each call;
 *   device buffers: NCCL on the exchange's own CUDA stream, after an event
 *                   recorded on the engine's stream (the layer's kernels).
 * gt_dist_grads_finish starts the rest in the same order and completes all:
 * the host waits; on a device the engine's stream waits for the exchange's
 * stream (no host wait). A rank whose step has no sample (no backward) starts
 * every bucket in finish: the order of the collectives is the same on every
 * rank (top bucket first), which is all MPI and NCCL require.
 *
 *   gt_dist_grads *g = gt_dist_grads_create(starts, n_tensors, n, bucket_bytes, on_device, stream, comm);
 *   per step: gt_dist_grads_begin(g, grads);
 *             last micro-batch: gt_engine_set_grad_ready(e, gt_dist_grads_ready, g);
 *                               backward; gt_engine_set_grad_ready(e, NULL, NULL);
 *             gt_dist_grads_finish(g);
 *   gt_dist_grads_free(g);
 *
 * Each bucket is one collective over the same elements whenever it starts,
 * so the sums do not depend on the timing: a run is bit-identical with and
 * without overlap (gt_dist_grads_set_overlap(g, 0) starts everything in
 * finish, for tests and measurements). One rank: nothing to do. */
#ifndef GT_DIST_GRADS_H
#define GT_DIST_GRADS_H

#include <mpi.h>
#include <stddef.h>

typedef struct gt_dist_grads gt_dist_grads;

/* starts[0..n_starts-1]: ascending element offsets where tensors begin
 * (starts[0] = 0), n elements in all. on_device 1: grads are device memory
 * of the current CUDA device and `stream` (a cudaStream_t) is the engine's.
 * Every rank plans the same buckets from the same table; collective only for
 * device buffers on several ranks (the job's NCCL communicator is made here). */
gt_dist_grads *gt_dist_grads_create(const size_t *starts, int n_starts, size_t n, size_t bucket_bytes,
                                    int on_device, void *stream, MPI_Comm comm);
void gt_dist_grads_free(gt_dist_grads *g); /* NULL allowed; nothing may be in flight */
/* 0: buckets start only in finish (no overlap); default 1. */
void gt_dist_grads_set_overlap(gt_dist_grads *g, int on);
int gt_dist_grads_n_buckets(const gt_dist_grads *g);
/* Bucket b's range [lo, hi) (b = 0 is the top bucket, started first). */
void gt_dist_grads_bucket(const gt_dist_grads *g, int b, size_t *lo, size_t *hi);

/* A step begins: grads (n) is the buffer to sum; nothing started. */
void gt_dist_grads_begin(gt_dist_grads *g, float *grads);
/* The engine's hook (ctx = the gt_dist_grads): grads[lo, n) are final. */
void gt_dist_grads_ready(void *ctx, size_t lo);
/* Collective: start what has not started, complete everything (see top).
 * Returns the number of buckets that had started before finish. */
int gt_dist_grads_finish(gt_dist_grads *g);

#endif
