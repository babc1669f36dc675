/* pdm/pdm_calib.c: which rows calibrate the PdM anomaly score, and the
 * alarm threshold calibrated on them (see pdm_impl.h, docs/evaluation.md).
 *
 * Threshold = pdm_margin x a level of the calibration scores of normal rows
 * (label 0) of the training turbines, then raised until those rows raise at
 * most pdm_val_false_alarms alarms per turbine-day. The level (eval.level):
 *   quantile (default): the pdm_quantile quantile of those scores (type 7);
 *   robust: median + 3 x 1.4826 MAD of those scores. The score is smoothed
 *     over an EWMA span (36 rows of 10-minute SCADA): a few days of
 *     validation rows hold a few dozen independent values, and their 0.999
 *     quantile is their largest, one excursion of normal operation; median
 *     and MAD do not follow that tail, and the alarm budget above still
 *     holds the validation rows' false alarms (docs/evaluation.md: where
 *     it helps and where it flags more normal datasets).
 * Both run on the score the alarms use (smoothed, every term included). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "dist/reduce.h"
#include "eval/eval_impl.h"
#include "pdm/pdm_impl.h"

/* Validation rows used for calibration: label 0 and no label in the
 * previous `guard` rows (the model still has the event in its context and the
 * EWMA still carries it: those rows belong to the event, not to normal
 * operation). excl[r] = 1 marks the others. */
uint8_t *gt_pdm_exclusion_mask(const gt_pdm_shard *sh, int64_t guard, const gt_data_filter *conds,
                               const gt_data_filter *train_conds) {
    uint8_t *ex = GT_MALLOC((size_t)(sh->n_rows > 0 ? sh->n_rows : 1));
    for (int k = 0; k < sh->n_turbines; k++) {
        int64_t last = -1 - guard;
        for (int64_t r = sh->row_offset[k]; r < sh->row_offset[k + 1]; r++) {
            if (sh->labels[r]) last = r;
            ex[r] = r - last <= guard;
        }
    }
    if (conds && conds->n > 0) { /* data.conditions: only rows in the selected conditions calibrate */
        uint8_t *in = GT_CALLOC((size_t)(sh->n_rows > 0 ? sh->n_rows : 1), 1);
        for (int i = 0; i < sh->n_segments; i++) {
            if (!gt_data_filter_has(conds, sh->segments[i].code)) continue;
            int k = sh->segment_turbine[i];
            int64_t a = sh->segments[i].start_row, z = sh->segments[i].end_row, n = sh->row_offset[k + 1] - sh->row_offset[k];
            for (int64_t r = a < 0 ? 0 : a; r < z && r < n; r++) in[sh->row_offset[k] + r] = 1;
        }
        for (int64_t r = 0; r < sh->n_rows; r++) ex[r] |= !in[r];
        free(in);
    }
    if (train_conds && train_conds->n > 0) /* data.train_conditions: calibrate on training-flagged rows only */
        for (int k = 0; k < sh->n_turbines; k++) {
            const int64_t r0 = sh->row_offset[k], n = sh->row_offset[k + 1] - r0;
            uint8_t *in = GT_MALLOC((size_t)(n > 0 ? n : 1));
            gt_pdm_rows_in(sh, k, train_conds, in);
            for (int64_t r = 0; r < n; r++) ex[r0 + r] |= !in[r];
            free(in);
        }
    return ex;
}

/* Collective: the scores of the calibration rows (not excl) of the training
 * turbines, thinned evenly to at most max_val values, gathered from every
 * rank in rank order (malloc'd, *n of them). */
static double *val_scores(const gt_pdm_shard *sh, const gt_pdm_tinfo *ti, const uint8_t *excl, const float *score,
                          int64_t max_val, int64_t *n_all, MPI_Comm comm) {
    int64_t cnt = 0;
    for (int k = 0; k < sh->n_turbines; k++)
        if (!ti[k].holdout) cnt += ti[k].b2 - ti[k].c1;
    cnt = gt_dist_sum_i64(cnt, comm);
    int64_t step = max_val > 0 && cnt > max_val ? (cnt + max_val - 1) / max_val : 1;
    int64_t cap = 0;
    for (int k = 0; k < sh->n_turbines; k++)
        if (!ti[k].holdout) cap += (ti[k].b2 - ti[k].c1) / step + 1;
    float *mine = GT_MALLOC(sizeof(float) * (size_t)(cap + 1));
    int n = 0;
    for (int k = 0; k < sh->n_turbines; k++) {
        if (ti[k].holdout) continue;
        for (int64_t r = ti[k].c1; r < ti[k].b2; r += step) {
            float v = score[ti[k].r0 + r];
            if (!excl[ti[k].r0 + r] && isfinite(v)) mine[n++] = v;
        }
    }
    int64_t tot = 0;
    float *all = gt_dist_allgatherv(mine, n, MPI_FLOAT, &tot,
                                    "eval: too many validation scores to gather (more than 2^31 over the ranks)", comm);
    double *v = GT_MALLOC(sizeof(double) * (size_t)(tot + 1));
    for (int64_t i = 0; i < tot; i++) v[i] = all[i];
    free(mine), free(all);
    *n_all = tot;
    return v;
}

double gt_pdm_val_quantile(const gt_pdm_shard *sh, const gt_pdm_tinfo *ti, const uint8_t *excl, const float *score,
                           double q, int64_t max_val, int64_t *n_used, MPI_Comm comm) {
    double *v = val_scores(sh, ti, excl, score, max_val, n_used, comm);
    double qv = gt_quantile(v, *n_used, q);
    free(v);
    return qv;
}

/* Collective: alarm runs on the validation rows (normal operation: every one
 * is a false alarm) of the training turbines at threshold thr, and their
 * turbine-days. Rows with a label never alarm. Integer counts: the same for
 * any number of ranks. */
static int64_t val_alarms(const gt_pdm_shard *sh, const gt_pdm_tinfo *ti, float *const *vseg, const gt_eval_config *ec,
                          double thr, gt_alarm_run *buf, MPI_Comm comm) {
    const gt_pdm_eval_config *pcfg = gt_pdm_eval_cfg(ec);
    int64_t cnt = 0;
    for (int k = 0; k < sh->n_turbines; k++) {
        if (ti[k].holdout || !vseg[k]) continue;
        double rate = ti[k].rate;
        cnt += gt_alarm_runs(vseg[k], ti[k].b2 - ti[k].c1, thr, (int64_t)llround(pcfg->min_duration_s * rate),
                             (int64_t)llround(pcfg->merge_gap_s * rate), buf);
    }
    return gt_dist_sum_i64(cnt, comm);
}

/* Collective: the smallest threshold >= thr0 at which the validation rows
 * raise at most pdm_val_false_alarms alarms per turbine-day (bisection on
 * [thr0, max validation score]). */
static double raise_for_val_alarms(const gt_pdm_shard *sh, const gt_pdm_tinfo *ti, const uint8_t *excl, const float *score,
                                   const gt_eval_config *ec, double thr0, MPI_Comm comm) {
    const int nt = sh->n_turbines;
    float **vseg = GT_CALLOC((size_t)(nt > 0 ? nt : 1), sizeof(float *));
    double *days = GT_CALLOC((size_t)(nt > 0 ? nt : 1), sizeof(double));
    int64_t longest = 1;
    float vmax = -INFINITY;
    for (int k = 0; k < nt; k++) {
        int64_t n = ti[k].b2 - ti[k].c1;
        if (ti[k].holdout || n <= 0) continue;
        vseg[k] = GT_MALLOC(sizeof(float) * (size_t)n);
        for (int64_t r = 0; r < n; r++) {
            int64_t row = ti[k].r0 + ti[k].c1 + r;
            float v = excl[row] ? NAN : score[row];
            vseg[k][r] = v;
            if (isfinite(v) && v > vmax) vmax = v;
        }
        days[k] = (double)n / (86400.0 * ti[k].rate);
        if (n > longest) longest = n;
    }
    double *all = GT_MALLOC(sizeof(double) * (size_t)sh->n_turbines_total + 8);
    gt_eval_gather_items(nt, sh->index, days, 1, sh->n_turbines_total, all, comm);
    double tdays = 0;
    for (int f = 0; f < sh->n_turbines_total; f++) tdays += all[f];
    vmax = gt_dist_max_f(vmax, comm);
    gt_alarm_run *buf = GT_MALLOC(sizeof(gt_alarm_run) * (size_t)(longest / 2 + 1));
    const double budget = gt_pdm_eval_cfg(ec)->val_false_alarms * tdays;
    double lo = thr0, hi = vmax;
    double thr = thr0;
    if (tdays > 0 && isfinite(hi) && hi > lo && (double)val_alarms(sh, ti, vseg, ec, lo, buf, comm) > budget) {
        for (int it = 0; it < 60 && hi - lo > 1e-9 * hi; it++) {
            double mid = 0.5 * (lo + hi);
            if ((double)val_alarms(sh, ti, vseg, ec, mid, buf, comm) > budget) lo = mid;
            else hi = mid;
        }
        thr = hi;
    }
    for (int k = 0; k < nt; k++) free(vseg[k]);
    free(vseg), free(days), free(all), free(buf);
    return thr;
}

/* eval.level = robust: median + GT_PDM_ROBUST_K x 1.4826 MAD of the calibration scores (v, n; reordered).
 * NaN when that is no positive number (a constant score: MAD 0 at median 0). */
static double robust_level(double *v, int64_t n) {
    if (n <= 0) return NAN;
    const double med = gt_quantile(v, n, 0.5);
    for (int64_t i = 0; i < n; i++) v[i] = fabs(v[i] - med);
    const double mad = gt_quantile(v, n, 0.5), lv = med + GT_PDM_ROBUST_K * 1.4826 * mad;
    return isfinite(lv) && lv > 0 ? lv : NAN;
}

int gt_pdm_threshold(const gt_pdm_shard *sh, const gt_pdm_tinfo *ti, const uint8_t *excl, const float *score,
                     const gt_eval_config *ec, MPI_Comm comm, double *thr, double *qv, int64_t *n_val) {
    const gt_pdm_eval_config *pcfg = gt_pdm_eval_cfg(ec);
    double *v = val_scores(sh, ti, excl, score, pcfg->max_val, n_val, comm);
    int level = pcfg->level;
    double q = level == GT_PDM_LEVEL_ROBUST ? robust_level(v, *n_val) : NAN;
    if (!isfinite(q)) { /* eval.level = quantile, or no robust level (the same on every rank: v is) */
        q = gt_quantile(v, *n_val, pcfg->quantile);
        level = GT_PDM_LEVEL_QUANTILE;
    }
    free(v);
    GT_CHECK(isfinite(q), GT_EXIT_DATA, "eval: no finite validation scores to calibrate the threshold");
    *qv = q;
    *thr = pcfg->margin * q;
    GT_CHECK(isfinite(*thr), GT_EXIT_USAGE, "eval.margin = %g times the validation %s %g is no finite threshold",
             pcfg->margin, level == GT_PDM_LEVEL_ROBUST ? "robust level" : "quantile",
             q); /* every rank: q is the same on all */
    if (pcfg->val_false_alarms > 0) *thr = raise_for_val_alarms(sh, ti, excl, score, ec, *thr, comm);
    return level;
}
