/* train/trainer.c: the distributed data-parallel training loop (see trainer.h). */
#define _GNU_SOURCE
#include "train/trainer.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <sched.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "core/check.h"
#include "core/fsutil.h"
#include "core/check_mpi.h"
#include "core/log.h"
#include "core/timer.h"
#include "data/loader.h"
#include "dist/allreduce.h"
#include "dist/comm.h"
#include "eval/run_eval.h" /* end-of-run evaluation + report (eval hook) */
#include "plan/plan.h"     /* memory check before the model is allocated */
#include "io/read.h"
#include "nn/model_lstm.h"
#include "train/amp.h"
#include "train/checkpoint.h"

#ifndef GT_VERSION
#define GT_VERSION "dev"
#endif

/* Gradient all-reduce buckets: large enough to amortise latency, small enough
 * that several are in flight at once. */
#define GT_TRAIN_BUCKET_BYTES ((size_t)4 << 20)
/* Offending samples reported per rank and bad step. */
#define GT_FORENSICS_MAX 64

enum { EV_READ, EV_DATA_WAIT, EV_FORWARD, EV_BACKWARD, EV_ALLREDUCE, EV_OPTIMIZER, EV_EVAL, EV_CHECKPOINT, EV_N };
static const char *const g_ev_names[EV_N] = {"read", "data_wait", "forward", "backward",
                                             "allreduce", "optimizer", "eval", "checkpoint"};

typedef struct trainer {
    const gt_train_config *cfg;
    MPI_Comm comm;
    int rank, size;
    int lstm;               /* pdm next-step targets instead of dataset y/mask */
    int T, C;               /* lstm: window and channels */
    gt_dataset *ds;
    gt_model *m;
    gt_loader *ld;
    int64_t micro;          /* model max_batch */
    size_t n_x;             /* input elements per sample */
    size_t n_y;             /* model prediction elements per sample */
    size_t n_y_ds;          /* dataset target elements per sample (0 for pdm) */
    size_t n_t;             /* target (mask) elements per sample: n_y, or n_y_ds with the gated head */
    int gated;              /* nilm gated head: n_y = 2 n_y_ds (power | on-logit) */
    float *thr;             /* gated: (n_y_ds) on-thresholds in normalised units */
    float *ybuf, *mbuf;     /* (micro, n_y) lstm targets */
    float *vy, *vm;         /* (micro, n_y_ds) validation targets from the dataset */
    int64_t *vidx;          /* (micro) validation window numbers; owns the block of all four */
    gt_train_state ts;
    gt_amp_scaler amp;
    gt_norm_stats ns;
    char run_dir[PATH_MAX];
    FILE *metrics;
    int ev[EV_N];
    int64_t bpe, total_steps, eval_every;
    int64_t last_ckpt_step;
    double last_val;
} trainer;

void gt_train_config_defaults(gt_train_config *c, gt_model_kind kind) {
    memset(c, 0, sizeof *c);
    gt_data_config_defaults(&c->data, kind == GT_MODEL_LSTM ? GT_TASK_PDM : GT_TASK_NILM);
    gt_model_config_default(&c->model, kind);
    c->lr = 1e-3;
    c->lr_min = 1e-5;
    c->warmup = 100;
    c->adamw = (gt_adamw_config){.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01};
    c->clip = 1.0;
    c->batch = 256;
    c->epochs = 10;
    c->seed = 1;
    c->prefetch = 1;
    c->nan_max_bad = 5;
    c->log_every = 50;
    c->checkpoint_minutes = 30;
    c->keep = 3;
    c->write_outputs = 1;
}

void gt_train_result_free(gt_train_result *res) {
    if (!res) return;
    free(res->losses);
    res->losses = NULL;
    res->n_losses = 0;
}

/* ------------------------------------------------------------- helpers -- */

static void iso_time(int64_t ms, char *buf, size_t n) {
    time_t s = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void now_iso(char *buf, size_t n) {
    struct timespec tsp;
    clock_gettime(CLOCK_REALTIME, &tsp);
    iso_time((int64_t)tsp.tv_sec * 1000, buf, n);
}

static void mkdir_p(const char *path) {
    if (gt_mkdir_p(path) != 0)
        GT_FAIL(GT_EXIT_RESOURCE, "cannot create directory '%s': %s", path, strerror(errno));
}

/* Rank 0 chooses the run directory; every rank gets the same string. */
static void resolve_run_dir(trainer *t) {
    char buf[PATH_MAX] = {0};
    if (t->rank == 0) {
        const char *d = t->cfg->run_dir;
        if (d && *d) {
            snprintf(buf, sizeof buf, "%s", d);
        } else {
            const char *job = getenv("SLURM_JOB_ID");
            if (job && *job) {
                snprintf(buf, sizeof buf, "runs/%s", job);
            } else {
                time_t now = time(NULL);
                struct tm tm;
                localtime_r(&now, &tm);
                char stamp[32];
                strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
                snprintf(buf, sizeof buf, "runs/%s", stamp);
            }
        }
        mkdir_p(buf);
    }
    MPI_CHECK(MPI_Bcast(buf, (int)sizeof buf, MPI_CHAR, 0, t->comm));
    snprintf(t->run_dir, sizeof t->run_dir, "%s", buf);
}

static FILE *open_in_run(const trainer *t, const char *name, const char *mode) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", t->run_dir, name);
    FILE *f = fopen(path, mode);
    GT_CHECK(f, GT_EXIT_RESOURCE, "cannot open '%s': %s", path, strerror(errno));
    return f;
}

static void write_json_line(FILE *f, cJSON *o) {
    char *s = cJSON_PrintUnformatted(o);
    fprintf(f, "%s\n", s);
    fflush(f);
    cJSON_free(s);
    cJSON_Delete(o);
}

/* JSON has no NaN/Inf: non-finite numbers are written as null. */
static void json_num(cJSON *o, const char *key, double v) {
    if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
    else cJSON_AddNullToObject(o, key);
}

static int file_xxh64(const char *path, uint64_t *hash, int64_t *size_bytes) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    XXH64_state_t *st = XXH64_createState();
    XXH64_reset(st, 0);
    size_t cap = (size_t)4 << 20, n;
    char *buf = GT_MALLOC(cap);
    int64_t total = 0;
    while ((n = fread(buf, 1, cap, f)) > 0) {
        XXH64_update(st, buf, n);
        total += (int64_t)n;
    }
    int ok = !ferror(f);
    fclose(f);
    free(buf);
    *hash = XXH64_digest(st);
    *size_bytes = total;
    XXH64_freeState(st);
    return ok;
}

static void cpu_model(char *buf, size_t n) {
    snprintf(buf, n, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10)) {
            char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ' || *c == '\t') c++;
                c[strcspn(c, "\n")] = 0;
                snprintf(buf, n, "%s", c);
            }
            break;
        }
    fclose(f);
}

/* manifest.json (rank 0): provenance of the run; rewritten at the end. */
static void write_manifest(const trainer *t, const char *start_time, const char *end_time, int exit_code,
                           int64_t resumed_from, const uint64_t *data_hash, int64_t data_bytes) {
    const gt_train_config *c = t->cfg;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "gridtrain_version", GT_VERSION);
    cJSON_AddStringToObject(o, "command", "train");
    cJSON_AddStringToObject(o, "run_dir", t->run_dir);
    cJSON_AddStringToObject(o, "config", c->config_text ? c->config_text : "");
    cJSON *d = cJSON_AddObjectToObject(o, "data");
    char full[PATH_MAX];
    cJSON_AddStringToObject(d, "path", c->data_file);
    cJSON_AddStringToObject(d, "realpath", realpath(c->data_file, full) ? full : c->data_file);
    cJSON_AddNumberToObject(d, "size_bytes", (double)data_bytes);
    char hex[32];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)*data_hash);
    cJSON_AddStringToObject(d, "xxh64", hex);
    cJSON_AddNumberToObject(o, "ranks", t->size);
    const char *ob = getenv("OPENBLAS_NUM_THREADS");
    cJSON_AddStringToObject(o, "openblas_threads", ob ? ob : "unset (OpenBLAS default: all cores)");
    char host[256] = "unknown";
    gethostname(host, sizeof host - 1);
    cJSON_AddStringToObject(o, "host", host);
    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    cJSON_AddStringToObject(o, "cpu_model", cpu);
    cJSON_AddStringToObject(o, "model_kind", gt_model_kind_name(c->model.kind));
    cJSON_AddNumberToObject(o, "n_params", (double)t->m->n_params);
    cJSON_AddStringToObject(o, "precision", t->amp.enabled ? "fp32 compute, dynamic loss scaling" : "fp32");
    if (resumed_from >= 0) cJSON_AddNumberToObject(o, "resumed_from_step", (double)resumed_from);
    cJSON_AddStringToObject(o, "start_time", start_time);
    if (end_time) {
        cJSON_AddStringToObject(o, "end_time", end_time);
        cJSON_AddNumberToObject(o, "exit_code", exit_code);
        cJSON_AddNumberToObject(o, "steps", (double)t->ts.step);
        cJSON_AddNumberToObject(o, "skipped_steps", (double)t->ts.skipped_steps);
    } else {
        cJSON_AddNullToObject(o, "end_time");
    }
    char *s = cJSON_Print(o);
    FILE *f = open_in_run(t, "manifest.json.tmp", "w");
    fprintf(f, "%s\n", s);
    fclose(f);
    cJSON_free(s);
    cJSON_Delete(o);
    char a[PATH_MAX + 64], b[PATH_MAX + 64];
    snprintf(a, sizeof a, "%s/manifest.json.tmp", t->run_dir);
    snprintf(b, sizeof b, "%s/manifest.json", t->run_dir);
    if (rename(a, b)) GT_WARN("cannot rename %s: %s", a, strerror(errno));
}

/* --------------------------------------------------------------- loss -- */

/* Targets of a micro-batch of B samples starting at x: dataset y/mask (s2p) or
 * next-step targets of x (lstm). */
static void targets(trainer *t, const float *x, const float *y, const float *mask, int B, const float **yo,
                    const float **mo) {
    if (t->lstm) {
        gt_model_lstm_targets(t->ybuf, t->mbuf, x, B, t->T, t->C);
        *yo = t->ybuf;
        *mo = t->mbuf;
    } else {
        *yo = y;
        *mo = mask;
    }
}

/* The training objective of B samples: model.loss on the outputs
 * (gt_loss_sum_grad) or the gated head's loss (gt_gated_loss_sum). Sum over
 * the masked targets; dpred = d sum / d pred x coef, coef = scale / M_global
 * (the same per-element value for any number of ranks); NULL: the sum only. */
static double objective(const trainer *t, float *dpred, const float *pred, const float *y, const float *mask, int B,
                        float coef) {
    if (t->gated) return gt_gated_loss_sum(dpred, pred, y, mask, t->thr, (size_t)B, (int)t->n_y_ds, coef);
    return gt_loss_sum_grad(t->m->cfg.loss, dpred, pred, y, mask, (size_t)B * t->n_y, coef);
}

static double mask_count(const trainer *t, const gt_batch *b) {
    if (t->lstm) return (double)b->n * (double)(t->T - 1) * (double)t->C;
    double c = 0;
    size_t n = (size_t)b->n * t->n_y_ds;
    for (size_t i = 0; i < n; i++) c += b->mask[i];
    return c;
}

/* ---------------------------------------------------------- validation -- */

/* Collective: the masked training loss (model.loss) over the whole validation split (NaN when it is
 * empty), and the replica check. */
static double validate(trainer *t) {
    gt_event_begin(t->ev[EV_EVAL]);
    gt_model *m = t->m;
    int64_t nloc = gt_dataset_n_windows_local(t->ds, GT_SPLIT_VAL);
    double acc[2] = {0, 0};
    for (int64_t first = 0; first < nloc; first += t->micro) {
        int64_t want = nloc - first < t->micro ? nloc - first : t->micro;
        int64_t n = gt_dataset_local_range(t->ds, GT_SPLIT_VAL, first, want, t->vidx);
        if (n <= 0) break;
        gt_dataset_fill(t->ds, GT_SPLIT_VAL, t->vidx, n, m->x, t->vy, t->vm, NULL);
        gt_model_forward(m, m->x, (int)n);
        const float *y, *mask;
        targets(t, m->x, t->vy, t->vm, (int)n, &y, &mask);
        acc[0] += objective(t, NULL, m->pred, y, mask, (int)n, 0.0f);
        size_t ne = (size_t)n * t->n_t;
        for (size_t i = 0; i < ne; i++) acc[1] += mask ? mask[i] : 1.0f;
    }
    gt_dist_allreduce_sum_d(acc, 2, t->comm);
    int same = gt_dist_replicas_identical(m->params, m->n_params, t->comm);
    GT_CHECK(same, GT_EXIT_INTERNAL,
             "model replicas differ between ranks at step %lld (data-parallel invariant broken: "
             "a rank computed a different update; see the checksums above). Please report.",
             (long long)t->ts.step);
    gt_event_end(t->ev[EV_EVAL]);
    return acc[1] > 0 ? acc[0] / acc[1] : NAN;
}

/* ----------------------------------------------------------- forensics -- */

typedef struct offender {
    int64_t id, start, t0_ms, t1_ms, sample;
    int32_t file_index, rank, reason, pad;
} offender;
static const char *const g_reasons[] = {"non-finite input", "non-finite target", "non-finite loss",
                                        "non-finite gradient"};

/* Local: samples of this rank's batch that are non-finite on their own
 * (input, target, per-sample loss, per-sample gradient: each sample re-run
 * alone). Clobbers the gradients (the step is skipped anyway). */
static int find_offenders(trainer *t, const gt_batch *b, offender *out, int cap) {
    gt_model *m = t->m;
    int n_out = 0;
    for (int64_t i = 0; i < b->n && n_out < cap; i++) {
        const float *x = b->x + (size_t)i * t->n_x;
        const float *yd = t->lstm ? NULL : b->y + (size_t)i * t->n_y_ds;
        const float *md = t->lstm ? NULL : b->mask + (size_t)i * t->n_y_ds;
        int reason = -1;
        for (size_t j = 0; j < t->n_x && reason < 0; j++)
            if (!isfinite(x[j])) reason = 0;
        if (reason < 0 && !t->lstm)
            for (size_t j = 0; j < t->n_y_ds && reason < 0; j++)
                if (md[j] != 0.0f && !isfinite(yd[j])) reason = 1;
        if (reason < 0) {
            gt_model_forward(m, x, 1);
            const float *y, *mask;
            targets(t, x, yd, md, 1, &y, &mask);
            /* as float on purpose: an fp32 overflow is what we look for */
            float l = (float)objective(t, NULL, m->pred, y, mask, 1, 0.0f), cnt = 0.0f;
            for (size_t j = 0; j < t->n_t; j++) cnt += mask ? mask[j] : 1.0f;
            if (!isfinite(l)) {
                reason = 2;
            } else if (cnt > 0) {
                gt_model_zero_grad(m);
                objective(t, m->dpred, m->pred, y, mask, 1, 1.0f / cnt);
                gt_model_backward(m, 1.0f);
                if (!isfinite(gt_grad_norm(m->grads, m->n_params))) reason = 3;
            }
        }
        if (reason >= 0) {
            const gt_window_ref *r = &b->refs[i];
            out[n_out++] = (offender){.id = r->id, .start = r->start, .t0_ms = r->t_start_ms,
                                      .t1_ms = r->t_end_ms, .sample = i, .file_index = r->file_index,
                                      .rank = t->rank, .reason = reason};
        }
    }
    gt_model_zero_grad(m);
    return n_out;
}

/* Collective: gathers the offenders at rank 0, which appends them to
 * forensics.jsonl and logs one line. */
static void forensics(trainer *t, const gt_batch *b, double loss, double gnorm) {
    offender mine[GT_FORENSICS_MAX];
    int n = find_offenders(t, b, mine, GT_FORENSICS_MAX);
    int *counts = NULL, *displs = NULL;
    offender *all = NULL;
    if (t->rank == 0) {
        counts = GT_CALLOC((size_t)t->size, sizeof *counts);
        displs = GT_CALLOC((size_t)t->size, sizeof *displs);
    }
    int nbytes = n * (int)sizeof(offender);
    MPI_CHECK(MPI_Gather(&nbytes, 1, MPI_INT, counts, 1, MPI_INT, 0, t->comm));
    int total = 0;
    if (t->rank == 0) {
        for (int r = 0; r < t->size; r++) {
            displs[r] = total;
            total += counts[r];
        }
        all = GT_MALLOC((size_t)total + 1);
    }
    MPI_CHECK(MPI_Gatherv(mine, nbytes, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, t->comm));
    if (t->rank == 0) {
        int n_all = total / (int)sizeof(offender);
        const char *kind = t->lstm ? "turbine" : "household";
        FILE *f = t->cfg->write_outputs ? open_in_run(t, "forensics.jsonl", "a") : NULL;
        char first[256] = "";
        for (int i = 0; i < n_all; i++) {
            const offender *o = &all[i];
            char a[32], z[32];
            iso_time(o->t0_ms, a, sizeof a);
            iso_time(o->t1_ms, z, sizeof z);
            if (i == 0)
                snprintf(first, sizeof first, "%s %lld (file index %d) %s .. %s (%s)", kind, (long long)o->id,
                         o->file_index, a, z, g_reasons[o->reason]);
            if (!f) continue;
            cJSON *j = cJSON_CreateObject();
            cJSON_AddNumberToObject(j, "step", (double)t->ts.step);
            cJSON_AddNumberToObject(j, "epoch", (double)b->epoch);
            cJSON_AddNumberToObject(j, "batch", (double)b->k);
            cJSON_AddStringToObject(j, "kind", kind);
            cJSON_AddNumberToObject(j, "id", (double)o->id);
            cJSON_AddNumberToObject(j, t->lstm ? "turbine_id" : "household_id", (double)o->id);
            cJSON_AddNumberToObject(j, "file_index", o->file_index);
            cJSON_AddNumberToObject(j, "start_row", (double)o->start);
            cJSON_AddNumberToObject(j, "t_start_ms", (double)o->t0_ms);
            cJSON_AddNumberToObject(j, "t_end_ms", (double)o->t1_ms);
            cJSON_AddStringToObject(j, "t_start", a);
            cJSON_AddStringToObject(j, "t_end", z);
            cJSON_AddStringToObject(j, "reason", g_reasons[o->reason]);
            cJSON_AddNumberToObject(j, "rank", o->rank);
            json_num(j, "batch_loss", loss);
            json_num(j, "grad_norm", gnorm);
            write_json_line(f, j);
        }
        if (f && n_all == 0) {
            cJSON *j = cJSON_CreateObject();
            cJSON_AddNumberToObject(j, "step", (double)t->ts.step);
            cJSON_AddNumberToObject(j, "epoch", (double)b->epoch);
            cJSON_AddNumberToObject(j, "batch", (double)b->k);
            cJSON_AddStringToObject(j, "reason", "no single sample is non-finite on its own "
                                                 "(overflow of the accumulated batch)");
            json_num(j, "batch_loss", loss);
            json_num(j, "grad_norm", gnorm);
            write_json_line(f, j);
        }
        if (f) fclose(f);
        gt_log(GT_LOG_WARN,
               "step %lld (epoch %llu, batch %lld): non-finite %s (loss %g, grad norm %g): step skipped (%d/%d consecutive); "
               "%d offending sample%s%s%s%s; see %s/forensics.jsonl",
               (long long)t->ts.step + 1, (unsigned long long)b->epoch, (long long)b->k,
               isfinite(loss) ? "gradient" : "loss", loss, gnorm, t->ts.bad_steps,
               t->cfg->nan_max_bad, n_all, n_all == 1 ? "" : "s", n_all ? ": " : "", first,
               n_all > 1 ? " ..." : "", t->run_dir);
        free(all);
        free(counts);
        free(displs);
    }
}

/* ------------------------------------------------------- memory check -- */

/* Before the model is allocated: what is resident now (libraries, the data
 * pipeline) plus the planner's model state, activations and batch buffers,
 * against this rank's budget (train.mem_limit, else the node's available
 * memory shared by its ranks). Too little stops the job with the largest
 * micro-batch that fits instead of an out-of-memory kill later. */
static void check_memory(trainer *t, const gt_model_config *mc, MPI_Comm comm) {
    const gt_train_config *cfg = t->cfg;
    if (cfg->mem_limit < 0) return;
    int local_rank = 0, local_size = 1;
    gt_dist_node_rank(comm, &local_rank, &local_size);
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
    gt_plan_request rq;
    memset(&rq, 0, sizeof rq);
    rq.model = *mc;
    rq.batch = cfg->batch;
    rq.ranks = t->size;
    rq.micro = t->micro;
    rq.n_y_data = (int64_t)t->n_y_ds;
    rq.base_bytes = rss; /* the process so far, the data pipeline included */
    gt_plan p;
    gt_plan_compute(&rq, &tg, &p);
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

/* ---------------------------------------------------------- checkpoints -- */

static void checkpoint(trainer *t, double elapsed_s) {
    if (!t->cfg->write_outputs) return;
    gt_event_begin(t->ev[EV_CHECKPOINT]);
    t->ts.loss_scale = t->amp.scale;
    t->ts.scale_good_steps = t->amp.good_steps;
    t->ts.elapsed_s = elapsed_s;
    int rc = gt_ckpt_save(t->run_dir, t->m, &t->ts, &t->ns, t->cfg->config_text, t->cfg->keep, t->comm);
    if (rc) GT_WARN("checkpoint of step %lld failed (code %d); training continues", (long long)t->ts.step, rc);
    else t->last_ckpt_step = t->ts.step;
    gt_event_end(t->ev[EV_CHECKPOINT]);
}

/* ------------------------------------------------------------ progress -- */

static void fmt_hms(double s, char *buf, size_t n) {
    if (!isfinite(s) || s < 0) {
        snprintf(buf, n, "--:--:--");
        return;
    }
    long v = (long)(s + 0.5);
    snprintf(buf, n, "%02ld:%02ld:%02ld", v / 3600, v / 60 % 60, v % 60);
}

/* ---------------------------------------------------------------- run -- */

int gt_train_run(const gt_train_config *cfg, MPI_Comm comm, gt_train_result *res) {
    trainer tr, *t = &tr;
    memset(t, 0, sizeof *t);
    t->cfg = cfg;
    t->comm = comm;
    MPI_Comm_rank(comm, &t->rank);
    MPI_Comm_size(comm, &t->size);
    t->lstm = cfg->model.kind == GT_MODEL_LSTM;
    t->last_ckpt_step = -1;
    t->last_val = NAN;
    if (res) memset(res, 0, sizeof *res);

    GT_CHECK(cfg->data_file && *cfg->data_file, GT_EXIT_USAGE, "train: no data file (data.file=FILE)");
    GT_CHECK(cfg->batch >= 1, GT_EXIT_USAGE, "train.batch must be >= 1 (got %lld)", (long long)cfg->batch);
    GT_CHECK(cfg->micro_batch >= 0, GT_EXIT_USAGE, "train.micro_batch must be >= 0");
    GT_CHECK(cfg->epochs >= 0 && cfg->max_steps >= 0 && cfg->time_budget_min >= 0, GT_EXIT_USAGE,
             "train.epochs, train.max_steps and train.time_budget must be >= 0");
    GT_CHECK(cfg->epochs > 0 || cfg->max_steps > 0 || cfg->time_budget_min > 0, GT_EXIT_USAGE,
             "train: no stopping rule (set train.epochs, train.max_steps or train.time_budget)");
    GT_CHECK(cfg->lr > 0 && cfg->lr_min >= 0, GT_EXIT_USAGE, "optim.lr must be > 0 and optim.lr_min >= 0");
    GT_CHECK(cfg->warmup >= 0, GT_EXIT_USAGE, "optim.warmup must be >= 0");
    GT_CHECK(cfg->nan_max_bad >= 1, GT_EXIT_USAGE, "train.nan_max_bad must be >= 1");
    GT_CHECK(cfg->log_every >= 1, GT_EXIT_USAGE, "train.log_every must be >= 1");
    GT_CHECK(cfg->keep >= 1, GT_EXIT_USAGE, "run.keep must be >= 1");

    for (int i = 0; i < EV_N; i++) t->ev[i] = gt_event_register(g_ev_names[i]);
    char start_time[32];
    now_iso(start_time, sizeof start_time);
    if (cfg->write_outputs) {
        resolve_run_dir(t);
        gt_signals_install();
    }

    /* ---- data: each rank reads its share, builds the dataset (collective) */
    gt_data_config dcfg = cfg->data;
    dcfg.task = t->lstm ? GT_TASK_PDM : GT_TASK_NILM;
    dcfg.seed = cfg->seed;
    dcfg.x_channels_last = gt_model_input_channels_last(cfg->model.kind);
    gt_event_begin(t->ev[EV_READ]);
    if (t->lstm) {
        gt_pdm_shard *sh = gt_pdm_shard_read(cfg->data_file, comm);
        gt_event_end(t->ev[EV_READ]);
        t->ds = gt_dataset_pdm(sh, &dcfg, comm);
    } else {
        gt_nilm_shard *sh = gt_nilm_shard_read(cfg->data_file, comm);
        gt_event_end(t->ev[EV_READ]);
        t->ds = gt_dataset_nilm(sh, &dcfg, comm);
        if (dcfg.augment > 0) {
            int64_t n_act = gt_dataset_n_activations(t->ds);
            MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &n_act, 1, MPI_INT64_T, MPI_SUM, comm));
            GT_INFO("data: augment %g: %lld appliance activations of the training rows to superimpose",
                    dcfg.augment, (long long)n_act);
            GT_CHECK(n_act > 0, GT_EXIT_DATA, "%s: data.augment = %g but no appliance is ever on in the training rows",
                     cfg->data_file, dcfg.augment);
        }
    }
    t->n_x = (size_t)gt_dataset_n_x(t->ds);
    t->n_y_ds = (size_t)gt_dataset_n_y(t->ds);
    int n_targets = gt_dataset_n_targets(t->ds);

    /* ---- model replica */
    gt_model_config mc = cfg->model;
    mc.window = dcfg.window;
    if (t->lstm) {
        mc.n_in = mc.n_out = n_targets;
        t->T = dcfg.window;
        t->C = n_targets;
    } else {
        mc.n_in = gt_data_config_n_in(&dcfg, n_targets);
        mc.n_out = mc.gated ? 2 * n_targets : n_targets;
    }
    GT_CHECK(!(t->lstm && mc.gated), GT_EXIT_USAGE, "model.head = gated is for the NILM models (s2p_cnn, s2p_tf)");
    t->micro = cfg->micro_batch > 0 && cfg->micro_batch < cfg->batch ? cfg->micro_batch : cfg->batch;
    GT_CHECK(t->micro <= INT_MAX, GT_EXIT_USAGE, "train.micro_batch too large");
    mc.max_batch = (int)t->micro;
    check_memory(t, &mc, comm);
    t->m = gt_model_create(&mc);
    gt_model *m = t->m;
    GT_CHECK(m->n_x == t->n_x, GT_EXIT_INTERNAL, "model input size %zu != dataset sample size %zu", m->n_x, t->n_x);
    t->n_y = m->n_y;
    t->gated = mc.gated;
    t->n_t = t->gated ? t->n_y_ds : t->n_y;
    GT_CHECK(t->lstm || t->n_y == t->n_y_ds * (t->gated ? 2 : 1), GT_EXIT_INTERNAL,
             "model output %zu != dataset targets %zu", t->n_y, t->n_y_ds);

    gt_model_init(m, cfg->seed);
    gt_dist_broadcast(m->params, m->n_params, comm); /* identical from the start, whatever happened */
    { /* the micro-batch buffers, one block of the size the memory planner counts */
        const size_t mb = (size_t)t->micro, nyd = t->n_y_ds ? t->n_y_ds : 1;
        t->vidx = GT_CALLOC((size_t)gt_plan_micro_buffer_bytes(t->micro, (int64_t)t->n_y, (int64_t)t->n_y_ds), 1);
        t->ybuf = (float *)(t->vidx + mb);
        t->mbuf = t->ybuf + mb * t->n_y;
        t->vy = t->mbuf + mb * t->n_y;
        t->vm = t->vy + mb * nyd;
    }

    /* ---- state: fresh or resumed */
    gt_amp_init(&t->amp, cfg->amp, 0, 0);
    t->ts.best_val = INFINITY;
    t->ts.best_step = -1;
    t->ts.loss_scale = t->amp.scale;
    t->ts.seed = cfg->seed;
    t->ns = *gt_dataset_norm(t->ds);
    int64_t resumed_from = -1;
    if (cfg->resume) {
        GT_CHECK(cfg->write_outputs, GT_EXIT_USAGE, "resume needs a run directory");
        gt_event_begin(t->ev[EV_CHECKPOINT]);
        resumed_from = gt_ckpt_load_latest(t->run_dir, m, &t->ts, &t->ns, comm);
        gt_event_end(t->ev[EV_CHECKPOINT]);
        GT_CHECK(resumed_from >= 0, GT_EXIT_USAGE, "resume: no valid checkpoint in %s/checkpoints", t->run_dir);
        GT_CHECK(t->ts.seed == cfg->seed, GT_EXIT_USAGE,
                 "resume: train.seed=%llu differs from the checkpoint's %llu (the data order would change)",
                 (unsigned long long)cfg->seed, (unsigned long long)t->ts.seed);
        gt_dataset_set_norm(t->ds, &t->ns);
        if (t->amp.enabled) {
            t->amp.scale = t->ts.loss_scale;
            t->amp.good_steps = t->ts.scale_good_steps;
        }
        t->last_ckpt_step = t->ts.step;
        if (t->rank == 0)
            GT_INFO("resumed %s at step %lld (epoch %llu, batch %lld)", t->run_dir, (long long)t->ts.step,
                    (unsigned long long)t->ts.epoch, (long long)t->ts.batch_k);
    }

    if (t->gated) { /* on-thresholds in the (possibly resumed) normalised units */
        t->thr = GT_MALLOC(sizeof(float) * t->n_y_ds);
        for (size_t a = 0; a < t->n_y_ds; a++) t->thr[a] = gt_dataset_on_threshold(t->ds, (int)a);
    }

    /* ---- schedule */
    t->bpe = gt_dataset_batches_per_epoch(t->ds, GT_SPLIT_TRAIN, cfg->batch);
    int64_t n_train = gt_dataset_n_windows_global(t->ds, GT_SPLIT_TRAIN);
    GT_CHECK(t->bpe >= 1, GT_EXIT_DATA,
             "the train split has %lld windows, fewer than one batch (train.batch=%lld): use a smaller batch, "
             "a smaller window or stride, or more data", (long long)n_train, (long long)cfg->batch);
    t->total_steps = cfg->epochs > 0 ? cfg->epochs * t->bpe : 0;
    if (cfg->max_steps > 0 && (t->total_steps == 0 || cfg->max_steps < t->total_steps))
        t->total_steps = cfg->max_steps;
    t->eval_every = cfg->eval_every > 0 ? cfg->eval_every : t->bpe;

    int prefetch = cfg->prefetch;
    if (prefetch < 0) {
        /* A prefetch thread pays when it has a core of its own; with every core
         * busy computing (ranks x BLAS threads >= cores) it only adds hand-off
         * latency, and filling in the loop is faster. */
        int local_rank = 0, local_size = 1;
        gt_dist_node_rank(comm, &local_rank, &local_size);
        cpu_set_t cs;
        int cores = sched_getaffinity(0, sizeof cs, &cs) == 0 ? CPU_COUNT(&cs) : 1;
        if (local_size > 1) cores = (int)sysconf(_SC_NPROCESSORS_ONLN); /* each rank's mask may be one core */
        const char *bt = getenv("OPENBLAS_NUM_THREADS");
        int threads = bt && atoi(bt) > 0 ? atoi(bt) : 1;
        prefetch = cores >= local_size * (threads + 1);
        if (t->rank == 0)
            GT_INFO("data: prefetch thread %s (%d cores, %d ranks x %d BLAS threads on this node)",
                    prefetch ? "on" : "off (no spare core: batches are filled in the loop)", cores, local_size,
                    threads);
    }
    t->ld = gt_loader_create(t->ds, GT_SPLIT_TRAIN, cfg->batch, t->ts.epoch, t->ts.batch_k, prefetch);

    /* ---- memory per rank (max over ranks) */
    int64_t mem[4] = {gt_dataset_bytes(t->ds) + gt_loader_bytes(t->ld), (int64_t)gt_model_state_bytes(m),
                      (int64_t)gt_model_act_bytes(m), gt_current_rss_bytes()};
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, mem, 4, MPI_INT64_T, MPI_MAX, comm));
    if (t->rank == 0 && !cfg->quiet)
        GT_INFO("memory per rank (max over %d rank%s): data pipeline %.1f MiB (dataset + batch buffers), "
                "model state %.1f MiB (params, grads, AdamW), activations %.1f MiB, resident %.1f MiB",
                t->size, t->size == 1 ? "" : "s", mem[0] / 1048576.0, mem[1] / 1048576.0, mem[2] / 1048576.0,
                mem[3] / 1048576.0);
    if (t->rank == 0 && !cfg->quiet)
        GT_INFO("train: %s, %zu parameters, %lld train windows, batch %lld (micro-batch %lld per rank), "
                "%lld batches/epoch, %lld steps%s, precision %s",
                gt_model_kind_name(mc.kind), m->n_params, (long long)n_train, (long long)cfg->batch,
                (long long)t->micro, (long long)t->bpe, (long long)t->total_steps,
                t->total_steps ? "" : " (until the time budget)",
                t->amp.enabled ? "fp32 + dynamic loss scaling" : "fp32");

    /* ---- outputs */
    uint64_t data_hash = 0;
    int64_t data_bytes = 0;
    if (cfg->write_outputs) {
        FILE *scr = NULL;
        if (t->rank == 0) {
            file_xxh64(cfg->data_file, &data_hash, &data_bytes);
            FILE *f = open_in_run(t, "config.ini", "w");
            fputs(cfg->config_text ? cfg->config_text : "# configuration given through the C API\n", f);
            fclose(f);
            write_manifest(t, start_time, NULL, 0, resumed_from, &data_hash, data_bytes);
            t->metrics = open_in_run(t, "metrics.jsonl", cfg->resume ? "a" : "w");
            scr = open_in_run(t, "screened.csv", "w");
        }
        gt_dataset_write_screened(t->ds, comm, scr);
        if (scr) fclose(scr);
    }

    /* ---- the loop */
    const int tty = isatty(fileno(stderr));
    const double t_loop0 = gt_now();
    const double elapsed0 = t->ts.elapsed_s;
    double last_ckpt_time = t_loop0;
    int64_t seg_batches = 0, cap_losses = 0;
    double iv_t0 = t_loop0, iv_wait = 0, iv_loss = 0, last_gnorm = NAN;
    int64_t iv_steps = 0, iv_samples = 0;
    double meas_t0 = -1, meas_wait = 0;
    int64_t meas_samples = 0;
    int exit_code = 0, stop_early = 0, stop_time = 0, printed_live = 0;
    const char *stop_why = "done";
    double last_loss = NAN, first_loss = NAN;
    int64_t validated_step = -1;

    for (;;) {
        /* step boundary: same decision on every rank */
        if (t->total_steps > 0 && t->ts.step >= t->total_steps) break;
        if (cfg->epochs > 0 && (int64_t)t->ts.epoch >= cfg->epochs) break;
        if (stop_early) { stop_why = "early stopping (validation loss stopped improving)"; break; }
        if (stop_time) { stop_why = "time budget reached"; break; }
        int sig = cfg->write_outputs ? gt_signal_pending_any(comm) : 0;
        if (sig || (cfg->stop_after > 0 && seg_batches >= cfg->stop_after)) {
            if (printed_live && t->rank == 0) fputc('\n', stderr);
            checkpoint(t, elapsed0 + gt_now() - t_loop0);
            if (t->rank == 0)
                GT_INFO("%s at step %lld: checkpoint written; continue with 'gridtrain train --resume %s'",
                        sig ? (sig == 15 ? "SIGTERM" : sig == 10 ? "SIGUSR1" : "signal") : "train.stop_after",
                        (long long)t->ts.step, t->run_dir);
            exit_code = GT_EXIT_PREEMPTED;
            stop_why = "preempted";
            break;
        }
        if (seg_batches == cfg->measure_from) {
            meas_t0 = gt_now();
            meas_wait = 0;
            meas_samples = 0;
        }

        const gt_batch *b;
        double wait = gt_loader_next(t->ld, &b);
        gt_event_add(t->ev[EV_DATA_WAIT], wait, 1);
        GT_ASSERT(b->epoch == t->ts.epoch && b->k == t->ts.batch_k);
        t->ts.batch_k = b->k + 1;
        if (t->ts.batch_k >= t->bpe) {
            t->ts.epoch++;
            t->ts.batch_k = 0;
        }
        seg_batches++;

        /* global normaliser: target elements of the whole global batch */
        double M = mask_count(t, b);
        gt_dist_allreduce_sum_d(&M, 1, comm);
        const float scale = gt_amp_loss_scale(&t->amp);
        const float coef = M > 0 ? (float)(1.0 / M) * scale : 0.0f;

        /* forward/backward in micro-batches; gradients accumulate */
        gt_model_zero_grad(m);
        double S = 0;
        for (int64_t off = 0; off < b->n; off += t->micro) {
            int B = (int)(b->n - off < t->micro ? b->n - off : t->micro);
            const float *x = b->x + (size_t)off * t->n_x;
            gt_event_begin(t->ev[EV_FORWARD]);
            gt_model_forward(m, x, B);
            const float *y, *mask;
            targets(t, x, t->lstm ? NULL : b->y + (size_t)off * t->n_y_ds,
                    t->lstm ? NULL : b->mask + (size_t)off * t->n_y_ds, B, &y, &mask);
            S += objective(t, m->dpred, m->pred, y, mask, B, coef);
            gt_event_end(t->ev[EV_FORWARD]);
            gt_event_begin(t->ev[EV_BACKWARD]);
            gt_model_backward(m, 1.0f);
            gt_event_end(t->ev[EV_BACKWARD]);
        }

        /* all-reduce: gradient sum, then the loss sum and rank 0's clock decisions */
        gt_event_begin(t->ev[EV_ALLREDUCE]);
        gt_dist_allreduce_sum(m->grads, m->n_params, GT_TRAIN_BUCKET_BYTES, comm);
        double red[3] = {S, 0, 0};
        if (t->rank == 0) {
            double now = gt_now();
            red[1] = cfg->time_budget_min > 0 && elapsed0 + now - t_loop0 >= cfg->time_budget_min * 60.0;
            red[2] = cfg->checkpoint_minutes > 0 && now - last_ckpt_time >= cfg->checkpoint_minutes * 60.0;
        }
        gt_dist_allreduce_sum_d(red, 3, comm);
        gt_event_end(t->ev[EV_ALLREDUCE]);
        double loss = M > 0 ? red[0] / M : 0.0;

        /* NaN/Inf guard, AMP, clipping, AdamW: identical inputs on every rank,
         * so every rank takes the same branch */
        gt_event_begin(t->ev[EV_OPTIMIZER]);
        int grads_finite = gt_amp_unscale(&t->amp, m->grads, m->n_params);
        double gnorm = gt_grad_norm(m->grads, m->n_params);
        int finite = isfinite(loss) && grads_finite && isfinite(gnorm);
        int apply = gt_amp_update(&t->amp, !finite);
        float lr = 0;
        if (apply) {
            if (cfg->clip > 0) {
                double c = cfg->clip / (gnorm + 1e-6);
                if (c < 1.0) gt_scale(m->grads, m->n_params, (float)c);
            }
            lr = gt_lr_schedule(t->ts.step, cfg->warmup, t->total_steps, (float)cfg->lr, (float)cfg->lr_min);
            gt_model_adamw_step(m, &cfg->adamw, lr, t->ts.step + 1, 0);
            t->ts.step++;
            t->ts.bad_steps = 0;
        }
        gt_event_end(t->ev[EV_OPTIMIZER]);
        t->ts.samples += b->g_batch;
        if (res) {
            if (res->n_losses == cap_losses) {
                cap_losses = cap_losses ? 2 * cap_losses : 256;
                res->losses = GT_REALLOC(res->losses, (size_t)cap_losses * sizeof(double));
            }
            res->losses[res->n_losses++] = loss;
        }
        if (seg_batches == 1) first_loss = loss;
        last_loss = loss;
        if (meas_t0 >= 0) {
            meas_wait += wait;
            meas_samples += b->g_batch;
        }

        if (!apply) {
            t->ts.skipped_steps++;
            /* an overflow the loss scaler can absorb is not a bad step */
            int absorbed = t->amp.enabled && isfinite(loss) && t->amp.scale > t->amp.min_scale;
            if (!absorbed) {
                t->ts.bad_steps++;
                forensics(t, b, loss, gnorm);
                if (t->ts.bad_steps >= cfg->nan_max_bad) {
                    if (printed_live && t->rank == 0) fputc('\n', stderr);
                    if (t->rank == 0)
                        fprintf(stderr,
                                "gridtrain: error: %d consecutive steps with a non-finite loss or gradient "
                                "(train.nan_max_bad=%d); training stopped at step %lld. The offending samples "
                                "(household/turbine id, time range) are in %s/forensics.jsonl. Screen the data "
                                "(data.screen=drop or repair, data.spike_k), or lower optim.lr / set optim.clip.\n",
                                t->ts.bad_steps, cfg->nan_max_bad, (long long)t->ts.step, t->run_dir);
                    exit_code = GT_EXIT_NUMERIC;
                    stop_why = "non-finite";
                    break;
                }
            }
            continue;
        }
        last_gnorm = gnorm;

        /* progress + metrics */
        iv_loss += loss;
        iv_steps++;
        iv_samples += b->g_batch;
        iv_wait += wait;
        if (t->ts.step % cfg->log_every == 0 || t->ts.step == t->total_steps) {
            double now = gt_now(), wall = now - iv_t0;
            double stall = wall > 0 ? iv_wait / wall : 0;
            MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &stall, 1, MPI_DOUBLE, MPI_MAX, comm));
            double sps = wall > 0 ? iv_samples / wall : 0;
            double mean_loss = iv_loss / (double)iv_steps;
            if (t->rank == 0) {
                double eta = t->total_steps > 0 && iv_steps > 0
                                 ? (double)(t->total_steps - t->ts.step) * wall / (double)iv_steps
                                 : cfg->time_budget_min * 60.0 - (elapsed0 + now - t_loop0);
                char etas[64];
                fmt_hms(eta, etas, sizeof etas);
                if (!cfg->quiet && gt_log_level() <= GT_LOG_INFO) {
                    char line[256];
                    snprintf(line, sizeof line,
                             "epoch %llu step %lld/%lld loss %.6g lr %.3g %.0f samples/s stall %.1f%% ETA %s",
                             (unsigned long long)b->epoch + 1, (long long)t->ts.step, (long long)t->total_steps,
                             mean_loss, lr, sps, 100 * stall, etas);
                    if (tty) {
                        fprintf(stderr, "\r%s\033[K", line);
                        printed_live = 1;
                    } else {
                        fprintf(stderr, "%s\n", line);
                    }
                    fflush(stderr);
                }
                if (t->metrics) {
                    cJSON *j = cJSON_CreateObject();
                    cJSON_AddStringToObject(j, "type", "train");
                    cJSON_AddNumberToObject(j, "step", (double)t->ts.step);
                    cJSON_AddNumberToObject(j, "epoch", (double)b->epoch);
                    json_num(j, "loss", mean_loss);
                    json_num(j, "val_loss", t->last_val);
                    cJSON_AddNumberToObject(j, "lr", lr);
                    cJSON_AddNumberToObject(j, "samples_per_s", sps);
                    cJSON_AddNumberToObject(j, "data_stall", stall);
                    json_num(j, "grad_norm", gnorm);
                    cJSON_AddNumberToObject(j, "loss_scale", t->amp.scale);
                    cJSON_AddNumberToObject(j, "skipped", (double)t->ts.skipped_steps);
                    cJSON_AddNumberToObject(j, "samples", (double)t->ts.samples);
                    cJSON_AddNumberToObject(j, "time_s", elapsed0 + now - t_loop0);
                    write_json_line(t->metrics, j);
                }
            }
            iv_t0 = now;
            iv_wait = iv_loss = 0;
            iv_steps = iv_samples = 0;
        }

        /* validation, replica check, early stopping */
        int improved = 0;
        if (t->ts.step % t->eval_every == 0) {
            double v = validate(t);
            validated_step = t->ts.step;
            t->last_val = v;
            if (isfinite(v)) {
                if (v < t->ts.best_val) {
                    t->ts.best_val = v;
                    t->ts.best_step = t->ts.step;
                    t->ts.bad_evals = 0;
                    improved = 1; /* checkpointed below: evaluation loads the best one */
                } else {
                    t->ts.bad_evals++;
                    if (cfg->patience > 0 && t->ts.bad_evals >= cfg->patience) stop_early = 1;
                }
            }
            if (t->rank == 0) {
                if (printed_live) fputc('\n', stderr), printed_live = 0;
                if (!cfg->quiet)
                    GT_INFO("step %lld: val_loss %.6g (best %.6g at step %lld)", (long long)t->ts.step, v,
                            t->ts.best_val, (long long)t->ts.best_step);
                if (t->metrics) {
                    cJSON *j = cJSON_CreateObject();
                    cJSON_AddStringToObject(j, "type", "val");
                    cJSON_AddNumberToObject(j, "step", (double)t->ts.step);
                    cJSON_AddNumberToObject(j, "epoch", (double)b->epoch);
                    json_num(j, "loss", loss);
                    json_num(j, "val_loss", v);
                    json_num(j, "best_val", t->ts.best_val);
                    cJSON_AddNumberToObject(j, "lr", lr);
                    json_num(j, "grad_norm", gnorm);
                    cJSON_AddNumberToObject(j, "loss_scale", t->amp.scale);
                    cJSON_AddNumberToObject(j, "skipped", (double)t->ts.skipped_steps);
                    write_json_line(t->metrics, j);
                }
            }
        }

        /* periodic checkpoints (steps or minutes) */
        if ((cfg->checkpoint_every > 0 && t->ts.step % cfg->checkpoint_every == 0) || red[2] != 0 || improved) {
            checkpoint(t, elapsed0 + gt_now() - t_loop0);
            last_ckpt_time = gt_now();
        }
        if (red[1] != 0) stop_time = 1;
    }
    if (printed_live && t->rank == 0) fputc('\n', stderr);
    double loop_s = gt_now() - t_loop0;

    /* ---- the end: last validation, final checkpoint, replica check */
    if (exit_code == 0) {
        if (validated_step != t->ts.step && t->ts.step > 0) {
            t->last_val = validate(t);
            if (isfinite(t->last_val) && t->last_val < t->ts.best_val) {
                t->ts.best_val = t->last_val;
                t->ts.best_step = t->ts.step;
            }
        }
        if (t->last_ckpt_step != t->ts.step) checkpoint(t, elapsed0 + loop_s);
    }
    int identical = gt_dist_replicas_identical(m->params, m->n_params, comm);
    GT_CHECK(identical, GT_EXIT_INTERNAL, "model replicas differ between ranks at the end of training");
    uint64_t checksum = gt_dist_checksum(m->params, m->n_params);
    double meas_rate = 0, meas_stall = 0;
    if (meas_t0 >= 0) {
        double wall = gt_now() - meas_t0;
        meas_rate = wall > 0 ? meas_samples / wall : 0;
        meas_stall = wall > 0 ? meas_wait / wall : 0;
    }
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &meas_stall, 1, MPI_DOUBLE, MPI_MAX, comm));
    MPI_CHECK(MPI_Bcast(&meas_rate, 1, MPI_DOUBLE, 0, comm));

    int64_t peak_rss = gt_peak_rss_bytes();
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &peak_rss, 1, MPI_INT64_T, MPI_MAX, comm));
    if (t->rank == 0 && !cfg->quiet)
        GT_INFO("memory: peak resident %.1f MiB per rank (max over ranks; 'gridtrain plan' predicts it)",
                peak_rss / 1048576.0);
    if (t->rank == 0 && !cfg->quiet)
        GT_INFO("train: %s after %lld steps (%lld skipped) in %.1f s: loss %.6g, val_loss %.6g (best %.6g at step "
                "%lld), params xxh64 %016llx%s%s",
                stop_why, (long long)t->ts.step, (long long)t->ts.skipped_steps, loop_s, last_loss, t->last_val,
                t->ts.best_val, (long long)t->ts.best_step, (unsigned long long)checksum,
                cfg->write_outputs ? ", run directory " : "", cfg->write_outputs ? t->run_dir : "");
    if (cfg->write_outputs && t->rank == 0) {
        char end_time[32];
        now_iso(end_time, sizeof end_time);
        write_manifest(t, start_time, end_time, exit_code, resumed_from, &data_hash, data_bytes);
    }

    if (res) {
        res->exit_code = exit_code;
        res->steps = t->ts.step;
        res->skipped = t->ts.skipped_steps;
        res->samples = t->ts.samples;
        res->last_loss = last_loss;
        res->first_loss = first_loss;
        res->last_val = t->last_val;
        res->best_val = isfinite(t->ts.best_val) ? t->ts.best_val : NAN;
        res->params_checksum = checksum;
        res->replicas_identical = identical;
        res->train_s = loop_s;
        res->samples_per_s = meas_rate;
        res->data_stall = meas_stall;
        res->pipeline_bytes = mem[0];
    }
    (void)last_gnorm;
    if (t->metrics) fclose(t->metrics);
    gt_loader_free(t->ld);
    /* ---- end-of-run evaluation + report (owner: eval; eval/run_eval.h): timing.json,
     * eval.json, report.md/html; the training dataset is released first */
    if (cfg->write_outputs && exit_code == 0) {
        gt_dataset_free(t->ds);
        t->ds = NULL;
        gt_eval_train_info ei = {.steps = t->ts.step, .train_time_s = elapsed0 + loop_s, .samples_per_s = meas_rate,
                                 .data_stall = meas_stall, .ranks = t->size, .final_loss = last_loss,
                                 .best_val_loss = isfinite(t->ts.best_val) ? t->ts.best_val : NAN,
                                 .eval_step = t->ts.step, .eval_best = 0};
        /* model selection on the validation split: evaluate the best checkpoint */
        if (t->ts.best_step >= 0 && t->ts.best_step != t->ts.step) {
            gt_train_state bs;
            gt_norm_stats bns;
            int64_t got = gt_ckpt_load(t->run_dir, GT_CKPT_STEP, t->ts.best_step, m, &bs, &bns, comm);
            if (got >= 0) ei.eval_step = got, ei.eval_best = 1; /* GT_CKPT_STEP: exactly that step */
            else if (t->rank == 0)
                GT_WARN("eval: the best validation checkpoint (step %lld) is missing; evaluating the final model",
                        (long long)t->ts.best_step);
        } else {
            ei.eval_best = t->ts.best_step == t->ts.step;
        }
        gt_eval_end_of_run(cfg, t->run_dir, m, &t->ns, &ei, comm);
    }
    /* ---- end of the eval hook */
    gt_model_free(t->m);
    gt_dataset_free(t->ds);
    free(t->thr);
    free(t->vidx); /* the micro-batch block (ybuf, mbuf, vy, vm) */
    return exit_code;
}
