/* pdm/pdm_impl.h: what the files of the PdM task share (internal to pdm/):
 * its data side (dataset_pdm.c) and the PdM evaluation's parts, one concern
 * per file:
 *   pdm_score.c   rows planned per turbine, the anomaly score of every row
 *                 (residual terms, flat-line term, EWMA, operating envelope)
 *   pdm_linear.c  eval.nbm_linear: the linear stage of a normal-behaviour
 *                 model's residual (features, sums, ridge fit, residual)
 *   pdm_calib.c   calibration rows and the alarm threshold
 *   eval_pdm.c    alarms, event metrics, the CARE protocol (gt_eval_pdm)
 *   pdm_output.c  predict's HDF5 file and eval's score trace
 * Every function named "Collective" is called by every rank of comm in the
 * same order; its collectives go through dist/reduce.h. */
#ifndef GT_PDM_PDM_IMPL_H
#define GT_PDM_PDM_IMPL_H

#include <mpi.h>
#include <stdint.h>

#include "data/dataset_impl.h"
#include "eval/eval.h"
#include "pdm/pdm.h"

extern const struct gt_data_task_i gt_data_task_pdm; /* dataset_pdm.c: the data side */
extern const struct gt_task_i gt_task_pdm;           /* task_pdm.c: training's table */
extern const struct gt_task_opts gt_pdm_opts;        /* pdm_opts.c: its data.* option rows */
void gt_pdm_eval_config_defaults(void *cfg);         /* pdm_eval_config.c: the eval table's config_defaults */
void gt_pdm_data_config_defaults(void *cfg);         /* pdm_data_config.c: the data table's config_defaults */

/* The PdM part of a dataset (gt_dataset.part, dataset_pdm.c). */
typedef struct gt_pdm_part {
    gt_pdm_shard *sh;         /* owned */
    uint8_t *nbm_role;        /* data.pdm_target = nbm [C]: gt_nbm_role of each channel; else NULL */
    int nbm_n_in, nbm_n_tg;
    gt_norm_stats *item_norm; /* data.norm = turbine [n_items]: each item's statistics; else NULL */
} gt_pdm_part;
/* its usage lines after the per-item table (pdm_usage.c; gt_data_task_i log_channels) */
void gt_pdm_log_channels(const gt_dataset *ds, const gt_item_usage *u, int n, const gt_screen_summary *g,
                         char *most_spike, char *most_gap, size_t cap);

/* ---- pdm_rows.c: the rows a turbine's fit uses ---- */

/* data.norm = turbine (pdm): the statistics of one turbine from its signals
 * sig (n_rows, C) and labels (n_rows): mean and std (population, floored as
 * the global ones) of each channel over the train-split rows [0, b1) of the
 * turbine (gt_data_item_split; b1 = 0 for a held-out turbine) without
 * skip[r] (gt_pdm_fit_skip: rows of normal operation in the selected
 * conditions), non-finite values skipped. A channel with fewer than GT_PDM_ITEM_NORM_MIN such values keeps
 * the statistics of glob (a held-out turbine: all of them). The one
 * definition used by the dataset (training, validation) and by eval and
 * predict. Not collective. */
#define GT_PDM_ITEM_NORM_MIN 2
void gt_pdm_item_norm(const float *sig, const uint8_t *skip, int64_t b1, int C, const gt_norm_stats *glob,
                       gt_norm_stats *out);
/* The data table's item_rows (data/dataset_impl.h; gt_data_item_rows_of):
 * with data.care_event resolved (gt_pdm_care_select), only the event
 * dataset's turbine has rows: its training part [train_lo, train_hi) split
 * chronologically in the ratio split_train : split_val into train and
 * validation, and its prediction part [pred_lo, pred_hi) as the test split;
 * every other turbine is excluded (returns 1). Without one: 0 (the shared
 * rule). Not collective. */
int gt_pdm_item_rows(const gt_data_config *dc, int64_t n_rows, int32_t file_index, gt_data_item_rows *r);
/* in[r] (r < the rows of local turbine k of sh) = 1 where row r lies in a
 * condition segment whose code passes f; every row passes an empty filter.
 * Not collective. */
void gt_pdm_rows_in(const gt_pdm_shard *sh, int k, const gt_data_filter *f, uint8_t *in);
/* The rows of local turbine k that the model is not fitted on (skip[r] = 1):
 * labelled rows with data.train_normal_only, rows outside
 * data.conditions or data.train_conditions. What the per-turbine statistics
 * skip (gt_pdm_item_norm), in the dataset and in eval. Not collective. */
void gt_pdm_fit_skip(const gt_pdm_shard *sh, int k, const gt_data_config *cfg, uint8_t *skip);

typedef struct gt_pdm_tinfo { /* one local turbine */
    int64_t r0, n;      /* local rows */
    int64_t a0, b1, b2; /* splits (gt_data_item_rows_of): train [a0,b1), val [b1,b2); a0 = 0 but with data.care_event */
    int64_t e0, e1;     /* evaluation rows: the test split (or all rows of a held-out turbine) */
    int64_t c1;         /* calibration rows [c1, b2): b1 (validation) or a0 (train + validation) */
    int holdout;
    int holdout_split;  /* held out by data.holdout_every (holdout is also set for skipped turbines) */
    int skip;           /* outside data.items / farms / machine_types: neither calibrates nor is evaluated */
    double rate;
} gt_pdm_tinfo;

/* eval.envelope's local counts (pdm_score.c) */
typedef struct gt_pdm_env_out {
    int64_t rows_out;           /* local rows set NaN */
    int64_t rows_scored;        /* local rows with a score before */
    int64_t by_channel[GT_DATA_MAX_CHANNELS]; /* local rows out because of that channel (the first out) */
} gt_pdm_env_out;

/* ---- pdm_score.c ---- */

/* The longest window of the models. */
int gt_pdm_max_window(const gt_eval_model *ems, int n_models);
/* The rows of every local turbine (malloc'd): splits, evaluation and
 * calibration rows; d: the first model's data settings with data.care_event
 * resolved (gt_pdm_care_select); T: gt_pdm_max_window. */
gt_pdm_tinfo *gt_pdm_plan_turbines(const gt_pdm_shard *sh, const gt_data_config *d, const gt_eval_config *ec, int T);
/* Collective: the combined smoothed score of every local row (malloc'd) and
 * the threshold (gt_pdm_threshold: *thr, *qv_out, *n_val, *level); *top_out
 * (malloc'd): each row's top channel, the one with the largest term of the
 * score (of the model whose score wins), -1 for none. all_rows = 0
 * (evaluation): rows before the calibration rows of training turbines, and
 * filtered-out turbines, are left NaN (not needed). */
float *gt_pdm_scores(const char *data_file, const gt_pdm_shard *sh, const gt_pdm_tinfo *ti, const gt_eval_model *ems,
                     int n_models, const gt_eval_config *ec, int all_rows, MPI_Comm comm, double *thr, double *qv_out,
                     int64_t *n_val, int *level, int16_t **top_out, gt_pdm_env_out *env);
/* Collective: the envelope's totals over the ranks; who != NULL: logs them. */
void gt_pdm_envelope_summary(const gt_pdm_env_out *eo, const gt_pdm_shard *sh, MPI_Comm comm, gt_pdm_envelope *es,
                             const char *who);

/* ---- pdm_calib.c ---- */

/* Rows that do not calibrate (malloc'd, 1 = excluded): a label in the
 * previous `guard` rows, outside data.conditions, outside
 * data.train_conditions. */
uint8_t *gt_pdm_exclusion_mask(const gt_pdm_shard *sh, int64_t guard, const gt_data_filter *conds,
                               const gt_data_filter *train_conds);
/* Collective: quantile q of the scores of the calibration rows (not excl)
 * of the training turbines, thinned evenly to at most max_val values;
 * *n_used: the values used. */
double gt_pdm_val_quantile(const gt_pdm_shard *sh, const gt_pdm_tinfo *ti, const uint8_t *excl, const float *score,
                           double q, int64_t max_val, int64_t *n_used, MPI_Comm comm);
/* Collective: the alarm threshold of the smoothed score `score` (the one
 * the alarms use) from its calibration rows: *thr, the level it stands on
 * (*qv: the quantile, or the robust level) and the values used (*n_val);
 * Returns the level used (gt_pdm_level: quantile where eval.level = robust
 * finds no positive level); see pdm_calib.c. */
int gt_pdm_threshold(const gt_pdm_shard *sh, const gt_pdm_tinfo *ti, const uint8_t *excl, const float *score,
                     const gt_eval_config *ec, MPI_Comm comm, double *thr, double *qv, int64_t *n_val);

/* ---- pdm_linear.c: eval.nbm_linear, the linear stage of a normal-behaviour model's residual ---- */

#define GT_PDM_LIN_MAX_CH 16 /* feature channels (operational and condition inputs, in file order) */
#define GT_PDM_LIN_SPANS 3   /* EWMAs of each feature channel: 2 h, 6 h, 24 h */
typedef struct gt_pdm_lin {
    int C, nf, n_tg;
    int fch[GT_PDM_LIN_MAX_CH];   /* feature channels */
    int tg[GT_DATA_MAX_CHANNELS]; /* target channels */
    int m;                        /* features: 1 + (1 + spans) nf; a target's regressors: m + its prediction */
    int rec;                      /* doubles of one turbine's sums (gt_pdm_lin_accumulate) */
    double *beta;                 /* [C][m + 1]: per target, the features' weights then the prediction's */
    uint8_t *on;                  /* [C] 1: the target has a fit */
} gt_pdm_lin;
typedef struct gt_pdm_lin_state { /* one turbine's pass, rows in increasing order */
    const gt_pdm_lin *L;
    const float *sig;             /* the turbine's signals [n, C] */
    const gt_norm_stats *ns;
    double alpha[GT_PDM_LIN_SPANS];
    int64_t next;                 /* the next row the features advance to */
    double x[GT_PDM_LIN_MAX_CH], e[GT_PDM_LIN_SPANS][GT_PDM_LIN_MAX_CH];
    double f[1 + (1 + GT_PDM_LIN_SPANS) * GT_PDM_LIN_MAX_CH];
} gt_pdm_lin_state;
/* The feature and target channels of a normal-behaviour model (role: gt_pdm_nbm_roles). */
void gt_pdm_lin_init(gt_pdm_lin *L, const gt_pdm_shard *sh, const uint8_t *role);
void gt_pdm_lin_free(gt_pdm_lin *L);
void gt_pdm_lin_begin(gt_pdm_lin_state *st, const gt_pdm_lin *L, const float *sig, const gt_norm_stats *ns, double rate);
/* row r's residuals d[C] (prediction - value) added to the turbine's sums rec[L->rec] (rows with every target finite) */
void gt_pdm_lin_accumulate(gt_pdm_lin_state *st, int64_t r, const float *d, double *rec);
/* the turbines' sums all[n_items][L->rec] (file order) added into sum[L->rec] */
void gt_pdm_lin_combine(const gt_pdm_lin *L, const double *all, int n_items, double *sum);
/* the weights from the combined sums of every training turbine; returns the targets fitted */
int gt_pdm_lin_solve(gt_pdm_lin *L, const double *sum);
/* row r's residuals of the linear stage: out[c] = yhat_c - y_c for fitted targets, else d[c] */
void gt_pdm_lin_apply(gt_pdm_lin_state *st, int64_t r, const float *d, float *out);

/* ---- eval_pdm.c ---- */

/* alarm[0..n) := 1 inside the alarm runs of score[0..n) at thr (eval.min_duration_s,
 * eval.merge_gap_s at `rate` rows per second), else left as it is. */
void gt_pdm_alarm_mask(const float *score, int64_t n, double thr, const gt_eval_config *ec, double rate,
                       uint8_t *alarm);

/* ---- pdm_output.c ---- */

/* eval's score trace of local turbine k (the report's plot): its evaluation
 * rows thinned to at most about 4000 lines, written atomically to path. */
void gt_pdm_write_trace(const char *path, const gt_pdm_shard *sh, const gt_pdm_tinfo *ti, int k, const float *score,
                        const int16_t *top, double thr);

#endif
