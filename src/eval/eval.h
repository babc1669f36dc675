/* eval/eval.h: what evaluation and prediction with a trained model share:
 * the model handed to a task's evaluation (gt_eval_model) and the settings
 * (gt_eval_config: one block per task, each task's own). A task's evaluate
 * and predict functions are in its folder (nilm/nilm.h, pdm/pdm.h), reached
 * from shared code through its evaluation table (eval/eval_task.h).
 *
 * Determinism. Every item (household, turbine) lives on one rank
 * (io/read.h) and is forwarded in micro-batches that start at its own first
 * window, so each prediction is the same for any number of ranks; metric
 * sums are kept per item, gathered and added in file order, so eval.json and
 * the predicted files are identical for any number of ranks.
 *
 * A task's evaluation is collective over comm; models are replicated (the
 * same parameters on every rank). docs/evaluation.md has the definitions. */
#ifndef GT_EVAL_EVAL_H
#define GT_EVAL_EVAL_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "data/dataset.h"
#include "eval/metrics.h"
#include "io/format.h"
#include "nn/engine.h"

#define GT_EVAL_MAX_MODELS 4
#define GT_EVAL_MAX_TASKS 8            /* tasks with an evaluation */
#define GT_EVAL_TASK_CONFIG_BYTES 256  /* room for one task's settings */

/* The evaluation settings (the eval.* keys): block i is the settings of the
 * i-th task with an evaluation (eval_task.h gt_eval_task_at(i)), laid out by
 * that task (its table's config_bytes, filled by its config_defaults) and
 * read and written only through gt_eval_task_config (nilm/nilm.h gt_nilm_eval_cfg,
 * pdm/pdm.h gt_pdm_eval_cfg). Plain bytes: the struct copies by value. */
typedef struct gt_eval_config {
    union {
        max_align_t align_;
        unsigned char bytes[GT_EVAL_TASK_CONFIG_BYTES];
    } task[GT_EVAL_MAX_TASKS];
} gt_eval_config;
/* Every registered task's defaults (register the tasks first). */
void gt_eval_config_defaults(gt_eval_config *c);
/* The settings block of the registered evaluation named `name` (its task's
 * folder asks for its own; ends the job, GT_EXIT_INTERNAL, for a name not
 * registered or without settings). */
void *gt_eval_task_config(gt_eval_config *c, const char *name);
const void *gt_eval_task_config_c(const gt_eval_config *c, const char *name);

/* A trained model with what inference needs. */
typedef struct gt_eval_model {
    gt_engine *e;            /* borrowed; its max_batch is the inference micro-batch */
    gt_norm_stats ns;        /* frozen normalisation statistics of the training run */
    gt_data_config data;     /* training data configuration: window, splits, holdout, screening */
    const char *name;        /* for messages and reports (run directory) */
} gt_eval_model;

#endif
