/* doe/report_metrics.c: the report's metric table (both tasks), the cell
 * status names and the mean/sd of a metric (report.h). */
#include <math.h>
#include <string.h>

#include "doe/report.h"
#include "doe/report_int.h"

const gt_doe_metric_def gt_doe_metric_table[] = {
    {"pdm.event.recall", "event recall", 1, 1},
    {"pdm.event.precision", "event precision", 1, 1},
    {"pdm.event.f05", "event F0.5", 1, 1},
    {"pdm.event.false_alarms_per_turbine_day", "false alarms/turbine-day", 0, 1},
    {"pdm.event.detection_delay_s_mean", "detection delay (s)", 0, 1},
    {"pdm.point.f05", "point F0.5", 1, 1},
    {"pdm.care_score", "CARE-style score (gridtrain's)", 1, 1},
    {"pdm.care_protocol.score", "CARE score (authors' protocol)", 1, 1},
    {"nilm.test.overall.mae_w", "MAE (W)", 0, 1},
    {"nilm.test.overall.sae", "SAE", 0, 1},
    {"nilm.test.overall.nde", "NDE", 0, 1},
    {"nilm.test.overall.precision", "precision", 1, 1},
    {"nilm.test.overall.recall", "recall", 1, 1},
    {"nilm.test.overall.f1", "F1", 1, 1},
    {"nilm.test.overall.ea", "energy accuracy", 1, 1},
    {"train.best_val_loss", "best val loss", 0, 1},
    {"train.final_loss", "final loss", 0, 0},
    {"train.train_time_s", "train time (s)", 0, 0},
    {"train.samples_per_s", "samples/s", 1, 0},
    {"train.steps", "steps", 1, 0},
    {"train.cpu_hours", "CPU-hours", 0, 0},
    {"train.gpu_hours", "GPU-hours", 0, 0},
};
_Static_assert(GT_DOE_N_METRICS <= GT_DOE_MAX_METRICS, "metric table too large");

const gt_doe_metric_def *gt_doe_metrics(int *n) {
    if (n) *n = GT_DOE_N_METRICS;
    return gt_doe_metric_table;
}
int gt_doe_metric_find(const char *name) {
    for (int m = 0; m < GT_DOE_N_METRICS; m++)
        if (!strcmp(gt_doe_metric_table[m].name, name)) return m;
    return -1;
}

const char *gt_doe_status_name(int s) {
    static const char *const k[] = {"missing", "running", "preempted", "failed", "done", "stopped"};
    return s >= 0 && s <= GT_DOE_STOPPED ? k[s] : "?";
}

gt_doe_stat gt_doe_stat_of(const double *v, int n) {
    gt_doe_stat st = {0, NAN, NAN};
    double sum = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) sum += v[i], st.n++;
    if (st.n == 0) return st;
    st.mean = sum / st.n;
    if (st.n < 2) return st;
    double ss = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) ss += (v[i] - st.mean) * (v[i] - st.mean);
    st.sd = sqrt(ss / (st.n - 1));
    return st;
}
