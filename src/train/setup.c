/* train/setup.c: the trainer's set-up before the first step: the settings
 * checked, the data read, the memory check and plan, the precision, the
 * model built on its engine, the gradient exchange, a resumed state restored
 * and the step schedule (train_impl.h). */
#define _GNU_SOURCE
#include "train/trainer.h"
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/check.h"
#include "core/check_mpi.h"
#include "core/log.h"
#include "core/timer.h"
#include "core/trace.h"
#include "core/watchdog.h"
#include "dist/allreduce.h"
#include "dist/comm.h"
#include "dist/reduce.h"
#include "nn/ops/cpu/gemm.h"
#include "nn/ops/dropout.h"
#include "plan/plan.h" /* memory check before the model is allocated */
#include "train/regress.h"
#include "train/train_impl.h"

void gt_trainer_check_config(const gt_train_config *cfg) {
    GT_CHECK(cfg->data_file && *cfg->data_file, GT_EXIT_USAGE, "train: no data file (data.file=FILE)");
    GT_CHECK(cfg->batch >= 1, GT_EXIT_USAGE, "train.batch must be >= 1 (got %lld)", (long long)cfg->batch);
    GT_CHECK(cfg->micro_batch >= 0, GT_EXIT_USAGE, "train.micro_batch must be >= 0");
    GT_CHECK(cfg->epochs >= 0 && cfg->max_steps >= 0 && cfg->time_budget_min >= 0, GT_EXIT_USAGE,
             "train.epochs, train.max_steps and train.time_budget must be >= 0");
    GT_CHECK(cfg->epochs > 0 || cfg->max_steps > 0 || cfg->time_budget_min > 0, GT_EXIT_USAGE,
             "train: no stopping rule (set train.epochs, train.max_steps or train.time_budget)");
    GT_CHECK(cfg->lr > 0 && cfg->lr_min >= 0, GT_EXIT_USAGE, "optim.lr must be > 0 and optim.lr_min >= 0");
    GT_CHECK(cfg->warmup >= 0, GT_EXIT_USAGE, "optim.warmup must be >= 0");
    GT_CHECK(cfg->lr_plateau >= 0 && cfg->lr_plateau < 1, GT_EXIT_USAGE,
             "train.lr_plateau must be in [0, 1) (0 turns the reduction off; got %g)", cfg->lr_plateau);
    GT_CHECK(cfg->plateau_patience >= 1, GT_EXIT_USAGE, "train.plateau_patience must be >= 1");
    GT_CHECK(cfg->nan_max_bad >= 1, GT_EXIT_USAGE, "train.nan_max_bad must be >= 1");
    GT_CHECK(cfg->log_every >= 1, GT_EXIT_USAGE, "train.log_every must be >= 1");
    GT_CHECK(cfg->keep >= 1, GT_EXIT_USAGE, "run.keep must be >= 1");
}

/* Collective: the task from the data file (or the configured one), each rank's share read, the dataset built. */
void gt_trainer_setup_data(trainer *t) {
    const gt_train_config *cfg = t->cfg;
    t->task = gt_task_choose(cfg->data.task_name, cfg->data_file, t->comm);
    t->task->check_model(&cfg->model, cfg->data_file);
    t->dcfg = cfg->data;
    gt_data_config_resolve(&t->dcfg, gt_task_id(t->task), gt_task_def_of(t->task)->data);
    t->dcfg.seed = cfg->seed;
    t->dcfg.x_channels_last = gt_model_input_channels_last(cfg->model.kind);
    gt_event_begin(t->ev[EV_READ]);
    t->ds = t->task->open(cfg->data_file, &t->dcfg, t->comm);
    gt_event_end(t->ev[EV_READ]);
    t->period_s = -gt_dist_max_d(-gt_dataset_min_period_s(t->ds), t->comm); /* the minimum over the ranks */
}

/* Before the model is allocated: what is resident now (libraries, the data
 * pipeline) plus the planner's model state, activations and batch buffers,
 * against this rank's budget (train.mem_limit, else the node's available
 * memory shared by its ranks). Too little stops the job with the largest
 * micro-batch that fits instead of an out-of-memory kill later. */
/* The planner's answer for this run's model, batch and ranks on target tg. */
static void plan_this_run(const trainer *t, const gt_model_config *mc, double base_bytes, const gt_plan_target *tg,
                          gt_plan *p) {
    gt_plan_request rq;
    memset(&rq, 0, sizeof rq);
    rq.model = *mc;
    rq.batch = t->cfg->batch;
    rq.ranks = t->size;
    rq.micro = t->micro;
    rq.n_y_data = gt_dataset_n_y(t->ds);
    rq.base_bytes = base_bytes;
    gt_plan_compute(&rq, tg, p);
}

static void check_memory(trainer *t, const gt_model_config *mc) {
    const gt_train_config *cfg = t->cfg;
    if (cfg->mem_limit < 0) return;
    if (t->dev.info.total_bytes > 0) { /* a GPU: its free memory, with the context already made */
        gt_plan_target tg;
        memset(&tg, 0, sizeof tg);
        tg.gpu = 1;
        tg.mem_bytes = t->dev.info.free_bytes;
        snprintf(tg.name, sizeof tg.name, "free on GPU %d", t->dev.info.ordinal);
        gt_plan p;
        plan_this_run(t, mc, 0, &tg, &p);
        if (p.fits) return;
        char adv[512];
        gt_plan_advice(&p, &tg, adv, sizeof adv);
        GT_FAIL(GT_EXIT_RESOURCE,
                "device memory: rank %d needs %.1f MiB on GPU %d (model state %.1f, activations %.1f at micro-batch "
                "%lld, stream context: cuBLAS workspace and scratch %.1f) but %.1f MiB are free: %s; see "
                "'gridtrain plan --gpu-mem'",
                t->rank, p.mem.total / 1048576.0, t->dev.info.ordinal,
                (p.mem.params + p.mem.grads + p.mem.moments) / 1048576.0, p.mem.acts / 1048576.0, (long long)p.micro,
                (p.mem.context + p.mem.stream) / 1048576.0, tg.mem_bytes / 1048576.0, adv);
    }
    int local_rank = 0, local_size = 1;
    gt_dist_node_rank(t->comm, &local_rank, &local_size);
    double rss = (double)gt_current_rss_bytes();
    gt_plan_target tg;
    memset(&tg, 0, sizeof tg);
    if (cfg->mem_limit > 0) {
        tg.mem_bytes = cfg->mem_limit;
        snprintf(tg.name, sizeof tg.name, "train.mem_limit");
    } else {
        int64_t avail = gt_mem_available_bytes();
        if (avail < 0) return; /* unknown: no check */
        tg.mem_bytes = rss + (double)avail / local_size;
        snprintf(tg.name, sizeof tg.name, "available on this node / %d rank%s", local_size, local_size == 1 ? "" : "s");
    }
    gt_plan p;
    plan_this_run(t, mc, rss, &tg, &p); /* rss: the process so far, the data pipeline included */
    if (p.fits) return;
    char adv[512];
    gt_plan_advice(&p, &tg, adv, sizeof adv);
    GT_FAIL(GT_EXIT_RESOURCE,
            "memory: rank %d needs %.1f MiB (resident now %.1f, model state %.1f, activations %.1f at micro-batch "
            "%lld, batch buffers %.1f) but has %.1f MiB (%s): %s; see 'gridtrain plan'",
            t->rank, p.mem.total / 1048576.0, rss / 1048576.0,
            (p.mem.params + p.mem.grads + p.mem.moments) / 1048576.0, p.mem.acts / 1048576.0, (long long)p.micro,
            p.mem.buffers / 1048576.0, tg.mem_bytes / 1048576.0, tg.name, adv);
}

/* Optimizer steps the run plans: epochs x batches per epoch, or max_steps
 * when smaller; 0 = no step limit (time budget only). */
static int64_t planned_steps(const gt_train_config *cfg, int64_t bpe) {
    int64_t total = cfg->epochs > 0 ? cfg->epochs * bpe : 0;
    if (cfg->max_steps > 0 && (total == 0 || cfg->max_steps < total)) total = cfg->max_steps;
    return total;
}

/* model.dropout = auto: dropout regularises runs that see their windows many
 * times (small data, several epochs: where overfitting starts); a run that
 * passes over them once or twice (the quickstart, a large file) only learns
 * slower with it, so there it is off. Same data and configuration, same
 * decision: a resumed run decides as the first segment did. */
static float resolve_dropout(const trainer *t, float dropout) {
    const gt_train_config *cfg = t->cfg;
    if (!cfg->dropout_auto || !(dropout > 0)) return dropout;
    int64_t bpe = gt_dataset_batches_per_epoch(t->ds, GT_SPLIT_TRAIN, cfg->batch);
    if (bpe < 1) return dropout; /* plan_schedule reports the empty split */
    int64_t total = planned_steps(cfg, bpe);
    double passes = total > 0 ? (double)total / (double)bpe : INFINITY;
    float d = passes > GT_TRAIN_DROPOUT_AUTO_EPOCHS ? dropout : 0.0f;
    if (t->rank == 0 && !cfg->quiet)
        GT_INFO("model.dropout auto: %g (the run passes over its training windows %s%.1f times; on above %d)", d,
                total > 0 ? "" : "an unlimited number of times, not ", total > 0 ? passes : 0.0,
                GT_TRAIN_DROPOUT_AUTO_EPOCHS);
    return d;
}

/* The replica on every rank (init from the seed, then rank 0's broadcast)
 * and the micro-batch buffers, one block of the size the planner counts. */
/* train.precision: the engine's products. auto: bf16 where the engine has
 * bf16 units (a GPU of compute capability 8.0 or later; a CPU with AMX or
 * AVX512-BF16 as oneDNN sees it), else fp32. The CPU engine computes fp32 and
 * bf16 (nn/ops/cpu/gemm.h); tf32 and fp16 there fall back to fp32. */
static void resolve_precision(trainer *t, gt_model_config *mc) {
    const int host = t->dev.engine == GT_ENGINE_HOST;
    if (mc->precision == GT_PRECISION_AUTO) {
        const char *why;
        mc->precision = gt_engine_auto_precision(t->dev.engine, t->dev.info.cc_major, &why);
        if (t->rank == 0) GT_INFO("train.precision=auto: %s (%s)", gt_precision_name(mc->precision), why);
    }
    if (host && (mc->precision == GT_PRECISION_FP16 || mc->precision == GT_PRECISION_TF32)) {
        if (t->rank == 0)
            GT_WARN("train.precision=%s applies to GPU engines; the CPU engine computes in fp32 (bf16 is its reduced precision)",
                    gt_precision_name(mc->precision));
        mc->precision = GT_PRECISION_FP32;
    }
    if (host && mc->precision == GT_PRECISION_BF16) {
        GT_CHECK(gt_cpu_bf16_available(), GT_EXIT_USAGE,
                 "train.precision=bf16 on the CPU engine needs a build with oneDNN (libdnnl-dev); this one has none");
        if (!gt_cpu_has_bf16_units() && t->rank == 0)
            GT_WARN("train.precision=bf16: this CPU has no bf16 units (CPU flags: %s; oneDNN ISA %s): bf16 is "
                    "emulated and slower than fp32 here",
                    gt_cpu_flags(), gt_cpu_isa_name());
    }
    t->fp16 = mc->precision == GT_PRECISION_FP16;
    t->precision = mc->precision;
    snprintf(t->precision_text, sizeof t->precision_text, "%s%s%s%s%s", gt_precision_name(mc->precision),
             mc->precision == GT_PRECISION_FP32 ? "" : " products (fp32 state)",
             host && mc->precision == GT_PRECISION_BF16 ? " on oneDNN " : "",
             host && mc->precision == GT_PRECISION_BF16 ? gt_cpu_isa_name() : "",
             t->cfg->amp || t->fp16 ? " + dynamic loss scaling" : "");
}

/* The gradient exchange (dist/grads.h): buckets of whole tensors planned
 * from the parameter table, started from backward's readiness hook. */
static void setup_exchange(trainer *t) {
    const gt_train_config *cfg = t->cfg;
    const gt_model *m = gt_engine_model(t->e);
    size_t *starts = GT_MALLOC((size_t)m->n_tensors * sizeof *starts);
    for (int i = 0; i < m->n_tensors; i++) starts[i] = m->tensors[i].offset;
    t->gx = gt_dist_grads_create(starts, m->n_tensors, m->n_params,
                                 cfg->bucket_bytes > 0 ? (size_t)cfg->bucket_bytes : GT_TRAIN_BUCKET_BYTES,
                                 gt_engine_grads_on_device(t->e), gt_engine_stream(t->e), t->comm);
    gt_dist_grads_set_overlap(t->gx, cfg->overlap);
    free(starts);
    if (t->rank != 0 || t->size == 1) return;
    size_t lo, hi;
    const int nb = gt_dist_grads_n_buckets(t->gx);
    gt_dist_grads_bucket(t->gx, 0, &lo, &hi);
    gt_log(cfg->quiet ? GT_LOG_DEBUG : GT_LOG_INFO, "dist: gradient all-reduce in %d bucket%s (the first %.1f MiB), %s",
           nb, nb == 1 ? "" : "s", (hi - lo) * sizeof(float) / 1048576.0,
           cfg->overlap ? "each started as backward produces it (train.overlap)"
                        : "after backward (train.overlap=false)");
}

void gt_trainer_build_model(trainer *t) {
    const gt_train_config *cfg = t->cfg;
    gt_model_config mc = cfg->model;
    t->task->shape_model(&mc, &t->dcfg, gt_dataset_n_targets(t->ds));
    t->micro = cfg->micro_batch > 0 && cfg->micro_batch < cfg->batch ? cfg->micro_batch : cfg->batch;
    GT_CHECK(t->micro <= INT_MAX, GT_EXIT_USAGE, "train.micro_batch too large");
    mc.max_batch = (int)t->micro;
    resolve_precision(t, &mc);
    mc.dropout = resolve_dropout(t, mc.dropout);
    check_memory(t, &mc);
    t->e = gt_engine_create(t->dev.engine, &mc);
    const size_t n_x = (size_t)gt_dataset_n_x(t->ds), n_y = gt_engine_n_y(t->e);
    const size_t n_y_ds = (size_t)gt_dataset_n_y(t->ds);
    GT_CHECK(gt_engine_n_x(t->e) == n_x, GT_EXIT_INTERNAL, "model input size %zu != dataset sample size %zu",
             gt_engine_n_x(t->e), n_x);
    GT_CHECK(!t->task->data_targets || n_y_ds == 0 || n_y == n_y_ds * (mc.gated ? 2 : 1), GT_EXIT_INTERNAL,
             "model output %zu != dataset targets %zu", n_y, n_y_ds);
    gt_engine_init(t->e, cfg->seed);
    gt_model *m = gt_engine_model(t->e);
    gt_dist_broadcast(m->params, m->n_params, t->comm); /* identical from the start, whatever happened */
    gt_engine_push_state(t->e);
    setup_exchange(t);

    const size_t mb = (size_t)t->micro, nyd = n_y_ds ? n_y_ds : 1;
    t->vidx = GT_CALLOC((size_t)gt_plan_micro_buffer_bytes(t->micro, (int64_t)n_y, (int64_t)n_y_ds), 1);
    float *ybuf = (float *)(t->vidx + mb);
    float *mbuf = ybuf + mb * n_y;
    t->vy = mbuf + mb * n_y;
    t->drop_ids = GT_CALLOC(mb, sizeof *t->drop_ids);
    t->vm = t->vy + mb * nyd;
    gt_task_ctx_init(&t->tc, t->task, t->ds, &mc, n_y, ybuf, mbuf);
}

/* Fresh state, or the newest valid checkpoint of the run directory. */
void gt_trainer_restore_state(trainer *t) {
    const gt_train_config *cfg = t->cfg;
    gt_amp_init(&t->amp, cfg->amp || t->fp16, 0, 0); /* fp16 products need dynamic loss scaling */
    t->ts.best_val = INFINITY;
    t->ts.best_step = -1;
    t->ts.loss_scale = t->amp.scale;
    t->ts.seed = cfg->seed;
    t->ts.lr_factor = 1.0;
    t->ns = *gt_dataset_norm(t->ds);
    t->resumed_from = -1;
    if (!cfg->resume) return;
    GT_CHECK(cfg->write_outputs, GT_EXIT_USAGE, "resume needs a run directory");
    gt_event_begin(t->ev[EV_CHECKPOINT]);
    t->resumed_from = gt_ckpt_load_expect(t->run_dir, GT_CKPT_LATEST, -1, gt_engine_model(t->e), &t->ts, &t->ns,
                                          t->ns.n, t->comm);
    gt_event_end(t->ev[EV_CHECKPOINT]);
    GT_CHECK(t->resumed_from >= 0, GT_EXIT_USAGE, "resume: no valid checkpoint in %s/checkpoints", t->run_dir);
    GT_CHECK(t->ts.seed == cfg->seed, GT_EXIT_USAGE,
             "resume: train.seed=%llu differs from the checkpoint's %llu (the data order would change)",
             (unsigned long long)cfg->seed, (unsigned long long)t->ts.seed);
    gt_engine_push_state(t->e);
    gt_dataset_set_norm(t->ds, &t->ns);
    gt_task_ctx_init(&t->tc, t->task, t->ds, gt_engine_config(t->e), t->tc.n_y, t->tc.ybuf, t->tc.mbuf);
    if (t->amp.enabled) {
        t->amp.scale = t->ts.loss_scale;
        t->amp.good_steps = t->ts.scale_good_steps;
    }
    t->last_ckpt_step = t->ts.step;
    if (t->rank == 0)
        GT_INFO("resumed %s at step %lld (epoch %llu, batch %lld)", t->run_dir, (long long)t->ts.step,
                (unsigned long long)t->ts.epoch, (long long)t->ts.batch_k);
}

/* A prefetch thread pays when it has a core of its own; with every core busy
 * computing (ranks x BLAS threads >= cores) it only adds hand-off latency,
 * and filling in the loop is faster. */
static int prefetch_auto(const trainer *t) {
    int local_rank = 0, local_size = 1;
    gt_dist_node_rank(t->comm, &local_rank, &local_size);
    cpu_set_t cs;
    int cores = sched_getaffinity(0, sizeof cs, &cs) == 0 ? CPU_COUNT(&cs) : 1;
    if (local_size > 1) cores = (int)sysconf(_SC_NPROCESSORS_ONLN); /* each rank's mask may be one core */
    const char *bt = getenv("OPENBLAS_NUM_THREADS");
    int threads = bt && atoi(bt) > 0 ? atoi(bt) : 1;
    int on = cores >= local_size * (threads + 1);
    if (t->rank == 0)
        GT_INFO("data: prefetch thread %s (%d cores, %d ranks x %d BLAS threads on this node)",
                on ? "on" : "off (no spare core: batches are filled in the loop)", cores, local_size, threads);
    return on;
}

/* Steps, validation interval, the loader at the (resumed) position; logs sizes. */
void gt_trainer_plan_schedule(trainer *t) {
    const gt_train_config *cfg = t->cfg;
    t->bpe = gt_dataset_batches_per_epoch(t->ds, GT_SPLIT_TRAIN, cfg->batch);
    int64_t n_train = gt_dataset_n_windows_global(t->ds, GT_SPLIT_TRAIN);
    GT_CHECK(t->bpe >= 1, GT_EXIT_DATA,
             "the train split has %lld windows, fewer than one batch (train.batch=%lld): use a smaller batch, "
             "a smaller window or stride, or more data", (long long)n_train, (long long)cfg->batch);
    t->total_steps = planned_steps(cfg, t->bpe);
    t->eval_every = cfg->eval_every > 0 ? cfg->eval_every : t->bpe;
    int prefetch = cfg->prefetch < 0 ? prefetch_auto(t) : cfg->prefetch;
    t->ld = gt_loader_create(t->ds, GT_SPLIT_TRAIN, cfg->batch, t->ts.epoch, t->ts.batch_k, prefetch);

    gt_engine_mem em;
    gt_engine_memory(t->e, &em);
    int64_t mem[4] = {gt_dataset_bytes(t->ds) + gt_loader_bytes(t->ld), (int64_t)em.state_bytes,
                      (int64_t)em.act_bytes, gt_current_rss_bytes()};
    gt_dist_allreduce_max_i64(mem, 4, t->comm);
    t->pipeline_bytes = mem[0];
    if (t->rank != 0 || cfg->quiet) return;
    GT_INFO("memory per rank (max over %d rank%s): data pipeline %.1f MiB (dataset + batch buffers), "
            "model state %.1f MiB (params, grads, AdamW), activations %.1f MiB, resident %.1f MiB",
            t->size, t->size == 1 ? "" : "s", mem[0] / 1048576.0, mem[1] / 1048576.0, mem[2] / 1048576.0,
            mem[3] / 1048576.0);
    GT_INFO("train: %s, %zu parameters, %lld train windows, batch %lld (micro-batch %lld per rank), "
            "%lld batches/epoch, %lld steps%s, precision %s, engine %s",
            gt_model_kind_name(cfg->model.kind), gt_engine_n_params(t->e), (long long)n_train, (long long)cfg->batch,
            (long long)t->micro, (long long)t->bpe, (long long)t->total_steps,
            t->total_steps ? "" : " (until the time budget)", t->precision_text, gt_engine_name(t->e));
}
