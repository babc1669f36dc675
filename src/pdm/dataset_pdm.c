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
    GT_CHECK(cfg->time_features == 0, GT_EXIT_USAGE,
             "data.time_features is for nilm data (wind-farm inputs are the sensor channels)");
    GT_CHECK(cfg->augment == 0, GT_EXIT_USAGE, "data.augment is for nilm data (it superimposes appliance activations)");
}

static int64_t pdm_plan_bytes(const gt_data_config *cfg, int64_t rows, int64_t lowres_rows, int cols, int has_faults) {
    (void)cfg, (void)lowres_rows, (void)has_faults;
    return rows * (int64_t)(sizeof(int64_t) + sizeof(float) * cols + 1);
}

static int64_t pdm_series_bytes(const gt_dataset *ds) {
    const gt_pdm_shard *s = ds->pdm;
    return pdm_plan_bytes(&ds->cfg, s->n_rows, 0, s->n_channels, 0);
}

static int pdm_n_in(const gt_data_config *cfg, int n_cols) {
    (void)cfg;
    return n_cols; /* every channel */
}

static int64_t pdm_n_y(const gt_dataset *ds) {
    (void)ds;
    return 0;
}

static const char *pdm_target_name(const gt_dataset *ds, int t) { return ds->pdm ? ds->pdm->channels[t].name : "?"; }

static double pdm_period_s(const gt_dataset *ds, int li) {
    return ds->pdm && ds->pdm->rate_hz[li] > 0 ? 1.0 / ds->pdm->rate_hz[li] : NAN;
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
    .column = "channel",
    .features_extra = 0,
    .check_cfg = pdm_check_cfg,
    .series_bytes = pdm_series_bytes,
    .plan_bytes = pdm_plan_bytes,
    .n_in = pdm_n_in,
    .augment = NULL,
    .n_y = pdm_n_y,
    .target_name = pdm_target_name,
    .period_s = pdm_period_s,
    .fill = pdm_fill,
    .log_usage = NULL,
};

gt_dataset *gt_dataset_pdm(gt_pdm_shard *shard, const gt_data_config *cfg, MPI_Comm comm) {
    gt_ds_check_cfg(cfg, &gt_data_task_pdm);
    const int C = shard->n_channels;
    GT_CHECK(C >= 1 && C <= GT_DATA_MAX_CHANNELS, GT_EXIT_DATA, "data: %d channels (1..%d supported)", C,
             GT_DATA_MAX_CHANNELS);
    gt_dataset *ds = gt_ds_new(&gt_data_task_pdm, cfg, shard->n_turbines, shard->n_turbines_total, C,
                               shard->timestamps, shard->signals, shard->index, shard->id);
    ds->pdm = shard;
    ds->labels = shard->labels;
    ds->spike_ch = GT_CALLOC((size_t)C, 1);
    ds->spikes_ch = GT_CALLOC((size_t)C, sizeof(int64_t));
    ds->nan_ch = GT_CALLOC((size_t)C, sizeof(int64_t));
    for (int c = 0; c < C; c++)
        ds->spike_ch[c] = (uint8_t)gt_data_spike_channel(cfg, shard->channels[c].name, shard->channels[c].desc,
                                                          shard->channels[c].unit);
    if (cfg->pdm_target == GT_PDM_TARGET_NBM) {
        ds->nbm_role = GT_CALLOC((size_t)C, 1);
        gt_data_nbm_roles(cfg, shard->channels, C, ds->nbm_role, &ds->nbm_n_in, &ds->nbm_n_tg);
    }
    for (int li = 0; li < ds->n_items; li++)
        gt_ds_plan_item(ds, li, shard->row_offset[li], shard->row_offset[li + 1] - shard->row_offset[li], cfg->stride);
    gt_ds_build(ds, comm);
    gt_ds_item_norms(ds);
    return ds;
}


void gt_pdm_data_defaults(gt_data_config *cfg) {
    gt_data_config_defaults(cfg);
    gt_data_config_resolve(cfg, GT_TASK_UNSET, &gt_data_task_pdm);
}
