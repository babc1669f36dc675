/* cli/cmd_synth.c: `gridtrain synth nilm|pdm -o FILE [options]`: writes one
 * synthetic dataset file collectively (io/write.h over synth/synth.h). */
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "cli/commands.h"
#include "core/check.h"
#include "core/log.h"
#include "dist/reduce.h"
#include "synth/synth_source.h"
#include "io/write.h"

/* Generator settings default to the generator's own defaults (synth/synth_*.c)
 * when left empty. */
static const gt_opt opts[] = {
    {"synth.output", "o", GT_OPT_STR, "", "output HDF5 file (written as FILE.tmp.XXXXXX, renamed when complete)", NULL},
    {"synth.seed", "seed", GT_OPT_INT, "", "generator seed (default: generator's)", NULL},
    {"synth.days", "days", GT_OPT_FLOAT, "", "nominal days per household/turbine (default: generator's)", NULL},
    {"synth.households", "households", GT_OPT_INT, "", "nilm: number of households", NULL},
    {"synth.period_s", "period", GT_OPT_FLOAT, "", "nilm: high-resolution sample period (s)", NULL},
    {"synth.lowres_period_s", "lowres-period", GT_OPT_FLOAT, "", "nilm: low-resolution channel period (s); 0 writes none", NULL},
    {"synth.spike_rate", "spike-rate", GT_OPT_FLOAT, "", "nilm: aggregate spikes per household-day", NULL},
    {"synth.gap_rate", "gap-rate", GT_OPT_FLOAT, "", "nilm: dropouts (NaN runs) per household-day", NULL},
    {"synth.stuck_rate", "stuck-rate", GT_OPT_FLOAT, "", "nilm: stuck-meter runs per household-day", NULL},
    {"synth.noise_w", "noise", GT_OPT_FLOAT, "", "nilm: meter noise sigma (W)", NULL},
    {"synth.farms", "farms", GT_OPT_INT, "", "pdm: number of wind farms", NULL},
    {"synth.turbines_per_farm", "turbines", GT_OPT_INT, "", "pdm: turbines per farm", NULL},
    {"synth.rate_hz", "rate", GT_OPT_FLOAT, "", "pdm: sample rate (Hz)", NULL},
    {"synth.shock_rate", "shock-rate", GT_OPT_FLOAT, "", "pdm: transient shocks per turbine-day", NULL},
    {"synth.fault_fraction", "fault-fraction", GT_OPT_FLOAT, "", "pdm: fraction of turbines with a slow degradation fault", NULL},
    {"synth.compress", "compress", GT_OPT_INT, "0", "deflate level 0-9 (with shuffle); 0 stores uncompressed", NULL},
    {"synth.chunk_rows", "chunk-rows", GT_OPT_INT, "65536", "rows per chunk of the row datasets; 0 contiguous (needs compress 0)", NULL},
    {"synth.batch", "batch", GT_OPT_SIZE, "256M", "per-rank generation buffer per collective write", NULL},
    {NULL, NULL, 0, NULL, NULL, NULL},
};

static void report(const char *kind, const char *path, const gt_write_stats *st, MPI_Comm comm) {
    /* maxima over the ranks, on rank 0 (which prints them) */
    const double t_max = gt_dist_reduce_max_d(st->total_s, comm);
    const double gen_max = gt_dist_reduce_max_d(st->gen_s, comm);
    const double write_max = gt_dist_reduce_max_d(st->write_s, comm);
    const int64_t rows_max = gt_dist_reduce_max_i64(st->n_rows, comm);
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (rank == 0)
        printf("synth %s: wrote %s: %lld rows on %d rank%s in %.2f s (generate %.2f s, write %.2f s, "
               "%d collective rounds, rows imbalance %.3f)\n",
               kind, path, (long long)st->n_rows_total, size, size == 1 ? "" : "s", t_max, gen_max, write_max,
               st->n_rounds, st->n_rows_total > 0 ? (double)rows_max * size / (double)st->n_rows_total : 1.0);
}

static int run(const gt_args *a, MPI_Comm comm) {
    const char *kind = a->pos[0];
    const char *out = gt_args_str(a, "synth.output");
    GT_CHECK(*out, GT_EXIT_USAGE, "synth: no output file (use -o FILE or synth.output=FILE)");
    gt_write_opts wo;
    gt_write_opts_defaults(&wo);
    wo.chunk_rows = gt_args_int(a, "synth.chunk_rows");
    const int64_t deflate = gt_args_int(a, "synth.compress"); /* checked before it narrows to int */
    wo.batch_bytes = gt_args_size(a, "synth.batch");
    GT_CHECK(deflate >= 0 && deflate <= 9, GT_EXIT_USAGE, "synth.compress must be 0..9 (got %lld)", (long long)deflate);
    wo.deflate = (int)deflate;
    GT_CHECK(wo.chunk_rows >= 0, GT_EXIT_USAGE, "synth.chunk_rows must be >= 0");
    GT_CHECK(!(wo.chunk_rows == 0 && wo.deflate > 0), GT_EXIT_USAGE,
             "synth.compress > 0 needs a chunked layout (synth.chunk_rows > 0)");
    GT_CHECK(wo.batch_bytes >= 1 << 20, GT_EXIT_USAGE, "synth.batch must be at least 1M");
#define SET(key, field, getter) \
    if (gt_args_is_set(a, key)) field = getter(a, key)
    gt_write_stats st;
    if (!strcmp(kind, "nilm")) {
        gt_nilm_synth_cfg c;
        gt_nilm_synth_defaults(&c);
        SET("synth.seed", c.seed, (uint64_t)gt_args_int);
        SET("synth.days", c.days, gt_args_float);
        const int64_t hh = gt_args_is_set(a, "synth.households") ? gt_args_int(a, "synth.households") : c.n_households;
        GT_CHECK(hh >= 1 && hh <= (1 << 24), GT_EXIT_USAGE, "synth.households must be 1 to %d (got %lld)", 1 << 24,
                 (long long)hh);
        c.n_households = (int)hh;
        SET("synth.period_s", c.period_s, gt_args_float);
        SET("synth.lowres_period_s", c.lowres_period_s, gt_args_float);
        SET("synth.spike_rate", c.spike_rate, gt_args_float);
        SET("synth.gap_rate", c.gap_rate, gt_args_float);
        SET("synth.stuck_rate", c.stuck_rate, gt_args_float);
        SET("synth.noise_w", c.noise_w, gt_args_float);
        GT_CHECK(c.n_households >= 1, GT_EXIT_USAGE, "synth.households must be >= 1 (got %d)", c.n_households);
        GT_CHECK(c.days > 0 && c.period_s > 0, GT_EXIT_USAGE, "synth.days and synth.period_s must be > 0");
        GT_CHECK(c.lowres_period_s >= 0, GT_EXIT_USAGE, "synth.lowres_period_s must be >= 0");
        gt_nilm_source *src = gt_synth_nilm_source(&c);
        gt_nilm_write(out, src, &wo, comm, &st);
        gt_synth_nilm_source_free(src);
    } else if (!strcmp(kind, "pdm")) {
        gt_pdm_synth_cfg c;
        gt_pdm_synth_defaults(&c);
        SET("synth.seed", c.seed, (uint64_t)gt_args_int);
        SET("synth.days", c.days, gt_args_float);
        /* farm codes are 0..65535 in the file (what train and inspect accept);
         * the turbine count stays far inside int range */
        const int64_t farms = gt_args_is_set(a, "synth.farms") ? gt_args_int(a, "synth.farms") : c.n_farms;
        const int64_t tpf = gt_args_is_set(a, "synth.turbines_per_farm") ? gt_args_int(a, "synth.turbines_per_farm")
                                                                          : c.turbines_per_farm;
        GT_CHECK(farms >= 1 && farms <= 65536, GT_EXIT_USAGE,
                 "synth.farms = %lld: give 1 to 65536 (farm codes are 0..65535)", (long long)farms);
        GT_CHECK(tpf >= 1 && tpf <= (1 << 24) && farms * tpf <= (1 << 24), GT_EXIT_USAGE,
                 "synth.turbines_per_farm = %lld: give 1 or more, at most %d turbines in all (farms x turbines)",
                 (long long)tpf, 1 << 24);
        c.n_farms = (int)farms;
        c.turbines_per_farm = (int)tpf;
        SET("synth.rate_hz", c.rate_hz, gt_args_float);
        SET("synth.shock_rate", c.shock_rate, gt_args_float);
        SET("synth.fault_fraction", c.fault_fraction, gt_args_float);
        GT_CHECK(c.n_farms >= 1 && c.turbines_per_farm >= 1, GT_EXIT_USAGE,
                 "synth.farms and synth.turbines_per_farm must be >= 1");
        GT_CHECK(c.days > 0 && c.rate_hz > 0, GT_EXIT_USAGE, "synth.days and synth.rate_hz must be > 0");
        gt_pdm_source *src = gt_synth_pdm_source(&c);
        gt_pdm_write(out, src, &wo, comm, &st);
        gt_synth_pdm_source_free(src);
    } else {
        GT_FAIL(GT_EXIT_USAGE, "synth: unknown kind '%s' (expected nilm or pdm)", kind);
    }
#undef SET
    report(kind, out, &st, comm);
    return 0;
}

const gt_cmd gt_cmd_synth = {
    .name = "synth",
    .usage = "synth nilm|pdm -o FILE [options]",
    .summary = "write a synthetic NILM or wind-farm dataset (collectively under mpirun)",
    .details = "Each rank generates the households/turbines assigned to it and writes them at their\n"
               "offsets; the file's data does not depend on the number of ranks. The file is written\n"
               "as FILE.tmp.XXXXXX and renamed into place when complete. Format: docs/data-format.md.",
    .opts = opts,
    .min_pos = 1,
    .max_pos = 1,
    .run = run,
};
