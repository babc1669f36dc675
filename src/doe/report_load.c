/* doe/report_load.c: a sweep's results: SWEEP_DIR/sweep.json and every
 * cells/<id>/{cell.json,eval.json} (report.h, gt_doe_sweep_load). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "doe/json.h"
#include "doe/report.h"
#include "doe/report_int.h"
#include "eval/eval_task.h"

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

/* The settings that shaped a cell's result, from its eval.json eval_config,
 * into b: the task's sweep_settings (eval/eval_task.h; pairs of an
 * eval_config key and its setting) as "eval.level = quantile, eval.flat_line
 * = true, ..." (keys an older eval.json lacks: "not recorded"). */
static void eval_settings(const cJSON *ev, const char *const *keys, char *b, size_t bn) {
    const cJSON *c = cJSON_GetObjectItem(ev, "eval_config");
    size_t l = 0;
    b[0] = 0;
    for (size_t k = 0; keys[2 * k] && keys[2 * k + 1] && l < bn; k++) {
        const cJSON *x = cJSON_GetObjectItem(c, keys[2 * k]);
        char v[64];
        if (cJSON_IsString(x)) snprintf(v, sizeof v, "%.40s", x->valuestring);
        else if (cJSON_IsBool(x)) snprintf(v, sizeof v, "%s", cJSON_IsTrue(x) ? "true" : "false");
        else if (cJSON_IsNumber(x)) snprintf(v, sizeof v, "%g", x->valuedouble);
        else snprintf(v, sizeof v, "not recorded");
        l += (size_t)snprintf(b + l, bn - l, "%s%s = %s", k ? ", " : "", keys[2 * k + 1], v);
    }
}

void gt_doe_sweep_free(gt_doe_sweep *s) {
    for (int f = 0; f < s->n_factors; f++) {
        for (int l = 0; l < s->n_levels[f]; l++) free(s->levels[f][l]);
        free(s->levels[f]);
        free(s->factor[f]);
        free(s->key[f]);
    }
    gt_doe_ladder_free(s);
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

/* sweep.json's factors and levels into s (the seed factor noted). */
static void load_factors(gt_doe_sweep *s, const cJSON *j) {
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
}

/* A cell's status (cell.json) and metrics (eval.json, a damaged one making
 * the cell failed) from its directory. */
static void load_cell_result(const char *dir, gt_doe_sweep *s, gt_doe_result *r) {
    char p2[PATH_MAX + 96];
    snprintf(p2, sizeof p2, "%s/cells/%s/cell.json", dir, r->id);
    cJSON *cj = gt_doe_json_read(p2);
    if (cj) {
        r->attempts = json_int(cj, "attempts");
        r->preemptions = json_int(cj, "preemptions");
        r->failures = json_int(cj, "failures");
        r->exit_code = json_int(cj, "exit_code");
        const cJSON *st = cJSON_GetObjectItem(cj, "status");
        const char *sn = cJSON_IsString(st) ? st->valuestring : "";
        r->status = !strcmp(sn, "done") ? GT_DOE_DONE : !strcmp(sn, "failed") ? GT_DOE_FAILED
                    : !strcmp(sn, "preempted") ? GT_DOE_PREEMPTED : !strcmp(sn, "stopped") ? GT_DOE_STOPPED
                    : GT_DOE_RUNNING;
        cJSON_Delete(cj);
    }
    snprintf(p2, sizeof p2, "%s/cells/%s/eval.json", dir, r->id);
    const char *damage = NULL;
    cJSON *ev = read_eval_json(p2, &damage);
    for (int m = 0, n_m = n_metrics(); ev && m < n_m; m++) {
        r->value[m] = json_path(ev, metric_def(m)->name);
        if (isinf(r->value[m])) damage = "a metric that is not a finite number";
    }
    if (damage) {
        /* a damaged eval.json is no result: the cell failed, its values unused */
        GT_WARN("doe report: %s is damaged (%s): cell %lld counted as failed", p2, damage, (long long)r->index);
        for (int m = 0; m < GT_DOE_MAX_METRICS; m++) r->value[m] = NAN;
        r->status = GT_DOE_FAILED;
    } else if (ev) {
        r->status = GT_DOE_DONE;
        const cJSON *tn = cJSON_GetObjectItem(ev, "task");
        if (!s->task[0] && cJSON_IsString(tn)) /* a sweep.json without its task: the cells' */
            snprintf(s->task, sizeof s->task, "%s", tn->valuestring);
        const gt_eval_task_i *et = gt_eval_task_by_name(s->task);
        if (et && et->sweep_settings) {
            char st[sizeof s->eval_settings];
            eval_settings(ev, et->sweep_settings, st, sizeof st);
            if (!s->eval_settings[0]) snprintf(s->eval_settings, sizeof s->eval_settings, "%s", st);
            else if (strcmp(st, s->eval_settings)) s->n_eval_settings_differ++;
        }
    } else if (r->status == GT_DOE_DONE) {
        r->status = GT_DOE_FAILED; /* done without eval.json: treat as failed */
    }
    cJSON_Delete(ev);
}

int gt_doe_sweep_load(const char *dir, gt_doe_sweep *s, char *err, size_t en) {
    memset(s, 0, sizeof *s);
    s->seed_factor = -1;
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/sweep.json", dir);
    cJSON *j = gt_doe_json_read(path);
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
    snprintf(s->task, sizeof s->task, "%s", cJSON_IsString(x) ? x->valuestring : ""); /* "": the cells' */
    load_factors(s, j);
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
        for (int m = 0; m < GT_DOE_MAX_METRICS; m++) r->value[m] = NAN;
        load_cell_result(dir, s, r);
    }
    for (int k = 0; k < s->n_factors; k++) free(sorted[k]);
    cJSON_Delete(j);
    if (rc == 0) gt_doe_ladder_load(s); /* a halving sweep's ladder.json */
    return rc;
}
