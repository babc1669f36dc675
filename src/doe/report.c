/* doe/report.c: loading a sweep's results, aggregation and the report files
 * (report.h). */
#define _GNU_SOURCE
#include "doe/report.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/check.h"
#include "core/escape.h"
#include "core/fsutil.h"
#include "core/log.h"

static const gt_doe_metric_def k_metrics[] = {
    {"pdm.event.recall", "event recall", 1, 1},
    {"pdm.event.precision", "event precision", 1, 1},
    {"pdm.event.f05", "event F0.5", 1, 1},
    {"pdm.event.false_alarms_per_turbine_day", "false alarms/turbine-day", 0, 1},
    {"pdm.event.detection_delay_s_mean", "detection delay (s)", 0, 1},
    {"pdm.point.f05", "point F0.5", 1, 1},
    {"pdm.care_score", "CARE score", 1, 1},
    {"pdm.care_protocol.score", "CARE score (authors' protocol)", 1, 1},
    {"nilm.test.overall.mae_w", "MAE (W)", 0, 1},
    {"nilm.test.overall.sae", "SAE", 0, 1},
    {"nilm.test.overall.nde", "NDE", 0, 1},
    {"nilm.test.overall.precision", "precision", 1, 1},
    {"nilm.test.overall.recall", "recall", 1, 1},
    {"nilm.test.overall.f1", "F1", 1, 1},
    {"nilm.test.overall.ea", "energy accuracy", 1, 1},
    {"train.best_val_loss", "best val loss", 0, 1},
    {"train.final_loss", "final loss", 0, 0},
    {"train.train_time_s", "train time (s)", 0, 0},
    {"train.samples_per_s", "samples/s", 1, 0},
    {"train.steps", "steps", 1, 0},
    {"train.cpu_hours", "CPU-hours", 0, 0},
    {"train.gpu_hours", "GPU-hours", 0, 0},
};
#define N_METRICS ((int)(sizeof k_metrics / sizeof k_metrics[0]))
_Static_assert(sizeof k_metrics / sizeof k_metrics[0] <= GT_DOE_MAX_METRICS, "metric table too large");

const gt_doe_metric_def *gt_doe_metrics(int *n) {
    if (n) *n = N_METRICS;
    return k_metrics;
}
int gt_doe_metric_find(const char *name) {
    for (int m = 0; m < N_METRICS; m++)
        if (!strcmp(k_metrics[m].name, name)) return m;
    return -1;
}

const char *gt_doe_status_name(int s) {
    static const char *const k[] = {"missing", "running", "preempted", "failed", "done"};
    return s >= 0 && s <= GT_DOE_DONE ? k[s] : "?";
}

gt_doe_stat gt_doe_stat_of(const double *v, int n) {
    gt_doe_stat st = {0, NAN, NAN};
    double sum = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) sum += v[i], st.n++;
    if (st.n == 0) return st;
    st.mean = sum / st.n;
    if (st.n < 2) return st;
    double ss = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) ss += (v[i] - st.mean) * (v[i] - st.mean);
    st.sd = sqrt(ss / (st.n - 1));
    return st;
}

/* ---------------------------------------------------------------- load -- */

static cJSON *read_json(const char *path) {
    char why[160];
    char *t = gt_read_file_bounded(path, GT_READ_JSON_MAX_BYTES, "a JSON file of a sweep", NULL, why, sizeof why);
    if (!t) {
        if (errno == EFBIG) GT_WARN("%s: %s: not read", path, why);
        return NULL;
    }
    cJSON *j = cJSON_Parse(t);
    free(t);
    return j;
}

/* A cell's eval.json: NULL with *damage NULL when there is none, NULL with
 * *damage set when it is there but is no result (a NUL byte, not JSON, too
 * deeply nested, not an object). */
static cJSON *read_eval_json(const char *path, const char **damage) {
    *damage = NULL;
    size_t n = 0;
    char *t = gt_read_file_bounded(path, GT_READ_JSON_MAX_BYTES, "an eval.json", &n, NULL, 0);
    if (!t) {
        if (errno == EFBIG) *damage = "larger than the 64 MiB an eval.json may have";
        else if (errno != ENOENT) *damage = "cannot be read as a regular file";
        return NULL;
    }
    cJSON *j = NULL;
    if (memchr(t, 0, n)) *damage = "a NUL byte";
    else if (!(j = cJSON_Parse(t))) *damage = "not JSON";
    else if (!cJSON_IsObject(j)) *damage = "not a JSON object", cJSON_Delete(j), j = NULL;
    free(t);
    return j;
}

/* value at a dotted path, or NaN */
static double json_path(const cJSON *j, const char *path) {
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s", path);
    const cJSON *cur = j;
    for (char *save = NULL, *tok = strtok_r(tmp, ".", &save); tok && cur; tok = strtok_r(NULL, ".", &save))
        cur = cJSON_IsObject(cur) ? cJSON_GetObjectItem(cur, tok) : NULL;
    return cJSON_IsNumber(cur) ? cur->valuedouble : NAN;
}
static int json_int(const cJSON *j, const char *k) {
    const cJSON *x = cJSON_GetObjectItem(j, k);
    return cJSON_IsNumber(x) ? x->valueint : 0;
}

void gt_doe_sweep_free(gt_doe_sweep *s) {
    for (int f = 0; f < s->n_factors; f++) {
        for (int l = 0; l < s->n_levels[f]; l++) free(s->levels[f][l]);
        free(s->levels[f]);
        free(s->factor[f]);
        free(s->key[f]);
    }
    free(s->cells);
    free(s->dir);
    free(s->name);
    free(s->metric);
    memset(s, 0, sizeof *s);
}

/* a factor's levels sorted by text, for finding a cell's level in log time */
typedef struct {
    const char *text;
    int index;
} level_ref;
static int level_cmp(const void *a, const void *b) {
    return strcmp(((const level_ref *)a)->text, ((const level_ref *)b)->text);
}
static int level_sort_cmp(const void *a, const void *b) { /* equal texts in level order */
    const int c = level_cmp(a, b);
    return c ? c : ((const level_ref *)a)->index - ((const level_ref *)b)->index;
}
/* index of the level named `text` among sorted[0..n) (the first of equal ones), or -1 */
static int level_find(const level_ref *sorted, int n, const char *text) {
    const level_ref key = {text, -1}, *hit = bsearch(&key, sorted, (size_t)n, sizeof key, level_cmp);
    while (hit && hit > sorted && !strcmp(hit[-1].text, text)) hit--;
    return hit ? hit->index : -1;
}

int gt_doe_sweep_load(const char *dir, gt_doe_sweep *s, char *err, size_t en) {
    memset(s, 0, sizeof *s);
    s->seed_factor = -1;
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/sweep.json", dir);
    cJSON *j = read_json(path);
    if (!j) {
        snprintf(err, en, "%s: missing or not JSON (is %s a sweep directory? 'doe run' writes it)", path, dir);
        return -1;
    }
    s->dir = GT_STRDUP(dir);
    const cJSON *x = cJSON_GetObjectItem(j, "name");
    s->name = GT_STRDUP(cJSON_IsString(x) ? x->valuestring : "sweep");
    x = cJSON_GetObjectItem(j, "metric");
    if (cJSON_IsString(x)) s->metric = GT_STRDUP(x->valuestring);
    x = cJSON_GetObjectItem(j, "task");
    snprintf(s->task, sizeof s->task, "%s", cJSON_IsString(x) ? x->valuestring : "pdm");
    const cJSON *fa = cJSON_GetObjectItem(j, "factors"), *f;
    cJSON_ArrayForEach(f, fa) {
        if (s->n_factors == GT_DOE_MAX_FACTORS) break;
        int k = s->n_factors++;
        const cJSON *nm = cJSON_GetObjectItem(f, "name"), *ky = cJSON_GetObjectItem(f, "key"),
                    *lv = cJSON_GetObjectItem(f, "levels"), *l;
        s->factor[k] = GT_STRDUP(cJSON_IsString(nm) ? nm->valuestring : "?");
        s->key[k] = GT_STRDUP(cJSON_IsString(ky) ? ky->valuestring : s->factor[k]);
        s->levels[k] = GT_CALLOC((size_t)cJSON_GetArraySize(lv) + 1, sizeof(char *));
        cJSON_ArrayForEach(l, lv) s->levels[k][s->n_levels[k]++] = GT_STRDUP(cJSON_IsString(l) ? l->valuestring : "?");
        if (!strcmp(s->key[k], "train.seed")) s->seed_factor = k;
    }
    /* sizes of a damaged or crafted sweep.json: at most the cells a matrix may have (doe/matrix.h) */
    int64_t prod = 1;
    for (int k = 0; k < s->n_factors && prod <= GT_DOE_MAX_CELLS; k++) prod *= s->n_levels[k] > 0 ? s->n_levels[k] : 1;
    const cJSON *cells = cJSON_GetObjectItem(j, "cells"), *c;
    s->n_cells = cJSON_GetArraySize(cells);
    if (prod > GT_DOE_MAX_CELLS || s->n_cells > GT_DOE_MAX_CELLS) {
        snprintf(err, en, "%s: more than %d cells or level combinations (the limit of one matrix; sweep.json damaged?)",
                 path, GT_DOE_MAX_CELLS);
        cJSON_Delete(j);
        return -1;
    }
    s->cells = GT_CALLOC_ARRAY(s->n_cells ? s->n_cells : 1, sizeof(gt_doe_result), "doe report: cells of sweep.json");
    level_ref *sorted[GT_DOE_MAX_FACTORS];
    for (int k = 0; k < s->n_factors; k++) {
        sorted[k] = GT_ALLOC_ARRAY(s->n_levels[k] > 0 ? s->n_levels[k] : 1, sizeof(level_ref), "doe report: levels");
        for (int l = 0; l < s->n_levels[k]; l++) sorted[k][l] = (level_ref){s->levels[k][l], l};
        qsort(sorted[k], (size_t)s->n_levels[k], sizeof(level_ref), level_sort_cmp);
    }
    int rc = 0;
    int64_t i = 0;
    cJSON_ArrayForEach(c, cells) {
        gt_doe_result *r = &s->cells[i++];
        r->index = json_int(c, "index");
        const cJSON *id = cJSON_GetObjectItem(c, "id"), *lv = cJSON_GetObjectItem(c, "factors");
        snprintf(r->id, sizeof r->id, "%s", cJSON_IsString(id) ? id->valuestring : "?");
        /* the id names a directory under cells/: letters, digits, '-', '_' (never '..' or a path) */
        int plain = r->id[0] != 0;
        for (const char *q = r->id; plain && *q; q++) plain = isalnum((unsigned char)*q) || *q == '-' || *q == '_';
        if (!plain) {
            snprintf(err, en, "%s: cell %lld has id '%s', not a plain name (sweep.json damaged?)", path,
                     (long long)r->index, r->id);
            rc = -1;
            break;
        }
        for (int k = 0; k < s->n_factors && !rc; k++) {
            const cJSON *v = cJSON_GetObjectItem(lv, s->factor[k]);
            /* sorted levels, log time per cell (a scan of every level per cell was cells x levels) */
            r->level[k] = cJSON_IsString(v) ? level_find(sorted[k], s->n_levels[k], v->valuestring) : -1;
            if (r->level[k] < 0) {
                snprintf(err, en, "%s: cell %s has no valid level of factor '%s'", path, r->id, s->factor[k]);
                rc = -1;
            }
        }
        if (rc) break;
        for (int m = 0; m < N_METRICS; m++) r->value[m] = NAN;
        char p2[PATH_MAX + 96];
        snprintf(p2, sizeof p2, "%s/cells/%s/cell.json", dir, r->id);
        cJSON *cj = read_json(p2);
        if (cj) {
            r->attempts = json_int(cj, "attempts");
            r->preemptions = json_int(cj, "preemptions");
            r->failures = json_int(cj, "failures");
            r->exit_code = json_int(cj, "exit_code");
            const cJSON *st = cJSON_GetObjectItem(cj, "status");
            const char *sn = cJSON_IsString(st) ? st->valuestring : "";
            r->status = !strcmp(sn, "done") ? GT_DOE_DONE : !strcmp(sn, "failed") ? GT_DOE_FAILED
                        : !strcmp(sn, "preempted") ? GT_DOE_PREEMPTED : GT_DOE_RUNNING;
            cJSON_Delete(cj);
        }
        snprintf(p2, sizeof p2, "%s/cells/%s/eval.json", dir, r->id);
        const char *damage = NULL;
        cJSON *ev = read_eval_json(p2, &damage);
        for (int m = 0; ev && m < N_METRICS; m++) {
            r->value[m] = json_path(ev, k_metrics[m].name);
            if (isinf(r->value[m])) damage = "a metric that is not a finite number";
        }
        if (damage) {
            /* a damaged eval.json is no result: the cell failed, its values unused */
            GT_WARN("doe report: %s is damaged (%s): cell %lld counted as failed", p2, damage, (long long)r->index);
            for (int m = 0; m < N_METRICS; m++) r->value[m] = NAN;
            r->status = GT_DOE_FAILED;
        } else if (ev) {
            r->status = GT_DOE_DONE;
        } else if (r->status == GT_DOE_DONE) {
            r->status = GT_DOE_FAILED; /* done without eval.json: treat as failed */
        }
        cJSON_Delete(ev);
    }
    for (int k = 0; k < s->n_factors; k++) free(sorted[k]);
    cJSON_Delete(j);
    return rc;
}

/* ----------------------------------------------------------- summarize -- */

static int find_factor(const gt_doe_sweep *s, const char *name) {
    for (int f = 0; f < s->n_factors; f++)
        if (!strcmp(s->factor[f], name) || !strcmp(s->key[f], name)) return f;
    return -1;
}

int gt_doe_summarize(const gt_doe_sweep *s, const char *metric, const char *rows, const char *cols,
                     gt_doe_summary *o, char *err, size_t en) {
    memset(o, 0, sizeof *o);
    o->best = o->worst = o->row_factor = o->col_factor = -1;
    /* primary metric */
    const char *want = metric ? metric : s->metric;
    if (want) {
        o->primary = gt_doe_metric_find(want);
        if (o->primary < 0) {
            char known[1024] = "";
            for (int m = 0; m < N_METRICS; m++)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", m ? ", " : "", k_metrics[m].name);
            snprintf(err, en, "unknown metric '%s' (known: %s)", want, known);
            return -1;
        }
    } else {
        const char *cand[] = {strcmp(s->task, "nilm") ? "pdm.event.f05" : "nilm.test.overall.f1", "train.best_val_loss"};
        o->primary = gt_doe_metric_find(cand[1]);
        int m0 = gt_doe_metric_find(cand[0]);
        for (int64_t i = 0; i < s->n_cells; i++)
            if (isfinite(s->cells[i].value[m0])) o->primary = m0;
    }
    /* configurations: equal levels in every non-seed factor */
    double *buf = GT_MALLOC(sizeof(double) * (size_t)(s->n_cells + 1));
    int *cfg_of = GT_MALLOC(sizeof(int) * (size_t)(s->n_cells + 1));
    o->configs = GT_CALLOC((size_t)(s->n_cells + 1), sizeof(gt_doe_config));
    for (int64_t i = 0; i < s->n_cells; i++) {
        const gt_doe_result *r = &s->cells[i];
        o->n_status[r->status]++;
        o->n_requeued += r->preemptions > 0;
        if (r->status == GT_DOE_DONE || r->status == GT_DOE_FAILED || r->status == GT_DOE_PREEMPTED) {
            int mc = gt_doe_metric_find("train.cpu_hours"), mg = gt_doe_metric_find("train.gpu_hours"),
                mt = gt_doe_metric_find("train.train_time_s");
            if (isfinite(r->value[mc])) o->cpu_hours += r->value[mc];
            if (isfinite(r->value[mg])) o->gpu_hours += r->value[mg];
            if (isfinite(r->value[mt])) o->train_time_s += r->value[mt];
        }
        int c = -1;
        for (int k = 0; k < o->n_configs && c < 0; k++) {
            int same = 1;
            for (int f = 0; f < s->n_factors; f++)
                if (f != s->seed_factor && o->configs[k].level[f] != r->level[f]) same = 0;
            if (same) c = k;
        }
        if (c < 0) {
            c = o->n_configs++;
            for (int f = 0; f < s->n_factors; f++) o->configs[c].level[f] = f == s->seed_factor ? -1 : r->level[f];
        }
        cfg_of[i] = c;
        o->configs[c].n_cells++;
        o->configs[c].n_done += r->status == GT_DOE_DONE;
    }
    for (int c = 0; c < o->n_configs; c++)
        for (int m = 0; m < N_METRICS; m++) {
            int n = 0;
            for (int64_t i = 0; i < s->n_cells; i++)
                if (cfg_of[i] == c && s->cells[i].status == GT_DOE_DONE) buf[n++] = s->cells[i].value[m];
            o->configs[c].stat[m] = gt_doe_stat_of(buf, n);
        }
    for (int m = 0; m < N_METRICS; m++) {
        int n = 0;
        for (int64_t i = 0; i < s->n_cells; i++)
            if (s->cells[i].status == GT_DOE_DONE) buf[n++] = s->cells[i].value[m];
        o->grand[m] = gt_doe_stat_of(buf, n);
    }
    /* main effects: per level of each non-seed factor, over finished cells */
    for (int f = 0; f < s->n_factors; f++) {
        if (f == s->seed_factor) continue;
        o->effect[f] = GT_CALLOC((size_t)s->n_levels[f] * N_METRICS, sizeof(gt_doe_stat));
        for (int l = 0; l < s->n_levels[f]; l++)
            for (int m = 0; m < N_METRICS; m++) {
                int n = 0;
                for (int64_t i = 0; i < s->n_cells; i++)
                    if (s->cells[i].status == GT_DOE_DONE && s->cells[i].level[f] == l) buf[n++] = s->cells[i].value[m];
                o->effect[f][l * N_METRICS + m] = gt_doe_stat_of(buf, n);
            }
    }
    /* two-way table */
    if (rows) {
        o->row_factor = find_factor(s, rows);
        if (o->row_factor < 0) {
            snprintf(err, en, "--rows: no factor '%s' in the sweep", rows);
            goto fail;
        }
    } else {
        o->row_factor = find_factor(s, "data.machine_types");
    }
    if (cols) {
        o->col_factor = find_factor(s, cols);
        if (o->col_factor < 0) {
            snprintf(err, en, "--cols: no factor '%s' in the sweep", cols);
            goto fail;
        }
    } else {
        o->col_factor = find_factor(s, "data.conditions");
    }
    for (int f = 0; f < s->n_factors && (o->row_factor < 0 || o->col_factor < 0); f++) {
        if (f == s->seed_factor || f == o->row_factor || f == o->col_factor) continue;
        if (o->row_factor < 0) o->row_factor = f;
        else o->col_factor = f;
    }
    if (o->row_factor >= 0 && o->col_factor >= 0 && o->row_factor != o->col_factor) {
        int R = s->n_levels[o->row_factor], C = s->n_levels[o->col_factor];
        o->two_way = GT_CALLOC_ARRAY((int64_t)R * C, sizeof(gt_doe_stat), "doe report: two-way table");
        for (int a = 0; a < R; a++)
            for (int b = 0; b < C; b++) {
                int n = 0;
                for (int64_t i = 0; i < s->n_cells; i++) {
                    const gt_doe_result *r = &s->cells[i];
                    if (r->status == GT_DOE_DONE && r->level[o->row_factor] == a && r->level[o->col_factor] == b)
                        buf[n++] = r->value[o->primary];
                }
                o->two_way[a * C + b] = gt_doe_stat_of(buf, n);
            }
    } else {
        o->row_factor = o->col_factor = -1;
    }
    /* best and worst configuration by the primary metric's mean */
    for (int c = 0; c < o->n_configs; c++) {
        double v = o->configs[c].stat[o->primary].mean;
        if (!isfinite(v)) continue;
        int hb = k_metrics[o->primary].higher_better;
        if (o->best < 0 || (hb ? v > o->configs[o->best].stat[o->primary].mean : v < o->configs[o->best].stat[o->primary].mean))
            o->best = c;
        if (o->worst < 0 || (hb ? v < o->configs[o->worst].stat[o->primary].mean : v > o->configs[o->worst].stat[o->primary].mean))
            o->worst = c;
    }
    free(buf);
    free(cfg_of);
    return 0;
fail:
    free(buf);
    free(cfg_of);
    gt_doe_summary_free(o, s);
    return -1;
}

void gt_doe_summary_free(gt_doe_summary *o, const gt_doe_sweep *s) {
    for (int f = 0; f < GT_DOE_MAX_FACTORS; f++) free(o->effect[f]);
    free(o->configs);
    free(o->two_way);
    (void)s;
    memset(o, 0, sizeof *o);
}

/* --------------------------------------------------------------- write -- */

static void fmt_num(char *b, size_t n, double v) {
    if (!isfinite(v)) snprintf(b, n, "-");
    else if (v != 0 && (fabs(v) >= 1e5 || fabs(v) < 1e-3)) snprintf(b, n, "%.3g", v);
    else snprintf(b, n, "%.4g", v);
}
static void fmt_stat(char *b, size_t n, gt_doe_stat st) {
    char m[32], s[32];
    fmt_num(m, sizeof m, st.mean);
    if (!isfinite(st.mean)) snprintf(b, n, "-");
    else if (!isfinite(st.sd)) snprintf(b, n, "%s", m);
    else {
        fmt_num(s, sizeof s, st.sd);
        snprintf(b, n, "%s ± %s", m, s);
    }
}
static void csv_num(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, ",%.10g", v);
    else fputs(",", f);
}
/* CSV field (gt_esc_csv: quoted, no formula), after a comma unless first */
static void csv_str(FILE *f, const char *s, int first) {
    if (!first) fputc(',', f);
    gt_esc_csv(f, s);
}

/* metrics with at least one value among finished cells */
static int shown_metrics(const gt_doe_summary *o, int *idx, int quality_only) {
    int n = 0;
    for (int m = 0; m < N_METRICS; m++)
        if (o->grand[m].n > 0 && (!quality_only || k_metrics[m].quality)) idx[n++] = m;
    return n;
}

static void config_label(const gt_doe_sweep *s, const gt_doe_config *c, char *b, size_t n) {
    b[0] = 0;
    for (int f = 0; f < s->n_factors; f++) {
        if (f == s->seed_factor) continue;
        snprintf(b + strlen(b), n - strlen(b), "%s%s=%s", b[0] ? " " : "", s->factor[f], s->levels[f][c->level[f]]);
    }
    if (!b[0]) snprintf(b, n, "(all)");
}

/* Markdown or HTML table helpers: one writer, two syntaxes */
typedef struct {
    FILE *f;
    int html;
} doc;
static void row_begin(doc *d) { fputs(d->html ? "<tr>" : "|", d->f); }
/* text of the document: factor names, levels, cell ids and paths are data */
static void text(doc *d, const char *s) {
    if (d->html) gt_esc_html(d->f, s);
    else gt_esc_md(d->f, s);
}
static void cell(doc *d, const char *s, int head) {
    if (d->html) {
        fputs(head ? "<th>" : "<td>", d->f);
        gt_esc_html(d->f, s);
        fputs(head ? "</th>" : "</td>", d->f);
    } else {
        fputc(' ', d->f);
        gt_esc_md(d->f, s); /* a | in a level stays in its cell */
        fputs(" |", d->f);
    }
}
static void row_end(doc *d, int ncols, int head) {
    fputs(d->html ? "</tr>\n" : "\n", d->f);
    if (head && !d->html) {
        fputc('|', d->f);
        for (int i = 0; i < ncols; i++) fputs("---|", d->f);
        fputc('\n', d->f);
    }
}
static void table_begin(doc *d) {
    if (d->html) fputs("<table>\n", d->f);
}
static void table_end(doc *d) { fputs(d->html ? "</table>\n" : "\n", d->f); }
static void heading(doc *d, int level, const char *fmt, ...) {
    char b[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    if (d->html) fprintf(d->f, "<h%d>", level);
    else fprintf(d->f, "%.*s ", level, "######");
    text(d, b);
    if (d->html) fprintf(d->f, "</h%d>\n", level);
    else fputs("\n\n", d->f);
}
static void para(doc *d, const char *fmt, ...) {
    char b[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    fputs(d->html ? "<p>" : "", d->f);
    text(d, b);
    fputs(d->html ? "</p>\n" : "\n\n", d->f);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int gt_doe_slow_cells(const gt_doe_sweep *s, gt_doe_slow *out, int max) {
    const int sps = gt_doe_metric_find("train.samples_per_s");
    int n = 0;
    double *v = GT_MALLOC(sizeof(double) * (size_t)(s->n_cells > 0 ? s->n_cells : 1));
    for (int64_t i = 0; i < s->n_cells; i++) {
        const gt_doe_result *c = &s->cells[i];
        if (c->status != GT_DOE_DONE || !isfinite(c->value[sps])) continue;
        int m = 0;
        for (int64_t j = 0; j < s->n_cells; j++) {
            const gt_doe_result *o = &s->cells[j];
            if (j == i || o->status != GT_DOE_DONE || !isfinite(o->value[sps])) continue;
            int same = 1;
            for (int f = 0; f < s->n_factors && same; f++) same = f == s->seed_factor || o->level[f] == c->level[f];
            if (same) v[m++] = o->value[sps];
        }
        if (m == 0) continue;
        qsort(v, (size_t)m, sizeof *v, cmp_double);
        double med = m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
        if (!(c->value[sps] < (1.0 - GT_DOE_SLOW_THRESHOLD) * med)) continue;
        if (n < max) out[n] = (gt_doe_slow){.cell = i, .samples_per_s = c->value[sps], .siblings_median = med,
                                            .n_siblings = m};
        n++;
    }
    free(v);
    return n;
}

/* The cells slower than their siblings (gt_doe_slow_cells). */
static void write_slow(doc *d, const gt_doe_sweep *s) {
    enum { MAX_SHOWN = 50 };
    gt_doe_slow slow[MAX_SHOWN];
    int n = gt_doe_slow_cells(s, slow, MAX_SHOWN);
    heading(d, 2, "Cells slower than their siblings");
    if (n == 0) {
        para(d, "No finished cell trained more than %.0f%% slower (samples/s) than the median of its siblings "
                "(the cells of its configuration: the other seeds).", 100 * GT_DOE_SLOW_THRESHOLD);
        return;
    }
    para(d, "%d cell(s) trained more than %.0f%% slower (samples/s) than the median of their siblings (the cells of "
            "the same configuration: the other seeds): a slow or busy node, a GPU that throttles; the host is in "
            "cells/<id>/cell.json, and 'gridtrain doctor SWEEP_DIR/cells/<id>' reads the cell's run.",
         n, 100 * GT_DOE_SLOW_THRESHOLD);
    table_begin(d);
    row_begin(d);
    cell(d, "cell", 1), cell(d, "samples/s", 1), cell(d, "siblings' median", 1), cell(d, "siblings", 1),
        cell(d, "ratio", 1);
    row_end(d, 5, 1);
    char v[64];
    for (int i = 0; i < n && i < MAX_SHOWN; i++) {
        row_begin(d);
        cell(d, s->cells[slow[i].cell].id, 0);
        fmt_num(v, sizeof v, slow[i].samples_per_s);
        cell(d, v, 0);
        fmt_num(v, sizeof v, slow[i].siblings_median);
        cell(d, v, 0);
        snprintf(v, sizeof v, "%d", slow[i].n_siblings);
        cell(d, v, 0);
        snprintf(v, sizeof v, "%.2f", slow[i].samples_per_s / slow[i].siblings_median);
        cell(d, v, 0);
        row_end(d, 5, 0);
        if (!d->html)
            GT_WARN("doe report: cell %s ran at %.3g samples/s, %.0f%% of its %d siblings' median %.3g",
                    s->cells[slow[i].cell].id, slow[i].samples_per_s,
                    100 * slow[i].samples_per_s / slow[i].siblings_median, slow[i].n_siblings, slow[i].siblings_median);
    }
    table_end(d);
}

/* The CARE to Compare protocol (a factor on data.care_event): per protocol
 * run, the score overall and per farm and every event dataset's values. */
static void care_row(doc *d, const char *scope, const char *id, const char *label, const gt_doe_care_sum *c,
                     const gt_care_event_eval *e, const char *extra) {
    char v[64];
    row_begin(d);
    cell(d, scope, 0), cell(d, id, 0), cell(d, label, 0);
    if (e) {
        cell(d, e->detected ? "yes" : "no", 0);
        fmt_num(v, sizeof v, e->max_criticality), cell(d, v, 0);
        fmt_num(v, sizeof v, e->coverage), cell(d, v, 0);
        fmt_num(v, sizeof v, e->accuracy), cell(d, v, 0);
        fmt_num(v, sizeof v, e->earliness), cell(d, v, 0);
        cell(d, "", 0), cell(d, "", 0);
    } else {
        snprintf(v, sizeof v, "%d/%d", c->p.n_detected, c->p.n_events), cell(d, v, 0);
        cell(d, "", 0);
        fmt_num(v, sizeof v, c->p.coverage), cell(d, v, 0);
        fmt_num(v, sizeof v, c->p.accuracy), cell(d, v, 0);
        fmt_num(v, sizeof v, c->p.earliness), cell(d, v, 0);
        fmt_num(v, sizeof v, c->p.reliability), cell(d, v, 0);
        if (isfinite(c->p.score)) snprintf(v, sizeof v, "%.3f", c->p.score);
        else snprintf(v, sizeof v, "- (%s)", c->p.reason ? c->p.reason : "undefined");
        cell(d, v, 0);
    }
    fmt_num(v, sizeof v, c->recall), cell(d, v, 0);
    fmt_num(v, sizeof v, c->false_alarms_per_turbine_day), cell(d, v, 0);
    cell(d, extra, 0);
    row_end(d, 13, 0);
}

static void write_care(doc *d, const gt_doe_sweep *s, const gt_doe_care *c, const char *err) {
    heading(d, 2, "CARE to Compare protocol (one training per event dataset)");
    if (err) {
        para(d, "Not combined: %s", err);
        return;
    }
    para(d, "Factor %s: one cell per event dataset, trained on its training part and scored on its prediction part "
            "(data.care_event). CARE score = the authors' final formula over the events (gt_care_protocol_final): 0 "
            "when no event is detected, the mean normal-event accuracy when it is <= 0.5, else (coverage + 2 accuracy "
            "+ earliness + reliability) / 5. Event recall and false alarms per turbine-day: gridtrain's, over the "
            "prediction parts (docs/evaluation.md). Also in care_protocol.csv.",
         s->factor[c->factor]);
    for (int r = 0; r < c->n_runs; r++) {
        const gt_doe_care_run *R = &c->runs[r];
        char b[160], v[64];
        heading(d, 3, "%s: CARE score %s (%d of %d event datasets finished)", R->label,
                isfinite(R->overall.p.score) ? (snprintf(v, sizeof v, "%.3f", R->overall.p.score), v) : "-", R->n_done,
                R->n_cells);
        table_begin(d);
        row_begin(d);
        static const char *const head[13] = {"scope", "id", "label", "detected", "max criticality", "coverage",
                                             "accuracy", "earliness", "reliability", "CARE score", "event recall",
                                             "false alarms / turbine-day", "cell"};
        for (int k = 0; k < 13; k++) cell(d, head[k], 1);
        row_end(d, 13, 1);
        care_row(d, "overall", "", "", &R->overall, NULL, "");
        for (int k = 0; k < R->n_farms; k++) {
            snprintf(b, sizeof b, "%d", R->farm[k]);
            care_row(d, "farm", b, "", &R->by_farm[k], NULL, "");
        }
        for (int i = 0; i < R->n_events; i++) {
            const gt_doe_care_event *e = &R->events[i];
            gt_doe_care_sum one = {0};
            one.recall = e->n_events > 0 ? e->n_detected / e->n_events : NAN;
            one.false_alarms_per_turbine_day = e->turbine_days > 0 ? e->n_false_alarms / e->turbine_days : NAN;
            snprintf(b, sizeof b, "%lld", (long long)e->event_id);
            snprintf(v, sizeof v, "turbine %lld", (long long)e->turbine_id);
            care_row(d, e->r.anomaly ? "anomaly event" : "normal event", b, v, &one, &e->r, s->cells[e->cell].id);
        }
        table_end(d);
    }
}

static void write_care_csv(FILE *f, const gt_doe_sweep *s, const gt_doe_care *c) {
    fputs("run,scope,id,label,turbine_id,farm,event_datasets,detected,max_criticality,coverage,accuracy,earliness,"
          "reliability,care_score,recall,false_alarms_per_turbine_day,rows,rows_in_training,cell\n", f);
    for (int r = 0; r < c->n_runs; r++) {
        const gt_doe_care_run *R = &c->runs[r];
        for (int k = -1; k < R->n_farms; k++) { /* overall, then per farm: id = the farm */
            const gt_doe_care_sum *x = k < 0 ? &R->overall : &R->by_farm[k];
            csv_str(f, R->label, 1);
            if (k < 0) fputs(",overall,,,,", f);
            else fprintf(f, ",farm,%d,,,%d", R->farm[k], R->farm[k]);
            fprintf(f, ",%d,%d,", x->p.n_events, x->p.n_detected);
            csv_num(f, x->p.coverage), csv_num(f, x->p.accuracy), csv_num(f, x->p.earliness);
            csv_num(f, x->p.reliability), csv_num(f, x->p.score);
            csv_num(f, x->recall), csv_num(f, x->false_alarms_per_turbine_day);
            fputs(",,,\n", f);
        }
        for (int i = 0; i < R->n_events; i++) {
            const gt_doe_care_event *e = &R->events[i];
            csv_str(f, R->label, 1);
            fprintf(f, ",event,%lld,%s,%lld,%d,1,%d", (long long)e->event_id, e->r.anomaly ? "anomaly" : "normal",
                    (long long)e->turbine_id, e->farm, e->r.detected);
            csv_num(f, e->r.max_criticality), csv_num(f, e->r.coverage), csv_num(f, e->r.accuracy);
            csv_num(f, e->r.earliness);
            fputs(",,", f);
            csv_num(f, e->n_events > 0 ? e->n_detected / e->n_events : NAN);
            csv_num(f, e->turbine_days > 0 ? e->n_false_alarms / e->turbine_days : NAN);
            fprintf(f, ",%lld,%lld,", (long long)e->rows, (long long)e->rows_in_training);
            gt_esc_csv(f, s->cells[e->cell].id);
            fputc('\n', f);
        }
    }
}

static void write_doc(doc *d, const gt_doe_sweep *s, const gt_doe_summary *o, int have_plots, const gt_doe_care *care,
                      const char *care_err) {
    int idx[N_METRICS], qidx[N_METRICS];
    int nm = shown_metrics(o, idx, 0), nq = shown_metrics(o, qidx, 1);
    const gt_doe_metric_def *P = &k_metrics[o->primary];
    char b[512], v[128];
    if (d->html) {
        fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>DOE sweep ", d->f);
        gt_esc_html(d->f, s->name);
        fprintf(d->f, "</title>\n"
                      "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
                      "td,th{border:1px solid #bbb;padding:3px 8px;text-align:right}th{background:#eee}"
                      "img{max-width:48%%;margin:0.5em}</style></head><body>\n");
    }
    heading(d, 1, "DOE sweep %s", s->name);
    para(d, "Sweep directory %s: %lld cells (%lld done, %lld failed, %lld preempted, %lld running, %lld missing); "
            "%lld requeued/resumed after a preemption. Primary metric: %s (%s is better). "
            "Total %.4g CPU-hours, %.4g GPU-hours, %.4g s of training.",
         s->dir, (long long)s->n_cells, (long long)o->n_status[GT_DOE_DONE], (long long)o->n_status[GT_DOE_FAILED],
         (long long)o->n_status[GT_DOE_PREEMPTED], (long long)o->n_status[GT_DOE_RUNNING],
         (long long)o->n_status[GT_DOE_MISSING], (long long)o->n_requeued, P->name, P->higher_better ? "higher" : "lower",
         o->cpu_hours, o->gpu_hours, o->train_time_s);
    if (o->best >= 0) {
        config_label(s, &o->configs[o->best], b, sizeof b);
        fmt_stat(v, sizeof v, o->configs[o->best].stat[o->primary]);
        para(d, "Best configuration: %s (%s %s over %d seed(s)).", b, P->label, v, o->configs[o->best].stat[o->primary].n);
        config_label(s, &o->configs[o->worst], b, sizeof b);
        fmt_stat(v, sizeof v, o->configs[o->worst].stat[o->primary]);
        para(d, "Worst configuration: %s (%s %s over %d seed(s)).", b, P->label, v, o->configs[o->worst].stat[o->primary].n);
    }

    heading(d, 2, "Configurations (mean ± sd over seeds)");
    table_begin(d);
    row_begin(d);
    int nc = 0;
    for (int f = 0; f < s->n_factors; f++)
        if (f != s->seed_factor) cell(d, s->factor[f], 1), nc++;
    cell(d, "seeds done", 1), nc++;
    for (int k = 0; k < nm; k++) cell(d, k_metrics[idx[k]].label, 1), nc++;
    row_end(d, nc, 1);
    for (int c = 0; c < o->n_configs; c++) {
        row_begin(d);
        for (int f = 0; f < s->n_factors; f++)
            if (f != s->seed_factor) cell(d, s->levels[f][o->configs[c].level[f]], 0);
        snprintf(v, sizeof v, "%d/%d", o->configs[c].n_done, o->configs[c].n_cells);
        cell(d, v, 0);
        for (int k = 0; k < nm; k++) {
            fmt_stat(v, sizeof v, o->configs[c].stat[idx[k]]);
            cell(d, v, 0);
        }
        row_end(d, nc, 0);
    }
    table_end(d);

    write_slow(d, s);

    heading(d, 2, "Main effects");
    para(d, "Per factor level: mean ± sd over the finished cells with that level (all other factors and seeds "
            "pooled); effect = level mean - grand mean. Error bars in the plot are standard errors (sd/sqrt(n)).");
    table_begin(d);
    row_begin(d);
    cell(d, "factor", 1), cell(d, "level", 1), cell(d, "n", 1);
    for (int k = 0; k < nq; k++) cell(d, k_metrics[qidx[k]].label, 1);
    snprintf(b, sizeof b, "effect on %s", P->label);
    cell(d, b, 1);
    row_end(d, 4 + nq, 1);
    for (int f = 0; f < s->n_factors; f++) {
        if (!o->effect[f]) continue;
        for (int l = 0; l < s->n_levels[f]; l++) {
            const gt_doe_stat *e = o->effect[f] + l * N_METRICS;
            row_begin(d);
            cell(d, s->factor[f], 0), cell(d, s->levels[f][l], 0);
            snprintf(v, sizeof v, "%d", e[o->primary].n);
            cell(d, v, 0);
            for (int k = 0; k < nq; k++) {
                fmt_stat(v, sizeof v, e[qidx[k]]);
                cell(d, v, 0);
            }
            double eff = e[o->primary].mean - o->grand[o->primary].mean;
            fmt_num(v, sizeof v, eff);
            if (isfinite(eff)) {
                char t[160];
                snprintf(t, sizeof t, "%s%s", eff >= 0 ? "+" : "", v);
                cell(d, t, 0);
            } else {
                cell(d, "-", 0);
            }
            row_end(d, 4 + nq, 0);
        }
    }
    table_end(d);

    if (o->row_factor >= 0) {
        int R = s->n_levels[o->row_factor], C = s->n_levels[o->col_factor];
        heading(d, 2, "%s x %s: %s (mean ± sd)", s->factor[o->row_factor], s->factor[o->col_factor], P->label);
        table_begin(d);
        row_begin(d);
        snprintf(b, sizeof b, "%s \\ %s", s->factor[o->row_factor], s->factor[o->col_factor]);
        cell(d, b, 1);
        for (int c = 0; c < C; c++) cell(d, s->levels[o->col_factor][c], 1);
        row_end(d, C + 1, 1);
        for (int r = 0; r < R; r++) {
            row_begin(d);
            cell(d, s->levels[o->row_factor][r], 0);
            for (int c = 0; c < C; c++) {
                fmt_stat(v, sizeof v, o->two_way[r * C + c]);
                cell(d, v, 0);
            }
            row_end(d, C + 1, 0);
        }
        table_end(d);
    }
    if (o->row_factor < 0) para(d, "No two-way table: the sweep has fewer than two factors besides the seed.");
    if (have_plots) {
        int hm = o->row_factor >= 0;
        if (d->html)
            fprintf(d->f, "<p>%s<img src=\"effects.svg\" alt=\"main effects\"></p>\n",
                    hm ? "<img src=\"heatmap.svg\" alt=\"two-way heat map\">" : "");
        else
            fprintf(d->f, "%s![main effects](effects.svg)\n\n", hm ? "![two-way heat map](heatmap.svg)\n\n" : "");
    }

    if (care) write_care(d, s, care, care_err);
    heading(d, 2, "Cells not finished, failed or requeued");
    table_begin(d);
    row_begin(d);
    cell(d, "index", 1), cell(d, "id", 1), cell(d, "levels", 1), cell(d, "status", 1), cell(d, "attempts", 1),
        cell(d, "preemptions", 1), cell(d, "failures", 1), cell(d, "last exit", 1);
    row_end(d, 8, 1);
    int listed = 0;
    for (int64_t i = 0; i < s->n_cells; i++) {
        const gt_doe_result *r = &s->cells[i];
        if (r->status == GT_DOE_DONE && r->preemptions == 0 && r->failures == 0) continue;
        listed++;
        row_begin(d);
        snprintf(v, sizeof v, "%lld", (long long)r->index);
        cell(d, v, 0), cell(d, r->id, 0);
        b[0] = 0;
        for (int f = 0; f < s->n_factors; f++)
            snprintf(b + strlen(b), sizeof b - strlen(b), "%s%s=%s", f ? " " : "", s->factor[f], s->levels[f][r->level[f]]);
        cell(d, b, 0);
        cell(d, gt_doe_status_name(r->status), 0);
        snprintf(v, sizeof v, "%d", r->attempts), cell(d, v, 0);
        snprintf(v, sizeof v, "%d", r->preemptions), cell(d, v, 0);
        snprintf(v, sizeof v, "%d", r->failures), cell(d, v, 0);
        snprintf(v, sizeof v, "%d", r->exit_code), cell(d, r->status == GT_DOE_MISSING ? "-" : v, 0);
        row_end(d, 8, 0);
    }
    table_end(d);
    if (!listed) para(d, "None: every cell finished at its first attempt.");
    para(d, "Files: cells.csv (one row per cell), configs.csv (mean and sd per configuration), effects.csv (main "
            "effects), two_way.csv%s.", have_plots ? ", effects.svg, heatmap.svg when there is a two-way table (gnuplot scripts *.gp)" : "");
    if (d->html) fputs("</body></html>\n", d->f);
}

/* gnuplot in the report directory, no shell (the scripts name only their own files) */
static int run_gnuplot(const char *dir, const char *script) {
    char svg[PATH_MAX + 64]; /* gnuplot opens it by name: whatever is there (a link) is removed first */
    snprintf(svg, sizeof svg, "%s/%.*s.svg", dir, (int)strcspn(script, "."), script);
    unlink(svg);
    const char *argv[] = {"gnuplot", script, NULL};
    return gt_run_argv(dir, argv, NULL) == 0 ? 0 : -1;
}

static FILE *open_out(const char *dir, const char *name) {
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = gt_fopen_atomic(p, 0); /* renamed into place at fclose: a link there is replaced, never followed */
    if (!f) GT_WARN("doe report: cannot write %s: %s", p, gt_out_strerror(errno));
    return f;
}

/* gnuplot single-quoted string literal (gt_esc_gnuplot) */
static void gp_str(FILE *f, const char *s) {
    size_t n = 3 * strlen(s) + 1; /* a byte becomes at most 3 */
    char *q = GT_MALLOC(n);
    gt_esc_gnuplot(q, n, s);
    fprintf(f, "'%s'", q);
    free(q);
}

static int write_plots(const gt_doe_sweep *s, const gt_doe_summary *o, const char *dir) {
    const gt_doe_metric_def *P = &k_metrics[o->primary];
    int ok = 1;
    if (o->row_factor >= 0) {
        int R = s->n_levels[o->row_factor], C = s->n_levels[o->col_factor];
        FILE *f = open_out(dir, "heatmap.dat");
        if (!f) return -1;
        for (int r = 0; r < R; r++)
            for (int c = 0; c < C; c++) {
                double m = o->two_way[r * C + c].mean;
                if (isfinite(m)) fprintf(f, "%d %d %.10g\n", c, r, m);
                else fprintf(f, "%d %d NaN\n", c, r);
            }
        fclose(f);
        f = open_out(dir, "heatmap.gp");
        if (!f) return -1;
        fputs("# generated by 'gridtrain doe report': two-way table of the primary metric\n"
              "set terminal svg size 640,480 dynamic font 'sans,11'\nset termoption noenhanced\n"
              "set output 'heatmap.svg'\n", f);
        fputs("set title ", f);
        char t[256];
        snprintf(t, sizeof t, "%s: %s x %s", P->label, s->factor[o->row_factor], s->factor[o->col_factor]);
        gp_str(f, t);
        fputs("\nset xlabel ", f), gp_str(f, s->factor[o->col_factor]);
        fputs("\nset ylabel ", f), gp_str(f, s->factor[o->row_factor]);
        fputs("\nset xtics (", f);
        for (int c = 0; c < C; c++) fprintf(f, "%s", c ? ", " : ""), gp_str(f, s->levels[o->col_factor][c]), fprintf(f, " %d", c);
        fputs(")\nset ytics (", f);
        for (int r = 0; r < R; r++) fprintf(f, "%s", r ? ", " : ""), gp_str(f, s->levels[o->row_factor][r]), fprintf(f, " %d", r);
        fprintf(f, ")\nset xrange [-0.5:%g]\nset yrange [-0.5:%g]\nset palette rgbformulae 33,13,10\n"
                   "set cblabel ",
                C - 0.5, R - 0.5);
        gp_str(f, P->label);
        fputs("\nplot 'heatmap.dat' using 1:2:3 with image notitle, \\\n"
              "     '' using 1:2:(sprintf('%.3g', $3)) with labels notitle\n", f);
        fclose(f);
        ok &= run_gnuplot(dir, "heatmap.gp") == 0;
    }
    /* main effects: one block per factor, points with error bars (SE) around the grand mean */
    FILE *f = open_out(dir, "effects.dat");
    if (!f) return -1;
    int x = 0, nf = 0;
    char tics[16384] = "";
    for (int fi = 0; fi < s->n_factors; fi++) {
        if (!o->effect[fi]) continue;
        char tok[256];
        gt_esc_token(tok, sizeof tok, s->factor[fi]); /* one comment line */
        fprintf(f, "# factor %s\n", tok);
        for (int l = 0; l < s->n_levels[fi]; l++, x++) {
            gt_doe_stat e = o->effect[fi][l * N_METRICS + o->primary];
            double se = isfinite(e.sd) && e.n > 0 ? e.sd / sqrt(e.n) : 0;
            if (isfinite(e.mean)) fprintf(f, "%d %.10g %.10g\n", x, e.mean, se);
            char lab[512], q[1536];
            snprintf(lab, sizeof lab, "%s=%s", s->factor[fi], s->levels[fi][l]);
            gt_esc_gnuplot(q, sizeof q, lab);
            if (strlen(tics) + strlen(q) + 32 < sizeof tics) /* whole labels only */
                snprintf(tics + strlen(tics), sizeof tics - strlen(tics), "%s'%s' %d", x ? ", " : "", q, x);
        }
        fputs("\n\n", f);
        nf++;
        x++; /* gap between factors */
    }
    fclose(f);
    f = open_out(dir, "effects.gp");
    if (!f) return -1;
    fputs("# generated by 'gridtrain doe report': main effects of the primary metric (error bars: standard error)\n"
          "set terminal svg size 800,480 dynamic font 'sans,11'\nset termoption noenhanced\n"
          "set output 'effects.svg'\nset title ", f);
    char t[256];
    snprintf(t, sizeof t, "main effects on %s (mean +- SE)", P->label);
    gp_str(f, t);
    fprintf(f, "\nset ylabel ");
    gp_str(f, P->label);
    fprintf(f, "\nset xtics rotate by -30 (%s)\nset xrange [-0.7:%g]\n", tics, x > 0 ? x - 0.3 : 1.0);
    if (isfinite(o->grand[o->primary].mean))
        fprintf(f, "set arrow from graph 0, first %.10g to graph 1, first %.10g nohead dt 2\n", o->grand[o->primary].mean,
                o->grand[o->primary].mean);
    fputs("plot 'effects.dat' using 1:2:3 with yerrorbars pt 7 notitle, '' using 1:2 with linespoints notitle\n", f);
    fclose(f);
    (void)nf;
    ok &= run_gnuplot(dir, "effects.gp") == 0;
    return ok ? 0 : -1;
}

static int have_gnuplot(void) {
    const char *path = getenv("PATH");
    if (!path) return 0;
    char *dup = GT_STRDUP(path), *save = NULL;
    int found = 0;
    for (char *d = strtok_r(dup, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/gnuplot", d);
        found = access(p, X_OK) == 0;
    }
    free(dup);
    return found;
}

int gt_doe_report_write(const gt_doe_sweep *s, const gt_doe_summary *o, const char *dir, int plots) {
    /* dir itself a symbolic link (or not a directory): refused, never followed */
    if (gt_out_dir_check(dir) != 0 || (mkdir(dir, 0755) && errno != EEXIST) || gt_out_dir_check(dir) != 0) {
        gt_log_error("doe report: cannot create '%s': %s", dir, gt_out_strerror(errno)); /* exit 4 */
        return -1;
    }
    int idx[N_METRICS];
    int nm = shown_metrics(o, idx, 0);
    /* cells.csv */
    FILE *f = open_out(dir, "cells.csv");
    if (!f) return -1;
    fputs("index,id", f);
    for (int k = 0; k < s->n_factors; k++) csv_str(f, s->factor[k], 0);
    fputs(",status,attempts,preemptions,failures,exit_code", f);
    for (int k = 0; k < N_METRICS; k++) csv_str(f, k_metrics[k].name, 0);
    fputc('\n', f);
    for (int64_t i = 0; i < s->n_cells; i++) {
        const gt_doe_result *r = &s->cells[i];
        fprintf(f, "%lld,", (long long)r->index);
        gt_esc_csv(f, r->id);
        for (int k = 0; k < s->n_factors; k++) csv_str(f, s->levels[k][r->level[k]], 0);
        fprintf(f, ",%s,%d,%d,%d,%d", gt_doe_status_name(r->status), r->attempts, r->preemptions, r->failures,
                r->exit_code);
        for (int k = 0; k < N_METRICS; k++) csv_num(f, r->value[k]);
        fputc('\n', f);
    }
    fclose(f);
    /* configs.csv */
    f = open_out(dir, "configs.csv");
    if (!f) return -1;
    int first = 1;
    for (int k = 0; k < s->n_factors; k++)
        if (k != s->seed_factor) csv_str(f, s->factor[k], first), first = 0;
    fputs(first ? "n_cells,n_done" : ",n_cells,n_done", f);
    for (int k = 0; k < nm; k++) fprintf(f, ",%s.mean,%s.sd", k_metrics[idx[k]].name, k_metrics[idx[k]].name);
    fputc('\n', f);
    for (int c = 0; c < o->n_configs; c++) {
        first = 1;
        for (int k = 0; k < s->n_factors; k++)
            if (k != s->seed_factor) csv_str(f, s->levels[k][o->configs[c].level[k]], first), first = 0;
        fprintf(f, first ? "%d,%d" : ",%d,%d", o->configs[c].n_cells, o->configs[c].n_done);
        for (int k = 0; k < nm; k++) csv_num(f, o->configs[c].stat[idx[k]].mean), csv_num(f, o->configs[c].stat[idx[k]].sd);
        fputc('\n', f);
    }
    fclose(f);
    /* effects.csv */
    f = open_out(dir, "effects.csv");
    if (!f) return -1;
    fputs("factor,level,metric,n,mean,sd,se,effect\n", f);
    for (int fi = 0; fi < s->n_factors; fi++) {
        if (!o->effect[fi]) continue;
        for (int l = 0; l < s->n_levels[fi]; l++)
            for (int k = 0; k < nm; k++) {
                gt_doe_stat e = o->effect[fi][l * N_METRICS + idx[k]];
                csv_str(f, s->factor[fi], 1);
                csv_str(f, s->levels[fi][l], 0);
                fprintf(f, ",%s,%d", k_metrics[idx[k]].name, e.n);
                csv_num(f, e.mean), csv_num(f, e.sd), csv_num(f, isfinite(e.sd) ? e.sd / sqrt(e.n) : NAN);
                csv_num(f, e.mean - o->grand[idx[k]].mean);
                fputc('\n', f);
            }
    }
    fclose(f);
    /* two_way.csv */
    f = open_out(dir, "two_way.csv");
    if (!f) return -1;
    if (o->row_factor >= 0) {
        int R = s->n_levels[o->row_factor], C = s->n_levels[o->col_factor];
        csv_str(f, s->factor[o->row_factor], 1);
        csv_str(f, s->factor[o->col_factor], 0);
        fprintf(f, ",metric,n,mean,sd\n");
        for (int r = 0; r < R; r++)
            for (int c = 0; c < C; c++) {
                csv_str(f, s->levels[o->row_factor][r], 1);
                csv_str(f, s->levels[o->col_factor][c], 0);
                fprintf(f, ",%s,%d", k_metrics[o->primary].name, o->two_way[r * C + c].n);
                csv_num(f, o->two_way[r * C + c].mean), csv_num(f, o->two_way[r * C + c].sd);
                fputc('\n', f);
            }
    }
    fclose(f);
    /* plots */
    int have_plots = 0;
    if (plots) {
        if (!have_gnuplot()) GT_WARN("doe report: gnuplot not found on PATH (Debian: gnuplot-nox): no plots");
        else if (o->grand[o->primary].n == 0) GT_WARN("doe report: no finished cell has %s: no plots", k_metrics[o->primary].name);
        else if (write_plots(s, o, dir)) GT_WARN("doe report: gnuplot failed (scripts kept in %s)", dir);
        else have_plots = 1;
    }
    /* the CARE to Compare protocol, with a factor on data.care_event */
    gt_doe_care care;
    char care_err[1024] = "";
    if (gt_doe_care_collect(s, &care, care_err, sizeof care_err)) {
        GT_WARN("doe report: CARE protocol not combined: %s", care_err);
        care.factor = 0; /* the section says why */
    } else {
        care_err[0] = 0;
        if (care.factor >= 0) {
            f = open_out(dir, "care_protocol.csv");
            if (!f) return -1;
            write_care_csv(f, s, &care);
            fclose(f);
        }
    }
    const gt_doe_care *cp = care.factor >= 0 ? &care : NULL;
    const char *ce = care_err[0] ? care_err : NULL;
    doc d = {open_out(dir, "report.md"), 0};
    if (!d.f) return -1;
    write_doc(&d, s, o, have_plots, cp, ce);
    fclose(d.f);
    d = (doc){open_out(dir, "report.html"), 1};
    if (!d.f) return -1;
    write_doc(&d, s, o, have_plots, cp, ce);
    fclose(d.f);
    gt_doe_care_free(&care);
    return 0;
}
