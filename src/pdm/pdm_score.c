/* pdm/pdm_score.c: the anomaly score of every row for the LSTM next-step
 * predictor and the normal-behaviour model (see pdm_impl.h, eval.h,
 * docs/evaluation.md).
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
 * The threshold is calibrated on this score (pdm_calib.c). Rows before the first
 * prediction, in turbines shorter than T, or whose window holds a NaN have no
 * score (NaN) and never alarm. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "core/log.h"
#include "data/dataset.h"
#include "dist/reduce.h"
#include "eval/eval.h"
#include "eval/eval_impl.h"
#include "pdm/pdm_impl.h"
#include "task/task.h"

typedef void (*err_visit)(void *ctx, int64_t row, const float *e2);

/* Residuals d[C] = prediction - value of rows [lo, hi) of one turbine (sig
 * (n, C)), row r from the earliest window predicting it; calls fn(ctx, r, d).
 * role NULL
 * (data.pdm_target = next): the next-step errors of every channel, row s + t
 * predicted at step t - 1 of the window starting at s. role (nbm): the
 * model sees the window with every channel but the inputs set to 0 (as in
 * training, gt_pdm_nbm_input) and row s + t is predicted at step t; d is
 * the residual of the target channels, NaN for the others (which therefore
 * neither calibrate nor score). Missing samples (non-finite) enter the model
 * as 0, the channel's training mean (gt_pdm_impute, as in training),
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
                gt_pdm_impute(xb, (int64_t)T * C); /* missing samples: the training mean, as in training */
                if (role) gt_pdm_nbm_input(xb, T, C, role);
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
static const gt_norm_stats *turbine_norm(const gt_eval_model *em, const gt_pdm_shard *sh, const gt_pdm_tinfo *ti, int k,
                                         gt_norm_stats *buf) {
    if (!gt_pdm_data_cfg(&em->data)->norm_turbine) return &em->ns;
    const int C = sh->n_channels;
    uint8_t *skip = GT_MALLOC((size_t)(ti[k].n > 0 ? ti[k].n : 1));
    gt_pdm_fit_skip(sh, k, &em->data, skip);
    const int64_t a = ti[k].holdout_split ? 0 : ti[k].a0, b = ti[k].holdout_split ? 0 : ti[k].b1;
    gt_pdm_item_norm(sh->signals + (ti[k].r0 + a) * C, skip + a, b - a, C, &em->ns, buf);
    free(skip);
    return buf;
}

int gt_pdm_score_parse(const char *s) {
    if (!s || !*s || !strcmp(s, "auto")) return GT_PDM_SCORE_AUTO;
    if (!strcmp(s, "mean")) return GT_PDM_SCORE_MEAN;
    if (!strcmp(s, "channel")) return GT_PDM_SCORE_CHANNEL;
    return -1;
}

double gt_pdm_ewma_span_rows(const gt_eval_config *c, double rate_hz) {
    double span = gt_pdm_eval_cfg(c)->ewma_s >= 0 ? gt_pdm_eval_cfg(c)->ewma_s * rate_hz : rate_hz >= 1.0 ? 10.0 * rate_hz : 36.0;
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

/* eval.nbm_linear: the fit pass (the training split's normal rows [lo, hi) into the turbine's sums) and the
 * wrapper of the other passes (the residuals of the linear stage to the inner visitor) */
typedef struct lin_fit_ctx {
    gt_pdm_lin_state st;
    const uint8_t *excl; /* the turbine's exclusion mask */
    int64_t lo, hi;
    double *rec;
} lin_fit_ctx;
static void lin_fit_visit(void *vc, int64_t r, const float *d) {
    lin_fit_ctx *c = vc;
    if (r < c->lo || r >= c->hi || c->excl[r]) return;
    gt_pdm_lin_accumulate(&c->st, r, d, c->rec);
}
typedef struct lin_wrap {
    gt_pdm_lin_state st;
    err_visit inner;
    void *ictx;
    float *buf; /* [C] */
} lin_wrap;
static void lin_visit(void *vc, int64_t r, const float *d) {
    lin_wrap *w = vc;
    gt_pdm_lin_apply(&w->st, r, d, w->buf);
    w->inner(w->ictx, r, w->buf);
}

/* Collective: the linear stage's weights of model em (normal-behaviour roles role): the sums of every training
 * turbine's training split, added in file order (the same on any number of ranks), solved. */
static void lin_fit(gt_pdm_lin *L, const gt_eval_model *em, const gt_pdm_shard *sh, const gt_pdm_tinfo *ti,
                    const uint8_t *excl, const uint8_t *role, int64_t hop, gt_norm_stats *tns, MPI_Comm comm) {
    const int C = sh->n_channels, nt = sh->n_turbines, NT = sh->n_turbines_total;
    const int T = gt_engine_model(em->e)->cfg.window;
    gt_pdm_lin_init(L, sh, role);
    double *rec = GT_CALLOC((size_t)(nt > 0 ? nt : 1) * (size_t)L->rec, sizeof(double));
    for (int k = 0; k < nt; k++) {
        if (ti[k].holdout) continue;
        const gt_norm_stats *ns = turbine_norm(em, sh, ti, k, tns);
        lin_fit_ctx fc = {.excl = excl + ti[k].r0, .lo = ti[k].a0 + T, .hi = ti[k].b1, .rec = rec + (size_t)k * L->rec};
        gt_pdm_lin_begin(&fc.st, L, sh->signals + ti[k].r0 * C, ns, ti[k].rate);
        window_errors(em->e, ns, role, sh->signals + ti[k].r0 * C, ti[k].n, C, hop, fc.lo, fc.hi, lin_fit_visit, &fc);
    }
    double *all = GT_MALLOC(sizeof(double) * (size_t)NT * (size_t)L->rec + 8);
    gt_eval_gather_items(nt, sh->index, rec, L->rec, NT, all, comm);
    double *sum = GT_CALLOC((size_t)L->rec, sizeof(double));
    gt_pdm_lin_combine(L, all, NT, sum);
    const int n_on = gt_pdm_lin_solve(L, sum);
    int rank;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    if (rank == 0)
        GT_INFO("eval: linear stage (eval.nbm_linear): %d of %d target channels fitted on %.0f training rows, "
                "%d feature channels", n_on, L->n_tg, sum[L->rec - 1], L->nf);
    free(rec), free(all), free(sum);
}

/* eval.envelope (normal-behaviour models): rows whose operating inputs over
 * the model's window up to them leave the range the training rows spanned
 * are not scored. The inputs checked are the operational ones
 * (gt_pdm_channel_kind: wind speed, power, speeds, currents; not ambient
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
static void envelope_apply(const gt_pdm_shard *sh, const gt_pdm_tinfo *ti, const uint8_t *excl, const uint8_t *role,
                           int T, double tol, float *score, MPI_Comm comm, gt_pdm_env_out *eo) {
    const int C = sh->n_channels, nt = sh->n_turbines;
    double lo[GT_DATA_MAX_CHANNELS], hi[GT_DATA_MAX_CHANNELS];
    uint8_t use[GT_DATA_MAX_CHANNELS]; /* the operational inputs */
    for (int c = 0; c < C; c++) {
        lo[c] = INFINITY, hi[c] = -INFINITY;
        use[c] = role[c] == GT_NBM_INPUT &&
                 gt_pdm_channel_kind_desc(sh->channels[c].name, sh->channels[c].desc, sh->channels[c].unit) ==
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
    gt_dist_allreduce_min_d(lo, C, comm);
    gt_dist_allreduce_max_d(hi, C, comm);
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

void gt_pdm_envelope_summary(const gt_pdm_env_out *eo, const gt_pdm_shard *sh, MPI_Comm comm, gt_pdm_envelope *es,
                             const char *who) {
    const int C = sh->n_channels;
    int64_t *by = GT_MALLOC(sizeof(int64_t) * (size_t)C);
    memcpy(by, eo->by_channel, sizeof(int64_t) * (size_t)C);
    gt_dist_allreduce_sum_i64(by, C, comm);
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

/* eval.flat_line: the term of a channel whose variance collapses against its
 * training behaviour (a stuck or frozen sensor: its value repeats while the
 * turbine works). A stuck value sits inside the residual's normal range
 * whenever the operating point is steady, so the residual alone misses it.
 * lv_c(r) = log of the variance of channel c over the L rows up to r (L =
 * the EWMA span in rows, at least 3; missing samples left out, at least L/2
 * finite ones, else no value), floored at (1e-6 x the channel's
 * normalisation std)^2. Over the training and validation rows of normal
 * operation (the calibration mask) of the training turbines (collective):
 * lo_c, med_c = the FLAT_Q and 0.5 quantiles of lv_c. Row r's term:
 * ((lo_c - lv_c(r)) / (med_c - lo_c))^2 where lv_c(r) < lo_c, else 0: below
 * the lowest variance of its training rows, in units of the distance from
 * their typical one to that lowest. A channel that was flat on training
 * rows (lo_c at the floor) never has a term. The largest term over the
 * channels in `use` raises the row's score where it exceeds it (the row's
 * top channel is then that one); rows without a score stay without. */
#define FLAT_Q 0.001
static double win_logvar(const float *x, int C, int c, int64_t r, int64_t L, double floor_var) {
    if (r + 1 < L) return NAN;
    double s = 0;
    int64_t m = 0;
    for (int64_t i = r + 1 - L; i <= r; i++)
        if (isfinite(x[i * C + c])) s += x[i * C + c], m++;
    if (2 * m < L) return NAN;
    const double mu = s / (double)m;
    double v = 0;
    for (int64_t i = r + 1 - L; i <= r; i++)
        if (isfinite(x[i * C + c])) v += ((double)x[i * C + c] - mu) * ((double)x[i * C + c] - mu);
    v /= (double)m;
    return log(v > floor_var ? v : floor_var);
}

static void flat_line_term(const gt_pdm_shard *sh, const gt_pdm_tinfo *ti, const uint8_t *excl, const uint8_t *use,
                           const gt_norm_stats *ns, const gt_eval_config *ec, float *comb, int16_t *topc,
                           MPI_Comm comm) {
    const gt_pdm_eval_config *pcfg = gt_pdm_eval_cfg(ec);
    const int C = sh->n_channels, nt = sh->n_turbines;
    double floor_var[GT_DATA_MAX_CHANNELS];
    int chans[GT_DATA_MAX_CHANNELS], nc = 0; /* use, the same on every rank (from gathered calibration sums) */
    for (int c = 0; c < C; c++) {
        const double sd = ns->std[c];
        if (!use[c] || !(sd > 0) || !isfinite(sd)) continue;
        floor_var[c] = 1e-12 * sd * sd;
        chans[nc++] = c;
    }
    if (nc == 0) return;
    /* the calibration rows' lv, every step-th row, nc values each (NaN: none) */
    int64_t cnt = 0, cap = 0;
    for (int k = 0; k < nt; k++)
        if (!ti[k].holdout) cnt += ti[k].b2 - ti[k].a0;
    cnt = gt_dist_sum_i64(cnt, comm);
    const int64_t rows_cap = pcfg->max_val / nc > 64 ? pcfg->max_val / nc : 64;
    const int64_t step = cnt > rows_cap ? (cnt + rows_cap - 1) / rows_cap : 1;
    for (int k = 0; k < nt; k++)
        if (!ti[k].holdout) cap += (ti[k].b2 - ti[k].a0) / step + 1;
    float *mine = GT_MALLOC(sizeof(float) * (size_t)(cap + 1) * (size_t)nc);
    int64_t n_mine = 0;
    for (int k = 0; k < nt; k++) {
        if (ti[k].holdout) continue;
        const int64_t span = llround(gt_pdm_ewma_span_rows(ec, ti[k].rate)), L = span > 3 ? span : 3;
        const float *x = sh->signals + ti[k].r0 * C;
        for (int64_t r = ti[k].a0; r < ti[k].b2; r += step) {
            if (excl[ti[k].r0 + r]) continue;
            float *o = mine + (size_t)n_mine++ * nc;
            for (int j = 0; j < nc; j++) o[j] = (float)win_logvar(x, C, chans[j], r, L, floor_var[chans[j]]);
        }
    }
    int64_t tot = 0;
    float *all = gt_dist_allgatherv(mine, (int)(n_mine * nc), MPI_FLOAT, &tot,
                                    "eval: too many flat-line calibration values to gather (more than 2^31 over the ranks)", comm);
    const int64_t nr = tot / nc;
    double *col = GT_MALLOC(sizeof(double) * (size_t)(nr + 1));
    double lo[GT_DATA_MAX_CHANNELS], spread[GT_DATA_MAX_CHANNELS];
    for (int j = 0; j < nc; j++) {
        int64_t n = 0;
        for (int64_t i = 0; i < nr; i++)
            if (isfinite(all[i * nc + j])) col[n++] = all[i * nc + j];
        lo[j] = spread[j] = NAN;
        if (n < 2) continue;
        const double l = gt_quantile(col, n, FLAT_Q), med = gt_quantile(col, n, 0.5);
        if (med - l > 1e-6) lo[j] = l, spread[j] = med - l;
    }
    free(col), free(all), free(mine);
    for (int k = 0; k < nt; k++) {
        const int64_t span = llround(gt_pdm_ewma_span_rows(ec, ti[k].rate)), L = span > 3 ? span : 3;
        const float *x = sh->signals + ti[k].r0 * C;
        for (int64_t r = 0; r < ti[k].n; r++) {
            float *v = comb + ti[k].r0 + r;
            if (!isfinite(*v)) continue;
            for (int j = 0; j < nc; j++) {
                if (!isfinite(lo[j])) continue;
                const double lv = win_logvar(x, C, chans[j], r, L, floor_var[chans[j]]);
                if (!(lv < lo[j])) continue;
                const double z = (lo[j] - lv) / spread[j], t = z * z;
                if (t > *v) *v = (float)t, topc[ti[k].r0 + r] = (int16_t)chans[j];
            }
        }
    }
}

int gt_pdm_max_window(const gt_eval_model *ems, int n_models) {
    int T = 1;
    for (int j = 0; j < n_models; j++)
        if (gt_engine_config(ems[j].e)->window > T) T = gt_engine_config(ems[j].e)->window;
    return T;
}


/* d: the first model's data settings with data.care_event resolved (gt_pdm_care_select) */
/* T: the longest window of the models. A turbine's first rows are predicted with less context than the
 * others (the first window's early steps) and start the EWMA of the score: their residuals are several
 * times the turbine's usual ones, so the rows up to T + 3 EWMA spans from its start calibrate nothing
 * (with eval.calibrate = train_val they set the threshold). */
gt_pdm_tinfo *gt_pdm_plan_turbines(const gt_pdm_shard *sh, const gt_data_config *d, const gt_eval_config *ec, int T) {
    const int cal_train = gt_pdm_eval_cfg(ec)->calibrate_train;
    const gt_pdm_data_config *pc = gt_pdm_data_cfg(d);
    gt_pdm_tinfo *ti = GT_CALLOC((size_t)(sh->n_turbines > 0 ? sh->n_turbines : 1), sizeof(gt_pdm_tinfo));
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
        const int64_t warm = T + (int64_t)ceil(3 * gt_pdm_ewma_span_rows(ec, ti[k].rate));
        if (ti[k].c1 < warm) ti[k].c1 = warm < ti[k].b2 ? warm : ti[k].b2;
        ti[k].skip = r.excluded || !gt_data_filter_has(&d->items, sh->id[k]) ||
                     !gt_data_filter_has(&pc->farms, sh->farm[k]) ||
                     !gt_data_filter_has(&pc->machine_types, sh->machine_type[k]);
        ti[k].holdout_split = ti[k].holdout;
        if (ti[k].skip) ti[k].holdout = 1; /* no calibration rows */
    }
    return ti;
}


/* one model's settings in gt_pdm_scores: its normal-behaviour roles, window and hop, score mode, linear stage */
typedef struct model_pass {
    const gt_eval_model *em;
    uint8_t role_buf[GT_DATA_MAX_CHANNELS];
    const uint8_t *role; /* data.pdm_target = nbm: role_buf; NULL: every channel has a residual */
    int T, chan, chq, use_lin;
    int64_t hop;
    gt_pdm_lin lin;
    float *lin_buf;
} model_pass;

/* the model's checks against the file, its roles (data.pdm_target = nbm: the residual of the condition channels,
 * the run's stored roles), window, hop and score mode */
static void model_pass_init(model_pass *mp, const char *data_file, const gt_pdm_shard *sh, const gt_eval_model *em,
                            const gt_eval_config *ec) {
    const gt_pdm_eval_config *pcfg = gt_pdm_eval_cfg(ec);
    const int C = sh->n_channels;
    gt_model *m = gt_engine_model(em->e);
    gt_task_pdm.check_model(&m->cfg, em->name ? em->name : "model");
    GT_CHECK(m->cfg.n_in == C, GT_EXIT_DATA, "%s: the model has %d channels, the file %d",
             em->name ? em->name : "model", m->cfg.n_in, C);
    GT_CHECK(em->ns.n == C, GT_EXIT_DATA, "%s: normalisation statistics for %d features, the file has %d channels",
             em->name ? em->name : "model", em->ns.n, C);
    mp->em = em;
    mp->role = NULL;
    if (gt_pdm_data_cfg(&em->data)->target == GT_PDM_TARGET_NBM) {
        int n_in, n_tg;
        gt_pdm_nbm_roles(&em->data, sh->channels, C, mp->role_buf, &n_in, &n_tg);
        GT_CHECK(n_in > 0 && n_tg > 0, GT_EXIT_USAGE,
                 "%s: model %s is a normal-behaviour model (data.pdm_target = nbm) but the file has %d input "
                 "and %d target channels", data_file, em->name ? em->name : "?", n_in, n_tg);
        mp->role = mp->role_buf;
    }
    const int T = m->cfg.window;
    int64_t hop = pcfg->hop > 0 ? pcfg->hop : T / 2;
    if (hop < 1) hop = 1;
    if (hop > T - 1) hop = T - 1 > 0 ? T - 1 : 1;
    mp->T = T, mp->hop = hop;
    mp->chan = pcfg->score == GT_PDM_SCORE_CHANNEL || (pcfg->score == GT_PDM_SCORE_AUTO && mp->role);
    mp->chq = mp->chan && pcfg->channel_quantile > 0;
}

/* Collective: eval.channel_quantile: room for the EWMA states of evenly thinned calibration rows (at most
 * pdm_max_val values over the ranks), every qstep-th row; keep_end [nt + 1] */
static float *keep_alloc(const gt_pdm_shard *sh, const gt_pdm_tinfo *ti, const gt_eval_config *ec, MPI_Comm comm,
                         int64_t *qstep, int64_t **keep_end) {
    const gt_pdm_eval_config *pcfg = gt_pdm_eval_cfg(ec);
    const int C = sh->n_channels, nt = sh->n_turbines;
    int64_t cnt = 0, cap = 0, rows_cap = pcfg->max_val / C > 64 ? pcfg->max_val / C : 64;
    for (int k = 0; k < nt; k++)
        if (!ti[k].holdout) cnt += ti[k].b2 - ti[k].c1;
    cnt = gt_dist_sum_i64(cnt, comm);
    *qstep = cnt > rows_cap ? (cnt + rows_cap - 1) / rows_cap : 1;
    for (int k = 0; k < nt; k++)
        if (!ti[k].holdout) cap += (ti[k].b2 - ti[k].c1) / *qstep + 1;
    float *keep = GT_MALLOC(sizeof(float) * (size_t)(cap + 1) * C);
    *keep_end = GT_CALLOC((size_t)(nt + 1), sizeof(int64_t));
    return keep;
}

/* pass 1: per turbine the sums of the channel errors on its calibration rows, vs [nt][3][C] (sum d^2, count,
 * sum d), and the kept EWMA states (keep, keep_end); returns the number of kept rows */
static int64_t calib_pass(const model_pass *mp, const gt_pdm_shard *sh, const gt_pdm_tinfo *ti, const uint8_t *excl,
                          const gt_eval_config *ec, gt_norm_stats *tns, double *vs, float *keep, int64_t qstep,
                          int64_t *keep_end) {
    const int C = sh->n_channels, nt = sh->n_turbines, chan = mp->chan, chq = mp->chq;
    int64_t n_keep = 0;
    for (int k = 0; k < nt; k++) {
        if (chq) keep_end[k + 1] = n_keep;
        if (ti[k].holdout) continue;
        double *v = vs + (size_t)k * 3 * C;
        const double span = gt_pdm_ewma_span_rows(ec, ti[k].rate);
        chan_ewma ch = {0};
        if (chan) chan_ewma_init(&ch, C, span);
        int64_t lo1 = ti[k].c1; /* channel mode: the state warms up over 40 spans before the calibration rows */
        if (chan) lo1 -= mp->T + (int64_t)ceil(40 * span);
        if (lo1 < 0) lo1 = 0;
        val_ctx vc = {excl + ti[k].r0, v, v + C, v + 2 * C, C, chan ? &ch : NULL, ti[k].c1,
                      keep ? keep + (size_t)n_keep * C : NULL, qstep, 0, 0};
        const gt_norm_stats *nsk = turbine_norm(mp->em, sh, ti, k, tns);
        lin_wrap lw = {.inner = val_visit, .ictx = &vc, .buf = mp->lin_buf};
        if (mp->use_lin) gt_pdm_lin_begin(&lw.st, &mp->lin, sh->signals + ti[k].r0 * C, nsk, ti[k].rate);
        window_errors(mp->em->e, nsk, mp->role, sh->signals + ti[k].r0 * C, ti[k].n, C, mp->hop, lo1, ti[k].b2,
                      mp->use_lin ? lin_visit : val_visit, mp->use_lin ? (void *)&lw : (void *)&vc);
        chan_ewma_free(&ch);
        n_keep += vc.n_keep;
        if (chq) keep_end[k + 1] = n_keep;
    }
    return n_keep;
}

/* eval.turbine_offset: a turbine's mean residual on its calibration rows is its sensors' offset against the
 * farm-wide model; it is removed from its residuals (and from the squares v_c averages: sum (d - b)^2 =
 * sum d^2 - n b^2). Returns the offsets [nt][C] (0 without eval.turbine_offset). */
static double *turbine_offsets(double *vs, int nt, int C, const gt_eval_config *ec) {
    double *bias = GT_CALLOC((size_t)(nt > 0 ? nt : 1) * C, sizeof(double));
    for (int k = 0; k < nt && gt_pdm_eval_cfg(ec)->turbine_offset; k++) {
        double *v = vs + (size_t)k * 3 * C;
        for (int c = 0; c < C; c++)
            if (v[C + c] > 0) {
                bias[(size_t)k * C + c] = v[2 * C + c] / v[C + c];
                v[c] -= v[C + c] * bias[(size_t)k * C + c] * bias[(size_t)k * C + c];
            }
    }
    return bias;
}

/* Collective: each channel's quantile of (m - bias)^2 over the kept rows of every rank; frees keep, keep_end */
static void channel_quantiles(float *keep, int64_t *keep_end, int64_t n_keep, const double *bias, int nt, int C,
                              const gt_eval_config *ec, MPI_Comm comm, double *chq_w) {
    for (int k = 0; k < nt; k++)
        for (int64_t i = keep_end[k]; i < keep_end[k + 1]; i++)
            for (int c = 0; c < C; c++) {
                const double e = (double)keep[i * C + c] - bias[(size_t)k * C + c];
                keep[i * C + c] = (float)(e * e);
            }
    int64_t tot = 0;
    float *kall = gt_dist_allgatherv(keep, (int)(n_keep * C), MPI_FLOAT, &tot,
                                     "eval: too many calibration values to gather (more than 2^31 over the ranks)",
                                     comm);
    const int64_t nr = tot / C;
    double *col = GT_MALLOC(sizeof(double) * (size_t)(nr + 1));
    for (int c = 0; c < C; c++) {
        int64_t n = 0;
        for (int64_t i = 0; i < nr; i++)
            if (isfinite(kall[i * C + c])) col[n++] = kall[i * C + c];
        chq_w[c] = n > 0 ? gt_quantile(col, n, gt_pdm_eval_cfg(ec)->channel_quantile) : NAN;
    }
    free(col), free(kall), free(keep), free(keep_end);
}

/* the channels' weights inv[c] = 1 / v_c from the gathered sums all [NT][3][C] (or eval.channel_quantile's
 * chq_w); scored[c] = 1 for a channel in the score; a channel without a calibration row is left out */
static void channel_weights(const gt_pdm_shard *sh, const uint8_t *role, const double *all, int chq,
                            const double *chq_w, int rank, double *inv, uint8_t *scored) {
    const int C = sh->n_channels;
    int n_scored = 0, n_silent = 0;
    char silent[200] = "";
    for (int c = 0; c < C; c++) {
        inv[c] = 0; /* 0: never in the score */
        if (role && role[c] != GT_NBM_TARGET) continue; /* no residual */
        double s = 0, n = 0;
        for (int f = 0; f < sh->n_turbines_total; f++)
            s += all[(size_t)f * 3 * C + c], n += all[(size_t)f * 3 * C + C + c];
        if (!(n > 0)) { /* no residual on any calibration row: the channel is missing there (a dead sensor) */
            size_t l = strlen(silent);
            if (n_silent++ < 4) snprintf(silent + l, sizeof silent - l, "%s%s", l ? ", " : "", sh->channels[c].name);
            continue;
        }
        double v = chq && isfinite(chq_w[c]) ? chq_w[c] : s / n;
        inv[c] = 1.0 / (v > 1e-12 ? v : 1e-12);
        scored[c] = 1;
        n_scored++;
    }
    GT_CHECK(n_scored > 0, GT_EXIT_DATA,
             "eval: no validation rows of normal operation to calibrate the anomaly score (every turbine held "
             "out, data.split_val = 0, every channel missing there, or no validation row past a turbine's first "
             "window + 3 EWMA spans: eval.ewma_s too long)");
    if (n_silent && rank == 0)
        GT_WARN("eval: %d channel(s) have no sample on the calibration rows (%s%s): they are left out of the "
                "anomaly score", n_silent, silent, n_silent > 4 ? ", ..." : "");
}

/* pass 2: raw score of every row (sc) and its channel (top), EWMA per turbine */
static void raw_pass(const model_pass *mp, const gt_pdm_shard *sh, const gt_pdm_tinfo *ti, const gt_eval_config *ec,
                     int all_rows, int Tmax, const double *inv, const double *bias, gt_norm_stats *tns, float *sc,
                     int16_t *top) {
    const int C = sh->n_channels, nt = sh->n_turbines, T = mp->T, chan = mp->chan;
    for (int k = 0; k < nt; k++) {
        float *raw = sc + ti[k].r0;
        for (int64_t r = 0; r < ti[k].n; r++) raw[r] = NAN, top[ti[k].r0 + r] = -1;
        /* evaluation needs the calibration rows onwards (training turbines), after a
         * warm-up of T + 40 EWMA spans (the EWMA state forgets its start: e^-80) */
        const double span = gt_pdm_ewma_span_rows(ec, ti[k].rate);
        int64_t lo2 = all_rows || ti[k].holdout ? 0 : ti[k].c1 - T - (int64_t)ceil(40 * span);
        if (lo2 < 0) lo2 = 0;
        if (ti[k].skip && !all_rows) continue;
        chan_ewma ch = {0};
        if (chan) chan_ewma_init(&ch, C, span);
        raw_ctx rc = {raw, inv, bias + (size_t)k * C, C, chan ? &ch : NULL, top + ti[k].r0};
        const gt_norm_stats *nsk = turbine_norm(mp->em, sh, ti, k, tns);
        lin_wrap lw = {.inner = raw_visit, .ictx = &rc, .buf = mp->lin_buf};
        if (mp->use_lin) gt_pdm_lin_begin(&lw.st, &mp->lin, sh->signals + ti[k].r0 * C, nsk, ti[k].rate);
        window_errors(mp->em->e, nsk, mp->role, sh->signals + ti[k].r0 * C, ti[k].n, C, mp->hop, lo2, ti[k].n,
                      mp->use_lin ? lin_visit : raw_visit, mp->use_lin ? (void *)&lw : (void *)&rc);
        chan_ewma_free(&ch);
        if (!chan) gt_ewma(raw + lo2, ti[k].n - lo2, 2.0 / (span + 1.0), raw + lo2); /* channel: smoothed already */
        /* the turbine's first rows (plan_turbines: no calibration there) are not scored either: predicted
         * with less context, they start the EWMA and raised an alarm at the start of every turbine */
        const int64_t warm = Tmax + (int64_t)ceil(3 * span);
        for (int64_t r = 0; r < warm && r < ti[k].n; r++) raw[r] = NAN, top[ti[k].r0 + r] = -1;
    }
}

/* Collective: model em's score of every row in sc (its channel in top): calibrated on the validation rows
 * (pass 1), then scored (pass 2); scored[c] = 1 for the channels with a residual term */
static void model_scores(const char *data_file, const gt_pdm_shard *sh, const gt_pdm_tinfo *ti, const gt_eval_model *em,
                         const gt_eval_config *ec, int all_rows, const uint8_t *excl, int Tmax, gt_norm_stats *tns,
                         MPI_Comm comm, float *sc, int16_t *top, uint8_t *scored) {
    const int C = sh->n_channels, nt = sh->n_turbines;
    int rank;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    model_pass mp;
    model_pass_init(&mp, data_file, sh, em, ec);
    /* pass 1: channel error scales from validation rows */
    /* per turbine: sum d^2 [C], count [C], sum d [C] */
    double *vs = GT_CALLOC((size_t)(nt > 0 ? nt : 1) * 3 * C, sizeof(double));
    float *keep = NULL;
    int64_t qstep = 1, *keep_end = NULL;
    if (mp.chq) keep = keep_alloc(sh, ti, ec, comm, &qstep, &keep_end);
    mp.use_lin = mp.role && gt_pdm_eval_cfg(ec)->nbm_linear;
    if (mp.use_lin) lin_fit(&mp.lin, em, sh, ti, excl, mp.role, mp.hop, tns, comm);
    mp.lin_buf = mp.use_lin ? GT_MALLOC(sizeof(float) * (size_t)C) : NULL;
    const int64_t n_keep = calib_pass(&mp, sh, ti, excl, ec, tns, vs, keep, qstep, keep_end);
    double *bias = turbine_offsets(vs, nt, C, ec);
    double *all = GT_MALLOC(sizeof(double) * (size_t)sh->n_turbines_total * 3 * C + 8);
    gt_eval_gather_items(nt, sh->index, vs, 3 * C, sh->n_turbines_total, all, comm);
    double chq_w[GT_DATA_MAX_CHANNELS];
    if (mp.chq) channel_quantiles(keep, keep_end, n_keep, bias, nt, C, ec, comm, chq_w);
    double inv[GT_DATA_MAX_CHANNELS];
    channel_weights(sh, mp.role, all, mp.chq, chq_w, rank, inv, scored);
    free(vs), free(all);
    raw_pass(&mp, sh, ti, ec, all_rows, Tmax, inv, bias, tns, sc, top);
    free(bias);
    if (mp.use_lin) gt_pdm_lin_free(&mp.lin);
    free(mp.lin_buf);
}

/* eval.envelope: the roles of the first normal-behaviour model among the models (in any order of eval.models),
 * the longest window */
static void envelope_of_models(const gt_pdm_shard *sh, const gt_pdm_tinfo *ti, const uint8_t *excl,
                               const gt_eval_model *ems, int n_models, int Tmax, const gt_eval_config *ec,
                               float *comb, MPI_Comm comm, gt_pdm_env_out *env) {
    const gt_pdm_eval_config *pcfg = gt_pdm_eval_cfg(ec);
    memset(env, 0, sizeof *env);
    int nbm = -1;
    for (int j = 0; j < n_models && nbm < 0; j++)
        if (gt_pdm_data_cfg(&ems[j].data)->target == GT_PDM_TARGET_NBM) nbm = j;
    if (pcfg->envelope >= 0 && nbm >= 0) {
        uint8_t role[GT_DATA_MAX_CHANNELS];
        int n_in, n_tg;
        gt_pdm_nbm_roles(&ems[nbm].data, sh->channels, sh->n_channels, role, &n_in, &n_tg);
        envelope_apply(sh, ti, excl, role, Tmax, pcfg->envelope, comb, comm, env);
    }
}

float *gt_pdm_scores(const char *data_file, const gt_pdm_shard *sh, const gt_pdm_tinfo *ti, const gt_eval_model *ems,
                         int n_models, const gt_eval_config *ec, int all_rows, MPI_Comm comm, double *thr,
                         double *qv_out, int64_t *n_val, int *level, int16_t **top_out, gt_pdm_env_out *env) {
    const gt_pdm_eval_config *pcfg = gt_pdm_eval_cfg(ec);
    const int nt = sh->n_turbines;
    const int64_t N = sh->n_rows > 0 ? sh->n_rows : 1;
    float *comb = GT_MALLOC(sizeof(float) * (size_t)N);
    int16_t *topc = GT_MALLOC(sizeof(int16_t) * (size_t)N);
    for (int64_t i = 0; i < N; i++) comb[i] = NAN, topc[i] = -1;
    float *sc = n_models > 1 ? GT_MALLOC(sizeof(float) * (size_t)N) : comb;
    int16_t *top = n_models > 1 ? GT_MALLOC(sizeof(int16_t) * (size_t)N) : topc;
    double rate_max = 0;
    for (int k = 0; k < nt; k++)
        if (ti[k].rate > rate_max) rate_max = ti[k].rate;
    const int Tmax = gt_pdm_max_window(ems, n_models);
    const int64_t guard = Tmax + (int64_t)ceil(3 * gt_pdm_ewma_span_rows(ec, rate_max));
    const gt_pdm_data_config *pc = gt_pdm_data_cfg(&ems[0].data);
    uint8_t *excl = gt_pdm_exclusion_mask(sh, guard, &pc->conditions, &pc->train_conditions);
    gt_norm_stats *tns = GT_MALLOC(sizeof *tns); /* data.norm = turbine: one turbine's statistics */
    uint8_t scored[GT_DATA_MAX_CHANNELS] = {0}; /* channels with a residual term in some model */
    for (int j = 0; j < n_models; j++) {
        const gt_eval_model *em = &ems[j];
        model_scores(data_file, sh, ti, em, ec, all_rows, excl, Tmax, tns, comm, sc, top, scored);
        if (n_models > 1) {
            int64_t nv;
            double q = gt_pdm_val_quantile(sh, ti, excl, sc, pcfg->quantile, pcfg->max_val, &nv, comm);
            GT_CHECK(q > 0 && isfinite(q), GT_EXIT_DATA, "eval: model %s has a zero validation score quantile",
                     em->name ? em->name : "?");
            for (int64_t i = 0; i < sh->n_rows; i++) {
                float v = (float)(sc[i] / q);
                if (isfinite(v) && !(comb[i] >= v)) comb[i] = v, topc[i] = top[i];
            }
        }
    }
    if (pcfg->flat_line) flat_line_term(sh, ti, excl, scored, &ems[0].ns, ec, comb, topc, comm);
    if (sc != comb) free(sc);
    if (top != topc) free(top);
    *top_out = topc;
    free(tns);
    envelope_of_models(sh, ti, excl, ems, n_models, Tmax, ec, comb, comm, env);
    for (int64_t i = 0; i < N; i++) /* a row not scored names no channel */
        if (!isfinite(comb[i])) topc[i] = -1;
    *level = gt_pdm_threshold(sh, ti, excl, comb, ec, comm, thr, qv_out, n_val);
    free(excl);
    return comb;
}
