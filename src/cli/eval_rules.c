/* cli/eval_rules.c: the eval.* rule keys read into a gt_eval_config (each
 * task's block: nilm/nilm.h, pdm/pdm.h). */
#include "cli/eval_rules.h"

#include <math.h>
#include <string.h>

#include "core/check.h"
#include "nilm/nilm.h"
#include "pdm/pdm.h"

void gt_eval_cli_config(const gt_args *a, gt_eval_config *ec) {
    gt_eval_config_defaults(ec);
    gt_nilm_eval_config *nc = gt_nilm_eval_cfg_set(ec);
    gt_pdm_eval_config *pc = gt_pdm_eval_cfg_set(ec);
    for (int i = 0; i < a->n_values; i++) {
        const char *k = a->spec[i]->key;
        if (!strcmp(k, "eval.stride")) nc->stride = gt_args_int(a, k);
        else if (!strcmp(k, "eval.max_windows")) nc->max_windows = gt_args_int(a, k);
        else if (!strcmp(k, "eval.off_below_on")) nc->off_below_on = gt_args_bool(a, k);
        else if (!strcmp(k, "eval.calibrate_gate")) nc->calibrate_gate = gt_args_bool(a, k);
        else if (!strcmp(k, "eval.calibrate_filter")) nc->calibrate_filter = gt_args_bool(a, k);
        else if (!strcmp(k, "eval.fill_s")) nc->fill_s = gt_args_float(a, k);
        else if (!strcmp(k, "eval.min_on_s")) nc->min_on_s = gt_args_float(a, k);
        else if (!strcmp(k, "eval.level")) {
            const char *v = gt_args_str(a, k);
            pc->level = !strcmp(v, "robust")     ? GT_PDM_LEVEL_ROBUST
                            : !strcmp(v, "quantile") ? GT_PDM_LEVEL_QUANTILE
                                                     : -1;
            GT_CHECK(pc->level >= 0, GT_EXIT_USAGE, "eval.level = '%s' (quantile|robust)", v);
        }
        else if (!strcmp(k, "eval.flat_line")) pc->flat_line = gt_args_bool(a, k);
        else if (!strcmp(k, "eval.nbm_linear")) pc->nbm_linear = gt_args_bool(a, k);
        else if (!strcmp(k, "eval.quantile")) pc->quantile = gt_args_float(a, k);
        else if (!strcmp(k, "eval.margin")) pc->margin = gt_args_float(a, k);
        else if (!strcmp(k, "eval.val_false_alarms")) pc->val_false_alarms = gt_args_float(a, k);
        else if (!strcmp(k, "eval.ewma_s")) pc->ewma_s = gt_args_auto_nonneg(a, k);
        else if (!strcmp(k, "eval.channel_quantile")) pc->channel_quantile = gt_args_float(a, k);
        else if (!strcmp(k, "eval.envelope")) pc->envelope = gt_args_float(a, k);
        else if (!strcmp(k, "eval.score")) {
            pc->score = gt_pdm_score_parse(gt_args_str(a, k));
            GT_CHECK(pc->score >= 0, GT_EXIT_USAGE, "eval.score = '%s' (auto|mean|channel)", gt_args_str(a, k));
        }
        else if (!strcmp(k, "eval.min_duration_s")) pc->min_duration_s = gt_args_float(a, k);
        else if (!strcmp(k, "eval.merge_gap_s")) pc->merge_gap_s = gt_args_float(a, k);
        else if (!strcmp(k, "eval.hop")) pc->hop = gt_args_int(a, k);
        else if (!strcmp(k, "eval.calibrate")) pc->calibrate_train = !strcmp(gt_args_str(a, k), "train_val");
        else if (!strcmp(k, "eval.turbine_offset")) pc->turbine_offset = gt_args_bool(a, k);
    }
    GT_CHECK(nc->stride >= 0 && nc->max_windows > 0, GT_EXIT_USAGE,
             "eval.stride must be >= 0 and eval.max_windows > 0");
    /* the warm-up and guard rows are whole multiples of the span in rows (int64): 1e308 s overflowed them */
    GT_CHECK(pc->ewma_s <= 1e9, GT_EXIT_USAGE, "eval.ewma_s = %g: give auto or a number of seconds in [0, 1e9]",
             pc->ewma_s);
    GT_CHECK(nc->fill_s >= 0 && nc->min_on_s >= 0 && isfinite(nc->fill_s) && isfinite(nc->min_on_s),
             GT_EXIT_USAGE, "eval.fill_s (%g) and eval.min_on_s (%g) must be finite and >= 0", nc->fill_s,
             nc->min_on_s);
    GT_CHECK(pc->quantile > 0 && pc->quantile <= 1 && pc->margin > 0 &&
                 pc->min_duration_s >= 0 && pc->merge_gap_s >= 0 && pc->hop >= 0 && pc->val_false_alarms >= 0 &&
                 pc->channel_quantile >= 0 && pc->channel_quantile < 1 && isfinite(pc->envelope),
             GT_EXIT_USAGE,
             "eval: quantile in (0, 1], margin > 0, min_duration_s, merge_gap_s, hop, val_false_alarms >= 0, "
             "channel_quantile in [0, 1)");
}
