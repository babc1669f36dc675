/* pdm/pdm_opts.c: PdM's data.* option rows of `gridtrain train` (task/task.h
 * gt_task_opts: cli/cmd_train.c assembles the table from its shared rows and
 * these, each where `after` places it) and their reader into PdM's block of
 * the data settings (pdm.h gt_pdm_data_config). */
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "data/dataset.h"
#include "pdm/pdm.h"
#include "pdm/pdm_impl.h"
#include "task/task.h"

/* each row's `after`: the row it follows in train's table (a shared row, one of NILM's, or NULL: the
 * previous row here), so the help, docs/configuration.md and a run's config.ini keep one order */
static const gt_task_opt rows[] = {
    {{"data.train_normal_only", NULL, GT_OPT_BOOL, "", "pdm: train/val windows touching a labelled event are skipped; default true", NULL}, "data.spike_k"},
    {{"data.farms", NULL, GT_OPT_STR, "", "pdm: only turbines of these farm indices, e.g. 0,1 (default: all)", NULL}, "data.items"},
    {{"data.machine_types", NULL, GT_OPT_STR, "", "pdm: only turbines of these machine type codes (default: all)", NULL}, NULL},
    {{"data.conditions", NULL, GT_OPT_STR, "", "pdm: only windows lying wholly in these operating condition codes (default: all)", NULL}, NULL},
    {{"data.train_conditions", NULL, GT_OPT_STR, "", "pdm: train and validation windows, the normalisation statistics and the threshold calibration use only rows in these operating condition codes; evaluation still scores every row (CARE files: 0,2 = rows the train_test flag marks for training; default: all)", NULL}, NULL},
    {{"data.care_event", NULL, GT_OPT_INT, "", "pdm, CARE to Compare files (import care): the authors' protocol, one model per event dataset: train and validate only on this event dataset's training part (its rows flagged train, split split_train : split_val in time), calibrate on its validation rows, evaluate and score only its prediction part and its CARE protocol entry (event ids: /care_events, gridtrain inspect; a DOE factor care_event = all runs every one); default: none", NULL}, NULL},
    {{"data.spike_channels", NULL, GT_OPT_STR, "auto", "pdm: channels the spike test screens: auto = condition signals (temperatures, pressures, vibration; not wind speed, power, rotor speed, status, angles or min/max/std aggregates, which move by nature in 10-minute SCADA data), all, none, or comma-separated name patterns such as *temp*,vib_*", NULL}, "data.appliances"},
    {{"data.pdm_target", NULL, GT_OPT_STR, "next", "pdm: what the model predicts, whose error is the anomaly score: next = the next step of every channel from the window (prediction detector); nbm = a normal-behaviour model: the condition channels (temperatures, pressures, vibration) at each step from the operating channels (wind speed, power, rotor speed, ambient temperature, status, angles) of the window up to it, the condition channels never in its input (data.nbm_inputs, data.nbm_targets)", "next|nbm"}, NULL},
    {{"data.norm", NULL, GT_OPT_STR, "global", "pdm: normalisation statistics of each channel: global = over the train rows of all turbines; turbine = every turbine with its own mean and std over its train-split rows of normal operation (label 0 with data.train_normal_only), so sensor offsets and site differences between turbines do not read as anomalies; a held-out turbine uses the global ones", "global|turbine"}, NULL},
    {{"data.nbm_inputs", NULL, GT_OPT_STR, "auto", "pdm, pdm_target = nbm: the input channels: auto = every channel that is not a condition signal or a cumulative counter (energy, hours), plus ambient/outside temperatures; or comma-separated name patterns such as wind_*,power_*", NULL}, NULL},
    {{"data.nbm_targets", NULL, GT_OPT_STR, "auto", "pdm, pdm_target = nbm: the predicted channels: auto = the condition signals (as data.spike_channels = auto; not their min/max/std aggregates, which stay unused) except ambient/outside temperatures; the channel's name and its description (/channels/description) decide; or comma-separated name patterns such as *bearing*,*oil*; a target is never an input", NULL}, NULL},
    {{"data.pdm_short_gap", NULL, GT_OPT_INT, "6", "pdm: a run of at most this many missing records (rows with more than data.pdm_row_missing of their channels missing) between two records is imputed like missing samples instead of screening the windows touching it (exports drop a record or two; 6 rows = 1 h of 10-minute SCADA); 0: every missing record screens (runs stored without this key)", NULL}, "data.spike_min_w"},
    {{"data.pdm_row_missing", NULL, GT_OPT_FLOAT, "0.5", "pdm: a row with more than this share of its channels missing (non-finite) is a missing record: windows touching it are screened (gap); fewer missing samples (a dead sensor, empty cells, one channel's dropout) keep the window, the model input gets the channel's training mean there and the loss and the anomaly score leave them out, the same in train, eval and predict; 0: any missing sample screens the window (runs stored without this key)", NULL}, NULL},
    {{"data.signal_limit", NULL, GT_OPT_FLOAT, "1e9", "pdm: a signal value beyond +-this (in the channel's unit) is treated as missing with a warning; 0 off", NULL}, NULL},    {{NULL, NULL, 0, NULL, NULL, NULL}, NULL},
};

static void read_opts(const gt_opt_values *v, gt_data_config *d) {
    gt_pdm_data_config *pd = gt_pdm_data_cfg_set(d);
    if (v->text(v->args, "data.train_normal_only")[0])
        pd->train_normal_only = v->flag(v->args, "data.train_normal_only");
    static const char *const filter_keys[4] = {"data.farms", "data.machine_types", "data.conditions",
                                               "data.train_conditions"};
    gt_data_filter *filters[4] = {&pd->farms, &pd->machine_types, &pd->conditions, &pd->train_conditions};
    for (int i = 0; i < 4; i++) {
        char err[256];
        GT_CHECK(gt_data_filter_parse(filters[i], v->str(v->args, filter_keys[i]), err, sizeof err) == 0,
                 GT_EXIT_USAGE, "%s: %s", filter_keys[i], err);
    }
    const char *sc = v->str(v->args, "data.spike_channels");
    GT_CHECK(strlen(sc) < sizeof pd->spike_channels, GT_EXIT_USAGE,
             "data.spike_channels: too long (max %zu characters)", sizeof pd->spike_channels - 1);
    snprintf(pd->spike_channels, sizeof pd->spike_channels, "%s", sc);
    const char *norm = v->str(v->args, "data.norm");
    GT_CHECK(!strcmp(norm, "global") || !strcmp(norm, "turbine"), GT_EXIT_USAGE, "data.norm: '%s' (global|turbine)",
             norm);
    pd->norm_turbine = !strcmp(norm, "turbine");
    const char *target = v->str(v->args, "data.pdm_target");
    pd->target = gt_pdm_target_parse(target);
    GT_CHECK(pd->target >= 0, GT_EXIT_USAGE, "data.pdm_target: '%s' (next|nbm)", target);
    static const char *const nbm_keys[2] = {"data.nbm_inputs", "data.nbm_targets"};
    char *nbm_sel[2] = {pd->nbm_inputs, pd->nbm_targets};
    for (int i = 0; i < 2; i++) {
        const char *s = v->str(v->args, nbm_keys[i]);
        GT_CHECK(strlen(s) < sizeof pd->nbm_inputs, GT_EXIT_USAGE, "%s: too long (max %zu characters)", nbm_keys[i],
                 sizeof pd->nbm_inputs - 1);
        snprintf(nbm_sel[i], sizeof pd->nbm_inputs, "%s", s);
    }
    const int64_t short_gap = v->integer(v->args, "data.pdm_short_gap"); /* checked before it narrows to int */
    GT_CHECK(short_gap >= 0 && short_gap <= 1000000, GT_EXIT_USAGE,
             "data.pdm_short_gap must be a number of rows in [0, 1000000] (got %lld)", (long long)short_gap);
    pd->short_gap = (int)short_gap;
    pd->row_missing = v->number(v->args, "data.pdm_row_missing");
    GT_CHECK(pd->row_missing >= 0 && pd->row_missing <= 1, GT_EXIT_USAGE,
             "data.pdm_row_missing must be a share in [0, 1] (got %g)", pd->row_missing);
    /* values are checked where they enter: the reader of io/ (its read options) */
    pd->signal_limit = v->number(v->args, "data.signal_limit");
    GT_CHECK(pd->signal_limit >= 0, GT_EXIT_USAGE,
             "data.power_limit_w and data.signal_limit must be >= 0 (0 turns the check off)");
    if (v->text(v->args, "data.care_event")[0]) {
        pd->care_event = v->integer(v->args, "data.care_event");
        GT_CHECK(pd->care_event >= 0, GT_EXIT_USAGE, "data.care_event = %lld: give an event id >= 0",
                 (long long)pd->care_event);
    }
}

static void stored_compat(const gt_opt_values *v, gt_data_config *d) {
    gt_pdm_data_config *pd = gt_pdm_data_cfg_set(d);
    if (!v->is_set(v->args, "data.pdm_row_missing")) pd->row_missing = 0; /* runs from before imputation */
    if (!v->is_set(v->args, "data.pdm_short_gap")) pd->short_gap = 0; /* ... and before short gaps were */
    if (!v->is_set(v->args, "data.spike_channels")) /* runs from before the channel kinds: every channel */
        snprintf(pd->spike_channels, sizeof pd->spike_channels, "all");
}

const gt_task_opts gt_pdm_opts = {.rows = rows, .read = read_opts, .stored_compat = stored_compat};
