/* task/task.h: what a run learns, one table per task (nccl-tests' testColl
 * is the model): NILM disaggregation and PdM anomaly detection.
 *
 * The data file's kind chooses the task (gt_task_for_file), not the model
 * kind: the trainer, validation and the memory planner ask the task what a
 * window's targets are, how many target elements a batch has (the global
 * loss divisor), how the model's input and output widths follow from the
 * file, and which models it can train. Evaluation's side of a task (eval.json
 * sections, what predict writes, the report's section) is the table in
 * eval/eval_task.h, chosen by the same kind.
 *
 *   const gt_task_i *task = gt_task_choose(dcfg.task_name, cfg.data_file, comm);
 *   gt_data_config_resolve(&dcfg, gt_task_id(task), task->data); // the task's window/stride defaults
 *   task->check_model(&mc, cfg.data_file);             // one-line error for a model it cannot train
 *   gt_dataset *ds = task->open(file, &dcfg, comm);    // collective read + dataset
 *   task->shape_model(&mc, &dcfg, gt_dataset_n_targets(ds));
 *   gt_task_ctx tc; gt_task_ctx_init(&tc, task, ds, &mc, n_y, micro buffers);
 *   per micro-batch: gt_task_targets(&tc, x, y, mask, B, &yt, &mt);
 *                    pred = gt_engine_forward(e, gt_task_input(&tc, x, B), B);
 *                    S += gt_task_objective(&tc, dpred, pred, yt, mt, B, coef);
 *
 * Adding a task (docs/design.md, How to add a task): a folder src/<name>/
 * whose files fill gt_task_i (below) with its data side (data/dataset_impl.h
 * gt_data_task_i) and eval side (eval/eval_task.h gt_eval_task_i), and its
 * line in task/task_registry.h. A task's own state of a bound context lives
 * behind gt_task_ctx.priv. Adding a model kind
 * needs nothing here unless a task must refuse it (check_model).
 *
 * May use core, io, data, nn (and MPI through io/data); no config text (a
 * task's own option rows are core/opt.h rows, read through gt_opt_values). */
#ifndef GT_TASK_TASK_H
#define GT_TASK_TASK_H

#include <mpi.h>
#include <stddef.h>

#include "core/opt.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "io/format.h"
#include "nn/model.h"

typedef struct gt_task_ctx gt_task_ctx;
struct gt_data_task_i; /* data/dataset_impl.h: the task's side of a dataset */
struct gt_eval_task_i; /* eval/eval_task.h: the task's evaluation */

/* Training's side of a task (the trainer, validation, the planner). */
typedef struct gt_task_i {
    const char *name;        /* "nilm", "pdm": data.task, eval.json "task" */
    const char *item;        /* "household", "turbine": messages and forensics */
    gt_file_kind file_kind;  /* the data file kind that selects this task */
    int data_targets;        /* 1: a window's targets come from the file (n_targets per sample, the
                                dataset's y/mask); 0: they are derived from the window itself */
    /* Ends the job (GT_EXIT_USAGE, one line naming the file) for a model or
     * head this task cannot train. Not collective (same verdict everywhere). */
    void (*check_model)(const gt_model_config *mc, const char *file);
    /* Collective: this rank's shard of `file` read and its dataset built
     * (splits, screening, frozen train statistics). Caller owns it. */
    gt_dataset *(*open)(const char *file, const gt_data_config *dc, MPI_Comm comm);
    /* Model input/output widths from the file: window, n_in, n_out. */
    void (*shape_model)(gt_model_config *mc, const gt_data_config *dc, int n_targets);
    /* The model's input for B samples starting at x (as filled by the
     * dataset): x itself, or a copy in the ctx's buffer with the channels the
     * model must not see set to 0 (pdm nbm: the condition channels it
     * predicts). Call gt_task_targets first: the forward may overwrite x
     * when x is the engine's own input buffer. */
    const float *(*input)(gt_task_ctx *tc, const float *x, int B);
    /* The targets of B samples starting at x: the dataset's y/mask (dy, dm,
     * B x n_y_ds) or targets derived from x (into the ctx's buffers). */
    void (*targets)(gt_task_ctx *tc, const float *x, const float *dy, const float *dm, int B, const float **y,
                    const float **mask);
    /* Target elements of this rank's part of a batch (the global loss divisor
     * is their sum over ranks). */
    double (*target_count)(const gt_task_ctx *tc, const gt_batch *b);
    /* The training objective of B samples (see gt_task_objective);
     * gt_task_loss_objective when the model's loss is the objective. */
    double (*objective)(const gt_task_ctx *tc, float *dpred, const float *pred, const float *y, const float *mask,
                        int B, float coef);
    /* The task's own state of a bound context (tc->priv), from the dataset
     * and the model, once the shared fields are set; may change tc->n_t.
     * NULL: none. ctx_free releases it. */
    void *(*ctx_init)(gt_task_ctx *tc, const gt_dataset *ds, const gt_model_config *mc);
    void (*ctx_free)(void *priv);
} gt_task_i;

/* A task: one struct per task, defined in its folder (src/<name>/<name>.c)
 * and registered with gt_task_register, which every layer reaches its side
 * through: task/ and train/ the training table, data/ the data side (by
 * gt_data_config_resolve, and through the dataset `open` builds), eval/ the
 * evaluation (gt_eval_task_get, by the task's number). */
/* A task's own data.* option rows of `gridtrain train`'s table (the keys
 * only its settings block reads; cli/cmd_train.c assembles the table from
 * its shared rows and every registered task's) and their reader. A row
 * goes where `after` says: after the row of that key, wherever it comes
 * from (a shared row, another task's); NULL: after the previous row of the
 * same array. A row whose place never appears (its task is not registered)
 * goes at the end of its section. So the table, the help, the reference
 * (docs/configuration.md) and a run's config.ini keep one order. */
typedef struct gt_task_opt {
    gt_opt row;
    const char *after;
} gt_task_opt;
typedef struct gt_task_opts {
    const gt_task_opt *rows; /* ended by a row whose key is NULL */
    /* the rows' values (the defaults, a configuration, the command line) into the task's block of d
     * (gt_data_task_config), each checked (one-line error, exit 2) */
    void (*read)(const gt_opt_values *v, gt_data_config *d);
    /* a configuration stored with a run (resume, eval, predict): the settings whose keys it lacks
     * set as the runs from before those keys had them; NULL: none */
    void (*stored_compat)(const gt_opt_values *v, gt_data_config *d);
} gt_task_opts;

typedef struct gt_task_def {
    const gt_task_i *train;            /* name, item, file kind and the training slots */
    const struct gt_data_task_i *data; /* its datasets' table (what train->open builds) */
    const struct gt_eval_task_i *eval; /* its evaluation; NULL: none */
    const gt_task_opts *opts;          /* its data.* option rows and their reader; NULL: none */
} gt_task_def;

/* A task bound to one model and dataset for a run (train, validation). The
 * fields are what every task has; the task's own (thresholds, channel roles,
 * buffers) are behind priv, known only to its file. */
struct gt_task_ctx {
    const gt_task_i *i;
    gt_loss_kind loss;
    size_t n_x;     /* input elements per sample */
    size_t n_y;     /* model prediction elements per sample */
    size_t n_y_ds;  /* dataset target elements per sample (0 when the targets come from x) */
    size_t n_t;     /* target (mask) elements per sample: n_y unless the task says otherwise */
    float *ybuf, *mbuf; /* (micro, n_y) derived targets; borrowed from the caller */
    void *priv;     /* the task's own state (ctx_init); owned */
};

/* The registry: the tasks in registration order (the built-ins of
 * task/task_registry.h first, then those a program or test adds). Not
 * thread-safe: register at start-up, the same on every rank. Returns the
 * task's number (gt_data_config.task); a second task of the same name ends
 * the job (GT_EXIT_INTERNAL). */
gt_task gt_task_register(const gt_task_def *d);
int gt_task_count(void);
/* The task of number k (ends the job, GT_EXIT_INTERNAL, for none): its
 * struct, its training table. */
const gt_task_def *gt_task_def_get(gt_task k);
const gt_task_i *gt_task_get(gt_task k);
/* The i-th registered task, NULL past the last. */
const gt_task_def *gt_task_at(int i);
/* The number and the struct of a registered task's training table. */
gt_task gt_task_id(const gt_task_i *t);
const gt_task_def *gt_task_def_of(const gt_task_i *t);
/* The task named `name`, NULL when none. */
const gt_task_i *gt_task_by_name(const char *name);
/* Collective: the task the data file's kind selects; an unreadable or
 * invalid file ends the job with GT_EXIT_DATA naming the file. */
const gt_task_i *gt_task_for_file(const char *file, MPI_Comm comm);
/* The first registered task of a file kind (NULL for none). */
const gt_task_i *gt_task_for_kind(gt_file_kind k);
/* Collective: data.task's choice. name "" or "auto": the task of the file's
 * kind (gt_task_for_file); else the task of that name, which must train on
 * the file's kind. A name no task has, or a task of another file kind, ends
 * the job (GT_EXIT_USAGE) with one line naming the file and the choices. */
const gt_task_i *gt_task_choose(const char *name, const char *file, MPI_Comm comm);

/* Bind a task to a model (mc, its prediction width n_y) and dataset; ybuf and
 * mbuf (micro x n_y each) hold derived targets. The task's ctx_init then
 * takes what it needs from the dataset's (possibly restored) statistics: the
 * gated head's thresholds (NILM), the channel roles and an input buffer of
 * mc->max_batch samples (PdM). */
void gt_task_ctx_init(gt_task_ctx *tc, const gt_task_i *task, const gt_dataset *ds, const gt_model_config *mc,
                      size_t n_y, float *ybuf, float *mbuf);
void gt_task_ctx_free(gt_task_ctx *tc);

static inline const float *gt_task_input(gt_task_ctx *tc, const float *x, int B) {
    return tc->i->input(tc, x, B);
}
static inline void gt_task_targets(gt_task_ctx *tc, const float *x, const float *dy, const float *dm, int B,
                                   const float **y, const float **mask) {
    tc->i->targets(tc, x, dy, dm, B, y, mask);
}
static inline double gt_task_target_count(const gt_task_ctx *tc, const gt_batch *b) {
    return tc->i->target_count(tc, b);
}
/* The training objective of B samples (the task's objective slot): the
 * model's loss (gt_loss_sum_grad) or the gated head's (gt_gated_loss_sum),
 * summed over the masked targets; dpred (NULL: the sum only) = d sum / d pred
 * x coef, coef = loss scale / M with M the global batch's target count (the
 * same per-element value for any number of ranks). */
static inline double gt_task_objective(const gt_task_ctx *tc, float *dpred, const float *pred, const float *y,
                                       const float *mask, int B, float coef) {
    return tc->i->objective(tc, dpred, pred, y, mask, B, coef);
}
/* The model's loss over B x n_y predictions: the objective of a task without
 * its own. */
double gt_task_loss_objective(const gt_task_ctx *tc, float *dpred, const float *pred, const float *y,
                              const float *mask, int B, float coef);

#endif
