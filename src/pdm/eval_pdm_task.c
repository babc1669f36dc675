/* pdm/eval_pdm_task.c: PdM's evaluation side (eval/eval_task.h gt_eval_task_i):
 * what eval.json holds of a PdM evaluation (data, "pdm", its eval_config
 * keys), the report's anomaly detection section and what a sweep's report
 * (doe/) takes of it: its columns and a cell's CARE event, read back from
 * the section. The evaluation itself is eval_pdm.c. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "core/check.h"
#include "core/escape.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "eval/eval_impl.h"
#include "pdm/pdm_impl.h"
#include "eval/eval_task.h"
#include "eval/report_section.h"
#include "pdm/pdm.h"

/* ------------------------------------------------------------- eval.json -- */

static cJSON *pdm_acc_json(const gt_pdm_acc *a) {
    gt_pdm_metrics m;
    gt_pdm_metrics_from_acc(a, &m);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "n_events", m.n_events);
    cJSON_AddNumberToObject(o, "n_detected", m.n_detected);
    gt_eval_num(o, "recall", m.event_recall);
    cJSON_AddNumberToObject(o, "n_anomaly_events", m.n_anomaly_events);
    cJSON_AddNumberToObject(o, "n_anomaly_detected", m.n_anomaly_detected);
    gt_eval_num(o, "anomaly_recall", m.anomaly_recall);
    gt_eval_num(o, "precision", m.event_precision);
    gt_eval_num(o, "f05", m.event_f05);
    gt_eval_num(o, "false_alarms_per_turbine_day", m.false_alarms_per_turbine_day);
    gt_eval_num(o, "detection_delay_s_mean", m.detection_delay_s_mean);
    gt_eval_num(o, "turbine_days", m.turbine_days);
    cJSON_AddNumberToObject(o, "n_alarms", a->n_alarms);
    cJSON_AddNumberToObject(o, "n_false_alarms", a->n_alarms - a->n_alarms_true);
    gt_eval_num(o, "point_precision", m.point_precision);
    gt_eval_num(o, "point_recall", m.point_recall);
    gt_eval_num(o, "point_f05", m.point_f05);
    gt_eval_num(o, "accuracy_normal", m.accuracy);
    gt_eval_num(o, "earliness", m.earliness);
    gt_eval_num(o, "care_score", m.care);
    return o;
}

/* threshold, detector, calibration and envelope settings of the evaluation */
static void pdm_calibration_json(cJSON *o, const gt_pdm_eval *e, const gt_eval_config *ec) {
    const gt_pdm_eval_config *pcfg = gt_pdm_eval_cfg(ec);
    gt_eval_num(o, "threshold", e->threshold);
    /* which detector scored (docs/evaluation.md, Two detectors) */
    cJSON_AddStringToObject(o, "detector", e->pdm_target < 0 ? "mixed" : gt_pdm_target_name(e->pdm_target));
    cJSON *cal = cJSON_AddObjectToObject(o, "calibration");
    cJSON_AddStringToObject(cal, "method",
                            "max(margin x level (eval.level: quantile = the empirical quantile, robust = median + "
                            "3 x 1.4826 MAD) of the validation scores, the smallest threshold "
                            "with at most val_false_alarms alarms per turbine-day on the validation rows); "
                            "validation = normal rows of the training turbines");
    cJSON_AddStringToObject(cal, "rows", pcfg->calibrate_train ? "train_val" : "val");
    cJSON_AddBoolToObject(cal, "turbine_offset", pcfg->turbine_offset);
    cJSON_AddStringToObject(cal, "level", e->level == GT_PDM_LEVEL_ROBUST ? "robust" : "quantile"); /* as used */
    cJSON_AddNumberToObject(cal, "quantile", pcfg->quantile);
    gt_eval_num(cal, "quantile_value", e->quantile_value);
    cJSON_AddBoolToObject(cal, "flat_line", pcfg->flat_line);
    cJSON_AddBoolToObject(cal, "nbm_linear", pcfg->nbm_linear);
    cJSON_AddNumberToObject(cal, "margin", pcfg->margin);
    cJSON_AddNumberToObject(cal, "val_false_alarms_per_turbine_day", pcfg->val_false_alarms);
    cJSON_AddNumberToObject(cal, "n_val_scores", (double)e->n_val_scores);
    cJSON_AddNumberToObject(cal, "channel_quantile", pcfg->channel_quantile);
    cJSON *env = cJSON_AddObjectToObject(o, "envelope"); /* eval.envelope: rows not scored */
    cJSON_AddNumberToObject(env, "margin", pcfg->envelope);
    cJSON_AddNumberToObject(env, "rows_not_scored", (double)e->envelope.rows_out);
    cJSON_AddNumberToObject(env, "rows_scored_before", (double)e->envelope.rows_scored);
    if (e->envelope.channel >= 0) cJSON_AddStringToObject(env, "channel", e->envelope.channel_name);
    if (pcfg->ewma_s < 0)
        cJSON_AddStringToObject(cal, "ewma_s", "auto");
    else
        cJSON_AddNumberToObject(cal, "ewma_s", pcfg->ewma_s);
    static const char *const score_names[3] = {"auto", "mean", "channel"};
    cJSON_AddStringToObject(cal, "score", score_names[pcfg->score >= 0 && pcfg->score < 3 ? pcfg->score : 0]);
    if (pcfg->score == GT_PDM_SCORE_AUTO) /* as resolved for the detector */
        cJSON_AddStringToObject(cal, "score_used", e->pdm_target == GT_PDM_TARGET_NBM ? "channel" : "mean");
    cJSON_AddNumberToObject(cal, "min_duration_s", pcfg->min_duration_s);
    cJSON_AddNumberToObject(cal, "merge_gap_s", pcfg->merge_gap_s);
    cJSON_AddNumberToObject(cal, "models", e->n_models);
}

/* "care_protocol": the per-event results and their summary */
static void pdm_care_protocol_json(cJSON *o, const gt_pdm_eval *e) {
    /* the CARE to Compare protocol as its authors define it (Gueck et al. 2024, docs/evaluation.md) */
    const gt_care_protocol *cp = &e->care_protocol;
    cJSON *pr = cJSON_AddObjectToObject(o, "care_protocol");
    gt_eval_num(pr, "score", cp->score);
    gt_eval_num(pr, "coverage", cp->coverage);
    gt_eval_num(pr, "accuracy", cp->accuracy);
    gt_eval_num(pr, "reliability", cp->reliability);
    gt_eval_num(pr, "earliness", cp->earliness);
    cJSON_AddNumberToObject(pr, "criticality_threshold", GT_CARE_CRITICALITY_THRESHOLD);
    cJSON_AddNumberToObject(pr, "n_events", cp->n_events);
    cJSON_AddNumberToObject(pr, "n_anomaly", cp->n_anomaly);
    cJSON_AddNumberToObject(pr, "n_normal", cp->n_normal);
    cJSON_AddNumberToObject(pr, "n_detected", cp->n_detected);
    if (cp->reason)
        cJSON_AddStringToObject(pr, "reason", cp->reason);
    else
        cJSON_AddNullToObject(pr, "reason");
    cJSON *pe = cJSON_AddArrayToObject(pr, "events");
    for (int i = 0; i < e->n_care_events; i++) {
        const gt_pdm_care_event *c = &e->care_events[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "event_id", (double)c->event_id);
        cJSON_AddNumberToObject(
            j, "turbine_id",
            c->file_index >= 0 && c->file_index < e->n_turbines ? (double)e->turbines[c->file_index].id : -1);
        cJSON_AddStringToObject(j, "label", c->r.anomaly ? "anomaly" : "normal");
        cJSON_AddBoolToObject(j, "evaluated", c->evaluated);
        cJSON_AddBoolToObject(j, "detected", c->r.detected);
        gt_eval_num(j, "max_criticality", c->r.max_criticality);
        gt_eval_num(j, "coverage", c->r.coverage);
        gt_eval_num(j, "accuracy", c->r.accuracy);
        gt_eval_num(j, "earliness", c->r.earliness);
        cJSON_AddNumberToObject(j, "rows", (double)c->n_rows);
        cJSON_AddNumberToObject(j, "rows_in_training", (double)c->rows_in_training);
        cJSON_AddItemToArray(pe, j);
    }
}

static cJSON *pdm_json(const gt_pdm_eval *e, const gt_eval_config *ec) {
    cJSON *o = cJSON_CreateObject();
    const gt_pdm_metrics *m = &e->overall;
    pdm_calibration_json(o, e, ec);
    cJSON *pt = cJSON_AddObjectToObject(o, "point");
    gt_eval_num(pt, "precision", m->point_precision);
    gt_eval_num(pt, "recall", m->point_recall);
    gt_eval_num(pt, "f05", m->point_f05);
    gt_eval_num(pt, "accuracy_normal", m->accuracy);
    cJSON *ev = cJSON_AddObjectToObject(o, "event");
    cJSON_AddNumberToObject(ev, "n_events", m->n_events);
    cJSON_AddNumberToObject(ev, "n_detected", m->n_detected);
    gt_eval_num(ev, "recall", m->event_recall);
    cJSON_AddNumberToObject(ev, "n_anomaly_events", m->n_anomaly_events);
    cJSON_AddNumberToObject(ev, "n_anomaly_detected", m->n_anomaly_detected);
    gt_eval_num(ev, "anomaly_recall", m->anomaly_recall);
    gt_eval_num(ev, "precision", m->event_precision);
    gt_eval_num(ev, "f05", m->event_f05);
    gt_eval_num(ev, "false_alarms_per_turbine_day", m->false_alarms_per_turbine_day);
    gt_eval_num(ev, "detection_delay_s_mean", m->detection_delay_s_mean);
    gt_eval_num(ev, "turbine_days", m->turbine_days);
    cJSON_AddNumberToObject(ev, "n_alarms", e->acc.n_alarms);
    cJSON_AddNumberToObject(ev, "n_false_alarms", e->acc.n_alarms - e->acc.n_alarms_true);
    gt_eval_num(ev, "earliness", m->earliness);
    cJSON *bt = cJSON_AddArrayToObject(o, "by_turbine");
    for (int f = 0; f < e->n_turbines; f++) {
        const gt_pdm_turbine_eval *t = &e->turbines[f];
        cJSON *j = pdm_acc_json(&t->acc);
        cJSON_AddNumberToObject(j, "id", (double)t->id);
        cJSON_AddNumberToObject(j, "farm", t->farm);
        cJSON_AddNumberToObject(j, "machine_type", t->machine_type);
        cJSON_AddBoolToObject(j, "holdout", t->holdout);
        cJSON_AddBoolToObject(j, "evaluated", !t->skipped);
        cJSON_AddItemToArray(bt, j);
    }
    cJSON *by = cJSON_AddObjectToObject(o, "by_machine_type");
    for (int k = 0; k < e->n_types; k++)
        if (e->by_type[k].rows > 0) cJSON_AddItemToObject(by, e->type_names[k], pdm_acc_json(&e->by_type[k]));
    cJSON *bc = cJSON_AddObjectToObject(o, "by_condition");
    for (int k = 0; k < e->n_conds; k++)
        if (e->by_cond[k].rows > 0) cJSON_AddItemToObject(bc, e->cond_names[k], pdm_acc_json(&e->by_cond[k]));
    gt_eval_num(o, "care_score", m->care);
    cJSON *care = cJSON_AddObjectToObject(o, "care");
    gt_eval_num(care, "coverage_point_f05", m->point_f05);
    gt_eval_num(care, "accuracy_normal", m->accuracy);
    gt_eval_num(care, "reliability_event_f05", m->event_f05);
    gt_eval_num(care, "earliness", m->earliness);
    cJSON_AddStringToObject(care, "formula",
                            "(coverage + 2 accuracy + reliability + earliness) / 5; accuracy if accuracy < 0.5");
    cJSON_AddStringToObject(care, "note",
                            "gridtrain's own combination of its point and event metrics; the authors' "
                            "protocol is care_protocol");
    pdm_care_protocol_json(o, e);
    return o;
}

/* PdM: calibrated alarms, point and event metrics, CARE */
static void pdm_evaluate(const char *run_dir, const char *data_file, const gt_eval_model *ems, int n_models,
                         const gt_eval_config *ec, const char *sample, cJSON **data, cJSON **section, MPI_Comm comm) {
    gt_pdm_eval e;
    gt_eval_pdm(data_file, ems, n_models, ec, sample, comm, &e);
    if (data) {
        cJSON *d = gt_eval_data_json(data_file, "pdm", e.n_turbines, e.n_rows, e.n_ranks);
        gt_eval_models_json(d, ems, n_models);
        *data = d;
        *section = pdm_json(&e, ec);
        GT_INFO("eval: %s on %s: %g/%g events detected (recall %.3f; anomaly events %g/%g), %.2f false alarms "
                "per turbine-day, point F0.5 %.3f, CARE-style %.3f, threshold %.5g",
                run_dir, data_file, e.overall.n_detected, e.overall.n_events, e.overall.event_recall,
                e.overall.n_anomaly_detected, e.overall.n_anomaly_events, e.overall.false_alarms_per_turbine_day,
                e.overall.point_f05, e.overall.care, e.threshold);
    }
    gt_pdm_eval_free(&e);
}

/* eval.json eval_config: the PdM settings */
static void pdm_eval_config(cJSON *c, const gt_eval_config *ec) {
    const gt_pdm_eval_config *pcfg = gt_pdm_eval_cfg(ec);
    cJSON_AddNumberToObject(c, "pdm_quantile", pcfg->quantile);
    cJSON_AddNumberToObject(c, "pdm_margin", pcfg->margin);
    cJSON_AddNumberToObject(c, "pdm_val_false_alarms", pcfg->val_false_alarms);
    cJSON_AddNumberToObject(c, "pdm_ewma_s", pcfg->ewma_s); /* -1: auto */
    cJSON_AddNumberToObject(c, "pdm_channel_quantile", pcfg->channel_quantile);
    cJSON_AddNumberToObject(c, "pdm_envelope", pcfg->envelope);
    cJSON_AddNumberToObject(c, "pdm_score", pcfg->score);
    cJSON_AddNumberToObject(c, "pdm_min_duration_s", pcfg->min_duration_s);
    cJSON_AddNumberToObject(c, "pdm_merge_gap_s", pcfg->merge_gap_s);
    cJSON_AddStringToObject(c, "pdm_level", pcfg->level == GT_PDM_LEVEL_ROBUST ? "robust" : "quantile"); /* eval.level */
    cJSON_AddBoolToObject(c, "pdm_flat_line", pcfg->flat_line);                                        /* eval.flat_line */
    cJSON_AddBoolToObject(c, "pdm_nbm_linear", pcfg->nbm_linear);                                      /* eval.nbm_linear */
}

/* ---------------------------------------------------------------- report -- */

static void pdm_group_table(gt_rep *r, const cJSON *obj, const char *title, const char *keyname) {
    gt_rep_heading(r, 3, title);
    char h[9][64] = {"",          "events",     "detected", "recall",      "false alarms / turbine-day",
                     "delay (s)", "point F0.5", "CARE-style", "turbine-days"};
    snprintf(h[0], 64, "%s", keyname);
    gt_rep_row(r, 1, 9, h);
    const cJSON *e;
    cJSON_ArrayForEach(e, obj) {
        char c[9][64];
        if (cJSON_IsNumber(gt_rep_jget(e, "id")))
            snprintf(c[0], 64, "%.0f%s", gt_rep_jnum(e, "id"),
                     cJSON_IsTrue(gt_rep_jget(e, "holdout")) ? " (held out)" : "");
        else
            snprintf(c[0], 64, "%s", e->string ? e->string : "?");
        gt_rep_fmtnum(c[1], 64, gt_rep_jnum(e, "n_events"), "%.0f");
        gt_rep_fmtnum(c[2], 64, gt_rep_jnum(e, "n_detected"), "%.0f");
        gt_rep_fmtnum(c[3], 64, gt_rep_jnum(e, "recall"), "%.3f");
        gt_rep_fmtnum(c[4], 64, gt_rep_jnum(e, "false_alarms_per_turbine_day"), "%.2f");
        gt_rep_fmtnum(c[5], 64, gt_rep_jnum(e, "detection_delay_s_mean"), "%.1f");
        gt_rep_fmtnum(c[6], 64, gt_rep_jnum(e, "point_f05"), "%.3f");
        gt_rep_fmtnum(c[7], 64, gt_rep_jnum(e, "care_score"), "%.3f");
        gt_rep_fmtnum(c[8], 64, gt_rep_jnum(e, "turbine_days"), "%.2f");
        gt_rep_row(r, 0, 9, c);
    }
    gt_rep_end(r);
}

static void sec_pdm(gt_rep *r, const cJSON *ev) {
    gt_rep_heading(r, 2, "Anomaly detection results");
    const cJSON *p = gt_rep_jget(ev, "pdm");
    if (!p || cJSON_IsNull(p)) return;
    char a[10][64];
    gt_rep_fmtnum(a[0], 64, gt_rep_jnum(p, "threshold"), "%.5g");
    gt_rep_fmtnum(a[1], 64, gt_rep_jnum(p, "calibration.quantile"), "%g");
    gt_rep_fmtnum(a[2], 64, gt_rep_jnum(p, "calibration.margin"), "%g");
    gt_rep_fmtnum(a[3], 64, gt_rep_jnum(p, "calibration.val_false_alarms_per_turbine_day"), "%g");
    gt_rep_fmtnum(a[4], 64, gt_rep_jnum(p, "calibration.quantile_value"), "%.5g");
    char lv[192];
    if (!strcmp(gt_rep_jstr(p, "calibration.level", "quantile"), "robust"))
        snprintf(lv, sizeof lv, "robust level (median + 3 x 1.4826 MAD: %s)", a[4]);
    else
        snprintf(lv, sizeof lv, "%s quantile (%s)", a[1], a[4]);
    const cJSON *fl = gt_rep_jget(p, "calibration.flat_line");
    gt_rep_para(
        r,
        "Evaluation rows: the test split of the training turbines and all rows of held-out turbines. Threshold %s: "
        "%s x the %s of the smoothed scores of the calibration rows (%s split, normal operation, "
        "training turbines), raised if needed until those rows raise at most %s alarms per turbine-day%s.",
        a[0], a[2], lv, gt_rep_jstr(p, "calibration.rows", "val"), a[3],
        !fl ? "" : cJSON_IsTrue(fl) ? "; the score includes the flat-line term (eval.flat_line)"
                                    : "; no flat-line term (eval.flat_line = false)");
    gt_rep_fmtnum(a[0], 64, gt_rep_jnum(p, "event.recall"), "%.3f");
    gt_rep_fmtnum(a[1], 64, gt_rep_jnum(p, "event.false_alarms_per_turbine_day"), "%.2f");
    gt_rep_fmtnum(a[2], 64, gt_rep_jnum(p, "event.detection_delay_s_mean"), "%.1f s");
    gt_rep_fmtnum(a[3], 64, gt_rep_jnum(p, "point.precision"), "%.3f");
    gt_rep_fmtnum(a[4], 64, gt_rep_jnum(p, "point.recall"), "%.3f");
    gt_rep_fmtnum(a[5], 64, gt_rep_jnum(p, "point.f05"), "%.3f");
    gt_rep_fmtnum(a[6], 64, gt_rep_jnum(p, "care_score"), "%.3f");
    gt_rep_fmtnum(a[7], 64, gt_rep_jnum(p, "event.precision"), "%.3f");
    gt_rep_para(
        r,
        "Events: %.0f of %.0f detected (recall %s), alarm precision %s, %s false alarms per turbine-day over %.2f "
        "turbine-days, mean detection delay %s. Per step: precision %s, recall %s, F0.5 %s. CARE-style score %s "
        "(gridtrain's combination of these metrics, not the authors' CARE score: that is care_protocol).",
        gt_rep_jnum(p, "event.n_detected"), gt_rep_jnum(p, "event.n_events"), a[0], a[7], a[1],
        gt_rep_jnum(p, "event.turbine_days"), a[2], a[3], a[4], a[5], a[6]);
    if (gt_rep_jnum(p, "event.n_anomaly_events") <
        gt_rep_jnum(p, "event.n_events")) { /* status periods among the events */
        char ar[64];
        gt_rep_fmtnum(ar, 64, gt_rep_jnum(p, "event.anomaly_recall"), "%.3f");
        gt_rep_para(r,
                    "Of the events, %.0f are anomaly events and %.0f operating-status periods (derated, service, "
                    "downtime: /legend/event_kind status_*): anomaly events %.0f of %.0f detected (recall %s).",
                    gt_rep_jnum(p, "event.n_anomaly_events"),
                    gt_rep_jnum(p, "event.n_events") - gt_rep_jnum(p, "event.n_anomaly_events"),
                    gt_rep_jnum(p, "event.n_anomaly_detected"), gt_rep_jnum(p, "event.n_anomaly_events"), ar);
    }
    pdm_group_table(r, gt_rep_jget(p, "by_turbine"), "Per turbine", "turbine");
    pdm_group_table(r, gt_rep_jget(p, "by_machine_type"), "Per machine type", "machine type");
    pdm_group_table(r, gt_rep_jget(p, "by_condition"), "Per operating condition", "condition");
    char csv[PATH_MAX + 64];
    snprintf(csv, sizeof csv, "%s/eval_scores.csv", r->dir);
    if (access(csv, R_OK) == 0 && isfinite(gt_rep_jnum(p, "threshold"))) {
        char body[1024];
        snprintf(
            body, sizeof body,
            "set title 'anomaly score of one evaluation turbine (shaded: labelled events)'\nset xlabel 'hours'\n"
            "set ylabel 'score'\nset logscale y\nthr = %.9g\nstats '../eval_scores.csv' using 2 nooutput\nymax = "
            "STATS_max * 2\n"
            "set style fill transparent solid 0.3 noborder\n"
            "plot '../eval_scores.csv' using 1:($3 > 0 ? ymax : 1/0) with impulses lc rgb '#ff9999' title 'event', "
            "'' using 1:2 with lines lc rgb '#1f77b4' title 'score', thr with lines lw 2 dt 2 lc rgb 'black' title "
            "'threshold'",
            gt_rep_jnum(p, "threshold"));
        gt_rep_plot(r, "pdm_scores", "anomaly score with threshold and events", body);
    }
}

/* what shaped a PdM cell's result, stated once in a sweep's report */
static const char *const pdm_sweep_settings[] = {
    "pdm_level",           "eval.level",     "pdm_flat_line",        "eval.flat_line",
    "pdm_quantile",        "eval.quantile",  "pdm_margin",           "eval.margin",
    "pdm_val_false_alarms", "eval.val_false_alarms", "pdm_channel_quantile", "eval.channel_quantile",
    "pdm_envelope",        "eval.envelope",  "pdm_nbm_linear",       "eval.nbm_linear",
    NULL,
};

/* ------------------------------------------------------------ a sweep -- */

/* a sweep's report columns (doe/): eval.json's pdm.<key> */
static const gt_eval_report_metric pdm_report_metrics[] = {
    {"event.recall", "event recall", 1, 1},
    {"event.precision", "event precision", 1, 1},
    {"event.f05", "event F0.5", 1, 1},
    {"event.false_alarms_per_turbine_day", "false alarms/turbine-day", 0, 1},
    {"event.detection_delay_s_mean", "detection delay (s)", 0, 1},
    {"point.f05", "point F0.5", 1, 1},
    {"care_score", "CARE-style score (gridtrain's)", 1, 1},
    {"care_protocol.score", "CARE score (authors' protocol)", 1, 1},
    {NULL, NULL, 0, 0},
};

static double jnum(const cJSON *o, const char *k) {
    const cJSON *x = cJSON_GetObjectItem(o, k);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

/* A sweep's CARE protocol: the evaluated entry of event dataset `id` in the
 * section pdm_care_protocol_json and pdm_json wrote (care_protocol.events),
 * the turbine's farm (by_turbine) and the cell's event totals (event). */
static int pdm_care_cell(const cJSON *sec, int64_t id, gt_eval_care_cell *e, char *err, size_t en) {
    const cJSON *evs = cJSON_GetObjectItem(cJSON_GetObjectItem(sec, "care_protocol"), "events"), *x, *hit = NULL;
    cJSON_ArrayForEach(x, evs) {
        if (jnum(x, "event_id") == (double)id && cJSON_IsTrue(cJSON_GetObjectItem(x, "evaluated"))) hit = x;
    }
    if (!hit) {
        snprintf(err, en, "no evaluated CARE event dataset %lld in %s.care_protocol.events (was the cell trained "
                 "and evaluated with data.care_event = %lld?)", (long long)id, gt_eval_task_pdm.name, (long long)id);
        return -1;
    }
    memset(e, 0, sizeof *e);
    e->turbine_id = (int64_t)jnum(hit, "turbine_id");
    const cJSON *lab = cJSON_GetObjectItem(hit, "label");
    e->r.anomaly = cJSON_IsString(lab) && !strcmp(lab->valuestring, "anomaly");
    e->r.detected = cJSON_IsTrue(cJSON_GetObjectItem(hit, "detected"));
    e->r.max_criticality = jnum(hit, "max_criticality");
    e->r.coverage = jnum(hit, "coverage");   /* null (NaN): undefined, skipped by the averages */
    e->r.accuracy = jnum(hit, "accuracy");
    e->r.earliness = jnum(hit, "earliness");
    e->rows = (int64_t)jnum(hit, "rows");
    e->rows_in_training = (int64_t)jnum(hit, "rows_in_training");
    e->farm = 0;
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(sec, "by_turbine")) {
        if (jnum(x, "id") == (double)e->turbine_id) e->farm = (int)jnum(x, "farm");
    }
    const cJSON *ev = cJSON_GetObjectItem(sec, "event");
    e->n_events = jnum(ev, "n_events"), e->n_detected = jnum(ev, "n_detected");
    e->turbine_days = jnum(ev, "turbine_days");
    e->n_false_alarms = jnum(ev, "n_false_alarms");
    if (!isfinite(e->n_false_alarms)) /* eval.json written before the count was stored */
        e->n_false_alarms = round(jnum(ev, "false_alarms_per_turbine_day") * e->turbine_days);
    if (!isfinite(e->n_events)) e->n_events = 0, e->n_detected = 0;
    if (!isfinite(e->turbine_days)) e->turbine_days = 0, e->n_false_alarms = 0;
    return 0;
}

const gt_eval_task_i gt_eval_task_pdm = {
    .name = "pdm",
    .items = "turbines",
    .sample_file = "eval_scores.csv",
    .evaluate = pdm_evaluate,
    .predict = gt_predict_pdm,
    .eval_config = pdm_eval_config,
    .report = sec_pdm,
    .config_bytes = sizeof(gt_pdm_eval_config),
    .config_defaults = gt_pdm_eval_config_defaults,
    .headline_metric = "pdm.event.f05",
    .sweep_settings = pdm_sweep_settings,
    .report_metrics = pdm_report_metrics,
    .care_cell = pdm_care_cell,
};
