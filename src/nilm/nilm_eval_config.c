/* nilm/nilm_eval_config.c: NILM's block of the evaluation settings (nilm.h
 * gt_nilm_eval_config): its defaults (the eval table's config_defaults) and
 * its lookup in a gt_eval_config. */
#include <string.h>

#include "eval/eval.h"
#include "nilm/nilm.h"
#include "nilm/nilm_impl.h"

_Static_assert(sizeof(gt_nilm_eval_config) <= GT_EVAL_TASK_CONFIG_BYTES, "NILM's eval settings outgrew their block");

void gt_nilm_eval_config_defaults(void *cfg) {
    gt_nilm_eval_config *c = cfg;
    memset(c, 0, sizeof *c);
    c->stride = 0;
    c->max_windows = 1000000;
    c->off_below_on = 1;
    c->calibrate_gate = 0;
    c->pad_edges = 0;
}

const gt_nilm_eval_config *gt_nilm_eval_cfg(const gt_eval_config *ec) { return gt_eval_task_config_c(ec, "nilm"); }

gt_nilm_eval_config *gt_nilm_eval_cfg_set(gt_eval_config *ec) { return gt_eval_task_config(ec, "nilm"); }
