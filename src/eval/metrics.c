/* eval/metrics.c: the metrics of evaluation every task may use (see metrics.h). */
#include "eval/metrics.h"

#include "core/check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------- anomaly -- */

void gt_ewma(const float *x, int64_t n, double alpha, float *out) {
    double s = NAN;
    for (int64_t t = 0; t < n; t++) {
        double v = x[t];
        if (isfinite(v)) s = isfinite(s) ? alpha * v + (1.0 - alpha) * s : v;
        out[t] = (float)s;
    }
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double gt_quantile(double *v, int64_t n, double q) {
    if (n <= 0) return NAN;
    qsort(v, (size_t)n, sizeof(double), cmp_d);
    if (q <= 0) return v[0];
    if (q >= 1) return v[n - 1];
    double h = (double)(n - 1) * q;
    int64_t lo = (int64_t)floor(h);
    int64_t hi = lo + 1 < n ? lo + 1 : n - 1;
    return v[lo] + (h - (double)lo) * (v[hi] - v[lo]);
}

int64_t gt_alarm_runs(const float *score, int64_t n, double thr, int64_t min_len, int64_t merge_gap,
                      gt_alarm_run *out) {
    int64_t k = 0;
    for (int64_t t = 0; t < n;) {
        if (!(score[t] > thr)) {
            t++;
            continue;
        }
        int64_t s = t;
        while (t < n && score[t] > thr) t++;
        if (k > 0 && s - out[k - 1].end <= merge_gap) out[k - 1].end = t;
        else out[k++] = (gt_alarm_run){s, t, 0};
    }
    int64_t m = 0;
    for (int64_t i = 0; i < k; i++)
        if (out[i].end - out[i].start >= (min_len > 1 ? min_len : 1)) out[m++] = out[i];
    return m;
}

double gt_fbeta(double p, double r, double beta) {
    if (isnan(p) || isnan(r)) return NAN;
    double b2 = beta * beta;
    return p + r > 0 ? (1 + b2) * p * r / (b2 * p + r) : 0.0;
}

double gt_care_score(double coverage, double accuracy, double reliability, double earliness) {
    if (isnan(accuracy) || isnan(earliness)) return NAN;
    if (isnan(coverage)) coverage = 0;
    if (isnan(reliability)) reliability = 0;
    if (accuracy < 0.5) return accuracy;
    return (coverage + 2.0 * accuracy + reliability + earliness) / 5.0;
}


/* ------------------------------------------------- CARE to Compare protocol -- */

int gt_care_ignores_normal_index(int farm) { return farm == 0; }

double gt_care_earliness_weight(int64_t i, int64_t L) {
    if (L <= 0 || i < 0 || i >= L) return 0;
    if (4 * i < L) return 1.0;
    double x = 16.0 * (double)i / (double)(4 * L - 1);
    return (4.0 - x) / 3.0;
}

/* F-beta from counts; 0 when tp = 0 (scikit-learn's zero_division default) */
static double fbeta_counts(double tp, double fp, double fn, double beta) {
    double b2 = beta * beta;
    return tp > 0 ? (1 + b2) * tp / ((1 + b2) * tp + b2 * fn + fp) : 0.0;
}

void gt_care_event_score(const uint8_t *pred, const uint8_t *normal, int64_t n, int64_t ev_start, int64_t ev_end,
                         int anomaly, double criticality_threshold, gt_care_event_eval *out) {
    memset(out, 0, sizeof *out);
    out->anomaly = anomaly != 0;
    int64_t s = ev_start < 0 ? 0 : ev_start, z = ev_end > n ? n : ev_end;
    if (z < s) z = s;
    double tp = 0, fp = 0, fn = 0, tn = 0;
    for (int64_t r = 0; r < n; r++) {
        if (!normal[r]) continue; /* only rows of normal status are scored */
        int gt = anomaly && r >= s && r < z, p = pred[r] != 0;
        tp += gt && p, fp += !gt && p, fn += gt && !p, tn += !gt && !p;
    }
    double m = tp + fp + fn + tn;
    out->accuracy = m > 0 ? (tp + tn) / m : NAN;
    out->coverage = anomaly ? fbeta_counts(tp, fp, fn, GT_CARE_BETA) : NAN;
    out->earliness = NAN;
    if (anomaly) {
        double sw = 0, sp = 0;
        for (int64_t r = s; r < z; r++) {
            double w = gt_care_earliness_weight(r - s, z - s);
            sw += w;
            sp += w * (pred[r] != 0);
        }
        out->earliness = sw > 0 ? sp / sw : NAN;
    }
    double c = 0, cmax = 0;
    int64_t end = ev_end < n ? ev_end : n;
    for (int64_t r = 0; r < end; r++) {
        if (normal[r]) c = pred[r] ? (c < GT_CARE_MAX_CRITICALITY ? c + 1 : c) : (c > 1 ? c - 1 : 0);
        if (c > cmax) cmax = c;
    }
    out->max_criticality = cmax;
    out->detected = cmax >= criticality_threshold;
}

void gt_care_protocol_final(const gt_care_event_eval *ev, int n, gt_care_protocol *o) {
    memset(o, 0, sizeof *o);
    o->score = o->coverage = o->accuracy = o->earliness = o->reliability = NAN;
    double sc = 0, nc = 0, sa = 0, na = 0, se = 0, ne = 0, tp = 0, fp = 0, fn = 0;
    for (int i = 0; i < n; i++) {
        const gt_care_event_eval *e = &ev[i];
        o->n_events++;
        o->n_detected += e->detected != 0;
        if (e->anomaly) {
            o->n_anomaly++;
            if (!isnan(e->coverage)) sc += e->coverage, nc++;
            if (!isnan(e->earliness)) se += e->earliness, ne++;
            tp += e->detected != 0, fn += !e->detected;
        } else {
            o->n_normal++;
            if (!isnan(e->accuracy)) sa += e->accuracy, na++;
            fp += e->detected != 0;
        }
    }
    if (nc > 0) o->coverage = sc / nc;
    if (na > 0) o->accuracy = sa / na;
    if (ne > 0) o->earliness = se / ne;
    if (n > 0) o->reliability = fbeta_counts(tp, fp, fn, GT_CARE_BETA);
    if (o->n_normal == 0 || o->n_anomaly == 0) {
        o->reason = "needs at least one normal and one anomaly event";
        return;
    }
    if (o->n_detected == 0) {
        o->score = 0;
        o->reason = "no event detected: score 0";
        return;
    }
    if (isnan(o->accuracy)) {
        o->reason = "no normal-status rows in any normal event: accuracy undefined";
        return;
    }
    if (o->accuracy <= 0.5) {
        o->score = o->accuracy;
        o->reason = "mean accuracy of the normal events <= 0.5: score = that accuracy";
        return;
    }
    double cov = isnan(o->coverage) ? 0 : o->coverage, ear = isnan(o->earliness) ? 0 : o->earliness;
    o->score = (cov + 2.0 * o->accuracy + ear + o->reliability) / 5.0;
}
