/* train/trainer.h: the distributed data-parallel training loop.
 *
 * One call trains one model on one file, on every rank of `comm`:
 *
 *   the task from the data file's kind (task/task.h: NILM or PdM) -> read
 *   shard (io/read.h) -> dataset (data/dataset.h: splits, screening,
 *   train-split statistics reduced over ranks and frozen) -> replica of the
 *   model on every rank (init from the seed, then broadcast from rank 0) ->
 *   per step: global batch (data/loader.h, prefetch thread) -> micro-batches
 *   (gradient accumulation) -> all-reduce of the gradient sum (dist/) ->
 *   NaN/Inf guard -> AMP unscale -> global-norm clipping -> AdamW with warmup +
 *   cosine -> progress, metrics, validation + replica check, early stopping,
 *   checkpoints, signals.
 *
 * Exactness. The loss is the masked MSE over the GLOBAL batch: every rank
 * multiplies d loss / d pred by 1 / M where M, the number of target elements
 * of the global batch, is agreed by a small all-reduce, so the summed gradient
 * equals the 1-rank gradient up to float summation order (the per-element
 * d loss / d pred values are bit-identical for any number of ranks).
 *
 * Outputs under cfg->run_dir: config.ini, manifest.json, metrics.jsonl,
 * screened.csv, forensics.jsonl (only after a non-finite step), timing.json
 * (after a run that finished), checkpoints/ (train/checkpoint.h). See
 * docs/training.md. The run directory is locked for the whole run (run.lock,
 * flock: a second trainer on it fails at once naming the holder); a fresh run
 * refuses a directory that holds another run's files unless cfg->overwrite
 * (which deletes them first). A run whose last checkpoint could not be
 * committed ends with GT_EXIT_RESOURCE naming the cause. Evaluation is not part of training: the command layer
 * (cli/cmd_train.c) evaluates the run directory afterwards, from its best
 * checkpoint (eval/), the same way `gridtrain eval RUN_DIR` does.
 *
 * The model runs on an engine (nn/engine.h): the host engine, or the CUDA
 * engine on one GPU per rank (cfg->device, train/device.h); the loop never
 * asks which task or engine it has, and the gradient all-reduce goes through
 * MPI or NCCL by where the engine keeps its gradients (dist/allreduce.h).
 *
 * Collective over comm; the configuration must be the same on every rank.
 * Returns the exit code (the same on every rank): 0, GT_EXIT_NUMERIC after
 * nan_max_bad consecutive non-finite steps, GT_EXIT_PREEMPTED after a signal
 * (or train.stop_after) was handled with a checkpoint. Other errors end the
 * job (GT_CHECK / MPI_Abort). */
#ifndef GT_TRAIN_TRAINER_H
#define GT_TRAIN_TRAINER_H

#include <limits.h>
#include <mpi.h>
#include <stdint.h>

#include "data/dataset.h"
#include "nn/device.h"
#include "nn/model.h"

/* The defaults of gt_train_config, in one place: gt_train_config_defaults and
 * the option table of `gridtrain train` (cli/cmd_train.c, through GT_TRAIN_STR,
 * which also makes docs/configuration.md) both take them from here. */
#define GT_TRAIN_DEFAULT_LR 1e-3
#define GT_TRAIN_DEFAULT_LR_MIN 1e-5
#define GT_TRAIN_DEFAULT_WARMUP 100
#define GT_TRAIN_DEFAULT_WEIGHT_DECAY 0.01
#define GT_TRAIN_DEFAULT_BETA1 0.9
#define GT_TRAIN_DEFAULT_BETA2 0.999
#define GT_TRAIN_DEFAULT_EPS 1e-8
#define GT_TRAIN_DEFAULT_CLIP 1.0
#define GT_TRAIN_DEFAULT_BATCH 256
/* default gradient all-reduce bucket (train.bucket, dist/grads.h); `gridtrain plan` times the same size */
#define GT_TRAIN_BUCKET_BYTES ((size_t)4 << 20)
#define GT_TRAIN_DEFAULT_EPOCHS 10
/* Small-data defaults (docs/training.md "Small datasets" has the evidence):
 * early stopping, and halving the learning rate after plateau_patience
 * validations without improvement, before early stopping ends the run.
 * Dropout on s2p_cnn's dense layer (model.dropout) is off by default: on the
 * evidence it lowered the validation loss but not the held-out accuracy, and
 * cost the rarest appliance its recall. model.dropout = auto gives
 * GT_TRAIN_AUTO_DROPOUT to runs that pass over their training windows more
 * than GT_TRAIN_DROPOUT_AUTO_EPOCHS times, 0 to the others. */
#define GT_TRAIN_DEFAULT_DROPOUT 0
#define GT_TRAIN_AUTO_DROPOUT 0.2
#define GT_TRAIN_DROPOUT_AUTO_EPOCHS 3
#define GT_TRAIN_DEFAULT_PATIENCE 5
#define GT_TRAIN_DEFAULT_LR_PLATEAU 0.5
#define GT_TRAIN_DEFAULT_PLATEAU_PATIENCE 2
#define GT_TRAIN_DEFAULT_SEED 1
#define GT_TRAIN_DEFAULT_NAN_MAX_BAD 5
#define GT_TRAIN_DEFAULT_LOG_EVERY 50
#define GT_TRAIN_DEFAULT_TRACE_EVENTS 200000 /* about 20 MB of JSON per rank at most */
/* Upper bounds of the keys that size a buffer, checked where the configuration
 * is parsed (one line naming the key): about 1.6 GB of JSON per rank, under
 * the 2 GiB a rank's timeline may have; the batch sizes as `bench model`'s. */
#define GT_TRAIN_MAX_TRACE_EVENTS (1 << 24)
#define GT_TRAIN_MAX_BATCH (1 << 24)
#define GT_TRAIN_DEFAULT_TRACE_STEPS 50
#define GT_TRAIN_DEFAULT_GPU_TELEMETRY_S 10
#define GT_TRAIN_DEFAULT_TRACE_EVERY 100
#define GT_TRAIN_DEFAULT_CHECKPOINT_MINUTES 30
#define GT_TRAIN_DEFAULT_KEEP 3
#define GT_TRAIN_STR_(x) #x
#define GT_TRAIN_STR(x) GT_TRAIN_STR_(x)

typedef struct gt_train_config {
    /* [data] */
    const char *data_file;  /* its kind chooses the task (NILM: s2p_cnn, s2p_tf; PdM: lstm), or data.task */
    gt_data_config data;    /* .task (from .task_name, data.task, or the file's kind: gt_task_choose), and a
                               window/stride left to the task's default, are resolved from the data file;
                               .seed = train seed */
    /* [model]: kind and hyper-parameters; window, n_in, n_out and max_batch are
     * filled in by the trainer from the dataset and micro_batch */
    gt_model_config model;
    int dropout_auto;       /* model.dropout = auto: model.dropout applies only when the run's planned steps cover
                               the train split more than GT_TRAIN_DROPOUT_AUTO_EPOCHS times (or have no limit);
                               otherwise the trainer uses 0 */
    /* [optim] */
    double lr, lr_min;      /* peak and final learning rate */
    int64_t warmup;         /* linear warmup steps */
    gt_adamw_config adamw;  /* betas, eps, weight decay (matrices only) */
    double clip;            /* global-norm clip; <= 0 off */
    /* [train] */
    int64_t batch;          /* GLOBAL samples per optimizer step */
    int64_t micro_batch;    /* max samples per forward on one rank (0 = batch) */
    int64_t epochs;         /* 0 = no epoch limit (then max_steps or time_budget) */
    int64_t max_steps;      /* 0 = no step limit */
    double time_budget_min; /* 0 = none; stops (with a checkpoint) when exceeded */
    int64_t eval_every;     /* steps between validations (0 = once per epoch) */
    int64_t patience;       /* validations without improvement before stopping (0 = off) */
    double lr_plateau;      /* lr factor x= this after plateau_patience validations without improvement
                               (0 = off); the product never takes the lr below lr_min */
    int64_t plateau_patience;
    uint64_t seed;
    int prefetch;           /* 1: background prefetch thread, 0: fill in the loop, -1: auto
                               (on when the node has a spare core per rank) */
    int balance;            /* 1: the global batch is split evenly over the ranks each step (dist/balance.h) */
    int overlap;            /* 1: each gradient bucket's all-reduce starts during backward (dist/grads.h) */
    int64_t bucket_bytes;   /* gradient all-reduce bucket (whole tensors, from the top); 0 = GT_TRAIN_BUCKET_BYTES */
    int nan_max_bad;        /* K consecutive non-finite steps -> GT_EXIT_NUMERIC */
    int amp;                /* dynamic loss scaler on (compute stays fp32 on both engines) */
    gt_device_request device; /* auto (default: a GPU when one is usable), cpu or cuda (train/device.h) */
    int64_t log_every;      /* steps between progress lines / metrics */
    int64_t stop_after;     /* testing: checkpoint and exit 75 after this many steps of this segment (0 off) */
    int trace;              /* train.trace: RUN_DIR/trace.json, the timeline of every rank (train/trace.c) */
    int64_t trace_events;   /* spans kept per rank (the buffer's fixed capacity) */
    int64_t trace_steps;    /* every step of the first trace_steps is traced ... */
    int64_t trace_every;    /* ... then every trace_every-th step */
    double gpu_telemetry_s; /* GPU runs: NVML sampling period (seconds); 0 off (nn/telemetry.h) */
    double regression_warn; /* warn when samples/s falls below (1 - this) x the median of earlier runs of the
                               same configuration and hardware beside this one (train/regress.h); 0 off */
    double regression_min_s; /* runs (this one and the earlier ones) that trained less are not compared */
    /* [run] */
    const char *run_dir;    /* NULL or "": runs/<SLURM_JOB_ID or timestamp> */
    int64_t checkpoint_every;  /* steps (0 = off) */
    double checkpoint_minutes; /* wall minutes (0 = off) */
    int keep;               /* committed checkpoints kept */
    double mem_limit;       /* memory per rank, bytes: 0 = what the node has (MemAvailable, cgroup) shared by its
                               ranks, < 0 = no check (plan/plan.h: checked before the model is allocated) */
    int resume;             /* load the newest valid checkpoint of run_dir first */
    int overwrite;          /* a fresh run may replace another run's files in run_dir (run.overwrite) */
    const char *config_text;/* resolved configuration (INI), stored in config.ini and checkpoints */
    /* embedding (bench, tests) */
    int write_outputs;      /* 0: no run directory, no files, no checkpoints, no signals */
    int quiet;              /* 0: progress lines on rank 0 */
    int64_t measure_from;   /* steady-state rates are measured from this step of the segment (default 0) */
} gt_train_config;

/* Defaults of every field (the CLI table's defaults); data_file must be set. */
void gt_train_config_defaults(gt_train_config *cfg, gt_model_kind kind);

typedef struct gt_train_result {
    int exit_code;
    int64_t steps;            /* optimizer steps done (total, over segments) */
    int64_t skipped;          /* non-finite steps skipped */
    int64_t samples;          /* training samples consumed (global) */
    double last_loss;         /* global loss of the last step */
    double first_loss;        /* global loss of the first step of this segment */
    double last_val, best_val;/* NaN when no validation ran */
    uint64_t params_checksum; /* xxh64 of the final parameters (gt_dist_checksum) */
    int replicas_identical;   /* checked at the end */
    double train_s;           /* wall seconds of this segment's loop */
    double samples_per_s;     /* global samples/s from step measure_from of the segment */
    double data_stall;        /* max over ranks of waiting / wall, same window */
    double device_stall;      /* a device engine: max over ranks of the device's wait before forwards / wall, same window; -1 on the CPU */
    int64_t n_losses;         /* per-step global losses of this segment */
    double *losses;           /* [n_losses], malloc'd; release with gt_train_result_free */
    int64_t pipeline_bytes;   /* dataset + batch buffers, max over ranks */
    int64_t best_step;        /* step of the best validation loss (-1: none) */
    double lr_factor;         /* the plateau factor at the end (1: never reduced) */
    int64_t lr_reductions;    /* plateau reductions in this segment */
    char run_dir[PATH_MAX];   /* the run directory used ("" without outputs) */
} gt_train_result;

/* Collective (see the top of this file). `res` may be NULL. */
int gt_train_run(const gt_train_config *cfg, MPI_Comm comm, gt_train_result *res);
void gt_train_result_free(gt_train_result *res);

#endif
