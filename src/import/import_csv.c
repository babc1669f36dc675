/* import/import_csv.c: delimited-text parsers of the importers: REFIT CLEAN_HouseN.csv,
 * CARE to Compare data files, event_info.csv and feature_description.csv (see
 * import_parse.h). No MPI, no HDF5. */
#define _GNU_SOURCE
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/repeat.h"
#include "import/import_parse.h"

static inline int is_blank(char c) { return c == ' ' || c == '\t'; }

static void excerpt(const char *p, const char *end, char *out, size_t out_bytes) {
    size_t k = 0;
    while (p < end && *p != '\n' && *p != '\r' && k + 1 < out_bytes && k < 40) {
        unsigned char c = (unsigned char)*p++;
        out[k++] = (c >= 32 && c < 127) ? (char)c : '?';
    }
    out[k] = 0;
}

/* Next line [*s, *e) from *p; returns 0 at the end. Strips "\r". */
static inline int next_line(const char **p, const char *end, const char **s, const char **e) {
    if (*p >= end) return 0;
    const char *eol = memchr(*p, '\n', (size_t)(end - *p));
    if (!eol) eol = end;
    *s = *p;
    *e = eol;
    if (*e > *s && (*e)[-1] == '\r') (*e)--;
    *p = eol + 1;
    return 1;
}

static int field_is(const char *f, int len, const char *name) {
    while (len > 0 && is_blank(*f)) f++, len--;
    while (len > 0 && is_blank(f[len - 1])) len--;
    size_t n = strlen(name);
    if ((size_t)len != n) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = f[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c + 32);
        if (c != name[i]) return 0;
    }
    return 1;
}

static void field_copy(const char *f, int len, char *out, size_t out_bytes) {
    while (len > 0 && is_blank(*f)) f++, len--;
    while (len > 0 && is_blank(f[len - 1])) len--;
    size_t n = (size_t)len < out_bytes - 1 ? (size_t)len : out_bytes - 1;
    memcpy(out, f, n);
    out[n] = 0;
}

/* A value field: number, or empty / NaN when allow_empty. Returns 0 or -1. */
static inline int parse_value(const char *f, const char *fe, int allow_empty, double *v) {
    while (f < fe && is_blank(*f)) f++;
    while (fe > f && is_blank(fe[-1])) fe--;
    if (f == fe) {
        if (!allow_empty) return -1;
        *v = NAN;
        return 0;
    }
    const char *r = gt_parse_f64(f, fe, v);
    return r == fe ? 0 : -1;
}

/* ----------------------------------------------------------------- REFIT --- */

int gt_parse_refit(const char *buf, size_t n, const char *fname, int64_t backward_tol_ms, gt_series series[10],
                   gt_diag *d, gt_refit_stats *st) {
    const char *p = buf + gt_bom_len(buf, n), *end = buf + n, *s, *e;
    char ex[48];
    if (!next_line(&p, end, &s, &e)) return gt_diag_error(d, GT_EXIT_DATA, "%s:1: empty file (no header)", fname);
    {
        const char *f[16];
        int len[16];
        static const char *want[13] = {"time", "unix", "aggregate", "appliance1", "appliance2", "appliance3", "appliance4",
                                       "appliance5", "appliance6", "appliance7", "appliance8", "appliance9", "issues"};
        int nf = gt_split_fields(s, e, ',', f, len, 16);
        int ok = nf == 13;
        for (int i = 0; ok && i < 13; i++) ok = field_is(f[i], len[i], want[i]);
        if (!ok) {
            excerpt(s, e, ex, sizeof ex);
            return gt_diag_error(d, GT_EXIT_DATA,
                                 "%s:1: bad header '%s' (expected Time,Unix,Aggregate,Appliance1..Appliance9,Issues)",
                                 fname, ex);
        }
    }
    uint64_t line = 1;
    int64_t latest = INT64_MIN;
    char why[160];
    gt_bad_lines bad = {0};
    while (next_line(&p, end, &s, &e)) {
        line++;
        if (s == e) continue;
        if (line > UINT32_MAX) return gt_diag_error(d, GT_EXIT_DATA, "%s: more than 2^32 lines", fname);
        const char *q = memchr(s, ',', (size_t)(e - s)); /* skip Time */
        if (!q) goto malformed;
        q++;
        int64_t t;
        const char *r = gt_parse_unix_ms(q, e, &t);
        if (!r || r >= e || *r != ',') {
            excerpt(q, e, ex, sizeof ex);
            snprintf(why, sizeof why, "bad Unix timestamp in '%s'", ex);
            goto bad_line;
        }
        q = r + 1;
        float vals[10];
        for (int c = 0; c < 10; c++) {
            const char *fe = memchr(q, ',', (size_t)(e - q));
            if (!fe) goto malformed;
            double x;
            if (parse_value(q, fe, 0, &x)) {
                excerpt(q, e, ex, sizeof ex);
                snprintf(why, sizeof why, "non-numeric value '%s' in column %d", ex, c + 3);
                goto bad_line;
            }
            vals[c] = (float)x;
            q = fe + 1;
        }
        double iss;
        if (memchr(q, ',', (size_t)(e - q))) goto malformed;
        if (parse_value(q, e, 0, &iss) || (iss != 0 && iss != 1)) {
            excerpt(q, e, ex, sizeof ex);
            snprintf(why, sizeof why, "Issues must be 0 or 1 (got '%s')", ex);
            goto bad_line;
        }
        int bad_t = gt_time_check(t, fname, line, d, st ? &st->s : NULL);
        if (bad_t < 0) return -1;
        if (bad_t) continue;
        if (iss == 1 && st) st->n_issues++;
        if (t < latest) {
            for (int c = 0; c < 10; c++) series[c].unsorted = 1;
            if (st) st->s.n_backward++;
            if (latest - t > backward_tol_ms) {
                if (st) st->s.n_backward_far++;
                if (gt_diag_warn(d, GT_WARN_BACKWARD, "%s:%llu: timestamp goes back %.3f s (more than the tolerance %.3f s); the rows are sorted",
                                 fname, (unsigned long long)line, (double)(latest - t) / 1000.0,
                                 (double)backward_tol_ms / 1000.0))
                    return -1;
            }
        } else {
            latest = t;
        }
        for (int c = 0; c < 10; c++) gt_series_push(&series[c], t, vals[c], (uint32_t)line);
        continue;
    malformed:
        excerpt(s, e, ex, sizeof ex);
        snprintf(why, sizeof why, "malformed line '%s' (expected 13 comma separated fields)", ex);
    bad_line: /* skipped while the file has at most d->max_bad_lines of them (a truncated last row), else the error */
        if (gt_bad_line(d, &bad, fname, line, "%s", why)) return -1;
    }
    if (st) {
        st->s.n_lines += (int64_t)line;
        st->s.n_samples += series[0].n;
    }
    return gt_bad_lines_end(d, &bad, fname, st ? &st->s : NULL);
}

/* ------------------------------------------------------------------ CARE --- */

enum { CARE_TIME = -1, CARE_ASSET = -2, CARE_ID = -3, CARE_TRAIN = -4, CARE_STATUS = -5, CARE_SKIP = -6 };

/* [*a, *b) without surrounding blanks and one pair of surrounding double quotes
 * (pandas and Excel quote fields: "train" reads as train). */
static inline void field_unquote(const char **a, const char **b) {
    while (*a < *b && is_blank(**a)) (*a)++;
    while (*b > *a && is_blank((*b)[-1])) (*b)--;
    if (*b - *a >= 2 && **a == '"' && (*b)[-1] == '"') {
        (*a)++, (*b)--;
        while (*a < *b && is_blank(**a)) (*a)++;
        while (*b > *a && is_blank((*b)[-1])) (*b)--;
    }
}

typedef struct {
    const char *name; /* sensor column's name as in the header (quotes removed) */
    int len, field;
} care_col;
static int care_col_cmp(const void *a, const void *b) {
    const care_col *x = a, *y = b;
    int lx = x->len < 63 ? x->len : 63, ly = y->len < 63 ? y->len : 63; /* names are stored in 63 bytes */
    int c = memcmp(x->name, y->name, (size_t)(lx < ly ? lx : ly));
    if (c == 0 && lx != ly) c = lx < ly ? -1 : 1;
    if (c == 0) c = (x->field > y->field) - (x->field < y->field);
    return c;
}

/* Column roles from the header: role[i] = sensor index >= 0 or CARE_*. */
static int care_header(const char *s, const char *e, const char *fname, char sep, gt_care_rows *out, int **role_out,
                       int *n_fields_out, gt_diag *d) {
    int nf = gt_split_fields(s, e, sep, NULL, NULL, 0);
    const char **f = GT_MALLOC(sizeof(char *) * (size_t)nf);
    int *len = GT_MALLOC(sizeof(int) * (size_t)nf);
    int *role = GT_MALLOC(sizeof(int) * (size_t)nf);
    gt_split_fields(s, e, sep, f, len, nf);
    for (int i = 0; i < nf; i++) { /* blanks and quotes off every name (quotes inside quotes included) */
        const char *a = f[i], *b = f[i] + len[i];
        field_unquote(&a, &b);
        f[i] = a, len[i] = (int)(b - a);
    }
    static const char *meta[5] = {"time_stamp", "asset_id", "id", "train_test", "status_type_id"};
    int seen[5] = {0};
    out->n_cols = 0;
    out->index_col = 0;
    int rc = 0, n_sensor = 0;
    for (int i = 0; i < nf && rc == 0; i++) {
        int m = -1;
        for (int k = 0; k < 5; k++)
            if (field_is(f[i], len[i], meta[k])) m = k;
        if (m >= 0) {
            if (seen[m]++) rc = gt_diag_error(d, GT_EXIT_DATA, "%s:1: column '%s' appears twice", fname, meta[m]);
            role[i] = -1 - m;
        } else if (len[i] == 0 && i == nf - 1 && nf > 1) {
            role[i] = CARE_SKIP; /* a separator ending every line */
        } else if ((len[i] == 0 && i == 0) || field_is(f[i], len[i], "unnamed: 0")) {
            if (out->index_col) {
                rc = gt_diag_error(d, GT_EXIT_DATA, "%s:1: column %d has an empty name", fname, i + 1);
            }
            out->index_col = i + 1; /* pandas' index (to_csv without index=False) */
            role[i] = CARE_SKIP;
        } else if (len[i] == 0) {
            rc = gt_diag_error(d, GT_EXIT_DATA, "%s:1: column %d has an empty name", fname, i + 1);
        } else {
            role[i] = n_sensor++;
        }
    }
    for (int k = 0; rc == 0 && k < 5; k++)
        if (!seen[k]) rc = gt_diag_error(d, GT_EXIT_DATA, "%s:1: missing column '%s'", fname, meta[k]);
    if (rc == 0 && n_sensor > GT_IMPORT_MAX_COLS)
        rc = gt_diag_error(d, GT_EXIT_DATA, "%s:1: %d sensor columns; a file holds at most %d channels", fname, n_sensor,
                           GT_IMPORT_MAX_COLS);
    if (rc == 0) { /* unique names: sorted, equal neighbours (O(n log n): CARE farms have ~1000 columns) */
        care_col *cc = GT_MALLOC(sizeof(care_col) * (size_t)(n_sensor ? n_sensor : 1));
        for (int i = 0; i < nf; i++)
            if (role[i] >= 0) cc[role[i]] = (care_col){f[i], len[i], i};
        qsort(cc, (size_t)n_sensor, sizeof(care_col), care_col_cmp);
        int best = -1; /* the pair whose second column comes first in the header */
        for (int k = 1; k < n_sensor; k++)
            if (care_col_cmp(&(care_col){cc[k - 1].name, cc[k - 1].len, 0}, &(care_col){cc[k].name, cc[k].len, 0}) == 0 &&
                (best < 0 || cc[k].field < cc[best].field))
                best = k;
        if (best >= 0) {
            const care_col *x = &cc[best - 1], *y = &cc[best];
            if (x->len == y->len && !memcmp(x->name, y->name, (size_t)x->len))
                rc = gt_diag_error(d, GT_EXIT_DATA, "%s:1: column '%.*s' appears twice (columns %d and %d)", fname,
                                   x->len > 200 ? 200 : x->len, x->name, x->field + 1, y->field + 1);
            else
                rc = gt_diag_error(d, GT_EXIT_DATA,
                                   "%s:1: columns %d and %d ('%.63s...') are the same in their first 63 bytes "
                                   "(names are kept to 63)", fname, x->field + 1, y->field + 1, x->name);
        }
        free(cc);
    }
    if (rc == 0) {
        out->col = GT_MALLOC(sizeof(*out->col) * (size_t)(n_sensor ? n_sensor : 1));
        for (int i = 0; i < nf; i++)
            if (role[i] >= 0) field_copy(f[i], len[i], out->col[role[i]], sizeof *out->col);
        out->n_cols = n_sensor;
    }
    free(f);
    free(len);
    if (rc) {
        free(role);
        return -1;
    }
    *role_out = role;
    *n_fields_out = nf;
    return 0;
}

int gt_parse_care_header(const char *buf, size_t n, const char *fname, gt_care_rows *out, gt_diag *d) {
    memset(out, 0, sizeof *out);
    size_t bom = gt_bom_len(buf, n);
    const char *p = buf + bom, *end = buf + n, *s, *e;
    if (!next_line(&p, end, &s, &e) || s == e) return gt_diag_error(d, GT_EXIT_DATA, "%s:1: empty file (no header)", fname);
    int *role, nf;
    if (care_header(s, e, fname, gt_detect_sep(s, e), out, &role, &nf, d)) return -1;
    free(role);
    return 0;
}

static void care_grow(gt_care_rows *r) {
    int64_t cap = r->cap ? r->cap * 2 : 1024;
    const char *what = "import care: a file's rows";
    r->t = GT_REALLOC_ARRAY(r->t, cap, 8, what);
    r->v = GT_REALLOC_ARRAY(r->v, cap * (r->n_cols ? r->n_cols : 1), 4, what);
    r->status = GT_REALLOC_ARRAY(r->status, cap, 1, what);
    r->train = GT_REALLOC_ARRAY(r->train, cap, 1, what);
    r->asset = GT_REALLOC_ARRAY(r->asset, cap, 8, what);
    r->line = GT_REALLOC_ARRAY(r->line, cap, 4, what);
    r->cap = cap;
}

/* The time, ids and flags of one CARE row (gt_parse_care_rows). */
typedef struct {
    int64_t t, asset;
    int status, train, status_empty;
} care_row;

/* The fields of the line s..e into row[] (by role) and *cr: the number of
 * fields (nf + 2: more than the header has), or -1 with the reason in
 * why[why_bytes]. */
static int care_fields(const char *s, const char *e, char sep, const int *role, int nf, const gt_care_rows *out,
                       float *row, care_row *cr, char *why, size_t why_bytes) {
    char ex[48];
    const char *q = s;
    int i = 0;
    for (;;) {
        const char *fe = memchr(q, sep, (size_t)(e - q));
        if (!fe) fe = e;
        const char *a = q, *b = fe; /* the field without blanks and quotes */
        field_unquote(&a, &b);
        if (i >= nf) { /* more fields than the header: one empty last field is a trailing separator */
            i = fe >= e && a == b && i == nf ? nf : nf + 2;
            break;
        }
        int r = role[i];
        if (r == CARE_SKIP) {
            /* pandas index or trailing column */
        } else if (r >= 0) {
            double x;
            if (parse_value(a, b, 1, &x)) {
                excerpt(q, fe, ex, sizeof ex);
                snprintf(why, why_bytes, "non-numeric value '%s' in column '%s'", ex, out->col[r]);
                return -1;
            }
            row[r] = (float)x;
        } else if (r == CARE_TIME) {
            const char *z = gt_parse_datetime_ms(a, b, &cr->t);
            if (!z || z != b) {
                excerpt(q, fe, ex, sizeof ex);
                snprintf(why, why_bytes, "bad time_stamp '%s' (expected YYYY-MM-DD HH:MM:SS)", ex);
                return -1;
            }
        } else if (r == CARE_TRAIN) {
            if (field_is(a, (int)(b - a), "train")) cr->train = 1;
            else if (field_is(a, (int)(b - a), "prediction")) cr->train = 2;
            else {
                excerpt(q, fe, ex, sizeof ex);
                snprintf(why, why_bytes, "train_test must be 'train' or 'prediction' (got '%s')", ex);
                return -1;
            }
        } else if (r == CARE_STATUS && a == b) {
            cr->status = 5; /* unknown status: 'other', left out of training and normal_index */
            cr->status_empty = 1;
        } else {
            double x;
            if (parse_value(a, b, 0, &x) || x != floor(x) || x < 0 || x > 1e15 ||
                (r == CARE_STATUS && x > 255)) {
                excerpt(q, fe, ex, sizeof ex);
                snprintf(why, why_bytes, "bad %s '%s' (expected a non-negative integer)",
                         r == CARE_STATUS ? "status_type_id" : r == CARE_ASSET ? "asset_id" : "id", ex);
                return -1;
            }
            if (r == CARE_STATUS) cr->status = (int)x;
            else if (r == CARE_ASSET) cr->asset = (int64_t)x;
        }
        i++;
        if (fe >= e) break;
        q = fe + 1;
    }
    return i;
}

int gt_parse_care_rows(const char *buf, size_t n, const char *fname, int64_t backward_tol_ms, gt_care_rows *out,
                       gt_diag *d, gt_series_stats *st) {
    memset(out, 0, sizeof *out);
    const char *p = buf + gt_bom_len(buf, n), *end = buf + n, *s, *e;
    char ex[48];
    if (!next_line(&p, end, &s, &e) || s == e) return gt_diag_error(d, GT_EXIT_DATA, "%s:1: empty file (no header)", fname);
    const char sep = gt_detect_sep(s, e);
    int *role, nf;
    if (care_header(s, e, fname, sep, out, &role, &nf, d)) return -1;
    /* a trailing separator on the header, on the rows, or on both: an empty last column is ignored */
    const int nf_min = role[nf - 1] == CARE_SKIP && nf > 1 && out->index_col != nf ? nf - 1 : nf;
    const int C = out->n_cols;
    uint64_t line = 1;
    int64_t latest = INT64_MIN;
    int rc = 0;
    char why[GT_IMPORT_MSG_LEN / 2];
    gt_bad_lines bad = {0};
    while (next_line(&p, end, &s, &e)) {
        line++;
        if (s == e) continue;
        if (line > UINT32_MAX) {
            rc = gt_diag_error(d, GT_EXIT_DATA, "%s: more than 2^32 lines", fname);
            break;
        }
        if (out->n == out->cap) care_grow(out);
        float *row = out->v + (size_t)out->n * (size_t)C; /* committed by out->n++ below; a bad line leaves it */
        care_row cr = {0, 0, 0, 0, 0};
        int i = care_fields(s, e, sep, role, nf, out, row, &cr, why, sizeof why);
        if (i < 0) goto bad_line;
        const int64_t t = cr.t;
        if (i < nf_min || i > nf) {
            excerpt(s, e, ex, sizeof ex);
            snprintf(why, sizeof why, "malformed line '%s' (%d fields, the header has %d)", ex, i > nf ? nf + 1 : i, nf);
            goto bad_line;
        }
        int bad_t = gt_time_check(t, fname, line, d, st);
        if (bad_t < 0) {
            rc = -1;
            goto done;
        }
        if (bad_t) continue;
        if (t < latest) {
            if (st) st->n_backward++;
            if (latest - t > backward_tol_ms) {
                if (st) st->n_backward_far++;
                if (gt_diag_warn(d, GT_WARN_BACKWARD, "%s:%llu: timestamp goes back %.3f s (more than the tolerance %.3f s); the rows are sorted",
                                 fname, (unsigned long long)line, (double)(latest - t) / 1000.0,
                                 (double)backward_tol_ms / 1000.0)) {
                    rc = -1;
                    goto done;
                }
            }
        } else {
            latest = t;
        }
        out->n_status_empty += cr.status_empty;
        out->t[out->n] = t;
        out->status[out->n] = (uint8_t)cr.status;
        out->train[out->n] = (uint8_t)cr.train;
        out->asset[out->n] = cr.asset;
        out->line[out->n] = (uint32_t)line;
        out->n++;
        continue;
    bad_line: /* skipped while the file has at most d->max_bad_lines of them, else the error */
        if (gt_bad_line(d, &bad, fname, line, "%s", why)) {
            rc = -1;
            goto done;
        }
    }
    if (st) {
        st->n_lines += (int64_t)line;
        st->n_samples += out->n;
    }
    if (rc == 0) rc = gt_bad_lines_end(d, &bad, fname, st);
done:
    free(role);
    return rc;
}

void gt_care_rows_free(gt_care_rows *r) {
    free(r->col);
    free(r->t);
    free(r->v);
    free(r->status);
    free(r->train);
    free(r->asset);
    free(r->line);
    memset(r, 0, sizeof *r);
}

/* Column indices of `names` in a header line; -1 when missing. */
static int header_cols(const char *s, const char *e, char sep, const char *const *names, int n, int *idx,
                       const char *fname, gt_diag *d) {
    const char *f[64];
    int len[64];
    int nf = gt_split_fields(s, e, sep, f, len, 64);
    if (nf > 64) nf = 64;
    for (int k = 0; k < n; k++) {
        idx[k] = -1;
        for (int i = 0; i < nf; i++)
            if (field_is(f[i], len[i], names[k])) idx[k] = i;
        if (idx[k] < 0) return gt_diag_error(d, GT_EXIT_DATA, "%s:1: missing column '%s'", fname, names[k]);
    }
    return 0;
}

int gt_parse_care_events(const char *buf, size_t n, const char *fname, gt_care_event **out, gt_diag *d) {
    *out = NULL;
    const char *p = buf + gt_bom_len(buf, n), *end = buf + n, *s, *e;
    char ex[48];
    if (!next_line(&p, end, &s, &e) || s == e) return gt_diag_error(d, GT_EXIT_DATA, "%s:1: empty file (no header)", fname);
    const char sep = gt_detect_sep(s, e);
    static const char *names[5] = {"asset", "event_id", "event_label", "event_start", "event_end"};
    int idx[5];
    if (header_cols(s, e, sep, names, 5, idx, fname, d)) return -1;
    int cnt = 0, cap = 0;
    gt_care_event *ev = NULL;
    uint64_t line = 1, *ev_line = NULL; /* the line of each event (a repeated event_id names both) */
    while (next_line(&p, end, &s, &e)) {
        line++;
        if (s == e) continue;
        const char *f[64];
        int len[64];
        int nf = gt_split_fields(s, e, sep, f, len, 64);
        int need = 0;
        for (int k = 0; k < 5; k++) need = idx[k] + 1 > need ? idx[k] + 1 : need;
        if (nf < need) {
            excerpt(s, e, ex, sizeof ex);
            free(ev), free(ev_line);
            return gt_diag_error(d, GT_EXIT_DATA, "%s:%llu: malformed line '%s' (%d fields)", fname,
                                 (unsigned long long)line, ex, nf);
        }
        gt_care_event x = {0};
        double a, id;
        int bad = parse_value(f[idx[0]], f[idx[0]] + len[idx[0]], 0, &a) || parse_value(f[idx[1]], f[idx[1]] + len[idx[1]], 0, &id) ||
                  a != floor(a) || id != floor(id) || a < 0 || id < 0 || a > 1e15 || id > 1e15;
        const char *which = "asset/event_id";
        if (!bad) {
            x.asset = (int64_t)a;
            x.event_id = (int64_t)id;
            if (field_is(f[idx[2]], len[idx[2]], "anomaly")) x.anomaly = 1;
            else if (!field_is(f[idx[2]], len[idx[2]], "normal")) bad = 1, which = "event_label (anomaly|normal)";
        }
        for (int k = 3; !bad && k < 5; k++) {
            const char *a0 = f[idx[k]], *b0 = a0 + len[idx[k]];
            while (a0 < b0 && is_blank(*a0)) a0++;
            while (b0 > a0 && is_blank(b0[-1])) b0--;
            int64_t ms;
            const char *z = gt_parse_datetime_ms(a0, b0, &ms);
            if (!z || z != b0 || ms < GT_IMPORT_TS_MIN_MS || ms >= GT_IMPORT_TS_MAX_MS) bad = 1, which = names[k];
            else if (k == 3) x.start_ms = ms;
            else x.end_ms = ms;
        }
        if (!bad && x.end_ms < x.start_ms) bad = 1, which = "event_end (before event_start)";
        if (bad) {
            excerpt(s, e, ex, sizeof ex);
            free(ev), free(ev_line);
            return gt_diag_error(d, GT_EXIT_DATA, "%s:%llu: bad %s in '%s'", fname, (unsigned long long)line, which, ex);
        }
        if (cnt == cap) {
            if (cnt >= INT_MAX / 2) {
                free(ev), free(ev_line);
                return gt_diag_error(d, GT_EXIT_DATA, "%s:%llu: more than %d events", fname, (unsigned long long)line,
                                     INT_MAX / 2);
            }
            cap = cap ? cap * 2 : 16;
            ev = GT_REALLOC_ARRAY(ev, cap, sizeof *ev, "event_info.csv events");
            ev_line = GT_REALLOC_ARRAY(ev_line, cap, sizeof *ev_line, "event_info.csv events");
        }
        ev_line[cnt] = line;
        ev[cnt++] = x;
    }
    /* an event id names one event dataset (datasets/<event_id>.csv): a repeated one left the
     * file's turbine and label to whichever line was read first. Sorted, n log n: the pairwise
     * search took 110 s at 400k lines */
    int64_t *ids = GT_ALLOC_ARRAY(cnt, sizeof *ids, "event_info.csv event ids");
    for (int k = 0; k < cnt; k++) ids[k] = ev[k].event_id;
    int64_t k1 = -1, k2 = -1;
    const int64_t n_rep = gt_repeats_i64(ids, cnt, &k1, &k2);
    free(ids);
    if (n_rep > 0) {
        const unsigned long long l1 = ev_line[k1], l2 = ev_line[k2];
        const long long id = (long long)ev[k2].event_id;
        free(ev), free(ev_line);
        return gt_diag_error(d, GT_EXIT_DATA, "%s:%llu: event_id %lld repeats line %llu", fname, l2, id, l1);
    }
    free(ev_line);
    *out = ev;
    return cnt;
}

static int parse_bool(const char *f, int len, int *v) {
    if (field_is(f, len, "true") || field_is(f, len, "1") || field_is(f, len, "yes")) return *v = 1, 0;
    if (field_is(f, len, "false") || field_is(f, len, "0") || field_is(f, len, "no") || field_is(f, len, ""))
        return *v = 0, 0;
    return -1;
}

int gt_parse_care_features(const char *buf, size_t n, const char *fname, gt_care_feature **out, gt_diag *d) {
    *out = NULL;
    const char *p = buf + gt_bom_len(buf, n), *end = buf + n, *s, *e;
    char ex[48];
    if (!next_line(&p, end, &s, &e) || s == e) return gt_diag_error(d, GT_EXIT_DATA, "%s:1: empty file (no header)", fname);
    const char sep = gt_detect_sep(s, e);
    static const char *names[5] = {"sensor_name", "statistics_type", "unit", "is_angle", "is_counter"};
    int idx[5];
    if (header_cols(s, e, sep, names, 5, idx, fname, d)) return -1;
    int i_desc = -1; /* optional: what the sensor measures (the channel kinds read it) */
    {
        const char *hf[64];
        int hl[64];
        int nh = gt_split_fields(s, e, sep, hf, hl, 64);
        for (int i = 0; i < nh && i < 64; i++)
            if (field_is(hf[i], hl[i], "description")) i_desc = i;
    }
    int cnt = 0, cap = 0;
    gt_care_feature *ft = NULL;
    uint64_t line = 1;
    while (next_line(&p, end, &s, &e)) {
        line++;
        if (s == e) continue;
        const char *f[64];
        int len[64];
        int nf = gt_split_fields(s, e, sep, f, len, 64);
        int need = 0;
        for (int k = 0; k < 5; k++) need = idx[k] + 1 > need ? idx[k] + 1 : need;
        gt_care_feature x;
        memset(&x, 0, sizeof x);
        if (nf < need || parse_bool(f[idx[3]], len[idx[3]], &x.is_angle) ||
            parse_bool(f[idx[4]], len[idx[4]], &x.is_counter)) {
            excerpt(s, e, ex, sizeof ex);
            free(ft);
            return gt_diag_error(d, GT_EXIT_DATA,
                                 "%s:%llu: malformed line '%s' (expected sensor_name;statistics_type;description;unit;is_angle;is_counter)",
                                 fname, (unsigned long long)line, ex);
        }
        field_copy(f[idx[0]], len[idx[0]], x.name, sizeof x.name);
        field_copy(f[idx[1]], len[idx[1]], x.stat, sizeof x.stat);
        field_copy(f[idx[2]], len[idx[2]], x.unit, sizeof x.unit); /* bytes as they are */
        if (i_desc >= 0 && i_desc < nf && i_desc < 64) field_copy(f[i_desc], len[i_desc], x.desc, sizeof x.desc);
        if (cnt == cap) ft = GT_REALLOC(ft, sizeof *ft * (size_t)(cap = cap ? cap * 2 : 64));
        ft[cnt++] = x;
    }
    *out = ft;
    return cnt;
}

/* ------------------------------------------------------------ mapping ini -- */

int gt_map_parse(const char *buf, size_t n, const char *fname, gt_appliance_map *m, gt_diag *d) {
    memset(m, 0, sizeof *m);
    snprintf(m->path, sizeof m->path, "%s", fname);
    const char *p = buf + gt_bom_len(buf, n), *end = buf + n, *s, *e;
    char section[16] = "labels", ex[48];
    int line = 0, cap = 0;
    while (next_line(&p, end, &s, &e)) {
        line++;
        while (s < e && is_blank(*s)) s++;
        const char *c = s;
        while (c < e && *c != '#' && *c != ';') c++; /* comments */
        e = c;
        while (e > s && is_blank(e[-1])) e--;
        if (s == e) continue;
        if (*s == '[') {
            if (e[-1] != ']' || e - s < 3 || e - s - 2 >= (long)sizeof section) {
                excerpt(s, e, ex, sizeof ex);
                gt_map_free(m);
                return gt_diag_error(d, GT_EXIT_USAGE, "%s:%d: bad section header '%s'", fname, line, ex);
            }
            gt_label_norm(s + 1, (size_t)(e - s - 2), section, sizeof section);
            static const char *const known[] = {"labels", "ukdale", "redd", "refit", "care", "refit_houses", "meta"};
            int ok = 0;
            for (size_t k = 0; k < sizeof known / sizeof *known; k++) ok |= !strcmp(section, known[k]);
            if (!ok) {
                excerpt(s, e, ex, sizeof ex);
                gt_map_free(m);
                return gt_diag_error(d, GT_EXIT_USAGE,
                                     "%s:%d: unknown section '%s' (expected [labels], [ukdale], [redd], [refit], [care], "
                                     "[refit_houses] or [meta])", fname, line, ex);
            }
            continue;
        }
        const char *eq = memchr(s, '=', (size_t)(e - s));
        if (!eq || eq == s) {
            excerpt(s, e, ex, sizeof ex);
            gt_map_free(m);
            return gt_diag_error(d, GT_EXIT_USAGE, "%s:%d: expected 'label = name', got '%s'", fname, line, ex);
        }
        if (m->n == cap) m->e = GT_REALLOC(m->e, sizeof *m->e * (size_t)(cap = cap ? cap * 2 : 128));
        gt_map_entry *x = &m->e[m->n++];
        memset(x, 0, sizeof *x);
        memcpy(x->section, section, sizeof section);
        gt_label_norm(s, (size_t)(eq - s), x->key, sizeof x->key);
        const char *v = eq + 1;
        while (v < e && is_blank(*v)) v++;
        size_t vl = (size_t)(e - v) < sizeof x->value - 1 ? (size_t)(e - v) : sizeof x->value - 1;
        memcpy(x->value, v, vl);
        x->line = line;
        for (int k = 0; k < m->n - 1; k++) /* O(n^2) over a hand-written file of a few hundred lines */
            if (!strcmp(m->e[k].section, x->section) && !strcmp(m->e[k].key, x->key)) {
                if (gt_diag_warn(d, GT_WARN_OTHER, "%s:%d: [%s] %s is defined again (first at line %d); the last definition wins",
                                 fname, line, x->section, x->key, m->e[k].line)) {
                    gt_map_free(m);
                    return -1;
                }
                break;
            }
        if (!x->value[0] && strcmp(x->section, "refit_houses") && strcmp(x->section, "meta") &&
            gt_diag_warn(d, GT_WARN_OTHER, "%s:%d: [%s] %s has an empty value: the channel is dropped (write '-' to drop it)", fname,
                         line, x->section, x->key)) {
            gt_map_free(m);
            return -1;
        }
        /* appliance metadata enters the NILM file here: three finite numbers > 0 */
        if (!strcmp(x->section, "meta")) {
            double a = NAN, b = NAN, c2 = NAN;
            const char *q = x->value, *qe = x->value + strlen(x->value);
            int ok = 1;
            double *dst[3] = {&a, &b, &c2};
            for (int k = 0; k < 3 && ok; k++) {
                while (q < qe && is_blank(*q)) q++;
                const char *r = gt_parse_f64(q, qe, dst[k]);
                if (!r) ok = 0;
                else q = r;
                while (q < qe && is_blank(*q)) q++;
                if (k < 2) {
                    ok = ok && q < qe && *q == ',';
                    q++;
                }
            }
            ok = ok && q >= qe && isfinite(a) && isfinite(b) && isfinite(c2) && a > 0 && b > 0 && c2 > 0 && a <= 1e7 &&
                 b <= 1e7 && c2 <= 1e7;
            if (!ok) {
                char name[64];
                memcpy(name, x->key, sizeof name);
                gt_map_free(m);
                return gt_diag_error(d, GT_EXIT_USAGE,
                                     "%s:%d: [meta] %s: expected 'on_power_w, on_duration_s, max_power_w', three "
                                     "finite numbers > 0 (W, s, W; at most 1e7)", fname, line, name);
            }
        }
    }
    return 0;
}

void gt_map_free(gt_appliance_map *m) {
    free(m->e);
    m->e = NULL;
    m->n = 0;
}

const char *gt_map_get(const gt_appliance_map *m, const char *section, const char *key) {
    if (!m) return NULL;
    const char *v = NULL;
    for (int i = 0; i < m->n; i++) /* the last definition wins */
        if (!strcmp(m->e[i].section, section) && !strcmp(m->e[i].key, key)) v = m->e[i].value;
    return v;
}

int gt_map_label_full(const gt_appliance_map *m, const char *ds, const char *raw, char *out, size_t out_bytes) {
    char key[64];
    gt_label_norm(raw, strlen(raw), key, sizeof key);
    const char *v = gt_map_get(m, ds, key);
    if (!v) v = gt_map_get(m, "labels", key);
    if (!v) v = raw; /* kept under its own name */
    if (!strcmp(v, "-")) {
        out[0] = 0;
        return 0;
    }
    gt_label_norm(v, strlen(v), out, out_bytes);
    return out[0] != 0;
}

int gt_map_label(const gt_appliance_map *m, const char *ds, const char *raw, char out[GT_IMPORT_NAME_LEN]) {
    char full[GT_IMPORT_LABEL_LEN];
    int keep = gt_map_label_full(m, ds, raw, full, sizeof full);
    gt_label_norm(full, strlen(full), out, GT_IMPORT_NAME_LEN); /* = the raw label normalised to 31 bytes */
    return keep && out[0] != 0;
}
