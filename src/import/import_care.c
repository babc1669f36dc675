/* import/import_care.c: CARE to Compare (wind SCADA anomaly benchmark), one wind
 * farm directory into a PdM file: one turbine per asset, all of the asset's
 * event datasets merged on one 10-minute clock. See docs/importers.md. */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "core/log.h"
#include "core/timer.h"
#include "io/format.h"
#include "import/import_impl.h"
#include "io/shard.h"

_Static_assert(GT_IMPORT_MAX_COLS == GT_IO_MAX_COLS, "the importers' channel bound is the format's");

/* label / event kind codes (/legend/event_kind) */
enum { K_NORMAL = 0, K_ANOMALY = 1, K_DERATED = 2, K_SERVICE = 3, K_DOWNTIME = 4, K_OTHER = 5, N_KINDS = 6 };
static const char *const kind_names[N_KINDS] = {"normal", "anomaly_event", "status_derated", "status_service",
                                                "status_downtime", "status_other"};
/* segment condition codes (/legend/condition): the rows' train_test flag */
enum { C_TRAIN = 0, C_PRED = 1, C_BOTH = 2, C_NONE = 3, N_CONDS = 4 };
static const char *const cond_names[N_CONDS] = {"train", "prediction", "train_and_prediction", "no_data"};

static int status_kind(int s) {
    switch (s) {
    case 0: case 2: return K_NORMAL; /* normal operation, idling */
    case 1: return K_DERATED;
    case 3: return K_SERVICE;
    case 4: return K_DOWNTIME;
    default: return K_OTHER;         /* 5 and anything undocumented */
    }
}

typedef struct {
    char path[PATH_MAX];
    int64_t event_id;
    int *colmap; /* [file columns] -> channel */
    int n_fcols;
} dfile;

typedef struct {
    int64_t id;
    int index; /* into the plan's ev */
} care_ev_ref;

typedef struct {
    int64_t asset;
    int n_files;
    int *files;  /* indices into plan.f */
    int64_t bytes;
} turbine;

typedef struct {
    int T, C, F;
    turbine *t;
    dfile *f;
    gt_io_channel *ch;  /* [C] */
    uint8_t *angle;     /* [C] */
    gt_care_event *ev;
    int n_ev;
    care_ev_ref *ev_by_id; /* [n_ev] sorted by id (ids are distinct): care_event_find */
    int farm;
    /* shared after parsing */
    int64_t *n_rows, *t0, *n_seg, *n_evt, *n_ce;
    gt_io_span **seg, **evs; /* [T] */
    int64_t **ce;            /* [T]: CARE event datasets, CE_K values each (/care_events) */
    void **blob;             /* [T]: signals [n, C], labels [n] */
    char config[1024];
} care_plan;

/* one /care_events entry: turbine, event_id, label (1 anomaly), pred_start, pred_end, event_start, event_end,
 * train_start, train_end (GT_CARE_EVENT_K) */
enum { CE_K = GT_CARE_EVENT_K };

static int ll_cmp(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* event_info.csv's events by id: (id, index) sorted, binary search (a scan of every event for every
 * file was files x events) */
static int ev_id_cmp(const void *a, const void *b) {
    const int64_t x = ((const care_ev_ref *)a)->id, y = ((const care_ev_ref *)b)->id;
    return (x > y) - (x < y);
}
static void care_event_index(care_plan *P) {
    P->ev_by_id = GT_ALLOC_ARRAY(P->n_ev, sizeof(care_ev_ref), "event_info.csv events");
    for (int e = 0; e < P->n_ev; e++) P->ev_by_id[e] = (care_ev_ref){P->ev[e].event_id, e};
    qsort(P->ev_by_id, (size_t)P->n_ev, sizeof(care_ev_ref), ev_id_cmp);
}
/* the event with this id, or NULL */
static const gt_care_event *care_event_find(const care_plan *P, int64_t id) {
    const care_ev_ref key = {id, -1},
                      *hit = bsearch(&key, P->ev_by_id, (size_t)P->n_ev, sizeof key, ev_id_cmp);
    return hit ? &P->ev[hit->index] : NULL;
}

/* Event ids: what event_info.csv accepts (import_csv.c). */
#define CARE_MAX_EVENT_ID INT64_C(1000000000000000)

/* The farm code (/turbines/farm): --farm when given, else the folder name's last letter ("Wind Farm A" -> 0,
 * "B" -> 1, ..., case ignored). A name that does not end in a letter is refused: it became farm 0 without a
 * word, the code of another farm. Returns the code or -1 (error in d). */
static int farm_code(const gt_import_opts *o, gt_diag *d) {
    if (o->farm >= 0) return o->farm;
    size_t l = strlen(o->src);
    while (l > 1 && o->src[l - 1] == '/') l--;
    char c = l ? o->src[l - 1] : 0;
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a';
    return gt_diag_error(d, GT_EXIT_DATA, "%.*s: the folder name does not end in a letter, which gives the farm code "
                         "(Wind Farm A -> 0, B -> 1, ...): give the code with --farm N", (int)l, o->src);
}

/* The event ids of the <event_id>.csv files of dir (open as dp): *ids_out
 * (malloc'd, unsorted); returns their count. A file of another name ending in
 * .csv, or an id of another spelling, is an error in d. */
static int list_event_files(DIR *dp, const char *dir, gt_diag *d, int64_t **ids_out) {
    int64_t *ids = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(dp))) {
        /* datasets/<event_id>.csv, the id in digits without a leading zero: one id has one file name
         * (sscanf's "%lld" read 010.csv as event 10, then read 10.csv for it twice) */
        int64_t id;
        int rc = gt_import_name_number(e->d_name, "", ".csv", CARE_MAX_EVENT_ID, &id);
        if (rc == GT_NAME_OTHER && e->d_name[0] != '.' && strlen(e->d_name) > 4 &&
            !strcmp(e->d_name + strlen(e->d_name) - 4, ".csv")) {
            gt_diag_error(d, GT_EXIT_DATA, "%s/%s: not an event file name (<event_id>.csv, the id in digits)", dir,
                          e->d_name);
            break;
        }
        if (rc == GT_NAME_OTHER) continue;
        if (rc != GT_NAME_OK) {
            gt_import_name_error(dir, e->d_name, "event id", rc, "", ".csv", id, CARE_MAX_EVENT_ID, d);
            break;
        }
        if (n == cap) ids = GT_REALLOC(ids, sizeof(int64_t) * (size_t)(cap = cap ? cap * 2 : 64));
        ids[n++] = id;
    }
    *ids_out = ids;
    return n;
}

/* The header and first rows of the file f (r: at least one row), read from
 * a head of the file long enough to pass up to max_bad_lines bad lines.
 * 0, or -1 with the error in d. */
static int head_rows(const dfile *f, gt_diag *d, gt_care_rows *r_out) {
    char *head;
    int64_t got = gt_text_head(f->path, 4 << 20, &head);
    if (got < 0) {
        gt_diag_error(d, GT_EXIT_DATA, "%s: cannot read", f->path);
        return -1;
    }
    char *nl1 = memchr(head, '\n', (size_t)got);
    if (!nl1 && got == 4 << 20) { /* the column count would be of a cut header */
        free(head);
        gt_diag_error(d, GT_EXIT_DATA, "%s:1: header line longer than 4 MiB (a file holds at most %d channels)",
                      f->path, GT_IMPORT_MAX_COLS);
        return -1;
    }
    /* the header and the first data lines, enough to reach a good row past up to max_bad_lines bad
     * ones (skipped here silently: the full parse warns about them once); only whole lines, unless
     * the head is the whole file */
    gt_care_rows r;
    gt_series_stats ss;
    gt_diag hd;
    int rc;
    for (size_t lim = 4 << 20;; lim *= 4) {
        size_t len = nl1 ? (size_t)(nl1 - head) : (size_t)got;
        for (int64_t k = 0; nl1 && k <= (int64_t)d->max_bad_lines; k++) {
            char *nl = len < (size_t)got ? memchr(head + len + 1, '\n', (size_t)got - len - 1) : NULL;
            if (!nl) {
                if ((size_t)got < lim) len = (size_t)got;
                break;
            }
            len = (size_t)(nl - head);
        }
        memset(&ss, 0, sizeof ss);
        hd = *d; /* the head's warnings and skipped lines: the full parse reports them */
        hd.quiet = 1;
        rc = gt_parse_care_rows(head, len, f->path, INT64_MAX, &r, &hd, &ss);
        /* only bad lines in a cut head, no more than may be skipped: the rows lie past long bad
         * lines (megabytes of them), read a longer head */
        if (rc || r.n > 0 || (size_t)got < lim) break;
        gt_care_rows_free(&r);
        free(head);
        got = gt_text_head(f->path, lim * 4, &head);
        if (got < 0) {
            rc = -1, hd.err_code = GT_EXIT_DATA;
            snprintf(hd.err, sizeof hd.err, "%.400s: cannot read", f->path);
            memset(&r, 0, sizeof r);
            break;
        }
        nl1 = memchr(head, '\n', (size_t)got);
    }
    free(head);
    if (rc) {
        gt_care_rows_free(&r);
        gt_diag_error(d, hd.err_code, "%s", hd.err);
        return -1;
    }
    if (r.n == 0) {
        gt_care_rows_free(&r);
        size_t pl = strlen(f->path); /* the summary without its "FILE: " */
        const char *why = !strncmp(hd.last_warn, f->path, pl) && hd.last_warn[pl] == ':' ? hd.last_warn + pl + 2
                                                                                          : hd.last_warn;
        if (ss.n_bad_lines)
            gt_diag_error(d, GT_EXIT_DATA, "%s: no data row can be read: %s", f->path, why);
        else
            gt_diag_error(d, GT_EXIT_DATA, "%s: empty channel (no data rows)", f->path);
        return -1;
    }
    *r_out = r;
    return 0;
}

/* The channel of each of f's columns (f->colmap), new names appended to
 * names [*C] (capacity *ccap); too many distinct columns is an error in d. */
static void map_columns(dfile *f, const gt_care_rows *rr, char (**names_io)[64], int *C_io, int *ccap_io,
                        gt_diag *d) {
    const gt_care_rows r = *rr;
    char (*names)[64] = *names_io;
    int C = *C_io, ccap = *ccap_io;
    f->n_fcols = r.n_cols;
    f->colmap = GT_MALLOC(sizeof(int) * (size_t)(r.n_cols ? r.n_cols : 1));
    for (int c = 0; c < r.n_cols; c++) {
        /* the files of a farm share their columns in the same order: try that place first */
        int k = c < C && !strcmp(names[c], r.col[c]) ? c : 0;
        while (k < C && strcmp(names[k], r.col[c])) k++;
        if (k == C) {
            if (C == GT_IMPORT_MAX_COLS) {
                gt_diag_error(d, GT_EXIT_DATA, "%s:1: the farm's files have more than %d distinct sensor columns; "
                              "a file holds at most %d channels", f->path, GT_IMPORT_MAX_COLS, GT_IMPORT_MAX_COLS);
                break;
            }
            if (C == ccap) names = GT_REALLOC(names, 64 * (size_t)(ccap = ccap ? ccap * 2 : 128));
            memcpy(names[C++], r.col[c], 64);
        }
        f->colmap[c] = k;
    }
    *names_io = names;
    *C_io = C;
    *ccap_io = ccap;
}

/* The plan's channels: name (checked unique after truncation to 31 bytes),
 * unit and description from feature_description.csv (ft [n_ft]), angle. */
static void plan_channels(care_plan *P, char (*names)[64], int C, const gt_care_feature *ft, int n_ft, gt_diag *d) {
    /* channels: name (checked unique after truncation to 31 bytes), unit, angle */
    P->C = C;
    P->ch = GT_CALLOC((size_t)C, sizeof(gt_io_channel));
    P->angle = GT_CALLOC((size_t)C, 1);
    for (int c = 0; c < C; c++) {
        snprintf(P->ch[c].name, sizeof P->ch[c].name, "%.31s", names[c]);
        for (int k = 0; k < c; k++)
            if (!strcmp(P->ch[k].name, P->ch[c].name)) {
                gt_diag_error(d, GT_EXIT_DATA, "%s: columns '%s' and '%s' are the same in 31 bytes", P->f[0].path,
                              names[k], names[c]);
                break;
            }
        for (int k = 0; k < n_ft; k++) {
            size_t l = strlen(ft[k].name);
            const char *suf = names[c] + l;
            int exact = !strcmp(names[c], ft[k].name);
            int stat = !strncmp(names[c], ft[k].name, l) && *suf == '_' &&
                       (!strcmp(suf, "_avg") || !strcmp(suf, "_min") || !strcmp(suf, "_max") || !strcmp(suf, "_std"));
            if (!exact && !stat) continue;
            memcpy(P->ch[c].unit, ft[k].unit, sizeof P->ch[c].unit); /* bytes as in the file */
            P->ch[c].unit[GT_FORMAT_UNIT_LEN - 1] = 0;
            /* the description, and CARE's counter flag as " [counter]" (the channel kinds read both) */
            snprintf(P->ch[c].desc, sizeof P->ch[c].desc, "%.*s%s",
                     (int)(sizeof P->ch[c].desc - 1 - (ft[k].is_counter ? 10 : 0)), ft[k].desc,
                     ft[k].is_counter ? " [counter]" : "");
            P->angle[c] = ft[k].is_angle && (exact || !strcmp(suf, "_avg"));
            break;
        }
    }
}

/* The plan's turbines: the distinct assets of the n files (asset [n]),
 * ascending, each with its files and their bytes. */
static void plan_turbines(care_plan *P, const int64_t *asset, int n) {
    /* turbines: distinct assets, ascending */
    int64_t *sa = GT_MALLOC(sizeof(int64_t) * (size_t)n);
    memcpy(sa, asset, sizeof(int64_t) * (size_t)n);
    qsort(sa, (size_t)n, sizeof(int64_t), ll_cmp);
    int T = 0;
    for (int i = 0; i < n; i++)
        if (i == 0 || sa[i] != sa[i - 1]) sa[T++] = sa[i];
    P->T = T;
    P->t = GT_CALLOC((size_t)T, sizeof(turbine));
    for (int k = 0; k < T; k++) {
        turbine *tb = &P->t[k];
        tb->asset = sa[k];
        tb->files = GT_MALLOC(sizeof(int) * (size_t)n);
        for (int i = 0; i < n; i++)
            if (asset[i] == tb->asset) {
                tb->files[tb->n_files++] = i;
                int64_t b = gt_import_file_bytes(P->f[i].path);
                tb->bytes += b > 0 ? b : 0;
            }
    }
    free(sa);
}

static void plan_build(care_plan *P, const gt_import_opts *o, gt_diag *d) {
    memset(P, 0, sizeof *P);
    char dir[PATH_MAX], path[PATH_MAX];
    snprintf(dir, sizeof dir, "%.3900s/datasets", o->src);
    DIR *dp = opendir(dir);
    if (!dp) {
        gt_diag_error(d, GT_EXIT_DATA, "%s: cannot list (expected a CARE farm folder with datasets/<event_id>.csv)", dir);
        return;
    }
    int64_t *ids = NULL;
    const int n = list_event_files(dp, dir, d, &ids);
    closedir(dp);
    if (d->err_code) goto out;
    if (n == 0) {
        gt_diag_error(d, GT_EXIT_DATA, "%s: no <event_id>.csv files", dir);
        goto out;
    }
    qsort(ids, (size_t)n, sizeof(int64_t), ll_cmp);
    if ((P->farm = farm_code(o, d)) < 0) goto out;
    /* event_info.csv */
    gt_text t;
    snprintf(path, sizeof path, "%.3900s/event_info.csv", o->src);
    if (gt_text_open(&t, path, d)) goto out;
    P->n_ev = gt_parse_care_events(t.p, t.n, path, &P->ev, d);
    gt_text_close(&t);
    if (P->n_ev < 0) goto out;
    care_event_index(P);
    /* feature_description.csv (optional) */
    gt_care_feature *ft = NULL;
    int n_ft = 0;
    snprintf(path, sizeof path, "%.3900s/feature_description.csv", o->src);
    if (gt_import_file_bytes(path) >= 0) {
        if (gt_text_open(&t, path, d)) goto out;
        n_ft = gt_parse_care_features(t.p, t.n, path, &ft, d);
        gt_text_close(&t);
        if (n_ft < 0) goto out;
    } else if (gt_diag_warn(d, GT_WARN_OTHER, "%s: missing: channels get no units and no circular means", path)) {
        goto out;
    }
    /* headers and first rows: channel union, asset of each file */
    P->F = n;
    P->f = GT_CALLOC((size_t)n, sizeof(dfile));
    char (*names)[64] = NULL;
    int C = 0, ccap = 0;
    int64_t *asset = GT_MALLOC(sizeof(int64_t) * (size_t)n);
    for (int i = 0; i < n && !d->err_code; i++) {
        dfile *f = &P->f[i];
        f->event_id = ids[i];
        snprintf(f->path, sizeof f->path, "%.3900s/%lld.csv", dir, (long long)ids[i]);
        gt_care_rows r;
        if (head_rows(f, d, &r) != 0) break;
        if (r.index_col && gt_diag_warn(d, GT_WARN_OTHER, "%s:1: column %d ('%s') looks like a pandas index; dropped", f->path,
                                        r.index_col, r.index_col == 1 ? "" : "Unnamed: 0")) {
            gt_care_rows_free(&r);
            break;
        }
        asset[i] = r.asset[0];
        const gt_care_event *fe = care_event_find(P, f->event_id);
        if (fe && fe->asset != asset[i] &&
            gt_diag_warn(d, GT_WARN_OTHER, "%s:2: asset_id %lld, but event_info.csv gives asset %lld for event %lld", f->path,
                         (long long)asset[i], (long long)fe->asset, (long long)f->event_id)) {
            gt_care_rows_free(&r);
            break;
        }
        map_columns(f, &r, &names, &C, &ccap, d);
        gt_care_rows_free(&r);
    }
    if (d->err_code) {
        free(names);
        free(asset);
        free(ft);
        goto out;
    }
    if (C == 0) {
        gt_diag_error(d, GT_EXIT_DATA, "%s: no sensor columns", P->f[0].path);
        free(names);
        free(asset);
        free(ft);
        goto out;
    }
    if (C > GT_IMPORT_TRAIN_MAX_COLS &&
        gt_diag_warn(d, GT_WARN_OTHER, "%s: %d sensor channels: training reads at most %d (train refuses this file; import a farm "
                        "with fewer columns)", o->src, C, GT_IMPORT_TRAIN_MAX_COLS)) {
        free(names);
        free(asset);
        free(ft);
        goto out;
    }
    plan_channels(P, names, C, ft, n_ft, d);
    free(names);
    free(ft);
    plan_turbines(P, asset, n);
    free(asset);
out:
    free(ids);
}

static void plan_free(care_plan *P) {
    for (int i = 0; i < P->F; i++) free(P->f[i].colmap);
    free(P->f);
    for (int k = 0; k < P->T; k++) free(P->t[k].files);
    free(P->t);
    free(P->ch);
    free(P->angle);
    free(P->ev);
    free(P->ev_by_id);
    free(P->n_rows);
    free(P->t0);
    free(P->n_seg);
    free(P->n_evt);
    free(P->n_ce);
    for (int k = 0; k < P->T; k++) {
        if (P->ce) free(P->ce[k]);
        if (P->seg) free(P->seg[k]);
        if (P->evs) free(P->evs[k]);
        if (P->blob) free(P->blob[k]);
    }
    free(P->seg);
    free(P->ce);
    free(P->evs);
    free(P->blob);
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

typedef struct {
    gt_series_stats s;
    int64_t bytes, outside;
} care_stats;

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
        const gt_care_event *x = care_event_find(P, f->event_id);
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

static int build_turbine(care_plan *P, int ti, const gt_import_opts *o, gt_diag *d, care_stats *cs) {
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

/* ------------------------------------------------------------ the source --- */

typedef struct {
    int t;
    int64_t pos;
} stream;

static void src_info(void *ctx, int t, gt_pdm_item *item) {
    care_plan *P = ctx;
    item->id = P->t[t].asset;
    item->farm = P->farm;
    item->machine_type = 0;
    item->n_rows = P->n_rows[t];
    item->t0_ms = P->t0[t];
    item->segments = P->seg[t];
    item->n_segments = (int)P->n_seg[t];
    item->events = P->evs[t];
    item->n_events = (int)P->n_evt[t];
}
static void src_info_free(void *ctx, gt_pdm_item *item) { (void)ctx, (void)item; /* owned by the plan */ }
static void *src_begin(void *ctx, int t) {
    stream *s = GT_MALLOC(sizeof *s);
    s->t = t;
    s->pos = 0;
    GT_ASSERT(((care_plan *)ctx)->blob[t] != NULL);
    return s;
}
static int64_t src_next(void *ctx, void *state, int64_t k, float *signals, uint8_t *labels) {
    care_plan *P = ctx;
    stream *s = state;
    int64_t n = P->n_rows[s->t];
    if (k > n - s->pos) k = n - s->pos;
    const float *sig = P->blob[s->t];
    const uint8_t *lab = (const uint8_t *)(sig + (size_t)n * P->C);
    memcpy(signals, sig + (size_t)s->pos * P->C, sizeof(float) * (size_t)k * P->C);
    memcpy(labels, lab + s->pos, (size_t)k);
    s->pos += k;
    return k;
}
static void src_end(void *ctx, void *state) {
    care_plan *P = ctx;
    stream *s = state;
    free(P->blob[s->t]);
    P->blob[s->t] = NULL;
    free(s);
}

void gt_import_care(const gt_import_opts *o, const gt_appliance_map *map, MPI_Comm comm, gt_import_stats *st) {
    (void)map;
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    gt_diag d = {0};
    d.strict = o->strict;
    d.max_bad_lines = o->max_bad_lines;
    d.quiet = rank != 0; /* plan warnings are the same on every rank: rank 0 prints them */
    care_plan P;
    plan_build(&P, o, &d);
    gt_diag_item_end(&d, o->src, NULL, 0);
    gt_import_agree(comm, &d, 0);
    d.quiet = 0;
    const int T = P.T, C = P.C;
    P.n_rows = GT_CALLOC((size_t)T, 8);
    P.t0 = GT_CALLOC((size_t)T, 8);
    P.n_seg = GT_CALLOC((size_t)T, 8);
    P.n_evt = GT_CALLOC((size_t)T, 8);
    P.n_ce = GT_CALLOC((size_t)T, 8);
    P.ce = GT_CALLOC((size_t)T, sizeof(void *));
    P.seg = GT_CALLOC((size_t)T, sizeof(void *));
    P.evs = GT_CALLOC((size_t)T, sizeof(void *));
    P.blob = GT_CALLOC((size_t)T, sizeof(void *));
    int64_t *w = GT_MALLOC(8 * (size_t)T);
    for (int i = 0; i < T; i++) w[i] = P.t[i].bytes > 0 ? P.t[i].bytes : 1;
    int *from = GT_MALLOC(sizeof(int) * (size_t)T), *to = GT_MALLOC(sizeof(int) * (size_t)T);
    gt_shard_assign(w, T, size, from);
    double tp = gt_now();
    care_stats cs;
    memset(&cs, 0, sizeof cs);
    int err_item = INT_MAX;
    for (int i = 0; i < T; i++) {
        if (from[i] != rank) continue;
        int rc = build_turbine(&P, i, o, &d, &cs);
        char item[64]; /* the warnings past the first few of the asset, by kind: one line */
        snprintf(item, sizeof item, "asset %lld", (long long)P.t[i].asset);
        gt_diag_item_end(&d, item, NULL, 0);
        if (rc) {
            err_item = i;
            break;
        }
    }
    double parse_s = gt_now() - tp;
    gt_import_agree(comm, &d, err_item);
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, P.n_rows, T, MPI_INT64_T, MPI_SUM, comm));
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, P.t0, T, MPI_INT64_T, MPI_SUM, comm));
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, P.n_seg, T, MPI_INT64_T, MPI_SUM, comm));
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, P.n_evt, T, MPI_INT64_T, MPI_SUM, comm));
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, P.n_ce, T, MPI_INT64_T, MPI_SUM, comm));
    /* CARE event datasets to every rank, in file order (turbine, then event id) */
    int64_t n_ce_tot = 0;
    for (int i = 0; i < T; i++) n_ce_tot += P.n_ce[i];
    int64_t *ce_all = GT_CALLOC((size_t)(CE_K * n_ce_tot + 1), 8);
    {
        int64_t off = 0;
        for (int i = 0; i < T; i++) {
            if (from[i] == rank) memcpy(ce_all + CE_K * off, P.ce[i], sizeof(int64_t) * CE_K * (size_t)P.n_ce[i]);
            off += P.n_ce[i];
        }
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, ce_all, (int)(CE_K * n_ce_tot), MPI_INT64_T, MPI_SUM, comm));
    }
    /* segments and events to every rank: [start, end, code] triples at global offsets */
    for (int pass = 0; pass < 2; pass++) {
        int64_t *cnt = pass ? P.n_evt : P.n_seg;
        gt_io_span **sp = pass ? P.evs : P.seg;
        int64_t tot = 0;
        for (int i = 0; i < T; i++) tot += cnt[i];
        int64_t *buf = GT_CALLOC((size_t)(3 * tot + 1), 8);
        int64_t off = 0;
        for (int i = 0; i < T; i++) {
            if (from[i] == rank)
                for (int64_t k = 0; k < cnt[i]; k++) {
                    buf[3 * (off + k)] = sp[i][k].start_row;
                    buf[3 * (off + k) + 1] = sp[i][k].end_row;
                    buf[3 * (off + k) + 2] = sp[i][k].code;
                }
            off += cnt[i];
        }
        for (int64_t s = 0; s < 3 * tot; s += 1 << 28) {
            int k = (int)(3 * tot - s < (1 << 28) ? 3 * tot - s : (1 << 28));
            MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf + s, k, MPI_INT64_T, MPI_SUM, comm));
        }
        off = 0;
        for (int i = 0; i < T; i++) {
            free(sp[i]);
            sp[i] = GT_MALLOC(sizeof(gt_io_span) * (size_t)(cnt[i] + 1));
            for (int64_t k = 0; k < cnt[i]; k++)
                sp[i][k] = (gt_io_span){buf[3 * (off + k)], buf[3 * (off + k) + 1], (int32_t)buf[3 * (off + k) + 2]};
            off += cnt[i];
        }
        free(buf);
    }
    int64_t loc[9] = {cs.bytes, cs.s.n_lines, cs.s.n_samples, cs.s.n_exact_dup, cs.s.n_conflict, cs.s.n_backward,
                      cs.s.n_backward_far, d.n_warn, cs.s.n_bad_lines};
    int64_t tot[9];
    MPI_CHECK(MPI_Allreduce(loc, tot, 9, MPI_INT64_T, MPI_SUM, comm));
    MPI_CHECK(MPI_Allreduce(&parse_s, &st->parse_s_max, 1, MPI_DOUBLE, MPI_MAX, comm));
    MPI_CHECK(MPI_Allreduce(&parse_s, &st->parse_s_sum, 1, MPI_DOUBLE, MPI_SUM, comm));
    gt_shard_assign(P.n_rows, T, size, to);
    int64_t *bb = GT_MALLOC(8 * (size_t)T);
    for (int i = 0; i < T; i++) bb[i] = P.n_rows[i] * (4 * (int64_t)C + 1);
    gt_import_move(P.blob, bb, from, to, T, comm);

    snprintf(P.config, sizeof P.config,
             "format=care; src=%s; farm=%d; turbines=%d; files=%d; period_s=%.17g; backward_tolerance_s=%.17g; strict=%d; "
             "max_bad_lines=%d; labels: status 0,2 normal, 1 derated, 3 service, 4 downtime, 5 other, anomaly events "
             "win; segments: train_test flag",
             o->src, P.farm, T, P.F, o->period_s, o->backward_tol_s, o->strict, o->max_bad_lines);
    gt_pdm_source src = {
        .n_turbines = T, .n_channels = C, .channels = P.ch, .rate_hz = 1.0 / o->period_s,
        .machine_type_names = NULL, .n_machine_types = 0,
        .condition_names = cond_names, .n_conditions = N_CONDS,
        .event_kind_names = kind_names, .n_event_kinds = N_KINDS,
        /* the generator attribute keeps the file's former path: files stay byte-identical */
        .generator = "gridtrain import care (import/import_care.c)", .generator_config = P.config, .seed = 0,
        .care_events = ce_all, .n_care_events = n_ce_tot,
        .ctx = &P, .info = src_info, .info_free = src_info_free, .begin = src_begin, .next = src_next, .end = src_end,
    };
    gt_write_stats ws;
    gt_pdm_write(o->out, &src, &o->write, comm, &ws);
    free(ce_all);
    st->n_items = T;
    st->n_cols = C;
    st->n_rows = ws.n_rows_total;
    st->text_bytes = tot[0];
    st->n_lines = tot[1], st->n_samples = tot[2], st->n_exact_dup = tot[3], st->n_conflict = tot[4];
    st->n_backward = tot[5], st->n_backward_far = tot[6], st->n_warnings = tot[7], st->n_bad_lines = tot[8];
    free(w);
    free(from);
    free(to);
    free(bb);
    plan_free(&P);
}
