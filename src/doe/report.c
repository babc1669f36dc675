/* doe/report.c: the report files (report.h, gt_doe_report_write): the CSV
 * tables here, report.md/report.html from report_doc.c, the plots from
 * report_plots.c. Loading: report_load.c; aggregation: report_summary.c. */
#define _GNU_SOURCE
#include "doe/report.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/escape.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "doe/report_int.h"



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

/* cells.csv: one row per cell. 0, or -1 (logged). */
static int write_cells_csv(const gt_doe_sweep *s, const char *dir) {
    FILE *f = gt_doe_report_open(dir, "cells.csv");
    if (!f) return -1;
    fputs("index,id", f);
    for (int k = 0; k < s->n_factors; k++) csv_str(f, s->factor[k], 0);
    fputs(",status,attempts,preemptions,failures,exit_code", f);
    for (int k = 0, n_m = n_metrics(); k < n_m; k++) csv_str(f, metric_def(k)->name, 0);
    fputc('\n', f);
    for (int64_t i = 0; i < s->n_cells; i++) {
        const gt_doe_result *r = &s->cells[i];
        fprintf(f, "%lld,", (long long)r->index);
        gt_esc_csv(f, r->id);
        for (int k = 0; k < s->n_factors; k++) csv_str(f, s->levels[k][r->level[k]], 0);
        fprintf(f, ",%s,%d,%d,%d,%d", gt_doe_status_name(r->status), r->attempts, r->preemptions, r->failures,
                r->exit_code);
        for (int k = 0, n_m = n_metrics(); k < n_m; k++) csv_num(f, r->value[k]);
        fputc('\n', f);
    }
    fclose(f);
    return 0;
}

/* configs.csv: mean and sd per configuration of the metrics shown. */
static int write_configs_csv(const gt_doe_sweep *s, const gt_doe_summary *o, const char *dir, const int *idx, int nm) {
    FILE *f = gt_doe_report_open(dir, "configs.csv");
    if (!f) return -1;
    int first = 1;
    for (int k = 0; k < s->n_factors; k++)
        if (k != s->seed_factor) csv_str(f, s->factor[k], first), first = 0;
    fputs(first ? "n_cells,n_done" : ",n_cells,n_done", f);
    for (int k = 0; k < nm; k++) fprintf(f, ",%s.mean,%s.sd", metric_def(idx[k])->name, metric_def(idx[k])->name);
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
    return 0;
}

/* effects.csv: the main effects. */
static int write_effects_csv(const gt_doe_sweep *s, const gt_doe_summary *o, const char *dir, const int *idx, int nm) {
    FILE *f = gt_doe_report_open(dir, "effects.csv");
    if (!f) return -1;
    fputs("factor,level,metric,n,mean,sd,se,effect\n", f);
    for (int fi = 0; fi < s->n_factors; fi++) {
        if (!o->effect[fi]) continue;
        for (int l = 0; l < s->n_levels[fi]; l++)
            for (int k = 0; k < nm; k++) {
                gt_doe_stat e = o->effect[fi][l * n_metrics() + idx[k]];
                csv_str(f, s->factor[fi], 1);
                csv_str(f, s->levels[fi][l], 0);
                fprintf(f, ",%s,%d", metric_def(idx[k])->name, e.n);
                csv_num(f, e.mean), csv_num(f, e.sd), csv_num(f, isfinite(e.sd) ? e.sd / sqrt(e.n) : NAN);
                csv_num(f, e.mean - o->grand[idx[k]].mean);
                fputc('\n', f);
            }
    }
    fclose(f);
    return 0;
}

/* two_way.csv: the two-way table of the primary metric (a header only without one). */
static int write_two_way_csv(const gt_doe_sweep *s, const gt_doe_summary *o, const char *dir) {
    FILE *f = gt_doe_report_open(dir, "two_way.csv");
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
                fprintf(f, ",%s,%d", metric_def(o->primary)->name, o->two_way[r * C + c].n);
                csv_num(f, o->two_way[r * C + c].mean), csv_num(f, o->two_way[r * C + c].sd);
                fputc('\n', f);
            }
    }
    fclose(f);
    return 0;
}

int gt_doe_report_write(const gt_doe_sweep *s, const gt_doe_summary *o, const char *dir, int plots) {
    /* dir itself a symbolic link (or not a directory): refused, never followed */
    if (gt_out_dir_check(dir) != 0 || (mkdir(dir, 0755) && errno != EEXIST) || gt_out_dir_check(dir) != 0) {
        gt_log_error("doe report: cannot create '%s': %s", dir, gt_out_strerror(errno)); /* exit 4 */
        return -1;
    }
    int idx[GT_DOE_MAX_METRICS];
    int nm = shown_metrics(o, idx, 0);
    if (write_cells_csv(s, dir) || write_configs_csv(s, o, dir, idx, nm) || write_effects_csv(s, o, dir, idx, nm) ||
        write_two_way_csv(s, o, dir))
        return -1;
    FILE *f;
    /* plots */
    int have_plots = 0;
    if (plots) {
        if (!gt_doe_have_gnuplot()) GT_WARN("doe report: gnuplot not found on PATH (Debian: gnuplot-nox): no plots");
        else if (o->grand[o->primary].n == 0) GT_WARN("doe report: no finished cell has %s: no plots", metric_def(o->primary)->name);
        else if (gt_doe_plots_write(s, o, dir)) GT_WARN("doe report: gnuplot failed (scripts kept in %s)", dir);
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
            f = gt_doe_report_open(dir, "care_protocol.csv");
            if (!f) return -1;
            write_care_csv(f, s, &care);
            fclose(f);
        }
    }
    const gt_doe_care *cp = care.factor >= 0 ? &care : NULL;
    const char *ce = care_err[0] ? care_err : NULL;
    for (int html = 0; html <= 1; html++) {
        FILE *d = gt_doe_report_open(dir, html ? "report.html" : "report.md");
        if (!d) return -1;
        gt_doe_doc_write(d, html, s, o, have_plots, cp, ce);
        fclose(d);
    }
    gt_doe_care_free(&care);
    return 0;
}
