/* data/config.c: the data settings (defaults, resolution, item filters, the
 * CARE event choice) and their small helpers (see dataset.h). */
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
    cfg->pdm_train_normal_only = 1;
    cfg->seed = 1;
    cfg->fill_max_s = -1; /* auto */
    cfg->pdm_row_missing = 0.5;
    cfg->pdm_short_gap = 6;
    cfg->spike_min_w = 5000;
    snprintf(cfg->spike_channels, sizeof cfg->spike_channels, "auto");
    cfg->pdm_target = 0; /* next (pdm/pdm.h gt_pdm_target) */
    snprintf(cfg->nbm_inputs, sizeof cfg->nbm_inputs, "auto");
    snprintf(cfg->nbm_targets, sizeof cfg->nbm_targets, "auto");
    cfg->power_limit_w = GT_NILM_POWER_LIMIT_W;
    cfg->signal_limit = GT_PDM_SIGNAL_LIMIT;
    cfg->care_event = -1;
    cfg->care.event_id = -1;
}

int64_t gt_data_fill_max_rows(const gt_data_config *cfg, double period_s) {
    if (cfg->fill_max_s == 0) return 0;
    if (cfg->fill_max_s < 0) return GT_DATA_FILL_AUTO_PERIODS;
    if (!(period_s > 0)) return 0;
    double r = floor(cfg->fill_max_s / period_s + 1e-9);
    return r > (double)INT32_MAX ? INT32_MAX : (int64_t)r;
}

int64_t gt_data_fill_holes(float *x, int64_t n, int64_t max_rows) {
    if (max_rows <= 0) return 0;
    int64_t filled = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isfinite(x[i])) continue;
        int64_t j = i;
        while (j < n && !isfinite(x[j])) j++;
        /* hole [i, j): a finite neighbour on both sides and short enough */
        if (i > 0 && j < n && j - i <= max_rows) {
            const double a = x[i - 1], b = x[j], span = (double)(j - i + 1);
            for (int64_t k = i; k < j; k++) x[k] = (float)(a + (b - a) * (double)(k - i + 1) / span);
            filled += j - i;
        }
        i = j;
    }
    return filled;
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
    const gt_data_care_sel *cs = &cfg->care;
    if (cs->event_id >= 0) { /* the authors' protocol: one event dataset's training and prediction parts */
        r->excluded = file_index != cs->turbine;
        if (r->excluded) return;
        int64_t lo = cs->train_lo < 0 ? 0 : cs->train_lo, hi = cs->train_hi > n_rows ? n_rows : cs->train_hi;
        if (hi < lo) hi = lo;
        double f = cfg->split_train / (cfg->split_train + cfg->split_val);
        int64_t b1 = lo + llround(f * (double)(hi - lo));
        if (b1 > hi) b1 = hi;
        r->lo[GT_SPLIT_TRAIN] = lo, r->hi[GT_SPLIT_TRAIN] = b1;
        r->lo[GT_SPLIT_VAL] = b1, r->hi[GT_SPLIT_VAL] = hi;
        r->lo[GT_SPLIT_TEST] = cs->pred_lo < 0 ? 0 : cs->pred_lo;
        r->hi[GT_SPLIT_TEST] = cs->pred_hi > n_rows ? n_rows : cs->pred_hi;
        if (r->hi[GT_SPLIT_TEST] < r->lo[GT_SPLIT_TEST]) r->hi[GT_SPLIT_TEST] = r->lo[GT_SPLIT_TEST];
        return;
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

void gt_data_care_select(gt_data_config *cfg, const char *path, MPI_Comm comm) {
    memset(&cfg->care, 0, sizeof cfg->care);
    cfg->care.event_id = -1;
    if (cfg->care_event < 0) return;
    int64_t n = 0;
    int64_t *ce = gt_care_events_read(path, comm, &n); /* the same table on every rank: the same verdict */
    GT_CHECK(ce != NULL, GT_EXIT_USAGE,
             "%s: data.care_event = %lld: the file has no /care_events (import a CARE to Compare farm with "
             "`gridtrain import care`)", path, (long long)cfg->care_event);
    const int64_t *q = NULL;
    for (int64_t i = 0; i < n && !q; i++)
        if (ce[GT_CARE_EVENT_K * i + 1] == cfg->care_event) q = ce + GT_CARE_EVENT_K * i;
    if (!q) {
        char ids[256] = "";
        size_t l = 0;
        for (int64_t i = 0; i < n && l + 24 < sizeof ids; i++)
            l += (size_t)snprintf(ids + l, sizeof ids - l, "%s%lld", i ? ", " : "",
                                  (long long)ce[GT_CARE_EVENT_K * i + 1]);
        if (l + 24 >= sizeof ids) snprintf(ids + l, sizeof ids - l, ", ...");
        free(ce);
        GT_FAIL(GT_EXIT_USAGE, "%s: data.care_event = %lld: no such event dataset in /care_events (it has %s)", path,
                (long long)cfg->care_event, ids);
    }
    gt_data_care_sel s = {q[1], (int32_t)q[0], q[2] == 1, q[7], q[8], q[3], q[4]};
    free(ce);
    GT_CHECK(s.train_lo >= 0 && s.train_hi > s.train_lo, GT_EXIT_USAGE,
             "%s: data.care_event = %lld: /care_events has no training part for it (a file imported before "
             "train_start_row was stored: import the farm again)", path, (long long)cfg->care_event);
    cfg->care = s;
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
