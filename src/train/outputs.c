/* train/outputs.c: the files of a run directory the trainer writes
 * (config.ini, manifest.json, metrics.jsonl, screened.csv, timing.json);
 * checkpoints are train/checkpoint.h's. See docs/training.md. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "core/escape.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "core/timer.h"
#include "dist/reduce.h"
#include "io/format.h"
#include "nn/ops/cpu/gemm.h"
#include "train/regress.h"
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
        if (gt_mkdir_out(buf) != 0) /* run.dir itself a symbolic link: refused */
            GT_FAIL(GT_EXIT_RESOURCE, "cannot create directory '%s': %s", buf, gt_out_strerror(errno));
    }
    gt_dist_bcast_bytes(buf, sizeof buf, t->comm);
    snprintf(t->run_dir, sizeof t->run_dir, "%s", buf);
}

/* ------------------------------------------------------- the run dir -- */

/* What a run (the trainer and the evaluation after it) writes into its
 * directory. A fresh run refuses a directory that holds any of them: another
 * run's checkpoints would be picked by eval and --resume, and a user's file of
 * one of these names would be overwritten. Other files are left alone. */
static const char *const k_run_files[] = {"config.ini",      "manifest.json",   "metrics.jsonl", "screened.csv",
                                          "forensics.jsonl", "timing.json",     "eval.json",     "eval_sample.csv",
                                          "eval_scores.csv", "report.md",       "report.html",   "trace.json"};
static const char *const k_run_dirs[] = {"checkpoints", "plots"};
#define N_RUN_FILES (sizeof k_run_files / sizeof k_run_files[0])

static int dir_has_entries(const char *path) {
    DIR *d = opendir(path);
    if (!d) return 0;
    int any = 0;
    struct dirent *e;
    while (!any && (e = readdir(d)))
        any = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return any;
}

/* Rank 0: removes every entry of dir (a run's checkpoints/ or plots/: files
 * only, written by gridtrain); 0 or -1 with errno. */
static int empty_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : -1;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && unlinkat(dirfd(d), e->d_name, 0) != 0 &&
            errno != ENOENT)
            rc = -1;
    closedir(d);
    return rc;
}

/* Rank 0: lock run.lock; 0, or an exit code with msg filled. */
static int lock_run_dir(trainer *t, char *msg, size_t n) {
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/run.lock", t->run_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
    if (fd < 0) {
        snprintf(msg, n, "run.dir '%s': cannot create %s: %s", t->run_dir, path, gt_out_strerror(errno));
        return GT_EXIT_RESOURCE;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        if (e == EWOULDBLOCK || e == EINTR) {
            char holder[256] = "";
            ssize_t got = pread(fd, holder, sizeof holder - 1, 0);
            holder[got > 0 ? got : 0] = 0;
            holder[strcspn(holder, "\n")] = 0;
            close(fd);
            snprintf(msg, n,
                     "run.dir '%s' is in use by another gridtrain (%s; lock %s): wait for it to end, or use another "
                     "run.dir", t->run_dir, holder[0] ? holder : "holder unknown", path);
            return GT_EXIT_RESOURCE;
        }
        /* a file system without locks (some network mounts): warn, run unlocked */
        GT_WARN("run.dir '%s': cannot lock %s (%s): a second trainer on this directory would not be stopped",
                t->run_dir, path, strerror(e));
    }
    char host[256] = "unknown", text[512];
    gethostname(host, sizeof host - 1);
    int len = snprintf(text, sizeof text, "pid %d on host %s since %s (gridtrain train%s)\n", (int)getpid(), host,
                       t->start_time, t->cfg->resume ? " --resume" : "");
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)len, 0) != len)
        GT_WARN("run.dir '%s': cannot write %s: %s", t->run_dir, path, strerror(errno));
    t->lock_fd = fd;
    return 0;
}

/* Rank 0, fresh runs: another run's files in run_dir are refused, or deleted
 * with cfg->overwrite. 0, or an exit code with msg filled. */
static int check_previous_run(trainer *t, char *msg, size_t n) {
    char found[512] = "", p[PATH_MAX + 64];
    size_t k = 0;
    struct stat st;
    for (size_t i = 0; i < N_RUN_FILES; i++) {
        snprintf(p, sizeof p, "%s/%s", t->run_dir, k_run_files[i]);
        if (lstat(p, &st) == 0 && k + strlen(k_run_files[i]) + 8 < sizeof found)
            k += (size_t)snprintf(found + k, sizeof found - k, "%s%s", k ? ", " : "", k_run_files[i]);
    }
    for (size_t i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s", t->run_dir, k_run_dirs[i]);
        if (dir_has_entries(p) && k + strlen(k_run_dirs[i]) + 8 < sizeof found)
            k += (size_t)snprintf(found + k, sizeof found - k, "%s%s/", k ? ", " : "", k_run_dirs[i]);
    }
    if (!k) return 0;
    if (!t->cfg->overwrite) {
        snprintf(msg, n,
                 "run.dir '%s' already holds a run (%s): continue it with 'gridtrain train --resume %s', replace it "
                 "with run.overwrite=true (its checkpoints and results are deleted), or choose another run.dir",
                 t->run_dir, found, t->run_dir);
        return GT_EXIT_USAGE;
    }
    t->overwrite_pending = 1; /* deleted by gt_train_clear_previous_run once setup passed */
    return 0;
}

/* Rank 0: deletes the previous run's files; 0, or an exit code with msg filled. */
static int remove_previous_run(trainer *t, char *msg, size_t n) {
    char p[PATH_MAX + 64];
    for (size_t i = 0; i < N_RUN_FILES; i++) {
        snprintf(p, sizeof p, "%s/%s", t->run_dir, k_run_files[i]);
        if (unlink(p) != 0 && errno != ENOENT) {
            snprintf(msg, n, "run.overwrite: cannot remove %s: %s", p, strerror(errno));
            return GT_EXIT_RESOURCE;
        }
    }
    for (size_t i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s", t->run_dir, k_run_dirs[i]);
        if (empty_dir(p) != 0) {
            snprintf(msg, n, "run.overwrite: cannot empty %s: %s", p, strerror(errno));
            return GT_EXIT_RESOURCE;
        }
    }
    GT_INFO("run.overwrite: removed the previous run in %s", t->run_dir);
    return 0;
}

void gt_train_clear_previous_run(trainer *t) {
    if (!t->overwrite_pending) return;
    char msg[2 * PATH_MAX + 256] = "";
    int code = t->rank == 0 ? remove_previous_run(t, msg, sizeof msg) : 0;
    gt_dist_bcast_bytes(&code, sizeof code, t->comm);
    if (code) gt_io_fail(t->comm, code, msg);
    t->overwrite_pending = 0;
    gt_train_open_log(t); /* deferred: the previous run's log stayed whole while setup could still fail */
}

/* Rank 0: run_dir and its checkpoints/ and plots/ are not symbolic links
 * (outputs would land where they point; run.overwrite would empty the
 * directory a link names); 0, or an exit code with msg filled. A file where
 * a directory goes fails where that directory is created. */
static int check_run_links(const trainer *t, char *msg, size_t n) {
    char p[PATH_MAX + 64];
    for (int i = -1; i < 2; i++) {
        if (i < 0) snprintf(p, sizeof p, "%s", t->run_dir);
        else snprintf(p, sizeof p, "%s/%s", t->run_dir, k_run_dirs[i]);
        if (gt_out_dir_check(p) != 0 && errno == ELOOP) {
            snprintf(msg, n, "run.dir '%s': cannot write into '%s': %s", t->run_dir, p, gt_out_strerror(errno));
            return GT_EXIT_RESOURCE;
        }
    }
    return 0;
}

void gt_train_claim_run_dir(trainer *t) {
    char msg[3 * PATH_MAX + 2048] = "";
    int code = 0;
    t->lock_fd = -1;
    if (t->rank == 0) {
        code = check_run_links(t, msg, sizeof msg);
        if (!code) code = lock_run_dir(t, msg, sizeof msg);
        if (!code && !t->cfg->resume) code = check_previous_run(t, msg, sizeof msg);
    }
    gt_dist_bcast_bytes(&code, sizeof code, t->comm);
    if (code) gt_io_fail(t->comm, code, msg); /* rank 0 prints, every rank ends */
    gt_dist_bcast_bytes(&t->overwrite_pending, sizeof t->overwrite_pending, t->comm);
}

void gt_train_unlock_run_dir(trainer *t) {
    if (t->lock_fd >= 0) close(t->lock_fd); /* releases the flock; the file stays (no unlink race) */
    t->lock_fd = -1;
}

void gt_train_open_log(const trainer *t) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/run.log", t->run_dir);
    /* a fresh run starts the log anew (a failed attempt's lines would mislead
     * doctor; the log alone does not make the directory another run's); a
     * resume appends */
    if (t->rank == 0 && !t->cfg->resume) {
        FILE *f = gt_fopen_replace(path); /* a link there is removed, never followed */
        if (f) fclose(f);
    }
    gt_dist_barrier(t->comm);
    if (gt_log_set_file(path)) {
        GT_CHECK(errno != ELOOP, GT_EXIT_RESOURCE, "cannot open '%s': %s", path, gt_out_strerror(errno));
        GT_WARN("train: cannot open %s: %s (no run log)", path, strerror(errno));
    }
    if (t->rank == 0)
        GT_INFO("train: %s %s on %d rank%s (run log: %s)", t->cfg->resume ? "resuming" : "starting", t->run_dir,
                t->size, t->size == 1 ? "" : "s", path);
}

FILE *gt_train_open_in_run(const trainer *t, const char *name, const char *mode) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", t->run_dir, name);
    FILE *f = mode[0] == 'a' ? gt_fopen_append(path) : mode[0] == 's' ? gt_fopen_replace(path) : gt_fopen_atomic(path, 0);
    GT_CHECK(f, GT_EXIT_RESOURCE, "cannot open '%s': %s", path, gt_out_strerror(errno));
    return f;
}

void gt_train_write_json_line(FILE *f, void *cjson) {
    cJSON *o = cjson;
    char *s = cJSON_PrintUnformatted(o);
    gt_fputs_utf8(f, s); /* names and log text from data: valid UTF-8 */
    fputc('\n', f);
    fflush(f);
    cJSON_free(s);
    cJSON_Delete(o);
}

/* timing.json: printed, made valid UTF-8, written atomically. */
static void write_json_utf8(const char *path, const cJSON *o) {
    char *txt = cJSON_Print(o);
    char *u = gt_utf8_dup(txt, NULL);
    if (gt_write_file_atomic(path, u)) GT_WARN("train: cannot write %s: %s", path, strerror(errno));
    free(u);
    cJSON_free(txt);
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

static void add_gpu_stats(cJSON *j, const gt_gpu_stats *g);

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
    /* the model's columns by name and the sampling period: eval and predict
     * refuse a file whose columns differ (they are matched by position) */
    cJSON *cols = cJSON_AddArrayToObject(d, "columns");
    for (int i = 0, n = gt_dataset_n_targets(t->ds); i < n; i++)
        cJSON_AddItemToArray(cols, cJSON_CreateString(gt_dataset_target_name(t->ds, i)));
    if (isfinite(t->period_s)) cJSON_AddNumberToObject(d, "period_s", t->period_s);
    cJSON_AddStringToObject(o, "task", t->task->name);
    cJSON_AddNumberToObject(o, "ranks", t->size);
    const char *ob = getenv("OPENBLAS_NUM_THREADS");
    cJSON_AddStringToObject(o, "openblas_threads", ob ? ob : "unset (OpenBLAS default: all cores)");
    char host[256] = "unknown";
    gethostname(host, sizeof host - 1);
    cJSON_AddStringToObject(o, "host", host);
    cJSON_AddNumberToObject(o, "nodes", t->n_nodes);
    cJSON *pl = cJSON_AddArrayToObject(o, "placement"); /* rank r is entry r */
    for (int r = 0; r < t->size; r++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "host", t->place[r].host);
        cJSON_AddNumberToObject(e, "node", t->place[r].node);
        cJSON_AddNumberToObject(e, "local_rank", t->place[r].local_rank);
        cJSON_AddNumberToObject(e, "local_size", t->place[r].local_size);
        cJSON_AddNumberToObject(e, "gpu", t->place[r].gpu);
        cJSON_AddItemToArray(pl, e);
    }
    char cpu[256];
    cpu_model(cpu, sizeof cpu);
    cJSON_AddStringToObject(o, "cpu_model", cpu);
    cJSON_AddStringToObject(o, "engine", gt_engine_kind_name(gt_engine_kind_of(t->e)));
    add_device(o, t);
    cJSON_AddStringToObject(o, "model_kind", gt_model_kind_name(c->model.kind));
    cJSON_AddNumberToObject(o, "n_params", (double)gt_engine_n_params(t->e));
    if (t->precision == GT_PRECISION_FP32) {
        cJSON_AddStringToObject(o, "precision", t->amp.enabled ? "fp32 compute, dynamic loss scaling" : "fp32");
    } else {
        char pr[64];
        snprintf(pr, sizeof pr, "%s products%s", gt_precision_name(t->precision),
                 t->amp.enabled ? ", dynamic loss scaling" : "");
        cJSON_AddStringToObject(o, "precision", pr);
    }
    if (gt_engine_kind_of(t->e) == GT_ENGINE_HOST) { /* what ran the CPU engine's products, per op family (nn/ops/cpu/gemm.h) */
        cJSON *cp = cJSON_AddObjectToObject(o, "cpu_products");
        cJSON_AddStringToObject(cp, "onednn_isa", gt_cpu_isa_name());
        cJSON_AddStringToObject(cp, "cpu_flags", gt_cpu_flags());
        for (int f = 0; f < GT_GEMM_N_FAMILIES; f++)
            if (*gt_gemm_impl((gt_gemm_family)f))
                cJSON_AddStringToObject(cp, gt_gemm_family_name((gt_gemm_family)f), gt_gemm_impl((gt_gemm_family)f));
    }
    if (t->resumed_from >= 0) cJSON_AddNumberToObject(o, "resumed_from_step", (double)t->resumed_from);
    /* the same work on the same machines: what a throughput comparison needs (train/regress.h) */
    char h[17];
    gt_regress_config_hash(c->config_text, hex, h);
    cJSON_AddStringToObject(o, "config_hash", h);
    gt_regress_hardware_hash(cpu, t->size, t->n_nodes, ob ? ob : "", gt_engine_kind_name(gt_engine_kind_of(t->e)),
                             t->dev.engine == GT_ENGINE_HOST ? "" : t->dev.info.name,
                             t->dev.engine == GT_ENGINE_HOST ? 0 : t->size, h);
    cJSON_AddStringToObject(o, "hardware_hash", h);
    if (t->gpu_run) { /* every rank's GPU over the run (nn/telemetry.h) */
        cJSON *g = cJSON_AddArrayToObject(o, "gpu_telemetry");
        for (int r = 0; r < t->size; r++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "rank", r);
            add_gpu_stats(e, &t->gpu_run[r]);
            cJSON_AddItemToArray(g, e);
        }
    }
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
    char *withnl = gt_utf8_dup(s, "\n"); /* a Latin-1 name or path: valid UTF-8 JSON */
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
        t->metrics = gt_train_open_in_run(t, "metrics.jsonl", cfg->resume ? "a" : "s");
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
/* The fields of GPU telemetry (a "gpu" row of metrics.jsonl, the manifest's summary). */
static void add_gpu_stats(cJSON *j, const gt_gpu_stats *g) {
    cJSON_AddNumberToObject(j, "samples", g->n);
    json_num(j, "util_pct", g->util_mean);
    json_num(j, "util_min_pct", g->util_min);
    json_num(j, "mem_used_bytes", g->mem_used_max_bytes);
    json_num(j, "mem_total_bytes", g->mem_total_bytes);
    json_num(j, "temp_max_c", g->temp_max_c);
    json_num(j, "power_w", g->power_mean_w);
    json_num(j, "power_max_w", g->power_max_w);
    json_num(j, "sm_clock_mhz", g->sm_clock_mean_mhz);
    json_num(j, "sm_clock_min_mhz", g->sm_clock_min_mhz);
    json_num(j, "mem_clock_mhz", g->mem_clock_mean_mhz);
    json_num(j, "throttled_frac", g->throttled_frac);
    char names[200];
    gt_gpu_throttle_names(g->throttle_seen, names, sizeof names);
    cJSON_AddStringToObject(j, "throttle_reasons", names);
    cJSON_AddNumberToObject(j, "ecc_corrected", (double)g->ecc_corrected);
    cJSON_AddNumberToObject(j, "ecc_uncorrected", (double)g->ecc_uncorrected);
    cJSON_AddNumberToObject(j, "ecc_uncorrected_new", (double)g->ecc_uncorrected_new);
    cJSON_AddNumberToObject(j, "xid_events", (double)g->xid_events);
    if (g->last_xid) cJSON_AddNumberToObject(j, "last_xid", g->last_xid);
}

void gt_train_metrics_row(const trainer *t, const train_metrics_row *r) {
    if (!t->metrics) return;
    const int train = !strcmp(r->type, "train");
    cJSON *j = cJSON_CreateObject();
    if (r->gpu) { /* one rank's GPU over the last log interval */
        cJSON_AddStringToObject(j, "type", r->type);
        cJSON_AddNumberToObject(j, "step", (double)r->step);
        cJSON_AddNumberToObject(j, "rank", r->rank);
        add_gpu_stats(j, r->gpu);
        cJSON_AddNumberToObject(j, "time_s", r->time_s);
        gt_train_write_json_line(t->metrics, j);
        return;
    }
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

/* ---- GPU telemetry (nn/telemetry.h) ---- */

void gt_train_gpu_start(trainer *t) {
    const gt_train_config *c = t->cfg;
    t->gpu_on = c->write_outputs && c->gpu_telemetry_s > 0 && t->dev.engine != GT_ENGINE_HOST;
    if (!t->gpu_on) return;
    char why[256] = "";
    t->gpu = gt_gpu_telemetry_start(t->dev.info.pci_bus_id, t->dev.info.uuid, c->gpu_telemetry_s, why, sizeof why);
    int have = gt_dist_min_int(t->gpu != NULL, t->comm);
    if (t->rank == 0 && !c->quiet) {
        if (have)
            GT_INFO("gpu telemetry: NVML (driver %s), every %g s into metrics.jsonl (\"type\":\"gpu\")",
                    gt_gpu_telemetry_driver(t->gpu), c->gpu_telemetry_s);
        else
            GT_INFO("gpu telemetry: off on %s (%s)", t->gpu ? "some ranks" : "this node", t->gpu ? "see their lines" : why);
    }
    if (!t->gpu && why[0] && t->rank != 0) GT_DEBUG("gpu telemetry: off on rank %d: %s", t->rank, why);
}

/* Every rank's stats at rank 0 ([size]; NULL elsewhere). */
static gt_gpu_stats *gather_gpu(trainer *t, const gt_gpu_stats *mine) {
    int64_t n = 0;
    gt_gpu_stats *all = gt_dist_gatherv(mine, (int)sizeof *mine, MPI_BYTE, &n, "gpu telemetry: too large", t->comm);
    if (t->rank == 0 && n != (int64_t)sizeof *mine * t->size) {
        free(all);
        return NULL;
    }
    return all;
}

void gt_train_gpu_interval(trainer *t, double time_s) {
    gt_gpu_stats mine;
    gt_gpu_stats_reset(&mine);
    if (t->gpu) gt_gpu_telemetry_take(t->gpu, &mine);
    gt_gpu_stats *all = gather_gpu(t, &mine);
    if (!all) return;
    for (int r = 0; r < t->size; r++)
        if (all[r].n > 0)
            gt_train_metrics_row(t, &(train_metrics_row){.type = "gpu", .step = t->ts.step, .rank = r, .gpu = &all[r],
                                                         .time_s = time_s});
    char lines[1024];
    if (gt_gpu_warnings(all, t->size, lines, sizeof lines) > 0 && strcmp(lines, t->gpu_warned)) {
        for (char *p = lines, *e; *p; p = e + 1) { /* one warning per line */
            e = strchr(p, '\n');
            if (!e) break;
            *e = 0;
            GT_WARN("%s", p);
        }
        gt_gpu_warnings(all, t->size, t->gpu_warned, sizeof t->gpu_warned); /* not repeated while it holds */
    }
    free(all);
}

void gt_train_gpu_finish(trainer *t) {
    gt_gpu_stats mine;
    gt_gpu_stats_reset(&mine);
    if (t->gpu) gt_gpu_telemetry_run_stats(t->gpu, &mine);
    free(t->gpu_run);
    t->gpu_run = gather_gpu(t, &mine);
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
    json_num(o, "device_input_stall", t->device_stall >= 0 ? t->device_stall : NAN); /* null on the CPU */
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
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/timing.json", t->run_dir);
    write_json_utf8(path, o);
    /* against the earlier runs of the same configuration and hardware beside this one */
    gt_regress_result rg;
    if (t->cfg->regression_warn > 0 && gt_regress_compare(t->run_dir, t->cfg->regression_warn, t->cfg->regression_min_s, &rg) == 0 &&
        rg.n_base > 0) {
        char line[1024];
        gt_regress_describe(&rg, line, sizeof line);
        if (rg.slower) GT_WARN("%s", line);
        else if (!t->cfg->quiet) GT_INFO("%s", line);
        cJSON *g = cJSON_AddObjectToObject(o, "regression");
        cJSON_AddBoolToObject(g, "slower", rg.slower);
        cJSON_AddNumberToObject(g, "threshold", t->cfg->regression_warn);
        cJSON_AddNumberToObject(g, "earlier_runs", rg.n_base);
        cJSON_AddStringToObject(g, "newest_earlier_run", rg.newest_base);
        json_num(g, "median_samples_per_s", rg.base_samples_per_s);
        json_num(g, "ratio", rg.ratio);
        if (rg.phase[0]) {
            cJSON_AddStringToObject(g, "slowed_phase", rg.phase);
            json_num(g, "phase_s_per_step", rg.phase_s);
            json_num(g, "median_phase_s_per_step", rg.base_phase_s);
        }
        write_json_utf8(path, o);
    }
    cJSON_Delete(o);
}
