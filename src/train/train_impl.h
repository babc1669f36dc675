/* train/train_impl.h: the trainer's state, shared by the files of train/
 * (internal to this folder). trainer.c has the phases and the loop,
 * outputs.c the run directory's files, forensics.c the non-finite step
 * report. */
#ifndef GT_TRAIN_TRAIN_IMPL_H
#define GT_TRAIN_TRAIN_IMPL_H

#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#include "data/loader.h"
#include "dist/comm.h"
#include "dist/grads.h"
#include "nn/engine.h"
#include "nn/telemetry.h"
#include "task/task.h"
#include "train/amp.h"
#include "train/checkpoint.h"
#include "train/device.h"
#include "train/trainer.h"

enum { EV_READ, EV_DATA_WAIT, EV_BALANCE, EV_FORWARD, EV_BACKWARD, EV_ALLREDUCE, EV_OPTIMIZER, EV_EVAL, EV_CHECKPOINT, EV_N };

/* What the phases share: set up once, then read by every step. */
typedef struct trainer {
    const gt_train_config *cfg;
    MPI_Comm comm;
    int rank, size;
    const gt_task_i *task;  /* chosen by the data file's kind */
    gt_task_ctx tc;         /* the task bound to this model and dataset */
    gt_data_config dcfg;    /* cfg->data resolved for the task */
    gt_dataset *ds;
    gt_train_device dev;    /* where the engine runs (train.device) */
    gt_dist_place *place;   /* (size) every rank's node, node-local rank and GPU */
    int n_nodes;
    gt_engine *e;
    int fp16;               /* fp16 products on the GPU: the loss scaler is on whatever train.amp says */
    double device_stall;    /* a device engine: share of the measured wall time its device waited before forwards (max over ranks), -1: not measured */
    gt_precision precision; /* the engine's products, train.precision resolved (auto, CPU fallbacks) */
    char precision_text[96];/* for the log: "bf16 products, fp32 state" ... */
    gt_dist_grads *gx;      /* the gradient exchange (buckets planned from the parameter table) */
    gt_loader *ld;
    int64_t micro;          /* the engine's max_batch */
    float *vy, *vm;         /* (micro, n_y_ds) validation targets from the dataset */
    int64_t *vidx;          /* (micro) validation window numbers; owns the micro-batch block */
    uint64_t *drop_ids;     /* (micro) stable ids of a micro-batch's windows: the dropout keys */
    int64_t lr_reductions;  /* plateau reductions of the learning rate in this segment */
    gt_train_state ts;
    gt_amp_scaler amp;
    gt_norm_stats ns;
    char run_dir[PATH_MAX];
    int lock_fd;            /* rank 0: run.lock held (flock) for the run, else -1 */
    int overwrite_pending;  /* every rank: run.overwrite found a previous run, deleted once setup passed */
    FILE *metrics;
    int ev[EV_N];
    int64_t bpe, total_steps, eval_every;
    int64_t last_ckpt_step;
    char ckpt_why[1024]; /* rank 0: why the last failed checkpoint failed (gt_ckpt_save), or "" */
    double last_val;
    double period_s;        /* the data's shortest sampling period over all ranks (manifest) */
    int64_t resumed_from;   /* -1: a fresh run */
    char start_time[32];
    uint64_t data_hash;
    int64_t data_bytes;
    int64_t pipeline_bytes; /* dataset + batch buffers, max over ranks */
    int gpu_on;             /* GPU telemetry gathered at each log interval (every rank: a GPU run, train.gpu_telemetry_s > 0) */
    gt_gpu_telemetry *gpu;  /* this rank's NVML sampler; NULL when NVML or the GPU is not there */
    gt_gpu_stats *gpu_run;  /* rank 0, at the end: [size] each rank's whole-run summary (manifest.json) */
    char gpu_warned[1024];  /* the last warnings printed (not repeated every interval) */
} trainer;

/* The loop's clocks and running sums (one segment of a run). */
typedef struct train_clock {
    int tty, printed_live;
    double t_loop0, elapsed0, last_ckpt_time;
    int64_t seg_batches;
    double iv_t0, iv_wait, iv_loss; /* the logging interval */
    int64_t iv_steps, iv_samples;
    double meas_t0, meas_wait;      /* the steady-state measurement (from measure_from) */
    double meas_dev0;               /* the device engine's input stall at meas_t0 (-1: not measured) */
    int64_t meas_samples;
    double first_loss, last_loss;
    int64_t validated_step, cap_losses;
} train_clock;

/* One optimizer step's outcome. */
typedef struct train_step {
    const gt_batch *b;
    double wait;       /* seconds waiting for the batch */
    double loss;       /* global loss of the batch */
    double gnorm;      /* global gradient norm (before clipping) */
    float lr;          /* 0 when the step was skipped */
    int applied;       /* 0: non-finite, skipped */
    int checkpoint_due;/* rank 0's clock: train.checkpoint_minutes passed */
    int time_up;       /* rank 0's clock: train.time_budget reached */
} train_step;

/* One row of metrics.jsonl: "train" (progress), "val" (validation) or "gpu"
 * (one rank's GPU telemetry over the last log interval). */
typedef struct train_metrics_row {
    const char *type;
    int64_t step;
    uint64_t epoch;
    double loss, val_loss, best_val, lr, samples_per_s, data_stall, grad_norm, time_s;
    int rank;                 /* "gpu" rows: whose GPU */
    const gt_gpu_stats *gpu;  /* "gpu" rows: the interval's telemetry */
} train_metrics_row;

/* outputs.c */
void gt_train_iso_time(int64_t ms, char *buf, size_t n);
void gt_train_now_iso(char *buf, size_t n);
void gt_train_resolve_run_dir(trainer *t);              /* collective */
/* Collective: rank 0 locks run_dir/run.lock (flock, held until
 * gt_train_unlock_run_dir or the process ends); a held lock ends the job
 * naming the holder's pid, host and start time. Then, for a fresh run, a
 * directory holding another run's files is refused (exit 2) unless
 * cfg->overwrite, which deletes them. */
void gt_train_claim_run_dir(trainer *t);
/* Collective. run.overwrite: deletes the previous run's files (after every
 * check that can fail up front passed) and starts run.log anew. */
void gt_train_clear_previous_run(trainer *t);
void gt_train_unlock_run_dir(trainer *t);
/* Collective. Every rank: its warnings and errors (rank 0: its info lines too) are also
 * appended to RUN_DIR/run.log from now on (core/log.h), what `gridtrain
 * doctor` reads; the CLI closes it after the evaluation that follows. */
void gt_train_open_log(const trainer *t);
/* RUN_DIR/name for writing, never through a symbolic link (core/fsutil.h);
 * mode "w": complete at fclose (gt_fopen_atomic), "s": a stream written in
 * place (gt_fopen_replace), "a": appended (gt_fopen_append). Fatal (exit 4)
 * when it cannot be opened. */
FILE *gt_train_open_in_run(const trainer *t, const char *name, const char *mode);
void gt_train_write_json_line(FILE *f, void *cjson);     /* takes ownership of the cJSON object */
void gt_train_open_outputs(trainer *t);                  /* collective: config.ini, manifest, metrics, screened.csv */
void gt_train_write_manifest(const trainer *t, const char *end_time, int exit_code); /* rank 0 */
void gt_train_metrics_row(const trainer *t, const train_metrics_row *r);           /* rank 0 */
/* Collective: timing.json (events min/max/mean over ranks, throughput, stall,
 * final and best losses: what `eval` reports of the training). */
void gt_train_write_timing(const trainer *t, double train_time_s, double samples_per_s, double data_stall,
                           double final_loss);

/* trace.c (train.trace). gt_train_trace_start: collective (a barrier: the
 * common clock origin, returned), then core/trace.h records. Call
 * gt_train_write_trace, collective, after the prefetch thread has ended:
 * RUN_DIR/trace.json from rank 0, then recording stops. */
double gt_train_trace_start(const trainer *t);
void gt_train_write_trace(const trainer *t, double origin);

/* telemetry (outputs.c). gt_train_gpu_start: every rank, a GPU run: this
 * rank's NVML sampler, one info line when it is not there. gt_train_gpu_interval:
 * collective at a log interval: rank 0 writes a "gpu" row per rank and warns
 * (throttling, an idle GPU, ECC, Xid). gt_train_gpu_finish: collective: rank 0
 * keeps every rank's run summary in t->gpu_run for the manifest; samplers stop. */
void gt_train_gpu_start(trainer *t);
void gt_train_gpu_interval(trainer *t, double time_s);
void gt_train_gpu_finish(trainer *t);

/* forensics.c. Collective: finds the samples of this batch that are
 * non-finite on their own, gathers them at rank 0, which appends them to
 * forensics.jsonl and logs one line. Clobbers the gradients. */
void gt_train_forensics(trainer *t, const gt_batch *b, double loss, double gnorm);

/* The set-up phases (train/setup.c), in the order gt_train_run calls them. */
void gt_trainer_check_config(const gt_train_config *cfg);
void gt_trainer_setup_data(trainer *t);
void gt_trainer_build_model(trainer *t);
void gt_trainer_restore_state(trainer *t);
void gt_trainer_plan_schedule(trainer *t);

#endif
