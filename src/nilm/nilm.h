/* nilm/nilm.h: what the NILM task (disaggregation on household files) offers
 * the folders above it and the tests; the rest of the task is reached
 * through its registered struct (task/task.h gt_task_def, task_registry.h).
 *
 *   gt_eval_nilm     per-appliance and overall MAE, SAE, NDE, on/off
 *                    precision/recall/F1 and EA on GT_SPLIT_TEST and
 *                    GT_SPLIT_HOLDOUT (windows at a fixed stride,
 *                    predictions de-normalised with the frozen statistics
 *                    and clipped to [0, max_power_w])
 *   gt_predict_nilm  per-row disaggregation of a whole file -> HDF5
 * Both collective over comm, with the determinism of eval/eval.h. */
#ifndef GT_NILM_NILM_H
#define GT_NILM_NILM_H

#include <mpi.h>
#include <stdint.h>

#include "data/dataset.h"
#include "eval/eval.h"
#include "nilm/nilm_metrics.h"
#include "task/task.h"

extern const gt_task_def gt_task_def_nilm;            /* nilm.c: the task */
extern const struct gt_data_task_i gt_data_task_nilm; /* dataset_nilm.c: its data side */
extern const struct gt_eval_task_i gt_eval_task_nilm; /* eval_nilm_task.c: its evaluation */

/* NILM's data settings: its block of gt_data_config (data/dataset.h
 * gt_data_task_config), the data.* keys only NILM reads. Defaults: the data
 * table's config_defaults (nilm_data_config.c). */
typedef struct gt_nilm_data_config {
    double fill_max_s;    /* data.fill_max_s: holes of the aggregate (non-finite runs between two finite
                             samples of one household) lasting at most this many seconds are filled by
                             linear interpolation, for the model input only (never the targets), the same
                             in train, eval and predict; longer gaps still screen the windows touching
                             them. < 0 (default): auto, GT_NILM_FILL_AUTO_PERIODS sampling periods of each
                             household (covers timestamp jitter); 0: off */
    double spike_min_w;   /* data.spike_min_w: an aggregate sample is a spike only when it departs from its
                             local median by more than this too (W; default 5000): appliance bursts of a
                             few kW (a microwave's defrost pulses, a washing machine's spin) are loads,
                             meter glitches are tens of kW. 0: the Hampel rule alone (runs stored without
                             the key) */
    double power_limit_w; /* data.power_limit_w: a power beyond +-this (W) is not a measurement: the
                             reader makes it missing (gt_read_opts.value_limit; 0 off) */
    int stride_mask;      /* data.stride_mask, stride 0: 1 = appliance a's target counts only where
                             start % stride_a == 0; 0 (default) = every window (on the smallest selected
                             stride) trains all appliances */
    char timezone[64];    /* data.timezone: IANA zone name of the local time of the time features
                             (data.time_features; "" or "UTC": UTC) */
    char appliances[256]; /* data.appliances: "" = every appliance; else names separated by ',' or '+': only
                             these targets count (mask 0 for the others; the model keeps one output per
                             appliance of the file) */
    int time_features;    /* data.time_features: input channels added from each row's local time: 0 none,
                             2 "day" (sin, cos of the time of day), 4 "day+week" (and of the phase of the
                             week, Monday 00:00 = 0) */
    double augment;       /* data.augment, train split: probability that a window gets one more activation
                             of one of its household's appliances superimposed (gt_dataset_augment); 0
                             (default) none */
} gt_nilm_data_config;
/* NILM's block of dc (ends the job, GT_EXIT_INTERNAL, for a configuration
 * made before NILM's data table was added: data/dataset.h gt_data_task_add). */
const gt_nilm_data_config *gt_nilm_data_cfg(const gt_data_config *dc);
gt_nilm_data_config *gt_nilm_data_cfg_set(gt_data_config *dc);

/* The data settings' defaults (gt_data_config_defaults, NILM's block added
 * first) with NILM's window and stride resolved (task number GT_TASK_UNSET:
 * for a dataset built directly with gt_dataset_nilm, outside the registry). */
void gt_nilm_data_defaults(gt_data_config *cfg);

/* ---- nilm_data_config.c: the settings' helpers ---- */
/* data.fill_max_s = auto: this many sampling periods (jittered clocks leave
 * single empty bins; 5 covers what real recordings show with a margin). */
#define GT_NILM_FILL_AUTO_PERIODS 5
/* Rows of the longest hole filled for a household sampled every period_s
 * seconds under data.fill_max_s (cfg's NILM block; 0: none). */
int64_t gt_nilm_fill_max_rows(const gt_data_config *cfg, double period_s);
/* Fills every hole of x (n) of at most max_rows rows (a run of non-finite
 * values with a finite value on both sides) by linear interpolation between
 * its two neighbours; leading and trailing runs and longer holes stay
 * non-finite. Returns the values filled. Not collective. */
int64_t gt_nilm_fill_holes(float *x, int64_t n, int64_t max_rows);
/* data.appliances ("" / "all", or names separated by ',' / '+') -> bit mask
 * over the A appliances of meta; an unknown name is a user error listing the
 * known ones. */
uint32_t gt_nilm_appliance_mask(const char *names, const gt_io_appliance *meta, int A);
/* Offset of channel c at step t inside one NILM input window of W steps and C
 * channels, in the layout x_channels_last selects: (C, W) or (W, C). The one
 * place the layout rule lives (the dataset's fill, predict, eval samples). */
static inline int64_t gt_nilm_x_offset(int x_channels_last, int64_t W, int C, int64_t t, int c) {
    return x_channels_last ? t * C + c : (int64_t)c * W + t;
}

/* Collective. Takes ownership of the shard. Splits, screens and indexes the
 * windows, exchanges per-item window counts (global numbering), computes the
 * train-split moments, reduces them over comm and freezes the statistics.
 * Logs (rank 0) windows per split and the screening summary (dataset_nilm.c). */
gt_dataset *gt_dataset_nilm(gt_nilm_shard *shard, const gt_data_config *cfg, MPI_Comm comm);
/* nilm: appliance a's on-power threshold in the normalised target units,
 * (on_power_w - mean) / std (the gated head's on/off target is y > this). */
float gt_dataset_on_threshold(const gt_dataset *ds, int a);
/* Activations found for the augmentation (all local items and appliances). */
int64_t gt_dataset_n_activations(const gt_dataset *ds);

/* Collective. The data filters checked against the file before any window
 * is built: an entry of data.items -- a single code or a lo-hi range --
 * that matches no household id of `file` ends the job with exit 2
 * (GT_EXIT_USAGE) and one line naming the file, the option, the entries that
 * match nothing and the values the file has (at most
 * GT_DATA_FILTER_LIST_MAX, with their /legend names): otherwise the only
 * symptom is an empty split. Each rank
 * passes its shard; rank 0 decides on the gathered values and every rank
 * follows. Changes nothing when every entry matches. The one check of train,
 * eval and predict. */
void gt_nilm_check_filters(const char *file, const gt_nilm_shard *sh, const gt_data_config *cfg, MPI_Comm comm);

/* "none" | "day" | "day+week" -> 0 | 2 | 4 channels, -1 if unknown. */
int gt_nilm_time_features_parse(const char *text);
/* The F time-feature channels (sin, cos of the local time of day [, of the
 * week]) of n_rows time stamps (ms since the epoch) into out[n_rows, F]. Sets
 * and restores TZ for a zone other than UTC: not thread-safe. */
void gt_nilm_time_features(const int64_t *ts, int64_t n_rows, int F, const char *zone, float *out);

/* ------------------------------------------------------ eval settings -- */

/* NILM's block of gt_eval_config (the eval.* keys of cli/eval_rules.h). */
typedef struct gt_nilm_eval_config {
    int64_t stride;      /* eval.stride: rows between evaluated window midpoints; 0 = auto:
                            max(1, rows in the file / max_windows) */
    int64_t max_windows; /* eval.max_windows (default 1000000) */
    int calibrate_gate;  /* 1: the gated head's on/off threshold per appliance maximises the F1
                            on the validation split; 0 (default): probability 0.5 */
    int calibrate_filter;/* 1: a state filter (shortest off gap closed, shortest on run kept) per
                            appliance with the durations maximising the F1 on the validation
                            split; 0 (default): states as predicted */
    double fill_s, min_on_s; /* without calibration: the state filter's durations for every
                                appliance (0, 0: no filter) */
    int off_below_on;    /* 1 (default): a predicted power at or below the appliance's on-power
                            threshold (predicted off) is reported as 0 W; 0: raw clipped power */
    int usage;           /* gather the per-household usage of the evaluated file (rows, filled
                            samples, windows evaluated and screened by reason) into
                            gt_nilm_eval.usage on rank 0 (free with gt_nilm_eval_free); 0 (default): not */
    int pad_edges;       /* predict: 0 edge rows NaN, 1 replicate the first/last sample */
} gt_nilm_eval_config;
/* NILM's settings in ec (registered tasks: gt_eval_task_config). */
const gt_nilm_eval_config *gt_nilm_eval_cfg(const gt_eval_config *ec);
gt_nilm_eval_config *gt_nilm_eval_cfg_set(gt_eval_config *ec);

/* ---------------------------------------------------------- evaluation -- */

typedef struct gt_nilm_split_eval {
    int present;             /* 0: the split has no windows (JSON null) */
    int64_t n_windows;       /* evaluated windows (global) */
    gt_nilm_metrics overall; /* over all appliances (sums of all appliances; F1 micro) */
    gt_nilm_metrics app[GT_DATA_MAX_TARGETS];
} gt_nilm_split_eval;

typedef struct gt_nilm_eval {
    int n_appliances;
    gt_io_appliance meta[GT_DATA_MAX_TARGETS];
    int64_t stride;          /* evaluation stride used */
    int n_items, n_ranks;
    int64_t n_rows;          /* rows of the file */
    int64_t windows[GT_SPLIT_COUNT]; /* windows per split at the evaluation stride */
    gt_screen_summary screen;
    gt_nilm_split_eval test, holdout;
    int n_models;                         /* 1, or the members of an ensemble (eval.models) */
    int gated;                            /* gated head */
    float gate[GT_DATA_MAX_TARGETS];      /* its calibrated on-logit thresholds (0 = probability 0.5) */
    int filtered;                         /* eval.calibrate_filter: the state filter ran */
    float fill_s[GT_DATA_MAX_TARGETS], min_on_s[GT_DATA_MAX_TARGETS]; /* its calibrated durations */
    gt_item_usage *usage;                 /* the settings' usage: [n_items] in file order on rank 0, else NULL */
} gt_nilm_eval;
void gt_nilm_eval_free(gt_nilm_eval *e); /* the usage table (NULL allowed inside) */

/* Collective. Evaluates ems[0] on data_file (a NILM file with the model's
 * appliances); n_models > 1: the ensemble of ems[0 .. n_models-1] (models of
 * the same window, inputs, head, normalisation and splits; power outputs
 * averaged, gated head: on-probabilities averaged). sample_csv (may be
 * NULL): the rank holding the first test household writes one day of
 * "time_h,aggregate,true_0,pred_0,..." there. */
void gt_eval_nilm(const char *data_file, const gt_eval_model *ems, int n_models, const gt_eval_config *ec,
                  const char *sample_csv, MPI_Comm comm, gt_nilm_eval *out);

/* Collective. Writes out_path (HDF5, via out_path.tmp + rename):
 *   /timestamps int64 [N], /predictions float32 [N, A] (W), /aggregate float32 [N]
 *   /households/{id int64 [H], row_offset int64 [H+1]}, /appliance_meta/{name, on_power_w, max_power_w}
 *   root attributes kind = "nilm_predictions", model, window, source, padding, head, off_below_on;
 *   gated head: /appliance_meta/gate_logit float32 [A] (the on-logit thresholds used).
 * Row i of household h holds the model's output for the window of W rows
 * centred on i (rows i - W/2 .. i - W/2 + W - 1) de-normalised and clipped,
 * 0 W where predicted off (gated head; off_below_on of the settings);
 * rows whose window leaves the household are NaN (pad_edges = 0) or use the
 * first/last sample repeated (pad_edges = 1); a window holding a NaN
 * aggregate gives NaN. The bytes do not depend on the number of ranks. */
void gt_predict_nilm(const char *data_file, const gt_eval_model *ems, int n_models, const gt_eval_config *ec,
                     const char *out_path, MPI_Comm comm);

#endif
