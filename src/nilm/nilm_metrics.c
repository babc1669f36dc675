/* nilm/nilm_metrics.c: the NILM metrics (see nilm/nilm_metrics.h). */
#include "nilm/nilm_metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void gt_nilm_acc_add(gt_nilm_acc *a, double y, double yhat, double on_power_w, double hours) {
    gt_nilm_acc_add_state(a, y, yhat, yhat > on_power_w, on_power_w, hours);
}

void gt_nilm_acc_add_state(gt_nilm_acc *a, double y, double yhat, int pon, double on_power_w, double hours) {
    double e = yhat - y;
    a->n += 1;
    a->sum_abs_err += fabs(e);
    a->sum_sq_err += e * e;
    a->sum_y += y;
    a->sum_yhat += yhat;
    a->sum_y2 += y * y;
    int on = y > on_power_w;
    pon = pon != 0;
    a->tp += on && pon;
    a->fp += !on && pon;
    a->fn += on && !pon;
    a->tn += !on && !pon;
    a->wh_true += y * hours;
    a->wh_pred += yhat * hours;
}

/* Runs of value v of at most maxlen steps, bounded on both sides by the other
 * value inside one segment, take the other value. Returns the steps changed. */
static int64_t flip_short_runs(uint8_t *on, const uint8_t *brk, int64_t n, uint8_t v, int64_t maxlen) {
    int64_t changed = 0;
    for (int64_t i = 0; i < n;) {
        if (on[i] != v) {
            i++;
            continue;
        }
        int64_t j = i + 1;
        while (j < n && on[j] == v && !(brk && brk[j])) j++;
        /* [i, j) is a run of v; a neighbour inside the segment is the other value */
        int left = i > 0 && !(brk && brk[i]), right = j < n && !(brk && brk[j]);
        if (left && right && j - i <= maxlen) {
            memset(on + i, !v, (size_t)(j - i));
            changed += j - i;
        }
        i = j;
    }
    return changed;
}

int64_t gt_nilm_state_filter(uint8_t *on, const uint8_t *brk, int64_t n, double step_s, double fill_s,
                             double min_on_s) {
    if (!(step_s > 0)) return 0;
    /* off runs of L steps with L step_s <= fill_s; on runs with L step_s < min_on_s */
    int64_t fill = (int64_t)floor(fill_s / step_s + 1e-9), short_on = (int64_t)ceil(min_on_s / step_s - 1e-9) - 1;
    int64_t changed = 0;
    if (fill > 0) changed += flip_short_runs(on, brk, n, 0, fill);
    if (short_on > 0) changed += flip_short_runs(on, brk, n, 1, short_on);
    return changed;
}

void gt_nilm_acc_merge(gt_nilm_acc *d, const gt_nilm_acc *s) {
    d->n += s->n;
    d->sum_abs_err += s->sum_abs_err;
    d->sum_sq_err += s->sum_sq_err;
    d->sum_y += s->sum_y;
    d->sum_yhat += s->sum_yhat;
    d->sum_y2 += s->sum_y2;
    d->tp += s->tp;
    d->fp += s->fp;
    d->fn += s->fn;
    d->tn += s->tn;
    d->wh_true += s->wh_true;
    d->wh_pred += s->wh_pred;
}

void gt_nilm_metrics_from_acc(const gt_nilm_acc *a, gt_nilm_metrics *m) {
    m->n = a->n;
    m->mae_w = a->n > 0 ? a->sum_abs_err / a->n : NAN;
    m->sae = a->sum_y > 0 ? fabs(a->sum_yhat - a->sum_y) / a->sum_y : NAN;
    m->nde = a->sum_y2 > 0 ? sqrt(a->sum_sq_err / a->sum_y2) : NAN;
    m->precision = a->tp + a->fp > 0 ? a->tp / (a->tp + a->fp) : NAN;
    m->recall = a->tp + a->fn > 0 ? a->tp / (a->tp + a->fn) : NAN;
    m->f1 = a->tp + a->fn > 0 ? 2 * a->tp / (2 * a->tp + a->fp + a->fn) : NAN;
    m->ea = a->sum_y > 0 ? 1.0 - a->sum_abs_err / (2.0 * a->sum_y) : NAN;
    m->energy_true_wh = a->wh_true;
    m->energy_pred_wh = a->wh_pred;
}

