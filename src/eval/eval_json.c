/* eval/eval_json.c: eval.json's shared sections (the data evaluated, the
 * models, numbers that may be undefined) that the driver and each task's
 * section write. */
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

void gt_eval_num(cJSON *o, const char *key, double v) {
    if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
    else cJSON_AddNullToObject(o, key);
}

cJSON *gt_eval_data_json(const char *file, const char *kind, int items, int64_t rows, int ranks) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", file);
    cJSON_AddStringToObject(o, "kind", kind);
    cJSON_AddNumberToObject(o, "items", items);
    cJSON_AddNumberToObject(o, "rows", (double)rows);
    cJSON_AddNumberToObject(o, "ranks", ranks);
    return o;
}

/* data.models: the run(s) evaluated (pdm: the scales; nilm: an ensemble's members); a task adds its own
 * keys to each entry (nilm: appliances) */
void gt_eval_models_json(cJSON *d, const gt_eval_model *ems, int n_models) {
    cJSON *ms = cJSON_AddArrayToObject(d, "models");
    for (int j = 0; j < n_models; j++) {
        cJSON *mj = cJSON_CreateObject();
        cJSON_AddStringToObject(mj, "name", ems[j].name ? ems[j].name : "model");
        cJSON_AddStringToObject(mj, "kind", gt_model_kind_name(gt_engine_config(ems[j].e)->kind));
        cJSON_AddNumberToObject(mj, "window", gt_engine_config(ems[j].e)->window);
        cJSON_AddItemToArray(ms, mj);
    }
}
