/* doe/report_ladder.c: a halving sweep's ladder for the report (ladder.json
 * and the rung records, doe/run.h) and its comparison with a grid sweep of
 * the same matrix (report.h). */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fsutil.h"
#include "doe/report.h"
#include "doe/report_int.h"

static cJSON *read_json(const char *path) {
    char *t = gt_read_file_bounded(path, GT_READ_JSON_MAX_BYTES, "a JSON file of a sweep", NULL, NULL, 0);
    if (!t) return NULL;
    cJSON *j = cJSON_Parse(t);
    free(t);
    return j;
}
static double jnum(const cJSON *o, const char *k, double dflt) {
    const cJSON *x = cJSON_GetObjectItem(o, k);
    return cJSON_IsNumber(x) ? x->valuedouble : dflt;
}

static int conf_of(const gt_doe_ladder *L, int64_t first_cell) {
    for (int k = 0; k < L->n_confs; k++)
        if (L->confs[k].first_cell == first_cell) return k;
    return -1;
}

/* the cell's rung record: steps_added, cpu_hours */
static void add_record(const gt_doe_sweep *s, int rung, int64_t cell, double *steps, double *hours, double *gpu) {
    char p[PATH_MAX + 96];
    snprintf(p, sizeof p, "%s/rungs/%d/%s.json", s->dir, rung, s->cells[cell].id);
    cJSON *j = read_json(p);
    if (!j) return;
    *steps += jnum(j, "steps_added", 0);
    *hours += jnum(j, "cpu_hours", 0);
    *gpu += jnum(j, "gpu_hours", 0);
    cJSON_Delete(j);
}

int gt_doe_ladder_load(gt_doe_sweep *s) {
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/ladder.json", s->dir);
    cJSON *j = read_json(p);
    if (!j) return 0;
    gt_doe_ladder *L = GT_CALLOC(1, sizeof *L);
    L->eta = (int)jnum(j, "eta", 0);
    L->chosen = -1;
    const cJSON *x = cJSON_GetObjectItem(j, "unit");
    snprintf(L->unit, sizeof L->unit, "%s", cJSON_IsString(x) ? x->valuestring : "steps");
    x = cJSON_GetObjectItem(j, "metric");
    snprintf(L->metric, sizeof L->metric, "%s", cJSON_IsString(x) ? x->valuestring : "train.best_val_loss");
    const cJSON *bs = cJSON_GetObjectItem(j, "budgets"), *b;
    cJSON_ArrayForEach(b, bs) if (L->n_rungs < GT_DOE_MAX_RUNGS && cJSON_IsNumber(b)) L->budget[L->n_rungs++] = b->valuedouble;
    L->confs = GT_CALLOC((size_t)(s->n_cells + 1), sizeof *L->confs);
    const cJSON *rs = cJSON_GetObjectItem(j, "rungs"), *r;
    int ri = 0;
    cJSON_ArrayForEach(r, rs) {
        if (ri >= L->n_rungs) break;
        const cJSON *cs = cJSON_GetObjectItem(r, "configs"), *c, *cl = cJSON_GetObjectItem(r, "cells");
        L->n_cells[ri] = cJSON_GetArraySize(cl);
        L->n_failed_cells[ri] = cJSON_GetArraySize(cJSON_GetObjectItem(r, "failed_cells"));
        if (cs) L->n_ranked = ri + 1;
        cJSON_ArrayForEach(c, cs) {
            const int64_t first = (int64_t)jnum(c, "first_cell", -1);
            int k = conf_of(L, first);
            if (k < 0 && L->n_confs <= s->n_cells) {
                k = L->n_confs++;
                L->confs[k].first_cell = first;
                const cJSON *lab = cJSON_GetObjectItem(c, "config");
                snprintf(L->confs[k].label, sizeof L->confs[k].label, "%s", cJSON_IsString(lab) ? lab->valuestring : "?");
                for (int q = 0; q < GT_DOE_MAX_RUNGS; q++) L->confs[k].mean[q] = NAN;
            }
            if (k < 0) continue;
            gt_doe_ladder_conf *C = &L->confs[k];
            C->ran[ri] = 1;
            C->mean[ri] = jnum(c, "mean", NAN);
            C->n_done[ri] = (int)jnum(c, "n_done", 0);
            C->n_failed[ri] = (int)jnum(c, "n_failed", 0);
            C->advanced[ri] = cJSON_IsTrue(cJSON_GetObjectItem(c, "advanced"));
            const cJSON *xc = cJSON_GetObjectItem(c, "cells"), *e;
            cJSON_ArrayForEach(e, xc) {
                const int64_t cell = (int64_t)e->valuedouble;
                if (cell < 0 || cell >= s->n_cells) continue;
                add_record(s, ri, cell, &L->steps, &L->cpu_hours, &L->gpu_hours);
                if (ri == 0) { /* the grid estimate: each cell's rung-0 cost scaled to the full budget */
                    double st = 0, h = 0, gh = 0;
                    add_record(s, 0, cell, &st, &h, &gh);
                    L->grid_cpu_hours_est += h * L->budget[L->n_rungs - 1] / L->budget[0];
                }
            }
        }
        ri++;
    }
    /* configurations in cell order */
    for (int a = 1; a < L->n_confs; a++)
        for (int q = a; q > 0 && L->confs[q].first_cell < L->confs[q - 1].first_cell; q--) {
            gt_doe_ladder_conf t = L->confs[q];
            L->confs[q] = L->confs[q - 1];
            L->confs[q - 1] = t;
        }
    const cJSON *ch = cJSON_GetObjectItem(j, "chosen");
    if (ch) L->chosen = conf_of(L, (int64_t)jnum(ch, "first_cell", -1));
    const cJSON *per = cJSON_GetObjectItem(j, "chosen_per"), *e;
    if (per) {
        cJSON_ArrayForEach(e, per) {
            const int k = conf_of(L, (int64_t)jnum(e, "first_cell", -1));
            if (k >= 0) L->confs[k].chosen = 1, L->n_chosen++;
        }
    } else if (L->chosen >= 0) {
        L->confs[L->chosen].chosen = 1;
        L->n_chosen = 1;
    }
    L->grid_steps = strcmp(L->unit, "steps") ? NAN : (double)s->n_cells * L->budget[L->n_rungs > 0 ? L->n_rungs - 1 : 0];
    cJSON_Delete(j);
    s->ladder = L;
    return 0;
}

void gt_doe_ladder_free(gt_doe_sweep *s) {
    if (!s->ladder) return;
    free(s->ladder->confs);
    free(s->ladder);
    s->ladder = NULL;
}

int gt_doe_compare_halving(const gt_doe_sweep *g, const gt_doe_summary *o, const gt_doe_sweep *h, gt_doe_compare *c,
                           char *err, size_t en) {
    memset(c, 0, sizeof *c);
    c->grid_best = c->chosen = -1;
    const gt_doe_ladder *L = h->ladder;
    if (!L) return snprintf(err, en, "%s is not a halving sweep (no ladder.json)", h->dir), -1;
    if (L->chosen < 0) return snprintf(err, en, "the ladder of %s has not chosen yet (its last rung is not ranked)", h->dir), -1;
    if (L->n_chosen > 1)
        return snprintf(err, en, "%s has one ladder per level of [search] per (%d choices): compare each with the grid "
                                 "cells of its level (the ladder table of its own report)", h->dir, L->n_chosen),
               -1;
    const int m = gt_doe_metric_find(L->metric);
    if (m < 0) return snprintf(err, en, "unknown rung metric '%s'", L->metric), -1;
    const int hb = metric_def(m)->higher_better;
    char lab[512];
    for (int k = 0; k < o->n_configs; k++) {
        gt_doe_config_label(g, &o->configs[k], lab, sizeof lab);
        if (!strcmp(lab, L->confs[L->chosen].label)) c->chosen = k;
        const double v = o->configs[k].stat[m].mean;
        if (!isfinite(v)) continue;
        c->n_ranked++;
        if (c->grid_best < 0 || (hb ? v > o->configs[c->grid_best].stat[m].mean : v < o->configs[c->grid_best].stat[m].mean))
            c->grid_best = k;
    }
    if (c->grid_best < 0) return snprintf(err, en, "no finished cell of %s has %s", g->dir, L->metric), -1;
    if (c->chosen < 0)
        return snprintf(err, en, "the halving choice '%s' is no configuration of %s (another matrix?)",
                        L->confs[L->chosen].label, g->dir),
               -1;
    c->best_value = o->configs[c->grid_best].stat[m].mean;
    c->chosen_value = o->configs[c->chosen].stat[m].mean;
    c->rel_diff = (c->chosen_value - c->best_value) / fabs(c->best_value);
    c->chosen_rank = 1;
    for (int k = 0; k < o->n_configs; k++) {
        const double v = o->configs[k].stat[m].mean;
        if (isfinite(v) && (hb ? v > c->chosen_value : v < c->chosen_value)) c->chosen_rank++;
    }
    c->grid_cpu_hours = o->cpu_hours;
    c->halving_cpu_hours = L->cpu_hours;
    c->grid_gpu_hours = o->gpu_hours;
    c->halving_gpu_hours = L->gpu_hours;
    const int ms = gt_doe_metric_find("train.steps");
    for (int64_t i = 0; i < g->n_cells; i++)
        if (isfinite(g->cells[i].value[ms])) c->grid_steps += g->cells[i].value[ms];
    c->halving_steps = L->steps;
    return 0;
}
