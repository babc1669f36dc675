/* cli/eval_rules.c: the eval.* rule keys read into a gt_eval_config. */
#include "cli/eval_rules.h"

#include <math.h>
#include <string.h>

#include "core/check.h"

void gt_eval_cli_config(const gt_args *a, gt_eval_config *ec) {
    gt_eval_config_defaults(ec);
    for (int i = 0; i < a->n_values; i++) {
        const char *k = a->spec[i]->key;
        if (!strcmp(k, "eval.stride")) ec->nilm_stride = gt_args_int(a, k);
        else if (!strcmp(k, "eval.max_windows")) ec->nilm_max_windows = gt_args_int(a, k);
        else if (!strcmp(k, "eval.off_below_on")) ec->nilm_off_below_on = gt_args_bool(a, k);
        else if (!strcmp(k, "eval.calibrate_gate")) ec->nilm_calibrate_gate = gt_args_bool(a, k);
        else if (!strcmp(k, "eval.calibrate_filter")) ec->nilm_calibrate_filter = gt_args_bool(a, k);
        else if (!strcmp(k, "eval.fill_s")) ec->nilm_fill_s = gt_args_float(a, k);
        else if (!strcmp(k, "eval.min_on_s")) ec->nilm_min_on_s = gt_args_float(a, k);
        else if (!strcmp(k, "eval.level")) {
            const char *v = gt_args_str(a, k);
            ec->pdm_level = !strcmp(v, "robust")     ? GT_PDM_LEVEL_ROBUST
                            : !strcmp(v, "quantile") ? GT_PDM_LEVEL_QUANTILE
                                                     : -1;
            GT_CHECK(ec->pdm_level >= 0, GT_EXIT_USAGE, "eval.level = '%s' (quantile|robust)", v);
        }
        else if (!strcmp(k, "eval.flat_line")) ec->pdm_flat_line = gt_args_bool(a, k);
        else if (!strcmp(k, "eval.nbm_linear")) ec->pdm_nbm_linear = gt_args_bool(a, k);
        else if (!strcmp(k, "eval.quantile")) ec->pdm_quantile = gt_args_float(a, k);
        else if (!strcmp(k, "eval.margin")) ec->pdm_margin = gt_args_float(a, k);
        else if (!strcmp(k, "eval.val_false_alarms")) ec->pdm_val_false_alarms = gt_args_float(a, k);
        else if (!strcmp(k, "eval.ewma_s")) ec->pdm_ewma_s = gt_args_auto_nonneg(a, k);
        else if (!strcmp(k, "eval.channel_quantile")) ec->pdm_channel_quantile = gt_args_float(a, k);
        else if (!strcmp(k, "eval.envelope")) ec->pdm_envelope = gt_args_float(a, k);
        else if (!strcmp(k, "eval.score")) {
            ec->pdm_score = gt_pdm_score_parse(gt_args_str(a, k));
            GT_CHECK(ec->pdm_score >= 0, GT_EXIT_USAGE, "eval.score = '%s' (auto|mean|channel)", gt_args_str(a, k));
        }
        else if (!strcmp(k, "eval.min_duration_s")) ec->pdm_min_duration_s = gt_args_float(a, k);
        else if (!strcmp(k, "eval.merge_gap_s")) ec->pdm_merge_gap_s = gt_args_float(a, k);
        else if (!strcmp(k, "eval.hop")) ec->pdm_hop = gt_args_int(a, k);
        else if (!strcmp(k, "eval.calibrate")) ec->pdm_calibrate_train = !strcmp(gt_args_str(a, k), "train_val");
        else if (!strcmp(k, "eval.turbine_offset")) ec->pdm_turbine_offset = gt_args_bool(a, k);
    }
    GT_CHECK(ec->nilm_stride >= 0 && ec->nilm_max_windows > 0, GT_EXIT_USAGE,
             "eval.stride must be >= 0 and eval.max_windows > 0");
    /* the warm-up and guard rows are whole multiples of the span in rows (int64): 1e308 s overflowed them */
    GT_CHECK(ec->pdm_ewma_s <= 1e9, GT_EXIT_USAGE, "eval.ewma_s = %g: give auto or a number of seconds in [0, 1e9]",
             ec->pdm_ewma_s);
    GT_CHECK(ec->nilm_fill_s >= 0 && ec->nilm_min_on_s >= 0 && isfinite(ec->nilm_fill_s) && isfinite(ec->nilm_min_on_s),
             GT_EXIT_USAGE, "eval.fill_s (%g) and eval.min_on_s (%g) must be finite and >= 0", ec->nilm_fill_s,
             ec->nilm_min_on_s);
    GT_CHECK(ec->pdm_quantile > 0 && ec->pdm_quantile <= 1 && ec->pdm_margin > 0 &&
                 ec->pdm_min_duration_s >= 0 && ec->pdm_merge_gap_s >= 0 && ec->pdm_hop >= 0 && ec->pdm_val_false_alarms >= 0 &&
                 ec->pdm_channel_quantile >= 0 && ec->pdm_channel_quantile < 1 && isfinite(ec->pdm_envelope),
             GT_EXIT_USAGE,
             "eval: quantile in (0, 1], margin > 0, min_duration_s, merge_gap_s, hop, val_false_alarms >= 0, "
             "channel_quantile in [0, 1)");
}
