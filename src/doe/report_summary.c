/* doe/report_summary.c: aggregation of a loaded sweep: configurations, main
 * effects, the two-way table, best and worst, counts and cost; the cells
 * slower than their siblings (report.h). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "doe/report.h"
#include "doe/report_int.h"
#include "eval/eval_task.h"

static int find_factor(const gt_doe_sweep *s, const char *name) {
    for (int f = 0; f < s->n_factors; f++)
        if (!strcmp(s->factor[f], name) || !strcmp(s->key[f], name)) return f;
    return -1;
}

/* The primary metric: `metric`, the sweep's, or the task's default. 0, or
 * -1 with err[] filled. */
static int summary_primary(const gt_doe_sweep *s, const char *metric, gt_doe_summary *o, char *err, size_t en) {
    /* primary metric */
    const char *want = metric ? metric : s->metric;
    if (want) {
        o->primary = gt_doe_metric_find(want);
        if (o->primary < 0) {
            char known[1024] = "";
            for (int m = 0, n_m = n_metrics(); m < n_m; m++)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", m ? ", " : "", metric_def(m)->name);
            snprintf(err, en, "unknown metric '%s' (known: %s)", want, known);
            return -1;
        }
    } else {
        /* the task's headline metric (eval/eval_task.h) when a cell has it */
        const gt_eval_task_i *et = gt_eval_task_by_name(s->task);
        o->primary = gt_doe_metric_find("train.best_val_loss");
        int m0 = et && et->headline_metric ? gt_doe_metric_find(et->headline_metric) : -1;
        for (int64_t i = 0; m0 >= 0 && i < s->n_cells; i++)
            if (isfinite(s->cells[i].value[m0])) o->primary = m0;
    }
    return 0;
}

/* Configurations (equal levels in every non-seed factor), counts, cost and
 * the grand statistics; the configuration of each cell in cfg_of[]. */
static void summary_configs(const gt_doe_sweep *s, gt_doe_summary *o, double *buf, int *cfg_of) {
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
        for (int m = 0, n_m = n_metrics(); m < n_m; m++) {
            int n = 0;
            for (int64_t i = 0; i < s->n_cells; i++)
                if (cfg_of[i] == c && s->cells[i].status == GT_DOE_DONE) buf[n++] = s->cells[i].value[m];
            o->configs[c].stat[m] = gt_doe_stat_of(buf, n);
        }
    for (int m = 0, n_m = n_metrics(); m < n_m; m++) {
        int n = 0;
        for (int64_t i = 0; i < s->n_cells; i++)
            if (s->cells[i].status == GT_DOE_DONE) buf[n++] = s->cells[i].value[m];
        o->grand[m] = gt_doe_stat_of(buf, n);
    }
}

/* Main effects: per level of each non-seed factor, over finished cells. */
static void summary_effects(const gt_doe_sweep *s, gt_doe_summary *o, double *buf) {
    for (int f = 0; f < s->n_factors; f++) {
        if (f == s->seed_factor) continue;
        const int n_m = n_metrics();
        o->effect[f] = GT_CALLOC((size_t)s->n_levels[f] * n_m, sizeof(gt_doe_stat));
        for (int l = 0; l < s->n_levels[f]; l++)
            for (int m = 0; m < n_m; m++) {
                int n = 0;
                for (int64_t i = 0; i < s->n_cells; i++)
                    if (s->cells[i].status == GT_DOE_DONE && s->cells[i].level[f] == l) buf[n++] = s->cells[i].value[m];
                o->effect[f][l * n_m + m] = gt_doe_stat_of(buf, n);
            }
    }
}

/* The two-way table's factors (--rows, --cols or the first two non-seed
 * factors) and its cells. 0, or -1 with err[] filled. */
static int summary_two_way(const gt_doe_sweep *s, const char *rows, const char *cols, gt_doe_summary *o, double *buf,
                           char *err, size_t en) {
    if (rows) {
        o->row_factor = find_factor(s, rows);
        if (o->row_factor < 0) {
            snprintf(err, en, "--rows: no factor '%s' in the sweep", rows);
            return -1;
        }
    } else {
        o->row_factor = find_factor(s, "data.machine_types");
    }
    if (cols) {
        o->col_factor = find_factor(s, cols);
        if (o->col_factor < 0) {
            snprintf(err, en, "--cols: no factor '%s' in the sweep", cols);
            return -1;
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
    return 0;
}

/* Best and worst configuration by the primary metric's mean. */
static void summary_best(gt_doe_summary *o) {
    for (int c = 0; c < o->n_configs; c++) {
        double v = o->configs[c].stat[o->primary].mean;
        if (!isfinite(v)) continue;
        int hb = metric_def(o->primary)->higher_better;
        if (o->best < 0 || (hb ? v > o->configs[o->best].stat[o->primary].mean : v < o->configs[o->best].stat[o->primary].mean))
            o->best = c;
        if (o->worst < 0 || (hb ? v < o->configs[o->worst].stat[o->primary].mean : v > o->configs[o->worst].stat[o->primary].mean))
            o->worst = c;
    }
}

int gt_doe_summarize(const gt_doe_sweep *s, const char *metric, const char *rows, const char *cols,
                     gt_doe_summary *o, char *err, size_t en) {
    memset(o, 0, sizeof *o);
    o->best = o->worst = o->row_factor = o->col_factor = -1;
    if (summary_primary(s, metric, o, err, en)) return -1;
    double *buf = GT_MALLOC(sizeof(double) * (size_t)(s->n_cells + 1));
    int *cfg_of = GT_MALLOC(sizeof(int) * (size_t)(s->n_cells + 1));
    summary_configs(s, o, buf, cfg_of);
    summary_effects(s, o, buf);
    int rc = summary_two_way(s, rows, cols, o, buf, err, en);
    if (!rc) summary_best(o);
    free(buf);
    free(cfg_of);
    if (rc) gt_doe_summary_free(o, s);
    return rc;
}

void gt_doe_summary_free(gt_doe_summary *o, const gt_doe_sweep *s) {
    for (int f = 0; f < GT_DOE_MAX_FACTORS; f++) free(o->effect[f]);
    free(o->configs);
    free(o->two_way);
    (void)s;
    memset(o, 0, sizeof *o);
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
