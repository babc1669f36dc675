/* import/import_nilm.c: UK-DALE, REDD (low_freq) and REFIT (CLEAN) households into
 * a NILM file. See import.h for the parallel plan and docs/importers.md. */
#define _GNU_SOURCE
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

enum { ROLE_AGG = -1, ROLE_LEG = -2 }; /* else the appliance column */

typedef struct {
    char path[PATH_MAX];
    int role;            /* ROLE_* or column */
    int col, min_f, max_f; /* gt_parse_tv field layout */
    char named_at[PATH_MAX + 16]; /* "labels.dat:LINE" that names the file */
} chan;

typedef struct {
    int number;
    int n_chan;
    chan *ch;             /* ukdale / redd */
    char csv[PATH_MAX];   /* refit */
    int refit_col[9];     /* refit: column of Appliance1..9, or -1 */
    int64_t bytes;
} house;

typedef struct {
    int H, A;
    house *h;
    char (*names)[GT_IMPORT_NAME_LEN]; /* [A] sorted */
    /* shared after parsing, [H] */
    int64_t *n_rows, *t0;
    uint8_t *owns;        /* [H, A] */
    void **blob;          /* [H]: aggregate [n], appliances [n, A], flags [n] on the owner */
    double period_s;
    gt_io_appliance *meta;
    char config[1024];
} nilm_plan;

static int name_index(char (*names)[GT_IMPORT_NAME_LEN], int n, const char *s) {
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], s)) return i;
    return -1;
}
/* Column names while planning: the stored name (31 bytes), the canonical name it
 * was cut from and where that label came from (FILE:LINE), to refuse two labels
 * that only agree in their first 31 bytes instead of summing them. */
typedef struct {
    char (*names)[GT_IMPORT_NAME_LEN];
    char (*full)[GT_IMPORT_LABEL_LEN];
    char (*where)[PATH_MAX + 16];
    int n, cap;
} name_set;
static void name_set_free(name_set *ns) {
    free(ns->names);
    free(ns->full);
    free(ns->where);
}
/* Column of the canonical name `full` (several channels of one name are summed);
 * -1 with an error in d when another name has the same first 31 bytes. */
static int name_add(name_set *ns, const char *full, const char *where, gt_diag *d) {
    char s[GT_IMPORT_NAME_LEN];
    gt_label_norm(full, strlen(full), s, sizeof s);
    int i = name_index(ns->names, ns->n, s);
    if (i >= 0) {
        if (strcmp(ns->full[i], full))
            return gt_diag_error(d, GT_EXIT_DATA,
                                 "%s: appliance '%s' and '%s' (%s) are the same in their first %d bytes (names are "
                                 "kept to %d); rename one in the appliance map", where, full, ns->full[i], ns->where[i],
                                 GT_IMPORT_NAME_LEN - 1, GT_IMPORT_NAME_LEN - 1);
        return i;
    }
    if (ns->n == ns->cap) {
        ns->cap = ns->cap ? ns->cap * 2 : 32;
        ns->names = GT_REALLOC(ns->names, sizeof *ns->names * (size_t)ns->cap);
        ns->full = GT_REALLOC(ns->full, sizeof *ns->full * (size_t)ns->cap);
        ns->where = GT_REALLOC(ns->where, sizeof *ns->where * (size_t)ns->cap);
    }
    snprintf(ns->names[ns->n], sizeof *ns->names, "%s", s);
    snprintf(ns->full[ns->n], sizeof *ns->full, "%s", full);
    snprintf(ns->where[ns->n], sizeof *ns->where, "%s", where);
    return ns->n++;
}
static int name_cmp(const void *a, const void *b) { return strcmp(a, b); }

/* The house numbers to import (--houses, or every one found), checked: NULL
 * with the error in d, else *n_out numbers (malloc'd). */
static int *plan_houses(const gt_import_opts *o, gt_diag *d, int *n_out) {
    const int refit = o->format == GT_IMPORT_REFIT;
    int *found = NULL;
    int nf = gt_import_list_houses(o->src, refit, &found, d);
    if (nf < 0) return NULL;
    int H = o->houses ? o->n_houses : nf;
    int *nums = GT_MALLOC(sizeof(int) * (size_t)(H > 0 ? H : 1));
    for (int i = 0; i < H; i++) {
        nums[i] = o->houses ? o->houses[i] : found[i];
        int ok = 0;
        for (int k = 0; k < nf; k++) ok |= found[k] == nums[i];
        if (!ok) {
            gt_diag_error(d, GT_EXIT_DATA, "%s: house %d not found (expected %s%d%s)", o->src, nums[i],
                          refit ? "CLEAN_House" : "house_", nums[i], refit ? ".csv" : "/");
            free(found);
            free(nums);
            return NULL;
        }
        for (int k = 0; k < i; k++)
            if (nums[k] == nums[i]) {
                gt_diag_error(d, GT_EXIT_USAGE, "--houses lists house %d twice", nums[i]);
                free(found);
                free(nums);
                return NULL;
            }
    }
    free(found);
    if (H == 0) {
        gt_diag_error(d, GT_EXIT_DATA, "%s: no %s found", o->src, refit ? "CLEAN_HouseN.csv files" : "house_N directories");
        free(nums);
        return NULL;
    }
    *n_out = H;
    return nums;
}

/* A REFIT house: its CSV and the 9 appliance columns named by the map's
 * [refit_houses] (appliance1..9 without an entry). */
static void plan_refit_house(house *h, const gt_import_opts *o, const gt_appliance_map *map, const char *ds,
                             name_set *ns, gt_diag *d) {
        snprintf(h->csv, sizeof h->csv, "%.3900s/CLEAN_House%d.csv", o->src, h->number);
        h->bytes = gt_import_file_bytes(h->csv);
        char key[32];
        snprintf(key, sizeof key, "house%d", h->number);
        const char *list = gt_map_get(map, "refit_houses", key);
        char item[9][64];
        int k = 0;
        if (list) {
            const char *s = list;
            while (k < 9 && *s) {
                const char *c = strchr(s, ',');
                size_t l = c ? (size_t)(c - s) : strlen(s);
                snprintf(item[k], sizeof item[k], "%.*s", (int)(l < 63 ? l : 63), s);
                k++;
                s = c ? c + 1 : s + l;
            }
            if (k != 9 || strchr(s, ','))
                gt_diag_error(d, GT_EXIT_USAGE, "%s: [refit_houses] %s must list 9 appliance names", map->path, key);
        } else {
            if (gt_rank() == 0)
                GT_WARN("%s: no [refit_houses] %s entry in the appliance map: columns named appliance1..9",
                        h->csv, key);
            for (k = 0; k < 9; k++) snprintf(item[k], sizeof item[k], "appliance%d", k + 1);
        }
        for (k = 0; k < 9 && !d->err_code; k++) {
            char canon[GT_IMPORT_LABEL_LEN], where[PATH_MAX + 16];
            snprintf(where, sizeof where, "%.4000s (Appliance%d)", list ? map->path : h->csv, k + 1);
            h->refit_col[k] = gt_map_label_full(map, ds, item[k], canon, sizeof canon)
                                  ? name_add(ns, canon, where, d) : -1;
        }
}

/* A UK-DALE or REDD house: its channels from labels.dat (mains.dat as the
 * aggregate when used), roles from the map. 0, or -1 with the error in d. */
static int plan_labels_house(house *h, const gt_import_opts *o, const gt_appliance_map *map, const char *ds,
                             name_set *ns, gt_diag *d) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%.3900s/house_%d/labels.dat", o->src, h->number);
    gt_text t;
    if (gt_text_open(&t, path, d)) return -1;
    gt_labels lab;
    int nl = gt_parse_labels(t.p, t.n, path, &lab, d);
    gt_text_close(&t);
    if (nl < 0) return -1;
    char mains[PATH_MAX];
    snprintf(mains, sizeof mains, "%.3900s/house_%d/mains.dat", o->src, h->number);
    int use_mains = o->format == GT_IMPORT_UKDALE &&
                    (o->ukdale_agg == GT_UKDALE_AGG_MAINS ||
                     (o->ukdale_agg == GT_UKDALE_AGG_AUTO && gt_import_file_bytes(mains) >= 0));
    h->ch = GT_CALLOC((size_t)nl + 1, sizeof(chan));
    if (use_mains) {
        chan *c = &h->ch[h->n_chan++];
        snprintf(c->path, sizeof c->path, "%.4000s", mains);
        c->role = ROLE_AGG, c->col = 1, c->min_f = 2, c->max_f = 4;
    }
    int n_agg = use_mains;
    for (int k = 0; k < nl; k++) {
        char norm[64];
        gt_label_norm(lab.label[k], strlen(lab.label[k]), norm, sizeof norm);
        chan *c = &h->ch[h->n_chan];
        snprintf(c->path, sizeof c->path, "%.3900s/house_%d/channel_%d.dat", o->src, h->number, lab.channel[k]);
        c->col = 1, c->min_f = 2, c->max_f = 2;
        snprintf(c->named_at, sizeof c->named_at, "%.4000s:%d", path, lab.line[k]);
        if (o->format == GT_IMPORT_UKDALE && !strcmp(norm, "aggregate")) {
            if (use_mains) continue;
            c->role = ROLE_AGG;
            n_agg++;
        } else if (o->format == GT_IMPORT_REDD && !strcmp(norm, "mains")) {
            c->role = ROLE_LEG;
            n_agg++;
        } else {
            char canon[GT_IMPORT_LABEL_LEN];
            if (!gt_map_label_full(map, ds, lab.label[k], canon, sizeof canon)) continue;
            c->role = name_add(ns, canon, c->named_at, d);
            if (c->role < 0) break;
        }
        h->n_chan++;
    }
    gt_labels_free(&lab);
    if (d->err_code) return -1;
    if (n_agg == 0 || (o->format == GT_IMPORT_UKDALE && n_agg > 1)) {
        gt_diag_error(d, GT_EXIT_DATA, "%s: %s", path,
                      n_agg ? "more than one 'aggregate' channel"
                            : (o->format == GT_IMPORT_REDD ? "no 'mains' channel" : "no 'aggregate' channel and no mains.dat"));
        return -1;
    }
    for (int k = 0; k < h->n_chan; k++) {
        int64_t b = gt_import_file_bytes(h->ch[k].path);
        if (b > 0) h->bytes += b;
    }
    return 0;
}

/* The column names sorted, the houses' roles and REFIT columns remapped to
 * them; P takes the names. */
static void plan_sort_names(nilm_plan *P, name_set *ns, int refit) {
    const int A = ns->n, H = P->H;
    char (*names)[GT_IMPORT_NAME_LEN] = ns->names;
    char (*sorted)[GT_IMPORT_NAME_LEN] = GT_MALLOC(GT_IMPORT_NAME_LEN * (size_t)A);
    memcpy(sorted, names, GT_IMPORT_NAME_LEN * (size_t)A);
    qsort(sorted, (size_t)A, GT_IMPORT_NAME_LEN, name_cmp);
    int *remap = GT_MALLOC(sizeof(int) * (size_t)A);
    for (int a = 0; a < A; a++) remap[a] = name_index(sorted, A, names[a]);
    for (int i = 0; i < H; i++) {
        for (int k = 0; k < P->h[i].n_chan; k++)
            if (P->h[i].ch[k].role >= 0) P->h[i].ch[k].role = remap[P->h[i].ch[k].role];
        for (int k = 0; k < 9; k++)
            if (P->h[i].refit_col[k] >= 0 && refit) P->h[i].refit_col[k] = remap[P->h[i].refit_col[k]];
    }
    free(remap);
    name_set_free(ns);
    P->names = sorted;
    P->A = A;
}

/* Builds the plan on every rank (cheap: directory listing, labels.dat, map). */
static void plan_build(nilm_plan *P, const gt_import_opts *o, const gt_appliance_map *map, gt_diag *d) {
    memset(P, 0, sizeof *P);
    const int refit = o->format == GT_IMPORT_REFIT;
    const char *ds = gt_import_format_name(o->format);
    int H = 0;
    int *nums = plan_houses(o, d, &H);
    if (!nums) return;
    P->H = H;
    P->h = GT_CALLOC((size_t)H, sizeof(house));
    /* ns.names[] first holds column names in discovery order; remapped after sorting */
    name_set ns = {0};
    for (int i = 0; i < H && !d->err_code; i++) {
        house *h = &P->h[i];
        h->number = nums[i];
        if (refit) plan_refit_house(h, o, map, ds, &ns, d);
        else if (plan_labels_house(h, o, map, ds, &ns, d)) break;
    }
    free(nums);
    const int A = ns.n;
    if (!d->err_code && A == 0)
        gt_diag_error(d, GT_EXIT_DATA, "%s: no appliance channels to import (all labels dropped by the map?)", o->src);
    if (!d->err_code && A > GT_IMPORT_MAX_COLS)
        gt_diag_error(d, GT_EXIT_DATA, "%s: %d appliance names; a file holds at most %d", o->src, A, GT_IMPORT_MAX_COLS);
    if (d->err_code) {
        name_set_free(&ns);
        return;
    }
    plan_sort_names(P, &ns, refit);
}

static void plan_free(nilm_plan *P) {
    for (int i = 0; i < P->H; i++) free(P->h[i].ch);
    free(P->h);
    free(P->names);
    free(P->n_rows);
    free(P->t0);
    free(P->owns);
    if (P->blob)
        for (int i = 0; i < P->H; i++) free(P->blob[i]);
    free(P->blob);
    free(P->meta);
}

static int64_t blob_bytes(int64_t n, int A) { return n * (4 * (int64_t)(1 + A) + 1); }

/* The resampled channels ([n] each) of an appliance column named by several
 * channels, summed when all are read (gt_sum_legs). */
typedef struct {
    float **leg;
    int n;
} col_legs;

typedef struct {
    gt_series_stats s;
    int64_t outside, gap_rows, issues, bytes;
    int64_t bridged; /* appliance cells where a leg's short hole was bridged (gt_sum_legs) */
} house_stats;

static void stats_add(house_stats *hs, const gt_series_stats *s) {
    hs->s.n_lines += s->n_lines;
    hs->s.n_samples += s->n_samples;
    hs->s.n_exact_dup += s->n_exact_dup;
    hs->s.n_conflict += s->n_conflict;
    hs->s.n_backward += s->n_backward;
    hs->s.n_backward_far += s->n_backward_far;
    hs->s.n_bad_lines += s->n_bad_lines;
}

/* Reads and cleans one channel file. Returns 0, 1 when missing or empty (warned),
 * -1 on error. */
static int read_channel(const chan *c, int64_t tol, gt_series *s, gt_diag *d, house_stats *hs) {
    memset(s, 0, sizeof *s);
    if (gt_import_file_bytes(c->path) < 0) return gt_diag_warn(d, GT_WARN_CHANNEL, "%s: missing channel file %s; channel skipped", c->named_at[0] ? c->named_at : c->path,
                            c->path) ? -1 : 1;
    gt_text t;
    if (gt_text_open(&t, c->path, d)) return -1;
    hs->bytes += (int64_t)t.n;
    gt_series_stats ss = {0};
    int rc = gt_parse_tv(t.p, t.n, c->path, c->col, c->min_f, c->max_f, tol, s, d, &ss);
    gt_text_close(&t);
    if (rc == 0) rc = gt_series_clean(s, c->path, d, &ss);
    stats_add(hs, &ss);
    if (rc) {
        gt_series_free(s);
        return -1;
    }
    if (s->n == 0) {
        gt_series_free(s);
        return gt_diag_warn(d, GT_WARN_CHANNEL, "%s: empty channel (no samples); channel skipped", c->path) ? -1 : 1;
    }
    return 0;
}

/* Parses and resamples house i on its owner. Returns 0 or -1 (error in d). */
/* A REFIT house's CSV: the 10 series cleaned into refit_s[] (the
 * aggregate moved to agg[0]). 1 (one aggregate), or -1 with the error in d. */
static int read_refit_house(const house *h, int64_t tol, gt_series refit_s[10], gt_series agg[2],
                            const char *agg_path[2], gt_diag *d, house_stats *hs) {
    gt_text t;
    if (gt_text_open(&t, h->csv, d)) return -1;
    hs->bytes += (int64_t)t.n;
    gt_refit_stats rs;
    memset(&rs, 0, sizeof rs);
    int rc = gt_parse_refit(t.p, t.n, h->csv, tol, refit_s, d, &rs);
    gt_text_close(&t);
    for (int c = 0; rc == 0 && c < 10; c++) {
        gt_series_stats ss = {0};
        char lbl[PATH_MAX + 32];
        snprintf(lbl, sizeof lbl, "%s (%s)", h->csv, c == 0 ? "Aggregate" : "Appliance");
        rc = gt_series_clean(&refit_s[c], c == 0 ? h->csv : lbl, d, &ss);
        if (c == 0) {
            ss.n_lines = rs.s.n_lines, ss.n_samples = rs.s.n_samples, ss.n_backward = rs.s.n_backward,
            ss.n_backward_far = rs.s.n_backward_far, ss.n_bad_lines = rs.s.n_bad_lines;
            stats_add(hs, &ss);
        }
    }
    hs->issues += rs.n_issues;
    if (rs.n_issues > 0 && !d->quiet)
        GT_INFO("%s: %lld rows with Issues=1 (submeters above the aggregate): kept", h->csv, (long long)rs.n_issues);
    if (rc) return -1;
    if (refit_s[0].n == 0) {
        gt_diag_error(d, GT_EXIT_DATA, "%s: empty channel (no data rows)", h->csv);
        return -1;
    }
    agg[0] = refit_s[0];
    agg_path[0] = h->csv;
    memset(&refit_s[0], 0, sizeof refit_s[0]);
    return 1;
}

/* The aggregate channels of a UK-DALE or REDD house (REDD: the two legs)
 * into agg[]: how many, or -1 with the error in d. */
static int read_aggregates(house *h, const gt_import_opts *o, int64_t tol, gt_series agg[2], const char *agg_path[2],
                           gt_diag *d, house_stats *hs) {
    int n_agg = 0;
    for (int k = 0; k < h->n_chan; k++) {
        if (h->ch[k].role >= 0) continue;
        int rc = read_channel(&h->ch[k], tol, &agg[n_agg], d, hs);
        if (rc < 0) return -1;
        if (rc > 0) continue; /* a REDD leg missing: warned */
        agg_path[n_agg++] = h->ch[k].path;
        if (n_agg == 2) break;
    }
    if (n_agg == 0) {
        gt_diag_error(d, GT_EXIT_DATA, "house %d: no aggregate samples (%s)", h->number,
                      o->format == GT_IMPORT_REDD ? "mains channels missing or empty" : "aggregate missing or empty");
        return -1;
    }
    return n_agg;
}

/* A grid of decades for a few samples: refused before it is allocated. 0,
 * or -1 with the error in d. */
static int check_sparse(const house *h, const gt_import_opts *o, const gt_series *agg, const char *const *agg_path,
                        int n_agg, int64_t n, gt_diag *d) {
    for (int c = 0; c < n_agg; c++) {
        int64_t at = 0;
        if (!gt_grid_too_sparse(n, agg[c].t, agg[c].n, &at)) continue;
        gt_diag_error(d, GT_EXIT_DATA, "%s:%u: %lld days after line %u: the grid of house %d would have %lld rows of "
                      "%g s for %lld samples (more than %d per sample): fix the clock of the source, or import "
                      "with a longer --period", agg_path[c], agg[c].line[at],
                      (long long)((agg[c].t[at] - agg[c].t[at > 0 ? at - 1 : 0]) / 86400000),
                      agg[c].line[at > 0 ? at - 1 : 0], h->number, (long long)n, o->period_s, (long long)agg[c].n,
                      GT_IMPORT_GRID_MAX_RATIO);
        return -1;
    }
    return 0;
}

/* The appliance columns of house i resampled onto the grid g (n rows) into
 * app (row-major, A columns): one channel in place, several (REDD's two legs)
 * summed with their short holes bridged. 0, or -1 with the error in d. */
static int grid_appliances(nilm_plan *P, int i, const gt_import_opts *o, int64_t tol, int64_t gap, int64_t pms,
                           gt_series *refit_s, const gt_grid *gp, float *app, int64_t n, gt_diag *d, house_stats *hs) {
    house *h = &P->h[i];
    const int A = P->A;
    const gt_grid g = *gp;
    uint8_t *owns = P->owns + (size_t)i * A;
    int n_src = o->format == GT_IMPORT_REFIT ? 9 : h->n_chan;
    /* a column of one channel is resampled into place; the channels of a column of several (REDD's
     * two legs of a 240 V appliance) are kept until all are read, then summed with their short holes
     * bridged (gt_sum_legs): only those cost a copy of the rows each */
    col_legs *cl = GT_CALLOC((size_t)A, sizeof(col_legs));
    int *n_named = GT_CALLOC((size_t)A, sizeof(int));
    for (int k = 0; k < n_src; k++) {
        int a = o->format == GT_IMPORT_REFIT ? h->refit_col[k] : h->ch[k].role;
        if (a >= 0) n_named[a]++;
    }
    for (int k = 0; k < n_src; k++) {
        gt_series s;
        int a;
        if (o->format == GT_IMPORT_REFIT) {
            a = h->refit_col[k];
            s = refit_s[k + 1];
            memset(&refit_s[k + 1], 0, sizeof s);
            if (a < 0) {
                gt_series_free(&s);
                continue;
            }
        } else {
            a = h->ch[k].role;
            if (a < 0) continue;
            int rc = read_channel(&h->ch[k], tol, &s, d, hs);
            if (rc < 0) {
                for (int c = 0; c < A; c++) {
                    for (int j = 0; j < cl[c].n; j++) free(cl[c].leg[j]);
                    free(cl[c].leg);
                }
                free(cl);
                free(n_named);
                return -1;
            }
            if (rc > 0) continue;
        }
        if (n_named[a] == 1) {
            hs->outside += gt_resample_mean(s.t, s.v, s.n, &g, app + a, (size_t)A, 0);
        } else {
            float *v = GT_ALLOC_ARRAY(n, sizeof(float), "import: a house's grid");
            hs->outside += gt_resample_mean(s.t, s.v, s.n, &g, v, 1, 0);
            cl[a].leg = GT_REALLOC(cl[a].leg, sizeof(float *) * (size_t)(cl[a].n + 1));
            cl[a].leg[cl[a].n++] = v;
        }
        owns[a] = 1;
        gt_series_free(&s);
    }
    /* a leg's hole lasting at most --max-gap (the importer's limit of a short hole; 5 periods by
     * default, as data.fill_max_s) is bridged in the sum where another leg has a value */
    const int64_t max_hole_rows = gap / pms;
    for (int c = 0; c < A; c++) {
        if (cl[c].n > 0)
            hs->bridged += gt_sum_legs((const float *const *)cl[c].leg, cl[c].n, n, max_hole_rows, app + c, (size_t)A);
        for (int j = 0; j < cl[c].n; j++) free(cl[c].leg[j]);
        free(cl[c].leg);
    }
    free(cl);
    free(n_named);
    return 0;
}

static int build_house(nilm_plan *P, int i, const gt_import_opts *o, gt_diag *d, house_stats *hs) {
    house *h = &P->h[i];
    const int A = P->A;
    const int64_t pms = llround(o->period_s * 1000), tol = llround(o->backward_tol_s * 1000),
                  gap = llround(o->max_gap_s * 1000);
    gt_series agg[2];
    const char *agg_path[2] = {NULL, NULL};
    int n_agg = 0;
    gt_series refit_s[10];
    memset(refit_s, 0, sizeof refit_s);
    memset(agg, 0, sizeof agg);
    if (o->format == GT_IMPORT_REFIT) n_agg = read_refit_house(h, tol, refit_s, agg, agg_path, d, hs);
    else n_agg = read_aggregates(h, o, tol, agg, agg_path, d, hs);
    if (n_agg < 0) goto fail;
    int64_t first = agg[0].t[0], last = agg[0].t[agg[0].n - 1];
    if (n_agg == 2) {
        if (agg[1].t[0] < first) first = agg[1].t[0];
        if (agg[1].t[agg[1].n - 1] > last) last = agg[1].t[agg[1].n - 1];
    }
    gt_grid g = gt_grid_span(first, last, pms);
    const int64_t n = g.n_rows;
    if (check_sparse(h, o, agg, agg_path, n_agg, n, d)) goto fail;
    void *blob = GT_ALLOC_ARRAY(blob_bytes(n, A), 1, "import: a house's grid");
    float *ag = blob, *app = ag + n;
    uint8_t *flags = (uint8_t *)(app + (size_t)n * A);
    memset(flags, 0, (size_t)n);
    float *tmp = GT_ALLOC_ARRAY(n, sizeof(float), "import: a house's grid");
    gt_resample_mean(agg[0].t, agg[0].v, agg[0].n, &g, ag, 1, 0);
    hs->gap_rows += gt_mark_gaps(agg[0].t, agg[0].n, &g, gap, flags, GT_IMPORT_GAP_BIT);
    if (n_agg == 2) {
        gt_resample_mean(agg[1].t, agg[1].v, agg[1].n, &g, tmp, 1, 0);
        for (int64_t k = 0; k < n; k++) ag[k] += tmp[k];
        hs->gap_rows += gt_mark_gaps(agg[1].t, agg[1].n, &g, gap, flags, GT_IMPORT_GAP_BIT);
    }
    for (int c = 0; c < n_agg; c++) gt_series_free(&agg[c]);
    for (size_t k = 0; k < (size_t)n * A; k++) app[k] = NAN;
    if (grid_appliances(P, i, o, tol, gap, pms, refit_s, &g, app, n, d, hs)) {
        free(tmp);
        free(blob);
        goto fail;
    }
    /* gap rows: no data in the whole row (never invented, never kept half) */
    for (int64_t k = 0; k < n; k++)
        if (flags[k] & GT_IMPORT_GAP_BIT) {
            ag[k] = NAN;
            for (int a = 0; a < A; a++) app[(size_t)k * A + a] = NAN;
        }
    free(tmp);
    P->blob[i] = blob;
    P->n_rows[i] = n;
    P->t0[i] = g.t0_ms;
    return 0;
fail:
    for (int c = 0; c < 2; c++) gt_series_free(&agg[c]);
    for (int c = 0; c < 10; c++) gt_series_free(&refit_s[c]);
    return -1;
}

/* ------------------------------------------------------------ the source --- */

static void src_info(void *ctx, int h, gt_nilm_item *item, uint8_t *owns) {
    nilm_plan *P = ctx;
    item->id = P->h[h].number;
    item->n_rows = P->n_rows[h];
    item->t0_ms = P->t0[h];
    item->period_s = P->period_s;
    if (owns) memcpy(owns, P->owns + (size_t)h * P->A, (size_t)P->A);
}
static void src_generate(void *ctx, int h, float *aggregate, float *appliances, uint8_t *faults) {
    nilm_plan *P = ctx;
    GT_ASSERT(P->blob[h] != NULL);
    int64_t n = P->n_rows[h];
    const float *ag = P->blob[h], *app = ag + n;
    memcpy(aggregate, ag, sizeof(float) * (size_t)n);
    memcpy(appliances, app, sizeof(float) * (size_t)n * P->A);
    if (faults) memcpy(faults, app + (size_t)n * P->A, (size_t)n);
    free(P->blob[h]); /* each household is generated once */
    P->blob[h] = NULL;
}

static void meta_for(const gt_appliance_map *map, const char *name, gt_io_appliance *m) {
    snprintf(m->name, sizeof m->name, "%s", name);
    m->on_power_w = 10, m->on_duration_s = 60, m->max_power_w = 5000;
    const char *v = gt_map_get(map, "meta", name);
    if (v) {
        float a, b, c;
        if (sscanf(v, "%f , %f , %f", &a, &b, &c) == 3) m->on_power_w = a, m->on_duration_s = b, m->max_power_w = c;
    }
}

void gt_import_nilm(const gt_import_opts *o, const gt_appliance_map *map, MPI_Comm comm, gt_import_stats *st) {
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    gt_diag d = {0};
    d.strict = o->strict;
    d.max_bad_lines = o->max_bad_lines;
    nilm_plan P;
    plan_build(&P, o, map, &d);
    gt_diag_item_end(&d, o->src, NULL, 0);
    gt_import_agree(comm, &d, 0);
    const int H = P.H, A = P.A;
    P.period_s = o->period_s;
    P.n_rows = GT_CALLOC((size_t)H, sizeof(int64_t));
    P.t0 = GT_CALLOC((size_t)H, sizeof(int64_t));
    P.owns = GT_CALLOC_ARRAY((int64_t)H * A, 1, "import: households x appliances");
    P.blob = GT_CALLOC((size_t)H, sizeof(void *));

    /* parse: items by text bytes */
    int64_t *w = GT_MALLOC(sizeof(int64_t) * (size_t)H);
    for (int i = 0; i < H; i++) w[i] = P.h[i].bytes > 0 ? P.h[i].bytes : 1;
    int *from = GT_MALLOC(sizeof(int) * (size_t)H), *to = GT_MALLOC(sizeof(int) * (size_t)H);
    gt_shard_assign(w, H, size, from);
    double tp = gt_now();
    house_stats hs;
    memset(&hs, 0, sizeof hs);
    int err_item = INT_MAX;
    for (int i = 0; i < H; i++) {
        if (from[i] != rank) continue;
        int rc = build_house(&P, i, o, &d, &hs);
        /* the warnings past the first few of the house, by kind: one line */
        char item[PATH_MAX + 32];
        if (o->format == GT_IMPORT_REFIT) snprintf(item, sizeof item, "%.4000s", P.h[i].csv);
        else snprintf(item, sizeof item, "%.4000s/house_%d", o->src, P.h[i].number);
        gt_diag_item_end(&d, item, NULL, 0);
        if (rc) {
            err_item = i;
            break;
        }
    }
    double parse_s = gt_now() - tp;
    gt_import_agree(comm, &d, err_item);

    /* share sizes, origins and ownership */
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, P.n_rows, H, MPI_INT64_T, MPI_SUM, comm));
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, P.t0, H, MPI_INT64_T, MPI_SUM, comm));
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, P.owns, H * A, MPI_UINT8_T, MPI_MAX, comm));
    int64_t loc[13] = {hs.bytes,          hs.s.n_lines,  hs.s.n_samples, hs.s.n_exact_dup,
                       hs.s.n_conflict,   hs.s.n_backward, hs.s.n_backward_far, hs.outside,
                       hs.gap_rows,       hs.issues,     d.n_warn,       hs.s.n_bad_lines, hs.bridged};
    int64_t tot[13];
    MPI_CHECK(MPI_Allreduce(loc, tot, 13, MPI_INT64_T, MPI_SUM, comm));
    MPI_CHECK(MPI_Allreduce(&parse_s, &st->parse_s_max, 1, MPI_DOUBLE, MPI_MAX, comm));
    MPI_CHECK(MPI_Allreduce(&parse_s, &st->parse_s_sum, 1, MPI_DOUBLE, MPI_SUM, comm));

    /* move each household to the rank the writer gives it */
    gt_shard_assign(P.n_rows, H, size, to);
    int64_t *bb = GT_MALLOC(sizeof(int64_t) * (size_t)H);
    for (int i = 0; i < H; i++) bb[i] = blob_bytes(P.n_rows[i], A);
    gt_import_move(P.blob, bb, from, to, H, comm);

    P.meta = GT_CALLOC((size_t)A, sizeof(gt_io_appliance));
    for (int a = 0; a < A; a++) meta_for(map, P.names[a], &P.meta[a]);
    snprintf(P.config, sizeof P.config,
             "format=%s; src=%s; houses=%d; period_s=%.17g; max_gap_s=%.17g; backward_tolerance_s=%.17g; "
             "strict=%d; max_bad_lines=%d; map=%s; ukdale_aggregate=%d",
             gt_import_format_name(o->format), o->src, H, o->period_s, o->max_gap_s, o->backward_tol_s, o->strict,
             o->max_bad_lines, map->n ? map->path : "(none)", (int)o->ukdale_agg);
    char gen[64]; /* the attribute keeps the file's former path: files stay byte-identical */
    snprintf(gen, sizeof gen, "gridtrain import %s (import/import_nilm.c)", gt_import_format_name(o->format));
    gt_nilm_source src = {
        .n_households = H, .n_appliances = A, .meta = P.meta, .has_faults = 1,
        .lowres_period_s = o->lowres_period_s, .generator = gen, .generator_config = P.config, .seed = 0,
        .ctx = &P, .info = src_info, .generate = src_generate,
    };
    gt_write_stats ws;
    gt_nilm_write(o->out, &src, &o->write, comm, &ws);

    st->n_items = H;
    st->n_cols = A;
    st->n_rows = ws.n_rows_total;
    st->text_bytes = tot[0];
    st->n_lines = tot[1], st->n_samples = tot[2], st->n_exact_dup = tot[3], st->n_conflict = tot[4];
    st->n_backward = tot[5], st->n_backward_far = tot[6], st->n_outside = tot[7], st->n_gap_rows = tot[8];
    st->n_issues = tot[9], st->n_warnings = tot[10], st->n_bad_lines = tot[11], st->n_bridged = tot[12];
    free(w);
    free(from);
    free(to);
    free(bb);
    plan_free(&P);
}
