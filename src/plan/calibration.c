/* plan/calibration.c: the GPU rate a measurement gives `gridtrain plan`
 * (plan.calibration), read with cJSON. See plan/plan.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "core/check.h"
#include "core/fsutil.h"
#include "plan/plan.h"

double gt_plan_calibration_read(const char *path, gt_model_kind kind, char *gpu, size_t gpu_len) {
    size_t n = 0;
    char why[160];
    char *text = gt_read_file_bounded(path, GT_READ_JSON_MAX_BYTES, "a calibration file", &n, why, sizeof why);
    GT_CHECK(text, GT_EXIT_USAGE, "plan.calibration: cannot read %s: %s", path, why);
    cJSON *j = cJSON_Parse(text);
    free(text);
    GT_CHECK(j && cJSON_IsObject(j), GT_EXIT_USAGE, "plan.calibration: %s is not a JSON object (the file "
             "tests/gpu/run.sh writes as plan-calibration.json)", path);
    const cJSON *eff = cJSON_GetObjectItemCaseSensitive(j, "efficiency");
    GT_CHECK(cJSON_IsObject(eff), GT_EXIT_USAGE, "plan.calibration: %s has no \"efficiency\" object", path);
    const char *name = gt_model_kind_name(kind);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(eff, name);
    GT_CHECK(cJSON_IsNumber(v), GT_EXIT_USAGE, "plan.calibration: %s has no measured efficiency for %s "
             "(\"efficiency\": {\"%s\": ...})", path, name, name);
    const double e = v->valuedouble;
    GT_CHECK(isfinite(e) && e > 0 && e <= 1, GT_EXIT_USAGE,
             "plan.calibration: %s: efficiency of %s is %g, expected a share in (0, 1]", path, name, e);
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(j, "gpu");
    if (gpu && gpu_len) snprintf(gpu, gpu_len, "%s", cJSON_IsString(g) ? g->valuestring : "unknown GPU");
    cJSON_Delete(j);
    return e;
}
