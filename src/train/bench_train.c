/* train/bench_train.c: weak-scaling benchmark of the trainer (see bench_train.h). */
#include "train/bench_train.h"

#include <cblas.h>
#include <string.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "core/log.h"
#include "dist/reduce.h"

#define BENCH_WARM 3

/* Best of reps runs on comm with global batch g_batch; returns samples/s and the stall. */
static void measure(const gt_train_config *base, int64_t g_batch, int reps, MPI_Comm comm, double *rate,
                    double *stall, int64_t *pipeline_bytes) {
    gt_train_config c = *base;
    c.batch = g_batch;
    c.micro_batch = base->micro_batch > 0 ? base->micro_batch : base->batch; /* same work per forward */
    *rate = 0;
    *stall = 1;
    for (int r = 0; r < reps; r++) {
        gt_train_result res;
        gt_train_run(&c, comm, &res);
        if (res.samples_per_s > *rate) {
            *rate = res.samples_per_s;
            *stall = res.data_stall;
        }
        *pipeline_bytes = res.pipeline_bytes;
        gt_train_result_free(&res);
    }
}

int gt_train_bench_run(const gt_train_config *cfg, int reps, MPI_Comm comm, FILE *out) {
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    GT_CHECK(reps >= 1, GT_EXIT_USAGE, "bench: reps must be >= 1");
    gt_train_config c = *cfg;
    c.write_outputs = 0;
    c.quiet = 1;
    c.resume = 0;
    c.stop_after = 0;
    c.epochs = 0;
    c.max_steps = cfg->max_steps > 0 ? cfg->max_steps : 30;
    GT_CHECK(c.max_steps > BENCH_WARM, GT_EXIT_USAGE, "bench train: train.max_steps must be > %d", BENCH_WARM);
    c.measure_from = BENCH_WARM;
    c.eval_every = c.max_steps + 1; /* one validation at the very end, outside the measurement */
    c.patience = 0;
    c.time_budget_min = 0;
    openblas_set_num_threads(1);

    /* 1 rank x 1 thread: rank 0 alone, the others wait */
    double rate1 = 0, stall1 = 0, rateP = 0, stallP = 0;
    int64_t bytes1 = 0, bytesP = 0;
    MPI_Comm solo;
    MPI_CHECK(MPI_Comm_split(comm, rank == 0 ? 0 : MPI_UNDEFINED, 0, &solo));
    if (rank == 0) {
        measure(&c, c.batch, reps, solo, &rate1, &stall1, &bytes1);
        MPI_Comm_free(&solo);
    }
    gt_dist_barrier(comm);
    /* P ranks x 1 thread, same per-rank batch; and, side by side, without
     * the overlap of the gradient exchange with backward (train.overlap) */
    measure(&c, c.batch * size, reps, comm, &rateP, &stallP, &bytesP);
    double rateN = 0, stallN = 0;
    int64_t bytesN = 0;
    if (size > 1 && c.overlap) {
        gt_train_config n = c;
        n.overlap = 0;
        measure(&n, c.batch * size, reps, comm, &rateN, &stallN, &bytesN);
    }

    if (rank == 0) {
        double eff = rate1 > 0 ? rateP / (size * rate1) : 0;
        fprintf(out,
                "bench train: %s, %lld steps (%d warm-up), per-rank batch %lld, best of %d\n"
                "  1 rank  x 1 thread: %10.1f samples/s  data stall %5.2f%%  pipeline %.1f MiB/rank\n"
                "  %d ranks x 1 thread: %10.1f samples/s  data stall %5.2f%%  pipeline %.1f MiB/rank\n"
                "  weak-scaling efficiency %.3f (target >= 0.9); data stall %.2f%% (target < 2%%)\n",
                gt_model_kind_name(c.model.kind), (long long)c.max_steps, BENCH_WARM, (long long)c.batch, reps,
                rate1, 100 * stall1, bytes1 / 1048576.0, size, rateP, 100 * stallP, bytesP / 1048576.0, eff,
                100 * stallP);
        if (rateN > 0)
            fprintf(out,
                    "  %d ranks, gradient all-reduce after backward (train.overlap=false): %10.1f samples/s, "
                    "efficiency %.3f; overlap gains x%.3f\n",
                    size, rateN, rate1 > 0 ? rateN / (size * rate1) : 0, rateN > 0 ? rateP / rateN : 0);
        fflush(out);
    }
    return 0;
}
