/* eval/run_eval.c: eval.json of a run directory, with each task's part from
 * the evaluation table (see run_eval.h, eval_task.h): no task is named here. */
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
#include "eval/eval_impl.h"
#include "eval/report.h"

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
        long long ln = 0;
        while (gt_jsonl_getline(&line, &cap, f, path, &ln) > 0) {
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

static cJSON *train_json(const gt_eval_train_info *ti) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "steps", (double)ti->steps);
    gt_eval_num(o, "train_time_s", ti->train_time_s);
    gt_eval_num(o, "samples_per_s", ti->samples_per_s);
    gt_eval_num(o, "data_stall", ti->data_stall);
    cJSON_AddNumberToObject(o, "ranks", ti->ranks);
    double t = isfinite(ti->train_time_s) ? ti->train_time_s : 0;
    cJSON_AddNumberToObject(o, "cpu_hours", t * ti->ranks * (ti->threads > 0 ? ti->threads : 1) / 3600.0);
    cJSON_AddNumberToObject(o, "gpu_hours", t * ti->gpus / 3600.0);
    gt_eval_num(o, "final_loss", ti->final_loss);
    gt_eval_num(o, "best_val_loss", ti->best_val_loss);
    cJSON_AddNumberToObject(o, "evaluated_step", (double)ti->eval_step);
    cJSON_AddStringToObject(o, "evaluated_checkpoint", ti->eval_step < 0 ? "unknown"
                                                       : ti->eval_best ? "best validation loss"
                                                                       : "not the best validation loss");
    return o;
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
    cJSON *data = NULL, *section = NULL;
    task->evaluate(run_dir, data_file, ems, n_models, ec, sample, root ? &data : NULL, root ? &section : NULL, comm);
    if (root) {
        cJSON_AddItemToObject(root, "data", data);
        /* every task's key: the evaluated task's section, null for the others */
        for (int i = 0; gt_eval_task_at(i); i++)
            if (gt_eval_task_at(i) == task)
                cJSON_AddItemToObject(root, task->name, section);
            else
                cJSON_AddNullToObject(root, gt_eval_task_at(i)->name);
        cJSON_AddItemToObject(root, "train", train_json(ti));
        cJSON *c = cJSON_AddObjectToObject(root, "eval_config");
        for (int i = 0; gt_eval_task_at(i); i++) gt_eval_task_at(i)->eval_config(c, ec);
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

