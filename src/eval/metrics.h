/* eval/metrics.h: the metrics of evaluation every task may use, as pure
 * functions: EWMA, quantile, alarm runs, F-beta, CARE (a task's own metrics
 * are in its folder: nilm/nilm_metrics.h, pdm/pdm_metrics.h).
 *
 * No MPI, no HDF5. Undefined values (a division by zero: no true energy, no
 * positives, no alarms) are NaN here and null in eval.json; the exact rules are
 * next to each function and in docs/evaluation.md. */
#ifndef GT_EVAL_METRICS_H
#define GT_EVAL_METRICS_H

#include <stdint.h>

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
