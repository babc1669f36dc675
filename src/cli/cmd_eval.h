/* cli/cmd_eval.h: what `gridtrain eval` and `gridtrain predict` share: their
 * option rows and loading the runs they name (defined in cli/cmd_eval.c; the
 * model of one run: cli/eval_load.h). */
#ifndef GT_CLI_CMD_EVAL_H
#define GT_CLI_CMD_EVAL_H

#include <mpi.h>

#include "cli/eval_load.h"
#include "cli/eval_rules.h"
#include "cli/options.h"
#include "eval/eval.h"

/* The option rows `eval` and `predict` share (inference and the output rules);
 * read into a gt_eval_config by gt_eval_cli_config. */
#define GT_EVAL_OPTS \
    {"eval.checkpoint", NULL, GT_OPT_STR, "best", "which checkpoint of RUN_DIR: the one of the best validation loss (model selection on the validation split) or the newest; a checkpoint file given as the path is used as it is", "best|last"}, \
    GT_EVAL_NILM_RULE_OPTS, \
    {"eval.batch", NULL, GT_OPT_INT, "0", "inference micro-batch per rank; 0 = the run's train.micro_batch (or train.batch, at most 1024)", NULL}, \
    {"eval.device", "device", GT_OPT_STR, "auto", "where the model runs: auto = a GPU per rank when one is usable, else the CPU; cuda = a GPU or exit 7; the same checkpoints on either", "auto|cpu|cuda"}, \
    {"eval.models", "models", GT_OPT_STR, "", "more run directories (comma-separated): pdm multi-scale, e.g. the window 64 and 1024 runs; nilm ensemble, runs of the same window, inputs and data (e.g. other train.seed), outputs averaged per appliance over the members trained on it (data.appliances)", NULL}, \
    GT_EVAL_PDM_RULE_OPTS("quantile", "margin")

/* Collective. path: a run directory or a checkpoint file inside
 * RUN_DIR/checkpoints (that checkpoint is loaded; it must be valid).
 * best: load the run's best-validation checkpoint (else the newest); a
 * checkpoint file as the path loads that file's step.
 * D: the evaluated data (gt_eval_cli_data_read): its task, its appliances
 * (nilm) or channels (pdm); the model's input channels follow from the stored
 * data configuration (time features); batch <= 0: the run's micro-batch (at
 * most 1024). The model runs on `engine` (gt_eval_cli_load_all picks it from
 * eval.device, train/device.h). Errors are user errors (exit 2/3). */
void gt_eval_cli_load(const char *path, const gt_eval_data *D, int64_t batch, int best, gt_engine_kind engine,
                      MPI_Comm comm, gt_eval_loaded *L);
/* Collective: loads main_path and the runs of eval.models (pdm multi-scale,
 * nilm ensemble) into
 * Ls[] / ems[] (GT_EVAL_MAX_MODELS entries); returns how many. */
int gt_eval_cli_load_all(const char *main_path, const gt_args *a, const char *data, MPI_Comm comm, gt_eval_loaded *Ls,
                         gt_eval_model *ems);

#endif
