/* nilm/nilm_opts.c: NILM's data.* option rows of `gridtrain train` (task/task.h
 * gt_task_opts: cli/cmd_train.c assembles the table from its shared rows and
 * these, each where `after` places it) and their reader into NILM's block of
 * the data settings (nilm.h gt_nilm_data_config). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "data/dataset.h"
#include "nilm/nilm.h"
#include "nilm/nilm_impl.h"
#include "task/task.h"

/* each row's `after`: the row it follows in train's table (a shared row, one of PdM's, or NULL: the
 * previous row here), so the help, docs/configuration.md and a run's config.ini keep one order */
static const gt_task_opt rows[] = {
    {{"data.stride_mask", NULL, GT_OPT_BOOL, "", "nilm, stride 0: an appliance's target counts only in windows on its own stride; default false (windows on the smallest selected stride train every appliance)", NULL}, "data.stride_frac"},
    {{"data.appliances", NULL, GT_OPT_STR, "", "nilm: only these appliances' targets count, e.g. fridge+kettle (default: all)", NULL}, "data.care_event"},
    {{"data.fill_max_s", NULL, GT_OPT_STR, "auto", "nilm: holes of the aggregate up to this many seconds (between two samples of the household) are filled by linear interpolation for the model input, never the targets, the same in train, eval and predict; longer gaps screen the windows touching them; auto = 5 sampling periods (covers timestamp jitter), 0 = off", NULL}, "data.nbm_targets"},
    {{"data.power_limit_w", NULL, GT_OPT_FLOAT, "1e8", "nilm: a power (aggregate or appliance) beyond +-this many W is not a measurement (a meter spike of tens of kW is; 3e38 W is not): treated as missing (a gap) with a warning; 0 off", NULL}, NULL},
    {{"data.spike_min_w", NULL, GT_OPT_FLOAT, "5000", "nilm: an aggregate sample is a spike only when it also departs from its local median by more than this many W: appliance bursts of a few kW (a microwave's defrost pulses, a washing machine's spin) are loads, meter glitches tens of kW; 0: the Hampel rule alone (runs stored without this key)", NULL}, NULL},
    {{"data.augment", NULL, GT_OPT_FLOAT, "0", "nilm: probability that a training window gets one more activation of one of its household's appliances (off in that window) added to the aggregate and, where it covers the midpoint, to the target; 0 = none", NULL}, "data.signal_limit"},
    {{"data.time_features", NULL, GT_OPT_STR, "none", "nilm: input channels from each row's local time beside the aggregate: day = sin/cos of the time of day, day+week = also of the day of the week", "none|day|day+week"}, NULL},
    {{"data.timezone", NULL, GT_OPT_STR, "UTC", "nilm time features: IANA time zone of the households' local time (e.g. Europe/London; daylight saving from the system's tz database)", NULL}, NULL},    {{NULL, NULL, 0, NULL, NULL, NULL}, NULL},
};

#define TEXT(k) v->text(v->args, k)

static void read_opts(const gt_opt_values *v, gt_data_config *d) {
    gt_nilm_data_config *nd = gt_nilm_data_cfg_set(d);
    if (TEXT("data.stride_mask")[0]) nd->stride_mask = v->flag(v->args, "data.stride_mask");
    nd->spike_min_w = v->number(v->args, "data.spike_min_w");
    GT_CHECK(nd->spike_min_w >= 0 && isfinite(nd->spike_min_w), GT_EXIT_USAGE,
             "data.spike_min_w must be >= 0 W (got %g)", nd->spike_min_w);
    nd->fill_max_s = v->auto_nonneg(v->args, "data.fill_max_s");
    /* values are checked where they enter: the reader of io/ (its read options) */
    nd->power_limit_w = v->number(v->args, "data.power_limit_w");
    GT_CHECK(nd->power_limit_w >= 0, GT_EXIT_USAGE,
             "data.power_limit_w and data.signal_limit must be >= 0 (0 turns the check off)");
    if (TEXT("data.augment")[0]) nd->augment = v->number(v->args, "data.augment");
    GT_CHECK(nd->augment >= 0 && nd->augment <= 1, GT_EXIT_USAGE, "data.augment must be in [0, 1] (got %g)",
             nd->augment);
    nd->time_features = gt_nilm_time_features_parse(v->str(v->args, "data.time_features"));
    const char *tz = v->str(v->args, "data.timezone");
    char tz_err[600];
    GT_CHECK(strlen(tz) < sizeof nd->timezone, GT_EXIT_USAGE, "data.timezone: name too long");
    GT_CHECK(gt_data_timezone_check(tz, tz_err, sizeof tz_err) == 0, GT_EXIT_USAGE, "data.timezone: %s", tz_err);
    snprintf(nd->timezone, sizeof nd->timezone, "%s", tz);
    const char *apps = v->str(v->args, "data.appliances");
    GT_CHECK(strlen(apps) < sizeof nd->appliances, GT_EXIT_USAGE,
             "data.appliances: list too long (max %zu characters)", sizeof nd->appliances - 1);
    snprintf(nd->appliances, sizeof nd->appliances, "%s", apps);
}

static void stored_compat(const gt_opt_values *v, gt_data_config *d) {
    gt_nilm_data_config *nd = gt_nilm_data_cfg_set(d);
    if (!v->is_set(v->args, "data.time_features")) nd->time_features = 0;
    if (!v->is_set(v->args, "data.fill_max_s")) nd->fill_max_s = 0; /* runs from before hole filling */
    if (!v->is_set(v->args, "data.spike_min_w")) nd->spike_min_w = 0; /* ... and before the spike floor */
}

const gt_task_opts gt_nilm_opts = {.rows = rows, .read = read_opts, .stored_compat = stored_compat};
