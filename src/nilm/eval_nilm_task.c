/* nilm/eval_nilm_task.c: NILM's evaluation side (eval/eval_task.h gt_eval_task_i):
 * what eval.json holds of a NILM evaluation (data, "nilm", its eval_config
 * keys), the report's disaggregation section and its columns in a sweep's
 * report (doe/). The evaluation itself is eval_nilm.c. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/escape.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "eval/eval_impl.h"
#include "nilm/nilm_impl.h"
#include "eval/eval_task.h"
#include "eval/report_section.h"

/* ------------------------------------------------------------- eval.json -- */

static cJSON *nilm_metrics_json(const gt_nilm_metrics *m, const char *name) {
    cJSON *o = cJSON_CreateObject();
    if (name) cJSON_AddStringToObject(o, "name", name);
    gt_eval_num(o, "mae_w", m->mae_w);
    gt_eval_num(o, "sae", m->sae);
    gt_eval_num(o, "nde", m->nde);
    gt_eval_num(o, "precision", m->precision);
    gt_eval_num(o, "recall", m->recall);
    gt_eval_num(o, "f1", m->f1);
    gt_eval_num(o, "ea", m->ea);
    gt_eval_num(o, "energy_true_wh", m->energy_true_wh);
    gt_eval_num(o, "energy_pred_wh", m->energy_pred_wh);
    gt_eval_num(o, "samples", m->n);
    return o;
}

static cJSON *nilm_split_json(const gt_nilm_split_eval *s, const gt_nilm_eval *e) {
    if (!s->present) return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "windows", (double)s->n_windows);
    cJSON *ov = nilm_metrics_json(&s->overall, NULL);
    /* macro F1: mean over appliances with a defined F1 */
    double f1 = 0;
    int nf = 0, pass = 0;
    for (int a = 0; a < e->n_appliances; a++)
        if (isfinite(s->app[a].f1)) f1 += s->app[a].f1, nf++, pass += s->app[a].f1 >= 0.8;
    gt_eval_num(ov, "f1_macro", nf ? f1 / nf : NAN);
    cJSON_AddNumberToObject(ov, "appliances_f1_ge_0_8", pass);
    cJSON_AddNumberToObject(ov, "appliances_f1_defined", nf);
    cJSON_AddItemToObject(o, "overall", ov);
    cJSON *arr = cJSON_AddArrayToObject(o, "appliances");
    for (int a = 0; a < e->n_appliances; a++) {
        cJSON *it = nilm_metrics_json(&s->app[a], e->meta[a].name);
        if (e->gated) cJSON_AddNumberToObject(it, "gate_logit", e->gate[a]); /* on where the logit exceeds it */
        if (e->filtered) { /* the state filter's durations (eval.calibrate_filter) */
            cJSON_AddNumberToObject(it, "fill_s", e->fill_s[a]);
            cJSON_AddNumberToObject(it, "min_on_s", e->min_on_s[a]);
        }
        cJSON_AddItemToArray(arr, it);
    }
    return o;
}

/* NILM: per-appliance metrics on the test split and the held-out households */
static void nilm_evaluate(const char *run_dir, const char *data_file, const gt_eval_model *ems, int n_models,
                          const gt_eval_config *ec, const char *sample, cJSON **data, cJSON **section, MPI_Comm comm) {
    gt_nilm_eval e;
    gt_eval_config ecu = *ec;
    gt_nilm_eval_cfg_set(&ecu)->usage = 1; /* the per-household coverage of eval.json */
    gt_eval_nilm(data_file, ems, n_models, &ecu, sample, comm, &e);
    if (!data) {
        gt_nilm_eval_free(&e);
        return;
    }
    cJSON *d = gt_eval_data_json(data_file, "nilm", e.n_items, e.n_rows, e.n_ranks);
    cJSON *w = cJSON_AddObjectToObject(d, "windows");
    for (int s = 0; s < GT_SPLIT_COUNT; s++)
        cJSON_AddNumberToObject(w, gt_split_name((gt_split)s), (double)e.windows[s]);
    cJSON_AddNumberToObject(d, "eval_stride", (double)e.stride);
    cJSON_AddNumberToObject(d, "window", gt_engine_config(ems[0].e)->window);
    gt_eval_models_json(d, ems, n_models); /* > 1: the ensemble's members */
    cJSON *ms = cJSON_GetObjectItem(d, "models");
    for (int j = 0; j < n_models; j++) { /* trained on these appliances only (data.appliances) */
        const char *apps = gt_nilm_data_cfg(&ems[j].data)->appliances;
        if (apps[0]) cJSON_AddStringToObject(cJSON_GetArrayItem(ms, j), "appliances", apps);
    }
    cJSON *sc = cJSON_AddObjectToObject(d, "screening");
    cJSON_AddNumberToObject(sc, "windows_total", (double)e.screen.windows_total);
    cJSON_AddNumberToObject(sc, "windows_screened_gap", (double)e.screen.windows_screened_gap);
    cJSON_AddNumberToObject(sc, "windows_screened_spike", (double)e.screen.windows_screened_spike);
    cJSON_AddNumberToObject(sc, "spikes_found", (double)e.screen.spikes_found);
    /* which rows evaluation covers, per household: windows on the eval grid (stride), evaluated, and
     * skipped by reason; aggregate samples filled by interpolation (data.fill_max_s) */
    cJSON *us = cJSON_AddArrayToObject(d, "usage");
    int64_t u_tot = 0, u_kept = 0;
    for (int i = 0; e.usage && i < e.n_items; i++) {
        const gt_item_usage *u = &e.usage[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "household_id", (double)u->id);
        cJSON_AddBoolToObject(o, "holdout", u->holdout != 0);
        cJSON_AddNumberToObject(o, "rows", (double)u->rows);
        cJSON_AddNumberToObject(o, "filled", (double)u->filled);
        cJSON_AddNumberToObject(o, "windows", (double)u->windows_total);
        cJSON_AddNumberToObject(o, "evaluated", (double)u->windows_kept);
        cJSON_AddNumberToObject(o, "skipped_gap", (double)u->screened_gap);
        cJSON_AddNumberToObject(o, "skipped_spike", (double)u->screened_spike);
        cJSON_AddItemToArray(us, o);
        u_tot += u->windows_total, u_kept += u->windows_kept;
    }
    cJSON_AddNumberToObject(sc, "coverage", u_tot > 0 ? (double)u_kept / (double)u_tot : 1.0);
    *data = d;
    cJSON *n = *section = cJSON_CreateObject();
    cJSON_AddItemToObject(n, "test", nilm_split_json(&e.test, &e));
    cJSON_AddItemToObject(n, "holdout", nilm_split_json(&e.holdout, &e));
    GT_INFO("eval: %s on %s: test EA %.4f F1 %.4f MAE %.1f W (%lld windows, stride %lld)%s", run_dir, data_file,
            e.test.overall.ea, e.test.overall.f1, e.test.overall.mae_w, (long long)e.test.n_windows,
            (long long)e.stride, e.holdout.present ? "" : "; no held-out households");
    if (e.holdout.present)
        GT_INFO("eval: held-out households: EA %.4f F1 %.4f MAE %.1f W (%lld windows)", e.holdout.overall.ea,
                e.holdout.overall.f1, e.holdout.overall.mae_w, (long long)e.holdout.n_windows);
    /* the overall F1 pools every on sample, so always-on appliances carry it: name the ones never found */
    for (int h = 0; h < 2; h++) {
        const gt_nilm_split_eval *s = h ? &e.holdout : &e.test;
        if (!s->present) continue;
        double f1 = 0;
        int nf = 0, nz = 0;
        char zero[256] = "";
        for (int a = 0; a < e.n_appliances; a++) {
            if (!isfinite(s->app[a].f1)) continue;
            f1 += s->app[a].f1, nf++;
            if (s->app[a].f1 < 0.05) {
                size_t l = strlen(zero);
                if (nz++ < 6) snprintf(zero + l, sizeof zero - l, "%s%s", l ? ", " : "", e.meta[a].name);
            }
        }
        if (nf)
            GT_INFO("eval: %s: macro F1 %.4f over %d appliances%s%s%s", h ? "held-out households" : "test", f1 / nf, nf,
                    nz ? "; F1 below 0.05 (never found): " : "", zero, nz > 6 ? ", ..." : "");
    }
    GT_INFO("eval: %lld of %lld windows on the evaluation grid evaluated (%.1f%%; the rest touch gaps longer than "
            "data.fill_max_s or spikes; per household in eval.json data.usage)",
            (long long)u_kept, (long long)u_tot, u_tot > 0 ? 100.0 * (double)u_kept / (double)u_tot : 100.0);
    gt_nilm_eval_free(&e);
}

/* eval.json eval_config: the NILM settings */
static void nilm_eval_config(cJSON *c, const gt_eval_config *ec) {
    const gt_nilm_eval_config *ncfg = gt_nilm_eval_cfg(ec);
    cJSON_AddNumberToObject(c, "nilm_stride", (double)ncfg->stride);
    cJSON_AddBoolToObject(c, "nilm_off_below_on", ncfg->off_below_on != 0);
    cJSON_AddBoolToObject(c, "nilm_calibrate_gate", ncfg->calibrate_gate != 0);
    cJSON_AddBoolToObject(c, "nilm_calibrate_filter", ncfg->calibrate_filter != 0);
    cJSON_AddNumberToObject(c, "nilm_fill_s", ncfg->fill_s);
    cJSON_AddNumberToObject(c, "nilm_min_on_s", ncfg->min_on_s);
}

/* ---------------------------------------------------------------- report -- */

/* An appliance of eval.json's list with rows evaluated: one the run did not
 * train (data.appliances) or without a true value anywhere has 0 samples (an
 * eval.json without the count: every appliance). */
static int nilm_evaluated(const cJSON *e) { return !(gt_rep_jnum(e, "samples") == 0); }

static void nilm_table(gt_rep *r, const cJSON *split, const char *title) {
    gt_rep_heading(r, 3, title);
    if (!split || cJSON_IsNull(split)) {
        gt_rep_para(r, "No windows in this split (none held out: data.holdout_every = 0, or too short).");
        return;
    }
    const cJSON *ov = gt_rep_jget(split, "overall");
    char a[6][64];
    gt_rep_fmtnum(a[0], 64, gt_rep_jnum(ov, "ea"), "%.4f");
    gt_rep_fmtnum(a[1], 64, gt_rep_jnum(ov, "f1"), "%.4f");
    gt_rep_fmtnum(a[2], 64, gt_rep_jnum(ov, "mae_w"), "%.1f W");
    gt_rep_fmtnum(a[3], 64, gt_rep_jnum(ov, "f1_macro"), "%.4f");
    gt_rep_para(r,
                "Overall over %.0f windows: EA %s, F1 (micro) %s, F1 (macro) %s, MAE %s; %.0f of %.0f appliances with "
                "F1 >= 0.8.",
                gt_rep_jnum(split, "windows"), a[0], a[1], a[3], a[2], gt_rep_jnum(ov, "appliances_f1_ge_0_8"),
                gt_rep_jnum(ov, "appliances_f1_defined"));
    char h[10][64] = {"appliance", "MAE (W)", "SAE", "NDE", "precision", "recall", "F1", "EA", "true kWh", "pred kWh"};
    gt_rep_row(r, 1, 10, h);
    const cJSON *arr = gt_rep_jget(split, "appliances"), *e;
    char skipped[2048] = "";
    cJSON_ArrayForEach(e, arr) {
        char c[10][64];
        if (!nilm_evaluated(e)) {
            size_t n = strlen(skipped);
            snprintf(skipped + n, sizeof skipped - n, "%s%s", n ? ", " : "", gt_rep_jstr(e, "name", "?"));
            continue;
        }
        snprintf(c[0], 64, "%s", gt_rep_jstr(e, "name", "?"));
        gt_rep_fmtnum(c[1], 64, gt_rep_jnum(e, "mae_w"), "%.1f");
        gt_rep_fmtnum(c[2], 64, gt_rep_jnum(e, "sae"), "%.3f");
        gt_rep_fmtnum(c[3], 64, gt_rep_jnum(e, "nde"), "%.3f");
        gt_rep_fmtnum(c[4], 64, gt_rep_jnum(e, "precision"), "%.3f");
        gt_rep_fmtnum(c[5], 64, gt_rep_jnum(e, "recall"), "%.3f");
        gt_rep_fmtnum(c[6], 64, gt_rep_jnum(e, "f1"), "%.3f");
        gt_rep_fmtnum(c[7], 64, gt_rep_jnum(e, "ea"), "%.3f");
        gt_rep_fmtnum(c[8], 64, gt_rep_jnum(e, "energy_true_wh") / 1000, "%.2f");
        gt_rep_fmtnum(c[9], 64, gt_rep_jnum(e, "energy_pred_wh") / 1000, "%.2f");
        gt_rep_row(r, 0, 10, c);
    }
    snprintf(h[0], 64, "overall");
    gt_rep_fmtnum(h[1], 64, gt_rep_jnum(ov, "mae_w"), "%.1f");
    gt_rep_fmtnum(h[2], 64, gt_rep_jnum(ov, "sae"), "%.3f");
    gt_rep_fmtnum(h[3], 64, gt_rep_jnum(ov, "nde"), "%.3f");
    gt_rep_fmtnum(h[4], 64, gt_rep_jnum(ov, "precision"), "%.3f");
    gt_rep_fmtnum(h[5], 64, gt_rep_jnum(ov, "recall"), "%.3f");
    gt_rep_fmtnum(h[6], 64, gt_rep_jnum(ov, "f1"), "%.3f");
    gt_rep_fmtnum(h[7], 64, gt_rep_jnum(ov, "ea"), "%.3f");
    gt_rep_fmtnum(h[8], 64, gt_rep_jnum(ov, "energy_true_wh") / 1000, "%.2f");
    gt_rep_fmtnum(h[9], 64, gt_rep_jnum(ov, "energy_pred_wh") / 1000, "%.2f");
    gt_rep_row(r, 0, 10, h);
    gt_rep_end(r);
    if (skipped[0])
        gt_rep_para(r, "Not evaluated (not among the appliances the run trained, data.appliances, or no true value "
                       "in this split): %s.", skipped);
}

/* The ensemble of eval.models: its members and the appliances each was trained on. */
static void nilm_ensemble_para(gt_rep *r, const cJSON *models) {
    char txt[4096] = "";
    size_t len = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, models) {
        if (len < sizeof txt)
            len += (size_t)snprintf(txt + len, sizeof txt - len, "%s%s%s%s%s", len ? ", " : "",
                                    gt_rep_jstr(e, "name", "?"), gt_rep_jget(e, "appliances") ? " (" : "",
                                    gt_rep_jstr(e, "appliances", ""), gt_rep_jget(e, "appliances") ? ")" : "");
    }
    gt_rep_para(
        r,
        "Ensemble of %d models (eval.models), outputs averaged per appliance over the members trained on it "
        "(power in W, gated head: on-probability): %s.",
        cJSON_GetArraySize(models), txt);
}

/* The state filter applied: eval.fill_s / eval.min_on_s, or the durations eval.calibrate_filter chose. */
static void nilm_filter_paras(gt_rep *r, const cJSON *ev, const cJSON *test) {
    const int cal_filter = cJSON_IsTrue(gt_rep_jget(ev, "eval_config.nilm_calibrate_filter"));
    if (!cal_filter &&
        (gt_rep_jnum(ev, "eval_config.nilm_fill_s") > 0 || gt_rep_jnum(ev, "eval_config.nilm_min_on_s") > 0))
        gt_rep_para(r,
                    "States filtered (eval.fill_s, eval.min_on_s): off gaps up to %g s closed, on runs shorter than "
                    "%g s removed, every appliance.",
                    gt_rep_jnum(ev, "eval_config.nilm_fill_s"), gt_rep_jnum(ev, "eval_config.nilm_min_on_s"));
    if (cal_filter && test && !cJSON_IsNull(test)) {
        char txt[4096] = "";
        size_t len = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, gt_rep_jget(test, "appliances")) {
            if (len < sizeof txt)
                len +=
                    (size_t)snprintf(txt + len, sizeof txt - len, "%s%s %.0f s / %.0f s", len ? ", " : "",
                                     gt_rep_jstr(e, "name", "?"), gt_rep_jnum(e, "fill_s"), gt_rep_jnum(e, "min_on_s"));
        }
        gt_rep_para(r,
                    "States filtered (eval.calibrate_filter): off gaps up to the first duration closed, on runs "
                    "shorter than the second removed, durations chosen on the validation split: %s.",
                    txt);
    }
}

/* The per-appliance F1 / EA bars of the test split: plots/nilm_f1_ea.dat and its gnuplot script. */
static void nilm_f1_ea_plot(gt_rep *r, const cJSON *test) {
    char dat[PATH_MAX + 64];
    snprintf(dat, sizeof dat, "%s/plots/nilm_f1_ea.dat", r->dir);
    FILE *o = gt_fopen_atomic(dat, 0);
    if (o) {
        /* numbers only in the data file; the names are the xtics of the
         * script, as gnuplot single-quoted strings */
        const cJSON *e;
        const cJSON *apps = gt_rep_jget(test, "appliances");
        size_t cap = 1024 + (size_t)cJSON_GetArraySize(apps) * (2 * GT_REPORT_NAME + 16);
        char *body = GT_MALLOC(cap), q[2 * GT_REPORT_NAME];
        size_t len =
            (size_t)snprintf(body, cap,
                             "set title 'per-appliance F1 and EA (test split)'\nset style data histograms\n"
                             "set style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
                             "set yrange [-1:1.05]\nset ytics 0.1\nset xtics rotate by -45 (");
        int i = 0;
        fputs("# index f1 ea (names: the xtics of nilm_f1_ea.gp)\n", o);
        cJSON_ArrayForEach(e, apps) {
            if (!nilm_evaluated(e)) continue; /* no bars and no name for it */
            double f1 = gt_rep_jnum(e, "f1"), ea = gt_rep_jnum(e, "ea");
            fprintf(o, "%d ", i);
            if (isfinite(f1))
                fprintf(o, "%.4f ", f1);
            else
                fputs("NaN ", o);
            if (isfinite(ea))
                fprintf(o, "%.4f\n", ea);
            else
                fputs("NaN\n", o);
            gt_esc_gnuplot(q, sizeof q, gt_rep_jstr(e, "name", "?"));
            int w = snprintf(body + len, cap - len, "%s'%s' %d", i ? ", " : "", q, i);
            len = w > 0 && len + (size_t)w < cap ? len + (size_t)w : cap - 1;
            i++;
        }
        fclose(o);
        snprintf(body + len, cap - len,
                 ")\nplot 'nilm_f1_ea.dat' using 2 title 'F1', '' using 3 title 'EA', 0.8 with lines dt 2 lc rgb "
                 "'black' title 'F1 target 0.8'");
        gt_rep_plot(r, "nilm_f1_ea", "per-appliance F1 and EA", body);
        free(body);
    }
}

/* The sample day: eval_sample.csv's aggregate and the 3 appliances of most true energy, true vs predicted. */
static void nilm_sample_plot(gt_rep *r) {
    char csv[PATH_MAX + 64];
    snprintf(csv, sizeof csv, "%s/eval_sample.csv", r->dir);
    FILE *f = fopen(csv, "r");
    if (!f) return;
    char hdr[8192];
    if (!fgets(hdr, sizeof hdr, f)) {
        fclose(f);
        return;
    }
    /* columns: 1 time, 2 aggregate, then true_a pred_a pairs: pick the 3 largest true energies among the
     * appliances this household uses in the sample (an appliance it does not own, or one not evaluated:
     * data.appliances, NaN, has none) */
    double sums[64] = {0}, last_h = 0;
    int ncol = 0;
    char line[8192];
    while (fgets(line, sizeof line, f)) {
        char *s = line, *end;
        int c = 0;
        for (;;) {
            double v = strtod(s, &end);
            if (end == s) break;
            if (c == 0 && isfinite(v)) last_h = v;
            if (c >= 2 && (c - 2) % 2 == 0 && (c - 2) / 2 < 64 && isfinite(v)) sums[(c - 2) / 2] += v;
            c++;
            s = end;
        }
        if (c > ncol) ncol = c;
    }
    fclose(f);
    int A = (ncol - 2) / 2, top[3] = {-1, -1, -1};
    for (int k = 0; k < 3; k++)
        for (int a = 0; a < A && a < 64; a++) {
            if (a == top[0] || a == top[1] || !(sums[a] > 0)) continue;
            if (top[k] < 0 || sums[a] > sums[top[k]]) top[k] = a;
        }
    /* which household and hours: "# household id I (file index N) from ISO; columns: ..." and the last time_h */
    long long hid = -1;
    int file_index = -1;
    char from[32] = "";
    if (sscanf(hdr, "# household id %lld (file index %d) from %31[0-9T:Z-]", &hid, &file_index, from) < 1) hid = -1;
    double span_h = last_h;
    /* names from the header: "# ... time_h aggregate_w true_x pred_x ..." */
    char names[64][48];
    int nn = 0;
    char *save = NULL;
    for (char *tok = strtok_r(hdr, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
        if (!strncmp(tok, "true_", 5) && nn < 64) gt_esc_gnuplot(names[nn++], sizeof names[0], tok + 5);
    char what[160];
    if (span_h >= 23.5)
        snprintf(what, sizeof what, "one day");
    else
        snprintf(what, sizeof what, "%.1f h (the whole test split of this household)", span_h);
    char body[4 * PATH_MAX + 2048];
    int len = snprintf(body, sizeof body,
                       "set title '%s of test household %lld%s%s: true (shaded) vs predicted (line)'\n"
                       "set xlabel 'hours from the start of the sample'\nset ylabel 'W'\nset style fill transparent "
                       "solid 0.3 noborder\n"
                       "plot '../eval_sample.csv' using 1:2 with lines lc rgb '#bbbbbb' title 'aggregate'",
                       what, hid, *from ? ", from " : "", from);
    const char *col[3] = {"#1f77b4", "#d62728", "#2ca02c"};
    for (int k = 0; k < 3; k++) {
        if (top[k] < 0 || top[k] >= nn) continue;
        len += snprintf(
            body + len, sizeof body - (size_t)len,
            ", '' using 1:%d with filledcurves y1=0 lc rgb '%s' title '%s true', '' using 1:%d with lines lw 2 "
            "lc rgb '%s' title '%s predicted'",
            3 + 2 * top[k], col[k], names[top[k]], 4 + 2 * top[k], col[k], names[top[k]]);
    }
    gt_rep_plot(r, "nilm_sample", "predicted vs true power of one test household", body);
}

static void sec_nilm(gt_rep *r, const cJSON *ev) {
    gt_rep_heading(r, 2, "Disaggregation results");
    gt_rep_para(r, "Per appliance on the later time of the training households (test) and on held-out households. "
                   "EA = 1 - sum|yhat - y| / (2 sum y); F1 of the on/off state (on = above the appliance's on-power). "
                   "n/a = undefined (no true energy or never on). Definitions: docs/evaluation.md.");
    const cJSON *test = gt_rep_jget(ev, "nilm.test"), *hold = gt_rep_jget(ev, "nilm.holdout");
    const cJSON *models = gt_rep_jget(ev, "data.models");
    if (cJSON_GetArraySize(models) > 1) /* eval.models: an ensemble */
        nilm_ensemble_para(r, models);
    nilm_filter_paras(r, ev, test);
    nilm_table(r, test, "Test split (held-out time)");
    nilm_table(r, hold, "Held-out households");
    /* F1 / EA bars */
    if (test && !cJSON_IsNull(test)) nilm_f1_ea_plot(r, test);
    /* sample day */
    nilm_sample_plot(r);
}

/* a sweep's report columns (doe/): eval.json's nilm.<key> */
static const gt_eval_report_metric nilm_report_metrics[] = {
    {"test.overall.mae_w", "MAE (W)", 0, 1},
    {"test.overall.sae", "SAE", 0, 1},
    {"test.overall.nde", "NDE", 0, 1},
    {"test.overall.precision", "precision", 1, 1},
    {"test.overall.recall", "recall", 1, 1},
    {"test.overall.f1", "F1", 1, 1},
    {"test.overall.ea", "energy accuracy", 1, 1},
    {NULL, NULL, 0, 0},
};

const gt_eval_task_i gt_eval_task_nilm = {
    .name = "nilm",
    .items = "households",
    .sample_file = "eval_sample.csv",
    .evaluate = nilm_evaluate,
    .predict = gt_predict_nilm,
    .eval_config = nilm_eval_config,
    .report = sec_nilm,
    .config_bytes = sizeof(gt_nilm_eval_config),
    .config_defaults = gt_nilm_eval_config_defaults,
    .headline_metric = "nilm.test.overall.f1",
    .report_metrics = nilm_report_metrics,
};
