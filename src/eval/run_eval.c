/* eval/run_eval.c: eval.json of a run directory, with each task's part from
 * the eval task table (see run_eval.h, eval_task.h). */
#define _GNU_SOURCE
#include "eval/run_eval.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/escape.h"
#include "core/fsutil.h"
#include "core/check_mpi.h"
#include "core/log.h"
#include "core/timer.h"
#include "dist/reduce.h"
#include "eval/report.h"

static void num(cJSON *o, const char *key, double v) {
    if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
    else cJSON_AddNullToObject(o, key);
}

/* ------------------------------------------------------------ train info -- */

void gt_eval_train_info_from_run(const char *run_dir, int64_t ts_step, double ts_elapsed_s, double ts_best_val,
                                 gt_eval_train_info *ti) {
    memset(ti, 0, sizeof *ti);
    ti->eval_step = -1;
    ti->train_time_s = ti->samples_per_s = ti->data_stall = ti->final_loss = ti->best_val_loss = NAN;
    ti->threads = 1;
    const char *bt = getenv("OPENBLAS_NUM_THREADS");
    if (bt && atoi(bt) > 0) ti->threads = atoi(bt);
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/manifest.json", run_dir);
    char why[160];
    char *s = gt_read_file_bounded(path, GT_READ_JSON_MAX_BYTES, "a manifest.json", NULL, why, sizeof why);
    if (!s && errno == EFBIG) GT_WARN("%s: %s: not read", path, why);
    if (s) {
        cJSON *j = cJSON_Parse(s);
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "ranks");
        if (cJSON_IsNumber(r)) ti->ranks = r->valueint;
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "steps");
        if (cJSON_IsNumber(st)) ti->steps = (int64_t)st->valuedouble;
        const cJSON *ob = cJSON_GetObjectItemCaseSensitive(j, "openblas_threads");
        if (cJSON_IsString(ob) && atoi(ob->valuestring) > 0) ti->threads = atoi(ob->valuestring);
        cJSON_Delete(j);
        free(s);
    }
    snprintf(path, sizeof path, "%s/metrics.jsonl", run_dir);
    FILE *f = fopen(path, "r");
    if (f) {
        char *line = NULL;
        size_t cap = 0;
        double sps_sum = 0;
        int n_sps = 0;
        while (getline(&line, &cap, f) > 0) {
            cJSON *j = cJSON_Parse(line);
            if (!j) continue;
            const cJSON *ty = cJSON_GetObjectItemCaseSensitive(j, "type");
            const cJSON *lo = cJSON_GetObjectItemCaseSensitive(j, "loss");
            if (cJSON_IsString(ty) && !strcmp(ty->valuestring, "train")) {
                if (cJSON_IsNumber(lo)) ti->final_loss = lo->valuedouble;
                const cJSON *sp = cJSON_GetObjectItemCaseSensitive(j, "samples_per_s");
                if (cJSON_IsNumber(sp)) sps_sum += sp->valuedouble, n_sps++;
                const cJSON *tm = cJSON_GetObjectItemCaseSensitive(j, "time_s");
                if (cJSON_IsNumber(tm)) ti->train_time_s = tm->valuedouble;
                const cJSON *ds = cJSON_GetObjectItemCaseSensitive(j, "data_stall");
                if (cJSON_IsNumber(ds)) ti->data_stall = ds->valuedouble;
            } else if (cJSON_IsString(ty) && !strcmp(ty->valuestring, "val")) {
                const cJSON *bv = cJSON_GetObjectItemCaseSensitive(j, "best_val");
                if (cJSON_IsNumber(bv)) ti->best_val_loss = bv->valuedouble;
            }
            cJSON_Delete(j);
        }
        if (n_sps) ti->samples_per_s = sps_sum / n_sps;
        free(line);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/timing.json", run_dir);
    s = gt_read_file_bounded(path, GT_READ_JSON_MAX_BYTES, "a timing.json", NULL, why, sizeof why);
    if (!s && errno == EFBIG) GT_WARN("%s: %s: not read", path, why);
    if (s) {
        cJSON *j = cJSON_Parse(s);
        const cJSON *v;
        if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(j, "samples_per_s"))) ti->samples_per_s = v->valuedouble;
        if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(j, "data_stall"))) ti->data_stall = v->valuedouble;
        if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(j, "train_time_s"))) ti->train_time_s = v->valuedouble;
        if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(j, "gpus"))) ti->gpus = v->valueint;
        /* the trainer's own figures: the last step's loss and the best validation loss (the end-of-run
         * validation included, which has no metrics row) */
        if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(j, "final_loss"))) ti->final_loss = v->valuedouble;
        if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(j, "best_val_loss"))) ti->best_val_loss = v->valuedouble;
        cJSON_Delete(j);
        free(s);
    }
    if (ts_step >= 0) { /* the loaded checkpoint may be newer than the manifest (a killed segment), or
                           older (the best validation one): the furthest state wins */
        if (ts_step > ti->steps) ti->steps = ts_step;
        if (ts_elapsed_s > 0 && !(ti->train_time_s >= ts_elapsed_s)) ti->train_time_s = ts_elapsed_s;
        if (isfinite(ts_best_val) && !(ti->best_val_loss <= ts_best_val)) ti->best_val_loss = ts_best_val;
    }
}

/* ------------------------------------------------------------- eval.json -- */

static cJSON *nilm_metrics_json(const gt_nilm_metrics *m, const char *name) {
    cJSON *o = cJSON_CreateObject();
    if (name) cJSON_AddStringToObject(o, "name", name);
    num(o, "mae_w", m->mae_w);
    num(o, "sae", m->sae);
    num(o, "nde", m->nde);
    num(o, "precision", m->precision);
    num(o, "recall", m->recall);
    num(o, "f1", m->f1);
    num(o, "ea", m->ea);
    num(o, "energy_true_wh", m->energy_true_wh);
    num(o, "energy_pred_wh", m->energy_pred_wh);
    num(o, "samples", m->n);
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
    num(ov, "f1_macro", nf ? f1 / nf : NAN);
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

static cJSON *pdm_acc_json(const gt_pdm_acc *a) {
    gt_pdm_metrics m;
    gt_pdm_metrics_from_acc(a, &m);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "n_events", m.n_events);
    cJSON_AddNumberToObject(o, "n_detected", m.n_detected);
    num(o, "recall", m.event_recall);
    cJSON_AddNumberToObject(o, "n_anomaly_events", m.n_anomaly_events);
    cJSON_AddNumberToObject(o, "n_anomaly_detected", m.n_anomaly_detected);
    num(o, "anomaly_recall", m.anomaly_recall);
    num(o, "precision", m.event_precision);
    num(o, "f05", m.event_f05);
    num(o, "false_alarms_per_turbine_day", m.false_alarms_per_turbine_day);
    num(o, "detection_delay_s_mean", m.detection_delay_s_mean);
    num(o, "turbine_days", m.turbine_days);
    cJSON_AddNumberToObject(o, "n_alarms", a->n_alarms);
    cJSON_AddNumberToObject(o, "n_false_alarms", a->n_alarms - a->n_alarms_true);
    num(o, "point_precision", m.point_precision);
    num(o, "point_recall", m.point_recall);
    num(o, "point_f05", m.point_f05);
    num(o, "accuracy_normal", m.accuracy);
    num(o, "earliness", m.earliness);
    num(o, "care_score", m.care);
    return o;
}

static cJSON *pdm_json(const gt_pdm_eval *e, const gt_eval_config *ec) {
    cJSON *o = cJSON_CreateObject();
    const gt_pdm_metrics *m = &e->overall;
    num(o, "threshold", e->threshold);
    /* which detector scored (docs/evaluation.md, Two detectors) */
    cJSON_AddStringToObject(o, "detector", e->pdm_target < 0 ? "mixed" : gt_data_pdm_target_name(e->pdm_target));
    cJSON *cal = cJSON_AddObjectToObject(o, "calibration");
    cJSON_AddStringToObject(cal, "method", "max(margin x empirical quantile of the validation scores, the smallest threshold "
                                           "with at most val_false_alarms alarms per turbine-day on the validation rows); "
                                           "validation = normal rows of the training turbines");
    cJSON_AddStringToObject(cal, "rows", ec->pdm_calibrate_train ? "train_val" : "val");
    cJSON_AddBoolToObject(cal, "turbine_offset", ec->pdm_turbine_offset);
    cJSON_AddNumberToObject(cal, "quantile", ec->pdm_quantile);
    num(cal, "quantile_value", e->quantile_value);
    cJSON_AddNumberToObject(cal, "margin", ec->pdm_margin);
    cJSON_AddNumberToObject(cal, "val_false_alarms_per_turbine_day", ec->pdm_val_false_alarms);
    cJSON_AddNumberToObject(cal, "n_val_scores", (double)e->n_val_scores);
    cJSON_AddNumberToObject(cal, "channel_quantile", ec->pdm_channel_quantile);
    cJSON *env = cJSON_AddObjectToObject(o, "envelope"); /* eval.envelope: rows not scored */
    cJSON_AddNumberToObject(env, "margin", ec->pdm_envelope);
    cJSON_AddNumberToObject(env, "rows_not_scored", (double)e->envelope.rows_out);
    cJSON_AddNumberToObject(env, "rows_scored_before", (double)e->envelope.rows_scored);
    if (e->envelope.channel >= 0) cJSON_AddStringToObject(env, "channel", e->envelope.channel_name);
    if (ec->pdm_ewma_s < 0) cJSON_AddStringToObject(cal, "ewma_s", "auto");
    else cJSON_AddNumberToObject(cal, "ewma_s", ec->pdm_ewma_s);
    static const char *const score_names[3] = {"auto", "mean", "channel"};
    cJSON_AddStringToObject(cal, "score", score_names[ec->pdm_score >= 0 && ec->pdm_score < 3 ? ec->pdm_score : 0]);
    if (ec->pdm_score == GT_PDM_SCORE_AUTO) /* as resolved for the detector */
        cJSON_AddStringToObject(cal, "score_used", e->pdm_target == GT_PDM_TARGET_NBM ? "channel" : "mean");
    cJSON_AddNumberToObject(cal, "min_duration_s", ec->pdm_min_duration_s);
    cJSON_AddNumberToObject(cal, "merge_gap_s", ec->pdm_merge_gap_s);
    cJSON_AddNumberToObject(cal, "models", e->n_models);
    cJSON *pt = cJSON_AddObjectToObject(o, "point");
    num(pt, "precision", m->point_precision);
    num(pt, "recall", m->point_recall);
    num(pt, "f05", m->point_f05);
    num(pt, "accuracy_normal", m->accuracy);
    cJSON *ev = cJSON_AddObjectToObject(o, "event");
    cJSON_AddNumberToObject(ev, "n_events", m->n_events);
    cJSON_AddNumberToObject(ev, "n_detected", m->n_detected);
    num(ev, "recall", m->event_recall);
    cJSON_AddNumberToObject(ev, "n_anomaly_events", m->n_anomaly_events);
    cJSON_AddNumberToObject(ev, "n_anomaly_detected", m->n_anomaly_detected);
    num(ev, "anomaly_recall", m->anomaly_recall);
    num(ev, "precision", m->event_precision);
    num(ev, "f05", m->event_f05);
    num(ev, "false_alarms_per_turbine_day", m->false_alarms_per_turbine_day);
    num(ev, "detection_delay_s_mean", m->detection_delay_s_mean);
    num(ev, "turbine_days", m->turbine_days);
    cJSON_AddNumberToObject(ev, "n_alarms", e->acc.n_alarms);
    cJSON_AddNumberToObject(ev, "n_false_alarms", e->acc.n_alarms - e->acc.n_alarms_true);
    num(ev, "earliness", m->earliness);
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
    num(o, "care_score", m->care);
    cJSON *care = cJSON_AddObjectToObject(o, "care");
    num(care, "coverage_point_f05", m->point_f05);
    num(care, "accuracy_normal", m->accuracy);
    num(care, "reliability_event_f05", m->event_f05);
    num(care, "earliness", m->earliness);
    cJSON_AddStringToObject(care, "formula", "(coverage + 2 accuracy + reliability + earliness) / 5; accuracy if accuracy < 0.5");
    cJSON_AddStringToObject(care, "note", "gridtrain's own combination of its point and event metrics; the authors' "
                                          "protocol is care_protocol");
    /* the CARE to Compare protocol as its authors define it (Gueck et al. 2024, docs/evaluation.md) */
    const gt_care_protocol *cp = &e->care_protocol;
    cJSON *pr = cJSON_AddObjectToObject(o, "care_protocol");
    num(pr, "score", cp->score);
    num(pr, "coverage", cp->coverage);
    num(pr, "accuracy", cp->accuracy);
    num(pr, "reliability", cp->reliability);
    num(pr, "earliness", cp->earliness);
    cJSON_AddNumberToObject(pr, "criticality_threshold", GT_CARE_CRITICALITY_THRESHOLD);
    cJSON_AddNumberToObject(pr, "n_events", cp->n_events);
    cJSON_AddNumberToObject(pr, "n_anomaly", cp->n_anomaly);
    cJSON_AddNumberToObject(pr, "n_normal", cp->n_normal);
    cJSON_AddNumberToObject(pr, "n_detected", cp->n_detected);
    if (cp->reason) cJSON_AddStringToObject(pr, "reason", cp->reason);
    else cJSON_AddNullToObject(pr, "reason");
    cJSON *pe = cJSON_AddArrayToObject(pr, "events");
    for (int i = 0; i < e->n_care_events; i++) {
        const gt_pdm_care_event *c = &e->care_events[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "event_id", (double)c->event_id);
        cJSON_AddNumberToObject(j, "turbine_id", c->file_index >= 0 && c->file_index < e->n_turbines
                                                     ? (double)e->turbines[c->file_index].id : -1);
        cJSON_AddStringToObject(j, "label", c->r.anomaly ? "anomaly" : "normal");
        cJSON_AddBoolToObject(j, "evaluated", c->evaluated);
        cJSON_AddBoolToObject(j, "detected", c->r.detected);
        num(j, "max_criticality", c->r.max_criticality);
        num(j, "coverage", c->r.coverage);
        num(j, "accuracy", c->r.accuracy);
        num(j, "earliness", c->r.earliness);
        cJSON_AddNumberToObject(j, "rows", (double)c->n_rows);
        cJSON_AddNumberToObject(j, "rows_in_training", (double)c->rows_in_training);
        cJSON_AddItemToArray(pe, j);
    }
    return o;
}

static cJSON *train_json(const gt_eval_train_info *ti) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "steps", (double)ti->steps);
    num(o, "train_time_s", ti->train_time_s);
    num(o, "samples_per_s", ti->samples_per_s);
    num(o, "data_stall", ti->data_stall);
    cJSON_AddNumberToObject(o, "ranks", ti->ranks);
    double t = isfinite(ti->train_time_s) ? ti->train_time_s : 0;
    cJSON_AddNumberToObject(o, "cpu_hours", t * ti->ranks * (ti->threads > 0 ? ti->threads : 1) / 3600.0);
    cJSON_AddNumberToObject(o, "gpu_hours", t * ti->gpus / 3600.0);
    num(o, "final_loss", ti->final_loss);
    num(o, "best_val_loss", ti->best_val_loss);
    cJSON_AddNumberToObject(o, "evaluated_step", (double)ti->eval_step);
    cJSON_AddStringToObject(o, "evaluated_checkpoint", ti->eval_step < 0 ? "unknown"
                                                       : ti->eval_best ? "best validation loss"
                                                                       : "not the best validation loss");
    return o;
}

static cJSON *data_json(const char *file, const char *kind, int items, int64_t rows, int ranks) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", file);
    cJSON_AddStringToObject(o, "kind", kind);
    cJSON_AddNumberToObject(o, "items", items);
    cJSON_AddNumberToObject(o, "rows", (double)rows);
    cJSON_AddNumberToObject(o, "ranks", ranks);
    return o;
}

/* data.models: the run(s) evaluated (pdm: the scales; nilm: an ensemble's members) */
static void models_json(cJSON *d, const gt_eval_model *ems, int n_models) {
    cJSON *ms = cJSON_AddArrayToObject(d, "models");
    for (int j = 0; j < n_models; j++) {
        cJSON *mj = cJSON_CreateObject();
        cJSON_AddStringToObject(mj, "name", ems[j].name ? ems[j].name : "model");
        cJSON_AddStringToObject(mj, "kind", gt_model_kind_name(gt_engine_config(ems[j].e)->kind));
        cJSON_AddNumberToObject(mj, "window", gt_engine_config(ems[j].e)->window);
        if (ems[j].data.appliances[0]) /* nilm: trained on these appliances only (data.appliances) */
            cJSON_AddStringToObject(mj, "appliances", ems[j].data.appliances);
        cJSON_AddItemToArray(ms, mj);
    }
}

/* NILM: per-appliance metrics on the test split and the held-out households */
static void nilm_evaluate(const char *run_dir, const char *data_file, const gt_eval_model *ems, int n_models,
                          const gt_eval_config *ec, const char *sample, cJSON *root, MPI_Comm comm) {
    gt_nilm_eval e;
    gt_eval_config ecu = *ec;
    ecu.usage = 1; /* the per-household coverage of eval.json */
    gt_eval_nilm(data_file, ems, n_models, &ecu, sample, comm, &e);
    if (!root) {
        gt_nilm_eval_free(&e);
        return;
    }
    cJSON *d = data_json(data_file, "nilm", e.n_items, e.n_rows, e.n_ranks);
    cJSON *w = cJSON_AddObjectToObject(d, "windows");
    for (int s = 0; s < GT_SPLIT_COUNT; s++) cJSON_AddNumberToObject(w, gt_split_name((gt_split)s), (double)e.windows[s]);
    cJSON_AddNumberToObject(d, "eval_stride", (double)e.stride);
    cJSON_AddNumberToObject(d, "window", gt_engine_config(ems[0].e)->window);
    models_json(d, ems, n_models); /* > 1: the ensemble's members */
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
    cJSON_AddItemToObject(root, "data", d);
    cJSON *n = cJSON_AddObjectToObject(root, "nilm");
    cJSON_AddItemToObject(n, "test", nilm_split_json(&e.test, &e));
    cJSON_AddItemToObject(n, "holdout", nilm_split_json(&e.holdout, &e));
    cJSON_AddNullToObject(root, "pdm");
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
            GT_INFO("eval: %s: macro F1 %.4f over %d appliances%s%s%s", h ? "held-out households" : "test",
                    f1 / nf, nf, nz ? "; F1 below 0.05 (never found): " : "", zero, nz > 6 ? ", ..." : "");
    }
    GT_INFO("eval: %lld of %lld windows on the evaluation grid evaluated (%.1f%%; the rest touch gaps longer than "
            "data.fill_max_s or spikes; per household in eval.json data.usage)",
            (long long)u_kept, (long long)u_tot, u_tot > 0 ? 100.0 * (double)u_kept / (double)u_tot : 100.0);
    gt_nilm_eval_free(&e);
}

/* PdM: calibrated alarms, point and event metrics, CARE */
static void pdm_evaluate(const char *run_dir, const char *data_file, const gt_eval_model *ems, int n_models,
                         const gt_eval_config *ec, const char *sample, cJSON *root, MPI_Comm comm) {
    gt_pdm_eval e;
    gt_eval_pdm(data_file, ems, n_models, ec, sample, comm, &e);
    if (root) {
        cJSON *d = data_json(data_file, "pdm", e.n_turbines, e.n_rows, e.n_ranks);
        models_json(d, ems, n_models);
        cJSON_AddItemToObject(root, "data", d);
        cJSON_AddNullToObject(root, "nilm");
        cJSON_AddItemToObject(root, "pdm", pdm_json(&e, ec));
        GT_INFO("eval: %s on %s: %g/%g events detected (recall %.3f; anomaly events %g/%g), %.2f false alarms "
                "per turbine-day, point F0.5 %.3f, CARE %.3f, threshold %.5g",
                run_dir, data_file, e.overall.n_detected, e.overall.n_events, e.overall.event_recall,
                e.overall.n_anomaly_detected, e.overall.n_anomaly_events,
                e.overall.false_alarms_per_turbine_day, e.overall.point_f05, e.overall.care, e.threshold);
    }
    gt_pdm_eval_free(&e);
}

static const gt_eval_task_i g_eval_tasks[] = {
    {.kind = GT_TASK_NILM, .name = "nilm", .sample_file = "eval_sample.csv", .evaluate = nilm_evaluate,
     .predict = gt_predict_nilm},
    {.kind = GT_TASK_PDM, .name = "pdm", .sample_file = "eval_scores.csv", .evaluate = pdm_evaluate,
     .predict = gt_predict_pdm},
};

const gt_eval_task_i *gt_eval_task_get(gt_task kind) {
    for (size_t i = 0; i < sizeof g_eval_tasks / sizeof g_eval_tasks[0]; i++)
        if (g_eval_tasks[i].kind == kind) return &g_eval_tasks[i];
    GT_FAIL(GT_EXIT_INTERNAL, "no evaluation for task %d", (int)kind);
}

int gt_eval_run_dir(const char *run_dir, const char *data_file, const gt_eval_model *ems, int n_models,
                    const gt_eval_config *ec, const gt_eval_train_info *ti, MPI_Comm comm) {
    int rank;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    const gt_eval_task_i *task = gt_eval_task_get(ems[0].data.task);
    char sample[PATH_MAX + 64], json_path[PATH_MAX + 64];
    snprintf(sample, sizeof sample, "%s/%s", run_dir, task->sample_file);
    snprintf(json_path, sizeof json_path, "%s/eval.json", run_dir);
    if (rank == 0) /* run_dir or plots/ a symbolic link: refused before anything is written */
        for (int i = 0; i < 2; i++) {
            char d[PATH_MAX + 16];
            snprintf(d, sizeof d, i ? "%s/plots" : "%s", run_dir);
            GT_CHECK(gt_out_dir_check(d) == 0, GT_EXIT_RESOURCE, "eval: cannot write into '%s': %s", d,
                     gt_out_strerror(errno));
        }
    double t0 = gt_now();
    cJSON *root = rank == 0 ? cJSON_CreateObject() : NULL;
    if (root) {
        cJSON_AddStringToObject(root, "task", task->name);
        cJSON_AddStringToObject(root, "model", gt_model_kind_name(gt_engine_config(ems[0].e)->kind));
        cJSON_AddStringToObject(root, "data_file", data_file);
    }
    task->evaluate(run_dir, data_file, ems, n_models, ec, sample, root, comm);
    if (root) {
        cJSON_AddItemToObject(root, "train", train_json(ti));
        cJSON *c = cJSON_AddObjectToObject(root, "eval_config");
        cJSON_AddNumberToObject(c, "nilm_stride", (double)ec->nilm_stride);
        cJSON_AddBoolToObject(c, "nilm_off_below_on", ec->nilm_off_below_on != 0);
        cJSON_AddBoolToObject(c, "nilm_calibrate_gate", ec->nilm_calibrate_gate != 0);
        cJSON_AddBoolToObject(c, "nilm_calibrate_filter", ec->nilm_calibrate_filter != 0);
        cJSON_AddNumberToObject(c, "nilm_fill_s", ec->nilm_fill_s);
        cJSON_AddNumberToObject(c, "nilm_min_on_s", ec->nilm_min_on_s);
        cJSON_AddNumberToObject(c, "pdm_quantile", ec->pdm_quantile);
        cJSON_AddNumberToObject(c, "pdm_margin", ec->pdm_margin);
        cJSON_AddNumberToObject(c, "pdm_val_false_alarms", ec->pdm_val_false_alarms);
        cJSON_AddNumberToObject(c, "pdm_ewma_s", ec->pdm_ewma_s); /* -1: auto */
        cJSON_AddNumberToObject(c, "pdm_channel_quantile", ec->pdm_channel_quantile);
        cJSON_AddNumberToObject(c, "pdm_envelope", ec->pdm_envelope);
        cJSON_AddNumberToObject(c, "pdm_score", ec->pdm_score);
        cJSON_AddNumberToObject(c, "pdm_min_duration_s", ec->pdm_min_duration_s);
        cJSON_AddNumberToObject(c, "pdm_merge_gap_s", ec->pdm_merge_gap_s);
        cJSON_AddNumberToObject(c, "eval_time_s", gt_now() - t0);
        char *txt = cJSON_Print(root);
        char *withnl = gt_utf8_dup(txt, "\n"); /* names from the data file: valid UTF-8 JSON */
        /* the previous eval.json stays when this write fails, and the run fails: no silent loss */
        if (gt_write_file_atomic(json_path, withnl))
            GT_FAIL(GT_EXIT_RESOURCE, "eval: cannot write %s: %s (the previous one, if any, is left as it was)",
                    json_path, strerror(errno));
        free(withnl);
        cJSON_free(txt);
        cJSON_Delete(root);
        gt_report_write(run_dir, NULL);
    }
    gt_dist_barrier(comm);
    return 0;
}

