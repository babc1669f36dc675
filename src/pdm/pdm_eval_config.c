/* pdm/pdm_eval_config.c: PdM's block of the evaluation settings (pdm.h
 * gt_pdm_eval_config): its defaults (the eval table's config_defaults) and
 * its lookup in a gt_eval_config. */
#include <string.h>

#include "eval/eval.h"
#include "pdm/pdm.h"
#include "pdm/pdm_impl.h"

_Static_assert(sizeof(gt_pdm_eval_config) <= GT_EVAL_TASK_CONFIG_BYTES, "PdM's eval settings outgrew their block");

void gt_pdm_eval_config_defaults(void *cfg) {
    gt_pdm_eval_config *c = cfg;
    memset(c, 0, sizeof *c);
    c->level = GT_PDM_LEVEL_QUANTILE;
    c->quantile = 0.999;
    c->flat_line = 1;
    c->nbm_linear = 0;
    c->margin = 1.5;
    c->val_false_alarms = 0.5;
    c->ewma_s = -1; /* auto: gt_pdm_ewma_span_rows */
    c->score = GT_PDM_SCORE_AUTO;
    c->envelope = 0.1;
    c->channel_quantile = 0.99;
    c->min_duration_s = 0;
    c->merge_gap_s = 60;
    c->hop = 0;
    c->max_val = 2000000;
}

const gt_pdm_eval_config *gt_pdm_eval_cfg(const gt_eval_config *ec) { return gt_eval_task_config_c(ec, "pdm"); }

gt_pdm_eval_config *gt_pdm_eval_cfg_set(gt_eval_config *ec) { return gt_eval_task_config(ec, "pdm"); }
