/* doe/care.c: the CARE to Compare protocol over a sweep with one training per
 * event dataset (report.h, gt_doe_care_collect; docs/evaluation.md). The
 * per-event values come from each cell's evaluation: the sweep's task reads
 * them from its section of the cell's eval.json (eval/eval_task.h
 * care_cell, filled by the task that writes them under data.care_event); the
 * combination is gt_care_protocol_final, the one implementation of the
 * authors' final formula.
 *
 * The protocol combines cells of a sweep, which only doe/ knows (the task
 * folders sit below it), so it stays here; the task is found through the
 * registry by the sweep's task name, not named, and the fields of its
 * section are the task's business. */
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
#include "eval/eval_task.h"

/* recall and false alarms per turbine-day of events ev[n] (those with farm f, or all with f < 0) */
static void care_sum(const gt_doe_care_event *ev, int n, int f, gt_doe_care_sum *o) {
    gt_care_event_eval *r = GT_MALLOC(sizeof *r * (size_t)(n > 0 ? n : 1));
    double ne = 0, nd = 0, fa = 0, td = 0;
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (f >= 0 && ev[i].farm != f) continue;
        r[m++] = ev[i].r;
        ne += ev[i].n_events, nd += ev[i].n_detected, fa += ev[i].n_false_alarms, td += ev[i].turbine_days;
    }
    gt_care_protocol_final(r, m, &o->p);
    o->recall = ne > 0 ? nd / ne : NAN;
    o->false_alarms_per_turbine_day = td > 0 ? fa / td : NAN;
    free(r);
}

/* the evaluated entry of event `id` in a cell's eval.json into *e, read by
 * the sweep's task (its evaluation table's care_cell); 0 or -1 with err */
static int read_cell(const gt_doe_sweep *s, int64_t ci, int64_t id, gt_doe_care_event *e, char *err, size_t en) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/cells/%s/eval.json", s->dir, s->cells[ci].id);
    char why[160];
    char *t = gt_read_file_bounded(path, GT_READ_JSON_MAX_BYTES, "an eval.json", NULL, why, sizeof why);
    if (!t && errno == EFBIG) {
        snprintf(err, en, "%s: %s: not read", path, why);
        return -1;
    }
    const gt_eval_task_i *et = gt_eval_task_by_name(s->task);
    if (!et || !et->care_cell) {
        free(t);
        snprintf(err, en, "%s: no evaluated CARE event dataset %lld: the sweep's task (%s) has no CARE to Compare "
                 "protocol", path, (long long)id, s->task[0] ? s->task : "unknown");
        return -1;
    }
    cJSON *j = t ? cJSON_Parse(t) : NULL;
    free(t);
    gt_eval_care_cell c;
    char what[512];
    int rc = et->care_cell(cJSON_GetObjectItem(j, et->name), id, &c, what, sizeof what);
    cJSON_Delete(j);
    if (rc) {
        snprintf(err, en, "%s: %s", path, what);
        return -1;
    }
    memset(e, 0, sizeof *e);
    e->cell = ci;
    e->event_id = id;
    e->turbine_id = c.turbine_id;
    e->farm = c.farm;
    e->r = c.r;
    e->rows = c.rows, e->rows_in_training = c.rows_in_training;
    e->n_events = c.n_events, e->n_detected = c.n_detected;
    e->n_false_alarms = c.n_false_alarms, e->turbine_days = c.turbine_days;
    return 0;
}

int gt_doe_care_collect(const gt_doe_sweep *s, gt_doe_care *out, char *err, size_t en) {
    memset(out, 0, sizeof *out);
    out->factor = -1;
    for (int f = 0; f < s->n_factors; f++)
        if (s->key[f] && !strcmp(s->key[f], "data.care_event")) out->factor = f;
    if (out->factor < 0) return 0;
    const int cf = out->factor;
    int64_t *run_of = GT_MALLOC(sizeof(int64_t) * (size_t)(s->n_cells > 0 ? s->n_cells : 1));
    out->runs = GT_CALLOC((size_t)(s->n_cells > 0 ? s->n_cells : 1), sizeof(gt_doe_care_run));
    for (int64_t i = 0; i < s->n_cells; i++) { /* runs: cells equal in every factor but care_event */
        const gt_doe_result *c = &s->cells[i];
        int64_t r = -1;
        for (int64_t j = 0; j < i && r < 0; j++) {
            int same = 1;
            for (int f = 0; f < s->n_factors && same; f++) same = f == cf || s->cells[j].level[f] == c->level[f];
            if (same) r = run_of[j];
        }
        if (r < 0) {
            r = out->n_runs++;
            gt_doe_care_run *R = &out->runs[r];
            R->events = GT_CALLOC((size_t)s->n_levels[cf], sizeof(gt_doe_care_event));
            for (int f = 0; f < s->n_factors; f++) {
                if (f == cf) continue;
                size_t l = strlen(R->label);
                snprintf(R->label + l, sizeof R->label - l, "%s%s=%s", l ? " " : "", s->factor[f],
                         s->levels[f][c->level[f]]);
            }
            if (!R->label[0]) snprintf(R->label, sizeof R->label, "(all)");
        }
        run_of[i] = r;
    }
    /* events in level order: walk the levels, find each run's cell of that level */
    int rc = 0;
    for (int r = 0; r < out->n_runs && !rc; r++) {
        gt_doe_care_run *R = &out->runs[r];
        for (int l = 0; l < s->n_levels[cf] && !rc; l++)
            for (int64_t i = 0; i < s->n_cells && !rc; i++) {
                if (run_of[i] != r || s->cells[i].level[cf] != l) continue;
                R->n_cells++;
                if (s->cells[i].status != GT_DOE_DONE) continue;
                R->n_done++;
                rc = read_cell(s, i, strtoll(s->levels[cf][l], NULL, 10), &R->events[R->n_events], err, en);
                if (!rc) R->n_events++;
            }
        if (rc) break;
        care_sum(R->events, R->n_events, -1, &R->overall);
        for (int i = 0; i < R->n_events; i++) {
            int k = 0;
            while (k < R->n_farms && R->farm[k] != R->events[i].farm) k++;
            if (k == R->n_farms && k < GT_DOE_CARE_MAX_FARMS) R->farm[R->n_farms++] = R->events[i].farm;
        }
        for (int k = 0; k < R->n_farms; k++) care_sum(R->events, R->n_events, R->farm[k], &R->by_farm[k]);
    }
    free(run_of);
    if (rc) gt_doe_care_free(out);
    return rc;
}

void gt_doe_care_free(gt_doe_care *c) {
    for (int r = 0; r < c->n_runs; r++) free(c->runs[r].events);
    free(c->runs);
    memset(c, 0, sizeof *c);
    c->factor = -1;
}
