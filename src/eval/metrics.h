/* eval/metrics.h: NILM and anomaly-detection metrics as pure functions.
 *
 * No MPI, no HDF5: every metric is accumulated as sums (gt_nilm_acc,
 * gt_pdm_acc) that callers merge over households/turbines and ranks, then
 * finalised. Undefined values (a division by zero: no true energy, no
 * positives, no alarms) are NaN here and null in eval.json; the exact rules are
 * next to each function and in docs/evaluation.md. */
#ifndef GT_EVAL_METRICS_H
#define GT_EVAL_METRICS_H

#include <stdint.h>

/* ------------------------------------------------------------------ NILM -- */

/* Sums over the evaluated samples of one appliance (or of all appliances:
 * merge). y = true power (W), yhat = predicted power (W, de-normalised and
 * clipped). "on" means power > on_power_w. */
typedef struct gt_nilm_acc {
    double n;             /* samples */
    double sum_abs_err;   /* sum |yhat - y|        W */
    double sum_sq_err;    /* sum (yhat - y)^2      W^2 */
    double sum_y, sum_yhat; /* W */
    double sum_y2;        /* sum y^2               W^2 */
    double tp, fp, fn, tn;/* on/off state counts */
    double wh_true, wh_pred; /* energy represented by the samples, Wh */
} gt_nilm_acc;

/* Adds one sample; `hours` is the time the sample stands for (period x
 * evaluation stride / 3600), for the energy totals. */
void gt_nilm_acc_add(gt_nilm_acc *a, double y, double yhat, double on_power_w, double hours);
/* The same with the predicted state given (pon: 0 off, 1 on) instead of
 * yhat > on_power_w: after a state filter the state is not the power's. */
void gt_nilm_acc_add_state(gt_nilm_acc *a, double y, double yhat, int pon, double on_power_w, double hours);

/* NILM state filter: post-processing of one appliance's predicted on/off
 * sequence with a minimum off and a minimum on duration (what NILMTK's
 * activations call min_off_duration / min_on_duration). In place on on[n]
 * (0/1), steps of step_s seconds: first every run of off steps lasting at
 * most fill_s (L x step_s <= fill_s) with an on step on both sides becomes on
 * (the gaps inside one cycle are closed); then every run of on steps lasting
 * less than min_on_s with an off step on both sides becomes off (flicker is
 * removed). brk (NULL: none) != 0 at step i marks a break before i (windows
 * missing from the grid): runs end there, and a run touching a break or an
 * end of the sequence is left as it is (its length is unknown). Returns the
 * number of steps changed. */
int64_t gt_nilm_state_filter(uint8_t *on, const uint8_t *brk, int64_t n, double step_s, double fill_s,
                             double min_on_s);
void gt_nilm_acc_merge(gt_nilm_acc *dst, const gt_nilm_acc *src);

typedef struct gt_nilm_metrics {
    double n;
    double mae_w;     /* sum|e| / n;                         NaN when n = 0 */
    double sae;       /* |sum yhat - sum y| / sum y;         NaN when sum y = 0 */
    double nde;       /* sqrt(sum e^2 / sum y^2);            NaN when sum y^2 = 0 */
    double precision; /* tp / (tp + fp);                     NaN when nothing predicted on */
    double recall;    /* tp / (tp + fn);                     NaN when never on */
    double f1;        /* 2 tp / (2 tp + fp + fn);            NaN when never on (tp + fn = 0) */
    double ea;        /* 1 - sum|e| / (2 sum y);             NaN when sum y = 0 */
    double energy_true_wh, energy_pred_wh;
} gt_nilm_metrics;

void gt_nilm_metrics_from_acc(const gt_nilm_acc *a, gt_nilm_metrics *m);

/* --------------------------------------------------------------- anomaly -- */

/* EWMA: out[t] = alpha x[t] + (1 - alpha) out[t-1]. A non-finite x[t] holds the
 * previous value (out[t] = out[t-1]); leading non-finite values give NaN, and
 * the first finite value starts the average. alpha in (0, 1]. x and out may
 * alias. */
void gt_ewma(const float *x, int64_t n, double alpha, float *out);

/* Empirical quantile q in [0, 1] of v[n] with linear interpolation between
 * order statistics (Hyndman & Fan type 7, numpy's default): sorts v in place.
 * NaN when n = 0. */
double gt_quantile(double *v, int64_t n, double q);

/* An alarm: rows [start, end). */
typedef struct gt_alarm_run {
    int64_t start, end;
    int32_t status; /* events only: 1 for an operating-status period (CARE's derated, service, downtime...:
                     * labelled rows, not an anomaly), 0 for an anomaly event; alarm runs: 0 */
} gt_alarm_run;

/* Alarm runs of score[n]: maximal runs of score > thr (NaN never exceeds),
 * then runs separated by a gap of at most merge_gap rows are merged (gap =
 * next.start - prev.end), then runs shorter than min_len rows are dropped.
 * out has room for n / 2 + 1 runs. Returns the number of runs. */
int64_t gt_alarm_runs(const float *score, int64_t n, double thr, int64_t min_len, int64_t merge_gap,
                      gt_alarm_run *out);

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

/* F-beta from precision and recall: NaN if either is NaN, 0 when both are 0. */
double gt_fbeta(double precision, double recall, double beta);

/* gridtrain's own CARE-style combination (NOT the authors' protocol: that is
 * gt_care_protocol_final): coverage = point F0.5, accuracy = specificity on
 * normal rows, reliability = event F0.5 (0 when there are events but no
 * alarms), earliness = mean earliness;
 *   CARE = (coverage + 2 accuracy + reliability + earliness) / 5,
 * but CARE = accuracy when accuracy < 0.5 (an alarm-everything detector
 * cannot score well). NaN without events or without normal rows. */
double gt_care_score(double coverage, double accuracy, double reliability, double earliness);

void gt_pdm_metrics_from_acc(const gt_pdm_acc *a, gt_pdm_metrics *m);

/* ------------------------------------------------- CARE to Compare protocol -- */

/* The CARE score as defined by the authors of CARE to Compare (Gueck et al.
 * 2024, https://doi.org/10.3390/data9120138, Algorithm 1 and section 4; their
 * reference implementation is the CAREScore class of energy_fault_detector),
 * per event dataset and over the events of a farm. docs/evaluation.md. */
#define GT_CARE_CRITICALITY_THRESHOLD 72 /* detected: max criticality >= 72 (the reference's test) */
#define GT_CARE_BETA 0.5
#define GT_CARE_MAX_CRITICALITY 1000 /* the reference's calculate_criticality caps its counter here */

/* 1 when the authors score a farm with ignore_normal_index = True: Wind Farm
 * A (farm code 0 of `import care`), whose status labels only filter training
 * data; every prediction row is then normal_index for coverage, accuracy and
 * criticality. */
int gt_care_ignores_normal_index(int farm);

typedef struct gt_care_event_eval {
    int anomaly;            /* the event's label: 1 anomaly, 0 normal */
    int detected;           /* max_criticality >= threshold */
    double max_criticality; /* Algorithm 1 over the rows up to the event end */
    double coverage;        /* anomaly events: point F-beta on normal_index rows; else NaN */
    double accuracy;        /* accuracy on normal_index rows (NaN without such rows); averaged over normal events */
    double earliness;       /* anomaly events: weighted score over the event rows; else NaN */
} gt_care_event_eval;

/* Earliness weight of row i of an event of L rows (ws_start_of_descend = 1/4):
 * 1 while 4 i < L, then (4 - x) / 3 with x = 16 i / (4 L - 1) (falls linearly
 * to 0 at the end; the reference samples every 4th value of a 4L-point
 * linspace). */
double gt_care_earliness_weight(int64_t i, int64_t L);

/* One event dataset. Rows [0, n) are its prediction part; pred[n] 1 where an
 * anomaly is predicted (alarm), normal[n] 1 where the status is normal
 * operation (normal_index). The event covers rows [ev_start, ev_end) of the
 * same coordinates (clipped to [0, n)); anomaly selects the label. Ground
 * truth: NOT normal, and the event rows for an anomaly event. Criticality
 * (Algorithm 1): over the rows [0, ev_end): on normal rows +1 with a
 * predicted anomaly (at most GT_CARE_MAX_CRITICALITY), else max(0, c - 1);
 * unchanged elsewhere. */
void gt_care_event_score(const uint8_t *pred, const uint8_t *normal, int64_t n, int64_t ev_start, int64_t ev_end,
                         int anomaly, double criticality_threshold, gt_care_event_eval *out);

typedef struct gt_care_protocol {
    double score;        /* NaN when undefined (reason set) */
    double coverage;     /* mean over anomaly events (NaN values skipped) */
    double accuracy;     /* mean over normal events (NaN values skipped) */
    double earliness;    /* mean over anomaly events */
    double reliability;  /* event-wise F-beta: y_true = anomaly, y_pred = detected */
    int n_events, n_anomaly, n_normal, n_detected;
    const char *reason;  /* why score is NaN, or which special rule applied; NULL for the weighted mean */
} gt_care_protocol;

/* The final CARE score of events ev[n]: NaN without at least one normal and
 * one anomaly event; 0 when no event is detected; the mean normal-event
 * accuracy when it is <= 0.5; else (coverage + 2 accuracy + earliness +
 * reliability) / 5 of the averages. */
void gt_care_protocol_final(const gt_care_event_eval *ev, int n, gt_care_protocol *out);

#endif
