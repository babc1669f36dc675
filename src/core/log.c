#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"

static int g_level = GT_LOG_INFO;
static int g_all_ranks = 0;

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
}
