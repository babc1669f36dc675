/* train/run_json_impl.h: reading the JSON files of a run directory
 * (manifest.json, timing.json), for doctor.c, regress.c and ckpt_check.c (internal to train/). */
#ifndef GT_TRAIN_RUN_JSON_IMPL_H
#define GT_TRAIN_RUN_JSON_IMPL_H

#include <cjson/cJSON.h>

/* dir/name parsed (caller deletes), or NULL when missing or not JSON. */
cJSON *gt_run_json_load(const char *dir, const char *name);
/* o's number / string member `key`, or NaN / NULL. */
double gt_run_json_num(const cJSON *o, const char *key);
const char *gt_run_json_str(const cJSON *o, const char *key);

#endif
