/* core/check.h: errors, exit codes and the abort hook.
 *
 * Two kinds of failure (PETSc's PetscCheck vs PetscAssert):
 *   GT_CHECK(cond, code, fmt, ...)  user errors (bad config, bad file, bad data).
 *                                   Always on. Prints one line and ends the job.
 *   GT_ASSERT(cond)                 internal invariants. Always on as well (cheap),
 *                                   never used to validate input.
 * In a parallel run the abort hook (installed by dist/) calls MPI_Abort so a
 * failing rank ends the whole job instead of leaving the others in a collective.
 * core/ itself never includes mpi.h. */
#ifndef GT_CORE_CHECK_H
#define GT_CORE_CHECK_H

#include <stddef.h>
#include <stdio.h>

#include "core/rank.h"

#ifdef __cplusplus
#define GT_NORETURN [[noreturn]]
extern "C" {
#else
#define GT_NORETURN _Noreturn
#endif

/* Exit codes, documented in docs/troubleshooting.md. */
enum gt_exit {
    GT_EXIT_OK = 0,
    GT_EXIT_INTERNAL = 1,  /* a bug: an internal invariant failed */
    GT_EXIT_USAGE = 2,     /* bad command line or configuration */
    GT_EXIT_DATA = 3,      /* bad input file, schema or data */
    GT_EXIT_RESOURCE = 4,  /* out of memory, disk, device */
    GT_EXIT_NUMERIC = 5,   /* non-finite loss/gradients that did not recover */
    GT_EXIT_LIBRARY = 6,   /* an external library call failed (MPI, HDF5, CUDA...) */
    GT_EXIT_DEVICE = 7,    /* the requested device is not usable: no GPU, driver older than the
                              runtime, more ranks on a node than GPUs, a binary without CUDA */
    GT_EXIT_PREEMPTED = 75 /* checkpointed on a signal; requeue to continue (EX_TEMPFAIL) */
};

/* Ends the job: the one fatal path. Flushes every stdio stream, removes the
 * temporaries of the outputs this process was writing (gt_output_begin), then
 * calls the hook installed by dist/ (MPI_Abort(MPI_COMM_WORLD, code) when the
 * world has more than one rank) and ends with _exit(code): no atexit handler
 * runs (HDF5's would close a failed MPI-IO file and crash), so the exit code is
 * always `code`. Never returns. */
typedef void (*gt_abort_fn)(int code);
void gt_set_abort_handler(gt_abort_fn fn);
/* Tests and fuzz targets: a hook that returns control to the harness (longjmp),
 * called on every fatal error, not only the first. */
void gt_set_abort_handler_reentrant(gt_abort_fn fn);
GT_NORETURN void gt_abort(int code);

/* The fatal path for a thread that cannot know what the others hold (the
 * watchdog): stdio streams are flushed only if their lock is free, then as
 * gt_abort. */
GT_NORETURN void gt_abort_nolock(int code);

/* Temporaries of outputs being written (at most 8 at a time): gt_abort removes
 * them so a failed job leaves no partial file behind, and library failures
 * name the output they happened in. Not collective; every rank may register
 * the same name. gt_output_end forgets a name (after the rename, or the
 * writer's own cleanup). The first gt_output_begin also installs a SIGINT /
 * SIGTERM handler (where the action is the default) that removes the
 * registered temporaries and ends the process by the signal. */
void gt_output_begin(const char *tmp_path);
void gt_output_end(const char *tmp_path);
const char *gt_output_current(void); /* the newest registered, or NULL */

/* gt_rank, gt_nranks, gt_set_rank: core/rank.h (included above). */

/* Print "gridtrain: error: <msg>" (with "[rank r]" in parallel runs) and abort. */
GT_NORETURN void gt_fatal(int code, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Same line format, for an error reported by a library call; `hint` may be NULL. */
GT_NORETURN void gt_fatal_lib(const char *lib, const char *expr, const char *what,
                            const char *hint, const char *file, int line);
/* The same with an exit code: GT_EXIT_RESOURCE for a library call that failed
 * because the disk is full (ENOSPC, EDQUOT, EFBIG: no space, a quota or a file
 * size limit), else GT_EXIT_LIBRARY. */
GT_NORETURN void gt_fatal_lib_code(int code, const char *lib, const char *expr, const char *what,
                                 const char *hint, const char *file, int line);
/* Library failures deferred while a CUDA graph is captured. Between
 * gt_lib_defer_begin and gt_lib_defer_end on one thread (the capturing one:
 * captures are cudaStreamCaptureModeThreadLocal), gt_lib_failed records the
 * first failure and returns, so a call that is illegal while capturing ends
 * the capture instead of the job (the caller then re-runs the work
 * eagerly, where a real error ends the job as usual). Not nested.
 * gt_lib_defer_end: the number of failures recorded since begin; the first,
 * as "<lib> call failed: <expr>: <what> [file:line]", into first (n bytes;
 * may be NULL). Outside a deferral gt_lib_failed is gt_fatal_lib. */
void gt_lib_defer_begin(void);
int gt_lib_defer_end(char *first, size_t n);
void gt_lib_failed(const char *lib, const char *expr, const char *what, const char *hint, const char *file,
                   int line);
/* 1 when errno value e means "the disk is full" (ENOSPC, EDQUOT, EFBIG). */
int gt_errno_is_disk_full(int e);
/* After a failed write through a library that loses errno (HDF5 over MPI-IO):
 * 1 when the output being written (gt_output_current) cannot grow by 1 MiB
 * (posix_fallocate fails with ENOSPC, EDQUOT or EFBIG: no space, a quota or a
 * file size limit), else 0. Not collective. */
int gt_output_disk_full(void);

#define GT_FAIL(code, ...) gt_fatal((code), __FILE__, __LINE__, __VA_ARGS__)
#define GT_CHECK(cond, code, ...)                                   \
    do {                                                            \
        if (!(cond)) gt_fatal((code), __FILE__, __LINE__, __VA_ARGS__); \
    } while (0)
#define GT_ASSERT(cond)                                                          \
    do {                                                                         \
        if (!(cond))                                                             \
            gt_fatal(GT_EXIT_INTERNAL, __FILE__, __LINE__,                       \
                     "internal invariant failed: %s (please report)", #cond);    \
    } while (0)

/* Allocation with a clear message on failure (llm.c mallocCheck). All take
 * counts in bytes; names end in _bytes where both counts could be confused. */
void *gt_malloc(size_t n_bytes, const char *file, int line);
void *gt_calloc(size_t n, size_t size, const char *file, int line);
void *gt_realloc(void *p, size_t n_bytes, const char *file, int line);
void *gt_aligned_alloc(size_t align, size_t n_bytes, const char *file, int line);
char *gt_strdup(const char *s, const char *file, int line);
FILE *gt_fopen(const char *path, const char *mode, const char *file, int line);
/* Arrays whose element count comes from a configuration value, a file's
 * dimensions, a line count or a JSON document: the count is checked before
 * anything is allocated. n < 0, n * size overflowing, or n * size above
 * GT_ALLOC_MAX_BYTES (1 TiB: no single host buffer of gridtrain is larger, so
 * a count beyond it is wrapped or crafted) end the job with exit 4 and one
 * line naming `what` (e.g. "train.trace_events spans", "FILE: grid rows"),
 * the count and the element size. gt_alloc_array leaves the memory
 * uninitialised, gt_calloc_array zeroes it, gt_realloc_array resizes p (NULL:
 * a new array) to n elements. */
#define GT_ALLOC_MAX_BYTES ((size_t)1 << 40)
/* 1 when n elements of `size` bytes fit under GT_ALLOC_MAX_BYTES (n >= 0), with
 * the byte count in *n_bytes when not NULL; 0 otherwise. Never prints. */
int gt_array_bytes(long long n, size_t size, size_t *n_bytes);
void *gt_alloc_array(long long n, size_t size, const char *what, const char *file, int line);
void *gt_calloc_array(long long n, size_t size, const char *what, const char *file, int line);
void *gt_realloc_array(void *p, long long n, size_t size, const char *what, const char *file, int line);
#define GT_ALLOC_ARRAY(n, size, what) gt_alloc_array((long long)(n), (size), (what), __FILE__, __LINE__)
#define GT_CALLOC_ARRAY(n, size, what) gt_calloc_array((long long)(n), (size), (what), __FILE__, __LINE__)
#define GT_REALLOC_ARRAY(p, n, size, what) gt_realloc_array((p), (long long)(n), (size), (what), __FILE__, __LINE__)

#define GT_MALLOC(n_bytes) gt_malloc((n_bytes), __FILE__, __LINE__)
#define GT_CALLOC(n, size) gt_calloc((n), (size), __FILE__, __LINE__)
#define GT_REALLOC(p, n_bytes) gt_realloc((p), (n_bytes), __FILE__, __LINE__)
#define GT_ALIGNED_ALLOC(n_bytes) gt_aligned_alloc(64, (n_bytes), __FILE__, __LINE__)
#define GT_STRDUP(s) gt_strdup((s), __FILE__, __LINE__)
#define GT_FOPEN(path, mode) gt_fopen((path), (mode), __FILE__, __LINE__)

#ifdef __cplusplus
}
#endif
#endif

