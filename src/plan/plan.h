/* plan/plan.h: memory and step-time planner.
 *
 * What one training rank will hold, from the model's own size tables (nn/:
 * gt_model_plan_sizes for the host, gt_model_device_bytes for a GPU), the
 * trainer's batch buffers and the data pipeline, for a micro-batch; the
 * largest micro-batch that fits a memory budget (micro-batch x accumulation
 * keeps the global batch, so the result does not change); and a step-time
 * estimate from the model's FLOPs and the target's sustained rate.
 *
 * Used by `gridtrain plan` (cli/cmd_plan.c) and by the trainer, which checks
 * the plan against the memory the node has before allocating the model and
 * stops with the planner's advice instead of an out-of-memory kill.
 * No MPI calls and no file access: the caller supplies the data-pipeline
 * bytes; the loader's buffer formula comes from data/loader.h. */
#ifndef GT_PLAN_PLAN_H
#define GT_PLAN_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nn/model.h"

typedef struct gt_plan_target {
    char name[96];        /* e.g. "cpu (this node)", "gpu 80 GiB" */
    int gpu;              /* 0: host memory of a CPU rank; 1: device memory of one GPU per rank */
    double mem_bytes;     /* budget per rank; <= 0: unknown (no fit test) */
    double flops;         /* sustained FLOP/s per rank for the step time; <= 0: no estimate */
    double nominal_flops; /* gpu: the GPU's nominal dense bf16 FLOP/s (flops = nominal x efficiency) */
    double efficiency;    /* gpu: the share of nominal_flops a step sustains */
    const char *efficiency_from; /* gpu: where it comes from ("estimate", "measured: FILE", "plan.gpu_efficiency") */
    double context_bytes; /* gpu: CUDA context + library code per process (an estimate) */
} gt_plan_target;

typedef struct gt_plan_request {
    gt_model_config model; /* kind, window, n_in, n_out and hyper-parameters; max_batch is set here */
    int64_t batch;         /* global batch (train.batch) */
    int ranks;
    int64_t micro;         /* train.micro_batch; 0 = the whole per-rank share */
    int64_t n_y_data;      /* targets per sample in the data (nilm A; pdm 0) */
    int overlap;           /* train.overlap: the all-reduce runs in buckets during backward */
    double bucket_bytes;   /* train.bucket (0: GT_PLAN_BUCKET_BYTES) */
    double data_bytes;     /* host: dataset per rank (series + index), the largest rank */
    double base_bytes;     /* host: the process before training (libraries, MPI, HDF5) */
} gt_plan_request;

typedef struct gt_plan_mem {
    int64_t micro;
    double params, grads, moments; /* fp32 master weights, gradients, AdamW m and v */
    double acts;                   /* activation plan at `micro` (+ the GPU work area and targets) */
    double buffers;                /* host: loader slots (2 x the global batch) + trainer micro buffers */
    double data, base, context;    /* host data pipeline, process baseline, GPU: CUDA context (tg->context_bytes) */
    double stream;                 /* GPU: the model stream's context, cuBLAS handle workspace + scratch
                                    * (gt_cuda_stream_ctx_bytes) x GT_PLAN_GPU_ENGINES */
    double total;
} gt_plan_mem;

typedef struct gt_plan {
    int64_t per_rank;   /* ceil(batch / ranks): samples a rank processes per step (at most) */
    int64_t micro, accum;
    gt_plan_mem mem;    /* at the requested micro-batch */
    int fits;           /* mem.total <= budget (1 when the budget is unknown) */
    int64_t micro_fit;  /* largest micro-batch <= per_rank that fits; 0: none (the model alone is too big) */
    gt_plan_mem mem_fit;
    double n_params;
    double train_flops_per_sample; /* 3 x forward */
    double step_s;                 /* per_rank x flops / target rate; 0 without a rate */
} gt_plan;

/* Host bytes of the trainer's micro-batch buffers: targets and masks at the
 * model's output width n_y and at the data's target width n_y_ds (>= 1), and
 * the window indices. The trainer allocates exactly this (one block). */
int64_t gt_plan_micro_buffer_bytes(int64_t micro, int64_t n_y, int64_t n_y_ds);

/* Memory of one rank at micro-batch `micro`. */
void gt_plan_memory(const gt_plan_request *rq, const gt_plan_target *tg, int64_t micro, gt_plan_mem *out);
/* The plan for rq on tg (see gt_plan). */
void gt_plan_compute(const gt_plan_request *rq, const gt_plan_target *tg, gt_plan *out);
/* One line of advice when the plan does not fit (names train.micro_batch or
 * what else to change); "" when it fits. */
void gt_plan_advice(const gt_plan *p, const gt_plan_target *tg, char *buf, size_t n);
/* The table `gridtrain plan` prints. */
void gt_plan_print(FILE *f, const gt_plan_request *rq, const gt_plan_target *tg, const gt_plan *p);

/* The users' workstation tiers (docs/tiers.md): a350, ae450, ga660m -> one
 * GPU of the tier (memory, nominal bf16 rate x the assumed efficiency).
 * Returns 0, or -1 for an unknown name. */
int gt_plan_tier(const char *name, gt_model_kind kind, gt_plan_target *tg);
/* plan.calibration: the measured share of the nominal dense bf16 rate for
 * `kind` from a JSON file {"gpu": "...", "efficiency": {"s2p_cnn": x,
 * "s2p_tf": y, "lstm": z}, ...} (tests/gpu/run.sh writes one as
 * plan-calibration.json); the GPU's description into gpu. A missing file,
 * kind or a value outside (0, 1] ends the job with a one-line error naming
 * the file (exit 2). */
double gt_plan_calibration_read(const char *path, gt_model_kind kind, char *gpu, size_t gpu_len);

/* ---- the scale model: a step on P ranks over several nodes ----
 *
 * step = compute (per-rank samples x FLOPs / sustained rate) + the gradient
 * all-reduce (not overlapped with backward: what the trainer does today).
 * All-reduce: a ring over the P ranks (NCCL's and Open MPI's large-message
 * algorithm); every rank sends and receives 2 (P-1)/P of the fp32 gradient
 * bytes; on one node at the node's rank-to-rank bandwidth, across nodes at
 * the slower of that and one node's network bandwidth (the ring crosses each
 * node boundary once, so each node's links carry the same bytes), plus
 * 2 (P-1) message latencies. Data: each rank reads its shard once (the data
 * pipeline bytes); a node reads its ranks' shards at its share of the file
 * system. The efficiency is compute / step at P ranks' share of the global
 * batch: the global batch stays fixed (the result must not change with P), so
 * the per-rank compute shrinks as P grows while the all-reduce does not,
 * which is where scaling stops. */
typedef struct gt_plan_net {
    int ranks_per_node;   /* GPUs (or CPU ranks) per node */
    double intra_bw;      /* bytes/s between two ranks of a node (NVLink, PCIe, shared memory) */
    double inter_bw;      /* bytes/s of one node's network links together */
    double intra_lat, inter_lat; /* seconds per ring step within / across nodes */
    double read_bw;       /* bytes/s one node reads from the shared file system */
    double fs_bw;         /* bytes/s the whole file system serves (0: no cap) */
    int measured_intra;   /* intra_bw was measured on this node (gridtrain plan with several ranks) */
} gt_plan_net;

typedef struct gt_plan_scale {
    int ranks, nodes;
    int64_t per_rank;      /* ceil(global batch / ranks) */
    double grad_bytes;     /* fp32 gradients all-reduced per step */
    double compute_s, allreduce_s, step_s;
    double exposed_s;      /* the all-reduce time not hidden behind backward (= allreduce_s without overlap) */
    double efficiency;     /* compute_s / step_s */
    double samples_per_s;  /* the whole job */
    double read_bytes_per_rank, read_s;
    const char *bound;     /* what dominates the step */
} gt_plan_scale;

/* Assumed links of a tier or of CPU nodes (docs/tiers.md): ranks_per_node
 * from the tier (a350 1, ae450 2, ga660m 4; cpu: `cpu_ranks_per_node`). */
void gt_plan_net_defaults(const char *tier, int cpu_ranks_per_node, gt_plan_net *net);
/* The step on `ranks` ranks, from the plan p (computed for any rank count:
 * the FLOPs per sample and parameters do not depend on it). */
void gt_plan_scale_at(const gt_plan_request *rq, const gt_plan_target *tg, const gt_plan *p,
                      const gt_plan_net *net, int ranks, double data_bytes_per_rank, gt_plan_scale *out);
/* The scaling table `gridtrain plan` prints: the requested rank count and
 * 1, 4, 16, 64 ranks. */
void gt_plan_scale_print(FILE *f, const gt_plan_request *rq, const gt_plan_target *tg, const gt_plan *p,
                         const gt_plan_net *net, double data_bytes_total);

/* The share of a GPU's nominal dense bf16 rate a training step of
 * gridtrain's CUDA kernels sustains (model FLOPs per second / nominal), per
 * model kind, until a measurement calibrates it (`gridtrain plan
 * plan.calibration=FILE`, the file tests/gpu/run.sh writes; or
 * plan.gpu_efficiency): estimates from the kernels' structure, NOT measured
 * (docs/tiers.md "GPU rate"): the kind's table's gpu_efficiency
 * (nn/model_<kind>.c), 0.02 for a kind without one. The CPU plan measures
 * its own rate. */
double gt_plan_gpu_efficiency_estimate(gt_model_kind kind);
/* The share of backward in a step (forward 1, backward 2 units of work):
 * the part of the compute a bucketed all-reduce can hide behind. */
#define GT_PLAN_BACKWARD_SHARE (2.0 / 3.0)
/* train.bucket's default (GT_TRAIN_BUCKET_BYTES, without depending on train/). */
#define GT_PLAN_BUCKET_BYTES (4.0 * 1048576.0)
/* CUDA context, kernels and library code per process (an estimate). */
#define GT_PLAN_GPU_CONTEXT_BYTES (512.0 * 1048576.0)
/* Device models (engines) a GPU rank holds at once, each with its own stream
 * context: one. A training run's engine is freed before the evaluation after
 * training makes its own (cli/cmd_train.c), and validation uses the
 * training engine. */
#define GT_PLAN_GPU_ENGINES 1

#endif
