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
    const int nf = ds->t->features_extra + ds->n_cols, nx = ds->n_x;
    const int skip_spikes = ds->cfg.screen == GT_SCREEN_DROP;
    const int skip_events = ds->events && ds->train_skips_events;
    const int cond = ds->rows_filtered;
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
            if (skip_events && ds->events[i]) continue;
            if (cond) { /* rows outside the selected conditions do not count */
                while (cptr < ds->n_cond_ok && ds->cond_ok[cptr + 1] <= i) cptr += 2;
                if (cptr >= ds->n_cond_ok || ds->cond_ok[cptr] > i) continue;
            }
            for (int f = 0; f < nf; f++) {
                float v = f < nx ? ds->x[i * nx + f] : ds->cols[i * ds->n_cols + f - nx];
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
        /* the task's own floor (an appliance almost never on in the train split would get a tiny
         * std and explode every later on-period: its scale is at least its on-power threshold) */
        const double own = ds->t->norm_floor ? ds->t->norm_floor(ds, f) : 0.0;
        if (own > floor_) floor_ = own;
        ds->norm.mean[f] = mean[f];
        ds->norm.std[f] = sd > floor_ ? sd : floor_;
        n_empty += cnt_g[f] == 0;
        ds->norm_count[f] = cnt_g[f];
    }
    if (n_empty) GT_WARN("data: %d feature(s) have no finite train samples (mean 0, std floored)", n_empty);
}
