/* pdm/pdm_metrics.c: the point and event metrics of anomaly detection (see
 * pdm/pdm_metrics.h). */
#include "pdm/pdm_metrics.h"

#include "core/check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
