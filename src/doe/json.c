/* doe/json.c: the one reader of a sweep's JSON files (sweep.json, cell.json,
 * manifest.json, eval.json's train part, ladder.json, rung records), for the
 * runner and the report alike (doe/json.h). */
#include "doe/json.h"

#include <errno.h>
#include <stdlib.h>

#include "core/fsutil.h"
#include "core/log.h"

cJSON *gt_doe_json_read(const char *path) {
    char why[160];
    char *t = gt_read_file_bounded(path, GT_READ_JSON_MAX_BYTES, "a JSON file of a sweep", NULL, why, sizeof why);
    if (!t) {
        if (errno == EFBIG) GT_WARN("%s: %s: not read", path, why);
        return NULL;
    }
    cJSON *j = cJSON_Parse(t);
    free(t);
    return j;
}
