/* doe/report_doc.c: report.md and report.html, one writer for both syntaxes
 * (report_int.h, gt_doe_doc_write). */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/escape.h"
#include "core/log.h"
#include "doe/report.h"
#include "doe/report_int.h"


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


/* the chosen configuration's full-budget result */
static void write_chosen(doc *d, const gt_doe_sweep *s, const gt_doe_summary *o, const gt_doe_ladder *L,
                         const gt_doe_ladder_conf *C) {
    char b[600], v[160];
    int ci = -1;
    for (int k = 0; k < o->n_configs && ci < 0; k++) {
        gt_doe_config_label(s, &o->configs[k], b, sizeof b);
        if (!strcmp(b, C->label)) ci = k;
    }
    para(d, "Chosen configuration: %s (%s %s at the full budget).", C->label, L->metric,
         (fmt_num(v, sizeof v, C->mean[L->n_rungs - 1]), v));
    if (ci < 0) return;
    int qidx[GT_DOE_MAX_METRICS];
    const int nq = shown_metrics(o, qidx, 0);
    table_begin(d);
    row_begin(d);
    cell(d, "metric", 1), cell(d, "mean ± sd over seeds", 1), cell(d, "n", 1);
    row_end(d, 3, 1);
    for (int k = 0; k < nq; k++) {
        const gt_doe_stat st = o->configs[ci].stat[qidx[k]];
        if (st.n == 0) continue;
        row_begin(d);
        cell(d, metric_def(qidx[k])->label, 0);
        fmt_stat(v, sizeof v, st);
        cell(d, v, 0);
        snprintf(v, sizeof v, "%d", st.n);
        cell(d, v, 0);
        row_end(d, 3, 0);
    }
    table_end(d);
}

/* A halving sweep: the ladder (each configuration's rung metric per rung,
 * which advanced), the compute spent against the grid's, the choice. */
static void write_ladder(doc *d, const gt_doe_sweep *s, const gt_doe_summary *o) {
    const gt_doe_ladder *L = s->ladder;
    char b[600], v[160];
    heading(d, 2, "Successive halving");
    para(d, "eta %d, %d rungs (budgets in %s); a configuration (the cells equal in every factor but the seed) is "
            "ranked by the mean of %s over its seeds that finished the rung, ties by cell order; the best 1/eta "
            "advance. %d of %d rungs ranked.",
         L->eta, L->n_rungs, !strcmp(L->unit, "data") ? "fractions of the households/turbines" : "optimizer steps",
         L->metric, L->n_ranked, L->n_rungs);
    table_begin(d);
    row_begin(d);
    cell(d, "configuration", 1);
    for (int r = 0; r < L->n_rungs; r++) {
        snprintf(v, sizeof v, "rung %d (%g)", r, L->budget[r]);
        cell(d, v, 1);
    }
    row_end(d, L->n_rungs + 1, 1);
    for (int k = 0; k < L->n_confs; k++) {
        const gt_doe_ladder_conf *C = &L->confs[k];
        row_begin(d);
        snprintf(b, sizeof b, "%s%s", C->label, C->chosen ? " (chosen)" : "");
        cell(d, b, 0);
        for (int r = 0; r < L->n_rungs; r++) {
            char m[32];
            fmt_num(m, sizeof m, C->mean[r]);
            if (!C->ran[r]) snprintf(v, sizeof v, "%s", "");
            else if (r + 1 < L->n_ranked || (r + 1 == L->n_ranked && r + 1 < L->n_rungs))
                snprintf(v, sizeof v, "%s (%d seed(s)%s) %s", m, C->n_done[r], C->n_failed[r] ? ", some failed" : "",
                         C->advanced[r] ? "advanced" : "stopped");
            else snprintf(v, sizeof v, "%s (%d seed(s)%s)", m, C->n_done[r], C->n_failed[r] ? ", some failed" : "");
            cell(d, v, 0);
        }
        row_end(d, L->n_rungs + 1, 0);
    }
    table_end(d);
    for (int r = 0; r < L->n_ranked; r++)
        if (L->n_failed_cells[r])
            para(d, "Rung %d: %lld of %lld cells without a result (failed or not run; listed in ladder.json "
                    "failed_cells): their configurations were ranked on the seeds that finished.",
                 r, (long long)L->n_failed_cells[r], (long long)L->n_cells[r]);
    if (isfinite(L->grid_steps))
        para(d, "Compute: %.6g cell-steps over the rungs, %.1f%% of the grid's %.6g (every cell to %g steps); %.4g "
                "CPU-hours (%.4g GPU-hours), %.1f%% of the grid's estimated %.4g (each cell's rung-0 cost per step x "
                "the full budget; a grid sweep of the same matrix measures it: 'doe report GRID --halving THIS').",
             L->steps, 100 * L->steps / L->grid_steps, L->grid_steps, L->budget[L->n_rungs - 1], L->cpu_hours,
             L->gpu_hours, L->grid_cpu_hours_est > 0 ? 100 * L->cpu_hours / L->grid_cpu_hours_est : NAN, L->grid_cpu_hours_est);
    else
        para(d, "Compute: %.4g CPU-hours over the rungs, %.1f%% of the grid's estimated %.4g (each cell's rung-0 "
                "cost scaled to the full data).",
             L->cpu_hours, L->grid_cpu_hours_est > 0 ? 100 * L->cpu_hours / L->grid_cpu_hours_est : NAN,
             L->grid_cpu_hours_est);
    if (L->chosen < 0) {
        para(d, "No choice yet: the last rung is not ranked ('doe next --rung %d' after it).", L->n_rungs - 1);
        return;
    }
    for (int q = 0; q < L->n_confs; q++)
        if (L->confs[q].chosen) write_chosen(d, s, o, L, &L->confs[q]);
}

/* A grid sweep compared with a halving sweep of the same matrix. */
static void write_compare(doc *d, const gt_doe_sweep *s, const gt_doe_summary *o) {
    gt_doe_compare c;
    char err[1024], b[512], a[512];
    heading(d, 2, "Successive halving against this grid");
    if (gt_doe_compare_halving(s, o, o->halving, &c, err, sizeof err)) {
        para(d, "Halving sweep %s: not compared: %s", o->halving->dir, err);
        return;
    }
    const gt_doe_ladder *L = o->halving->ladder;
    gt_doe_config_label(s, &o->configs[c.grid_best], b, sizeof b);
    gt_doe_config_label(s, &o->configs[c.chosen], a, sizeof a);
    para(d, "Halving sweep %s (eta %d, %d rungs) chose %s: %s the grid's best by %s (rank %d of %d). Grid's best: %s "
            "(%.6g); the halving choice in this grid: %.6g, %+.2f%% from the best.",
         o->halving->dir, L->eta, L->n_rungs, a, c.chosen == c.grid_best ? "that is" : "that is NOT", L->metric,
         c.chosen_rank, c.n_ranked, b, c.best_value, c.chosen_value, 100 * c.rel_diff);
    para(d, "Compute: halving %.6g cell-steps, %.4g CPU-hours and %.4g GPU-hours; this grid %.6g cell-steps, %.4g "
            "CPU-hours and %.4g GPU-hours: %.1f%% of the steps, %.1f%% of the CPU-hours.",
         c.halving_steps, c.halving_cpu_hours, c.halving_gpu_hours, c.grid_steps, c.grid_cpu_hours, c.grid_gpu_hours,
         c.grid_steps > 0 ? 100 * c.halving_steps / c.grid_steps : NAN,
         c.grid_cpu_hours > 0 ? 100 * c.halving_cpu_hours / c.grid_cpu_hours : NAN);
}

/* The document's head, title and the sweep's totals, best and worst. */
static void write_overview(doc *d, const gt_doe_sweep *s, const gt_doe_summary *o) {
    const gt_doe_metric_def *P = metric_def(o->primary);
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
    if (s->eval_settings[0]) {
        if (s->n_eval_settings_differ)
            para(d, "Evaluation settings (eval.json eval_config) of the first finished cell: %s; %lld finished cells "
                    "were evaluated with other settings.", s->eval_settings, (long long)s->n_eval_settings_differ);
        else
            para(d, "Evaluation settings of every finished cell (eval.json eval_config): %s.", s->eval_settings);
    }
    if (s->ladder)
        para(d, "%lld cells stopped by the halving ladder (not kept after a rung; section Successive halving); the "
                "totals above count the finished cells only.",
             (long long)o->n_status[GT_DOE_STOPPED]);
    if (o->best >= 0) {
        gt_doe_config_label(s, &o->configs[o->best], b, sizeof b);
        fmt_stat(v, sizeof v, o->configs[o->best].stat[o->primary]);
        para(d, "Best configuration: %s (%s %s over %d seed(s)).", b, P->label, v, o->configs[o->best].stat[o->primary].n);
        gt_doe_config_label(s, &o->configs[o->worst], b, sizeof b);
        fmt_stat(v, sizeof v, o->configs[o->worst].stat[o->primary]);
        para(d, "Worst configuration: %s (%s %s over %d seed(s)).", b, P->label, v, o->configs[o->worst].stat[o->primary].n);
    }
}

/* Configurations: mean ± sd over seeds of the metrics shown. */
static void write_configs(doc *d, const gt_doe_sweep *s, const gt_doe_summary *o) {
    int idx[GT_DOE_MAX_METRICS];
    int nm = shown_metrics(o, idx, 0);
    char v[128];
    heading(d, 2, "Configurations (mean ± sd over seeds)");
    table_begin(d);
    row_begin(d);
    int nc = 0;
    for (int f = 0; f < s->n_factors; f++)
        if (f != s->seed_factor) cell(d, s->factor[f], 1), nc++;
    cell(d, "seeds done", 1), nc++;
    for (int k = 0; k < nm; k++) cell(d, metric_def(idx[k])->label, 1), nc++;
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
}

/* Main effects per factor level. */
static void write_effects(doc *d, const gt_doe_sweep *s, const gt_doe_summary *o) {
    int qidx[GT_DOE_MAX_METRICS];
    int nq = shown_metrics(o, qidx, 1);
    const gt_doe_metric_def *P = metric_def(o->primary);
    char b[512], v[128];
    heading(d, 2, "Main effects");
    para(d, "Per factor level: mean ± sd over the finished cells with that level (all other factors and seeds "
            "pooled); effect = level mean - grand mean. Error bars in the plot are standard errors (sd/sqrt(n)).");
    table_begin(d);
    row_begin(d);
    cell(d, "factor", 1), cell(d, "level", 1), cell(d, "n", 1);
    for (int k = 0; k < nq; k++) cell(d, metric_def(qidx[k])->label, 1);
    snprintf(b, sizeof b, "effect on %s", P->label);
    cell(d, b, 1);
    row_end(d, 4 + nq, 1);
    for (int f = 0; f < s->n_factors; f++) {
        if (!o->effect[f]) continue;
        for (int l = 0; l < s->n_levels[f]; l++) {
            const gt_doe_stat *e = o->effect[f] + l * n_metrics();
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
}

/* The two-way table of the primary metric and the plots. */
static void write_two_way(doc *d, const gt_doe_sweep *s, const gt_doe_summary *o, int have_plots) {
    const gt_doe_metric_def *P = metric_def(o->primary);
    char b[512], v[128];
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
}

/* Cells not finished, failed or requeued, and the list of files. */
static void write_cells(doc *d, const gt_doe_sweep *s, int have_plots) {
    char b[512], v[128];
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
}

static void write_doc(doc *d, const gt_doe_sweep *s, const gt_doe_summary *o, int have_plots, const gt_doe_care *care,
                      const char *care_err) {
    write_overview(d, s, o);
    write_configs(d, s, o);
    if (s->ladder) write_ladder(d, s, o);
    if (o->halving) write_compare(d, s, o);
    write_slow(d, s);
    write_effects(d, s, o);
    write_two_way(d, s, o, have_plots);
    if (care) write_care(d, s, care, care_err);
    write_cells(d, s, have_plots);
    if (d->html) fputs("</body></html>\n", d->f);
}

void gt_doe_doc_write(FILE *f, int html, const gt_doe_sweep *s, const gt_doe_summary *o, int have_plots,
                      const gt_doe_care *care, const char *care_err) {
    doc d = {f, html};
    write_doc(&d, s, o, have_plots, care, care_err);
}
