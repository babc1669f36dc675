/* cli/eval_load.h: a trained model loaded from its run onto an engine and
 * evaluated, shared by `gridtrain eval` and `gridtrain predict`
 * (cli/cmd_eval.h) and by `gridtrain train`'s evaluation at the end
 * (defined in cli/eval_load.c). */
#ifndef GT_CLI_EVAL_LOAD_H
#define GT_CLI_EVAL_LOAD_H

#include <limits.h>
#include <mpi.h>

#include "cli/options.h"
#include "eval/eval.h"
#include "io/format.h"
#include "task/task.h"
#include "train/checkpoint.h"
#include "train/trainer.h"

/* A model loaded from a run: owns the model and the parsed stored
 * configuration (strings of tc point into args). */
typedef struct gt_eval_loaded {
    gt_eval_model em;
    gt_train_config tc;
    gt_args args;
    char run_dir[PATH_MAX];
    gt_train_state ts; /* trainer state of the loaded checkpoint */
    int64_t step;      /* its step */
} gt_eval_loaded;

/* The evaluated file: its task (from its kind), its appliances (nilm) or
 * channels (pdm), their names in file order and the shortest sampling period
 * (NAN when unreadable), which every loaded run is checked against. */
typedef struct gt_eval_data {
    char path[PATH_MAX];
    const gt_task_i *task;
    int n_cols;
    int n;                                  /* names read (0: none, not checked) */
    char (*names)[GT_FORMAT_NAME_LEN + 1];
    double period_s;
} gt_eval_data;

/* Collective: reads D of the data file at path (every rank alike). */
void gt_eval_cli_data_read(const char *path, MPI_Comm comm, gt_eval_data *D);
void gt_eval_cli_data_free(gt_eval_data *D);

/* RUN_DIR, or RUN_DIR/checkpoints/ckpt-N.h5 -> RUN_DIR in run_dir and the
 * returned step N (-1 for a directory). Errors are user errors. */
long long gt_eval_cli_run_dir_of(const char *path, char *run_dir, size_t n_run_dir);

/* Collective: the model of L->tc (the run's training configuration, set by
 * the caller with L->run_dir) on `engine` (chosen by gt_train_device_select),
 * its checkpoint of RUN_DIR loaded into the host model and pushed to the
 * engine (file_step >= 0: exactly that step; else the best-validation one
 * (best) or the newest), after checking the model and the run's stored
 * columns against the data D. batch <= 0: the run's micro-batch (at most 1024).
 * path names the run in messages. Errors are user errors (exit 2/3). */
void gt_eval_cli_load_model(gt_eval_loaded *L, const char *path, long long file_step, const gt_eval_data *D,
                            int64_t batch, int best, gt_engine_kind engine, MPI_Comm comm);
void gt_eval_cli_unload(gt_eval_loaded *L);

/* Collective: eval.json and the report of run_dir for the n loaded models. */
int gt_eval_cli_evaluate(const char *run_dir, const char *data, const gt_eval_loaded *Ls, const gt_eval_model *ems,
                         int n, const gt_eval_config *ec, MPI_Comm comm);

/* Collective: after `gridtrain train` finished a run: evaluates RUN_DIR's best
 * checkpoint on its data file with the evaluation settings ec (the train
 * command's eval.* keys; NULL: the defaults), as `gridtrain eval RUN_DIR` with
 * those keys does, at the training micro-batch (eval.json, plot data, report).
 * GT_EVAL_AT_END=0 in the environment writes the report only. */
void gt_eval_cli_after_train(const gt_train_config *tc, const gt_eval_config *ec, const char *run_dir, MPI_Comm comm);

#endif
