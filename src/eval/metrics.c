/* eval/metrics.c: NILM and anomaly-detection metrics (see metrics.h). */
#include "eval/metrics.h"

#include "core/check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ NILM -- */

void gt_nilm_acc_add(gt_nilm_acc *a, double y, double yhat, double on_power_w, double hours) {
    gt_nilm_acc_add_state(a, y, yhat, yhat > on_power_w, on_power_w, hours);
}

void gt_nilm_acc_add_state(gt_nilm_acc *a, double y, double yhat, int pon, double on_power_w, double hours) {
    double e = yhat - y;
    a->n += 1;
    a->sum_abs_err += fabs(e);
    a->sum_sq_err += e * e;
    a->sum_y += y;
    a->sum_yhat += yhat;
    a->sum_y2 += y * y;
    int on = y > on_power_w;
    pon = pon != 0;
    a->tp += on && pon;
    a->fp += !on && pon;
    a->fn += on && !pon;
    a->tn += !on && !pon;
    a->wh_true += y * hours;
    a->wh_pred += yhat * hours;
}

/* Runs of value v of at most maxlen steps, bounded on both sides by the other
 * value inside one segment, take the other value. Returns the steps changed. */
static int64_t flip_short_runs(uint8_t *on, const uint8_t *brk, int64_t n, uint8_t v, int64_t maxlen) {
    int64_t changed = 0;
    for (int64_t i = 0; i < n;) {
        if (on[i] != v) {
            i++;
            continue;
        }
        int64_t j = i + 1;
        while (j < n && on[j] == v && !(brk && brk[j])) j++;
        /* [i, j) is a run of v; a neighbour inside the segment is the other value */
        int left = i > 0 && !(brk && brk[i]), right = j < n && !(brk && brk[j]);
        if (left && right && j - i <= maxlen) {
            memset(on + i, !v, (size_t)(j - i));
            changed += j - i;
        }
        i = j;
    }
    return changed;
}

int64_t gt_nilm_state_filter(uint8_t *on, const uint8_t *brk, int64_t n, double step_s, double fill_s,
                             double min_on_s) {
    if (!(step_s > 0)) return 0;
    /* off runs of L steps with L step_s <= fill_s; on runs with L step_s < min_on_s */
    int64_t fill = (int64_t)floor(fill_s / step_s + 1e-9), short_on = (int64_t)ceil(min_on_s / step_s - 1e-9) - 1;
    int64_t changed = 0;
    if (fill > 0) changed += flip_short_runs(on, brk, n, 0, fill);
    if (short_on > 0) changed += flip_short_runs(on, brk, n, 1, short_on);
    return changed;
}

void gt_nilm_acc_merge(gt_nilm_acc *d, const gt_nilm_acc *s) {
    d->n += s->n;
    d->sum_abs_err += s->sum_abs_err;
    d->sum_sq_err += s->sum_sq_err;
    d->sum_y += s->sum_y;
    d->sum_yhat += s->sum_yhat;
    d->sum_y2 += s->sum_y2;
    d->tp += s->tp;
    d->fp += s->fp;
    d->fn += s->fn;
    d->tn += s->tn;
    d->wh_true += s->wh_true;
    d->wh_pred += s->wh_pred;
}

void gt_nilm_metrics_from_acc(const gt_nilm_acc *a, gt_nilm_metrics *m) {
    m->n = a->n;
    m->mae_w = a->n > 0 ? a->sum_abs_err / a->n : NAN;
    m->sae = a->sum_y > 0 ? fabs(a->sum_yhat - a->sum_y) / a->sum_y : NAN;
    m->nde = a->sum_y2 > 0 ? sqrt(a->sum_sq_err / a->sum_y2) : NAN;
    m->precision = a->tp + a->fp > 0 ? a->tp / (a->tp + a->fp) : NAN;
    m->recall = a->tp + a->fn > 0 ? a->tp / (a->tp + a->fn) : NAN;
    m->f1 = a->tp + a->fn > 0 ? 2 * a->tp / (2 * a->tp + a->fp + a->fn) : NAN;
    m->ea = a->sum_y > 0 ? 1.0 - a->sum_abs_err / (2.0 * a->sum_y) : NAN;
    m->energy_true_wh = a->wh_true;
    m->energy_pred_wh = a->wh_pred;
}

/* --------------------------------------------------------------- anomaly -- */

void gt_ewma(const float *x, int64_t n, double alpha, float *out) {
    double s = NAN;
    for (int64_t t = 0; t < n; t++) {
        double v = x[t];
        if (isfinite(v)) s = isfinite(s) ? alpha * v + (1.0 - alpha) * s : v;
        out[t] = (float)s;
    }
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double gt_quantile(double *v, int64_t n, double q) {
    if (n <= 0) return NAN;
    qsort(v, (size_t)n, sizeof(double), cmp_d);
    if (q <= 0) return v[0];
    if (q >= 1) return v[n - 1];
    double h = (double)(n - 1) * q;
    int64_t lo = (int64_t)floor(h);
    int64_t hi = lo + 1 < n ? lo + 1 : n - 1;
    return v[lo] + (h - (double)lo) * (v[hi] - v[lo]);
}

int64_t gt_alarm_runs(const float *score, int64_t n, double thr, int64_t min_len, int64_t merge_gap,
                      gt_alarm_run *out) {
    int64_t k = 0;
    for (int64_t t = 0; t < n;) {
        if (!(score[t] > thr)) {
            t++;
            continue;
        }
        int64_t s = t;
        while (t < n && score[t] > thr) t++;
        if (k > 0 && s - out[k - 1].end <= merge_gap) out[k - 1].end = t;
        else out[k++] = (gt_alarm_run){s, t, 0};
    }
    int64_t m = 0;
    for (int64_t i = 0; i < k; i++)
        if (out[i].end - out[i].start >= (min_len > 1 ? min_len : 1)) out[m++] = out[i];
    return m;
}

void gt_pdm_acc_merge(gt_pdm_acc *d, const gt_pdm_acc *s) {
    const double *a = (const double *)s;
    double *b = (double *)d;
    for (size_t i = 0; i < sizeof(gt_pdm_acc) / sizeof(double); i++) b[i] += a[i];
}

static gt_pdm_acc *cond_acc(gt_pdm_acc *by_cond, int n_cond, const int32_t *cond, int64_t row) {
    int c = cond ? cond[row] : 0;
    return by_cond && c >= 0 && c < n_cond ? &by_cond[c] : NULL;
}

int64_t gt_pdm_score_rows(const float *score, const uint8_t *labels, const int32_t *cond, int64_t n,
                          const gt_alarm_run *events, int n_events, double thr, int64_t min_len,
                          int64_t merge_gap, double rate_hz, gt_pdm_acc *total, gt_pdm_acc *by_cond, int n_cond,
                          uint8_t *alarm_flag) {
    if (n <= 0) return 0;
    gt_alarm_run *al = GT_MALLOC(sizeof(gt_alarm_run) * (size_t)(n / 2 + 1));
    int64_t na = gt_alarm_runs(score, n, thr, min_len, merge_gap, al);
    uint8_t *flag = alarm_flag ? alarm_flag : GT_CALLOC((size_t)n, 1);
    if (alarm_flag) memset(flag, 0, (size_t)n);
    for (int64_t i = 0; i < na; i++) memset(flag + al[i].start, 1, (size_t)(al[i].end - al[i].start));
    const double day_rows = 86400.0 * rate_hz;

    /* point metrics and time per condition */
    double *crows = GT_CALLOC((size_t)(n_cond > 0 ? n_cond : 1), sizeof(double));
    for (int64_t t = 0; t < n; t++) {
        int anom = labels[t] != 0, al_on = flag[t] != 0;
        gt_pdm_acc *accs[2] = {total, cond_acc(by_cond, n_cond, cond, t)};
        for (int k = 0; k < 2; k++) {
            gt_pdm_acc *a = accs[k];
            if (!a) continue;
            a->rows += 1;
            a->rows_normal += !anom;
            a->tp += anom && al_on;
            a->fp += !anom && al_on;
            a->fn += anom && !al_on;
            a->tn += !anom && !al_on;
        }
        gt_pdm_acc *c = cond_acc(by_cond, n_cond, cond, t);
        if (c) crows[c - by_cond] += 1;
    }
    total->turbine_days += (double)n / day_rows;
    for (int c = 0; c < n_cond && by_cond; c++) by_cond[c].turbine_days += crows[c] / day_rows;
    free(crows);
    /* events: detected when an alarm run overlaps; delay from the first alarm row */
    for (int e = 0; e < n_events; e++) {
        int64_t s = events[e].start < 0 ? 0 : events[e].start, z = events[e].end > n ? n : events[e].end;
        if (z <= s) continue;
        int64_t first = -1;
        for (int64_t i = 0; i < na && first < 0; i++)
            if (al[i].start < z && al[i].end > s) first = al[i].start > s ? al[i].start : s;
        gt_pdm_acc *accs[2] = {total, cond_acc(by_cond, n_cond, cond, s)};
        for (int k = 0; k < 2; k++) {
            gt_pdm_acc *a = accs[k];
            if (!a) continue;
            a->n_events += 1;
            a->n_anomaly_events += !events[e].status;
            if (first >= 0) {
                double delay = (double)(first - s);
                a->n_detected += 1;
                a->n_anomaly_detected += !events[e].status;
                a->delay_s_sum += delay / rate_hz;
                double es = 1.0 - delay / (double)(z - s);
                a->earliness_sum += es > 0 ? es : 0;
            }
        }
    }
    /* alarms: true when overlapping at least one event */
    for (int64_t i = 0; i < na; i++) {
        int hit = 0;
        for (int e = 0; e < n_events && !hit; e++) {
            int64_t s = events[e].start < 0 ? 0 : events[e].start, z = events[e].end > n ? n : events[e].end;
            hit = z > s && al[i].start < z && al[i].end > s;
        }
        gt_pdm_acc *accs[2] = {total, cond_acc(by_cond, n_cond, cond, al[i].start)};
        for (int k = 0; k < 2; k++) {
            if (!accs[k]) continue;
            accs[k]->n_alarms += 1;
            accs[k]->n_alarms_true += hit;
        }
    }
    if (!alarm_flag) free(flag);
    free(al);
    return na;
}

double gt_fbeta(double p, double r, double beta) {
    if (isnan(p) || isnan(r)) return NAN;
    double b2 = beta * beta;
    return p + r > 0 ? (1 + b2) * p * r / (b2 * p + r) : 0.0;
}

double gt_care_score(double coverage, double accuracy, double reliability, double earliness) {
    if (isnan(accuracy) || isnan(earliness)) return NAN;
    if (isnan(coverage)) coverage = 0;
    if (isnan(reliability)) reliability = 0;
    if (accuracy < 0.5) return accuracy;
    return (coverage + 2.0 * accuracy + reliability + earliness) / 5.0;
}

void gt_pdm_metrics_from_acc(const gt_pdm_acc *a, gt_pdm_metrics *m) {
    m->point_precision = a->tp + a->fp > 0 ? a->tp / (a->tp + a->fp) : NAN;
    m->point_recall = a->tp + a->fn > 0 ? a->tp / (a->tp + a->fn) : NAN;
    m->point_f05 = gt_fbeta(m->point_precision, m->point_recall, 0.5);
    m->n_events = a->n_events;
    m->n_detected = a->n_detected;
    m->event_recall = a->n_events > 0 ? a->n_detected / a->n_events : NAN;
    m->n_anomaly_events = a->n_anomaly_events;
    m->n_anomaly_detected = a->n_anomaly_detected;
    m->anomaly_recall = a->n_anomaly_events > 0 ? a->n_anomaly_detected / a->n_anomaly_events : NAN;
    m->event_precision = a->n_alarms > 0 ? a->n_alarms_true / a->n_alarms : NAN;
    m->event_f05 = gt_fbeta(m->event_precision, m->event_recall, 0.5);
    m->false_alarms_per_turbine_day = a->turbine_days > 0 ? (a->n_alarms - a->n_alarms_true) / a->turbine_days : NAN;
    m->detection_delay_s_mean = a->n_detected > 0 ? a->delay_s_sum / a->n_detected : NAN;
    m->turbine_days = a->turbine_days;
    m->accuracy = a->rows_normal > 0 ? a->tn / a->rows_normal : NAN;
    m->earliness = a->n_events > 0 ? a->earliness_sum / a->n_events : NAN;
    /* coverage: point F0.5 on anomalous rows; 0 when rows are anomalous but none alarmed */
    double cov = m->point_f05;
    if (isnan(cov) && a->tp + a->fn > 0) cov = 0;
    double rel = m->event_f05;
    if (isnan(rel) && a->n_events > 0) rel = 0;
    m->care = a->n_events > 0 ? gt_care_score(cov, m->accuracy, rel, m->earliness) : NAN;
}

/* ------------------------------------------------- CARE to Compare protocol -- */

int gt_care_ignores_normal_index(int farm) { return farm == 0; }

double gt_care_earliness_weight(int64_t i, int64_t L) {
    if (L <= 0 || i < 0 || i >= L) return 0;
    if (4 * i < L) return 1.0;
    double x = 16.0 * (double)i / (double)(4 * L - 1);
    return (4.0 - x) / 3.0;
}

/* F-beta from counts; 0 when tp = 0 (scikit-learn's zero_division default) */
static double fbeta_counts(double tp, double fp, double fn, double beta) {
    double b2 = beta * beta;
    return tp > 0 ? (1 + b2) * tp / ((1 + b2) * tp + b2 * fn + fp) : 0.0;
}

void gt_care_event_score(const uint8_t *pred, const uint8_t *normal, int64_t n, int64_t ev_start, int64_t ev_end,
                         int anomaly, double criticality_threshold, gt_care_event_eval *out) {
    memset(out, 0, sizeof *out);
    out->anomaly = anomaly != 0;
    int64_t s = ev_start < 0 ? 0 : ev_start, z = ev_end > n ? n : ev_end;
    if (z < s) z = s;
    double tp = 0, fp = 0, fn = 0, tn = 0;
    for (int64_t r = 0; r < n; r++) {
        if (!normal[r]) continue; /* only rows of normal status are scored */
        int gt = anomaly && r >= s && r < z, p = pred[r] != 0;
        tp += gt && p, fp += !gt && p, fn += gt && !p, tn += !gt && !p;
    }
    double m = tp + fp + fn + tn;
    out->accuracy = m > 0 ? (tp + tn) / m : NAN;
    out->coverage = anomaly ? fbeta_counts(tp, fp, fn, GT_CARE_BETA) : NAN;
    out->earliness = NAN;
    if (anomaly) {
        double sw = 0, sp = 0;
        for (int64_t r = s; r < z; r++) {
            double w = gt_care_earliness_weight(r - s, z - s);
            sw += w;
            sp += w * (pred[r] != 0);
        }
        out->earliness = sw > 0 ? sp / sw : NAN;
    }
    double c = 0, cmax = 0;
    int64_t end = ev_end < n ? ev_end : n;
    for (int64_t r = 0; r < end; r++) {
        if (normal[r]) c = pred[r] ? (c < GT_CARE_MAX_CRITICALITY ? c + 1 : c) : (c > 1 ? c - 1 : 0);
        if (c > cmax) cmax = c;
    }
    out->max_criticality = cmax;
    out->detected = cmax >= criticality_threshold;
}

void gt_care_protocol_final(const gt_care_event_eval *ev, int n, gt_care_protocol *o) {
    memset(o, 0, sizeof *o);
    o->score = o->coverage = o->accuracy = o->earliness = o->reliability = NAN;
    double sc = 0, nc = 0, sa = 0, na = 0, se = 0, ne = 0, tp = 0, fp = 0, fn = 0;
    for (int i = 0; i < n; i++) {
        const gt_care_event_eval *e = &ev[i];
        o->n_events++;
        o->n_detected += e->detected != 0;
        if (e->anomaly) {
            o->n_anomaly++;
            if (!isnan(e->coverage)) sc += e->coverage, nc++;
            if (!isnan(e->earliness)) se += e->earliness, ne++;
            tp += e->detected != 0, fn += !e->detected;
        } else {
            o->n_normal++;
            if (!isnan(e->accuracy)) sa += e->accuracy, na++;
            fp += e->detected != 0;
        }
    }
    if (nc > 0) o->coverage = sc / nc;
    if (na > 0) o->accuracy = sa / na;
    if (ne > 0) o->earliness = se / ne;
    if (n > 0) o->reliability = fbeta_counts(tp, fp, fn, GT_CARE_BETA);
    if (o->n_normal == 0 || o->n_anomaly == 0) {
        o->reason = "needs at least one normal and one anomaly event";
        return;
    }
    if (o->n_detected == 0) {
        o->score = 0;
        o->reason = "no event detected: score 0";
        return;
    }
    if (isnan(o->accuracy)) {
        o->reason = "no normal-status rows in any normal event: accuracy undefined";
        return;
    }
    if (o->accuracy <= 0.5) {
        o->score = o->accuracy;
        o->reason = "mean accuracy of the normal events <= 0.5: score = that accuracy";
        return;
    }
    double cov = isnan(o->coverage) ? 0 : o->coverage, ear = isnan(o->earliness) ? 0 : o->earliness;
    o->score = (cov + 2.0 * o->accuracy + ear + o->reliability) / 5.0;
}
