/* import/import_care_plan.c: the plan of a CARE to Compare farm folder: its
 * event files, their channels (the union of their columns, units and angles
 * from feature_description.csv), the turbines (assets) and event_info.csv's
 * events (import/import_care_impl.h). See docs/importers.md. */
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
const gt_care_event *gt_care_event_find(const care_plan *P, int64_t id) {
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

void gt_care_plan_build(care_plan *P, const gt_import_opts *o, gt_diag *d) {
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
        const gt_care_event *fe = gt_care_event_find(P, f->event_id);
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

void gt_care_plan_free(care_plan *P) {
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
