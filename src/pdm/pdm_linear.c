/* pdm/pdm_linear.c: the linear stage of a normal-behaviour model's
 * residual (eval.nbm_linear; pdm_impl.h, docs/evaluation.md).
 *
 * Per target channel c, the value y_c(r) (normalised) is regressed on the
 * model's prediction p_c(r) and on linear features of the operating inputs:
 * a constant and, per feature channel j (the model's inputs of kind
 * operational or condition: wind speed, power, speeds, currents, ambient
 * temperature), its value x_j(r) and its EWMAs over 2 h, 6 h and 24 h
 * (x_j from the turbine's first row on, a missing sample entering as 0, the
 * training mean, as it enters the model). Ridge least squares over the
 * training split's normal rows (calibration mask) of every training turbine,
 * shrunk towards the model as it is (weight 1 on p_c); the residual scored is
 * then yhat_c - y_c. A model that learned the plant
 * keeps weight 1 on p_c and ~0 elsewhere; a model that did not (a few
 * hundred windows of one turbine) is completed by the linear physics
 * (component temperatures follow lagged load and ambient temperature). */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "pdm/pdm_impl.h"

static const double LIN_SPAN_S[GT_PDM_LIN_SPANS] = {7200, 21600, 86400};

void gt_pdm_lin_init(gt_pdm_lin *L, const gt_pdm_shard *sh, const uint8_t *role) {
    memset(L, 0, sizeof *L);
    const int C = sh->n_channels;
    L->C = C;
    for (int c = 0; c < C; c++) {
        if (role[c] == GT_NBM_TARGET) {
            L->tg[L->n_tg++] = c;
            continue;
        }
        if (role[c] != GT_NBM_INPUT || L->nf == GT_PDM_LIN_MAX_CH) continue;
        const gt_channel_kind k = gt_pdm_channel_kind_desc(sh->channels[c].name, sh->channels[c].desc,
                                                            sh->channels[c].unit);
        if (k == GT_CHANNEL_OPERATIONAL || k == GT_CHANNEL_CONDITION) L->fch[L->nf++] = c;
    }
    L->m = 1 + (1 + GT_PDM_LIN_SPANS) * L->nf;
    L->rec = L->m * L->m + L->n_tg * (2 * L->m + 2) + 1;
    L->beta = GT_CALLOC((size_t)C * (size_t)(L->m + 1), sizeof(double));
    L->on = GT_CALLOC((size_t)C, 1);
}

void gt_pdm_lin_free(gt_pdm_lin *L) {
    free(L->beta), free(L->on);
    memset(L, 0, sizeof *L);
}

void gt_pdm_lin_begin(gt_pdm_lin_state *st, const gt_pdm_lin *L, const float *sig, const gt_norm_stats *ns,
                      double rate) {
    memset(st, 0, sizeof *st);
    st->L = L, st->sig = sig, st->ns = ns;
    for (int s = 0; s < GT_PDM_LIN_SPANS; s++) {
        double span = LIN_SPAN_S[s] * rate;
        st->alpha[s] = 2.0 / ((span < 1 ? 1 : span) + 1.0);
    }
}

static inline double norm_x(const gt_pdm_lin_state *st, int64_t r, int c) {
    const double v = ((double)st->sig[r * st->L->C + c] - st->ns->mean[c]) / st->ns->std[c];
    return isfinite(v) ? v : 0.0;
}

/* the features of row r into st->f (rows visited in increasing order) */
static void advance(gt_pdm_lin_state *st, int64_t r) {
    const gt_pdm_lin *L = st->L;
    for (; st->next <= r; st->next++) {
        for (int j = 0; j < L->nf; j++) {
            const double x = norm_x(st, st->next, L->fch[j]);
            st->x[j] = x;
            for (int s = 0; s < GT_PDM_LIN_SPANS; s++) {
                double *e = &st->e[s][j];
                *e = st->next == 0 ? x : *e + st->alpha[s] * (x - *e);
            }
        }
    }
    double *f = st->f;
    f[0] = 1;
    for (int j = 0; j < L->nf; j++) {
        f[1 + j] = st->x[j];
        for (int s = 0; s < GT_PDM_LIN_SPANS; s++) f[1 + (1 + s) * L->nf + j] = st->e[s][j];
    }
}

void gt_pdm_lin_accumulate(gt_pdm_lin_state *st, int64_t r, const float *d, double *rec) {
    const gt_pdm_lin *L = st->L;
    const int m = L->m;
    for (int t = 0; t < L->n_tg; t++)
        if (!isfinite(d[L->tg[t]])) return; /* rows with every target's residual */
    advance(st, r);
    const double *f = st->f;
    for (int a = 0; a < m; a++)
        for (int b = a; b < m; b++) rec[a * m + b] += f[a] * f[b];
    double *q = rec + m * m;
    for (int t = 0; t < L->n_tg; t++, q += 2 * m + 2) {
        const int c = L->tg[t];
        const double y = (double)(float)(((double)st->sig[r * L->C + c] - st->ns->mean[c]) / st->ns->std[c]);
        const double p = (double)d[c] + y; /* the model's prediction */
        for (int a = 0; a < m; a++) q[a] += f[a] * p, q[m + a] += f[a] * y;
        q[2 * m] += p * p, q[2 * m + 1] += p * y;
    }
    rec[L->rec - 1] += 1;
}

/* Cholesky solve of the q x q system A x = b (A symmetric, upper triangle used); 0, or -1 when not positive */
static int chol_solve(double *A, int q, double *b) {
    for (int j = 0; j < q; j++) {
        double s = A[j * q + j];
        for (int k = 0; k < j; k++) s -= A[k * q + j] * A[k * q + j];
        if (!(s > 0)) return -1;
        const double dj = sqrt(s);
        A[j * q + j] = dj;
        for (int i = j + 1; i < q; i++) {
            double t = A[j * q + i];
            for (int k = 0; k < j; k++) t -= A[k * q + j] * A[k * q + i];
            A[j * q + i] = t / dj; /* U[j][i] */
        }
    }
    for (int i = 0; i < q; i++) { /* U^T z = b */
        double t = b[i];
        for (int k = 0; k < i; k++) t -= A[k * q + i] * b[k];
        b[i] = t / A[i * q + i];
    }
    for (int i = q - 1; i >= 0; i--) { /* U x = z */
        double t = b[i];
        for (int k = i + 1; k < q; k++) t -= A[i * q + k] * b[k];
        b[i] = t / A[i * q + i];
    }
    return 0;
}

void gt_pdm_lin_combine(const gt_pdm_lin *L, const double *all, int n_items, double *sum) {
    const int K = L->rec;
    memset(sum, 0, sizeof(double) * (size_t)K);
    for (int f = 0; f < n_items; f++) /* in file order: the same sums on any number of ranks */
        for (int i = 0; i < K; i++) sum[i] += all[(size_t)f * K + i];
}

int gt_pdm_lin_solve(gt_pdm_lin *L, const double *sum) {
    const int m = L->m, q = m + 1;
    const double n = sum[L->rec - 1];
    double *A = GT_MALLOC(sizeof(double) * (size_t)q * q), *b = GT_MALLOC(sizeof(double) * (size_t)q);
    int n_on = 0;
    const double *u = sum + m * m;
    for (int t = 0; t < L->n_tg; t++, u += 2 * m + 2) {
        const int c = L->tg[t];
        if (n < 10.0 * q) continue; /* too few rows: the model's residual as it is */
        for (int a = 0; a < m; a++)
            for (int bb = a; bb < m; bb++) A[a * q + bb] = sum[a * m + bb];
        for (int a = 0; a < m; a++) A[a * q + m] = u[a], b[a] = u[m + a];
        A[m * q + m] = u[2 * m], b[m] = u[2 * m + 1];
        double tr = 0;
        for (int a = 0; a < q; a++) tr += A[a * q + a];
        /* ridge relative to the features' scale, shrinking towards the model as it is (weight 1 on its
         * prediction, 0 on the features): a model that predicts the plant keeps its residual */
        const double lam = 1e-2 * tr / q;
        for (int a = 0; a < q; a++) A[a * q + a] += lam;
        b[m] += lam;
        if (chol_solve(A, q, b) != 0) continue;
        int ok = 1;
        for (int a = 0; a < q; a++) ok &= isfinite(b[a]);
        if (!ok) continue;
        memcpy(L->beta + (size_t)c * q, b, sizeof(double) * (size_t)q);
        L->on[c] = 1;
        n_on++;
    }
    free(A), free(b);
    return n_on;
}

void gt_pdm_lin_apply(gt_pdm_lin_state *st, int64_t r, const float *d, float *out) {
    const gt_pdm_lin *L = st->L;
    const int m = L->m, q = m + 1;
    memcpy(out, d, sizeof(float) * (size_t)L->C);
    advance(st, r);
    for (int t = 0; t < L->n_tg; t++) {
        const int c = L->tg[t];
        if (!L->on[c] || !isfinite(d[c])) continue;
        const double y = (double)(float)(((double)st->sig[r * L->C + c] - st->ns->mean[c]) / st->ns->std[c]);
        const double *be = L->beta + (size_t)c * q;
        double yh = be[m] * ((double)d[c] + y);
        for (int a = 0; a < m; a++) yh += be[a] * st->f[a];
        out[c] = (float)(yh - y);
    }
}
