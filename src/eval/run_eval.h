/* eval/run_eval.h: evaluation of a run directory -> eval.json + report.
 *
 *   gt_eval_run_dir      evaluate models on a file, write RUN_DIR/eval.json,
 *                        eval_sample.csv / eval_scores.csv (plot data) and the
 *                        report (eval/report.h). Used by `gridtrain eval` and,
 *                        after every training run, by `gridtrain train`
 *                        (cli/: train, then eval of the run directory).
 *   gt_eval_train_info_from_run   what the run directory says of its training.
 *
 * eval.json (schema in docs/evaluation.md; the DOE sweep report reads it):
 *   {"task", "model", "data_file", "data": {...}, "nilm": {"test": {"overall",
 *   "appliances": [...]}, "holdout": {...} | null} | null, "pdm": {...} | null,
 *   "train": {...}, "eval_config": {...}}. Undefined metrics are null. */
#ifndef GT_EVAL_RUN_EVAL_H
#define GT_EVAL_RUN_EVAL_H

#include <mpi.h>
#include <stdint.h>

#include "eval/eval.h"
#include "eval/eval_task.h"

/* What eval.json's "train" object reports (NaN / 0 when unknown). */
typedef struct gt_eval_train_info {
    int64_t steps;
    double train_time_s;   /* training wall time (over resumed segments) */
    double samples_per_s;  /* global training throughput */
    double data_stall;     /* max over ranks of waiting / wall */
    int ranks;
    int threads;           /* BLAS threads per rank */
    int gpus;              /* devices used (0 on the CPU path) */
    double final_loss, best_val_loss;
    int64_t eval_step;     /* the training step of the evaluated parameters (-1: unknown) */
    int eval_best;         /* 1: that step had the best validation loss (the default selection) */
} gt_eval_train_info;

/* Not collective: fills *ti from RUN_DIR's manifest.json, metrics.jsonl and
 * timing.json (what a finished run left behind: the trainer writes its final
 * and best losses there); step, elapsed and best validation loss from the
 * checkpoint state when ts_step >= 0. */
void gt_eval_train_info_from_run(const char *run_dir, int64_t ts_step, double ts_elapsed_s, double ts_best_val,
                                 gt_eval_train_info *ti);

/* Collective. Evaluates ems[0..n_models) (NILM: one s2p model; PdM: one or
 * more lstm models, multi-scale) on data_file, writes run_dir/eval.json and
 * the plot data, and rank 0 writes the report (report.md, report.html,
 * plots/). Returns 0 (the same on every rank); errors end the job. */
int gt_eval_run_dir(const char *run_dir, const char *data_file, const gt_eval_model *ems, int n_models,
                    const gt_eval_config *ec, const gt_eval_train_info *ti, MPI_Comm comm);


#endif
