/* pdm/dataset_pdm.c: the PdM side of a dataset (data/dataset_impl.h
 * gt_data_task_i): turbines, every sensor channel as input (each turbine's
 * own statistics with data.norm = turbine), the targets derived from the
 * window by the task; and the creation of a PdM dataset (spike channels,
 * NBM roles). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/log.h"
#include "data/dataset_impl.h"
#include "pdm/pdm.h"
#include "pdm/pdm_impl.h"

static void pdm_check_cfg(const gt_data_config *cfg) {
    GT_CHECK(cfg->stride > 0, GT_EXIT_USAGE, "data: pdm needs a fixed stride > 0 (per-appliance strides are for nilm)");
}

static void pdm_check_unused(const gt_data_config *cfg) {
    GT_CHECK(gt_pdm_data_cfg(cfg)->care_event < 0, GT_EXIT_USAGE,
             "data: data.care_event selects a CARE to Compare event dataset of a wind-farm (pdm) file");
}

static int64_t pdm_plan_bytes(const gt_data_config *cfg, int64_t rows, int64_t lowres_rows, int cols, int has_faults) {
    (void)cfg, (void)lowres_rows, (void)has_faults;
    return rows * (int64_t)(sizeof(int64_t) + sizeof(float) * cols + 1);
}

static const gt_pdm_part *part_of(const gt_dataset *ds) { return ds->part; }

static int64_t pdm_series_bytes(const gt_dataset *ds) {
    const gt_pdm_part *P = part_of(ds);
    const gt_pdm_shard *s = P->sh;
    int64_t b = pdm_plan_bytes(&ds->cfg, s->n_rows, 0, s->n_channels, 0);
    if (P->item_norm) b += (int64_t)sizeof(gt_norm_stats) * ds->n_items;
    return b;
}

static int pdm_n_in(const gt_data_config *cfg, int n_cols) {
    (void)cfg;
    return n_cols; /* every channel */
}

static int64_t pdm_n_y(const gt_dataset *ds) {
    (void)ds;
    return 0;
}

static const char *pdm_target_name(const gt_dataset *ds, int t) { return part_of(ds)->sh->channels[t].name; }

static double pdm_period_s(const gt_dataset *ds, int li) {
    const gt_pdm_shard *sh = part_of(ds)->sh;
    return sh->rate_hz[li] > 0 ? 1.0 / sh->rate_hz[li] : NAN;
}

static void pdm_free_part(void *part) {
    gt_pdm_part *P = part;
    gt_pdm_shard_free(P->sh);
    free(P->nbm_role), free(P->item_norm), free(P);
}

/* data.farms, data.machine_types */
static int pdm_item_excluded(const gt_dataset *ds, int li) {
    const gt_pdm_shard *sh = part_of(ds)->sh;
    const gt_pdm_data_config *pc = gt_pdm_data_cfg(&ds->cfg);
    return !gt_data_filter_has(&pc->farms, sh->farm[li]) || !gt_data_filter_has(&pc->machine_types, sh->machine_type[li]);
}

/* data.conditions: rows outside the selected conditions are never part of a window;
 * data.train_conditions: rows outside the training conditions never part of a train or val window */
static int pdm_filter_rows(const gt_dataset *ds, int li, uint8_t *flags) {
    const gt_data_config *cfg = &ds->cfg;
    const gt_pdm_data_config *pc = gt_pdm_data_cfg(cfg);
    if (pc->conditions.n == 0 && pc->train_conditions.n == 0) return 0;
    const gt_pdm_shard *sh = part_of(ds)->sh;
    const int64_t n = ds->items[li].n_rows;
    uint8_t *in = GT_MALLOC((size_t)(n > 0 ? n : 1));
    gt_pdm_rows_in(sh, li, &pc->conditions, in);
    for (int64_t i = 0; i < n; i++) flags[i] |= in[i] ? 0 : F_OFFCOND;
    gt_pdm_rows_in(sh, li, &pc->train_conditions, in);
    for (int64_t i = 0; i < n; i++) flags[i] |= in[i] ? 0 : F_OFFTRAIN;
    free(in);
    return 1;
}

/* data.norm = turbine: every local item's statistics (again after the global
 * ones change: they are the fallback). */
static void pdm_norm_changed(gt_dataset *ds) {
    gt_pdm_part *P = ds->part;
    if (!gt_pdm_data_cfg(&ds->cfg)->norm_turbine) return;
    if (!P->item_norm) P->item_norm = GT_CALLOC((size_t)(ds->n_items > 0 ? ds->n_items : 1), sizeof(gt_norm_stats));
    const int C = ds->n_cols;
    for (int li = 0; li < ds->n_items; li++) {
        const ds_item *it = &ds->items[li];
        gt_data_item_rows rows; /* the item's train rows (none when held out) */
        gt_data_item_rows_of(&ds->cfg, it->n_rows, ds->index[li], &rows);
        const int64_t a = rows.lo[GT_SPLIT_TRAIN], b = rows.hi[GT_SPLIT_TRAIN];
        uint8_t *skip = GT_MALLOC((size_t)(it->n_rows > 0 ? it->n_rows : 1));
        gt_pdm_fit_skip(P->sh, li, &ds->cfg, skip);
        gt_pdm_item_norm(ds->x + (it->row0 + a) * C, skip + a, b - a, C, &ds->norm, &P->item_norm[li]);
        free(skip);
    }
}

static const gt_norm_stats *pdm_item_norm_of(const gt_dataset *ds, int li) {
    const gt_pdm_part *P = part_of(ds);
    return P->item_norm ? &P->item_norm[li] : NULL;
}

const uint8_t *gt_dataset_nbm_roles(const gt_dataset *ds, int *n_inputs, int *n_targets) {
    *n_inputs = *n_targets = 0;
    if (ds->t != &gt_data_task_pdm) return NULL; /* no roles: not a PdM dataset */
    const gt_pdm_part *P = part_of(ds);
    *n_inputs = P->nbm_n_in;
    *n_targets = P->nbm_n_tg;
    return P->nbm_role;
}

static void pdm_fill(const gt_dataset *ds, int li, int64_t start, int64_t r0, int64_t i, float *x, float *y,
                     float *mask) {
    (void)start, (void)y, (void)mask;
    const int64_t W = ds->W;
    const gt_norm_stats *ns;
        const int C = ds->n_cols;
        ns = gt_dataset_item_norm(ds, li); /* data.norm = turbine: the item's own statistics */
        float *xi = x + i * W * C; // (T, C)
        for (int64_t t = 0; t < W; t++)
            for (int c = 0; c < C; c++)
                xi[t * C + c] = (float)(((double)ds->x[(r0 + t) * C + c] - ns->mean[c]) / ns->std[c]);
}

const gt_data_task_i gt_data_task_pdm = {
    .name = "pdm",
    .window = 512, /* the field case: window 512, stride 128 */
    .stride = 128,
    .item = "turbine",
    .items = "turbines",
    .gap_hint = "whole records are missing there (rows with more than data.pdm_row_missing of the channels "
                "missing); check the recording's dropouts (gridtrain inspect)",
    .spike_hint = "leave those channels out of the test (data.spike_channels: auto, none, or name patterns), "
                  "raise data.spike_k, or use data.screen = repair (local median) or off",
    .column = "channel",
    .features_extra = 0,
    .config_bytes = sizeof(gt_pdm_data_config),
    .config_defaults = gt_pdm_data_config_defaults,
    .check_cfg = pdm_check_cfg,
    .check_unused = pdm_check_unused,
    .item_rows = gt_pdm_item_rows,
    .series_bytes = pdm_series_bytes,
    .plan_bytes = pdm_plan_bytes,
    .n_in = pdm_n_in,
    .augment = NULL,
    .n_y = pdm_n_y,
    .target_name = pdm_target_name,
    .period_s = pdm_period_s,
    .fill = pdm_fill,
    .log_usage = NULL,
    .log_channels = gt_pdm_log_channels,
    .free_part = pdm_free_part,
    .item_excluded = pdm_item_excluded,
    .filter_rows = pdm_filter_rows,
    .norm_floor = NULL,
    .norm_changed = pdm_norm_changed,
    .item_norm = pdm_item_norm_of,
};

gt_dataset *gt_dataset_pdm(gt_pdm_shard *shard, const gt_data_config *cfg, MPI_Comm comm) {
    gt_ds_check_cfg(cfg, &gt_data_task_pdm);
    const int C = shard->n_channels;
    GT_CHECK(C >= 1 && C <= GT_DATA_MAX_CHANNELS, GT_EXIT_DATA, "data: %d channels (1..%d supported)", C,
             GT_DATA_MAX_CHANNELS);
    gt_dataset *ds = gt_ds_new(&gt_data_task_pdm, cfg, shard->n_turbines, shard->n_turbines_total, C,
                               shard->timestamps, shard->signals, shard->index, shard->id);
    gt_pdm_part *P = GT_CALLOC(1, sizeof *P);
    P->sh = shard;
    ds->part = P;
    ds->n_x = C; /* every channel is an input */
    /* labelled events are never spikes; with data.train_normal_only no train or val window touches one */
    const gt_pdm_data_config *pc = gt_pdm_data_cfg(cfg);
    ds->events = shard->labels;
    ds->train_skips_events = pc->train_normal_only;
    /* a gap row is a missing record: more than data.pdm_row_missing of the channels non-finite (fewer
     * are imputed, gt_pdm_impute); runs of up to data.pdm_short_gap such records are imputed too */
    ds->gap_min = (int)floor(pc->row_missing * C + 1e-9) + 1;
    ds->short_gap = pc->short_gap;
    ds->spike_min_dev = 0.0;
    ds->ch_spike_test = GT_CALLOC((size_t)C, 1);
    ds->ch_spikes = GT_CALLOC((size_t)C, sizeof(int64_t));
    ds->ch_missing = GT_CALLOC((size_t)C, sizeof(int64_t));
    for (int c = 0; c < C; c++)
        ds->ch_spike_test[c] = (uint8_t)gt_pdm_spike_channel(cfg, shard->channels[c].name, shard->channels[c].desc,
                                                             shard->channels[c].unit);
    if (pc->target == GT_PDM_TARGET_NBM) {
        P->nbm_role = GT_CALLOC((size_t)C, 1);
        gt_pdm_nbm_roles(cfg, shard->channels, C, P->nbm_role, &P->nbm_n_in, &P->nbm_n_tg);
    }
    for (int li = 0; li < ds->n_items; li++)
        gt_ds_plan_item(ds, li, shard->row_offset[li], shard->row_offset[li + 1] - shard->row_offset[li], cfg->stride);
    gt_ds_build(ds, comm); /* the per-turbine statistics too (pdm_norm_changed) */
    return ds;
}


void gt_pdm_data_defaults(gt_data_config *cfg) {
    gt_data_task_add(&gt_data_task_pdm);
    gt_data_config_defaults(cfg);
    gt_data_config_resolve(cfg, GT_TASK_UNSET, &gt_data_task_pdm);
}
