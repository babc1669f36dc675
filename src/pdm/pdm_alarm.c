/* pdm/pdm_alarm.c: a turbine's alarm rows from its smoothed score (alarm
 * runs above the threshold, short ones dropped, close ones merged), used by
 * the event metrics (eval_pdm.c) and by predict's outputs (pdm_output.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "eval/eval.h"
#include "eval/eval_impl.h"
#include "pdm/pdm_impl.h"

void gt_pdm_alarm_mask(const float *score, int64_t n, double thr, const gt_eval_config *ec, double rate,
                       uint8_t *alarm) {
    const gt_pdm_eval_config *pcfg = gt_pdm_eval_cfg(ec);
    if (n <= 0) return;
    gt_alarm_run *al = GT_MALLOC(sizeof(gt_alarm_run) * (size_t)(n / 2 + 1));
    int64_t na = gt_alarm_runs(score, n, thr, (int64_t)llround(pcfg->min_duration_s * rate),
                               (int64_t)llround(pcfg->merge_gap_s * rate), al);
    for (int64_t i = 0; i < na; i++) memset(alarm + al[i].start, 1, (size_t)(al[i].end - al[i].start));
    free(al);
}
