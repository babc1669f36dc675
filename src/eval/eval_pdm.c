/* eval/eval_pdm.c: anomaly scores, threshold calibration, alarms and event
 * metrics for the LSTM next-step predictor and the normal-behaviour model
 * (see eval.h, docs/evaluation.md).
 *
 * Per-step score of one model on one turbine:
 *   windows of T rows start every `hop` rows (default T/2; a last window ends
 *   at the turbine's last row); row r's error comes from the EARLIEST window
 *   predicting it, so every row after the first window is predicted with at
 *   least T - hop rows of context;
 *   e_c(r) = (pred_c(r) - x_c(r))^2 on the normalised channels (a normal-
 *   behaviour model, data.pdm_target = nbm: its target channels only, the
 *   prediction of row r made at row r from the operating channels), divided by
 *   v_c, the mean of e_c over the validation rows of normal operation (each
 *   channel counts by how surprising it is, not by how noisy it is);
 *   raw(r) = mean over the finite channels; score = EWMA(raw), span pdm_ewma_s.
 * Several models (multi-scale: e.g. windows 64 / 256 / 1024): each score is
 * divided by its own validation quantile and the maximum is taken.
 * Threshold = pdm_margin x the pdm_quantile quantile of the validation scores
 * of normal rows (label 0) of the training turbines. Rows before the first
 * prediction, in turbines shorter than T, or whose window holds a NaN have no
 * score (NaN) and never alarm. */
#define _GNU_SOURCE
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "core/escape.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "data/dataset.h"
#include "dist/reduce.h"
#include "eval/eval.h"
#include "eval/eval_impl.h"
#include "io/read.h"
#include "task/task.h"

void gt_pdm_eval_free(gt_pdm_eval *e) {
    if (!e) return;
    free(e->turbines);
    e->turbines = NULL;
    free(e->care_events);
    e->care_events = NULL;
}

/* Validation rows used for calibration: label 0 and no label in the
 * previous `guard` rows (the model still has the event in its context and the
 * EWMA still carries it: those rows belong to the event, not to normal
 * operation). excl[r] = 1 marks the others. */
static uint8_t *exclusion_mask(const gt_pdm_shard *sh, int64_t guard, const gt_data_filter *conds,
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
            gt_data_pdm_rows_in(sh, k, train_conds, in);
            for (int64_t r = 0; r < n; r++) ex[r0 + r] |= !in[r];
            free(in);
        }
    return ex;
}

typedef struct tinfo {  /* one local turbine */
    int64_t r0, n;      /* local rows */
    int64_t a0, b1, b2; /* splits (gt_data_item_rows_of): train [a0,b1), val [b1,b2); a0 = 0 but with data.care_event */
    int64_t e0, e1;     /* evaluation rows: the test split (or all rows of a held-out turbine) */
    int64_t c1;         /* calibration rows [c1, b2): b1 (validation) or a0 (train + validation) */
    int holdout;
    int holdout_split;  /* held out by data.holdout_every (holdout is also set for skipped turbines) */
    int skip;           /* outside data.items / farms / machine_types: neither calibrates nor is evaluated */
    double rate;
} tinfo;

typedef void (*err_visit)(void *ctx, int64_t row, const float *e2);

/* Residuals d[C] = prediction - value of rows [lo, hi) of one turbine (sig
 * (n, C)), row r from the earliest window predicting it; calls fn(ctx, r, d).
 * role NULL
 * (data.pdm_target = next): the next-step errors of every channel, row s + t
 * predicted at step t - 1 of the window starting at s. role (nbm): the
 * model sees the window with every channel but the inputs set to 0 (as in
 * training, gt_data_nbm_input) and row s + t is predicted at step t; d is
 * the residual of the target channels, NaN for the others (which therefore
 * neither calibrate nor score). Missing samples (non-finite) enter the model
 * as 0, the channel's training mean (gt_data_pdm_impute, as in training),
 * and have no residual (NaN). */
static void window_errors(gt_engine *e, const gt_norm_stats *ns, const uint8_t *role, const float *sig, int64_t n,
                          int C, int64_t hop, int64_t lo, int64_t hi, err_visit fn, void *ctx) {
    gt_model *m = gt_engine_model(e); /* x and pred: the host side of the engine's forward */
    const int T = m->cfg.window, B = m->cfg.max_batch;
    if (n < T || hi <= lo) return;
    int64_t K = (n - T) / hop + 1;
    int extra = (K - 1) * hop + T < n;
    int64_t n_win = K + extra;
    int64_t *wb_start = GT_MALLOC(sizeof(int64_t) * (size_t)B), *wb_a = GT_MALLOC(sizeof(int64_t) * (size_t)B);
    float *e2 = GT_MALLOC(sizeof(float) * (size_t)C);
    int nb = 0;
    for (int64_t k = 0; k <= n_win; k++) {
        int flush = k == n_win;
        if (!flush) {
            int64_t s = k < K ? k * hop : n - T;
            int64_t a = k == 0 ? (role ? 0 : 1) : (k < K ? (k - 1) * hop : (K - 1) * hop) + T; /* first row assigned */
            int64_t z = s + T;                                                     /* end (exclusive) */
            if (a < lo) a = lo;
            if (z > hi) z = hi;
            if (a < z) {
                float *xb = m->x + (size_t)nb * T * C;
                for (int64_t t = 0; t < T; t++)
                    for (int c = 0; c < C; c++)
                        xb[t * C + c] = (float)(((double)sig[(s + t) * C + c] - ns->mean[c]) / ns->std[c]);
                gt_data_pdm_impute(xb, (int64_t)T * C); /* missing samples: the training mean, as in training */
                if (role) gt_data_nbm_input(xb, T, C, role);
                wb_start[nb] = s;
                wb_a[nb] = a;
                nb++;
            }
            if (nb < B) continue;
        }
        if (nb == 0) continue;
        gt_engine_forward(e, m->x, nb);
        for (int b = 0; b < nb; b++) {
            int64_t s = wb_start[b], z = s + T > hi ? hi : s + T;
            const float *pb = m->pred + (size_t)b * T * C;
            for (int64_t r = wb_a[b]; r < z; r++) {
                int64_t t = r - s; /* target step; predicted at step t - 1 (next) or t (nbm) */
                if (role) {
                    for (int c = 0; c < C; c++) {
                        float d = pb[t * C + c] - (float)(((double)sig[r * C + c] - ns->mean[c]) / ns->std[c]);
                        e2[c] = role[c] == GT_NBM_TARGET ? d : NAN;
                    }
                } else { /* a missing sample has no residual (NaN: left out of the score) */
                    for (int c = 0; c < C; c++)
                        e2[c] = pb[(t - 1) * C + c] - (float)(((double)sig[r * C + c] - ns->mean[c]) / ns->std[c]);
                }
                fn(ctx, r, e2);
            }
        }
        nb = 0;
    }
    free(wb_start), free(wb_a), free(e2);
}

/* The statistics turbine k is normalised with under model em: the model's
 * (global) ones, or with data.norm = turbine the turbine's own, computed into
 * *buf from the file exactly as the dataset computed them in training. */
static const gt_norm_stats *turbine_norm(const gt_eval_model *em, const gt_pdm_shard *sh, const tinfo *ti, int k,
                                         gt_norm_stats *buf) {
    if (!em->data.pdm_norm_turbine) return &em->ns;
    const int C = sh->n_channels;
    uint8_t *skip = GT_MALLOC((size_t)(ti[k].n > 0 ? ti[k].n : 1));
    gt_data_pdm_fit_skip(sh, k, &em->data, skip);
    const int64_t a = ti[k].holdout_split ? 0 : ti[k].a0, b = ti[k].holdout_split ? 0 : ti[k].b1;
    gt_data_item_norm(sh->signals + (ti[k].r0 + a) * C, skip + a, b - a, C, &em->ns, buf);
    free(skip);
    return buf;
}

int gt_pdm_score_parse(const char *s) {
    if (!s || !*s || !strcmp(s, "auto")) return GT_PDM_SCORE_AUTO;
    if (!strcmp(s, "mean")) return GT_PDM_SCORE_MEAN;
    if (!strcmp(s, "channel")) return GT_PDM_SCORE_CHANNEL;
    return -1;
}

double gt_eval_ewma_span_rows(const gt_eval_config *c, double rate_hz) {
    double span = c->pdm_ewma_s >= 0 ? c->pdm_ewma_s * rate_hz : rate_hz >= 1.0 ? 10.0 * rate_hz : 36.0;
    return span < 1 ? 1 : span;
}

/* Score channel mode: the EWMA state of each channel's residual. A channel's
 * state starts at its first finite residual; a missing one leaves it as it is. */
typedef struct chan_ewma {
    double *m;     /* [C] */
    uint8_t *on;   /* [C] started */
    double alpha;
} chan_ewma;
static void chan_ewma_init(chan_ewma *s, int C, double span) {
    s->m = GT_CALLOC((size_t)C, sizeof(double));
    s->on = GT_CALLOC((size_t)C, 1);
    s->alpha = 2.0 / (span + 1.0);
}
static void chan_ewma_free(chan_ewma *s) { free(s->m), free(s->on); }
static inline void chan_ewma_step(chan_ewma *s, int C, const float *d) {
    for (int k = 0; k < C; k++) {
        if (!isfinite(d[k])) continue;
        s->m[k] = s->on[k] ? s->m[k] + s->alpha * ((double)d[k] - s->m[k]) : (double)d[k];
        s->on[k] = 1;
    }
}

/* pass 1: per-channel sums of d^2, counts and sums of d over validation rows
 * of normal operation (channel mode: of the channel's EWMA state m instead
 * of d, the state run from before the calibration rows) */
typedef struct val_ctx {
    const uint8_t *labels; /* turbine's exclusion mask */
    double *sum, *cnt, *sum_d; /* [C] */
    int C;
    chan_ewma *ch;   /* channel mode; NULL: mean mode */
    int64_t from;    /* channel mode: rows before this warm the state up only */
    float *keep;     /* eval.channel_quantile: the state m of every qstep-th calibration row, [.][C] (NaN: none) */
    int64_t qstep, qi, n_keep;
} val_ctx;
static void val_visit(void *vc, int64_t r, const float *d) {
    val_ctx *c = vc;
    if (c->ch) {
        chan_ewma_step(c->ch, c->C, d);
        if (r < c->from || c->labels[r]) return;
        float *kp = c->keep && c->qi++ % c->qstep == 0 ? c->keep + (size_t)c->n_keep++ * c->C : NULL;
        for (int k = 0; k < c->C; k++) {
            const int ok = c->ch->on[k] && isfinite(d[k]);
            if (ok) {
                const double m = c->ch->m[k];
                c->sum[k] += m * m, c->cnt[k] += 1, c->sum_d[k] += m;
            }
            if (kp) kp[k] = ok ? (float)c->ch->m[k] : NAN;
        }
        return;
    }
    if (c->labels[r]) return;
    for (int k = 0; k < c->C; k++)
        if (isfinite(d[k])) c->sum[k] += d[k] * d[k], c->cnt[k] += 1, c->sum_d[k] += d[k]; /* the square in float */
}

/* pass 2: raw score per row */
typedef struct raw_ctx {
    float *raw;         /* turbine's rows */
    const double *inv;  /* [C] 1 / v_c */
    const double *bias; /* [C] the turbine's residual offset (eval.turbine_offset; else 0) */
    int C;
    chan_ewma *ch;      /* channel mode; NULL: mean mode */
    int16_t *top;       /* turbine's rows: the channel with the largest term (-1: none) */
} raw_ctx;
static void raw_visit(void *vc, int64_t r, const float *d) {
    raw_ctx *c = vc;
    if (c->ch) { /* the largest squared normalised EWMA residual of the channels with a residual here */
        chan_ewma_step(c->ch, c->C, d);
        double best = -1;
        int arg = -1;
        for (int j = 0; j < c->C; j++)
            if (isfinite(d[j]) && c->inv[j] > 0 && c->ch->on[j]) {
                const double e = c->ch->m[j] - c->bias[j], v = e * e * c->inv[j];
                if (v > best) best = v, arg = j;
            }
        c->raw[r] = best >= 0 ? (float)best : NAN;
        c->top[r] = (int16_t)arg;
        return;
    }
    double s = 0, best = -1;
    int k = 0, arg = -1;
    for (int j = 0; j < c->C; j++)
        if (isfinite(d[j]) && c->inv[j] > 0) { /* inv 0: not in the score (no residual, or none calibrated) */
            float e = d[j] - (float)c->bias[j];
            const double v = (double)(e * e) * c->inv[j];
            s += v, k++;
            if (v > best) best = v, arg = j;
        }
    c->raw[r] = k ? (float)(s / k) : NAN;
    c->top[r] = (int16_t)arg;
}

/* Collective: quantile q of the scores of validation rows with label 0 of
 * the training turbines (thinned evenly to at most max_val values). */
static double val_quantile(const gt_pdm_shard *sh, const tinfo *ti, const uint8_t *excl, const float *score, double q,
                           int64_t max_val, int64_t *n_used, MPI_Comm comm) {
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
    double qv = gt_quantile(v, tot, q);
    *n_used = tot;
    free(mine), free(all), free(v);
    return qv;
}

/* Collective: alarm runs on the validation rows (normal operation: every one
 * is a false alarm) of the training turbines at threshold thr, and their
 * turbine-days. Rows with a label never alarm. Integer counts: the same for
 * any number of ranks. */
static int64_t val_alarms(const gt_pdm_shard *sh, const tinfo *ti, float *const *vseg, const gt_eval_config *ec,
                          double thr, gt_alarm_run *buf, MPI_Comm comm) {
    int64_t cnt = 0;
    for (int k = 0; k < sh->n_turbines; k++) {
        if (ti[k].holdout || !vseg[k]) continue;
        double rate = ti[k].rate;
        cnt += gt_alarm_runs(vseg[k], ti[k].b2 - ti[k].c1, thr, (int64_t)llround(ec->pdm_min_duration_s * rate),
                             (int64_t)llround(ec->pdm_merge_gap_s * rate), buf);
    }
    return gt_dist_sum_i64(cnt, comm);
}

/* Collective: the smallest threshold >= thr0 at which the validation rows
 * raise at most pdm_val_false_alarms alarms per turbine-day (bisection on
 * [thr0, max validation score]). */
static double raise_for_val_alarms(const gt_pdm_shard *sh, const tinfo *ti, const uint8_t *excl, const float *score,
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
    const double budget = ec->pdm_val_false_alarms * tdays;
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

/* eval.envelope (normal-behaviour models): rows whose operating inputs over
 * the model's window up to them leave the range the training rows spanned
 * are not scored. The inputs checked are the operational ones
 * (gt_data_channel_kind: wind speed, power, speeds, currents; not ambient
 * temperature, which drifts with the season and enters the physics about
 * linearly, nor angles or aggregates). Per such channel c, [lo_c, hi_c] = min and max over the
 * training rows of normal operation (train split, calibration mask) of every
 * training turbine (collective), widened by tol x (hi_c - lo_c) on each
 * side; a row with a sample outside it marks itself and the next T - 1 rows
 * (the windows that see it) out of the envelope: their score becomes NaN (no
 * alarm, no calibration, counted). A normal-behaviour model extrapolates
 * there (a storm above any wind of the training weeks, a sustained full load
 * they never held), so its residual says nothing about the turbine. Returns
 * the rows marked (local). */
typedef struct env_out {
    int64_t rows_out;           /* local rows set NaN */
    int64_t rows_scored;        /* local rows with a score before */
    int64_t by_channel[GT_DATA_MAX_CHANNELS]; /* local rows out because of that channel (the first out) */
} env_out;
static void envelope_apply(const gt_pdm_shard *sh, const tinfo *ti, const uint8_t *excl, const uint8_t *role,
                           int T, double tol, float *score, MPI_Comm comm, env_out *eo) {
    const int C = sh->n_channels, nt = sh->n_turbines;
    double lo[GT_DATA_MAX_CHANNELS], hi[GT_DATA_MAX_CHANNELS];
    uint8_t use[GT_DATA_MAX_CHANNELS]; /* the operational inputs */
    for (int c = 0; c < C; c++) {
        lo[c] = INFINITY, hi[c] = -INFINITY;
        use[c] = role[c] == GT_NBM_INPUT &&
                 gt_data_channel_kind_desc(sh->channels[c].name, sh->channels[c].desc, sh->channels[c].unit) ==
                     GT_CHANNEL_OPERATIONAL;
    }
    for (int k = 0; k < nt; k++) {
        if (ti[k].holdout) continue;
        for (int64_t r = ti[k].a0; r < ti[k].b1; r++) {
            if (excl[ti[k].r0 + r]) continue;
            const float *x = sh->signals + (ti[k].r0 + r) * C;
            for (int c = 0; c < C; c++)
                if (use[c] && isfinite(x[c])) {
                    if (x[c] < lo[c]) lo[c] = x[c];
                    if (x[c] > hi[c]) hi[c] = x[c];
                }
        }
    }
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, lo, C, MPI_DOUBLE, MPI_MIN, comm));
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, hi, C, MPI_DOUBLE, MPI_MAX, comm));
    for (int c = 0; c < C; c++) {
        if (!(hi[c] >= lo[c])) { /* no training sample: no bound */
            lo[c] = -INFINITY, hi[c] = INFINITY;
            continue;
        }
        const double w = tol * (hi[c] - lo[c]);
        lo[c] -= w, hi[c] += w;
    }
    memset(eo, 0, sizeof *eo);
    for (int k = 0; k < nt; k++) {
        int64_t until = -1; /* rows < until are out */
        int why = -1;
        for (int64_t r = 0; r < ti[k].n; r++) {
            const float *x = sh->signals + (ti[k].r0 + r) * C;
            for (int c = 0; c < C; c++)
                if (use[c] && isfinite(x[c]) && (x[c] < lo[c] || x[c] > hi[c])) {
                    until = r + T, why = c;
                    break;
                }
            float *v = score + ti[k].r0 + r;
            if (!isfinite(*v)) continue;
            eo->rows_scored++;
            if (r < until) eo->rows_out++, eo->by_channel[why]++, *v = NAN;
        }
    }
}

/* Collective: the envelope's totals over the ranks; who != NULL: logs them. */
static void envelope_summary(const env_out *eo, const gt_pdm_shard *sh, MPI_Comm comm, gt_pdm_envelope *es,
                             const char *who) {
    const int C = sh->n_channels;
    int64_t *by = GT_MALLOC(sizeof(int64_t) * (size_t)C);
    memcpy(by, eo->by_channel, sizeof(int64_t) * (size_t)C);
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, by, C, MPI_INT64_T, MPI_SUM, comm));
    memset(es, 0, sizeof *es);
    es->rows_out = gt_dist_sum_i64(eo->rows_out, comm);
    es->rows_scored = gt_dist_sum_i64(eo->rows_scored, comm);
    es->channel = -1;
    int64_t best = 0;
    for (int c = 0; c < C; c++)
        if (by[c] > best) best = by[c], es->channel = c;
    if (es->channel >= 0) snprintf(es->channel_name, sizeof es->channel_name, "%s", sh->channels[es->channel].name);
    free(by);
    if (who && es->rows_out > 0)
        GT_INFO("%s: %lld of %lld scored rows (%.2f%%) have operating inputs outside the range of the training rows "
                "(most often %s) and are not scored: the normal-behaviour model would extrapolate there "
                "(eval.envelope)", who, (long long)es->rows_out, (long long)es->rows_scored,
                100.0 * (double)es->rows_out / (double)(es->rows_scored > 0 ? es->rows_scored : 1), es->channel_name);
}

static int max_window(const gt_eval_model *ems, int n_models) {
    int T = 1;
    for (int j = 0; j < n_models; j++)
        if (gt_engine_config(ems[j].e)->window > T) T = gt_engine_config(ems[j].e)->window;
    return T;
}

/* Collective: the combined smoothed score of every local row (malloc'd) and
 * the threshold; *top_out (malloc'd): each row's top channel, the one with
 * the largest term of the score (of the model whose score wins), -1 for
 * none. all_rows = 0 (evaluation): rows before the calibration rows of
 * training turbines, and filtered-out turbines, are left NaN (not needed). */
static float *pdm_scores(const char *data_file, const gt_pdm_shard *sh, const tinfo *ti, const gt_eval_model *ems,
                         int n_models, const gt_eval_config *ec, int all_rows, MPI_Comm comm, double *thr,
                         double *qv_out, int64_t *n_val, int16_t **top_out, env_out *env) {
    const int C = sh->n_channels, nt = sh->n_turbines;
    const int64_t N = sh->n_rows > 0 ? sh->n_rows : 1;
    int rank;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    float *comb = GT_MALLOC(sizeof(float) * (size_t)N);
    int16_t *topc = GT_MALLOC(sizeof(int16_t) * (size_t)N);
    for (int64_t i = 0; i < N; i++) comb[i] = NAN, topc[i] = -1;
    float *sc = n_models > 1 ? GT_MALLOC(sizeof(float) * (size_t)N) : comb;
    int16_t *top = n_models > 1 ? GT_MALLOC(sizeof(int16_t) * (size_t)N) : topc;
    int32_t *fidx = sh->index;
    double rate_max = 0;
    for (int k = 0; k < nt; k++)
        if (ti[k].rate > rate_max) rate_max = ti[k].rate;
    const int Tmax = max_window(ems, n_models);
    const int64_t guard = Tmax + (int64_t)ceil(3 * gt_eval_ewma_span_rows(ec, rate_max));
    uint8_t *excl = exclusion_mask(sh, guard, &ems[0].data.conditions, &ems[0].data.train_conditions);
    gt_norm_stats *tns = GT_MALLOC(sizeof *tns); /* data.norm = turbine: one turbine's statistics */
    for (int j = 0; j < n_models; j++) {
        const gt_eval_model *em = &ems[j];
        gt_model *m = gt_engine_model(em->e);
        gt_task_pdm.check_model(&m->cfg, em->name ? em->name : "model");
        GT_CHECK(m->cfg.n_in == C, GT_EXIT_DATA, "%s: the model has %d channels, the file %d",
                 em->name ? em->name : "model", m->cfg.n_in, C);
        GT_CHECK(em->ns.n == C, GT_EXIT_DATA, "%s: normalisation statistics for %d features, the file has %d channels",
                 em->name ? em->name : "model", em->ns.n, C);
        /* data.pdm_target = nbm: the residual of the condition channels (the run's stored roles) */
        uint8_t role_buf[GT_DATA_MAX_CHANNELS], *role = NULL;
        if (em->data.pdm_target == GT_PDM_TARGET_NBM) {
            int n_in, n_tg;
            gt_data_nbm_roles(&em->data, sh->channels, C, role_buf, &n_in, &n_tg);
            GT_CHECK(n_in > 0 && n_tg > 0, GT_EXIT_USAGE,
                     "%s: model %s is a normal-behaviour model (data.pdm_target = nbm) but the file has %d input "
                     "and %d target channels", data_file, em->name ? em->name : "?", n_in, n_tg);
            role = role_buf;
        }
        const int T = m->cfg.window;
        int64_t hop = ec->pdm_hop > 0 ? ec->pdm_hop : T / 2;
        if (hop < 1) hop = 1;
        if (hop > T - 1) hop = T - 1 > 0 ? T - 1 : 1;
        /* pass 1: channel error scales from validation rows */
        /* per turbine: sum d^2 [C], count [C], sum d [C] */
        const int chan = ec->pdm_score == GT_PDM_SCORE_CHANNEL || (ec->pdm_score == GT_PDM_SCORE_AUTO && role);
        double *vs = GT_CALLOC((size_t)(nt > 0 ? nt : 1) * 3 * C, sizeof(double));
        /* eval.channel_quantile: the EWMA states of evenly thinned calibration rows (at most pdm_max_val
         * values over the ranks), gathered for each channel's quantile */
        const int chq = chan && ec->pdm_channel_quantile > 0;
        float *keep = NULL;
        int64_t qstep = 1, *keep_end = NULL;
        if (chq) {
            int64_t cnt = 0, cap = 0, rows_cap = ec->pdm_max_val / C > 64 ? ec->pdm_max_val / C : 64;
            for (int k = 0; k < nt; k++)
                if (!ti[k].holdout) cnt += ti[k].b2 - ti[k].c1;
            cnt = gt_dist_sum_i64(cnt, comm);
            qstep = cnt > rows_cap ? (cnt + rows_cap - 1) / rows_cap : 1;
            for (int k = 0; k < nt; k++)
                if (!ti[k].holdout) cap += (ti[k].b2 - ti[k].c1) / qstep + 1;
            keep = GT_MALLOC(sizeof(float) * (size_t)(cap + 1) * C);
            keep_end = GT_CALLOC((size_t)(nt + 1), sizeof(int64_t));
        }
        int64_t n_keep = 0;
        for (int k = 0; k < nt; k++) {
            if (chq) keep_end[k + 1] = n_keep;
            if (ti[k].holdout) continue;
            double *v = vs + (size_t)k * 3 * C;
            const double span = gt_eval_ewma_span_rows(ec, ti[k].rate);
            chan_ewma ch = {0};
            if (chan) chan_ewma_init(&ch, C, span);
            int64_t lo1 = ti[k].c1; /* channel mode: the state warms up over 40 spans before the calibration rows */
            if (chan) lo1 -= T + (int64_t)ceil(40 * span);
            if (lo1 < 0) lo1 = 0;
            val_ctx vc = {excl + ti[k].r0, v, v + C, v + 2 * C, C, chan ? &ch : NULL, ti[k].c1,
                          keep ? keep + (size_t)n_keep * C : NULL, qstep, 0, 0};
            window_errors(em->e, turbine_norm(em, sh, ti, k, tns), role, sh->signals + ti[k].r0 * C, ti[k].n, C, hop,
                          lo1, ti[k].b2, val_visit, &vc);
            chan_ewma_free(&ch);
            n_keep += vc.n_keep;
            if (chq) keep_end[k + 1] = n_keep;
        }
        /* eval.turbine_offset: a turbine's mean residual on its calibration rows is its sensors' offset
         * against the farm-wide model; it is removed from its residuals (and from the squares v_c
         * averages: sum (d - b)^2 = sum d^2 - n b^2) */
        double *bias = GT_CALLOC((size_t)(nt > 0 ? nt : 1) * C, sizeof(double));
        for (int k = 0; k < nt && ec->pdm_turbine_offset; k++) {
            double *v = vs + (size_t)k * 3 * C;
            for (int c = 0; c < C; c++)
                if (v[C + c] > 0) {
                    bias[(size_t)k * C + c] = v[2 * C + c] / v[C + c];
                    v[c] -= v[C + c] * bias[(size_t)k * C + c] * bias[(size_t)k * C + c];
                }
        }
        double *all = GT_MALLOC(sizeof(double) * (size_t)sh->n_turbines_total * 3 * C + 8);
        gt_eval_gather_items(nt, fidx, vs, 3 * C, sh->n_turbines_total, all, comm);
        double chq_w[GT_DATA_MAX_CHANNELS];
        if (chq) { /* each channel's quantile of (m - bias)^2 over the kept rows of every rank */
            for (int k = 0; k < nt; k++)
                for (int64_t i = keep_end[k]; i < keep_end[k + 1]; i++)
                    for (int c = 0; c < C; c++) {
                        const double e = (double)keep[i * C + c] - bias[(size_t)k * C + c];
                        keep[i * C + c] = (float)(e * e);
                    }
            int64_t tot = 0;
            float *kall = gt_dist_allgatherv(keep, (int)(n_keep * C), MPI_FLOAT, &tot,
                                             "eval: too many calibration values to gather (more than 2^31 over the ranks)", comm);
            const int64_t nr = tot / C;
            double *col = GT_MALLOC(sizeof(double) * (size_t)(nr + 1));
            for (int c = 0; c < C; c++) {
                int64_t n = 0;
                for (int64_t i = 0; i < nr; i++)
                    if (isfinite(kall[i * C + c])) col[n++] = kall[i * C + c];
                chq_w[c] = n > 0 ? gt_quantile(col, n, ec->pdm_channel_quantile) : NAN;
            }
            free(col), free(kall), free(keep), free(keep_end);
        }
        double inv[GT_DATA_MAX_CHANNELS];
        int n_scored = 0, n_silent = 0;
        char silent[200] = "";
        for (int c = 0; c < C; c++) {
            inv[c] = 0; /* 0: never in the score */
            if (role && role[c] != GT_NBM_TARGET) continue; /* no residual */
            double s = 0, n = 0;
            for (int f = 0; f < sh->n_turbines_total; f++) s += all[(size_t)f * 3 * C + c], n += all[(size_t)f * 3 * C + C + c];
            if (!(n > 0)) { /* no residual on any calibration row: the channel is missing there (a dead sensor) */
                size_t l = strlen(silent);
                if (n_silent++ < 4) snprintf(silent + l, sizeof silent - l, "%s%s", l ? ", " : "", sh->channels[c].name);
                continue;
            }
            double v = chq && isfinite(chq_w[c]) ? chq_w[c] : s / n;
            inv[c] = 1.0 / (v > 1e-12 ? v : 1e-12);
            n_scored++;
        }
        GT_CHECK(n_scored > 0, GT_EXIT_DATA,
                 "eval: no validation rows of normal operation to calibrate the anomaly score (every turbine held "
                 "out, data.split_val = 0, every channel missing there, or no validation row past a turbine's first window + 3 "
                 "EWMA spans: eval.ewma_s too long)");
        if (n_silent && rank == 0)
            GT_WARN("eval: %d channel(s) have no sample on the calibration rows (%s%s): they are left out of the "
                    "anomaly score", n_silent, silent, n_silent > 4 ? ", ..." : "");
        free(vs), free(all);
        /* pass 2: raw score of every row, EWMA per turbine */
        for (int k = 0; k < nt; k++) {
            float *raw = sc + ti[k].r0;
            for (int64_t r = 0; r < ti[k].n; r++) raw[r] = NAN, top[ti[k].r0 + r] = -1;
            /* evaluation needs the calibration rows onwards (training turbines), after a
             * warm-up of T + 40 EWMA spans (the EWMA state forgets its start: e^-80) */
            const double span = gt_eval_ewma_span_rows(ec, ti[k].rate);
            int64_t lo2 = all_rows || ti[k].holdout ? 0 : ti[k].c1 - T - (int64_t)ceil(40 * span);
            if (lo2 < 0) lo2 = 0;
            if (ti[k].skip && !all_rows) continue;
            chan_ewma ch = {0};
            if (chan) chan_ewma_init(&ch, C, span);
            raw_ctx rc = {raw, inv, bias + (size_t)k * C, C, chan ? &ch : NULL, top + ti[k].r0};
            window_errors(em->e, turbine_norm(em, sh, ti, k, tns), role, sh->signals + ti[k].r0 * C, ti[k].n, C, hop,
                          lo2, ti[k].n, raw_visit, &rc);
            chan_ewma_free(&ch);
            if (!chan) gt_ewma(raw + lo2, ti[k].n - lo2, 2.0 / (span + 1.0), raw + lo2); /* channel: smoothed already */
            /* the turbine's first rows (plan_turbines: no calibration there) are not scored either: predicted
             * with less context, they start the EWMA and raised an alarm at the start of every turbine */
            const int64_t warm = Tmax + (int64_t)ceil(3 * span);
            for (int64_t r = 0; r < warm && r < ti[k].n; r++) raw[r] = NAN, top[ti[k].r0 + r] = -1;
        }
        free(bias);
        if (n_models > 1) {
            int64_t nv;
            double q = val_quantile(sh, ti, excl, sc, ec->pdm_quantile, ec->pdm_max_val, &nv, comm);
            GT_CHECK(q > 0 && isfinite(q), GT_EXIT_DATA, "eval: model %s has a zero validation score quantile",
                     em->name ? em->name : "?");
            for (int64_t i = 0; i < sh->n_rows; i++) {
                float v = (float)(sc[i] / q);
                if (isfinite(v) && !(comb[i] >= v)) comb[i] = v, topc[i] = top[i];
            }
        }
    }
    if (sc != comb) free(sc);
    if (top != topc) free(top);
    *top_out = topc;
    free(tns);
    /* eval.envelope: the roles of the first normal-behaviour model among the models (in any order of
     * eval.models), the longest window */
    memset(env, 0, sizeof *env);
    int nbm = -1;
    for (int j = 0; j < n_models && nbm < 0; j++)
        if (ems[j].data.pdm_target == GT_PDM_TARGET_NBM) nbm = j;
    if (ec->pdm_envelope >= 0 && nbm >= 0) {
        uint8_t role[GT_DATA_MAX_CHANNELS];
        int n_in, n_tg;
        gt_data_nbm_roles(&ems[nbm].data, sh->channels, C, role, &n_in, &n_tg);
        envelope_apply(sh, ti, excl, role, Tmax, ec->pdm_envelope, comb, comm, env);
    }
    for (int64_t i = 0; i < N; i++) /* a row not scored names no channel */
        if (!isfinite(comb[i])) topc[i] = -1;
    double q = val_quantile(sh, ti, excl, comb, ec->pdm_quantile, ec->pdm_max_val, n_val, comm);
    GT_CHECK(isfinite(q), GT_EXIT_DATA, "eval: no finite validation scores to calibrate the threshold");
    *qv_out = q;
    *thr = ec->pdm_margin * q;
    GT_CHECK(isfinite(*thr), GT_EXIT_USAGE, "eval.margin = %g times the validation quantile %g is no finite threshold",
             ec->pdm_margin, q); /* every rank: q is the same on all */
    if (ec->pdm_val_false_alarms > 0) *thr = raise_for_val_alarms(sh, ti, excl, comb, ec, *thr, comm);
    free(excl);
    return comb;
}

/* d: the first model's data settings with data.care_event resolved (gt_data_care_select) */
/* T: the longest window of the models. A turbine's first rows are predicted with less context than the
 * others (the first window's early steps) and start the EWMA of the score: their residuals are several
 * times the turbine's usual ones, so the rows up to T + 3 EWMA spans from its start calibrate nothing
 * (with eval.calibrate = train_val they set the threshold). */
static tinfo *plan_turbines(const gt_pdm_shard *sh, const gt_data_config *d, const gt_eval_config *ec, int T) {
    const int cal_train = ec->pdm_calibrate_train;
    tinfo *ti = GT_CALLOC((size_t)(sh->n_turbines > 0 ? sh->n_turbines : 1), sizeof(tinfo));
    for (int k = 0; k < sh->n_turbines; k++) {
        ti[k].r0 = sh->row_offset[k];
        ti[k].n = sh->row_offset[k + 1] - sh->row_offset[k];
        ti[k].rate = sh->rate_hz[k] > 0 ? sh->rate_hz[k] : 1;
        gt_data_item_rows r;
        gt_data_item_rows_of(d, ti[k].n, sh->index[k], &r);
        ti[k].holdout = r.holdout;
        ti[k].a0 = r.lo[GT_SPLIT_TRAIN], ti[k].b1 = r.hi[GT_SPLIT_TRAIN], ti[k].b2 = r.hi[GT_SPLIT_VAL];
        ti[k].e0 = r.holdout ? 0 : r.lo[GT_SPLIT_TEST];
        ti[k].e1 = r.holdout ? ti[k].n : r.hi[GT_SPLIT_TEST];
        ti[k].c1 = cal_train ? ti[k].a0 : ti[k].b1;
        const int64_t warm = T + (int64_t)ceil(3 * gt_eval_ewma_span_rows(ec, ti[k].rate));
        if (ti[k].c1 < warm) ti[k].c1 = warm < ti[k].b2 ? warm : ti[k].b2;
        ti[k].skip = r.excluded || !gt_data_filter_has(&d->items, sh->id[k]) ||
                     !gt_data_filter_has(&d->farms, sh->farm[k]) ||
                     !gt_data_filter_has(&d->machine_types, sh->machine_type[k]);
        ti[k].holdout_split = ti[k].holdout;
        if (ti[k].skip) ti[k].holdout = 1; /* no calibration rows */
    }
    return ti;
}

/* legend names (rank 0), fallbacks "<what>_<k>" */
static void read_legend(const char *path, const char *ds_name, const char *what, char names[][GT_FORMAT_NAME_LEN],
                        int n) {
    for (int k = 0; k < n; k++) snprintf(names[k], GT_FORMAT_NAME_LEN, "%s_%d", what, k);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return;
    if (H5Lexists(f, "legend", H5P_DEFAULT) > 0 && H5Lexists(f, ds_name, H5P_DEFAULT) > 0) {
        hid_t d = H5Dopen2(f, ds_name, H5P_DEFAULT), sp = H5Dget_space(d);
        hssize_t m = H5Sget_simple_extent_npoints(sp);
        char *buf = GT_CALLOC((size_t)(m > 0 ? m : 1), GT_FORMAT_NAME_LEN);
        hid_t st = H5Tcopy(H5T_C_S1);
        H5Tset_size(st, GT_FORMAT_NAME_LEN);
        H5Tset_strpad(st, H5T_STR_NULLTERM);
        if (m > 0 && H5Dread(d, st, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0)
            for (int k = 0; k < n && k < m; k++)
                if (buf[(size_t)k * GT_FORMAT_NAME_LEN])
                    snprintf(names[k], GT_FORMAT_NAME_LEN, "%.31s", buf + (size_t)k * GT_FORMAT_NAME_LEN);
        H5Tclose(st);
        free(buf);
        H5Sclose(sp);
        H5Dclose(d);
    }
    H5Fclose(f);
}

enum { PACC_K = sizeof(gt_pdm_acc) / sizeof(double) };

/* Collective: the authors' CARE protocol (gt_care_event_score) for every
 * /care_events entry: alarm runs over all rows of its turbine, normal_index =
 * rows outside the status spans (/events of a kind other than 1, the
 * anomaly events), every row on Wind Farm A (gt_care_ignores_normal_index);
 * per-event results summed over ranks in file order (each entry is filled by
 * the rank holding its turbine), the same on every rank. */
enum { CE_REC = 9 };
static void care_protocol(const gt_pdm_shard *sh, const tinfo *ti, const float *score, const int64_t *ce, int64_t n_ce,
                          int64_t only_event, const gt_eval_config *ec, double thr, MPI_Comm comm, gt_pdm_eval *out) {
    out->has_care = ce != NULL;
    if (!ce) {
        gt_care_protocol_final(NULL, 0, &out->care_protocol);
        out->care_protocol.reason = "the file has no /care_events (import a CARE to Compare farm with `import care`)";
        return;
    }
    double *rec = GT_CALLOC((size_t)(CE_REC * n_ce + 1), sizeof(double));
    for (int k = 0; k < sh->n_turbines; k++) {
        int64_t n = ti[k].n;
        uint8_t *pred = NULL, *normal = NULL;
        for (int64_t i = 0; i < n_ce; i++) {
            const int64_t *q = ce + GT_CARE_EVENT_K * i;
            if (q[0] != sh->index[k] || ti[k].skip || n <= 0) continue;
            if (only_event >= 0 && q[1] != only_event) continue; /* data.care_event: that event dataset only */
            if (!pred) {
                pred = GT_CALLOC((size_t)n, 1);
                normal = GT_MALLOC((size_t)n);
                memset(normal, 1, (size_t)n);
                gt_alarm_run *al = GT_MALLOC(sizeof(gt_alarm_run) * (size_t)(n / 2 + 1));
                double rate = ti[k].rate;
                int64_t na = gt_alarm_runs(score + ti[k].r0, n, thr, (int64_t)llround(ec->pdm_min_duration_s * rate),
                                           (int64_t)llround(ec->pdm_merge_gap_s * rate), al);
                for (int64_t j = 0; j < na; j++) memset(pred + al[j].start, 1, (size_t)(al[j].end - al[j].start));
                free(al);
                for (int e = 0; e < sh->n_events; e++) {
                    if (sh->event_turbine[e] != k || sh->events[e].code == 1) continue;
                    int64_t a = sh->events[e].start_row, z = sh->events[e].end_row > n ? n : sh->events[e].end_row;
                    for (int64_t r = a < 0 ? 0 : a; r < z; r++) normal[r] = 0;
                }
                if (gt_care_ignores_normal_index(sh->farm[k])) memset(normal, 1, (size_t)n); /* Wind Farm A */
            }
            int64_t ps = q[3], pe = q[4] > n ? n : q[4];
            if (ps < 0) ps = 0;
            if (pe <= ps) continue;
            gt_care_event_eval r;
            gt_care_event_score(pred + ps, normal + ps, pe - ps, q[5] - ps, q[6] - ps, q[2] == 1,
                                GT_CARE_CRITICALITY_THRESHOLD, &r);
            int64_t in_train = 0; /* prediction rows inside the training or validation split */
            if (!ti[k].holdout) {
                int64_t a = ps > ti[k].a0 ? ps : ti[k].a0, z = pe < ti[k].b2 ? pe : ti[k].b2;
                in_train = z > a ? z - a : 0;
            }
            double *d = rec + CE_REC * i;
            d[0] = 1, d[1] = r.detected, d[2] = r.max_criticality, d[3] = r.coverage, d[4] = r.accuracy;
            d[5] = r.earliness, d[6] = (double)in_train, d[7] = (double)(pe - ps), d[8] = r.anomaly;
        }
        free(pred), free(normal);
    }
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, rec, (int)(CE_REC * n_ce), MPI_DOUBLE, MPI_SUM, comm));
    out->n_care_events = (int)n_ce;
    out->care_events = GT_CALLOC((size_t)n_ce, sizeof(gt_pdm_care_event));
    gt_care_event_eval *ev = GT_CALLOC((size_t)n_ce, sizeof(gt_care_event_eval));
    int m = 0;
    for (int64_t i = 0; i < n_ce; i++) {
        const int64_t *q = ce + GT_CARE_EVENT_K * i;
        const double *d = rec + CE_REC * i;
        gt_pdm_care_event *c = &out->care_events[i];
        c->event_id = q[1];
        c->file_index = (int32_t)q[0];
        c->evaluated = d[0] > 0;
        c->n_rows = (int64_t)d[7];
        c->rows_in_training = (int64_t)d[6];
        c->r.anomaly = q[2] == 1;
        c->r.coverage = c->r.accuracy = c->r.earliness = c->r.max_criticality = NAN;
        if (!c->evaluated) continue;
        c->r.detected = d[1] > 0, c->r.max_criticality = d[2], c->r.coverage = d[3], c->r.accuracy = d[4];
        c->r.earliness = d[5];
        ev[m++] = c->r;
    }
    gt_care_protocol_final(ev, m, &out->care_protocol);
    free(ev), free(rec);
}

void gt_eval_pdm(const char *data_file, const gt_eval_model *ems, int n_models, const gt_eval_config *ec,
                 const char *scores_csv, MPI_Comm comm, gt_pdm_eval *out) {
    memset(out, 0, sizeof *out);
    GT_CHECK(n_models >= 1 && n_models <= GT_EVAL_MAX_MODELS, GT_EXIT_USAGE, "eval: 1..%d models", GT_EVAL_MAX_MODELS);
    int rank;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    MPI_CHECK(MPI_Comm_size(comm, &out->n_ranks));
    out->n_models = n_models;
    out->pdm_target = ems[0].data.pdm_target;
    for (int j = 1; j < n_models; j++)
        if (ems[j].data.pdm_target != out->pdm_target) out->pdm_target = -1;
    gt_pdm_shard *sh = gt_pdm_shard_read(data_file, comm);
    gt_data_check_filters_pdm(data_file, sh, &ems[0].data, comm); /* the run's filters on this file */
    const int nt = sh->n_turbines, NT = sh->n_turbines_total;
    int64_t rows = gt_dist_sum_i64(sh->n_rows, comm);
    out->n_rows = rows;
    gt_data_config dsel = ems[0].data; /* data.care_event: one event dataset's parts (the authors' protocol) */
    gt_data_care_select(&dsel, data_file, comm);
    tinfo *ti = plan_turbines(sh, &dsel, ec, max_window(ems, n_models));
    int64_t n_ce = 0;
    int64_t *ce = gt_care_events_read(data_file, comm, &n_ce);
    /* the CARE protocol scores every event dataset's prediction part, wherever it lies: every row gets a score */
    int16_t *top;
    env_out env;
    float *score = pdm_scores(data_file, sh, ti, ems, n_models, ec, ce != NULL, comm, &out->threshold,
                              &out->quantile_value, &out->n_val_scores, &top, &env);
    envelope_summary(&env, sh, comm, &out->envelope, rank == 0 ? "eval" : NULL);

    /* conditions: codes seen in the segments */
    int ncond = 0;
    for (int i = 0; i < sh->n_segments; i++)
        if (sh->segments[i].code + 1 > ncond) ncond = sh->segments[i].code + 1;
    ncond = gt_dist_max_int(ncond, comm);
    if (ncond > GT_EVAL_MAX_GROUPS) ncond = GT_EVAL_MAX_GROUPS;
    if (ncond < 1) ncond = 1;
    out->n_conds = ncond;

    /* per turbine: [id, farm, type, holdout, acc, by_cond[ncond]] */
    const int REC = 4 + PACC_K * (1 + ncond);
    double *rec = GT_CALLOC((size_t)(nt > 0 ? nt : 1) * REC, sizeof(double));
    double best_key = -1; /* plot turbine: most events, then lowest file index */
    int best_k = -1;
    /* event kinds that are operating-status periods (/legend/event_kind
     * "status_*", CARE's derated, service, downtime, other): labelled rows,
     * not anomalies; anomaly_recall leaves them out */
    uint8_t status_kind[256] = {0};
    if (rank == 0) {
        char(*kinds)[GT_FORMAT_NAME_LEN] = GT_MALLOC(256 * sizeof *kinds);
        read_legend(data_file, "legend/event_kind", "kind", kinds, 256);
        for (int c = 1; c < 256; c++) status_kind[c] = strncmp(kinds[c], "status_", 7) == 0;
        free(kinds);
    }
    MPI_CHECK(MPI_Bcast(status_kind, 256, MPI_UINT8_T, 0, comm));
    for (int k = 0; k < nt; k++) {
        double *rk = rec + (size_t)k * REC;
        rk[0] = (double)sh->id[k], rk[1] = sh->farm[k], rk[2] = sh->machine_type[k], rk[3] = ti[k].holdout_split + 2 * ti[k].skip;
        int64_t lo = ti[k].e0, n = ti[k].skip ? 0 : ti[k].e1 - lo;
        if (n <= 0) continue;
        int32_t *cond = GT_MALLOC(sizeof(int32_t) * (size_t)n);
        for (int64_t r = 0; r < n; r++) cond[r] = -1;
        for (int i = 0; i < sh->n_segments; i++) {
            if (sh->segment_turbine[i] != k) continue;
            int64_t a = sh->segments[i].start_row - lo, z = sh->segments[i].end_row - lo;
            if (a < 0) a = 0;
            if (z > n) z = n;
            for (int64_t r = a; r < z; r++) cond[r] = sh->segments[i].code;
        }
        gt_alarm_run *ev = GT_MALLOC(sizeof(gt_alarm_run) * (size_t)(sh->n_events + 1));
        int ne = 0;
        for (int i = 0; i < sh->n_events; i++)
            if (sh->event_turbine[i] == k && sh->events[i].end_row > lo && sh->events[i].start_row < lo + n) {
                const int32_t code = sh->events[i].code;
                ev[ne++] = (gt_alarm_run){sh->events[i].start_row - lo,
                                          (sh->events[i].end_row < lo + n ? sh->events[i].end_row : lo + n) - lo,
                                          code >= 0 && code < 256 ? status_kind[code] : 0};
            }
        double rate = ti[k].rate;
        int64_t min_len = (int64_t)llround(ec->pdm_min_duration_s * rate), gap = (int64_t)llround(ec->pdm_merge_gap_s * rate);
        gt_pdm_score_rows(score + ti[k].r0 + lo, sh->labels + ti[k].r0 + lo, cond, n, ev, ne, out->threshold, min_len,
                          gap, rate, (gt_pdm_acc *)(rk + 4), (gt_pdm_acc *)(rk + 4 + PACC_K), ncond, NULL);
        double key = ((gt_pdm_acc *)(rk + 4))->n_events * 1e7 + (1e7 - 1 - sh->index[k]);
        if (key > best_key) best_key = key, best_k = k;
        free(cond), free(ev);
    }
    double *all = GT_MALLOC(sizeof(double) * (size_t)NT * REC + 8);
    gt_eval_gather_items(nt, sh->index, rec, REC, NT, all, comm);
    out->n_turbines = NT;
    out->turbines = GT_CALLOC((size_t)(NT > 0 ? NT : 1), sizeof(gt_pdm_turbine_eval));
    int ntype = 1;
    for (int f = 0; f < NT; f++) {
        const double *rf = all + (size_t)f * REC;
        gt_pdm_turbine_eval *te = &out->turbines[f];
        te->id = (int64_t)rf[0], te->file_index = f, te->farm = (int32_t)rf[1], te->machine_type = (int32_t)rf[2];
        te->holdout = (int32_t)rf[3] & 1;
        te->skipped = ((int32_t)rf[3] & 2) != 0;
        memcpy(&te->acc, rf + 4, sizeof(gt_pdm_acc));
        if (ems[0].data.conditions.n > 0) { /* data.conditions: only the selected conditions count */
            memset(&te->acc, 0, sizeof te->acc);
            for (int c = 0; c < ncond; c++)
                if (gt_data_filter_has(&ems[0].data.conditions, c))
                    gt_pdm_acc_merge(&te->acc, (const gt_pdm_acc *)(rf + 4 + PACC_K * (1 + c)));
        }
        gt_pdm_acc_merge(&out->acc, &te->acc);
        int ty = te->machine_type;
        if (ty >= 0 && ty < GT_EVAL_MAX_GROUPS) {
            gt_pdm_acc_merge(&out->by_type[ty], &te->acc);
            if (ty + 1 > ntype) ntype = ty + 1;
        }
        for (int c = 0; c < ncond; c++) gt_pdm_acc_merge(&out->by_cond[c], (const gt_pdm_acc *)(rf + 4 + PACC_K * (1 + c)));
    }
    out->n_types = ntype;
    gt_pdm_metrics_from_acc(&out->acc, &out->overall);
    care_protocol(sh, ti, score, ce, n_ce, dsel.care.event_id, ec, out->threshold, comm, out);
    free(ce);
    if (rank == 0) {
        read_legend(data_file, "legend/machine_type", "type", out->type_names, ntype);
        read_legend(data_file, "legend/condition", "condition", out->cond_names, ncond);
    }

    /* score trace of one evaluation turbine for the report */
    if (scores_csv) {
        double g = gt_dist_max_d(best_key, comm);
        if (g >= 0 && best_k >= 0 && g == best_key) {
            int k = best_k;
            int64_t lo = ti[k].e0, n = ti[k].e1 - lo;
            FILE *f = gt_fopen_atomic(scores_csv, 0); /* a link there is replaced, never followed */
            if (f) {
                fprintf(f, "# turbine id %lld (file index %d, %s), rows %lld.., threshold %.6g: time_h score label "
                           "channel (the channel with the largest term of the score)\n",
                        (long long)sh->id[k], sh->index[k], ti[k].holdout ? "held out" : "test split", (long long)lo,
                        out->threshold);
                int64_t step = n / 4000 + 1;
                for (int64_t a = 0; a < n; a += step) {
                    float mx = NAN;
                    int lab = 0, ch = -1;
                    for (int64_t r = a; r < a + step && r < n; r++) {
                        float v = score[ti[k].r0 + lo + r];
                        if (isfinite(v) && !(mx >= v)) mx = v, ch = top[ti[k].r0 + lo + r];
                        if (sh->labels[ti[k].r0 + lo + r]) lab = 1;
                    }
                    double th = (double)a / ti[k].rate / 3600.0;
                    char cn[3 * GT_FORMAT_NAME_LEN]; /* one token: the row keeps its 4 columns */
                    gt_esc_token(cn, sizeof cn, ch >= 0 && ch < sh->n_channels ? sh->channels[ch].name : "-");
                    if (isfinite(mx)) fprintf(f, "%.5f %.6g %d %s\n", th, mx, lab, cn);
                    else fprintf(f, "%.5f NaN %d -\n", th, lab);
                }
                fclose(f);
            }
        }
    }
    free(rec), free(all), free(score), free(top), free(ti);
    gt_pdm_shard_free(sh);
}

void gt_predict_pdm(const char *data_file, const gt_eval_model *ems, int n_models, const gt_eval_config *ec,
                    const char *out_path, MPI_Comm comm) {
    int rank;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    gt_pdm_shard *sh = gt_pdm_shard_read(data_file, comm);
    gt_data_check_filters_pdm(data_file, sh, &ems[0].data, comm); /* the run's filters on this file */
    const int nt = sh->n_turbines;
    gt_data_config dsel = ems[0].data;
    gt_data_care_select(&dsel, data_file, comm);
    tinfo *ti = plan_turbines(sh, &dsel, ec, max_window(ems, n_models));
    double thr, qv;
    int64_t nv;
    int16_t *top;
    env_out env;
    float *score = pdm_scores(data_file, sh, ti, ems, n_models, ec, 1, comm, &thr, &qv, &nv, &top, &env);
    gt_pdm_envelope es;
    envelope_summary(&env, sh, comm, &es, rank == 0 ? "predict" : NULL);
    uint8_t *alarm = GT_CALLOC((size_t)(sh->n_rows > 0 ? sh->n_rows : 1), 1);
    int64_t *nrows = GT_MALLOC(sizeof(int64_t) * (size_t)(nt > 0 ? nt : 1));
    for (int k = 0; k < nt; k++) {
        nrows[k] = ti[k].n;
        if (ti[k].n <= 0) continue;
        gt_alarm_run *al = GT_MALLOC(sizeof(gt_alarm_run) * (size_t)(ti[k].n / 2 + 1));
        double rate = ti[k].rate;
        int64_t na = gt_alarm_runs(score + ti[k].r0, ti[k].n, thr, (int64_t)llround(ec->pdm_min_duration_s * rate),
                                   (int64_t)llround(ec->pdm_merge_gap_s * rate), al);
        for (int64_t i = 0; i < na; i++) memset(alarm + ti[k].r0 + al[i].start, 1, (size_t)(al[i].end - al[i].start));
        free(al);
    }
    gt_eval_out o;
    gt_eval_out_open(&o, out_path, nt, sh->index, nrows, sh->n_turbines_total, comm);
    gt_h5_attr_str(o.f, "kind", "pdm_scores");
    gt_h5_attr_i64(o.f, "schema_version", 1);
    gt_h5_attr_str(o.f, "source", data_file);
    gt_h5_attr_f64(o.f, "threshold", thr);
    gt_h5_attr_f64(o.f, "quantile", ec->pdm_quantile);
    gt_h5_attr_f64(o.f, "quantile_value", qv);
    gt_h5_attr_f64(o.f, "margin", ec->pdm_margin);
    gt_h5_attr_f64(o.f, "ewma_s", ec->pdm_ewma_s); /* -1: auto (gt_eval_ewma_span_rows) */
    gt_h5_attr_i64(o.f, "score", ec->pdm_score);
    gt_h5_attr_f64(o.f, "channel_quantile", ec->pdm_channel_quantile);
    gt_h5_attr_f64(o.f, "envelope", ec->pdm_envelope);
    gt_h5_attr_i64(o.f, "envelope_rows_not_scored", es.rows_out);
    gt_h5_attr_i64(o.f, "n_models", n_models);
    gt_eval_out_attr_models(&o, "models", ems, n_models, 1);
    gt_eval_out_rows(&o, "timestamps", H5T_NATIVE_INT64, H5T_STD_I64LE, 0, sh->timestamps);
    gt_eval_out_rows(&o, "score", H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, 0, score);
    gt_eval_out_rows(&o, "alarm", H5T_NATIVE_UINT8, H5T_STD_U8LE, 0, alarm);
    gt_eval_out_rows(&o, "top_channel", H5T_NATIVE_INT16, H5T_STD_I16LE, 0, top);
    gt_h5_write_strings(o.f, "channels", sh->channels[0].name, sizeof sh->channels[0], GT_FORMAT_NAME_LEN,
                        sh->n_channels, comm); /* the names top_channel indexes */
    gt_eval_out_rows(&o, "labels", H5T_NATIVE_UINT8, H5T_STD_U8LE, 0, sh->labels);
    const int NT = sh->n_turbines_total;
    double *idl = GT_MALLOC(sizeof(double) * (size_t)(nt > 0 ? nt : 1)), *ida = GT_MALLOC(sizeof(double) * (size_t)NT + 8);
    for (int k = 0; k < nt; k++) idl[k] = (double)sh->id[k];
    gt_eval_gather_items(nt, sh->index, idl, 1, NT, ida, comm);
    int64_t *ids = GT_MALLOC(sizeof(int64_t) * (size_t)NT + 8);
    for (int f = 0; f < NT; f++) ids[f] = (int64_t)ida[f];
    gt_eval_out_table(&o, "turbines/id", H5T_NATIVE_INT64, H5T_STD_I64LE, NT, 0, ids);
    gt_eval_out_table(&o, "turbines/row_offset", H5T_NATIVE_INT64, H5T_STD_I64LE, NT + 1, 0, o.goff);
    gt_eval_out_close(&o);
    if (rank == 0)
        GT_INFO("predict: wrote %s: %d turbines, threshold %.6g (%g x the %g quantile %.6g of %lld validation scores)",
                out_path, NT, thr, ec->pdm_margin, ec->pdm_quantile, qv, (long long)nv);
    free(idl), free(ida), free(ids), free(alarm), free(nrows), free(score), free(top), free(ti);
    gt_pdm_shard_free(sh);
}
