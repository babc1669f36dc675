/* train/bench_train.c: weak-scaling benchmark of the trainer (see bench_train.h). */
#include "train/bench_train.h"

#include <cblas.h>
#include <string.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "core/log.h"
#include "dist/reduce.h"

#define BENCH_WARM 3

/* One run on comm with global batch g_batch; keeps the best samples/s (and its stall). */
static void measure(const gt_train_config *base, int64_t g_batch, MPI_Comm comm, double *rate, double *stall,
                    int64_t *pipeline_bytes) {
    gt_train_config c = *base;
    c.batch = g_batch;
    c.micro_batch = base->micro_batch > 0 ? base->micro_batch : base->batch; /* same work per forward */
    gt_train_result res;
    gt_train_run(&c, comm, &res);
    if (res.samples_per_s > *rate) {
        *rate = res.samples_per_s;
        *stall = res.device_stall >= 0 ? res.device_stall : res.data_stall; /* a GPU: its own wait, from events */
    }
    *pipeline_bytes = res.pipeline_bytes;
    gt_train_result_free(&res);
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

    /* 1 rank x 1 thread (rank 0 alone, the others wait), then P ranks x 1
     * thread with the same per-rank batch as configured and, side by side,
     * with the gradient all-reduce after backward (train.overlap=false) and
     * with neither balanced batches nor overlap (train.balance=false): the
     * variants interleaved in each repetition, best of reps each. */
    enum { V_SOLO, V_CONF, V_NO_OVERLAP, V_NEITHER, V_N };
    gt_train_config v[V_N];
    for (int i = 0; i < V_N; i++) v[i] = c;
    v[V_NO_OVERLAP].overlap = 0;
    v[V_NEITHER].overlap = 0, v[V_NEITHER].balance = 0;
    const int compare = size > 1 && c.overlap && c.balance;
    double rate[V_N] = {0}, stall[V_N] = {0};
    int64_t bytes[V_N] = {0};
    MPI_Comm solo;
    MPI_CHECK(MPI_Comm_split(comm, rank == 0 ? 0 : MPI_UNDEFINED, 0, &solo));
    for (int r = 0; r < reps; r++) {
        if (rank == 0) measure(&v[V_SOLO], c.batch, solo, &rate[V_SOLO], &stall[V_SOLO], &bytes[V_SOLO]);
        gt_dist_barrier(comm);
        for (int i = V_CONF; i < (compare ? V_N : V_CONF + 1); i++)
            measure(&v[i], c.batch * size, comm, &rate[i], &stall[i], &bytes[i]);
    }
    if (rank == 0) MPI_Comm_free(&solo);

    if (rank == 0) {
        const double rate1 = rate[V_SOLO], rateP = rate[V_CONF];
        double eff = rate1 > 0 ? rateP / (size * rate1) : 0;
        fprintf(out,
                "bench train: %s, %lld steps (%d warm-up), per-rank batch %lld, best of %d\n"
                "  1 rank  x 1 thread: %10.1f samples/s  data stall %5.2f%%  pipeline %.1f MiB/rank\n"
                "  %d ranks x 1 thread: %10.1f samples/s  data stall %5.2f%%  pipeline %.1f MiB/rank\n"
                "  weak-scaling efficiency %.3f (target >= 0.9); data stall %.2f%% (target < 2%%)\n",
                gt_model_kind_name(c.model.kind), (long long)c.max_steps, BENCH_WARM, (long long)c.batch, reps,
                rate1, 100 * stall[V_SOLO], bytes[V_SOLO] / 1048576.0, size, rateP, 100 * stall[V_CONF],
                bytes[V_CONF] / 1048576.0, eff, 100 * stall[V_CONF]);
        static const char *const what[V_N] = {"", "", "all-reduce after backward (train.overlap=false)",
                                              "neither balanced batches nor overlap (train.balance=false)"};
        for (int i = V_NO_OVERLAP; compare && i < V_N; i++)
            fprintf(out, "  %d ranks, %s: %10.1f samples/s, efficiency %.3f; as configured x%.3f of it\n", size,
                    what[i], rate[i], rate1 > 0 ? rate[i] / (size * rate1) : 0, rate[i] > 0 ? rateP / rate[i] : 0);
        fflush(out);
    }
    return 0;
}
