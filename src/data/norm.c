/* data/norm.c: the normalisation statistics of the train rows (see
 * dataset.h).
 *
 * Normalisation: two passes over the train rows (sum -> mean, then the sum of
 * squared deviations), each summed over the ranks (dist/reduce.h), so the
 * statistics do not suffer the cancellation of sum-of-squares formulas on
 * channels with a large mean and a small spread (temperatures, rpm) and agree
 * across rank counts to rounding. */
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

/* Is local row `row` a detected, unrepaired spike? (ptr: a cursor into the
 * sorted spike_rows, rows visited in increasing order) */
static int is_spike_row(const gt_dataset *ds, int64_t row, int64_t *ptr) {
    while (*ptr < ds->n_spike_rows && ds->spike_rows[*ptr] < row) (*ptr)++;
    return *ptr < ds->n_spike_rows && ds->spike_rows[*ptr] == row;
}

/* pass 0: count and sum; pass 1: sum of squared deviations from mean. */
static void moments_pass(const gt_dataset *ds, int pass, const double *mean, int64_t *cnt, double *acc) {
    const int pdm = ds->pdm != NULL;
    const int nf = ds->t->features_extra + ds->n_cols;
    const int skip_spikes = ds->cfg.screen == GT_SCREEN_DROP;
    const int skip_events = pdm && ds->cfg.pdm_train_normal_only;
    const int cond = pdm && (ds->cfg.conditions.n > 0 || ds->cfg.train_conditions.n > 0);
    for (int f = 0; f < nf; f++) cnt[f] = 0, acc[f] = 0;
    int64_t sptr = 0, cptr = 0;
    for (int li = 0; li < ds->n_items; li++) {
        const ds_item *it = &ds->items[li];
        const ds_split *sp = &it->sp[GT_SPLIT_TRAIN];
        if (sp->n_kept == 0) continue;
        /* rows covered by the item's kept train windows: first to last kept */
        int64_t a = sp->first + gt_ds_kept_to_grid(ds, sp, 0) * it->base;
        int64_t b = sp->first + gt_ds_kept_to_grid(ds, sp, sp->n_kept - 1) * it->base + ds->W;
        for (int64_t i = it->row0 + a; i < it->row0 + b; i++) {
            if (skip_spikes && is_spike_row(ds, i, &sptr)) continue;
            if (skip_events && ds->labels[i]) continue;
            if (cond) { /* rows outside the selected conditions do not count */
                while (cptr < ds->n_cond_ok && ds->cond_ok[cptr + 1] <= i) cptr += 2;
                if (cptr >= ds->n_cond_ok || ds->cond_ok[cptr] > i) continue;
            }
            for (int f = 0; f < nf; f++) {
                float v = pdm ? ds->x[i * nf + f] : f == 0 ? ds->x[i] : ds->app[i * ds->n_cols + f - 1];
                if (!isfinite(v)) continue;
                cnt[f]++;
                acc[f] += pass == 0 ? (double)v : ((double)v - mean[f]) * ((double)v - mean[f]);
            }
        }
    }
}

void gt_ds_compute_norm(gt_dataset *ds, MPI_Comm comm) {
    const int nf = ds->t->features_extra + ds->n_cols;
    int64_t cnt_g[1 + GT_DATA_MAX_CHANNELS], cnt1[1 + GT_DATA_MAX_CHANNELS];
    double sum_g[1 + GT_DATA_MAX_CHANNELS];
    double mean[1 + GT_DATA_MAX_CHANNELS] = {0}, m2_g[1 + GT_DATA_MAX_CHANNELS];
    /* pass 0: counts and sums, pass 1: squared deviations from the global
     * mean (its counts, cnt1, repeat pass 0's); each summed over the ranks */
    moments_pass(ds, 0, NULL, cnt_g, sum_g);
    gt_dist_allreduce_sum_i64(cnt_g, nf, comm);
    gt_dist_allreduce_sum_d(sum_g, nf, comm);
    for (int f = 0; f < nf; f++) mean[f] = cnt_g[f] ? sum_g[f] / (double)cnt_g[f] : 0.0;
    moments_pass(ds, 1, mean, cnt1, m2_g);
    gt_dist_allreduce_sum_d(m2_g, nf, comm);
    memset(&ds->norm, 0, sizeof ds->norm);
    ds->norm.n = nf;
    int n_empty = 0;
    for (int f = 0; f < nf; f++) {
        double sd = cnt_g[f] ? sqrt(m2_g[f] / (double)cnt_g[f]) : 0.0;
        double floor_ = 1e-3 * fabs(mean[f]) + 1e-6; /* constant channels do not explode */
        /* an appliance (almost) never on in the train split would get a tiny std and
         * explode every later on-period: its scale is at least its on-power threshold */
        if (f >= 1 && ds->nilm && ds->nilm->meta[f - 1].on_power_w > floor_)
            floor_ = ds->nilm->meta[f - 1].on_power_w;
        ds->norm.mean[f] = mean[f];
        ds->norm.std[f] = sd > floor_ ? sd : floor_;
        n_empty += cnt_g[f] == 0;
        ds->norm_count[f] = cnt_g[f];
    }
    if (n_empty) GT_WARN("data: %d feature(s) have no finite train samples (mean 0, std floored)", n_empty);
}

void gt_data_pdm_fit_skip(const gt_pdm_shard *sh, int k, const gt_data_config *cfg, uint8_t *skip) {
    const int64_t r0 = sh->row_offset[k], n = sh->row_offset[k + 1] - r0;
    uint8_t *in = GT_MALLOC((size_t)(n > 0 ? n : 1));
    for (int64_t r = 0; r < n; r++) skip[r] = cfg->pdm_train_normal_only && sh->labels[r0 + r];
    const gt_data_filter *f[2] = {&cfg->conditions, &cfg->train_conditions};
    for (int j = 0; j < 2; j++) {
        if (f[j]->n == 0) continue;
        gt_data_pdm_rows_in(sh, k, f[j], in);
        for (int64_t r = 0; r < n; r++) skip[r] |= !in[r];
    }
    free(in);
}

void gt_data_item_norm(const float *sig, const uint8_t *skip, int64_t b1, int C, const gt_norm_stats *glob,
                       gt_norm_stats *out) {
    out->n = C;
    for (int c = 0; c < C; c++) {
        int64_t cnt = 0;
        double sum = 0, m2 = 0;
        for (int64_t i = 0; i < b1; i++) { /* pass 0: the mean */
            float v = sig[i * C + c];
            if (skip[i] || !isfinite(v)) continue;
            cnt++;
            sum += v;
        }
        if (cnt < GT_DATA_ITEM_NORM_MIN) { /* no rows of its own: the statistics of all turbines */
            out->mean[c] = glob->mean[c];
            out->std[c] = glob->std[c];
            continue;
        }
        const double mean = sum / (double)cnt;
        for (int64_t i = 0; i < b1; i++) { /* pass 1: squared deviations (no cancellation) */
            float v = sig[i * C + c];
            if (skip[i] || !isfinite(v)) continue;
            m2 += ((double)v - mean) * ((double)v - mean);
        }
        const double sd = sqrt(m2 / (double)cnt), floor_ = 1e-3 * fabs(mean) + 1e-6;
        out->mean[c] = mean;
        out->std[c] = sd > floor_ ? sd : floor_;
    }
}

/* data.norm = turbine: every local item's statistics (again after the global
 * ones change: they are the fallback). */
void gt_ds_item_norms(gt_dataset *ds) {
    if (!ds->pdm || !ds->cfg.pdm_norm_turbine) return;
    if (!ds->item_norm) ds->item_norm = GT_CALLOC((size_t)(ds->n_items > 0 ? ds->n_items : 1), sizeof(gt_norm_stats));
    const int C = ds->n_cols;
    for (int li = 0; li < ds->n_items; li++) {
        const ds_item *it = &ds->items[li];
        gt_data_item_rows rows; /* the item's train rows (none when held out) */
        gt_data_item_rows_of(&ds->cfg, it->n_rows, ds->index[li], &rows);
        const int64_t a = rows.lo[GT_SPLIT_TRAIN], b = rows.hi[GT_SPLIT_TRAIN];
        uint8_t *skip = GT_MALLOC((size_t)(it->n_rows > 0 ? it->n_rows : 1));
        gt_data_pdm_fit_skip(ds->pdm, li, &ds->cfg, skip);
        gt_data_item_norm(ds->x + (it->row0 + a) * C, skip + a, b - a, C, &ds->norm, &ds->item_norm[li]);
        free(skip);
    }
}

