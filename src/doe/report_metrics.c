/* doe/report_metrics.c: the report's metric table, the cell status names and
 * the mean/sd of a metric (report.h).
 *
 * The table is made from the task registry (task/task.h) the first time it
 * is asked for: every task's columns (its evaluation table's report_metrics,
 * eval/eval_task.h; "event.f05" of task pdm is eval.json's pdm.event.f05),
 * the last registered task's first (the order the report's columns had when
 * one list held both tasks' metrics), then training's, which every run's
 * eval.json holds. doe/ names no task. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "doe/report.h"
#include "eval/eval_task.h"
#include "task/task.h"

/* eval.json's "train" section, written for every task */
static const gt_eval_report_metric train_metrics[] = {
    {"best_val_loss", "best val loss", 0, 1},
    {"final_loss", "final loss", 0, 0},
    {"train_time_s", "train time (s)", 0, 0},
    {"samples_per_s", "samples/s", 1, 0},
    {"steps", "steps", 1, 0},
    {"cpu_hours", "CPU-hours", 0, 0},
    {"gpu_hours", "GPU-hours", 0, 0},
    {NULL, NULL, 0, 0},
};

#define METRIC_NAME_LEN 96
static gt_doe_metric_def g_table[GT_DOE_MAX_METRICS];
static char g_names[GT_DOE_MAX_METRICS][METRIC_NAME_LEN];
static int g_n, g_n_tasks = -1; /* rows; the registry's size they were made from */

/* the rows of eval.json's section `section` (keys relative to it) */
static void metrics_add(const char *section, const gt_eval_report_metric *rows) {
    for (const gt_eval_report_metric *r = rows; r && r->key; r++) {
        GT_CHECK(g_n < GT_DOE_MAX_METRICS, GT_EXIT_INTERNAL, "doe report: more than %d metrics (%s.%s)",
                 GT_DOE_MAX_METRICS, section, r->key);
        char *name = g_names[g_n];
        int len = snprintf(name, METRIC_NAME_LEN, "%s.%s", section, r->key);
        GT_CHECK(len > 0 && len < METRIC_NAME_LEN, GT_EXIT_INTERNAL, "doe report: metric %s.%s: name too long",
                 section, r->key);
        g_table[g_n++] = (gt_doe_metric_def){name, r->label, r->higher_better, r->quality};
    }
}

/* the table of the registered tasks (made again when a task was registered since) */
static void metrics_make(void) {
    if (g_n_tasks == gt_task_count()) return;
    g_n = 0;
    int n_eval = 0;
    while (gt_eval_task_at(n_eval)) n_eval++;
    for (int i = n_eval - 1; i >= 0; i--) metrics_add(gt_eval_task_at(i)->name, gt_eval_task_at(i)->report_metrics);
    metrics_add("train", train_metrics);
    g_n_tasks = gt_task_count();
}

const gt_doe_metric_def *gt_doe_metrics(int *n) {
    metrics_make();
    if (n) *n = g_n;
    return g_table;
}
int gt_doe_metric_find(const char *name) {
    metrics_make();
    for (int m = 0; m < g_n; m++)
        if (!strcmp(g_table[m].name, name)) return m;
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
