/* eval/eval_task.h: evaluation's side of a task (task/task.h has training's):
 * what is measured, what eval.json holds, what predict writes and the
 * report's results section, one table per task, filled in that task's folder
 * (nilm/eval_nilm_task.c, pdm/eval_pdm_task.c) and reached through the task
 * registry (task/task.h gt_task_def.eval; eval_tasks.c looks it up). The
 * shared driver (run_eval.c) and the report (report.c) never name a task:
 * they reach it by the evaluated data's task (gt_eval_model.data.task) or by
 * eval.json's "task" string.
 *
 * Adding a task: in its folder, a file filling gt_eval_task_i (an evaluate
 * function returning eval.json's "data" object and the task's own section, a
 * predict function for the per-row HDF5 output, its eval_config keys, its
 * report section, its settings block, what a sweep's report takes of it),
 * pointed to by its gt_task_def (docs/design.md). */
#ifndef GT_EVAL_EVAL_TASK_H
#define GT_EVAL_EVAL_TASK_H

#include <cjson/cJSON.h>
#include <mpi.h>
#include <stddef.h>

#include "eval/eval.h"
#include "eval/metrics.h"

struct gt_rep; /* eval/report_section.h */

/* One column of a sweep's report (doe/): a number in the task's section of
 * eval.json. */
typedef struct gt_eval_report_metric {
    const char *key;   /* dotted path inside the section: "event.f05" is eval.json's pdm.event.f05 */
    const char *label; /* the column's title ("event F0.5") */
    int higher_better; /* 1: a larger value is better (best configuration, a ladder's ranking) */
    int quality;       /* 1: model quality (the report's tables); 0: cost or throughput */
} gt_eval_report_metric;

/* What a sweep's CARE to Compare protocol (doe/) takes of one cell: its
 * evaluated event dataset, read back from the task's section of its
 * eval.json. */
typedef struct gt_eval_care_cell {
    int64_t turbine_id;
    int farm;                   /* the turbine's farm (0 when the section does not list it) */
    gt_care_event_eval r;       /* the event's CARE sub-scores */
    int64_t rows, rows_in_training;
    double n_events, n_detected, n_false_alarms, turbine_days; /* the cell's event totals (0 when absent) */
} gt_eval_care_cell;

typedef struct gt_eval_task_i {
    const char *name;        /* eval.json "task", data.kind and the key of the task's section */
    const char *items;       /* what one data item is, plural ("households"): the report's data line */
    const char *sample_file; /* plot data in the run directory */
    /* Collective: evaluates ems on data_file (plot data to sample_path); on
     * rank 0 (data != NULL) sets *data to eval.json's "data" object and
     * *section to the task's own object (eval.json[name]). */
    void (*evaluate)(const char *run_dir, const char *data_file, const gt_eval_model *ems, int n_models,
                     const gt_eval_config *ec, const char *sample_path, cJSON **data, cJSON **section,
                     MPI_Comm comm);
    /* Collective: per-row outputs of data_file to out (nilm/nilm.h gt_predict_nilm ...). */
    void (*predict)(const char *data_file, const gt_eval_model *ems, int n_models, const gt_eval_config *ec,
                    const char *out, MPI_Comm comm);
    /* eval.json "eval_config": the task's settings (every task adds its own,
     * in table order, whichever task was evaluated). */
    void (*eval_config)(cJSON *c, const gt_eval_config *ec);
    /* The report's results section from eval.json (ev), through the writers
     * of eval/report_section.h. */
    void (*report)(struct gt_rep *r, const cJSON *ev);
    /* Its settings: a block of config_bytes (<= GT_EVAL_TASK_CONFIG_BYTES) in
     * gt_eval_config, set to the defaults by config_defaults (eval.h
     * gt_eval_config_defaults); 0 / NULL: none. */
    size_t config_bytes;
    void (*config_defaults)(void *cfg);
    /* A sweep's report (doe/): eval.json's dotted path of the task's headline
     * metric ("nilm.test.overall.f1"), the primary metric of a sweep that
     * names none; and the eval_config keys whose values the report states
     * once for the sweep (counting the cells evaluated otherwise), each key
     * followed by the setting it records ("pdm_level", "eval.level", ...,
     * NULL); NULL: none. */
    const char *headline_metric;
    const char *const *sweep_settings;
    /* The task's columns of a sweep's report (keys relative to its section),
     * in the report's order, ended by a row whose key is NULL; NULL: none. */
    const gt_eval_report_metric *report_metrics;
    /* optional: a sweep's CARE to Compare protocol (doe/ combines the cells
     * of one training per event dataset): from the task's section of a cell's
     * eval.json (sec, NULL when the file has none), the evaluated entry of
     * event dataset event_id into *out. 0, or -1 with err (what is missing and
     * where in eval.json it was looked for; the caller puts the file's path
     * before it). */
    int (*care_cell)(const cJSON *sec, int64_t event_id, gt_eval_care_cell *out, char *err, size_t err_bytes);
} gt_eval_task_i;

/* The evaluation of task number `kind` (task/task.h's registry; ends the
 * job, GT_EXIT_USAGE, for a task without one). */
const gt_eval_task_i *gt_eval_task_get(gt_task kind);
/* The evaluation named `name` (eval.json "task"); NULL when none. */
const gt_eval_task_i *gt_eval_task_by_name(const char *name);
/* The i-th evaluation of the registered tasks (those with one), NULL past the
 * last: the order of eval.json's task sections and eval_config keys. */
const gt_eval_task_i *gt_eval_task_at(int i);

#endif
