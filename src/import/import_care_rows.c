/* import/import_care_rows.c: one turbine of a CARE to Compare farm: its
 * files parsed into one concatenation, ordered, duplicates dropped, rows
 * outside the grid reported, resampled onto the 10-minute grid with labels,
 * segments, events and its /care_events entries (import/import_care_impl.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/log.h"
#include "import/import_care_impl.h"

static int status_kind(int s) {
    switch (s) {
    case 0: case 2: return K_NORMAL; /* normal operation, idling */
    case 1: return K_DERATED;
    case 3: return K_SERVICE;
    case 4: return K_DOWNTIME;
    default: return K_OTHER;         /* 5 and anything undocumented */
    }
}

/* merged rows of one turbine before resampling */
typedef struct {
    int64_t t;
    uint32_t line;
    int32_t file;
    int64_t idx; /* row in the concatenation */
} key;
static int key_cmp(const void *a, const void *b) {
    const key *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    if (x->file != y->file) return x->file < y->file ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

static void push_span(gt_io_span **v, int64_t *n, int64_t *cap, gt_io_span s) {
    if (*n == *cap) *v = GT_REALLOC(*v, sizeof(gt_io_span) * (size_t)(*cap = *cap ? *cap * 2 : 16));
    (*v)[(*n)++] = s;
}
static int span_cmp(const void *a, const void *b) {
    const gt_io_span *x = a, *y = b;
    if (x->start_row != y->start_row) return x->start_row < y->start_row ? -1 : 1;
    return (x->code > y->code) - (x->code < y->code);
}

/* Stray time stamps of an asset (import_parse.h, gt_stray_edges) among its M time-ordered kept rows
 * keep[] (times ts[], bits[]): each a warning naming FILE:LINE, then left out of keep/bits/ts, and
 * the files' prediction and training ranges (pmin..tmax, by the asset's file k) taken again without
 * them. Returns 0 or -1 (--strict: the error is in d). */
static int care_strays(const care_plan *P, const turbine *tb, const uint8_t *train, const uint32_t *line,
                       const int32_t *file, int64_t *keep, uint8_t *bits, int64_t *ts, int64_t *M, int64_t *pmin,
                       int64_t *pmax, int64_t *tmin, int64_t *tmax, gt_diag *d, care_stats *cs) {
    int64_t lo = 0, hi = *M;
    if (gt_stray_edges(ts, *M, &lo, &hi) == 0) return 0;
    for (int64_t i = 0; i < *M; i++) {
        if (i == lo) i = hi;
        if (i >= *M) break;
        const int64_t near = i < lo ? lo : hi - 1, r = keep[i], q = keep[near];
        cs->s.n_stray++;
        if (gt_diag_warn(d, GT_WARN_TIME_RANGE, "%s:%u: time stamp lies %lld days %s the rest of asset %lld's "
                         "rows (%s:%u): a stray clock; row skipped", P->f[file[r]].path, line[r],
                         (long long)(llabs(ts[i] - ts[near]) / 86400000), i < lo ? "before" : "after",
                         (long long)tb->asset, P->f[file[q]].path, line[q]))
            return -1;
    }
    const int64_t n = hi - lo;
    memmove(keep, keep + lo, sizeof *keep * (size_t)n);
    memmove(bits, bits + lo, (size_t)n);
    memmove(ts, ts + lo, sizeof *ts * (size_t)n);
    *M = n;
    for (int k = 0; k < tb->n_files; k++) pmin[k] = tmin[k] = INT64_MAX, pmax[k] = tmax[k] = INT64_MIN;
    for (int64_t i = 0; i < n; i++) {
        const int64_t r = keep[i];
        int k = 0;
        while (k < tb->n_files && tb->files[k] != file[r]) k++; /* an asset has a few files */
        if (k == tb->n_files) continue;
        if (train[r] & 2) pmin[k] = ts[i] < pmin[k] ? ts[i] : pmin[k], pmax[k] = ts[i] > pmax[k] ? ts[i] : pmax[k];
        if (train[r] & 1) tmin[k] = ts[i] < tmin[k] ? ts[i] : tmin[k], tmax[k] = ts[i] > tmax[k] ? ts[i] : tmax[k];
    }
    return 0;
}

/* One asset's rows: every file of it parsed into one concatenation (N rows
 * of C channels in the plan's order), and the time range of each file's
 * prediction (pmin, pmax) and training (tmin, tmax) part. */
typedef struct {
    int64_t N, cap;
    int64_t *t;
    float *v;
    uint8_t *status, *train;
    uint32_t *line;
    int32_t *file;
    int64_t *pmin, *pmax, *tmin, *tmax; /* [n_files] */
} asset_rows;

static void asset_rows_free(asset_rows *A) {
    free(A->pmin);
    free(A->pmax);
    free(A->tmin);
    free(A->tmax);
    free(A->t);
    free(A->v);
    free(A->status);
    free(A->train);
    free(A->line);
    free(A->file);
    memset(A, 0, sizeof *A);
}

/* 1. Parses every file of turbine tb into A. 0, or -1 with the error in d. */
static int gather_rows(const care_plan *P, const turbine *tb, int64_t tol, gt_diag *d, care_stats *cs, asset_rows *A) {
    const int C = P->C;
    memset(A, 0, sizeof *A);
    A->pmin = GT_MALLOC(sizeof(int64_t) * (size_t)tb->n_files), A->pmax = GT_MALLOC(sizeof(int64_t) * (size_t)tb->n_files);
    A->tmin = GT_MALLOC(sizeof(int64_t) * (size_t)tb->n_files);
    A->tmax = GT_MALLOC(sizeof(int64_t) * (size_t)tb->n_files);
    for (int k = 0; k < tb->n_files; k++) {
        A->pmin[k] = A->tmin[k] = INT64_MAX, A->pmax[k] = A->tmax[k] = INT64_MIN;
        const dfile *f = &P->f[tb->files[k]];
        gt_text tx;
        if (gt_text_open(&tx, f->path, d)) return -1;
        cs->bytes += (int64_t)tx.n;
        gt_care_rows r;
        int rc = gt_parse_care_rows(tx.p, tx.n, f->path, tol, &r, d, &cs->s);
        gt_text_close(&tx);
        if (rc) {
            gt_care_rows_free(&r);
            return -1;
        }
        if (r.n_cols != f->n_fcols) {
            gt_care_rows_free(&r);
            gt_diag_error(d, GT_EXIT_INTERNAL, "%s: header changed while importing", f->path);
            return -1;
        }
        if (r.n == 0 && gt_diag_warn(d, GT_WARN_CHANNEL, "%s: empty channel (no data rows)", f->path)) {
            gt_care_rows_free(&r);
            return -1;
        }
        if (r.n_status_empty > 0 &&
            gt_diag_warn(d, GT_WARN_OTHER, "%s: %lld rows with an empty status_type_id: status 5 (other), left out of training and "
                            "normal_index", f->path, (long long)r.n_status_empty)) {
            gt_care_rows_free(&r);
            return -1;
        }
        for (int64_t i = 0; i < r.n; i++)
            if (r.asset[i] != tb->asset) {
                gt_diag_error(d, GT_EXIT_DATA, "%s:%u: asset_id %lld differs from the file's first row (%lld)", f->path,
                              r.line[i], (long long)r.asset[i], (long long)tb->asset);
                gt_care_rows_free(&r);
                return -1;
            }
        if (A->N + r.n > A->cap) {
            A->cap = (A->N + r.n) * 2;
            const char *what = "import care: an asset's rows";
            A->t = GT_REALLOC_ARRAY(A->t, A->cap, 8, what);
            A->v = GT_REALLOC_ARRAY(A->v, A->cap * C, 4, what);
            A->status = GT_REALLOC_ARRAY(A->status, A->cap, 1, what);
            A->train = GT_REALLOC_ARRAY(A->train, A->cap, 1, what);
            A->line = GT_REALLOC_ARRAY(A->line, A->cap, 4, what);
            A->file = GT_REALLOC_ARRAY(A->file, A->cap, 4, what);
        }
        for (int64_t i = 0; i < r.n; i++) {
            float *row = A->v + (size_t)(A->N + i) * C;
            for (int c = 0; c < C; c++) row[c] = NAN;
            const float *src = r.v + (size_t)i * r.n_cols;
            for (int c = 0; c < r.n_cols; c++) row[f->colmap[c]] = src[c];
            A->t[A->N + i] = r.t[i];
            A->status[A->N + i] = r.status[i];
            A->train[A->N + i] = r.train[i];
            A->line[A->N + i] = r.line[i];
            A->file[A->N + i] = tb->files[k];
            if (r.train[i] & 2) { /* the file's prediction part */
                if (r.t[i] < A->pmin[k]) A->pmin[k] = r.t[i];
                if (r.t[i] > A->pmax[k]) A->pmax[k] = r.t[i];
            }
            if (r.train[i] & 1) { /* its training part (the authors' protocol trains one model on it) */
                if (r.t[i] < A->tmin[k]) A->tmin[k] = r.t[i];
                if (r.t[i] > A->tmax[k]) A->tmax[k] = r.t[i];
            }
        }
        A->N += r.n;
        gt_care_rows_free(&r);
    }
    if (A->N == 0) {
        gt_diag_error(d, GT_EXIT_DATA, "asset %lld: no data rows in any of its files", (long long)tb->asset);
        return -1;
    }
    return 0;
}

/* 2. The rows of A in time order (ties: file order, line), exact duplicates
 * dropped and conflicting ones reported: *keep_out [M] (indices into A) and
 * *bits_out [M] (the train/prediction bits of every duplicate merged).
 * Returns M, or -1 with the error in d. */
static int64_t dedup_rows(const care_plan *P, const asset_rows *A, gt_diag *d, care_stats *cs, int64_t **keep_out,
                          uint8_t **bits_out) {
    const int C = P->C;
    /* 2. order by time (ties: file order, line), drop exact duplicates, report conflicts */
    key *ky = GT_MALLOC(sizeof(key) * (size_t)A->N);
    for (int64_t i = 0; i < A->N; i++) ky[i] = (key){A->t[i], A->line[i], A->file[i], i};
    qsort(ky, (size_t)A->N, sizeof(key), key_cmp);
    int64_t *keep = GT_MALLOC(sizeof(int64_t) * (size_t)A->N);
    uint8_t *bits = GT_MALLOC((size_t)A->N);
    int64_t M = 0;
    for (int64_t i = 0; i < A->N; i++) {
        int64_t r = ky[i].idx;
        if (M > 0 && ky[i].t == A->t[keep[M - 1]]) {
            int64_t q = keep[M - 1];
            int same = A->status[q] == A->status[r];
            for (int c = 0; same && c < C; c++) {
                float a = A->v[(size_t)q * C + c], b = A->v[(size_t)r * C + c];
                same = a == b || (isnan(a) && isnan(b));
            }
            bits[M - 1] |= A->train[r];
            if (same) {
                cs->s.n_exact_dup++;
            } else {
                cs->s.n_conflict++;
                if (gt_diag_warn(d, GT_WARN_CONFLICT, "%s:%u: conflicting duplicate of the row at %s:%u (same time stamp, other values); keeping that one",
                                 P->f[ky[i].file].path, ky[i].line, P->f[A->file[q]].path, A->line[q])) {
                    free(ky);
                    free(keep);
                    free(bits);
                    return -1;
                }
            }
            continue;
        }
        bits[M] = A->train[r];
        keep[M++] = r;
    }
    free(ky);
    *keep_out = keep;
    *bits_out = bits;
    return M;
}

/* Events (status runs of kinds 2..5 and the asset's anomaly events, which
 * also label their rows lab [n]) and segments (runs of equal cond_bits) of
 * turbine tb on grid g. 0, or -1 with the error in d. */
static int asset_spans(const care_plan *P, const turbine *tb, const gt_grid *g, int64_t n, uint8_t *lab,
                       const uint8_t *cond_bits, gt_diag *d, gt_io_span **ev_out, int64_t *n_ev_out,
                       gt_io_span **seg_out, int64_t *n_seg_out) {
    gt_io_span *ev = NULL, *seg = NULL;
    int64_t n_ev = 0, ev_cap = 0, n_seg = 0, seg_cap = 0;
    for (int64_t k = 0; k < n;) { /* status runs -> events of kinds 2..5 */
        int64_t j = k;
        while (j < n && lab[j] == lab[k]) j++;
        if (lab[k] != K_NORMAL) push_span(&ev, &n_ev, &ev_cap, (gt_io_span){k, j, lab[k]});
        k = j;
    }
    for (int e = 0; e < P->n_ev; e++) { /* anomaly events of this asset */
        const gt_care_event *x = &P->ev[e];
        if (x->asset != tb->asset || !x->anomaly) continue;
        int64_t a = gt_grid_row(g, x->start_ms), b = gt_grid_row(g, x->end_ms) + 1;
        if (a < 0) a = 0;
        if (b > n) b = n;
        if (a >= b) {
            if (gt_diag_warn(d, GT_WARN_OTHER, "event_info.csv: anomaly event %lld of asset %lld lies outside the asset's data; not labelled",
                             (long long)x->event_id, (long long)tb->asset)) {
                free(ev);
                return -1;
            }
            continue;
        }
        push_span(&ev, &n_ev, &ev_cap, (gt_io_span){a, b, K_ANOMALY});
        for (int64_t k = a; k < b; k++) lab[k] = K_ANOMALY;
    }
    if (n_ev > 1) qsort(ev, (size_t)n_ev, sizeof(gt_io_span), span_cmp); /* ev is NULL without events */
    for (int64_t k = 0; k < n;) {
        int64_t j = k;
        while (j < n && cond_bits[j] == cond_bits[k]) j++;
        int code = cond_bits[k] == 1 ? C_TRAIN : cond_bits[k] == 2 ? C_PRED : cond_bits[k] == 3 ? C_BOTH : C_NONE;
        push_span(&seg, &n_seg, &seg_cap, (gt_io_span){k, j, code});
        k = j;
    }
    *ev_out = ev;
    *n_ev_out = n_ev;
    *seg_out = seg;
    *n_seg_out = n_seg;
    return 0;
}

/* The CARE event datasets of turbine ti (files with an event_info.csv row and
 * a prediction part) as /care_events entries on grid g of n rows: *ce_out
 * (CE_K values each, malloc'd); returns their count. */
static int64_t care_event_rows(const care_plan *P, int ti, const asset_rows *A, const gt_grid *g, int64_t n,
                               int64_t **ce_out) {
    const turbine *tb = &P->t[ti];
    /* CARE event datasets of this asset (files with an event_info.csv row and a prediction part) */
    int64_t *ce = GT_MALLOC(sizeof(int64_t) * CE_K * (size_t)(tb->n_files + 1));
    int64_t n_ce = 0;
    for (int k = 0; k < tb->n_files; k++) {
        const dfile *f = &P->f[tb->files[k]];
        const gt_care_event *x = gt_care_event_find(P, f->event_id);
        if (!x || A->pmin[k] > A->pmax[k]) continue;
        int64_t ps = gt_grid_row(g, A->pmin[k]), pe = gt_grid_row(g, A->pmax[k]) + 1;
        int64_t es = gt_grid_row(g, x->start_ms), ee = gt_grid_row(g, x->end_ms) + 1;
        if (es < 0) es = 0;
        if (ee > n) ee = n;
        if (ps < 0 || pe > n || ps >= pe || es >= ee) continue; /* outside the asset's data */
        int64_t ts = -1, te = -1; /* no training rows: -1, -1 */
        if (A->tmin[k] <= A->tmax[k]) {
            ts = gt_grid_row(g, A->tmin[k]), te = gt_grid_row(g, A->tmax[k]) + 1;
            if (ts < 0) ts = 0;
            if (te > n) te = n;
            if (ts >= te) ts = te = -1;
        }
        int64_t *q = ce + CE_K * n_ce++;
        q[0] = ti, q[1] = f->event_id, q[2] = x->anomaly != 0, q[3] = ps, q[4] = pe, q[5] = es, q[6] = ee;
        q[7] = ts, q[8] = te;
    }
    *ce_out = ce;
    return n_ce;
}

int gt_care_build_turbine(care_plan *P, int ti, const gt_import_opts *o, gt_diag *d, care_stats *cs) {
    turbine *tb = &P->t[ti];
    const int C = P->C;
    const int64_t pms = llround(o->period_s * 1000), tol = llround(o->backward_tol_s * 1000);
    /* 1. parse every file of the asset into one concatenation */
    asset_rows A;
    if (gather_rows(P, tb, tol, d, cs, &A) != 0) goto fail;
    /* 2. order by time (ties: file order, line), drop exact duplicates, report conflicts */
    int64_t *keep = NULL;
    uint8_t *bits = NULL;
    int64_t M = dedup_rows(P, &A, d, cs, &keep, &bits);
    if (M < 0) goto fail;
    /* 3. resample on the grid */
    int64_t *ts = GT_MALLOC(sizeof(int64_t) * (size_t)M);
    float *col = GT_MALLOC(sizeof(float) * (size_t)M);
    for (int64_t i = 0; i < M; i++) ts[i] = A.t[keep[i]];
    if (care_strays(P, tb, A.train, A.line, A.file, keep, bits, ts, &M, A.pmin, A.pmax, A.tmin, A.tmax, d, cs)) {
        free(ts), free(col), free(keep), free(bits);
        goto fail;
    }
    gt_grid g = gt_grid_span(ts[0], ts[M - 1], pms);
    const int64_t n = g.n_rows;
    int64_t at = 0; /* a grid of decades for a few rows: refused before it is allocated */
    if (gt_grid_too_sparse(n, ts, M, &at)) {
        const int64_t r = keep[at], q = keep[at > 0 ? at - 1 : 0];
        gt_diag_error(d, GT_EXIT_DATA, "%s:%u: %lld days after %s:%u: the grid of asset %lld would have %lld rows of "
                      "%g s for %lld rows (more than %d per row): fix the clock of the source", P->f[A.file[r]].path,
                      A.line[r], (long long)((ts[at] - ts[at > 0 ? at - 1 : 0]) / 86400000), P->f[A.file[q]].path, A.line[q],
                      (long long)tb->asset, (long long)n, o->period_s, (long long)M, GT_IMPORT_GRID_MAX_RATIO);
        free(ts), free(col), free(keep), free(bits);
        goto fail;
    }
    void *blob = GT_ALLOC_ARRAY(n, (size_t)C * 4 + 1, "import care: an asset's grid");
    float *sig = blob;
    uint8_t *lab = (uint8_t *)(sig + (size_t)n * C);
    for (int c = 0; c < C; c++) {
        for (int64_t i = 0; i < M; i++) col[i] = A.v[(size_t)keep[i] * C + c];
        gt_resample_mean(ts, col, M, &g, sig + c, (size_t)C, P->angle[c]);
    }
    /* labels from status (worst in the bin), conditions from the train/prediction bits */
    uint8_t *cond_bits = GT_CALLOC_ARRAY(n, 1, "import care: an asset's grid");
    memset(lab, 0, (size_t)n);
    for (int64_t i = 0; i < M; i++) {
        int64_t k = gt_grid_row(&g, ts[i]);
        int kind = status_kind(A.status[keep[i]]);
        if (kind > lab[k]) lab[k] = (uint8_t)kind;
        cond_bits[k] |= bits[i];
    }
    free(ts);
    free(col);
    free(keep);
    free(bits);
    gt_io_span *ev = NULL, *seg = NULL;
    int64_t n_ev = 0, n_seg = 0;
    const int rc = asset_spans(P, tb, &g, n, lab, cond_bits, d, &ev, &n_ev, &seg, &n_seg);
    free(cond_bits);
    if (rc != 0) {
        free(blob);
        goto fail;
    }
    /* CARE event datasets of this asset (files with an event_info.csv row and a prediction part) */
    int64_t *ce = NULL;
    P->n_ce[ti] = care_event_rows(P, ti, &A, &g, n, &ce);
    P->ce[ti] = ce;
    asset_rows_free(&A);
    P->blob[ti] = blob;
    P->n_rows[ti] = n;
    P->t0[ti] = g.t0_ms;
    P->seg[ti] = seg;
    P->n_seg[ti] = n_seg;
    P->evs[ti] = ev;
    P->n_evt[ti] = n_ev;
    return 0;
fail:
    asset_rows_free(&A);
    return -1;
}
