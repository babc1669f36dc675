/* eval/eval_task.h: evaluation's side of a task (task/task.h has training's):
 * what is measured, what eval.json holds and what predict writes, one row
 * per task, chosen by the evaluated data file's kind (gt_eval_model.data.task).
 *
 * Adding a task: its gt_task_i (task/), then a row in run_eval.c's table with
 * an evaluate function (metrics into eval.json) and a predict function (the
 * per-row HDF5 output). */
#ifndef GT_EVAL_EVAL_TASK_H
#define GT_EVAL_EVAL_TASK_H

#include <cjson/cJSON.h>
#include <mpi.h>

#include "eval/eval.h"

typedef struct gt_eval_task_i {
    gt_task kind;
    const char *name;        /* eval.json "task" */
    const char *sample_file; /* plot data in the run directory */
    /* Collective: evaluates ems on data_file (plot data to sample_path); rank 0
     * (root != NULL) adds "data", "nilm" and "pdm" to eval.json's root. */
    void (*evaluate)(const char *run_dir, const char *data_file, const gt_eval_model *ems, int n_models,
                     const gt_eval_config *ec, const char *sample_path, cJSON *root, MPI_Comm comm);
    /* Collective: per-row outputs of data_file to out (eval.h gt_predict_*). */
    void (*predict)(const char *data_file, const gt_eval_model *ems, int n_models, const gt_eval_config *ec,
                    const char *out, MPI_Comm comm);
} gt_eval_task_i;

/* The evaluation of task `kind`. */
const gt_eval_task_i *gt_eval_task_get(gt_task kind);

#endif
