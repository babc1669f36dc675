/* cli/cmd_plan.c: `gridtrain plan CONFIG|--resume RUN_DIR [key=value ...]`:
 * the memory per rank and step time of a training configuration (plan/plan.h),
 * read with train's option table and configuration (cli/train_args.h). */
#define _GNU_SOURCE
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/train_args.h"
#include "core/check.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "core/watchdog.h"
#include "train/bench_train.h"
#include "train/checkpoint.h"
#include "train/trainer.h"
#include "core/timer.h"
#include "data/dataset.h"
#include "dist/allreduce.h"
#include "dist/comm.h"
#include "dist/reduce.h"
#include "io/format.h"
#include "io/read.h"
#include "io/shard.h"
#include "nn/bench.h"
#include "plan/plan.h"
#include "task/task.h"

/* ---------------------------------------------------------- gridtrain plan -- */

/* The data pipeline of the largest rank from the file's row counts (the
 * readers' shard assignment), without reading the series. */
static double plan_data_bytes(gt_train_config *c, int ranks, MPI_Comm comm, int *n_cols, const gt_task_i **task_out,
                              double *total_out) {
    gt_file_index ix;
    char err[GT_IO_ERR_LEN];
    hid_t f = gt_io_open(c->data_file, comm, GT_KIND_UNKNOWN, &ix, err, sizeof err);
    if (f < 0) gt_io_fail(comm, GT_EXIT_DATA, err);
    H5Fclose(f);
    const gt_task_i *task = gt_task_choose(c->data.task_name, c->data_file, comm); /* data.task or the file's kind */
    task->check_model(&c->model, c->data_file);
    gt_data_config_resolve(&c->data, gt_task_id(task), gt_task_def_of(task)->data);
    *n_cols = ix.n_cols;
    const gt_nilm_index *nx = gt_nilm_index_of(&ix); /* NILM: the low-resolution rows and fault flags */
    int64_t *w = GT_MALLOC(sizeof(int64_t) * (size_t)(ix.n_items > 0 ? ix.n_items : 1));
    int *owner = GT_MALLOC(sizeof(int) * (size_t)(ix.n_items > 0 ? ix.n_items : 1));
    for (int i = 0; i < ix.n_items; i++) w[i] = ix.row_offset[i + 1] - ix.row_offset[i];
    gt_shard_assign(w, ix.n_items, ranks, owner);
    double worst = 0;
    *total_out = 0;
    for (int r = 0; r < ranks; r++) {
        int64_t rows = 0, low = 0, items = 0;
        for (int i = 0; i < ix.n_items; i++)
            if (owner[i] == r) {
                rows += w[i], items++;
                if (nx && nx->lowres_offset) low += nx->lowres_offset[i + 1] - nx->lowres_offset[i];
            }
        double b = (double)gt_dataset_series_bytes(gt_task_def_of(task)->data, &c->data, rows, low, ix.n_cols,
                                                   nx ? nx->has_faults : 0);
        b += (double)items * 512.0; /* the per-item index: a few hundred bytes */
        if (b > worst) worst = b;
        *total_out += b;
    }
    free(w), free(owner);
    gt_file_index_free(&ix);
    *task_out = task;
    return worst;
}

/* The target a rank plans for: a GPU tier or plan.gpu_mem (its rate from the
 * kind's efficiency: estimated, plan.calibration or plan.gpu_efficiency), or
 * this CPU node (its memory shared by the ranks, the sgemm rate rank 0
 * measures). Collective on the CPU path. The GPU a calibration was measured
 * on in calib_gpu[calib_bytes]. */
static void plan_target(const gt_args *a0, gt_plan_request *rq, gt_plan_target *tg, char *calib_gpu, size_t calib_bytes,
                        double data, int ranks, int rank, MPI_Comm comm) {
    memset(tg, 0, sizeof *tg);
    const char *tier = gt_args_str(a0, "plan.tier");
    double gmem = (double)gt_args_size(a0, "plan.gpu_mem"), tflops = gt_args_float(a0, "plan.gpu_tflops");
    GT_CHECK(tflops >= 0 && isfinite(tflops), GT_EXIT_USAGE, "plan.gpu_tflops must be a finite number >= 0 (got %g)",
             tflops);
    {
        const char *calib = gt_args_str(a0, "plan.calibration");
        char why[256];
        FILE *cf = calib[0] ? gt_fopen_regular(calib, why, sizeof why) : NULL;
        GT_CHECK(!calib[0] || cf, GT_EXIT_USAGE, "plan.calibration '%s': %s", calib, why);
        if (cf) fclose(cf);
    }
    if (tier[0]) GT_CHECK(gt_plan_tier(tier, rq->model.kind, tg) == 0, GT_EXIT_USAGE, "plan.tier: unknown tier '%s'", tier);
    if (gmem > 0) {
        double b = gmem;
        if (!tier[0]) {
            tg->gpu = 1;
            tg->context_bytes = GT_PLAN_GPU_CONTEXT_BYTES;
            snprintf(tg->name, sizeof tg->name, "one GPU per rank");
        }
        tg->mem_bytes = b;
    }
    if (tg->gpu) { /* the step time: nominal rate x the share gridtrain's kernels sustain */
        const char *calib = gt_args_str(a0, "plan.calibration");
        const double eff = gt_args_float(a0, "plan.gpu_efficiency");
        GT_CHECK(eff >= 0 && eff <= 1, GT_EXIT_USAGE, "plan.gpu_efficiency must be in [0, 1] (got %g)", eff);
        if (tflops > 0) tg->nominal_flops = tflops * 1e12;
        tg->efficiency = gt_plan_gpu_efficiency_estimate(rq->model.kind);
        tg->efficiency_from = "an estimate from the kernels' structure, not measured";
        if (calib[0]) {
            tg->efficiency = gt_plan_calibration_read(calib, rq->model.kind, calib_gpu, calib_bytes);
            tg->efficiency_from = "measured";
        }
        if (eff > 0) {
            tg->efficiency = eff;
            tg->efficiency_from = "plan.gpu_efficiency";
        }
        tg->flops = tg->nominal_flops * tg->efficiency;
    }
    if (!tg->gpu) {
        /* CPU: this process as the baseline, the node's memory shared by the ranks, the rate
         * this node's OpenBLAS sustains x the fraction the engine reaches (docs/benchmarks.md) */
        int local_rank = 0, local_size = 1;
        gt_dist_node_rank(comm, &local_rank, &local_size);
        rq->data_bytes = data;
        rq->base_bytes = (double)gt_current_rss_bytes();
        double cm = (double)gt_args_size(a0, "plan.cpu_mem");
        if (cm <= 0) {
            int64_t avail = gt_mem_available_bytes();
            /* plan.ranks given: assume they share this node (mpirun -n P on one box); else this job's */
            int per_node = gt_args_int(a0, "plan.ranks") > 0 ? ranks : local_size;
            tg->mem_bytes = avail > 0 ? (double)avail / (per_node > 0 ? per_node : 1) : 0;
            snprintf(tg->name, sizeof tg->name, "CPU rank (this node's available memory / %d rank%s)", per_node,
                     per_node == 1 ? "" : "s");
        } else {
            tg->mem_bytes = cm;
            snprintf(tg->name, sizeof tg->name, "CPU rank (plan.cpu_mem)");
        }
        /* rank 0 measures, every rank plans with its rate */
        const double gflops = gt_dist_bcast_d(rank == 0 ? gt_nn_bench_sgemm_gflops(1024, 2) : 0, comm);
        tg->flops = gflops * 1e9 * 0.78;
    }
}

/* The scale model: the tier's links, or CPU nodes of this job's (or
 * plan.ranks_per_node) ranks; on one CPU node of several ranks the
 * all-reduce of the model's gradients measured as the trainer runs it.
 * Collective. */
static void plan_net(const gt_args *a0, const gt_plan_target *tg, const gt_plan *p, int size, MPI_Comm comm,
                     gt_plan_net *net) {
    const char *tier = gt_args_str(a0, "plan.tier");
    int local_rank = 0, local_size = 1;
    gt_dist_node_rank(comm, &local_rank, &local_size);
    const int rpn_opt = (int)gt_args_int(a0, "plan.ranks_per_node");
    GT_CHECK(rpn_opt >= 0, GT_EXIT_USAGE, "plan.ranks_per_node must be >= 0");
    gt_plan_net_defaults(tier[0] ? tier : NULL, rpn_opt > 0 ? rpn_opt : local_size, net);
    if (rpn_opt > 0) net->ranks_per_node = rpn_opt;
    const double inter = gt_args_float(a0, "plan.net_gbs"), fs = gt_args_float(a0, "plan.fs_gbs");
    if (inter > 0) net->inter_bw = inter * 1e9;
    if (fs > 0) net->read_bw = fs * 1e9;
    if (!tg->gpu && size > 1 && local_size == size) {
        /* calibration: this node's all-reduce of the model's gradients, as the trainer runs it */
        size_t n = (size_t)p->n_params;
        float *g = GT_CALLOC(n ? n : 1, sizeof(float));
        gt_dist_allreduce_sum(g, n, GT_TRAIN_BUCKET_BYTES, comm); /* warm-up */
        double t0 = gt_now();
        for (int i = 0; i < 5; i++) gt_dist_allreduce_sum(g, n, GT_TRAIN_BUCKET_BYTES, comm);
        double dt = gt_dist_max_d((gt_now() - t0) / 5, comm);
        free(g);
        double pure = dt - 2.0 * (size - 1) * net->intra_lat;
        if (pure > 0) {
            net->intra_bw = 2.0 * (size - 1) / size * (double)n * sizeof(float) / pure;
            net->measured_intra = 1;
        }
    }
}

static int run_plan(const gt_args *a0, MPI_Comm comm) {
    gt_args a;
    int resume = 0;
    gt_train_config c;
    gt_train_resolve_config(a0, &a, &c, &resume);
    int size = 1, rank = 0;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    int ranks = (int)gt_args_int(a0, "plan.ranks");
    GT_CHECK(ranks >= 0, GT_EXIT_USAGE, "plan.ranks must be >= 0");
    if (ranks == 0) ranks = size;
    int n_cols = 0;
    const gt_task_i *task = NULL;
    double data_total = 0;
    double data = plan_data_bytes(&c, ranks, comm, &n_cols, &task, &data_total);

    gt_plan_request rq;
    memset(&rq, 0, sizeof rq);
    rq.model = c.model;
    task->shape_model(&rq.model, &c.data, n_cols);
    rq.batch = c.batch;
    rq.ranks = ranks;
    rq.micro = c.micro_batch;
    rq.n_y_data = task->data_targets ? n_cols : 0;
    rq.overlap = c.overlap;
    rq.bucket_bytes = (double)(c.bucket_bytes > 0 ? c.bucket_bytes : (int64_t)GT_TRAIN_BUCKET_BYTES);
    _Static_assert(GT_TRAIN_BUCKET_BYTES == (size_t)GT_PLAN_BUCKET_BYTES, "train.bucket default agrees with plan's");

    gt_plan_target tg;
    char calib_gpu[128] = "";
    plan_target(a0, &rq, &tg, calib_gpu, sizeof calib_gpu, data, ranks, rank, comm);
    gt_plan p;
    gt_plan_compute(&rq, &tg, &p);
    gt_plan_net net;
    plan_net(a0, &tg, &p, size, comm, &net);
    const double data_scale = gt_args_float(a0, "plan.data_scale");
    GT_CHECK(data_scale > 0 && isfinite(data_scale), GT_EXIT_USAGE, "plan.data_scale must be a finite number > 0");
    if (rank == 0) {
        gt_plan_print(stdout, &rq, &tg, &p);
        gt_plan_scale_print(stdout, &rq, &tg, &p, &net, data_total * data_scale);
        if (!tg.gpu)
            printf("(CPU rate: OpenBLAS sgemm on this node x 0.78, the share the engine reaches; "
                   "OPENBLAS_NUM_THREADS per rank)\n");
        else
            printf("(GPU rate: nominal x %.3g for %s, %s%s%s%s; device memory exact for gridtrain's buffers, the "
                   "CUDA context is an estimate)\n", tg.efficiency, gt_model_kind_name(rq.model.kind),
                   tg.efficiency_from, calib_gpu[0] ? " on " : "", calib_gpu, calib_gpu[0] ? " (plan.calibration)" : "");
        fflush(stdout);
    }
    gt_args_free(&a);
    return p.fits ? 0 : GT_EXIT_RESOURCE;
}

const gt_cmd gt_cmd_plan = {
    .name = "plan",
    .usage = "plan CONFIG|--resume RUN_DIR [key=value ...] [--ranks P] [--gpu-mem 24G|80G|141G] [--tier a350|ae450|ga660m]",
    .summary = "memory per rank and step time of a training configuration, and the largest micro-batch that fits",
    .details = "Reads only the data file's row counts. Memory per rank from the model's own size tables\n"
               "(parameters, gradients, AdamW moments, activations at the micro-batch), the batch buffers and\n"
               "the rank's share of the series; on a GPU the device buffers of the CUDA model (exact) plus the\n"
               "context (estimate). Prints the largest train.micro_batch that fits (accumulation keeps the\n"
               "global batch) and a step-time estimate. Exit 4 when the configuration does not fit. The\n"
               "trainer runs the same check before allocating (train.mem_limit). See docs/tiers.md.",
    .opts = gt_train_opts,
    .opts_init = gt_train_opts_init,
    .min_pos = 0,
    .max_pos = 1,
    .run = run_plan,
    .prints_config = 1,
    .shares_keys_of = "train",
    .own_prefix = "plan.",
};
