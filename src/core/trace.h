/* core/trace.h: a bounded per-process timeline of named spans (train.trace),
 * written as a Chrome trace / Perfetto JSON by train/ (trace.json).
 *
 * Every span is (name, thread, start, end, one integer argument). The buffer
 * has a fixed capacity, allocated once by gt_trace_start; when it is full
 * further spans are counted as dropped, never reallocated. Sampling: spans are
 * recorded while gt_trace_active is set; the trainer sets it per step with
 * gt_trace_step (the first `first_steps` steps, then every `every`-th step),
 * and around phases it always wants (validation, checkpoints) with
 * gt_trace_sample.
 *
 * Zero cost when off: gt_trace_active stays 0, nothing is allocated, and the
 * hooks (core/timer.c's gt_event_end, the all-reduce buckets, the loader) are
 * one test of that flag. Never changes what is computed.
 *
 * Thread-safe recording: the prefetch thread records its batch fills beside
 * the main thread (one atomic index); each thread gets a small id (0: the
 * thread that called gt_trace_start), the "tid" of the trace. */
#ifndef GT_CORE_TRACE_H
#define GT_CORE_TRACE_H

#include <stdatomic.h>
#include <stdint.h>

typedef struct gt_trace_span {
    const char *name; /* static or registered (core/timer.h) string: never freed while tracing */
    double t0, t1;    /* gt_now() seconds */
    const char *arg_name; /* NULL: no argument; else "step", "bytes", ... (static) */
    int64_t arg;
    int tid;
} gt_trace_span;

/* 1 while spans are recorded (tracing on and this step sampled). Read with
 * GT_TRACE_ON() in hooks: a relaxed load, one branch. */
extern atomic_int gt_trace_active;
#define GT_TRACE_ON() atomic_load_explicit(&gt_trace_active, memory_order_relaxed)

/* Allocates room for `capacity` spans (>= 1) and starts recording with every
 * step sampled until gt_trace_step says otherwise. first_steps >= 0, every >= 1.
 * Returns 0, or -1 when the buffer cannot be allocated (tracing stays off). */
int gt_trace_start(int64_t capacity, int64_t first_steps, int64_t every);
/* Stops recording and frees the buffer. */
void gt_trace_stop(void);
int gt_trace_enabled(void); /* started and not stopped */

/* Sampling decision for an optimizer step (0-based): sampled when
 * step < first_steps or step % every == 0. Returns whether it is sampled. */
int gt_trace_step(int64_t step);
/* Forces recording on (1) or restores a previous state; returns the previous
 * state. No effect when tracing is off. */
int gt_trace_sample(int on);

/* Records one span on the calling thread when GT_TRACE_ON() (callers test it). */
void gt_trace_record(const char *name, double t0, double t1, const char *arg_name, int64_t arg);

/* The same on an explicit thread of the trace: spans measured elsewhere (the
 * GPU stream, from CUDA events: GT_TRACE_TID_GPU). */
#define GT_TRACE_TID_GPU 10
/* The gradient exchange (dist/grads.h): its buckets run beside backward, so
 * they get a row of their own (spans of one row must nest). */
#define GT_TRACE_TID_COMM 2
void gt_trace_record_tid(int tid, const char *name, double t0, double t1, const char *arg_name, int64_t arg);

/* The recorded spans (in recording order) and how many did not fit. */
int64_t gt_trace_count(void);
const gt_trace_span *gt_trace_spans(void);
int64_t gt_trace_dropped(void);
int64_t gt_trace_capacity(void);
int64_t gt_trace_first_steps(void);
int64_t gt_trace_every(void);

#endif
