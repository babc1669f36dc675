/* cli/cmd_bench.c: `gridtrain bench read|model|train`.
 *   read FILE   collective HDF5 read rate vs a plain sequential read of the same
 *               file, printed as a ratio (io/bench.h)
 *   model       one model's train/inference samples/s, ms/step, peak RSS and
 *               FLOP rate as a fraction of OpenBLAS's sgemm rate (nn/bench.h);
 *               tests/nn/torch/bench_vs_torch.py runs it beside PyTorch
 *   train CONF  1 rank vs all ranks on the same data: weak-scaling efficiency
 *               and data stall (train/bench_train.h) */
#include <stdint.h>
#include <string.h>

#include "cli/commands.h"
#include "core/check.h"
#include "io/bench.h"
#include "nn/bench.h"
#include "train/bench_train.h"

/* The largest bench.batch (the same bound as data.window). */
#define GT_BENCH_MAX_BATCH (1 << 24)

static const gt_opt opts[] = {
    {"bench.reps", "reps", GT_OPT_INT, "3", "read: repetitions; the best rate is reported", NULL},
    {"bench.model", "model", GT_OPT_STR, "s2p_cnn", "model: which model", GT_MODEL_KIND_CHOICES},
    {"bench.batch", "batch", GT_OPT_INT, "0", "model: batch B (0 = the workload's: 256 / 32 / 64)", NULL},
    {"bench.window", "window", GT_OPT_INT, "0", "model: W / L / T (0 = the kind's default)", NULL},
    {"bench.tbptt", "tbptt", GT_OPT_INT, "0", "model: lstm truncated-BPTT chunk K (0 = whole window)", NULL},
    {"bench.steps", "steps", GT_OPT_INT, "10", "model: timed training steps", NULL},
    {"bench.warmup", "warmup", GT_OPT_INT, "2", "model: untimed steps first", NULL},
    {"bench.precision", "precision", GT_OPT_STR, "fp32", "model: the products (bf16: oneDNN; auto: bf16 where the CPU has bf16 units)", "fp32|bf16|auto"},
    {"bench.mem_check", "mem-check", GT_OPT_BOOL, "false", "model: s2p_tf memory at L = 1024, 2048, 4096 (B = 4)", NULL},
    {"bench.json", "json", GT_OPT_BOOL, "false", "model: also print one GT_BENCH_JSON line", NULL},
    {"bench.device", "device", GT_OPT_STR, "auto", "train: where the replicas run (overrides CONFIG's train.device when given)", "auto|cpu|cuda"},
    {NULL, NULL, 0, NULL, NULL, NULL},
};

static int bench_model(const gt_args *a) {
    int kind = gt_model_kind_parse(gt_args_str(a, "bench.model"));
    GT_ASSERT(kind >= 0);
    gt_nn_bench_config cfg;
    gt_nn_bench_config_default(&cfg, (gt_model_kind)kind);
    const int64_t steps = gt_args_int(a, "bench.steps"), warmup = gt_args_int(a, "bench.warmup");
    GT_CHECK(steps >= 1 && steps <= 1000000000 && warmup >= 0 && warmup <= 1000000000, GT_EXIT_USAGE,
             "bench: steps must be in [1, 1e9] and warmup in [0, 1e9] (got %lld, %lld)", (long long)steps,
             (long long)warmup);
    cfg.steps = (int)steps;
    cfg.warmup = (int)warmup;
    cfg.mem_check = gt_args_bool(a, "bench.mem_check");
    const int prec = gt_precision_parse(gt_args_str(a, "bench.precision"));
    GT_CHECK(prec == GT_PRECISION_FP32 || prec == GT_PRECISION_BF16 || prec == GT_PRECISION_AUTO, GT_EXIT_USAGE,
             "bench.precision = '%s': give fp32, bf16 or auto", gt_args_str(a, "bench.precision"));
    cfg.precision = (gt_precision)prec;
    const int64_t batch = gt_args_int(a, "bench.batch"), window = gt_args_int(a, "bench.window"),
                  tbptt = gt_args_int(a, "bench.tbptt");
    /* the limits of train (data.window, model.tbptt): sizes computed from them stay in range */
    GT_CHECK(batch >= 0 && batch <= GT_BENCH_MAX_BATCH, GT_EXIT_USAGE, "bench.batch = %lld: give 0 (the default) to %d",
             (long long)batch, GT_BENCH_MAX_BATCH);
    GT_CHECK(window >= 0 && window <= (1 << 24), GT_EXIT_USAGE, "bench.window = %lld: give 0 (the default) to %d",
             (long long)window, 1 << 24);
    GT_CHECK(tbptt >= 0 && tbptt <= (1 << 24), GT_EXIT_USAGE, "bench.tbptt = %lld: give 0 to %d", (long long)tbptt,
             1 << 24);
    cfg.batch = batch > 0 ? (int)batch : gt_nn_bench_default_batch((gt_model_kind)kind);
    cfg.window = (int)window;
    cfg.tbptt = (int)tbptt;
    /* a generous estimate of the activation bytes in floating point: beyond
     * 2^60 a size_t product inside the model could wrap; below it a model too
     * large for the machine ends as out of memory (exit 4) with the real size */
    gt_model_config mc;
    gt_nn_bench_model_config(&cfg, &mc);
    const double est = gt_model_bytes_estimate(&mc, cfg.batch);
    GT_CHECK(est < 0x1p60, GT_EXIT_USAGE,
             "bench model: batch %d x window %d of %s needs about %.3g bytes, beyond what can be addressed: give a "
             "smaller --batch or --window", cfg.batch, mc.window, gt_model_kind_name((gt_model_kind)kind), est);
    gt_nn_bench_result res;
    gt_nn_bench_model(&cfg, &res);
    gt_nn_bench_print(stdout, &cfg, &res);
    if (gt_args_bool(a, "bench.json")) gt_nn_bench_print_json(stdout, &cfg, &res);
    return 0;
}

static int run(const gt_args *a, MPI_Comm comm) {
    const char *what = a->pos[0];
    if (!strcmp(what, "read")) {
        int reps = (int)gt_args_int(a, "bench.reps");
        GT_CHECK(reps >= 1, GT_EXIT_USAGE, "bench.reps must be >= 1 (got %d)", reps);
        GT_CHECK(a->n_pos == 2, GT_EXIT_USAGE, "usage: gridtrain bench read FILE");
        return gt_io_bench_read(a->pos[1], reps, comm, stdout);
    }
    if (!strcmp(what, "model")) {
        GT_CHECK(a->n_pos == 1, GT_EXIT_USAGE, "usage: gridtrain bench model [--model K --batch B ...]");
        int rank = 0;
        MPI_Comm_rank(comm, &rank);
        return rank == 0 ? bench_model(a) : 0; /* one process measures; others idle */
    }
    if (!strcmp(what, "train")) {
        GT_CHECK(a->n_pos == 2, GT_EXIT_USAGE, "usage: mpirun -n 2 gridtrain bench train CONFIG [key=value ...]");
        return gt_bench_train(a, comm);
    }
    GT_FAIL(GT_EXIT_USAGE, "unknown benchmark '%s' (expected: read, model, train)", what);
}

const gt_cmd gt_cmd_bench = {
    .name = "bench",
    .usage = "bench read FILE | bench model [--model K ...] | bench train CONFIG [key=value ...]",
    .summary = "benchmarks: collective read vs plain read, model throughput vs sgemm, weak scaling",
    .details = "bench read FILE: every rank reads its shard collectively (parallel HDF5 over MPI-IO); in\n"
               "the same run the file's bytes are read with plain read(2); prints the ratio.\n"
               "bench model: train and inference samples/s, ms/step, peak RSS, FLOP rate as a fraction\n"
               "of the sgemm rate OpenBLAS reaches in the same run (threads: OPENBLAS_NUM_THREADS); with\n"
               "--precision bf16 also of the bf16 matmul rate oneDNN reaches in the same run, and what ran\n"
               "each op family's products (oneDNN's kernel and ISA, or OpenBLAS).\n"
               "tests/nn/torch/bench_vs_torch.py runs it beside PyTorch and prints the ratios.\n"
               "bench train CONFIG: under mpirun -n P, 1 rank alone then all P ranks on the same data;\n"
               "prints samples/s, the weak-scaling efficiency and the data-stall share; every key of\n"
               "'gridtrain train' may follow CONFIG as section.key=value (data.file=..., train.batch=...).",
    .opts = opts,
    .min_pos = 1,
    .max_pos = 2,
    .run = run,
    .passes_keys_of = "train",
};
