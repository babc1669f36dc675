/* pdm/pdm_metrics.h: point and event metrics of anomaly detection as pure
 * functions (no MPI, no HDF5): sums (gt_pdm_acc) per turbine that callers
 * merge over turbines, machine types, conditions and ranks, then finalise;
 * the alarm runs, F-beta and the CARE combination they use are eval's
 * (eval/metrics.h). Undefined values are NaN here and null in eval.json
 * (docs/evaluation.md). */
#ifndef GT_PDM_PDM_METRICS_H
#define GT_PDM_PDM_METRICS_H

#include <stdint.h>

#include "eval/metrics.h"

/* Sums of point and event metrics over evaluation rows (per turbine,
 * merged over turbines, machine types, conditions). */
typedef struct gt_pdm_acc {
    double rows, rows_normal;    /* evaluated rows; of them label == 0 */
    double tp, fp, fn, tn;       /* per step: alarm vs label != 0 */
    double n_events, n_detected; /* events overlapping the rows; of them hit by an alarm */
    double delay_s_sum;          /* sum over detected events of (first alarm row - start) / rate */
    double earliness_sum;        /* sum over events of max(0, 1 - delay / length) (0 if missed) */
    double n_alarms, n_alarms_true; /* alarm runs; of them overlapping >= 1 event */
    double turbine_days;         /* rows / (86400 rate) */
    double n_anomaly_events, n_anomaly_detected; /* the events that are not status periods; of them hit */
} gt_pdm_acc;
void gt_pdm_acc_merge(gt_pdm_acc *dst, const gt_pdm_acc *src);

/* Scores one turbine's evaluation rows [0, n) (callers pass pointers offset
 * to the first evaluation row and spans in the same coordinates).
 *   score[n]   smoothed anomaly score; alarms = gt_alarm_runs(score, thr, ...)
 *   labels[n]  0 normal, else an event kind (point metrics)
 *   cond[n]    operating condition code per row, or NULL (all code 0)
 *   events[n_events] spans [start_row, end_row) in row coordinates (clipped
 *              to [0, n) here; empty ones ignored); .status = 1 marks an
 *              operating-status period (counted in n_events, not in
 *              n_anomaly_events)
 * Accumulates into total and into by_cond[code] (n_cond entries; codes
 * outside [0, n_cond) are only in total). An event's condition is the
 * condition at its (clipped) start, an alarm's at its start, a row's its own.
 * An alarm overlapping two events detects both and counts once as a true
 * alarm. Returns the number of alarm runs. alarm_flag[n] (may be NULL)
 * receives 1 inside alarm runs. */
int64_t gt_pdm_score_rows(const float *score, const uint8_t *labels, const int32_t *cond, int64_t n,
                          const gt_alarm_run *events, int n_events, double thr, int64_t min_len,
                          int64_t merge_gap, double rate_hz, gt_pdm_acc *total, gt_pdm_acc *by_cond, int n_cond,
                          uint8_t *alarm_flag);

typedef struct gt_pdm_metrics {
    double point_precision, point_recall, point_f05;
    double n_events, n_detected;
    double event_recall;     /* n_detected / n_events;             NaN without events */
    double n_anomaly_events, n_anomaly_detected;
    double anomaly_recall;   /* events that are not status periods: detected / events; NaN without any */
    double event_precision;  /* true alarms / alarms;              NaN without alarms */
    double event_f05;        /* F0.5 of the two;                   NaN when either is NaN */
    double false_alarms_per_turbine_day; /* (alarms - true alarms) / turbine-days; NaN when 0 days */
    double detection_delay_s_mean;       /* NaN without detections */
    double turbine_days;
    double accuracy;         /* normal rows without alarm / normal rows; NaN without normal rows */
    double earliness;        /* earliness_sum / n_events;          NaN without events */
    double care;             /* see gt_care_score */
} gt_pdm_metrics;

void gt_pdm_metrics_from_acc(const gt_pdm_acc *a, gt_pdm_metrics *m);

#endif
