/* cli/cmd_eval.h: model loading shared by `gridtrain eval` and `gridtrain
 * predict` (defined in cli/cmd_eval.c). */
#ifndef GT_CLI_CMD_EVAL_H
#define GT_CLI_CMD_EVAL_H

#include <limits.h>
#include <mpi.h>

#include "cli/options.h"
#include "eval/eval.h"
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

/* Collective. path: a run directory or a checkpoint file inside
 * RUN_DIR/checkpoints (the newest valid checkpoint of that run is loaded).
 * n_in/n_out: the data's sizes (nilm: 1 / A; pdm: C / C); batch <= 0: the
 * run's micro-batch (at most 1024). Errors are user errors (exit 2/3). */
void gt_eval_cli_load(const char *path, int n_in, int n_out, int64_t batch, MPI_Comm comm, gt_eval_loaded *L);
void gt_eval_cli_unload(gt_eval_loaded *L);
/* Collective: kind (1 = pdm) and appliance/channel count of a data file. */
void gt_eval_cli_data_sizes(const char *path, MPI_Comm comm, int *kind_pdm, int *n_cols);
/* The eval.* options of a command's table -> gt_eval_config. */
void gt_eval_cli_config(const gt_args *a, gt_eval_config *ec);
/* Collective: loads main_path and the runs of eval.models (multi-scale) into
 * Ls[] / ems[] (GT_EVAL_MAX_MODELS entries); returns how many. */
int gt_eval_cli_load_all(const char *main_path, const gt_args *a, const char *data, MPI_Comm comm, gt_eval_loaded *Ls,
                         gt_eval_model *ems);

#endif
