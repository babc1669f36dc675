/* nilm/nilm_metrics.h: the NILM metrics as pure functions (no MPI, no HDF5):
 * sums per appliance (gt_nilm_acc) that callers merge over households and
 * ranks, then finalise. Undefined values are NaN here and null in eval.json
 * (docs/evaluation.md). */
#ifndef GT_NILM_NILM_METRICS_H
#define GT_NILM_NILM_METRICS_H

#include <stdint.h>

/* Sums over the evaluated samples of one appliance (or of all appliances:
 * merge). y = true power (W), yhat = predicted power (W, de-normalised and
 * clipped). "on" means power > on_power_w. */
typedef struct gt_nilm_acc {
    double n;             /* samples */
    double sum_abs_err;   /* sum |yhat - y|        W */
    double sum_sq_err;    /* sum (yhat - y)^2      W^2 */
    double sum_y, sum_yhat; /* W */
    double sum_y2;        /* sum y^2               W^2 */
    double tp, fp, fn, tn;/* on/off state counts */
    double wh_true, wh_pred; /* energy represented by the samples, Wh */
} gt_nilm_acc;

/* Adds one sample; `hours` is the time the sample stands for (period x
 * evaluation stride / 3600), for the energy totals. */
void gt_nilm_acc_add(gt_nilm_acc *a, double y, double yhat, double on_power_w, double hours);
/* The same with the predicted state given (pon: 0 off, 1 on) instead of
 * yhat > on_power_w: after a state filter the state is not the power's. */
void gt_nilm_acc_add_state(gt_nilm_acc *a, double y, double yhat, int pon, double on_power_w, double hours);

/* NILM state filter: post-processing of one appliance's predicted on/off
 * sequence with a minimum off and a minimum on duration (what NILMTK's
 * activations call min_off_duration / min_on_duration). In place on on[n]
 * (0/1), steps of step_s seconds: first every run of off steps lasting at
 * most fill_s (L x step_s <= fill_s) with an on step on both sides becomes on
 * (the gaps inside one cycle are closed); then every run of on steps lasting
 * less than min_on_s with an off step on both sides becomes off (flicker is
 * removed). brk (NULL: none) != 0 at step i marks a break before i (windows
 * missing from the grid): runs end there, and a run touching a break or an
 * end of the sequence is left as it is (its length is unknown). Returns the
 * number of steps changed. */
int64_t gt_nilm_state_filter(uint8_t *on, const uint8_t *brk, int64_t n, double step_s, double fill_s,
                             double min_on_s);
void gt_nilm_acc_merge(gt_nilm_acc *dst, const gt_nilm_acc *src);

typedef struct gt_nilm_metrics {
    double n;
    double mae_w;     /* sum|e| / n;                         NaN when n = 0 */
    double sae;       /* |sum yhat - sum y| / sum y;         NaN when sum y = 0 */
    double nde;       /* sqrt(sum e^2 / sum y^2);            NaN when sum y^2 = 0 */
    double precision; /* tp / (tp + fp);                     NaN when nothing predicted on */
    double recall;    /* tp / (tp + fn);                     NaN when never on */
    double f1;        /* 2 tp / (2 tp + fp + fn);            NaN when never on (tp + fn = 0) */
    double ea;        /* 1 - sum|e| / (2 sum y);             NaN when sum y = 0 */
    double energy_true_wh, energy_pred_wh;
} gt_nilm_metrics;

void gt_nilm_metrics_from_acc(const gt_nilm_acc *a, gt_nilm_metrics *m);

#endif
