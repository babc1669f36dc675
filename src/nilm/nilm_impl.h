/* nilm/nilm_impl.h: what the files of the NILM task share (internal to
 * nilm/): its data side (dataset_nilm.c, nilm_augment.c), and what NILM
 * evaluation (eval_nilm.c) and per-row prediction (nilm_predict.c) share: the
 * model or ensemble they run, its output rule and the watt conversions. */
#ifndef GT_NILM_NILM_IMPL_H
#define GT_NILM_NILM_IMPL_H

#include <math.h>
#include <mpi.h>
#include <stdint.h>

#include "data/dataset_impl.h"
#include "eval/eval.h"
#include "eval/eval_impl.h"
#include "nilm/nilm.h"

/* ------------------------------------------------------- the data side -- */
/* The NILM part of a dataset (gt_dataset.part, dataset_nilm.c); the
 * appliances' series are the dataset's `cols`. */
typedef struct gt_nilm_part {
    gt_nilm_shard *sh;  /* owned */
    float *tfeat;       /* time features [n_rows, cfg.time_features], or NULL */
    int64_t *strides;   /* [n_items, A]: appliance a counts where start % stride == 0 */
    uint32_t app_mask;  /* appliances whose targets count (bit a) */
    /* augmentation: activations [act_off[li * A + a], act_off[li * A + a + 1]) of acts */
    int64_t *acts;      /* (row, len) pairs, local rows */
    int64_t *act_off;   /* [n_items * A + 1] */
} gt_nilm_part;
extern const gt_data_task_i gt_data_task_nilm; /* dataset_nilm.c */
extern const struct gt_task_i gt_task_nilm;    /* task_nilm.c: training's table */
extern const struct gt_task_opts gt_nilm_opts; /* nilm_opts.c: its data.* option rows */
void gt_nilm_data_config_defaults(void *cfg);  /* nilm_data_config.c: the data table's config_defaults */
/* input channels per time step: the aggregate and the time features (dataset_nilm.c) */
int gt_nilm_n_in(const gt_data_config *cfg, int n_cols);
/* the activations augmentation draws from (nilm_augment.c) */
void gt_ds_find_activations(gt_dataset *ds);
/* gt_dataset_augment's NILM side (nilm_augment.c) */
int64_t gt_nilm_augment(const gt_dataset *ds, uint64_t epoch, const gt_window_ref *refs, int64_t n, float *x,
                        float *y, const float *mask);

/* W of predicted power for normalised output v of appliance a, clipped to
 * [0, max_power_w]; with off_below_on, a prediction at or below the on-power
 * threshold (the appliance is predicted off) is reported as 0 W. */
static inline double denorm_clip(const gt_norm_stats *ns, const gt_io_appliance *meta, int a, double v,
                                 int off_below_on) {
    double w = v * ns->std[1 + a] + ns->mean[1 + a];
    double hi = meta[a].max_power_w > 0 ? meta[a].max_power_w : INFINITY;
    if (off_below_on && w <= meta[a].on_power_w) return 0;
    return w < 0 ? 0 : w > hi ? hi : w;
}

/* How outputs become watts: the on-threshold rule and, for the gated head,
 * the per-appliance decision thresholds on the on-logit. */
typedef struct out_rule {
    int off_below_on;
    float gate[GT_DATA_MAX_TARGETS]; /* gated: on where logit > gate[a] */
    int filter;                      /* 1: the state filter below runs (eval.calibrate_filter) */
    float fill_s[GT_DATA_MAX_TARGETS], min_on_s[GT_DATA_MAX_TARGETS]; /* its durations (gt_nilm_state_filter) */
} out_rule;

/* W predicted for appliance a of sample b: the power output, de-normalised
 * and clipped; with the gated head 0 W where the on-logit is <= its threshold. */
static inline double predict_w(const gt_model *m, const gt_norm_stats *ns, const gt_io_appliance *meta, int A, int b,
                               int a, const out_rule *rule) {
    const float *p = m->pred + (size_t)b * (size_t)m->cfg.n_out;
    if (m->cfg.gated && !(p[A + a] > rule->gate[a])) return 0;
    return denorm_clip(ns, meta, a, p[a], rule->off_below_on);
}

/* Raw W of appliance a of sample b: the power output de-normalised and
 * clipped, whatever the gate and the on-threshold say (a step the state
 * filter turns on reports this). */
static inline double raw_w(const gt_model *m, const gt_norm_stats *ns, const gt_io_appliance *meta, int b, int a) {
    return denorm_clip(ns, meta, a, m->pred[(size_t)b * (size_t)m->cfg.n_out + a], 0);
}

/* W reported for a step whose state the filter set to `on` (was `was`):
 * unchanged -> yhat; turned on -> the raw power; turned off -> 0 W. */
static inline double filtered_w(double yhat, double wraw, int was, int on) {
    return on == was ? yhat : on ? wraw : 0.0;
}

/* The model eval and predict run: one trained model, or an ensemble of
 * members with the same window, inputs, head, normalisation and splits
 * (eval.models). Member 0's x and pred are the ensemble's: nilm_forward runs
 * every member on member 0's inputs and leaves in member 0's pred, per
 * appliance, the mean over the members trained on it (data.appliances; power
 * outputs: the mean in the common normalised units; gated head: the mean
 * on-probability, stored back as its logit; an appliance one member covers:
 * that member's outputs as they are). Appliances no member was trained on
 * are not evaluated (the dataset's target mask) and predicted as NaN. */
typedef struct nilm_model {
    gt_engine *e;             /* member 0 */
    gt_model *m;              /* member 0's host model: its x and pred are the ensemble's */
    gt_norm_stats ns;         /* the (common) frozen statistics */
    gt_data_config data;      /* member 0's training data configuration; appliances: the members' union */
    const char *name;
    const gt_eval_model *ems; /* the members */
    int n;
    uint32_t cover[GT_EVAL_MAX_MODELS]; /* member j's appliances (bit a: trained on appliance a) */
    uint32_t covered;                   /* their union */
    int n_cover[GT_DATA_MAX_TARGETS];   /* members per appliance */
    double *acc;                        /* (max_batch, n_out) the ensemble's sums (n > 1) */
} nilm_model;

nilm_model gt_nilm_model_of(const gt_eval_model *ems, int n, const gt_io_appliance *meta, int A);
void gt_nilm_model_free(nilm_model *em);
void gt_nilm_forward(const nilm_model *em, int k);
int64_t gt_nilm_eval_stride(const gt_eval_config *ec, int64_t rows);
/* the eval table's config_defaults (nilm_eval_config.c) */
void gt_nilm_eval_config_defaults(void *cfg);
void gt_nilm_make_rule(const char *data_file, const nilm_model *em, const gt_eval_config *ec, int64_t stride,
                      MPI_Comm comm, out_rule *rule);

#endif
