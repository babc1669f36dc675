/* train/outputs.c: the files of a run directory the trainer writes
 * (config.ini, manifest.json, metrics.jsonl, screened.csv, timing.json);
 * checkpoints are train/checkpoint.c's. See docs/training.md. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "core/timer.h"
#include "dist/reduce.h"
#include "train/train_impl.h"

#ifndef GT_VERSION
#define GT_VERSION "dev"
#endif

void gt_train_iso_time(int64_t ms, char *buf, size_t n) {
    time_t s = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void gt_train_now_iso(char *buf, size_t n) {
    struct timespec tsp;
    clock_gettime(CLOCK_REALTIME, &tsp);
    gt_train_iso_time((int64_t)tsp.tv_sec * 1000, buf, n);
}

/* Rank 0 chooses the run directory; every rank gets the same string. */
void gt_train_resolve_run_dir(trainer *t) {
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
        if (gt_mkdir_p(buf) != 0)
            GT_FAIL(GT_EXIT_RESOURCE, "cannot create directory '%s': %s", buf, strerror(errno));
    }
    gt_dist_bcast_bytes(buf, sizeof buf, t->comm);
    snprintf(t->run_dir, sizeof t->run_dir, "%s", buf);
}

FILE *gt_train_open_in_run(const trainer *t, const char *name, const char *mode) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", t->run_dir, name);
    FILE *f = fopen(path, mode);
    GT_CHECK(f, GT_EXIT_RESOURCE, "cannot open '%s': %s", path, strerror(errno));
    return f;
}

void gt_train_write_json_line(FILE *f, void *cjson) {
    cJSON *o = cjson;
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

/* "device": where the engine ran (rank 0's view; every rank has its own GPU). */
static void add_device(cJSON *o, const trainer *t) {
    const gt_train_device *dv = &t->dev;
    cJSON *d = cJSON_AddObjectToObject(o, "device");
    cJSON_AddStringToObject(d, "requested", gt_device_request_name(dv->requested));
    cJSON_AddStringToObject(d, "kind", dv->engine == GT_ENGINE_HOST ? "cpu" : "cuda");
    char v[16];
    gt_train_cuda_version(dv->probe.runtime_version, v, sizeof v);
    cJSON_AddStringToObject(d, "cuda_runtime", v);
    gt_train_cuda_version(dv->probe.driver_version, v, sizeof v);
    cJSON_AddStringToObject(d, "driver_cuda", v);
    cJSON_AddStringToObject(d, "driver_release", dv->probe.driver_release);
    cJSON_AddNumberToObject(d, "gpus_visible", dv->probe.count);
    if (dv->engine == GT_ENGINE_HOST) {
        cJSON_AddNumberToObject(d, "gpus", 0);
        return;
    }
    cJSON_AddNumberToObject(d, "gpus", t->size); /* one per rank */
    cJSON_AddNumberToObject(d, "max_ranks_per_node", dv->nodes_max_ranks);
    cJSON_AddStringToObject(d, "name", dv->info.name);
    cJSON_AddNumberToObject(d, "memory_bytes", dv->info.total_bytes);
    char cc[16];
    snprintf(cc, sizeof cc, "%d.%d", dv->info.cc_major, dv->info.cc_minor);
    cJSON_AddStringToObject(d, "compute_capability", cc);
    cJSON_AddStringToObject(d, "rank0_uuid", dv->info.uuid);
    cJSON_AddStringToObject(d, "rank0_pci_bus_id", dv->info.pci_bus_id);
    cJSON_AddStringToObject(d, "nccl", dv->nccl_version);
}

/* manifest.json (rank 0): provenance of the run; rewritten at the end. */
void gt_train_write_manifest(const trainer *t, const char *end_time, int exit_code) {
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
    cJSON_AddNumberToObject(d, "size_bytes", (double)t->data_bytes);
    char hex[32];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)t->data_hash);
    cJSON_AddStringToObject(d, "xxh64", hex);
    cJSON_AddStringToObject(o, "task", t->task->name);
    cJSON_AddNumberToObject(o, "ranks", t->size);
    const char *ob = getenv("OPENBLAS_NUM_THREADS");
    cJSON_AddStringToObject(o, "openblas_threads", ob ? ob : "unset (OpenBLAS default: all cores)");
    char host[256] = "unknown";
    gethostname(host, sizeof host - 1);
    cJSON_AddStringToObject(o, "host", host);
    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    cJSON_AddStringToObject(o, "cpu_model", cpu);
    cJSON_AddStringToObject(o, "engine", gt_engine_kind_name(t->e->kind));
    add_device(o, t);
    cJSON_AddStringToObject(o, "model_kind", gt_model_kind_name(c->model.kind));
    cJSON_AddNumberToObject(o, "n_params", (double)gt_engine_n_params(t->e));
    cJSON_AddStringToObject(o, "precision", t->amp.enabled ? "fp32 compute, dynamic loss scaling" : "fp32");
    if (t->resumed_from >= 0) cJSON_AddNumberToObject(o, "resumed_from_step", (double)t->resumed_from);
    cJSON_AddStringToObject(o, "start_time", t->start_time);
    if (end_time) {
        cJSON_AddStringToObject(o, "end_time", end_time);
        cJSON_AddNumberToObject(o, "exit_code", exit_code);
        cJSON_AddNumberToObject(o, "steps", (double)t->ts.step);
        cJSON_AddNumberToObject(o, "skipped_steps", (double)t->ts.skipped_steps);
    } else {
        cJSON_AddNullToObject(o, "end_time");
    }
    char *s = cJSON_Print(o);
    size_t len = strlen(s);
    char *withnl = GT_MALLOC(len + 2);
    memcpy(withnl, s, len);
    withnl[len] = '\n', withnl[len + 1] = 0;
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/manifest.json", t->run_dir);
    GT_CHECK(gt_write_file_atomic(path, withnl) == 0, GT_EXIT_RESOURCE, "cannot write '%s': %s", path, strerror(errno));
    free(withnl);
    cJSON_free(s);
    cJSON_Delete(o);
}

/* Collective: config.ini, the first manifest, metrics.jsonl, screened.csv and
 * data_used.csv (per household/turbine: rows, filled samples, windows kept
 * and screened by reason). */
void gt_train_open_outputs(trainer *t) {
    const gt_train_config *cfg = t->cfg;
    FILE *scr = NULL, *used = NULL;
    if (t->rank == 0) {
        file_xxh64(cfg->data_file, &t->data_hash, &t->data_bytes);
        FILE *f = gt_train_open_in_run(t, "config.ini", "w");
        fputs(cfg->config_text ? cfg->config_text : "# configuration given through the C API\n", f);
        fclose(f);
        gt_train_write_manifest(t, NULL, 0);
        t->metrics = gt_train_open_in_run(t, "metrics.jsonl", cfg->resume ? "a" : "w");
        scr = gt_train_open_in_run(t, "screened.csv", "w");
        used = gt_train_open_in_run(t, "data_used.csv", "w");
    }
    gt_dataset_write_screened(t->ds, t->comm, scr);
    gt_dataset_write_usage(t->ds, t->comm, used);
    if (scr) fclose(scr);
    if (used) fclose(used);
}

/* The one writer of metrics.jsonl rows (rank 0; no file: nothing). Keys in
 * a fixed order; train rows carry throughput, val rows the best loss. */
void gt_train_metrics_row(const trainer *t, const train_metrics_row *r) {
    if (!t->metrics) return;
    const int train = !strcmp(r->type, "train");
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "type", r->type);
    cJSON_AddNumberToObject(j, "step", (double)r->step);
    cJSON_AddNumberToObject(j, "epoch", (double)r->epoch);
    json_num(j, "loss", r->loss);
    json_num(j, "val_loss", r->val_loss);
    if (!train) json_num(j, "best_val", r->best_val);
    cJSON_AddNumberToObject(j, "lr", r->lr);
    if (train) {
        cJSON_AddNumberToObject(j, "samples_per_s", r->samples_per_s);
        cJSON_AddNumberToObject(j, "data_stall", r->data_stall);
    }
    json_num(j, "grad_norm", r->grad_norm);
    cJSON_AddNumberToObject(j, "loss_scale", t->amp.scale);
    cJSON_AddNumberToObject(j, "skipped", (double)t->ts.skipped_steps);
    if (train) {
        cJSON_AddNumberToObject(j, "samples", (double)t->ts.samples);
        cJSON_AddNumberToObject(j, "time_s", r->time_s);
    }
    gt_train_write_json_line(t->metrics, j);
}

void gt_train_write_timing(const trainer *t, double train_time_s, double samples_per_s, double data_stall,
                           double final_loss) {
    int n = gt_event_count();
    if (gt_dist_min_int(n, t->comm) != gt_dist_max_int(n, t->comm)) return; /* ranks registered different events */
    double smin[GT_MAX_EVENTS], smax[GT_MAX_EVENTS], ssum[GT_MAX_EVENTS], csum[GT_MAX_EVENTS];
    for (int i = 0; i < n; i++) {
        smin[i] = smax[i] = ssum[i] = gt_event_seconds(i);
        csum[i] = (double)gt_event_calls(i);
    }
    if (n > 0) {
        gt_dist_allreduce_min_d(smin, n, t->comm);
        gt_dist_allreduce_max_d(smax, n, t->comm);
        gt_dist_allreduce_sum_d(ssum, n, t->comm);
        gt_dist_allreduce_sum_d(csum, n, t->comm);
    }
    if (t->rank != 0) return;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "ranks", t->size);
    json_num(o, "train_time_s", train_time_s);
    json_num(o, "samples_per_s", samples_per_s);
    json_num(o, "data_stall", data_stall);
    cJSON_AddNumberToObject(o, "gpus", t->dev.engine == GT_ENGINE_HOST ? 0 : t->size); /* one per rank */
    cJSON_AddNumberToObject(o, "steps", (double)t->ts.step);
    json_num(o, "final_loss", final_loss);
    json_num(o, "best_val_loss", isfinite(t->ts.best_val) ? t->ts.best_val : NAN);
    cJSON *ev = cJSON_AddArrayToObject(o, "events");
    for (int i = 0; i < n; i++) {
        cJSON *e = cJSON_CreateObject();
        double mean = ssum[i] / t->size;
        cJSON_AddStringToObject(e, "name", gt_event_name(i));
        cJSON_AddNumberToObject(e, "min_s", smin[i]);
        cJSON_AddNumberToObject(e, "max_s", smax[i]);
        cJSON_AddNumberToObject(e, "mean_s", mean);
        cJSON_AddNumberToObject(e, "max_over_mean", mean > 0 ? smax[i] / mean : 1.0);
        cJSON_AddNumberToObject(e, "calls_per_rank", csum[i] / t->size);
        cJSON_AddItemToArray(ev, e);
    }
    char *txt = cJSON_Print(o);
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/timing.json", t->run_dir);
    if (gt_write_file_atomic(path, txt)) GT_WARN("train: cannot write %s: %s", path, strerror(errno));
    cJSON_free(txt);
    cJSON_Delete(o);
}
