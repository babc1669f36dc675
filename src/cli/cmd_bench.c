/* cli/cmd_bench.c: `gridtrain bench read FILE` (collective read rate vs a plain
 * sequential read of the same file, printed as a ratio). */
#include <string.h>

#include "cli/commands.h"
#include "core/check.h"
#include "io/bench.h"

static const gt_opt opts[] = {
    {"bench.reps", "reps", GT_OPT_INT, "3", "repetitions; the best rate is reported", NULL},
    {NULL, NULL, 0, NULL, NULL, NULL},
};

static int run(const gt_args *a, MPI_Comm comm) {
    const char *what = a->pos[0];
    int reps = (int)gt_args_int(a, "bench.reps");
    GT_CHECK(reps >= 1, GT_EXIT_USAGE, "bench.reps must be >= 1 (got %d)", reps);
    if (!strcmp(what, "read")) {
        GT_CHECK(a->n_pos == 2, GT_EXIT_USAGE, "usage: gridtrain bench read FILE");
        return gt_io_bench_read(a->pos[1], reps, comm, stdout);
    }
    GT_FAIL(GT_EXIT_USAGE, "unknown benchmark '%s' (expected: read)", what);
}

const gt_cmd gt_cmd_bench = {
    .name = "bench",
    .usage = "bench read FILE [--reps N]",
    .summary = "benchmarks: collective HDF5 read rate against a plain read of the same file",
    .details = "bench read: every rank reads its shard collectively (parallel HDF5 over MPI-IO);\n"
               "in the same run the file's bytes are read sequentially with plain read(2), and\n"
               "the ratio collective/plain is printed. Warm the page cache first for warm figures.",
    .opts = opts,
    .min_pos = 1,
    .max_pos = 2,
    .run = run,
};
