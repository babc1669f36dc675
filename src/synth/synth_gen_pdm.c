/* synth/synth_gen_pdm.c: `gridtrain synth pdm` (synth_gen.h): synthetic wind
 * farms (synth_pdm.c) written through io/write.h. */
#include <stdint.h>

#include "core/check.h"
#include "synth/synth_gen.h"
#include "synth/synth_source.h"

static const gt_synth_setting pdm_settings[] = {
    {"synth.farms", "farms", GT_SYNTH_INT, "number of wind farms"},
    {"synth.turbines_per_farm", "turbines", GT_SYNTH_INT, "turbines per farm"},
    {"synth.rate_hz", "rate", GT_SYNTH_FLOAT, "sample rate (Hz)"},
    {"synth.shock_rate", "shock-rate", GT_SYNTH_FLOAT, "transient shocks per turbine-day"},
    {"synth.fault_fraction", "fault-fraction", GT_SYNTH_FLOAT, "fraction of turbines with a slow degradation fault"},
    {NULL, NULL, 0, NULL},
};

#define SET_F(key, field) \
    if (a->is_set(a->ctx, key)) field = a->get_float(a->ctx, key)

static void pdm_run(const char *path, const gt_synth_args *a, const gt_write_opts *wo, MPI_Comm comm,
                    gt_write_stats *st) {
    gt_pdm_synth_cfg c;
    gt_pdm_synth_defaults(&c);
    if (a->is_set(a->ctx, "synth.seed")) c.seed = (uint64_t)a->get_int(a->ctx, "synth.seed");
    SET_F("synth.days", c.days);
    /* farm codes are 0..65535 in the file (what train and inspect accept);
     * the turbine count stays far inside int range */
    const int64_t farms = a->is_set(a->ctx, "synth.farms") ? a->get_int(a->ctx, "synth.farms") : c.n_farms;
    const int64_t tpf = a->is_set(a->ctx, "synth.turbines_per_farm") ? a->get_int(a->ctx, "synth.turbines_per_farm")
                                                                     : c.turbines_per_farm;
    GT_CHECK(farms >= 1 && farms <= 65536, GT_EXIT_USAGE,
             "synth.farms = %lld: give 1 to 65536 (farm codes are 0..65535)", (long long)farms);
    GT_CHECK(tpf >= 1 && tpf <= (1 << 24) && farms * tpf <= (1 << 24), GT_EXIT_USAGE,
             "synth.turbines_per_farm = %lld: give 1 or more, at most %d turbines in all (farms x turbines)",
             (long long)tpf, 1 << 24);
    c.n_farms = (int)farms;
    c.turbines_per_farm = (int)tpf;
    SET_F("synth.rate_hz", c.rate_hz);
    SET_F("synth.shock_rate", c.shock_rate);
    SET_F("synth.fault_fraction", c.fault_fraction);
    GT_CHECK(c.n_farms >= 1 && c.turbines_per_farm >= 1, GT_EXIT_USAGE,
             "synth.farms and synth.turbines_per_farm must be >= 1");
    GT_CHECK(c.days > 0 && c.rate_hz > 0, GT_EXIT_USAGE, "synth.days and synth.rate_hz must be > 0");
    gt_pdm_source *src = gt_synth_pdm_source(&c);
    gt_pdm_write(path, src, wo, comm, st);
    gt_synth_pdm_source_free(src);
}

const gt_synth_gen_i gt_synth_gen_pdm = {
    .name = "pdm",
    .dataset = "wind-farm",
    .what = "wind farms of turbines with 32 channels, operating conditions and labelled fault events",
    .settings = pdm_settings,
    .run = pdm_run,
};
