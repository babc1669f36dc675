/* train/trainer.c: the distributed data-parallel training loop (see
 * trainer.h), as named phases:
 *
 *   gt_train_run:  check_config -> setup_data -> build_model -> restore_state
 *                  -> plan_schedule -> open outputs -> loop -> finish
 *   the loop:      stop_reason? -> train_one_step -> (bad step?) -> log_progress
 *                  -> validate_and_select -> checkpoint_if_due
 *
 * The task (task/task.h: NILM or PdM, chosen by the data file) says what the
 * targets and the objective are; the engine (nn/engine.h) runs the model.
 * Nothing here depends on which task or engine it is. */
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

/* Gradient all-reduce buckets: large enough to amortise latency, small enough
 * that several are in flight at once. */

static const char *const g_ev_names[EV_N] = {"read", "data_wait", "balance", "forward", "backward",
                                             "allreduce", "optimizer", "eval", "checkpoint"};

void gt_train_config_defaults(gt_train_config *c, gt_model_kind kind) {
    memset(c, 0, sizeof *c);
    /* the task comes from the data file (or data.task): its window and stride
     * defaults are filled in when it is known (gt_data_config_resolve) */
    gt_data_config_defaults(&c->data);
    gt_model_config_default(&c->model, kind);
    c->model.dropout = gt_model_kind_has(kind, GT_MODEL_HAS_DROPOUT) ? (float)GT_TRAIN_DEFAULT_DROPOUT : 0.0f;
    c->dropout_auto = 0; /* model.dropout = auto (cli/cmd_train.c) sets it with GT_TRAIN_AUTO_DROPOUT */
    c->patience = GT_TRAIN_DEFAULT_PATIENCE;
    c->lr_plateau = GT_TRAIN_DEFAULT_LR_PLATEAU;
    c->plateau_patience = GT_TRAIN_DEFAULT_PLATEAU_PATIENCE;
    c->lr = GT_TRAIN_DEFAULT_LR;
    c->lr_min = GT_TRAIN_DEFAULT_LR_MIN;
    c->warmup = GT_TRAIN_DEFAULT_WARMUP;
    c->adamw = (gt_adamw_config){.beta1 = GT_TRAIN_DEFAULT_BETA1, .beta2 = GT_TRAIN_DEFAULT_BETA2,
                                 .eps = GT_TRAIN_DEFAULT_EPS, .weight_decay = GT_TRAIN_DEFAULT_WEIGHT_DECAY};
    c->clip = GT_TRAIN_DEFAULT_CLIP;
    c->batch = GT_TRAIN_DEFAULT_BATCH;
    c->epochs = GT_TRAIN_DEFAULT_EPOCHS;
    c->seed = GT_TRAIN_DEFAULT_SEED;
    c->prefetch = 1; /* the CLI's default is auto (-1) */
    c->overlap = 1;
    c->balance = 1;
    c->nan_max_bad = GT_TRAIN_DEFAULT_NAN_MAX_BAD;
    c->log_every = GT_TRAIN_DEFAULT_LOG_EVERY;
    c->checkpoint_minutes = GT_TRAIN_DEFAULT_CHECKPOINT_MINUTES;
    c->keep = GT_TRAIN_DEFAULT_KEEP;
    c->write_outputs = 1;
    c->trace_events = GT_TRAIN_DEFAULT_TRACE_EVENTS;
    c->trace_steps = GT_TRAIN_DEFAULT_TRACE_STEPS;
    c->trace_every = GT_TRAIN_DEFAULT_TRACE_EVERY;
    c->regression_warn = GT_REGRESS_DEFAULT_THRESHOLD;
    c->regression_min_s = GT_REGRESS_MIN_TRAIN_S;
    c->gpu_telemetry_s = GT_TRAIN_DEFAULT_GPU_TELEMETRY_S;
}

void gt_train_result_free(gt_train_result *res) {
    if (!res) return;
    free(res->losses);
    res->losses = NULL;
    res->n_losses = 0;
}

/* ------------------------------------------------------------ phases -- */

/* Collective: the masked training loss over the whole validation split (NaN
 * when it is empty), and the replica check. */
static double validate(trainer *t) {
    const int traced = t->cfg->trace ? gt_trace_sample(1) : 0; /* always on the timeline */
    gt_event_begin(t->ev[EV_EVAL]);
    gt_engine *e = t->e;
    float *x = gt_engine_input(e);
    int64_t nloc = gt_dataset_n_windows_local(t->ds, GT_SPLIT_VAL);
    double acc[2] = {0, 0};
    for (int64_t first = 0; first < nloc; first += t->micro) {
        int64_t want = nloc - first < t->micro ? nloc - first : t->micro;
        int64_t n = gt_dataset_local_range(t->ds, GT_SPLIT_VAL, first, want, t->vidx);
        if (n <= 0) break;
        gt_dataset_fill(t->ds, GT_SPLIT_VAL, t->vidx, n, x, t->vy, t->vm, NULL);
        const float *y, *mask; /* targets first: x is the engine's input buffer, which the forward may refill */
        gt_task_targets(&t->tc, x, t->vy, t->vm, (int)n, &y, &mask);
        const float *pred = gt_engine_forward(e, gt_task_input(&t->tc, x, (int)n), (int)n);
        acc[0] += gt_task_objective(&t->tc, NULL, pred, y, mask, (int)n, 0.0f);
        size_t ne = (size_t)n * t->tc.n_t;
        for (size_t i = 0; i < ne; i++) acc[1] += mask ? mask[i] : 1.0f;
    }
    gt_dist_allreduce_sum_d(acc, 2, t->comm);
    gt_engine_pull_state(e);
    const gt_model *m = gt_engine_model(e);
    int same = gt_dist_replicas_identical(m->params, m->n_params, t->comm);
    GT_CHECK(same, GT_EXIT_INTERNAL,
             "model replicas differ between ranks at step %lld (data-parallel invariant broken: "
             "a rank computed a different update; see the checksums above). Please report.",
             (long long)t->ts.step);
    gt_event_end(t->ev[EV_EVAL]);
    if (t->cfg->trace) gt_trace_sample(traced);
    return acc[1] > 0 ? acc[0] / acc[1] : NAN;
}

static void checkpoint(trainer *t, double elapsed_s) {
    if (!t->cfg->write_outputs) return;
    const int traced = t->cfg->trace ? gt_trace_sample(1) : 0; /* always on the timeline */
    gt_event_begin(t->ev[EV_CHECKPOINT]);
    t->ts.loss_scale = t->amp.scale;
    t->ts.scale_good_steps = t->amp.good_steps;
    t->ts.elapsed_s = elapsed_s;
    gt_engine_pull_state(t->e);
    int rc = gt_ckpt_save(t->run_dir, gt_engine_model(t->e), &t->ts, &t->ns, t->cfg->config_text, t->cfg->keep,
                          t->comm, t->ckpt_why, sizeof t->ckpt_why);
    if (rc) GT_WARN("checkpoint of step %lld failed (code %d); training continues", (long long)t->ts.step, rc);
    else t->last_ckpt_step = t->ts.step;
    gt_event_end(t->ev[EV_CHECKPOINT]);
    if (t->cfg->trace) gt_trace_sample(traced);
}

static double elapsed(const train_clock *k) { return k->elapsed0 + gt_now() - k->t_loop0; }

static void end_live_line(const trainer *t, train_clock *k) {
    if (k->printed_live && t->rank == 0) fputc('\n', stderr);
    k->printed_live = 0;
}

/* At a step boundary (the same decision on every rank): why the loop stops,
 * or NULL. A signal or train.stop_after checkpoints first (exit 75). */
static const char *stop_reason(trainer *t, train_clock *k, int stop_early, int stop_time, int *exit_code) {
    const gt_train_config *cfg = t->cfg;
    if (t->total_steps > 0 && t->ts.step >= t->total_steps) return "done";
    if (cfg->epochs > 0 && (int64_t)t->ts.epoch >= cfg->epochs) return "done";
    if (stop_early) return "early stopping (validation loss stopped improving)";
    if (stop_time) return "time budget reached";
    int sig = cfg->write_outputs ? gt_signal_pending_any(t->comm) : 0;
    if (!sig && !(cfg->stop_after > 0 && k->seg_batches >= cfg->stop_after)) return NULL;
    end_live_line(t, k);
    checkpoint(t, elapsed(k));
    if (t->rank == 0)
        GT_INFO("%s at step %lld: checkpoint written; continue with 'gridtrain train --resume %s'",
                sig ? (sig == 15 ? "SIGTERM" : sig == 10 ? "SIGUSR1" : "signal") : "train.stop_after",
                (long long)t->ts.step, t->run_dir);
    *exit_code = GT_EXIT_PREEMPTED;
    return "preempted";
}

/* Forward and backward of this rank's part of the batch in micro-batches
 * (gradients accumulate); returns the local objective sum. */
static double compute_gradients(trainer *t, const gt_batch *b, float coef) {
    gt_engine *e = t->e;
    gt_task_ctx *tc = &t->tc;
    const int own_targets = tc->n_y_ds > 0;
    gt_engine_zero_grad(e);
    gt_dist_grads_begin(t->gx, gt_engine_grads(e));
    double S = 0;
    for (int64_t off = 0; off < b->n; off += t->micro) {
        int B = (int)(b->n - off < t->micro ? b->n - off : t->micro);
        const int last = off + B >= b->n; /* its backward finishes the gradients: buckets start as layers do */
        const float *x = b->x + (size_t)off * tc->n_x;
        gt_event_begin(t->ev[EV_FORWARD]);
        /* dropout masks keyed by (seed, step, window): the same on any number of
         * ranks, micro-batch size, engine, and after a resume */
        for (int i = 0; i < B; i++)
            t->drop_ids[i] = gt_dropout_sample_id(b->refs[off + i].file_index, b->refs[off + i].start);
        const gt_dropout_key key = {.seed = t->cfg->seed, .step = t->ts.step, .ids = t->drop_ids};
        const float *y, *mask;
        gt_task_targets(tc, x, own_targets ? b->y + (size_t)off * tc->n_y_ds : NULL,
                        own_targets ? b->mask + (size_t)off * tc->n_y_ds : NULL, B, &y, &mask);
        const float *pred = gt_engine_forward_train(e, gt_task_input(tc, x, B), B, &key);
        S += gt_task_objective(tc, gt_engine_dpred(e), pred, y, mask, B, coef);
        gt_event_end(t->ev[EV_FORWARD]);
        gt_event_begin(t->ev[EV_BACKWARD]);
        if (last) gt_engine_set_grad_ready(e, gt_dist_grads_ready, t->gx);
        gt_engine_backward(e, 1.0f);
        if (last) gt_engine_set_grad_ready(e, NULL, NULL);
        gt_event_end(t->ev[EV_BACKWARD]);
    }
    return S;
}

/* The plateau factor on the scheduled lr: it multiplies warmup + cosine (so
 * the decay keeps its shape, only lower), and never takes the lr below
 * optim.lr_min unless the schedule itself is below it (warmup). Factor 1 is
 * the schedule, bit for bit. */
static float plateau_lr(float sched, double factor, float lr_min) {
    if (factor >= 1.0) return sched;
    float lr = (float)(sched * factor);
    float floor = sched < lr_min ? sched : lr_min;
    return lr > floor ? lr : floor;
}

/* NaN/Inf guard, AMP, clipping, AdamW: identical inputs on every rank, so
 * every rank takes the same branch. */
static void apply_update(trainer *t, train_step *s) {
    const gt_train_config *cfg = t->cfg;
    gt_engine *e = t->e;
    gt_event_begin(t->ev[EV_OPTIMIZER]);
    int grads_finite = gt_engine_unscale(e, gt_amp_inv_scale(&t->amp));
    s->gnorm = gt_engine_grad_norm(e);
    int finite = isfinite(s->loss) && grads_finite && isfinite(s->gnorm);
    s->applied = gt_amp_update(&t->amp, !finite);
    s->lr = 0;
    if (s->applied) {
        if (cfg->clip > 0) {
            double c = cfg->clip / (s->gnorm + 1e-6);
            if (c < 1.0) gt_engine_scale_grads(e, (float)c);
        }
        s->lr = plateau_lr(gt_lr_schedule(t->ts.step, cfg->warmup, t->total_steps, (float)cfg->lr, (float)cfg->lr_min),
                           t->ts.lr_factor, (float)cfg->lr_min);
        gt_engine_adamw_step(e, &cfg->adamw, s->lr, t->ts.step + 1, 0);
        t->ts.step++;
        t->ts.bad_steps = 0;
    }
    gt_event_end(t->ev[EV_OPTIMIZER]);
}

/* One optimizer step: the next global batch, gradients, their all-reduce
 * with the loss and rank 0's clock decisions, the update. */
static void train_one_step(trainer *t, train_clock *k, train_step *s) {
    const gt_train_config *cfg = t->cfg;
    memset(s, 0, sizeof *s);
    s->wait = gt_loader_next(t->ld, &s->b);
    const gt_batch *b = s->b;
    gt_event_add(t->ev[EV_DATA_WAIT], s->wait, 1);
    if (cfg->balance && t->size > 1) { /* every rank g_batch/P (+1) samples: no step waits for the largest share */
        gt_event_begin(t->ev[EV_BALANCE]);
        gt_loader_balance(t->ld, b, t->comm);
        gt_event_end(t->ev[EV_BALANCE]);
    }
    GT_ASSERT(b->epoch == t->ts.epoch && b->k == t->ts.batch_k);
    t->ts.batch_k = b->k + 1;
    if (t->ts.batch_k >= t->bpe) {
        t->ts.epoch++;
        t->ts.batch_k = 0;
    }
    k->seg_batches++;

    /* global normaliser: target elements of the whole global batch */
    double M = gt_task_target_count(&t->tc, b);
    gt_dist_allreduce_sum_d(&M, 1, t->comm);
    const float scale = gt_amp_loss_scale(&t->amp);
    const float coef = M > 0 ? (float)(1.0 / M) * scale : 0.0f;
    double S = compute_gradients(t, b, coef);

    /* all-reduce: gradient sum, then the loss sum and rank 0's clock decisions */
    gt_event_begin(t->ev[EV_ALLREDUCE]);
    gt_dist_grads_finish(t->gx); /* the buckets not started during backward, then all complete */
    double red[3] = {S, 0, 0};
    if (t->rank == 0) {
        double now = gt_now();
        red[1] = cfg->time_budget_min > 0 && k->elapsed0 + now - k->t_loop0 >= cfg->time_budget_min * 60.0;
        red[2] = cfg->checkpoint_minutes > 0 && now - k->last_ckpt_time >= cfg->checkpoint_minutes * 60.0;
    }
    gt_dist_allreduce_sum_d(red, 3, t->comm);
    gt_event_end(t->ev[EV_ALLREDUCE]);
    s->loss = M > 0 ? red[0] / M : 0.0;
    s->time_up = red[1] != 0;
    s->checkpoint_due = red[2] != 0;
    apply_update(t, s);
}

/* Counters and per-step losses, applied or not. */
static void record_step(trainer *t, train_clock *k, const train_step *s, gt_train_result *res) {
    t->ts.samples += s->b->g_batch;
    if (res) {
        if (res->n_losses == k->cap_losses) {
            k->cap_losses = k->cap_losses ? 2 * k->cap_losses : 256;
            res->losses = GT_REALLOC(res->losses, (size_t)k->cap_losses * sizeof(double));
        }
        res->losses[res->n_losses++] = s->loss;
    }
    if (k->seg_batches == 1) k->first_loss = s->loss;
    k->last_loss = s->loss;
    if (k->meas_t0 >= 0) {
        k->meas_wait += s->wait;
        k->meas_samples += s->b->g_batch;
    }
}

/* A skipped step: an overflow the loss scaler absorbs is not a bad step;
 * otherwise forensics, and after nan_max_bad in a row the run stops (1). */
static int bad_step(trainer *t, train_clock *k, const train_step *s) {
    const gt_train_config *cfg = t->cfg;
    t->ts.skipped_steps++;
    int absorbed = t->amp.enabled && isfinite(s->loss) && t->amp.scale > t->amp.min_scale;
    if (absorbed) return 0;
    t->ts.bad_steps++;
    gt_train_forensics(t, s->b, s->loss, s->gnorm);
    if (t->ts.bad_steps < cfg->nan_max_bad) return 0;
    end_live_line(t, k);
    if (t->rank == 0)
        gt_log_error("%d consecutive steps with a non-finite loss or gradient "
                "(train.nan_max_bad=%d); training stopped at step %lld. The offending samples "
                "(%s id, time range) are in %s/forensics.jsonl. Screen the data "
                "(data.screen=drop or repair, data.spike_k), or lower optim.lr / set optim.clip.",
                t->ts.bad_steps, cfg->nan_max_bad, (long long)t->ts.step, t->task->item, t->run_dir);
    return 1;
}

static void fmt_hms(double s, char *buf, size_t n) {
    if (!isfinite(s) || s < 0) {
        snprintf(buf, n, "--:--:--");
        return;
    }
    long v = (long)(s + 0.5);
    snprintf(buf, n, "%02ld:%02ld:%02ld", v / 3600, v / 60 % 60, v % 60);
}

/* Every train.log_every steps: the progress line and a metrics row. */
static void log_progress(trainer *t, train_clock *k, const train_step *s) {
    const gt_train_config *cfg = t->cfg;
    k->iv_loss += s->loss;
    k->iv_steps++;
    k->iv_samples += s->b->g_batch;
    k->iv_wait += s->wait;
    if (!(t->ts.step % cfg->log_every == 0 || t->ts.step == t->total_steps)) return;
    double now = gt_now(), wall = now - k->iv_t0;
    double stall = wall > 0 ? k->iv_wait / wall : 0;
    stall = gt_dist_max_d(stall, t->comm);
    double sps = wall > 0 ? k->iv_samples / wall : 0;
    double mean_loss = k->iv_loss / (double)k->iv_steps;
    if (t->rank == 0) {
        double eta = t->total_steps > 0 && k->iv_steps > 0
                         ? (double)(t->total_steps - t->ts.step) * wall / (double)k->iv_steps
                         : cfg->time_budget_min * 60.0 - (k->elapsed0 + now - k->t_loop0);
        char etas[64];
        fmt_hms(eta, etas, sizeof etas);
        if (!cfg->quiet && gt_log_level() <= GT_LOG_INFO) {
            char line[256];
            snprintf(line, sizeof line, "epoch %llu step %lld/%lld loss %.6g lr %.3g %.0f samples/s stall %.1f%% ETA %s",
                     (unsigned long long)s->b->epoch + 1, (long long)t->ts.step, (long long)t->total_steps, mean_loss,
                     s->lr, sps, 100 * stall, etas);
            if (k->tty) {
                fprintf(stderr, "\r%s\033[K", line);
                k->printed_live = 1;
            } else {
                fprintf(stderr, "%s\n", line);
            }
            fflush(stderr);
        }
        gt_train_metrics_row(t, &(train_metrics_row){.type = "train", .step = t->ts.step, .epoch = s->b->epoch,
                                                     .loss = mean_loss, .val_loss = t->last_val, .lr = s->lr,
                                                     .samples_per_s = sps, .data_stall = stall,
                                                     .grad_norm = s->gnorm, .time_s = k->elapsed0 + now - k->t_loop0});
    }
    if (t->gpu_on) gt_train_gpu_interval(t, k->elapsed0 + now - k->t_loop0); /* collective */
    k->iv_t0 = now;
    k->iv_wait = k->iv_loss = 0;
    k->iv_steps = k->iv_samples = 0;
}

/* train.lr_plateau: after plateau_patience validations without improvement
 * the lr factor is multiplied by lr_plateau, down to the factor that puts the
 * peak lr at optim.lr_min (below that a reduction changes nothing). The
 * counter restarts after each reduction, so a long plateau halves the lr every
 * plateau_patience validations until early stopping (train.patience) ends it. */
static void reduce_on_plateau(trainer *t, train_clock *k) {
    const gt_train_config *cfg = t->cfg;
    if (!(cfg->lr_plateau > 0) || t->ts.plateau_evals < cfg->plateau_patience) return;
    t->ts.plateau_evals = 0;
    const double floor = cfg->lr_min > 0 ? cfg->lr_min / cfg->lr : 0.0;
    if (t->ts.lr_factor <= floor) return;
    double f = t->ts.lr_factor * cfg->lr_plateau;
    t->ts.lr_factor = f > floor ? f : floor;
    t->lr_reductions++;
    if (t->rank == 0 && !cfg->quiet) {
        end_live_line(t, k);
        GT_INFO("step %lld: no improvement in %lld validations: learning rate x%g (factor %.4g of the schedule; "
                "train.lr_plateau)", (long long)t->ts.step, (long long)cfg->plateau_patience, cfg->lr_plateau,
                t->ts.lr_factor);
    }
}

/* Every eval_every steps: validation, the replica check, model selection and
 * early stopping. Returns 1 when the validation loss improved. */
static int validate_and_select(trainer *t, train_clock *k, const train_step *s, int *stop_early) {
    const gt_train_config *cfg = t->cfg;
    if (t->ts.step % t->eval_every != 0) return 0;
    double v = validate(t);
    k->validated_step = t->ts.step;
    t->last_val = v;
    int improved = 0;
    if (isfinite(v)) {
        if (v < t->ts.best_val) {
            t->ts.best_val = v;
            t->ts.best_step = t->ts.step;
            t->ts.bad_evals = 0;
            t->ts.plateau_evals = 0;
            improved = 1; /* checkpointed: evaluation loads the best one */
        } else {
            t->ts.bad_evals++;
            t->ts.plateau_evals++;
            if (cfg->patience > 0 && t->ts.bad_evals >= cfg->patience) *stop_early = 1;
            else reduce_on_plateau(t, k);
        }
    }
    if (t->rank == 0) {
        end_live_line(t, k);
        if (!cfg->quiet)
            GT_INFO("step %lld: val_loss %.6g (best %.6g at step %lld)", (long long)t->ts.step, v, t->ts.best_val,
                    (long long)t->ts.best_step);
        gt_train_metrics_row(t, &(train_metrics_row){.type = "val", .step = t->ts.step, .epoch = s->b->epoch,
                                                     .loss = s->loss, .val_loss = v, .best_val = t->ts.best_val,
                                                     .lr = s->lr, .grad_norm = s->gnorm});
    }
    return improved;
}

/* Periodic checkpoints (steps or minutes) and the best-validation one. */
static void checkpoint_if_due(trainer *t, train_clock *k, const train_step *s, int improved) {
    const gt_train_config *cfg = t->cfg;
    if ((cfg->checkpoint_every > 0 && t->ts.step % cfg->checkpoint_every == 0) || s->checkpoint_due || improved) {
        checkpoint(t, elapsed(k));
        k->last_ckpt_time = gt_now();
    }
}

/* The last validation and checkpoint of a run that ended well. Work must
 * not be lost silently: a run whose final checkpoint failed, or that is
 * preempted with no committed checkpoint to resume from, fails: returns
 * GT_EXIT_RESOURCE then (and sets *stop_why), else exit_code. */
static int final_checkpoint(trainer *t, train_clock *k, double loop_s, int exit_code, const char **stop_why) {
    const gt_train_config *cfg = t->cfg;
    if (exit_code == 0) {
        if (k->validated_step != t->ts.step && t->ts.step > 0) {
            t->last_val = validate(t);
            if (isfinite(t->last_val) && t->last_val < t->ts.best_val) {
                t->ts.best_val = t->last_val;
                t->ts.best_step = t->ts.step;
            }
        }
        if (t->last_ckpt_step != t->ts.step) checkpoint(t, k->elapsed0 + loop_s);
    }
    if (cfg->write_outputs && ((exit_code == 0 && t->last_ckpt_step != t->ts.step) ||
                               (exit_code == GT_EXIT_PREEMPTED && t->last_ckpt_step < 0))) {
        end_live_line(t, k);
        if (t->rank == 0) {
            char last[64] = "there is no committed checkpoint of this run";
            if (t->last_ckpt_step >= 0)
                snprintf(last, sizeof last, "the last committed checkpoint is step %lld", (long long)t->last_ckpt_step);
            gt_log_error("the checkpoint of step %lld could not be committed (%s): the model of this "
                    "run is not saved and %s in %s/checkpoints; free space or fix the permissions, then run again%s",
                    (long long)t->ts.step, t->ckpt_why[0] ? t->ckpt_why : "see the warnings above",
                    last, t->run_dir, t->last_ckpt_step >= 0 ? " (--resume continues from it)" : "");
        }
        exit_code = GT_EXIT_RESOURCE;
        *stop_why = "failed: no committed checkpoint";
    }
    return exit_code;
}

/* The run's result for the caller (gt_train_run). */
static void fill_result(const trainer *t, const train_clock *k, int exit_code, double loop_s, uint64_t checksum,
                        int identical, double meas_rate, double meas_stall, gt_train_result *res) {
    const gt_train_config *cfg = t->cfg;
    res->exit_code = exit_code;
    res->steps = t->ts.step;
    res->skipped = t->ts.skipped_steps;
    res->samples = t->ts.samples;
    res->last_loss = k->last_loss;
    res->first_loss = k->first_loss;
    res->last_val = t->last_val;
    res->best_val = isfinite(t->ts.best_val) ? t->ts.best_val : NAN;
    res->params_checksum = checksum;
    res->replicas_identical = identical;
    res->train_s = loop_s;
    res->samples_per_s = meas_rate;
    res->data_stall = meas_stall;
    res->device_stall = t->device_stall;
    res->pipeline_bytes = t->pipeline_bytes;
    res->best_step = t->ts.best_step;
    res->lr_factor = t->ts.lr_factor;
    res->lr_reductions = t->lr_reductions;
    snprintf(res->run_dir, sizeof res->run_dir, "%s", cfg->write_outputs ? t->run_dir : "");
}

/* The last validation and checkpoint, the replica check, the measured rates,
 * the summary line, manifest.json and timing.json; fills res. Returns the
 * run's exit code: GT_EXIT_RESOURCE replaces 0 (or 75) when the model could
 * not be saved. */
static int finish(trainer *t, train_clock *k, int exit_code, const char *stop_why, gt_train_result *res) {
    const gt_train_config *cfg = t->cfg;
    MPI_Comm comm = t->comm;
    end_live_line(t, k);
    double loop_s = gt_now() - k->t_loop0;
    exit_code = final_checkpoint(t, k, loop_s, exit_code, &stop_why);
    gt_engine_pull_state(t->e);
    const gt_model *m = gt_engine_model(t->e);
    int identical = gt_dist_replicas_identical(m->params, m->n_params, comm);
    GT_CHECK(identical, GT_EXIT_INTERNAL, "model replicas differ between ranks at the end of training");
    uint64_t checksum = gt_dist_checksum(m->params, m->n_params);
    double meas_rate = 0, meas_stall = 0, dev_stall = -1;
    if (k->meas_t0 >= 0) {
        double dev = k->meas_dev0 >= 0 ? gt_engine_input_stall(t->e) - k->meas_dev0 : -1; /* synchronises */
        double wall = gt_now() - k->meas_t0;
        meas_rate = wall > 0 ? k->meas_samples / wall : 0;
        meas_stall = wall > 0 ? k->meas_wait / wall : 0;
        if (dev >= 0 && wall > 0) dev_stall = dev / wall;
    }
    meas_stall = gt_dist_max_d(meas_stall, comm);
    t->device_stall = gt_dist_max_d(dev_stall, comm); /* the same engine kind on every rank */
    meas_rate = gt_dist_bcast_d(meas_rate, comm);

    if (t->gpu_on) gt_train_gpu_finish(t); /* collective: every rank's GPU summary for the manifest */
    int64_t peak_rss = gt_peak_rss_bytes();
    peak_rss = gt_dist_max_i64(peak_rss, comm);
    if (t->rank == 0 && !cfg->quiet) {
        GT_INFO("memory: peak resident %.1f MiB per rank (max over ranks; 'gridtrain plan' predicts it)",
                peak_rss / 1048576.0);
        long caps = 0, reps = 0;
        gt_engine_graph_stats(t->e, &caps, &reps);
        if (caps + reps > 0) GT_INFO("train: CUDA graphs: %ld captured, %ld replays (train.graphs)", caps, reps);
        if (gt_engine_kind_of(t->e) == GT_ENGINE_HOST) { /* what ran the products, per op family (nn/ops/cpu/gemm.h) */
            char line[512];
            size_t o = 0;
            for (int f = 0; f < GT_GEMM_N_FAMILIES && o < sizeof line; f++)
                if (*gt_gemm_impl((gt_gemm_family)f))
                    o += (size_t)snprintf(line + o, sizeof line - o, "%s%s: %s", o ? "; " : "",
                                          gt_gemm_family_name((gt_gemm_family)f), gt_gemm_impl((gt_gemm_family)f));
            if (o) GT_INFO("train: CPU products: %s", line);
        }
        if (t->device_stall >= 0)
            GT_INFO("train: the GPU waited %.2f%% of the measured time before forwards (input copies, the loader "
                    "or the host; target < 2%%), the ranks' data wait %.2f%%",
                    100 * t->device_stall, 100 * meas_stall);
        GT_INFO("train: %s after %lld steps (%lld skipped) in %.1f s: loss %.6g, val_loss %.6g (best %.6g at step "
                "%lld), params xxh64 %016llx%s%s",
                stop_why, (long long)t->ts.step, (long long)t->ts.skipped_steps, loop_s, k->last_loss, t->last_val,
                t->ts.best_val, (long long)t->ts.best_step, (unsigned long long)checksum,
                cfg->write_outputs ? ", run directory " : "", cfg->write_outputs ? t->run_dir : "");
    }
    if (cfg->write_outputs) {
        if (t->rank == 0) {
            char end_time[32];
            gt_train_now_iso(end_time, sizeof end_time);
            gt_train_write_manifest(t, end_time, exit_code);
        }
        if (exit_code == 0) gt_train_write_timing(t, k->elapsed0 + loop_s, meas_rate, meas_stall, k->last_loss);
    }
    if (res) fill_result(t, k, exit_code, loop_s, checksum, identical, meas_rate, meas_stall, res);
    return exit_code;
}

static void trainer_free(trainer *t) {
    gt_gpu_telemetry_stop(t->gpu);
    free(t->gpu_run);
    if (t->metrics) fclose(t->metrics);
    gt_train_unlock_run_dir(t);
    gt_loader_free(t->ld);
    gt_dist_grads_free(t->gx);
    gt_engine_free(t->e);
    gt_dataset_free(t->ds);
    gt_task_ctx_free(&t->tc);
    free(t->place);
    free(t->vidx); /* the micro-batch block (ybuf, mbuf, vy, vm) */
    free(t->drop_ids);
}

/* ---------------------------------------------------------------- run -- */

int gt_train_run(const gt_train_config *cfg, MPI_Comm comm, gt_train_result *res) {
    trainer tr, *t = &tr;
    memset(t, 0, sizeof *t);
    t->cfg = cfg;
    t->comm = comm;
    MPI_Comm_rank(comm, &t->rank);
    MPI_Comm_size(comm, &t->size);
    t->last_ckpt_step = -1;
    t->last_val = NAN;
    t->device_stall = -1;
    if (res) {
        memset(res, 0, sizeof *res);
        res->device_stall = -1;
    }
    gt_trainer_check_config(cfg);
    gt_train_device_select(cfg->device, "train.device", cfg->quiet, comm, &t->dev); /* before any output */
    t->place = gt_dist_placement(comm, t->dev.engine == GT_ENGINE_HOST ? -1 : t->dev.info.ordinal, &t->n_nodes);
    if (t->rank == 0 && t->size > 1) {
        char where[1024];
        gt_dist_placement_describe(t->place, t->size, where, sizeof where);
        gt_log(cfg->quiet ? GT_LOG_DEBUG : GT_LOG_INFO, "placement: %d ranks on %d node%s: %s", t->size, t->n_nodes,
               t->n_nodes == 1 ? "" : "s", where);
    }
    for (int i = 0; i < EV_N; i++) t->ev[i] = gt_event_register(g_ev_names[i]);
    gt_train_now_iso(t->start_time, sizeof t->start_time);
    t->lock_fd = -1;
    if (cfg->write_outputs) {
        gt_train_resolve_run_dir(t);
        gt_train_claim_run_dir(t); /* locked until the end; another run's files refused */
        /* RUN_DIR/run.log: warnings and errors of every rank; with run.overwrite
         * of a previous run opened once that run is deleted (below) */
        if (!t->overwrite_pending) gt_train_open_log(t);
        gt_signals_install();
    }

    const double trace_origin = cfg->trace && cfg->write_outputs ? gt_train_trace_start(t) : 0;
    gt_trainer_setup_data(t);
    gt_trainer_build_model(t);
    gt_trainer_restore_state(t);
    gt_trainer_plan_schedule(t);
    /* run.overwrite deletes the previous run only now: a bad configuration,
     * data file or memory plan above leaves it whole */
    if (cfg->write_outputs) gt_train_clear_previous_run(t);
    if (cfg->write_outputs) gt_train_open_outputs(t);
    gt_train_gpu_start(t); /* GPU runs: NVML telemetry (train.gpu_telemetry_s) */

    train_clock k = {.tty = isatty(fileno(stderr)), .t_loop0 = gt_now(), .elapsed0 = t->ts.elapsed_s,
                     .meas_t0 = -1, .first_loss = NAN, .last_loss = NAN, .validated_step = -1};
    k.last_ckpt_time = k.iv_t0 = k.t_loop0;
    int exit_code = 0, stop_early = 0, stop_time = 0;
    const char *stop_why;
    while (!(stop_why = stop_reason(t, &k, stop_early, stop_time, &exit_code))) {
        if (k.seg_batches == cfg->measure_from) {
            k.meas_t0 = gt_now();
            k.meas_dev0 = gt_engine_input_stall(t->e);
            k.meas_wait = 0;
            k.meas_samples = 0;
        }
        train_step s;
        gt_watchdog_beat("a training step (train/trainer.c)");
        const int64_t step0 = t->ts.step;
        const double t_step0 = cfg->trace && gt_trace_step(step0) ? gt_now() : -1; /* sampled: its span */
        train_one_step(t, &k, &s);
        record_step(t, &k, &s, res);
        if (!s.applied) {
            if (t_step0 >= 0) gt_trace_record("step", t_step0, gt_now(), "step", step0);
            if (bad_step(t, &k, &s)) {
                exit_code = GT_EXIT_NUMERIC;
                stop_why = "non-finite";
                break;
            }
            continue;
        }
        log_progress(t, &k, &s);
        int improved = validate_and_select(t, &k, &s, &stop_early);
        checkpoint_if_due(t, &k, &s, improved);
        if (t_step0 >= 0) gt_trace_record("step", t_step0, gt_now(), "step", step0);
        if (s.time_up) stop_time = 1;
    }
    if (cfg->trace) gt_trace_sample(1); /* the end of the run is always on the timeline */
    exit_code = finish(t, &k, exit_code, stop_why, res);
    if (cfg->trace && cfg->write_outputs) {
        gt_loader_free(t->ld); /* the prefetch thread records no more */
        t->ld = NULL;
        gt_train_write_trace(t, trace_origin);
    }
    trainer_free(t);
    return exit_code;
}
