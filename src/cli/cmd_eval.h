/* cli/cmd_eval.h: model loading shared by `gridtrain eval` and `gridtrain
 * predict` (defined in cli/cmd_eval.c). */
#ifndef GT_CLI_CMD_EVAL_H
#define GT_CLI_CMD_EVAL_H

#include <limits.h>
#include <mpi.h>

#include "cli/options.h"
#include "eval/eval.h"
#include "task/task.h"
#include "train/checkpoint.h"
#include "train/trainer.h"

/* The evaluation rules (what is measured and how), read into a gt_eval_config
 * by gt_eval_cli_config: rows of `eval` (all three), of `predict` (the NILM and
 * PdM ones) and of `train`, whose end-of-run evaluation follows them (an
 * [eval] section of the training configuration; not stored with the run).
 * FLAG, QFLAG, MFLAG: the rows' flags (`eval`: stride, quantile, margin;
 * `train` has none: its --stride would read as data.stride). */
#define GT_EVAL_STRIDE_OPTS(FLAG) \
    {"eval.stride", FLAG, GT_OPT_INT, "0", "nilm: rows between evaluated window midpoints; 0 = auto (at most eval.max_windows windows)", NULL}, \
    {"eval.max_windows", NULL, GT_OPT_INT, "1000000", "nilm: auto stride = rows in the file / this", NULL}
#define GT_EVAL_NILM_RULE_OPTS \
    {"eval.calibrate_gate", NULL, GT_OPT_BOOL, "false", "nilm gated head: per-appliance on/off threshold maximising the F1 on the file's validation split (else probability 0.5)", NULL}, \
    {"eval.calibrate_filter", NULL, GT_OPT_BOOL, "false", "nilm: per-appliance state filter (off gaps up to fill_s closed, then on runs shorter than min_on_s removed) with the durations maximising the F1 on the file's validation split", NULL}, \
    {"eval.fill_s", NULL, GT_OPT_FLOAT, "0", "nilm, without calibrate_filter: close predicted off gaps up to this many seconds between on steps, every appliance", NULL}, \
    {"eval.min_on_s", NULL, GT_OPT_FLOAT, "0", "nilm, without calibrate_filter: then drop predicted on runs shorter than this many seconds, every appliance", NULL}, \
    {"eval.off_below_on", NULL, GT_OPT_BOOL, "true", "nilm: a predicted power at or below the appliance's on-power threshold (predicted off) is reported as 0 W", NULL}

#define GT_EVAL_PDM_RULE_OPTS(QFLAG, MFLAG) \
    {"eval.quantile", QFLAG, GT_OPT_FLOAT, "0.999", "pdm: quantile of the validation scores (normal rows) for the alarm threshold", NULL}, \
    {"eval.margin", MFLAG, GT_OPT_FLOAT, "1.5", "pdm: threshold = margin x that quantile, then raised until ...", NULL}, \
    {"eval.val_false_alarms", NULL, GT_OPT_FLOAT, "0.5", "pdm: ... the validation rows (normal operation) raise at most this many alarms per turbine-day; 0 off", NULL}, \
    {"eval.calibrate", NULL, GT_OPT_STR, "val", "pdm: rows of normal operation that calibrate the score and threshold: the validation split, or train+validation", "val|train_val"}, \
    {"eval.turbine_offset", NULL, GT_OPT_BOOL, "false", "pdm: subtract each turbine's mean residual of each channel over its calibration rows (a sensor's offset against the farm-wide model) before scoring; held-out turbines have none", NULL}, \
    {"eval.ewma_s", NULL, GT_OPT_STR, "auto", "pdm: EWMA span of the anomaly score (eval.score = mean) or of each channel's residual (channel), seconds; auto = 10 s for rows of 1 s or shorter (condition monitoring), else 36 rows (6 h of 10-minute SCADA)", NULL}, \
    {"eval.channel_quantile", NULL, GT_OPT_FLOAT, "0.99", "pdm, eval.score = channel: each channel's term is its squared EWMA residual divided by this quantile of it over the calibration rows (a channel whose residual is heavy-tailed in normal operation weighs less); 0 = by its calibration mean", NULL}, \
    {"eval.envelope", NULL, GT_OPT_FLOAT, "0.1", "pdm, normal-behaviour model: rows whose operating inputs over the window up to them leave the range of the training rows, widened by this share of it on each side, are not scored (the model would extrapolate: no alarm, counted in eval.json); negative = off", NULL}, \
    {"eval.score", NULL, GT_OPT_STR, "auto", "pdm: a row's anomaly score from its channel residuals: mean (mean over channels of the squared residual / its calibration MSE, then the EWMA), channel (the EWMA of each channel's residual, then the largest over channels of its square / its calibration mean: one faulty sensor is not diluted by the others), auto = channel for data.pdm_target = nbm, else mean (auto|mean|channel)", NULL}, \
    {"eval.min_duration_s", NULL, GT_OPT_FLOAT, "0", "pdm: alarms shorter than this are dropped (0: one row)", NULL}, \
    {"eval.merge_gap_s", NULL, GT_OPT_FLOAT, "60", "pdm: alarms closer than this are merged into one", NULL}, \
    {"eval.hop", NULL, GT_OPT_INT, "0", "pdm: rows between scoring windows; 0 = window / 2", NULL}

/* The option rows `eval` and `predict` share (inference and the output rules);
 * read into a gt_eval_config by gt_eval_cli_config. */
#define GT_EVAL_OPTS \
    {"eval.checkpoint", NULL, GT_OPT_STR, "best", "which checkpoint of RUN_DIR: the one of the best validation loss (model selection on the validation split) or the newest; a checkpoint file given as the path is used as it is", "best|last"}, \
    GT_EVAL_NILM_RULE_OPTS, \
    {"eval.batch", NULL, GT_OPT_INT, "0", "inference micro-batch per rank; 0 = the run's train.micro_batch (or train.batch, at most 1024)", NULL}, \
    {"eval.device", "device", GT_OPT_STR, "auto", "where the model runs: auto = a GPU per rank when one is usable, else the CPU; cuda = a GPU or exit 7; the same checkpoints on either", "auto|cpu|cuda"}, \
    {"eval.models", "models", GT_OPT_STR, "", "more run directories (comma-separated): pdm multi-scale, e.g. the window 64 and 1024 runs; nilm ensemble, runs of the same window, inputs and data (e.g. other train.seed), outputs averaged per appliance over the members trained on it (data.appliances)", NULL}, \
    GT_EVAL_PDM_RULE_OPTS("quantile", "margin")

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
 * RUN_DIR/checkpoints (that checkpoint is loaded; it must be valid).
 * best: load the run's best-validation checkpoint (else the newest); a
 * checkpoint file as the path loads that file's step.
 * task, n_cols: the evaluated data's task (its file kind) and appliances
 * (nilm) or channels (pdm); the model's input channels follow from the stored
 * data configuration (time features); batch <= 0: the run's micro-batch (at
 * most 1024). The model runs on `engine` (gt_eval_cli_load_all picks it from
 * eval.device, train/device.h). Errors are user errors (exit 2/3). */
void gt_eval_cli_load(const char *path, const gt_task_i *task, int n_cols, int64_t batch, int best,
                      gt_engine_kind engine, MPI_Comm comm, gt_eval_loaded *L);
void gt_eval_cli_unload(gt_eval_loaded *L);
/* Collective: the task a data file's kind selects and its appliance/channel count. */
void gt_eval_cli_data_sizes(const char *path, MPI_Comm comm, const gt_task_i **task, int *n_cols);
/* The eval.* options of a command's table -> gt_eval_config. */
void gt_eval_cli_config(const gt_args *a, gt_eval_config *ec);
/* Collective: loads main_path and the runs of eval.models (pdm multi-scale,
 * nilm ensemble) into
 * Ls[] / ems[] (GT_EVAL_MAX_MODELS entries); returns how many. */
int gt_eval_cli_load_all(const char *main_path, const gt_args *a, const char *data, MPI_Comm comm, gt_eval_loaded *Ls,
                         gt_eval_model *ems);
/* Collective: after `gridtrain train` finished a run: evaluates RUN_DIR's best
 * checkpoint on its data file with the evaluation settings ec (the train
 * command's eval.* keys; NULL: the defaults), as `gridtrain eval RUN_DIR` with
 * those keys does, at the training micro-batch (eval.json, plot data, report).
 * GT_EVAL_AT_END=0 in the environment writes the report only. */
void gt_eval_cli_after_train(const gt_train_config *tc, const gt_eval_config *ec, const char *run_dir, MPI_Comm comm);

#endif
