/* nn/ops/cpu/parallel.h: the CPU engine's parallel-for over independent tasks.
 *
 * Some ops are made of many small GEMMs (conv1d's per-chunk im2col GEMMs,
 * attention's per-(batch, head) tile GEMMs, the LSTM's per-step products)
 * that are too small for OpenBLAS's own threading. They run their tasks on
 * the engine's threads instead, each task calling single-threaded sgemm (the
 * LSTM: one block of samples per thread for the whole window, then its
 * weight gradients in slices of gate rows). The large GEMMs (linear layers)
 * are split over the same threads by gt_gemm (nn/ops/cpu/gemm.h), in builds
 * with oneDNN; without it they keep OpenBLAS's threading.
 *
 * Threads. The engine uses as many threads as OpenBLAS is configured for at
 * the time of the call (openblas_get_num_threads(): OPENBLAS_NUM_THREADS, or
 * what openblas_set_num_threads() set since), capped by gt_par_max_threads().
 * A persistent pool of pthreads (the caller is thread 0) is started on first
 * use; idle workers sleep on a condition variable (they never spin).
 * Inside gt_par_for() OpenBLAS is set to 1 thread and restored afterwards.
 *
 * Scratch. Ops that run in parallel give each thread its own slice of their
 * scratch: their *_scratch_elems() return gt_par_max_threads() slices. That
 * count is fixed for the life of the process at its first query (the OpenBLAS
 * thread count then, at most GT_PAR_MAX_THREADS), so a model planned once
 * stays valid when the thread count is lowered later.
 *
 * Not reentrant in the useful sense: a gt_par_for() issued from inside a task,
 * or while another user thread holds the pool, runs its tasks serially on the
 * calling thread (same results). Results never depend on the thread count
 * when the tasks write disjoint outputs, or when shared accumulations are done
 * in task order (gt_par_ordered_begin/end). */
#ifndef GT_NN_OPS_CPU_PARALLEL_H
#define GT_NN_OPS_CPU_PARALLEL_H

#include <stdatomic.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef GT_PAR_MAX_THREADS
#define GT_PAR_MAX_THREADS 16
#endif

/* Scratch slices an op plans for: fixed at the first call, in [1, GT_PAR_MAX_THREADS]. */
int gt_par_max_threads(void);

/* Threads a gt_par_for() issued now would use, in [1, gt_par_max_threads()]. */
int gt_par_threads(void);

/* 1 on a thread running a task of gt_par_for (a worker, or the caller while
 * it runs tasks), else 0: library calls made there get one thread. */
int gt_par_in_task(void);

/* The calling thread's op context: one word that the tasks of the
 * gt_par_for it issues see as theirs (on the workers too), so that what an
 * op was called with reaches its tasks. nn/ops/cpu/gemm.c keeps the
 * products' precision of the model being run in it (gt_cpu_set_precision).
 * 0 on a thread that never set it. gt_par_set_ctx returns the previous word. */
int gt_par_ctx(void);
int gt_par_set_ctx(int word);

/* fn(ctx, task, tid) for every task in [0, n_tasks), tid in [0, threads):
 * the thread's index, for its scratch slice. Tasks are handed out in
 * increasing order, one at a time per thread (a thread takes its next task
 * only after finishing the previous one). Returns when all tasks are done.
 * With one thread, runs task 0, 1, ... in order on the caller. */
typedef void (*gt_par_fn)(void *ctx, int task, int tid);
void gt_par_for(int n_tasks, gt_par_fn fn, void *ctx);

/* Ordered section: the part of task i between gt_par_ordered_begin(o, i) and
 * gt_par_ordered_end(o, i) runs after that of task i-1 (tasks 0..n-1 of one
 * gt_par_for, each entering exactly once), e.g. to add per-task partial sums
 * into a shared gradient in task order: the same rounding for any thread
 * count. Initialise with gt_par_ordered_init() before the gt_par_for. */
typedef struct gt_par_ordered {
    atomic_int next;
} gt_par_ordered;
void gt_par_ordered_init(gt_par_ordered *o);
void gt_par_ordered_begin(gt_par_ordered *o, int task);
void gt_par_ordered_end(gt_par_ordered *o, int task);

#ifdef __cplusplus
}
#endif
#endif
