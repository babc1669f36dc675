/* data/config.c: the data settings (defaults, the tasks' blocks, resolution,
 * item filters, the split rule) and their small helpers (see dataset.h). */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "core/log.h"
#include "core/rng.h"
#include "data/dataset_impl.h"
#include "data/permute.h"
#include "dist/reduce.h"

const char *gt_split_name(gt_split s) {
    switch (s) {
    case GT_SPLIT_TRAIN: return "train";
    case GT_SPLIT_VAL: return "val";
    case GT_SPLIT_TEST: return "test";
    case GT_SPLIT_HOLDOUT: return "holdout";
    default: return "?";
    }
}

int gt_data_filter_parse(gt_data_filter *f, const char *text, char *err, size_t err_bytes) {
    memset(f, 0, sizeof *f);
    const char *p = text ? text : "";
    while (*p == ' ') p++;
    if (!*p || !strcmp(p, "all")) return 0;
    while (*p) {
        char *end;
        while (*p == ' ') p++;
        errno = 0; /* an id beyond long long is not one: strtoll gave LLONG_MAX, named as the id */
        long long lo = strtoll(p, &end, 10), hi;
        if (end == p || errno == ERANGE) goto bad;
        p = end;
        while (*p == ' ') p++;
        if (*p == '-' ) {
            p++;
            hi = strtoll(p, &end, 10);
            if (end == p || errno == ERANGE) goto bad;
            p = end;
        } else {
            hi = lo;
        }
        while (*p == ' ') p++;
        if (hi < lo) {
            snprintf(err, err_bytes, "empty range %lld-%lld in '%s'", lo, hi, text);
            return -1;
        }
        if (f->n == GT_DATA_MAX_RANGES) {
            snprintf(err, err_bytes, "more than %d ranges in '%s'", GT_DATA_MAX_RANGES, text);
            return -1;
        }
        f->lo[f->n] = lo;
        f->hi[f->n] = hi;
        f->n++;
        if (*p == ',') {
            p++;
            while (*p == ' ') p++;
            if (!*p) goto bad;
        } else if (*p) {
            goto bad;
        }
    }
    return 0;
bad:
    snprintf(err, err_bytes, "'%s' is not a list of integers and ranges (e.g. 0,2,5-9)", text);
    memset(f, 0, sizeof *f);
    return -1;
}

int gt_data_filter_has(const gt_data_filter *f, int64_t v) {
    if (f->n == 0) return 1;
    for (int r = 0; r < f->n; r++)
        if (v >= f->lo[r] && v <= f->hi[r]) return 1;
    return 0;
}

/* the added tables and their slices (gt_data_task_add), the same in every configuration made since */
static gt_data_task_slice g_slices[GT_DATA_MAX_TASKS];
static int g_n_slices;
static size_t g_arena_used;

void gt_data_task_add(const gt_data_task_i *t) {
    if (!t || !t->config_bytes) return;
    for (int i = 0; i < g_n_slices; i++) {
        if (g_slices[i].owner == t) return;
        GT_CHECK(strcmp(g_slices[i].owner->name, t->name), GT_EXIT_INTERNAL,
                 "data: two task data tables named %s have settings", t->name);
    }
    GT_CHECK(g_n_slices < GT_DATA_MAX_TASKS, GT_EXIT_INTERNAL, "data: more than %d tasks with data settings",
             GT_DATA_MAX_TASKS);
    GT_CHECK(t->config_defaults, GT_EXIT_INTERNAL, "data: task %s's settings have no defaults", t->name);
    const size_t align = _Alignof(max_align_t), off = (g_arena_used + align - 1) / align * align;
    GT_CHECK(t->config_bytes <= GT_DATA_TASK_ARENA_BYTES && off <= GT_DATA_TASK_ARENA_BYTES - t->config_bytes,
             GT_EXIT_INTERNAL,
             "data: task %s's settings take %zu bytes, but %zu of the %d the tasks share are taken "
             "(GT_DATA_TASK_ARENA_BYTES)", t->name, t->config_bytes, g_arena_used, GT_DATA_TASK_ARENA_BYTES);
    g_slices[g_n_slices++] = (gt_data_task_slice){t, off};
    g_arena_used = off + t->config_bytes;
}

void gt_data_config_defaults(gt_data_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->task = GT_TASK_UNSET;
    cfg->window = GT_DATA_WINDOW_TASK_DEFAULT; /* the task's (gt_data_task_i window, stride) */
    cfg->stride = GT_DATA_STRIDE_TASK_DEFAULT;
    cfg->stride_frac = 0.5; /* stride 0: a window every half on-duration of each appliance */
    cfg->split_train = 0.7;
    cfg->split_val = 0.15;
    cfg->holdout_every = 0;
    cfg->screen = GT_SCREEN_DROP;
    cfg->spike_k = 8.0;
    cfg->seed = 1;
    for (int i = 0; i < g_n_slices; i++) {
        cfg->task_slice[i] = g_slices[i];
        g_slices[i].owner->config_defaults(cfg->task_arena.bytes + g_slices[i].off);
    }
}

static const gt_data_task_slice *slice_of(const gt_data_config *cfg, const char *name) {
    for (int i = 0; i < GT_DATA_MAX_TASKS && cfg->task_slice[i].owner; i++)
        if (!strcmp(cfg->task_slice[i].owner->name, name)) return &cfg->task_slice[i];
    GT_FAIL(GT_EXIT_INTERNAL, "data: the settings have no block of task %s (gt_data_task_add before the defaults)",
            name);
    return NULL;
}

void *gt_data_task_config(gt_data_config *cfg, const char *name) {
    return cfg->task_arena.bytes + slice_of(cfg, name)->off;
}

const void *gt_data_task_config_c(const gt_data_config *cfg, const char *name) {
    return cfg->task_arena.bytes + slice_of(cfg, name)->off;
}

void gt_data_config_resolve(gt_data_config *cfg, gt_task task, const gt_data_task_i *t) {
    cfg->task = task;
    if (cfg->window == GT_DATA_WINDOW_TASK_DEFAULT) cfg->window = t->window;
    if (cfg->stride == GT_DATA_STRIDE_TASK_DEFAULT) cfg->stride = t->stride;
}

void gt_data_item_split(int64_t n_rows, int32_t file_index, double split_train, double split_val, int holdout_every,
                        int64_t *b1, int64_t *b2, int *holdout) {
    *holdout = holdout_every > 0 && file_index % holdout_every == holdout_every - 1;
    int64_t a = llround(split_train * (double)n_rows), b = llround((split_train + split_val) * (double)n_rows);
    if (a > n_rows) a = n_rows;
    if (b > n_rows) b = n_rows;
    if (b < a) b = a;
    *b1 = a;
    *b2 = b;
}

void gt_data_item_rows_of(const gt_data_config *cfg, int64_t n_rows, int32_t file_index, gt_data_item_rows *r) {
    memset(r, 0, sizeof *r);
    for (int i = 0; i < GT_DATA_MAX_TASKS && cfg->task_slice[i].owner; i++) { /* a task's settings give them */
        const gt_data_task_i *t = cfg->task_slice[i].owner;
        if (t->item_rows && t->item_rows(cfg, n_rows, file_index, r)) return;
    }
    int64_t b1, b2;
    gt_data_item_split(n_rows, file_index, cfg->split_train, cfg->split_val, cfg->holdout_every, &b1, &b2, &r->holdout);
    if (r->holdout) {
        r->hi[GT_SPLIT_HOLDOUT] = n_rows;
        return;
    }
    r->hi[GT_SPLIT_TRAIN] = b1;
    r->lo[GT_SPLIT_VAL] = b1, r->hi[GT_SPLIT_VAL] = b2;
    r->lo[GT_SPLIT_TEST] = b2, r->hi[GT_SPLIT_TEST] = n_rows;
}

static int zone_is_utc(const char *zone) { return !zone || !*zone || !strcmp(zone, "UTC"); }

int gt_data_timezone_check(const char *zone, char *err, size_t err_bytes) {
    if (zone_is_utc(zone)) return 0;
    /* glibc silently falls back to UTC for a zone it cannot find: look for the file */
    const char *dir = getenv("TZDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", zone);
    struct stat st;
    if (zone[0] == '/' || strstr(zone, "..") || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, err_bytes, "unknown time zone '%s' (no %s; IANA names such as Europe/London, or UTC)", zone,
                 path);
        return -1;
    }
    return 0;
}
