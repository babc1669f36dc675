/* cli/cmd_inspect.c: `gridtrain inspect FILE`: each rank's share, schema and
 * data validation report (io/inspect.h). Opens the file read-only. */
#include <stdio.h>

#include "cli/commands.h"
#include "core/check.h"
#include "io/inspect.h"

static const gt_opt opts[] = {
    {"inspect.max_report", "max-report", GT_OPT_INT, "50", "household/turbine lines printed (the rest are summarised)", NULL},
    {"inspect.spike_k", "spike-k", GT_OPT_FLOAT, "20", "spike threshold in robust sigmas (1.4826 MAD) of first differences", NULL},
    {"inspect.stuck_rows", "stuck-rows", GT_OPT_INT, "20", "identical consecutive values that count as a stuck run", NULL},
    {"inspect.gap_factor", "gap-factor", GT_OPT_FLOAT, "1.5", "a time step longer than this many periods is a gap", NULL},
    {"inspect.block", "block", GT_OPT_SIZE, "64M", "per-rank read buffer per collective round", NULL},
    {"inspect.strict", "strict", GT_OPT_BOOL, "false", "exit 3 when the data has findings (not only on schema errors)", NULL},
    {NULL, NULL, 0, NULL, NULL, NULL},
};

static int run(const gt_args *a, MPI_Comm comm) {
    gt_inspect_opts o;
    gt_inspect_opts_defaults(&o);
    const int64_t max_report = gt_args_int(a, "inspect.max_report"); /* checked before it narrows to int */
    GT_CHECK(max_report >= 0 && max_report <= 1 << 20, GT_EXIT_USAGE, "inspect.max_report = %lld: give 0 to %d",
             (long long)max_report, 1 << 20);
    o.max_report = (int)max_report;
    o.spike_k = gt_args_float(a, "inspect.spike_k");
    o.stuck_rows = gt_args_int(a, "inspect.stuck_rows");
    o.gap_factor = gt_args_float(a, "inspect.gap_factor");
    o.block_bytes = gt_args_size(a, "inspect.block");
    o.fail_on_data = gt_args_bool(a, "inspect.strict");
    GT_CHECK(o.max_report >= 0 && o.spike_k > 0 && o.stuck_rows >= 2 && o.gap_factor > 1, GT_EXIT_USAGE,
             "inspect: need max_report >= 0, spike_k > 0, stuck_rows >= 2, gap_factor > 1");
    return gt_io_inspect(a->pos[0], &o, comm, stdout, NULL, NULL);
}

const gt_cmd gt_cmd_inspect = {
    .name = "inspect",
    .usage = "inspect FILE [options]",
    .summary = "validate a dataset file and report each rank's share and per-item data findings",
    .details = "Checks the schema (exit 3 with one line naming the file and dataset when broken), then\n"
               "reads every rank's share in bounded blocks and reports per household/turbine: rows,\n"
               "time-stamp gaps, NaN/Inf, negative power, robust spikes and stuck runs. Read-only.",
    .opts = opts,
    .min_pos = 1,
    .max_pos = 1,
    .run = run,
};
