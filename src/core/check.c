#define _GNU_SOURCE
#include "core/check.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static gt_abort_fn g_abort = NULL;
static int g_rank = 0, g_size = 1;

void gt_set_abort_handler(gt_abort_fn fn) { g_abort = fn; }
void gt_set_rank(int rank, int size) { g_rank = rank; g_size = size; }
int gt_rank(void) { return g_rank; }
int gt_nranks(void) { return g_size; }

GT_NORETURN void gt_abort(int code) {
    fflush(stdout);
    fflush(stderr);
    if (g_abort) g_abort(code);
    exit(code);
}

static void prefix(void) {
    if (g_size > 1)
        fprintf(stderr, "gridtrain[rank %d]: error: ", g_rank);
    else
        fputs("gridtrain: error: ", stderr);
}

GT_NORETURN void gt_fatal(int code, const char *file, int line, const char *fmt, ...) {
    fflush(stdout);
    prefix();
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    /* Internal errors carry the source location; user errors stay one clean line
     * but still say where they were raised when GT_DEBUG is set. */
    if (code == GT_EXIT_INTERNAL || getenv("GT_DEBUG"))
        fprintf(stderr, " [%s:%d]", file, line);
    fputc('\n', stderr);
    gt_abort(code);
}

GT_NORETURN void gt_fatal_lib(const char *lib, const char *expr, const char *what,
                            const char *hint, const char *file, int line) {
    fflush(stdout);
    prefix();
    fprintf(stderr, "%s call failed: %s: %s [%s:%d]", lib, expr, what ? what : "(no message)",
            file, line);
    if (hint && *hint) fprintf(stderr, "; hint: %s", hint);
    fputc('\n', stderr);
    gt_abort(GT_EXIT_LIBRARY);
}

static GT_NORETURN void oom(size_t n, const char *file, int line) {
    gt_fatal(GT_EXIT_RESOURCE, file, line,
             "out of host memory allocating %zu bytes (%.1f MiB) at %s:%d; "
             "reduce batch size or shard over more ranks",
             n, (double)n / (1024.0 * 1024.0), file, line);
}

void *gt_malloc(size_t n, const char *file, int line) {
    void *p = malloc(n ? n : 1);
    if (!p) oom(n, file, line);
    return p;
}
void *gt_calloc(size_t n, size_t size, const char *file, int line) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) oom(n * size, file, line);
    return p;
}
void *gt_realloc(void *p, size_t n, const char *file, int line) {
    void *q = realloc(p, n ? n : 1);
    if (!q) oom(n, file, line);
    return q;
}
void *gt_aligned_alloc(size_t align, size_t n, const char *file, int line) {
    void *p = NULL;
    size_t sz = (n + align - 1) / align * align;
    if (posix_memalign(&p, align, sz ? sz : align) != 0) oom(n, file, line);
    return p;
}
char *gt_strdup(const char *s, const char *file, int line) {
    size_t n = strlen(s) + 1;
    char *d = gt_malloc(n, file, line);
    memcpy(d, s, n);
    return d;
}
FILE *gt_fopen(const char *path, const char *mode, const char *file, int line) {
    FILE *f = fopen(path, mode);
    if (!f)
        gt_fatal(mode[0] == 'r' ? GT_EXIT_DATA : GT_EXIT_RESOURCE, file, line,
                 "cannot open '%s' (mode %s): %s", path, mode, strerror(errno));
    return f;
}
