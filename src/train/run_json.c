/* train/run_json.c: see train/run_json_impl.h. */
#include "train/run_json_impl.h"

#include <limits.h>
#include <math.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/fsutil.h"
#include "core/log.h"

cJSON *gt_run_json_load(const char *dir, const char *name) {
    char p[PATH_MAX + 400];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    char why[160];
    char *s = gt_read_file_bounded(p, GT_READ_JSON_MAX_BYTES, name, NULL, why, sizeof why);
    if (!s) {
        if (errno == EFBIG) GT_WARN("%s: %s: not read", p, why);
        return NULL;
    }
    cJSON *j = cJSON_Parse(s);
    free(s);
    return j;
}

double gt_run_json_num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

const char *gt_run_json_str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}
