/* cli/eval_rules.h: the evaluation rules (what is measured and how) as option
 * rows, shared by `eval`, `predict` and `train` (whose end-of-run evaluation
 * follows them), and their reader into a gt_eval_config (cli/eval_rules.c). */
#ifndef GT_CLI_EVAL_RULES_H
#define GT_CLI_EVAL_RULES_H

#include "cli/options.h"
#include "eval/eval.h"

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
    {"eval.level", NULL, GT_OPT_STR, "quantile", "pdm: the level of the validation scores (normal rows, the smoothed score the alarms use) that the threshold is margin times: quantile = their eval.quantile quantile; robust = median + 3 x 1.4826 MAD (a few days of validation rows: their tail is a handful of excursions)", "quantile|robust"}, \
    {"eval.quantile", QFLAG, GT_OPT_FLOAT, "0.999", "pdm, eval.level = quantile: quantile of the validation scores (normal rows) for the alarm threshold", NULL}, \
    {"eval.margin", MFLAG, GT_OPT_FLOAT, "1.5", "pdm: threshold = margin x that level, then raised until ...", NULL}, \
    {"eval.val_false_alarms", NULL, GT_OPT_FLOAT, "0.5", "pdm: ... the validation rows (normal operation) raise at most this many alarms per turbine-day; 0 off", NULL}, \
    {"eval.calibrate", NULL, GT_OPT_STR, "val", "pdm: rows of normal operation that calibrate the score and threshold: the validation split, or train+validation", "val|train_val"}, \
    {"eval.turbine_offset", NULL, GT_OPT_BOOL, "false", "pdm: subtract each turbine's mean residual of each channel over its calibration rows (a sensor's offset against the farm-wide model) before scoring; held-out turbines have none", NULL}, \
    {"eval.ewma_s", NULL, GT_OPT_STR, "auto", "pdm: EWMA span of the anomaly score (eval.score = mean) or of each channel's residual (channel), seconds; auto = 10 s for rows of 1 s or shorter (condition monitoring), else 36 rows (6 h of 10-minute SCADA)", NULL}, \
    {"eval.channel_quantile", NULL, GT_OPT_FLOAT, "0.99", "pdm, eval.score = channel: each channel's term is its squared EWMA residual divided by this quantile of it over the calibration rows (a channel whose residual is heavy-tailed in normal operation weighs less); 0 = by its calibration mean", NULL}, \
    {"eval.envelope", NULL, GT_OPT_FLOAT, "0.1", "pdm, normal-behaviour model: rows whose operating inputs over the window up to them leave the range of the training rows, widened by this share of it on each side, are not scored (the model would extrapolate: no alarm, counted in eval.json); negative = off", NULL}, \
    {"eval.score", NULL, GT_OPT_STR, "auto", "pdm: a row's anomaly score from its channel residuals: mean (mean over channels of the squared residual / its calibration MSE, then the EWMA), channel (the EWMA of each channel's residual, then the largest over channels of its square / its calibration mean: one faulty sensor is not diluted by the others), auto = channel for data.pdm_target = nbm, else mean (auto|mean|channel)", NULL}, \
    {"eval.flat_line", NULL, GT_OPT_BOOL, "true", "pdm: a scored channel whose variance over the last EWMA span collapses below the lowest of its training rows (a stuck or frozen sensor) adds ((lo - log var) / (median - lo))^2 to the score, lo and median its training rows' 0.001 and 0.5 quantiles of log var", NULL}, \
    {"eval.nbm_linear", NULL, GT_OPT_BOOL, "false", "pdm, normal-behaviour model: each target channel is regressed (ridge, on the training split's normal rows) on the model's prediction and on linear features of the operating and condition inputs (value and EWMAs over 2 h, 6 h, 24 h); the residual of that fit is scored", NULL}, \
    {"eval.min_duration_s", NULL, GT_OPT_FLOAT, "0", "pdm: alarms shorter than this are dropped (0: one row)", NULL}, \
    {"eval.merge_gap_s", NULL, GT_OPT_FLOAT, "60", "pdm: alarms closer than this are merged into one", NULL}, \
    {"eval.hop", NULL, GT_OPT_INT, "0", "pdm: rows between scoring windows; 0 = window / 2", NULL}

/* The eval.* options of a command's table -> gt_eval_config. */
void gt_eval_cli_config(const gt_args *a, gt_eval_config *ec);

#endif
