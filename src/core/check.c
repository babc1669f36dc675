#define _GNU_SOURCE
#include "core/check.h"
#include "core/log.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static gt_abort_fn g_abort = NULL;

static int g_abort_reentrant = 0;
void gt_set_abort_handler(gt_abort_fn fn) { g_abort = fn; }
void gt_set_abort_handler_reentrant(gt_abort_fn fn) {
    g_abort = fn;
    g_abort_reentrant = 1;
}

#define GT_MAX_OUTPUTS 8
/* volatile: read by the signal handler below; a slot holds a complete string
 * or NULL (stored after strdup, cleared before free) */
static char *volatile g_outputs[GT_MAX_OUTPUTS];

/* SIGINT / SIGTERM while an output is being written: remove its temporary
 * (unlink is async-signal-safe), then die of the signal as before (the
 * handler is reset on entry, SA_RESETHAND, and the signal raised again). */
static void on_fatal_signal(int sig) {
    for (int i = 0; i < GT_MAX_OUTPUTS; i++) {
        const char *p = g_outputs[i];
        if (p) unlink(p);
    }
    raise(sig);
}

/* Installs on_fatal_signal for SIGINT and SIGTERM where their action is the
 * default one: a handler of the program's own (the trainer's SIGTERM
 * checkpoint) and an ignored signal (a background job's SIGINT) stay. */
static void install_signal_cleanup(void) {
    static int done = 0;
    if (done) return;
    done = 1;
    const int sigs[2] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++) {
        struct sigaction old, sa;
        if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESETHAND;
        sigaction(sigs[i], &sa, NULL);
    }
}

void gt_output_begin(const char *tmp_path) {
    install_signal_cleanup();
    for (int i = 0; i < GT_MAX_OUTPUTS; i++)
        if (!g_outputs[i]) {
            g_outputs[i] = strdup(tmp_path);
            return;
        }
}
void gt_output_end(const char *tmp_path) {
    for (int i = 0; i < GT_MAX_OUTPUTS; i++)
        if (g_outputs[i] && !strcmp(g_outputs[i], tmp_path)) {
            char *p = g_outputs[i];
            g_outputs[i] = NULL;
            free(p);
        }
}
const char *gt_output_current(void) {
    for (int i = GT_MAX_OUTPUTS - 1; i >= 0; i--)
        if (g_outputs[i]) return g_outputs[i];
    return NULL;
}

int gt_errno_is_disk_full(int e) { return e == ENOSPC || e == EDQUOT || e == EFBIG; }

int gt_output_disk_full(void) {
    const char *p = gt_output_current();
    if (!p) return 0;
    int fd = open(p, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return gt_errno_is_disk_full(errno);
    struct stat st;
    int full = 0;
    if (fstat(fd, &st) == 0) {
        /* the temporary is removed on the fatal path: growing it costs nothing */
        int rc = posix_fallocate(fd, st.st_size, (off_t)1 << 20);
        full = gt_errno_is_disk_full(rc);
    }
    close(fd);
    return full;
}

static GT_NORETURN void abort_common(int code, int lock_streams) {
    static volatile int in_abort = 0;
    /* the first caller flushes and removes; the hook is always called (a
     * fuzz harness's hook returns to the harness by longjmp) */
    if (!in_abort) {
        in_abort = g_abort == NULL || g_abort_reentrant == 0;
        if (lock_streams) {
            fflush(NULL); /* every output stream: metrics, logs */
        } else {
            FILE *s[2] = {stdout, stderr};
            for (int i = 0; i < 2; i++)
                if (ftrylockfile(s[i]) == 0) {
                    fflush_unlocked(s[i]);
                    funlockfile(s[i]);
                }
        }
        for (int i = 0; i < GT_MAX_OUTPUTS; i++)
            if (g_outputs[i]) unlink(g_outputs[i]);
    }
    if (g_abort) g_abort(code);
    /* _exit, not exit: atexit handlers (HDF5 closing a failed MPI-IO file)
     * could crash and replace `code` by a signal */
    _exit(code);
}

GT_NORETURN void gt_abort(int code) { abort_common(code, 1); }
GT_NORETURN void gt_abort_nolock(int code) { abort_common(code, 0); }

/* The error line: "gridtrain: error: " (with the rank in a parallel run),
 * the message, a newline; on stderr and, with " (exit N)", in the run log
 * (core/log.h). */
static void emit(int code, char *line, size_t n) {
    size_t len = strlen(line);
    if (len + 1 < n) { line[len++] = '\n'; line[len] = 0; }
    fputs(line, stderr);
    if (len > 0 && line[len - 1] == '\n') len--;
    char tail[32];
    int k = snprintf(tail, sizeof tail, " (exit %d)\n", code);
    if (len + (size_t)k < n) {
        memcpy(line + len, tail, (size_t)k + 1);
        len += (size_t)k;
    }
    gt_log_file_write(line, len);
}

/* appends to line (n bytes in all) */
static void addf(char *line, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void addf(char *line, size_t n, const char *fmt, ...) {
    size_t len = strlen(line);
    if (len + 1 >= n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + len, n - len, fmt, ap);
    va_end(ap);
}

GT_NORETURN void gt_fatal(int code, const char *file, int line, const char *fmt, ...) {
    fflush(stdout);
    char buf[4096];
    size_t k = gt_log_error_prefix(buf, sizeof buf);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + k, sizeof buf - k, fmt, ap);
    va_end(ap);
    /* Internal errors carry the source location; user errors stay one clean line
     * but still say where they were raised when GT_DEBUG is set. */
    if (code == GT_EXIT_INTERNAL || getenv("GT_DEBUG")) addf(buf, sizeof buf, " [%s:%d]", file, line);
    emit(code, buf, sizeof buf);
    gt_abort(code);
}

GT_NORETURN void gt_fatal_lib_code(int code, const char *lib, const char *expr, const char *what,
                                 const char *hint, const char *file, int line) {
    fflush(stdout);
    char buf[4096];
    gt_log_error_prefix(buf, sizeof buf);
    const char *out = gt_output_current();
    if (code == GT_EXIT_RESOURCE)
        addf(buf, sizeof buf, "disk full%s%s: ", out ? " writing " : "", out ? out : "");
    else if (out)
        addf(buf, sizeof buf, "writing %s: ", out);
    addf(buf, sizeof buf, "%s call failed: %s: %s [%s:%d]", lib, expr, what ? what : "(no message)", file, line);
    if (code == GT_EXIT_RESOURCE)
        addf(buf, sizeof buf, "; hint: free space on that file system (or raise the quota / file size limit, 'ulimit -f') "
                              "and run again; an existing output was left as it was");
    else if (hint && *hint)
        addf(buf, sizeof buf, "; hint: %s", hint);
    emit(code, buf, sizeof buf);
    gt_abort(code);
}

GT_NORETURN void gt_fatal_lib(const char *lib, const char *expr, const char *what,
                            const char *hint, const char *file, int line) {
    gt_fatal_lib_code(GT_EXIT_LIBRARY, lib, expr, what, hint, file, line);
}

static _Thread_local int g_defer_on, g_defer_count;
static _Thread_local char g_defer_first[512];
void gt_lib_defer_begin(void) {
    g_defer_on = 1;
    g_defer_count = 0;
    g_defer_first[0] = '\0';
}
int gt_lib_defer_end(char *first, size_t n) {
    g_defer_on = 0;
    if (first && n) snprintf(first, n, "%s", g_defer_first);
    return g_defer_count;
}
void gt_lib_failed(const char *lib, const char *expr, const char *what, const char *hint, const char *file,
                   int line) {
    if (!g_defer_on) gt_fatal_lib(lib, expr, what, hint, file, line);
    if (g_defer_count++ == 0)
        snprintf(g_defer_first, sizeof g_defer_first, "%s call failed: %s: %s [%s:%d]", lib, expr,
                 what ? what : "(no message)", file, line);
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
    size_t b = 0;
    if (!gt_array_bytes(n > (size_t)LLONG_MAX ? -1 : (long long)n, size, &b))
        gt_fatal(GT_EXIT_RESOURCE, file, line, "out of host memory: %zu elements of %zu bytes are beyond addressing", n,
                 size);
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) oom(b, file, line);
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
int gt_array_bytes(long long n, size_t size, size_t *n_bytes) {
    if (n < 0) return 0;
    if (size && (unsigned long long)n > GT_ALLOC_MAX_BYTES / size) return 0;
    if (n_bytes) *n_bytes = (size_t)n * size;
    return 1;
}

/* n elements of size bytes in bytes, or the one line naming what and the count */
static size_t array_bytes(long long n, size_t size, const char *what, const char *file, int line) {
    size_t b = 0;
    if (n < 0) gt_fatal(GT_EXIT_INTERNAL, file, line, "%s: a negative element count (%lld)", what ? what : "array", n);
    if (!gt_array_bytes(n, size, &b))
        gt_fatal(GT_EXIT_RESOURCE, file, line,
                 "%s: %lld elements of %zu bytes are beyond the limit of one allocation (%zu bytes, 1 TiB)",
                 what ? what : "array", n, size, (size_t)GT_ALLOC_MAX_BYTES);
    return b;
}
void *gt_alloc_array(long long n, size_t size, const char *what, const char *file, int line) {
    return gt_malloc(array_bytes(n, size, what, file, line), file, line);
}
void *gt_calloc_array(long long n, size_t size, const char *what, const char *file, int line) {
    size_t b = array_bytes(n, size, what, file, line);
    void *p = calloc(b ? b : 1, 1);
    if (!p) oom(b, file, line);
    return p;
}
void *gt_realloc_array(void *p, long long n, size_t size, const char *what, const char *file, int line) {
    return gt_realloc(p, array_bytes(n, size, what, file, line), file, line);
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
