/* synth/synth_gen_nilm.c: `gridtrain synth nilm` (synth_gen.h): synthetic
 * households (synth_nilm*.c) written through io/write.h. */
#include <stdint.h>

#include "core/check.h"
#include "synth/synth_gen.h"
#include "synth/synth_source.h"

static const gt_synth_setting nilm_settings[] = {
    {"synth.households", "households", GT_SYNTH_INT, "number of households"},
    {"synth.period_s", "period", GT_SYNTH_FLOAT, "high-resolution sample period (s)"},
    {"synth.lowres_period_s", "lowres-period", GT_SYNTH_FLOAT, "low-resolution channel period (s); 0 writes none"},
    {"synth.spike_rate", "spike-rate", GT_SYNTH_FLOAT, "aggregate spikes per household-day"},
    {"synth.gap_rate", "gap-rate", GT_SYNTH_FLOAT, "dropouts (NaN runs) per household-day"},
    {"synth.stuck_rate", "stuck-rate", GT_SYNTH_FLOAT, "stuck-meter runs per household-day"},
    {"synth.noise_w", "noise", GT_SYNTH_FLOAT, "meter noise sigma (W)"},
    {NULL, NULL, 0, NULL},
};

#define SET_F(key, field) \
    if (a->is_set(a->ctx, key)) field = a->get_float(a->ctx, key)

static void nilm_run(const char *path, const gt_synth_args *a, const gt_write_opts *wo, MPI_Comm comm,
                     gt_write_stats *st) {
    gt_nilm_synth_cfg c;
    gt_nilm_synth_defaults(&c);
    if (a->is_set(a->ctx, "synth.seed")) c.seed = (uint64_t)a->get_int(a->ctx, "synth.seed");
    SET_F("synth.days", c.days);
    const int64_t hh = a->is_set(a->ctx, "synth.households") ? a->get_int(a->ctx, "synth.households") : c.n_households;
    GT_CHECK(hh >= 1 && hh <= (1 << 24), GT_EXIT_USAGE, "synth.households must be 1 to %d (got %lld)", 1 << 24,
             (long long)hh);
    c.n_households = (int)hh;
    SET_F("synth.period_s", c.period_s);
    SET_F("synth.lowres_period_s", c.lowres_period_s);
    SET_F("synth.spike_rate", c.spike_rate);
    SET_F("synth.gap_rate", c.gap_rate);
    SET_F("synth.stuck_rate", c.stuck_rate);
    SET_F("synth.noise_w", c.noise_w);
    GT_CHECK(c.n_households >= 1, GT_EXIT_USAGE, "synth.households must be >= 1 (got %d)", c.n_households);
    GT_CHECK(c.days > 0 && c.period_s > 0, GT_EXIT_USAGE, "synth.days and synth.period_s must be > 0");
    GT_CHECK(c.lowres_period_s >= 0, GT_EXIT_USAGE, "synth.lowres_period_s must be >= 0");
    gt_nilm_source *src = gt_synth_nilm_source(&c);
    gt_nilm_write(path, src, wo, comm, st);
    gt_synth_nilm_source_free(src);
}

const gt_synth_gen_i gt_synth_gen_nilm = {
    .name = "nilm",
    .dataset = "NILM",
    .what = "households with aggregate and per-appliance power, daily habits and flagged meter faults",
    .settings = nilm_settings,
    .run = nilm_run,
};
