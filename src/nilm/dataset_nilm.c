/* nilm/dataset_nilm.c: the NILM side of a dataset (data/dataset_impl.h
 * gt_data_task_i): households, the aggregate as input (plus time features),
 * each appliance's power at the window's midpoint as the targets, masked by
 * its stride and data.appliances; and the creation of a NILM dataset. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/log.h"
#include "data/dataset_impl.h"
#include "nilm/nilm.h"
#include "nilm/nilm_impl.h"

static void nilm_check_cfg(const gt_data_config *cfg) {
    const gt_nilm_data_config *nc = gt_nilm_data_cfg(cfg);
    GT_CHECK(nc->time_features == 0 || nc->time_features == 2 || nc->time_features == 4, GT_EXIT_USAGE,
             "data: time_features must be 0, 2 or 4 channels (got %d)", nc->time_features);
    GT_CHECK(nc->augment >= 0 && nc->augment <= 1, GT_EXIT_USAGE, "data.augment must be in [0, 1] (got %g)",
             nc->augment);
    char err[600];
    GT_CHECK(gt_data_timezone_check(nc->timezone, err, sizeof err) == 0, GT_EXIT_USAGE, "data.timezone: %s", err);
}

static void nilm_check_unused(const gt_data_config *cfg) {
    const gt_nilm_data_config *nc = gt_nilm_data_cfg(cfg);
    GT_CHECK(nc->time_features == 0, GT_EXIT_USAGE,
             "data.time_features is for nilm data (wind-farm inputs are the sensor channels)");
    GT_CHECK(nc->augment == 0, GT_EXIT_USAGE, "data.augment is for nilm data (it superimposes appliance activations)");
}

static int64_t nilm_plan_bytes(const gt_data_config *cfg, int64_t rows, int64_t lowres_rows, int cols,
                               int has_faults) {
    const int F = gt_nilm_data_cfg(cfg)->time_features;
    int64_t b = rows * (int64_t)(sizeof(int64_t) + sizeof(float) * (1 + cols + F));
    if (has_faults) b += rows;
    return b + lowres_rows * (int64_t)(sizeof(int64_t) + sizeof(float) * (1 + cols));
}

static const gt_nilm_part *part_of(const gt_dataset *ds) { return ds->part; }

static int64_t nilm_series_bytes(const gt_dataset *ds) {
    const gt_nilm_shard *s = part_of(ds)->sh;
    int64_t b = nilm_plan_bytes(&ds->cfg, s->n_rows, s->n_lowres_rows, s->n_appliances, s->fault_flags != NULL);
    return b + (int64_t)sizeof(int64_t) * ds->n_items * ds->n_cols; /* the strides */
}

int gt_nilm_n_in(const gt_data_config *cfg, int n_cols) {
    (void)n_cols;
    return 1 + gt_nilm_data_cfg(cfg)->time_features; /* the aggregate and the time features */
}

static int64_t nilm_n_y(const gt_dataset *ds) { return ds->n_cols; }

static const char *nilm_target_name(const gt_dataset *ds, int t) { return part_of(ds)->sh->meta[t].name; }

static double nilm_period_s(const gt_dataset *ds, int li) { return part_of(ds)->sh->period_s[li]; }

static void nilm_free_part(void *part) {
    gt_nilm_part *P = part;
    gt_nilm_shard_free(P->sh);
    free(P->tfeat), free(P->strides), free(P->acts), free(P->act_off), free(P);
}

/* an appliance (almost) never on in the train split would get a tiny std and explode every
 * later on-period: its scale is at least its on-power threshold */
static double nilm_norm_floor(const gt_dataset *ds, int f) {
    return f >= 1 ? part_of(ds)->sh->meta[f - 1].on_power_w : 0.0;
}

static void nilm_fill(const gt_dataset *ds, int li, int64_t start, int64_t r0, int64_t i, float *x, float *y,
                      float *mask) {
    const int64_t W = ds->W;
    const gt_norm_stats *ns = &ds->norm;
    const gt_nilm_part *P = part_of(ds);
        const int A = ds->n_cols;
        const double m0 = ns->mean[0], inv0 = 1.0 / ns->std[0];
        const int F = gt_nilm_data_cfg(&ds->cfg)->time_features, Cin = 1 + F;
        const int last = ds->cfg.x_channels_last;
        float *xi = x + i * W * Cin; // (Cin, W) or (W, Cin)
        for (int64_t t = 0; t < W; t++) {
            xi[gt_nilm_x_offset(last, W, Cin, t, 0)] = (float)(((double)ds->x[r0 + t] - m0) * inv0);
            for (int f = 0; f < F; f++) xi[gt_nilm_x_offset(last, W, Cin, t, 1 + f)] = P->tfeat[(r0 + t) * F + f];
        }
        const int64_t mid = r0 + W / 2;
        const int64_t *st = P->strides + (int64_t)li * A;
        for (int a = 0; a < A; a++) {
            float v = ds->cols[mid * A + a];
            int ok = isfinite(v) && start % st[a] == 0 && (P->app_mask >> a & 1u);
            y[i * A + a] = ok ? (float)(((double)v - ns->mean[1 + a]) / ns->std[1 + a]) : 0.0f;
            mask[i * A + a] = ok ? 1.0f : 0.0f;
        }
}

static void nilm_log_usage(const gt_dataset *ds, const gt_item_usage *u, int n) {
    int64_t filled = 0, rows = 0;
    for (int i = 0; i < n; i++) filled += u[i].filled, rows += u[i].rows;
    char lim[64];
    const double fill_max_s = gt_nilm_data_cfg(&ds->cfg)->fill_max_s;
    if (fill_max_s < 0) snprintf(lim, sizeof lim, "%d sampling periods", GT_NILM_FILL_AUTO_PERIODS);
    else snprintf(lim, sizeof lim, "%g s", fill_max_s);
    GT_INFO("data: %lld of %lld aggregate samples filled by interpolation (holes up to %s, data.fill_max_s)",
            (long long)filled, (long long)rows, lim);
}

const gt_data_task_i gt_data_task_nilm = {
    .name = "nilm",
    .window = 599, /* seq2point (Zhang et al. 2018) */
    .stride = 0,   /* per-appliance strides (data.stride_frac) */
    .item = "household",
    .items = "households",
    .gap_hint = "holes up to data.fill_max_s seconds are filled: raise it if the gaps are short, or check the "
                "recording's clock and dropouts (gridtrain inspect)",
    .spike_hint = "raise data.spike_k, or use data.screen = repair (replace spikes by the local median) or off",
    .column = "appliance",
    .features_extra = 1,
    .config_bytes = sizeof(gt_nilm_data_config),
    .config_defaults = gt_nilm_data_config_defaults,
    .check_cfg = nilm_check_cfg,
    .check_unused = nilm_check_unused,
    .item_rows = NULL,
    .series_bytes = nilm_series_bytes,
    .plan_bytes = nilm_plan_bytes,
    .n_in = gt_nilm_n_in,
    .augment = gt_nilm_augment,
    .n_y = nilm_n_y,
    .target_name = nilm_target_name,
    .period_s = nilm_period_s,
    .fill = nilm_fill,
    .log_usage = nilm_log_usage,
    .log_channels = NULL,
    .free_part = nilm_free_part,
    .item_excluded = NULL,
    .filter_rows = NULL,
    .norm_floor = nilm_norm_floor,
    .norm_changed = NULL,
    .item_norm = NULL,
};

/* the activations nilm_augment.c found (0 for another task's dataset) */
int64_t gt_dataset_n_activations(const gt_dataset *ds) {
    if (ds->t != &gt_data_task_nilm) return 0;
    const gt_nilm_part *P = ds->part;
    return P->act_off ? P->act_off[(size_t)ds->n_items * ds->n_cols] : 0;
}

float gt_dataset_on_threshold(const gt_dataset *ds, int a) {
    GT_ASSERT(ds->t == &gt_data_task_nilm && a >= 0 && a < ds->n_cols);
    return (float)(((double)part_of(ds)->sh->meta[a].on_power_w - ds->norm.mean[1 + a]) / ds->norm.std[1 + a]);
}

gt_dataset *gt_dataset_nilm(gt_nilm_shard *shard, const gt_data_config *cfg, MPI_Comm comm) {
    gt_ds_check_cfg(cfg, &gt_data_task_nilm);
    const int A = shard->n_appliances;
    GT_CHECK(A >= 1 && A <= GT_DATA_MAX_TARGETS, GT_EXIT_DATA, "data: %d appliances (1..%d supported)", A,
             GT_DATA_MAX_TARGETS);
    gt_dataset *ds = gt_ds_new(&gt_data_task_nilm, cfg, shard->n_households, shard->n_households_total, A,
                               shard->timestamps, shard->aggregate, shard->index, shard->id);
    gt_nilm_part *P = GT_CALLOC(1, sizeof *P);
    P->sh = shard;
    ds->part = P;
    ds->cols = shard->appliances; /* the input is the aggregate (n_x 1), the targets the appliances */
    ds->gap_min = 1;              /* a missing aggregate sample is a gap */
    ds->short_gap = 0;
    /* a deviation under data.spike_min_w is a load (a microwave's defrost pulses, a drum's spin),
     * not a meter glitch */
    const gt_nilm_data_config *nc = gt_nilm_data_cfg(cfg);
    ds->spike_min_dev = nc->spike_min_w;
    const int64_t n_rows = shard->row_offset[shard->n_households];
    const int F = nc->time_features;
    if (F > 0) {
        P->tfeat = GT_MALLOC(sizeof(float) * (size_t)(n_rows > 0 ? n_rows : 1) * (size_t)F);
        gt_nilm_time_features(ds->ts, n_rows, F, nc->timezone, P->tfeat);
    }
    P->strides = GT_MALLOC(sizeof(int64_t) * (size_t)(ds->n_items > 0 ? ds->n_items : 1) * (size_t)A);
    P->app_mask = gt_nilm_appliance_mask(nc->appliances, shard->meta, shard->n_appliances);
    for (int li = 0; li < ds->n_items; li++) {
        int64_t *st = P->strides + (int64_t)li * A, base;
        if (cfg->stride > 0) {
            base = cfg->stride;
            for (int a = 0; a < A; a++) st[a] = base;
        } else {
            /* per-appliance strides from the typical on-duration (the field
             * reports' adaptive overlap instead of a fixed 90% overlap); each
             * rounded to a multiple of the smallest selected one, so the window
             * set (the union over appliances) is exactly the grid of the
             * smallest. The multi-output models compute every appliance in
             * every window, so by default every window also trains every
             * appliance (stride_mask = 0): masking a long appliance's target
             * to its own stride saves no compute and leaves it few targets
             * (a washing machine 1 window in 35 at the defaults). */
            base = INT64_MAX;
            for (int a = 0; a < A; a++) {
                int64_t sa = llround(cfg->stride_frac * shard->meta[a].on_duration_s / shard->period_s[li]);
                st[a] = sa < 1 ? 1 : sa;
                if (st[a] < base && (P->app_mask >> a & 1u)) base = st[a];
            }
            if (base == INT64_MAX) base = 1; /* no appliance selected: refused by gt_nilm_appliance_mask */
            for (int a = 0; a < A; a++) {
                int64_t m = llround((double)st[a] / (double)base);
                st[a] = nc->stride_mask ? (m < 1 ? 1 : m) * base : base;
            }
        }
        gt_ds_plan_item(ds, li, shard->row_offset[li], shard->row_offset[li + 1] - shard->row_offset[li], base);
        /* short holes of the aggregate (timestamp jitter) filled for the model input: before
         * screening, so only real gaps screen windows; the targets keep their NaN (masked) */
        ds->items[li].filled = gt_nilm_fill_holes(ds->x + ds->items[li].row0, ds->items[li].n_rows,
                                                  gt_nilm_fill_max_rows(cfg, shard->period_s[li]));
    }
    gt_ds_build(ds, comm);
    if (nc->augment > 0) gt_ds_find_activations(ds);
    return ds;
}


void gt_nilm_data_defaults(gt_data_config *cfg) {
    gt_data_task_add(&gt_data_task_nilm);
    gt_data_config_defaults(cfg);
    gt_data_config_resolve(cfg, GT_TASK_UNSET, &gt_data_task_nilm);
}

void gt_nilm_check_filters(const char *file, const gt_nilm_shard *sh, const gt_data_config *cfg, MPI_Comm comm) {
    gt_data_filter_check c = {"data.items", "household with id", &cfg->items, sh->id, sh->n_households, NULL, 0, 0};
    gt_data_filter_check_run(file, &c, comm);
}
