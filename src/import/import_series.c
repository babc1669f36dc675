/* import/import_series.c: time series of the importers (see import_parse.h):
 * the "timestamp value" channel parser, cleaning (order, duplicates, stray
 * time stamps) and resampling onto a grid (gaps, legs summed). Built on the
 * text layer of import_parse.c. No MPI, no HDF5. */
#define _GNU_SOURCE
#include "import/import_parse.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/check.h"
#include "core/log.h"

/* ---------------------------------------------------------------- series -- */

void gt_series_push(gt_series *s, int64_t t, float v, uint32_t line) {
    if (s->n == s->cap) {
        int64_t cap = s->cap ? s->cap * 2 : 4096;
        s->t = GT_REALLOC_ARRAY(s->t, cap, sizeof *s->t, "import: a channel's samples");
        s->v = GT_REALLOC_ARRAY(s->v, cap, sizeof *s->v, "import: a channel's samples");
        s->line = GT_REALLOC_ARRAY(s->line, cap, sizeof *s->line, "import: a channel's samples");
        s->cap = cap;
    }
    s->t[s->n] = t;
    s->v[s->n] = v;
    s->line[s->n] = line;
    s->n++;
}

void gt_series_free(gt_series *s) {
    free(s->t);
    free(s->v);
    free(s->line);
    memset(s, 0, sizeof *s);
}


int gt_time_check(int64_t t, const char *fname, uint64_t line, gt_diag *d, gt_series_stats *st) {
    if (t >= GT_IMPORT_TS_MIN_MS && t < GT_IMPORT_TS_MAX_MS) return 0;
    if (st) st->n_bad_time++;
    if (gt_diag_warn(d, GT_WARN_TIME_RANGE, "%s:%llu: time stamp %lld ms is outside 1990-01-01..2100-01-01; line skipped", fname,
                     (unsigned long long)line, (long long)t))
        return -1;
    return 1;
}

/* Backward-step bookkeeping shared by the parsers. Returns -1 on a strict error. */
static inline int note_time(gt_series *s, int64_t t, int64_t *latest, int64_t tol, const char *fname,
                            uint64_t line, gt_diag *d, gt_series_stats *st) {
    if (t < *latest) {
        s->unsorted = 1;
        s->n_backward++;
        if (st) st->n_backward++;
        if (*latest - t > tol) {
            if (st) st->n_backward_far++;
            if (gt_diag_warn(d, GT_WARN_BACKWARD, "%s:%llu: timestamp goes back %.3f s (more than the tolerance %.3f s); the samples are sorted",
                             fname, (unsigned long long)line, (double)(*latest - t) / 1000.0, (double)tol / 1000.0))
                return -1;
        }
    } else {
        *latest = t;
    }
    return 0;
}

int gt_parse_tv(const char *buf, size_t n, const char *fname, int col, int min_fields, int max_fields,
                int64_t backward_tol_ms, gt_series *out, gt_diag *d, gt_series_stats *st) {
    const char *p = buf, *end = buf + n;
    uint64_t line = 0;
    int64_t latest = INT64_MIN;
    char ex[48], why[160];
    gt_bad_lines bad = {0};
    const int64_t n0 = out->n;
    while (p < end) {
        line++;
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        const char *le = eol;
        if (le > p && le[-1] == '\r') le--;
        const char *q = p;
        while (q < le && gt_is_blank(*q)) q++;
        if (q == le) { /* blank line */
            p = eol + 1;
            continue;
        }
        if (line > UINT32_MAX) return gt_diag_error(d, GT_EXIT_DATA, "%s: more than 2^32 lines", fname);
        int64_t t;
        const char *r = gt_parse_unix_ms(q, le, &t);
        if (!r || (r < le && !gt_is_blank(*r))) {
            gt_text_excerpt(q, le, ex, sizeof ex);
            snprintf(why, sizeof why, "bad timestamp in '%s' (expected unix seconds)", ex);
            goto bad_line;
        }
        q = r;
        int fields = 1;
        double val = NAN;
        while (1) {
            while (q < le && gt_is_blank(*q)) q++;
            if (q >= le) break;
            fields++;
            if (fields > max_fields) {
                gt_text_excerpt(p, le, ex, sizeof ex);
                snprintf(why, sizeof why, "malformed line '%s' (expected at most %d fields)", ex, max_fields);
                goto bad_line;
            }
            double x;
            r = gt_parse_f64(q, le, &x);
            if (!r || (r < le && !gt_is_blank(*r))) {
                gt_text_excerpt(q, le, ex, sizeof ex);
                snprintf(why, sizeof why, "non-numeric value '%s'", ex);
                goto bad_line;
            }
            if (fields - 1 == col) val = x;
            q = r;
        }
        if (fields < min_fields) {
            gt_text_excerpt(p, le, ex, sizeof ex);
            snprintf(why, sizeof why, "malformed line '%s' (expected %d fields, got %d)", ex, min_fields, fields);
            goto bad_line;
        }
        int bad_t = gt_time_check(t, fname, line, d, st);
        if (bad_t < 0) return -1;
        if (!bad_t) {
            if (note_time(out, t, &latest, backward_tol_ms, fname, line, d, st)) return -1;
            gt_series_push(out, t, (float)val, (uint32_t)line);
        }
        p = eol + 1;
        continue;
    bad_line: /* skipped while the file has at most d->max_bad_lines of them, else the error */
        if (gt_bad_line(d, &bad, fname, line, "%s", why)) return -1;
        p = eol + 1;
    }
    if (st) {
        st->n_lines += (int64_t)line;
        st->n_samples += out->n - n0;
    }
    return gt_bad_lines_end(d, &bad, fname, st);
}

/* ------------------------------------------------------------------ sort --- */

typedef struct {
    int64_t t;
    float v;
    uint32_t line;
} rec;

static int rec_cmp(const void *a, const void *b) {
    const rec *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

static int drop_strays(gt_series *s, const char *fname, gt_diag *d, gt_series_stats *st);

static int same_value(float a, float b) { return a == b || (isnan(a) && isnan(b)); }

int gt_series_clean(gt_series *s, const char *fname, gt_diag *d, gt_series_stats *st) {
    if (s->unsorted) {
        rec *r = GT_ALLOC_ARRAY(s->n, sizeof(rec), "import: a channel's samples");
        for (int64_t i = 0; i < s->n; i++) r[i] = (rec){s->t[i], s->v[i], s->line[i]};
        qsort(r, (size_t)s->n, sizeof(rec), rec_cmp);
        for (int64_t i = 0; i < s->n; i++) s->t[i] = r[i].t, s->v[i] = r[i].v, s->line[i] = r[i].line;
        free(r);
        s->unsorted = 0;
    }
    int64_t w = 0;
    for (int64_t i = 0; i < s->n; i++) {
        if (w > 0 && s->t[i] == s->t[w - 1]) {
            if (same_value(s->v[i], s->v[w - 1])) {
                if (st) st->n_exact_dup++;
            } else {
                if (st) st->n_conflict++;
                if (gt_diag_warn(d, GT_WARN_CONFLICT, "%s:%u: conflicting duplicate of the timestamp at line %u (%.9g vs %.9g); keeping line %u",
                                 fname, s->line[i], s->line[w - 1], (double)s->v[i], (double)s->v[w - 1],
                                 s->line[w - 1]))
                    return -1;
            }
            continue;
        }
        s->t[w] = s->t[i];
        s->v[w] = s->v[i];
        s->line[w] = s->line[i];
        w++;
    }
    s->n = w;
    return drop_strays(s, fname, d, st);
}

/* ---------------------------------------------------------------- strays -- */

int64_t gt_stray_edges(const int64_t *t, int64_t n, int64_t *lo, int64_t *hi) {
    *lo = 0, *hi = n;
    const int64_t m = n / 100 > 1 ? n / 100 : 1; /* the most strays at one end */
    int64_t a = 0, b = n;
    for (int64_t i = 0; i < m && i + 1 < n; i++)
        if (t[i + 1] - t[i] > GT_IMPORT_STRAY_GAP_MS) a = i + 1;
    for (int64_t j = n - 1; j >= n - m && j > a; j--)
        if (t[j] - t[j - 1] > GT_IMPORT_STRAY_GAP_MS) b = j;
    if (b - a <= n / 2) return 0; /* no majority left: nothing is a stray (the grid check decides) */
    *lo = a, *hi = b;
    return n - (b - a);
}

int gt_grid_too_sparse(int64_t n_rows, const int64_t *t, int64_t n, int64_t *gap_at) {
    *gap_at = 0;
    for (int64_t i = 1; i < n; i++)
        if (t[i] - t[i - 1] > t[*gap_at] - t[*gap_at > 0 ? *gap_at - 1 : 0]) *gap_at = i;
    const int64_t base = n > GT_IMPORT_GRID_MIN_SAMPLES ? n : GT_IMPORT_GRID_MIN_SAMPLES;
    return n_rows / GT_IMPORT_GRID_MAX_RATIO >= base;
}

static void ymd(int64_t ms, char *out, size_t out_bytes) {
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    if (gmtime_r(&s, &tm)) strftime(out, out_bytes, "%Y-%m-%d", &tm);
    else snprintf(out, out_bytes, "%lld ms", (long long)ms);
}

static int drop_strays(gt_series *s, const char *fname, gt_diag *d, gt_series_stats *st) {
    int64_t lo = 0, hi = s->n;
    if (gt_stray_edges(s->t, s->n, &lo, &hi) == 0) return 0;
    for (int64_t i = 0; i < s->n; i++) {
        if (i == lo) i = hi;
        if (i >= s->n) break;
        const int64_t near = i < lo ? lo : hi - 1, days = llabs(s->t[i] - s->t[near]) / 86400000;
        char when[32];
        ymd(s->t[i], when, sizeof when);
        if (st) st->n_stray++;
        if (gt_diag_warn(d, GT_WARN_TIME_RANGE, "%s:%u: time stamp %s lies %lld days %s the rest of the recording "
                         "(line %u): a stray clock; line skipped", fname, s->line[i], when, (long long)days,
                         i < lo ? "before" : "after", s->line[near]))
            return -1;
    }
    const int64_t k = hi - lo;
    memmove(s->t, s->t + lo, sizeof *s->t * (size_t)k);
    memmove(s->v, s->v + lo, sizeof *s->v * (size_t)k);
    memmove(s->line, s->line + lo, sizeof *s->line * (size_t)k);
    s->n = k;
    return 0;
}

/* --------------------------------------------------------------- resample -- */

gt_grid gt_grid_span(int64_t first_ms, int64_t last_ms, int64_t period_ms) {
    gt_grid g = {0, period_ms, 0};
    int64_t f = first_ms >= 0 ? first_ms / period_ms : -((-first_ms + period_ms - 1) / period_ms);
    g.t0_ms = f * period_ms;
    g.n_rows = (last_ms - g.t0_ms) / period_ms + 1;
    return g;
}

int64_t gt_resample_mean(const int64_t *t, const float *v, int64_t n, const gt_grid *g, float *out, size_t stride,
                         int angle_deg) {
    for (int64_t k = 0; k < g->n_rows; k++) out[(size_t)k * stride] = NAN;
    int64_t outside = 0;
    int64_t i = 0;
    const double rad = M_PI / 180.0;
    while (i < n) {
        int64_t k = gt_grid_row(g, t[i]);
        if (k < 0 || k >= g->n_rows) {
            outside++;
            i++;
            continue;
        }
        double sum = 0, sc = 0, ss = 0, first = 0;
        int64_t cnt = 0;
        int64_t bin_end = g->t0_ms + (k + 1) * g->period_ms;
        for (; i < n && t[i] < bin_end; i++) {
            double x = v[i];
            if (!isfinite(x)) continue;
            if (cnt == 0) first = x;
            cnt++;
            if (angle_deg) sc += cos(x * rad), ss += sin(x * rad);
            else sum += x;
        }
        if (cnt == 1) out[(size_t)k * stride] = (float)first;
        else if (cnt > 1) {
            if (angle_deg) {
                double a = atan2(ss, sc) / rad;
                if (a < 0) a += 360.0;
                if (a >= 360.0) a -= 360.0;
                out[(size_t)k * stride] = (float)a;
            } else {
                out[(size_t)k * stride] = (float)(sum / (double)cnt);
            }
        }
    }
    return outside;
}

int64_t gt_mark_gaps(const int64_t *t, int64_t n, const gt_grid *g, int64_t max_gap_ms, uint8_t *flags, uint8_t bit) {
    int64_t marked = 0;
#define MARK(a, b)                                                  \
    for (int64_t k_ = (a) < 0 ? 0 : (a); k_ < (b) && k_ < g->n_rows; k_++) \
        if (!(flags[k_] & bit)) flags[k_] |= bit, marked++;
    if (n == 0) {
        MARK(0, g->n_rows);
        return marked;
    }
    /* the grid's first and last row start stand for the neighbouring samples at the ends: a series that
     * starts or ends a few rows inside the grid (one REDD leg a second after the other) has a short hole
     * there, as inside, not gap rows */
    if (t[0] - g->t0_ms > max_gap_ms) MARK(0, gt_grid_row(g, t[0]));
    for (int64_t i = 0; i + 1 < n; i++)
        if (t[i + 1] - t[i] > max_gap_ms) MARK(gt_grid_row(g, t[i]) + 1, gt_grid_row(g, t[i + 1]));
    if (g->t0_ms + (g->n_rows - 1) * g->period_ms - t[n - 1] > max_gap_ms)
        MARK(gt_grid_row(g, t[n - 1]) + 1, g->n_rows);
#undef MARK
    return marked;
}

int64_t gt_sum_legs(const float *const *legs, int n_legs, int64_t n, int64_t max_hole_rows, float *out, size_t stride) {
    if (n_legs == 1) {
        for (int64_t k = 0; k < n; k++) out[(size_t)k * stride] = legs[0][k];
        return 0;
    }
    /* bridged[j]: leg j with its short holes interpolated (the same rule as data.fill_max_s) */
    float *bridged = GT_ALLOC_ARRAY((n > 0 ? n : 1) * (int64_t)n_legs, sizeof(float), "import: an appliance's legs");
    for (int j = 0; j < n_legs; j++) {
        float *b = bridged + (size_t)j * (size_t)n;
        memcpy(b, legs[j], sizeof(float) * (size_t)n);
        for (int64_t i = 0; i < n; i++) {
            if (isfinite(b[i])) continue;
            int64_t e = i;
            while (e < n && !isfinite(b[e])) e++;
            if (i > 0 && e < n && e - i <= max_hole_rows) { /* hole [i, e) with a value on both sides */
                const double lo = b[i - 1], hi = b[e], span = (double)(e - i + 1);
                for (int64_t k = i; k < e; k++) b[k] = (float)(lo + (hi - lo) * (double)(k - i + 1) / span);
            }
            i = e;
        }
    }
    int64_t n_bridged = 0;
    for (int64_t k = 0; k < n; k++) {
        int any = 0, miss = 0;
        for (int j = 0; j < n_legs; j++) {
            any |= isfinite(legs[j][k]) != 0;
            miss += !isfinite(legs[j][k]);
        }
        float s = NAN;
        if (any) {
            s = bridged[k];
            for (int j = 1; j < n_legs; j++) s += bridged[(size_t)j * (size_t)n + (size_t)k];
            if (isfinite(s)) n_bridged += miss;
        }
        out[(size_t)k * stride] = s;
    }
    free(bridged);
    return n_bridged;
}
