/* eval/eval.h: evaluation and prediction with a trained model (collective).
 *
 *   NILM  gt_eval_nilm     per-appliance and overall MAE, SAE, NDE, on/off
 *                          precision/recall/F1 and EA on GT_SPLIT_TEST and
 *                          GT_SPLIT_HOLDOUT (windows at a fixed stride,
 *                          predictions de-normalised with the frozen
 *                          statistics and clipped to [0, max_power_w])
 *         gt_predict_nilm  per-row disaggregation of a whole file -> HDF5
 *   PdM   gt_eval_pdm      per-step anomaly scores, calibrated threshold,
 *                          alarm runs, point/event metrics per turbine,
 *                          machine type and operating condition, CARE
 *         gt_predict_pdm   per-row scores and alarms of a whole file -> HDF5
 *
 * Determinism. Every household/turbine lives on one rank (io/read.h) and is
 * forwarded in micro-batches that start at its own first window, so each
 * prediction is the same for any number of ranks; metric sums are kept per
 * item, gathered and added in file order, so eval.json and the predicted
 * files are identical for any number of ranks.
 *
 * All functions are collective over comm; models are replicated (the same
 * parameters on every rank). docs/evaluation.md has the definitions. */
#ifndef GT_EVAL_EVAL_H
#define GT_EVAL_EVAL_H

#include <mpi.h>
#include <stdint.h>

#include "data/dataset.h"
#include "eval/metrics.h"
#include "io/format.h"
#include "nn/engine.h"

#define GT_EVAL_MAX_MODELS 4
#define GT_EVAL_MAX_GROUPS 16 /* machine types / conditions reported */

typedef struct gt_eval_config {
    /* nilm */
    int64_t nilm_stride;      /* rows between evaluated window midpoints; 0 = auto:
                                 max(1, rows in the file / nilm_max_windows) */
    int64_t nilm_max_windows; /* default 1000000 */
    int nilm_calibrate_gate;  /* 1: the gated head's on/off threshold per appliance maximises the F1
                                 on the validation split; 0 (default): probability 0.5 */
    int nilm_calibrate_filter;/* 1: a state filter (shortest off gap closed, shortest on run kept) per
                                 appliance with the durations maximising the F1 on the validation
                                 split; 0 (default): states as predicted */
    double nilm_fill_s, nilm_min_on_s; /* without calibration: the state filter's durations for every
                                          appliance (0, 0: no filter) */
    int nilm_off_below_on;    /* 1 (default): a predicted power at or below the appliance's on-power
                                 threshold (predicted off) is reported as 0 W; 0: raw clipped power */
    /* pdm */
    int pdm_level;            /* gt_pdm_level: the level of the validation scores the threshold stands on */
    double pdm_quantile;      /* eval.level = quantile: quantile of the validation scores (default 0.999) */
    double pdm_margin;        /* threshold = margin x quantile (default 1.5), then raised until ... */
    double pdm_val_false_alarms; /* ... the validation rows raise at most this many alarms per
                                    turbine-day (default 0.5; 0 = quantile x margin only) */
    int pdm_calibrate_train;  /* 1: calibrate on the train + validation rows (normal operation of the
                                 whole training period), 0: validation rows only (default 0) */
    int pdm_turbine_offset;   /* 1: each turbine's mean residual of each channel over its calibration rows
                                 (its sensor offset) is subtracted before scoring; 0 (default): not */
    double pdm_ewma_s;        /* EWMA span in seconds: alpha = 2 / (span rows + 1); < 0 (default): auto,
                                 10 s for rows of 1 s or shorter, else 36 rows (6 h of 10-minute SCADA) */
    int pdm_score;            /* gt_pdm_score: how a row's channel residuals make its score */
    double pdm_envelope;      /* normal-behaviour models: rows whose inputs leave the training rows' range
                                 widened by this share of it on each side are not scored; < 0: off
                                 (default 0.1) */
    double pdm_channel_quantile; /* score channel: a channel's term is m_c^2 / (this quantile of m_c^2 over the
                                    calibration rows); 0 (default): / its calibration mean */
    int pdm_flat_line;        /* 1 (default): the flat-line term of a stuck channel enters the score (pdm_score.c) */
    int pdm_nbm_linear;       /* 1: the linear stage of a normal-behaviour model's residual (pdm/pdm_linear.c); 0 (default): off */
    double pdm_min_duration_s;/* alarm runs shorter than this are dropped (default 0: one row) */
    double pdm_merge_gap_s;   /* alarm runs closer than this are merged (default 60) */
    int64_t pdm_hop;          /* rows between scoring windows; 0 = window / 2 */
    int64_t pdm_max_val;      /* validation scores kept for the quantile (default 2000000, evenly thinned) */
    /* both */
    int usage;                /* nilm: gather the per-household usage of the evaluated file (rows, filled
                                 samples, windows evaluated and screened by reason) into
                                 gt_nilm_eval.usage on rank 0 (free with gt_nilm_eval_free); 0 (default): not */
    int pad_edges;            /* predict nilm: 0 edge rows NaN, 1 replicate the first/last sample */
} gt_eval_config;
void gt_eval_config_defaults(gt_eval_config *c);
/* eval.level (pdm): what the threshold is eval.margin times (pdm_calib.c). */
typedef enum gt_pdm_level {
    GT_PDM_LEVEL_QUANTILE = 0, /* their eval.quantile quantile (default) */
    GT_PDM_LEVEL_ROBUST = 1,   /* median + GT_PDM_ROBUST_K x 1.4826 MAD of the validation scores */
} gt_pdm_level;
#define GT_PDM_ROBUST_K 3.0
/* eval.score (pdm): how the residuals d_c of a row make its anomaly score. */
typedef enum gt_pdm_score {
    GT_PDM_SCORE_AUTO = 0,    /* channel for a normal-behaviour model (data.pdm_target = nbm), else mean */
    GT_PDM_SCORE_MEAN = 1,    /* mean over channels of d_c^2 / v_c (v_c: calibration MSE), then an EWMA */
    GT_PDM_SCORE_CHANNEL = 2, /* an EWMA of each channel's residual m_c, then the max over channels of
                                 m_c^2 / w_c (w_c: calibration mean of m_c^2): a fault of one sensor is
                                 not diluted by the others, and noise averages out while an offset,
                                 drift or stuck sensor stays */
} gt_pdm_score;
int gt_pdm_score_parse(const char *s); /* -1 when unknown */

/* The EWMA span in rows for a turbine of this rate (eval.ewma_s, auto resolved), >= 1. */
double gt_eval_ewma_span_rows(const gt_eval_config *c, double rate_hz);

/* A trained model with what inference needs. */
typedef struct gt_eval_model {
    gt_engine *e;            /* borrowed; its max_batch is the inference micro-batch */
    gt_norm_stats ns;        /* frozen normalisation statistics of the training run */
    gt_data_config data;     /* training data configuration: window, splits, holdout, screening */
    const char *name;        /* for messages and reports (run directory) */
} gt_eval_model;

/* ------------------------------------------------------------------ NILM -- */

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
    gt_item_usage *usage;                 /* ec->usage: [n_items] in file order on rank 0, else NULL */
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
 * 0 W where predicted off (gated head; ec->nilm_off_below_on);
 * rows whose window leaves the household are NaN (pad_edges = 0) or use the
 * first/last sample repeated (pad_edges = 1); a window holding a NaN
 * aggregate gives NaN. The bytes do not depend on the number of ranks. */
void gt_predict_nilm(const char *data_file, const gt_eval_model *ems, int n_models, const gt_eval_config *ec,
                     const char *out_path, MPI_Comm comm);

/* ------------------------------------------------------------------- PdM -- */

typedef struct gt_pdm_turbine_eval {
    int64_t id;
    int32_t file_index, farm, machine_type, holdout;
    int32_t skipped;         /* outside the run's data.items / farms / machine_types: not evaluated */
    gt_pdm_acc acc;
} gt_pdm_turbine_eval;

/* One CARE event dataset under the authors' protocol (/care_events). */
typedef struct gt_pdm_care_event {
    int64_t event_id;
    int32_t file_index;      /* turbine */
    int32_t evaluated;       /* 0: its turbine is outside data.items / farms / machine_types */
    int64_t n_rows;          /* rows of its prediction part */
    int64_t rows_in_training;/* of them in the training or validation split of a training turbine */
    gt_care_event_eval r;
} gt_pdm_care_event;

/* eval.envelope: rows not scored because the operating inputs left the
 * training rows' range (normal-behaviour models). */
typedef struct gt_pdm_envelope {
    int64_t rows_out, rows_scored; /* over every row of the file that had a score */
    int channel;                   /* the input channel most often responsible, -1: none */
    char channel_name[GT_FORMAT_NAME_LEN];
} gt_pdm_envelope;

typedef struct gt_pdm_eval {
    double threshold;        /* on the reported score scale */
    gt_pdm_envelope envelope;
    double quantile_value;   /* the validation level before the margin: the quantile, or the robust level */
    int level;               /* the level used (gt_pdm_level; quantile where robust has none) */
    int64_t n_val_scores;
    int n_models;
    int pdm_target;          /* the models' data.pdm_target (gt_pdm_target), -1 when they differ */
    gt_pdm_metrics overall;
    gt_pdm_acc acc;
    int n_turbines;
    gt_pdm_turbine_eval *turbines; /* [n_turbines], file order; malloc'd (gt_pdm_eval_free) */
    int n_types, n_conds;
    char type_names[GT_EVAL_MAX_GROUPS][GT_FORMAT_NAME_LEN];
    char cond_names[GT_EVAL_MAX_GROUPS][GT_FORMAT_NAME_LEN];
    gt_pdm_acc by_type[GT_EVAL_MAX_GROUPS], by_cond[GT_EVAL_MAX_GROUPS];
    int n_ranks;
    int64_t n_rows;
    /* the authors' CARE protocol over the file's /care_events (has_care = 0
     * without the table: care_protocol.score NaN, reason set) */
    int has_care;
    int n_care_events;
    gt_pdm_care_event *care_events; /* [n_care_events], file order; malloc'd */
    gt_care_protocol care_protocol;
} gt_pdm_eval;
void gt_pdm_eval_free(gt_pdm_eval *e);

/* Collective. Scores every row with the models (multi-scale when n_models > 1),
 * calibrates the threshold on the validation rows of normal operation of the
 * training turbines, and evaluates alarms on the evaluation rows: the test
 * split of training turbines and all rows of held-out turbines.
 * scores_csv (may be NULL): the rank holding the evaluation turbine with the
 * most events writes its score trace "time_h,score,label" there. */
void gt_eval_pdm(const char *data_file, const gt_eval_model *ems, int n_models, const gt_eval_config *ec,
                 const char *scores_csv, MPI_Comm comm, gt_pdm_eval *out);

/* Collective. Writes out_path (HDF5): /timestamps int64 [N], /score float32 [N],
 * /alarm uint8 [N] (1 inside an alarm run), /labels uint8 [N],
 * /turbines/{id, row_offset}; root attributes kind = "pdm_scores",
 * threshold, quantile, margin, models. */
void gt_predict_pdm(const char *data_file, const gt_eval_model *ems, int n_models, const gt_eval_config *ec,
                    const char *out_path, MPI_Comm comm);

#endif
