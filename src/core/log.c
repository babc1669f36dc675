#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "core/rank.h"

static int g_level = GT_LOG_INFO;
static int g_all_ranks = 0;
static int g_file_fd = -1; /* the run log (gt_log_set_file), or -1 */

int gt_log_set_file(const char *path) {
    if (g_file_fd >= 0) close(g_file_fd);
    g_file_fd = path ? gt_open_append(path) : -1; /* never through a symbolic link */
    return path && g_file_fd < 0 ? -1 : 0;
}

void gt_log_file_write(const char *text, size_t len) {
    if (g_file_fd < 0 || len == 0) return;
    /* the UTC time in front; one write per call (async-signal-safe: no stdio) */
    char buf[4200];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ ", &tm);
    if (len > sizeof buf - n) len = sizeof buf - n;
    memcpy(buf + n, text, len);
    ssize_t w = write(g_file_fd, buf, n + len);
    (void)w;
}

size_t gt_log_error_prefix(char *buf, size_t n) {
    int k = gt_nranks() > 1 ? snprintf(buf, n, "gridtrain[rank %d]: error: ", gt_rank())
                            : snprintf(buf, n, "gridtrain: error: ");
    return k < 0 ? 0 : (size_t)k < n ? (size_t)k : n - 1;
}

void gt_log_error(const char *fmt, ...) {
    char buf[4096];
    size_t n = gt_log_error_prefix(buf, sizeof buf);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, sizeof buf - n, fmt, ap);
    va_end(ap);
    size_t len = strlen(buf);
    if (len + 1 < sizeof buf) { buf[len++] = '\n'; buf[len] = 0; }
    fputs(buf, stderr);
    fflush(stderr);
    gt_log_file_write(buf, len);
}

void gt_log_init_from_env(void) {
    const char *lv = getenv("GT_LOG_LEVEL");
    if (lv) {
        if (!strcmp(lv, "debug")) g_level = GT_LOG_DEBUG;
        else if (!strcmp(lv, "info")) g_level = GT_LOG_INFO;
        else if (!strcmp(lv, "warn")) g_level = GT_LOG_WARN;
        else if (!strcmp(lv, "quiet")) g_level = GT_LOG_QUIET;
    }
    const char *all = getenv("GT_LOG_ALL_RANKS");
    if (all && *all && strcmp(all, "0")) g_all_ranks = 1;
}
void gt_log_set_level(int level) { g_level = level; }
int gt_log_level(void) { return g_level; }
void gt_log_set_all_ranks(int on) { g_all_ranks = on; }

void gt_log(int level, const char *fmt, ...) {
    if (level < g_level) return;
    if (level < GT_LOG_WARN && gt_rank() != 0 && !g_all_ranks) return;
    char buf[2048];
    int n = 0;
    if (gt_nranks() > 1 && (g_all_ranks || level >= GT_LOG_WARN))
        n = snprintf(buf, sizeof buf, "[%d] ", gt_rank());
    if (level >= GT_LOG_WARN) n += snprintf(buf + n, sizeof buf - (size_t)n, "warning: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    va_end(ap);
    /* one write per line so ranks do not interleave mid-line */
    size_t len = strlen(buf);
    if (len + 1 < sizeof buf) { buf[len] = '\n'; buf[len + 1] = 0; }
    fputs(buf, stderr);
    fflush(stderr);
    gt_log_file_write(buf, strlen(buf));
}
