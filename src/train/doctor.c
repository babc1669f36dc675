/* train/doctor.c: `gridtrain doctor RUN_DIR` (train/doctor.h).
 *
 * Two kinds of evidence:
 *   - lines of the logs, matched against k_signs: gridtrain's own error and
 *     warning lines (taken from the code that prints them), and what Open MPI,
 *     Slurm and the NVIDIA driver print when they end a job;
 *   - the run's files: the manifest's exit code and end time, forensics.jsonl
 *     (the household of a NaN), timing.json and metrics.jsonl (data stall,
 *     imbalance between ranks).
 * Each cause found becomes a finding with its fix (docs/troubleshooting.md
 * says the same); the most specific failure comes first. */
#define _GNU_SOURCE
#include "train/doctor.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/check.h"
#include "core/escape.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "train/run_json_impl.h"

/* The most doctor reads of one file (the end of a larger one) and of one line. */
#define GT_DOCTOR_READ_MAX (64 << 20)
#define GT_DOCTOR_LINE_MAX 65536

/* One sign of a cause in a log line. */
typedef struct sign {
    const char *cause;
    const char *needle; /* a substring of the line */
    int error_only;     /* 1: only on a gridtrain error line (the same words appear in info lines) */
} sign;

/* The causes: a title, the fix, and a priority (higher: named first when
 * several are found; a root cause outranks its consequences: an Xid makes
 * NCCL and CUDA calls fail and ranks die). */
typedef struct cause_info {
    const char *cause, *title, *fix;
    int priority;
} cause_info;

static const cause_info k_causes[] = {
    {"xid", "GPU hardware or driver fault (Xid / ECC)",
     "Xid 48, 63, 64, 74, 79, 92, 94, 95 (ECC, a GPU fallen off the bus, NVLink) are hardware or driver events: drain "
     "the node, tell its administrators (nvidia-smi -q, dmesg), rerun elsewhere with 'gridtrain train --resume RUN_DIR'. "
     "Xid 13, 31, 43 are faults of a program: report them with the command line",
     100},
    {"oom", "out of memory",
     "lower train.micro_batch (gradients accumulate: train.batch and the result stay the same) or use more ranks; "
     "'gridtrain plan CONFIG' (add --gpu-mem SIZE for a GPU) prints what fits. Killed by the kernel or Slurm: ask for "
     "more memory (--mem) or leave train.mem_limit=auto so the trainer stops with advice before allocating",
     90},
    {"disk_full", "disk full (no space, quota or file size limit)",
     "free space on the run directory's file system (or raise the quota / 'ulimit -f'), then continue from the last "
     "committed checkpoint: 'gridtrain train --resume RUN_DIR'; lower run.keep to keep fewer checkpoints",
     85},
    {"nccl", "NCCL error in the gradient all-reduce",
     "rerun with NCCL_DEBUG=INFO; hosts without InfiniBand: NCCL_IB_DISABLE=1; several network interfaces: "
     "NCCL_SOCKET_IFNAME=eth0; containers with a small /dev/shm: NCCL_SHM_DISABLE=1 or a larger --shm-size; a hang "
     "or error right after another rank died is a consequence of that rank (see the other findings)",
     80},
    {"nan", "non-finite loss or gradients (NaN guard)",
     "screen the data (data.screen=drop or repair, data.spike_k) or fix the household named in forensics.jsonl "
     "('gridtrain inspect FILE' lists its spikes), lower optim.lr, set optim.clip; then train again (a NaN is not "
     "resumed away)",
     75},
    {"device", "the requested GPU is not usable",
     "see docs/troubleshooting.md, GPUs: check nvidia-smi and CUDA_VISIBLE_DEVICES, one rank per GPU, a driver for "
     "this binary's CUDA version; train.device=cpu always runs",
     70},
    {"watchdog", "no progress: the watchdog ended the job",
     "a rank stopped or died while the others waited in a collective, or a file system stopped answering: look for "
     "the rank that failed first (the other findings, dmesg, the Slurm output) or the hung mount; raise "
     "run.watchdog_s for a phase that legitimately takes longer",
     65},
    {"preempted", "preempted: checkpointed on a signal (exit 75)",
     "nothing is lost: requeue the job, or continue with 'gridtrain train --resume RUN_DIR' (jobs/nilm_full.sh "
     "requeues itself)",
     60},
    {"time_limit", "the Slurm time limit ended the job",
     "ask for more time (--time), set train.time_budget below the limit so the run checkpoints and stops cleanly, "
     "and a --signal=USR1@120 warning (jobs/nilm_full.sh does both); continue with --resume",
     55},
    {"crashed_rank", "a rank died without an error message from gridtrain",
     "signal 9 (Killed) with no message is usually the kernel's or Slurm's out-of-memory killer: check "
     "'dmesg | grep -i oom', 'sacct -j JOB -o MaxRSS,State' and run 'gridtrain plan CONFIG'; signal 11 or 7 "
     "(segmentation fault, bus error) is a crash: report it with the command line and the log; a node failure: "
     "rerun with --resume",
     50},
    {"usage", "configuration or command-line error (exit 2)",
     "the message names the key and where it came from; 'gridtrain train --help' lists every key", 40},
    {"data", "bad input data (exit 3)", "'gridtrain inspect FILE' reports every problem of the file", 40},
    {"resource", "a resource ran out or an output could not be created (exit 4)",
     "the message names the size, file or holder that failed", 40},
    {"library", "an MPI, HDF5 or CUDA call failed (exit 6)", "the message names the call and a hint", 40},
    {"internal", "internal error (exit 1)", "a bug: report it with the command line and run.log", 40},
    {"data_stall", "the ranks wait for data (data stall)",
     "the batches are filled slower than the model trains: give each rank a spare core for the prefetch thread "
     "(train.prefetch=on; fewer ranks per node or --cpus-per-task=2 with OPENBLAS_NUM_THREADS=1), put the data file "
     "on local or faster storage, or raise data.stride (fewer, less overlapping windows)",
     20},
    {"imbalance", "the ranks are unbalanced",
     "one rank works longer than the others and they wait for it in the all-reduce: 'gridtrain inspect FILE' prints "
     "each rank's share and the imbalance; choose a rank count that divides the households/turbines evenly, or "
     "more, smaller items per rank; a slow node or GPU (thermal throttling, another job) shows as the same rank in "
     "every run",
     15},
    {"gpu", "a GPU throttled or sat idle while the others worked",
     "throttling (thermal, power cap, HW slowdown): check the node's cooling and power limits (nvidia-smi -q -d "
     "PERFORMANCE,TEMPERATURE,POWER), move the job off that node; an idle GPU beside busy ones: its rank waits for "
     "data or has a smaller share (see data_stall and imbalance)",
     25},
    {"regression", "slower than the earlier runs of this configuration on this hardware",
     "look at the phase named: data_wait -> the storage or the loader (another job reading the same disk), forward "
     "or backward -> the node (another job on its cores or GPU, thermal throttling, a lower clock), allreduce -> the "
     "network or one slow rank; a run with train.trace=true shows where each rank spends its steps",
     10},
    {"unknown", "the run failed, and no known cause was found",
     "read the last lines of run.log and of the job's output; 'gridtrain doctor RUN_DIR --log FILE' adds a log "
     "kept elsewhere (the Slurm output)",
     1},
    {"ok", "the run finished normally; nothing to report", "nothing to fix; report.md and eval.json hold the model's quality", 0},
};

static const sign k_signs[] = {
    /* gridtrain (src/): the plan check, CUDA allocations, the host allocator */
    {"oom", "error: memory: rank", 0},
    {"oom", "error: device memory: rank", 0},
    {"oom", "device out of memory allocating", 0},
    {"oom", "out of host memory allocating", 0},
    {"oom", "out of device memory", 1},
    /* the kernel and Slurm */
    {"oom", "oom-kill", 0},
    {"oom", "oom_kill", 0},
    {"oom", "Out of memory: Killed process", 0},
    {"oom", "Exceeded job memory limit", 0},
    {"oom", "OUT_OF_MEMORY", 0},
    /* train/trainer.c, train/forensics.c */
    {"nan", "consecutive steps with a non-finite loss or gradient", 1},
    /* core/check.c (gt_fatal_lib_code), train/trainer.c (finish), checkpoints */
    {"disk_full", "disk full", 0},
    {"disk_full", "No space left on device", 0},
    {"disk_full", "Disk quota exceeded", 0},
    {"disk_full", "could not be committed", 0},
    /* core/check_nccl.h; NCCL's own log */
    {"nccl", "NCCL call failed", 1},
    {"nccl", "NCCL WARN", 0},
    {"nccl", "NCCL error", 0},
    /* the NVIDIA driver (dmesg, copied into Slurm outputs by prolog/epilog scripts) and CUDA */
    {"xid", "NVRM: Xid", 0},
    {"xid", "fallen off the bus", 0},
    {"xid", "uncorrectable ECC", 0},
    {"xid", "unspecified launch failure", 0},
    {"xid", "an illegal memory access", 0},
    /* train/device.c */
    {"device", "=cuda but no usable GPU", 1},
    {"device", "older than this binary's CUDA runtime", 1},
    {"device", "GPUs for them", 1},
    {"device", "older than the oldest architecture", 1},
    {"device", "the CUDA runtime fails", 1},
    {"device", "this gridtrain was built without", 1},
    /* core/watchdog.c */
    {"watchdog", "watchdog: no progress for", 1},
    /* train/trainer.c (stop_reason), jobs/nilm_full.sh, Slurm */
    {"preempted", "checkpoint written; continue with 'gridtrain train --resume", 0},
    {"preempted", "preempted: checkpoint written", 0},
    {"preempted", "DUE TO PREEMPTION", 0},
    {"time_limit", "DUE TO TIME LIMIT", 0},
    /* train/outputs.c (GPU telemetry warnings) */
    {"gpu", "GPU is throttling (", 0},
    {"gpu", "GPU is idle (", 0},
    /* Open MPI, srun, the shell */
    {"crashed_rank", "exited on signal", 0},
    {"crashed_rank", "Segmentation fault", 0},
    {"crashed_rank", "Bus error", 0},
    {"crashed_rank", "terminated with signal", 0},
    {"crashed_rank", "): Killed", 0},
    {"crashed_rank", "task exited abnormally", 0},
};
#define N_SIGNS (sizeof k_signs / sizeof k_signs[0])

static const cause_info *cause_of(const char *cause) {
    for (size_t i = 0; i < sizeof k_causes / sizeof k_causes[0]; i++)
        if (!strcmp(k_causes[i].cause, cause)) return &k_causes[i];
    return &k_causes[sizeof k_causes / sizeof k_causes[0] - 2]; /* unknown */
}

static gt_doctor_finding *finding(gt_doctor_report *r, const char *cause, int failure) {
    const cause_info *ci = cause_of(cause);
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->f[i].cause, ci->cause)) return &r->f[i];
    if (r->n == GT_DOCTOR_MAX_FINDINGS) return NULL;
    gt_doctor_finding *f = &r->f[r->n++];
    memset(f, 0, sizeof *f);
    f->cause = ci->cause;
    f->title = ci->title;
    f->failure = failure;
    f->priority = ci->priority;
    snprintf(f->fix, sizeof f->fix, "%s", ci->fix);
    return f;
}

static void evidence(gt_doctor_finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void evidence(gt_doctor_finding *f, const char *fmt, ...) {
    if (!f || f->n_evidence == GT_DOCTOR_MAX_EVIDENCE) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->evidence[f->n_evidence], sizeof f->evidence[0], fmt, ap);
    va_end(ap);
    f->n_evidence++;
}

static const char *base(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The "(exit N)" the run log adds to a fatal line (core/check.c), or -1. */
static int exit_of_line(const char *line) {
    const char *p = strstr(line, " (exit ");
    return p ? atoi(p + 7) : -1;
}

static const char *cause_of_exit(int code) {
    switch (code) {
    case 1: return "internal";
    case 2: return "usage";
    case 3: return "data";
    case 4: return "resource";
    case 5: return "nan";
    case 6: return "library";
    case 7: return "device";
    case 75: return "preempted";
    default: return NULL;
    }
}

/* f->fix := pre + f->fix (cut to the buffer). */
static void prepend_fix(gt_doctor_finding *f, const char *pre) {
    const size_t n = sizeof f->fix;
    size_t a = strlen(pre), b = strlen(f->fix);
    if (a > n - 1) a = n - 1;
    if (a + b > n - 1) b = n - 1 - a;
    memmove(f->fix + a, f->fix, b);
    memcpy(f->fix, pre, a);
    f->fix[a + b] = 0;
}

/* The advice the plan check puts in its message ("set train.micro_batch=8 ..."). */
static void plan_advice(gt_doctor_finding *f, const char *line) {
    /* "... but has X MiB (where): ADVICE; see 'gridtrain plan'" (train/trainer.c, check_memory) */
    const char *h = strstr(line, " but has ");
    const char *a = h ? strstr(h, "): ") : NULL;
    if (a) a += 3;
    else a = strstr(line, "lower train.micro_batch"); /* a CUDA allocation (nn/ops/cuda/context.cu) */
    if (!a || !f) return;
    char adv[600];
    snprintf(adv, sizeof adv, "%s", a);
    adv[strcspn(adv, "\n")] = 0;
    char *see = strstr(adv, " (exit ");
    if (see) *see = 0;
    if ((see = strstr(adv, "; see 'gridtrain plan"))) *see = 0;
    char pre[700];
    snprintf(pre, sizeof pre, "the plan's advice for this run: %s. ", adv);
    prepend_fix(f, pre);
}

/* Xid NN: the number after "Xid (PCI:...): ". */
static void xid_number(gt_doctor_finding *f, const char *line) {
    const char *x = strstr(line, "Xid");
    const char *c = x ? strstr(x, "): ") : NULL;
    if (!c || !f) return;
    int n = atoi(c + 3);
    const int hw[] = {48, 63, 64, 74, 79, 92, 94, 95};
    int is_hw = 0;
    for (size_t i = 0; i < sizeof hw / sizeof hw[0]; i++) is_hw |= n == hw[i];
    char pre[128];
    snprintf(pre, sizeof pre, "Xid %d is %s. ", n,
             is_hw ? "a hardware or driver event (drain the node)"
             : (n == 13 || n == 31 || n == 43) ? "a fault of the program (report it)"
                                               : "a driver event (see NVIDIA's Xid table)");
    prepend_fix(f, pre);
}

/* Opens a file doctor reads (a log, metrics.jsonl, forensics.jsonl) only if
 * it is a regular file (a FIFO, a device such as /dev/zero or a directory is
 * refused, never blocks); one larger than GT_DOCTOR_READ_MAX is read from its
 * last GT_DOCTOR_READ_MAX bytes on (the end of a log holds the failure), from
 * the first whole line there, with a note. NULL with why[] filled. */
static FILE *open_bounded(const char *path, char *why, size_t why_bytes) {
    FILE *fp = gt_fopen_regular(path, why, why_bytes);
    if (!fp) return NULL;
    struct stat st;
    if (fstat(fileno(fp), &st) == 0 && st.st_size > GT_DOCTOR_READ_MAX) {
        if (fseeko(fp, st.st_size - GT_DOCTOR_READ_MAX, SEEK_SET) == 0) {
            int c;
            while ((c = getc(fp)) != EOF && c != '\n') {} /* the first whole line */
        }
        GT_WARN("doctor: %s is %.0f MiB: only its last %d MiB read", path, (double)st.st_size / (1 << 20),
                GT_DOCTOR_READ_MAX >> 20);
    }
    return fp;
}

/* One line of at most GT_DOCTOR_LINE_MAX bytes (the rest of a longer line is
 * skipped), NUL bytes included as read; *budget bytes left to read in all.
 * The length, or -1 at the end (or when the budget is spent). */
static ssize_t read_line_bounded(FILE *fp, char *line, size_t cap, long long *budget) {
    size_t n = 0;
    int c, any = 0;
    while (*budget > 0 && (c = getc(fp)) != EOF) {
        (*budget)--;
        any = 1;
        if (c == '\n') break;
        if (n + 1 < cap) line[n++] = c ? (char)c : ' ';
    }
    line[n] = 0;
    return any ? (ssize_t)n : -1;
}

/* Scans one log; returns 1 if it could be read (else why[] says why). */
static int scan_log(gt_doctor_report *r, const char *path, int *log_exit, char *why, size_t why_bytes) {
    FILE *fp = open_bounded(path, why, why_bytes);
    if (!fp) return 0;
    char *line = GT_MALLOC(GT_DOCTOR_LINE_MAX);
    long long budget = GT_DOCTOR_READ_MAX + (long long)GT_DOCTOR_LINE_MAX; /* a file that grows meanwhile */
    int ln = 0;
    while (read_line_bounded(fp, line, GT_DOCTOR_LINE_MAX, &budget) >= 0) {
        ln++;
        line[strcspn(line, "\n")] = 0;
        int is_error = strstr(line, "gridtrain: error: ") || (strstr(line, "gridtrain[rank ") && strstr(line, "]: error: "));
        int code = exit_of_line(line);
        if (is_error && code >= 0 && *log_exit < 0) *log_exit = code;
        int matched = 0;
        for (size_t i = 0; i < N_SIGNS; i++) {
            if ((k_signs[i].error_only && !is_error) || !strstr(line, k_signs[i].needle)) continue;
            const char *c = k_signs[i].cause;
            gt_doctor_finding *f = finding(r, c, strcmp(c, "gpu") != 0); /* the telemetry's lines are warnings */
            if (f && f->n_evidence == 0) {
                if (!strcmp(c, "oom")) plan_advice(f, line);
                if (!strcmp(c, "xid")) xid_number(f, line);
            }
            evidence(f, "%s:%d: %.360s", base(path), ln, line);
            matched = 1;
            break;
        }
        /* any other gridtrain error: the class of its exit code */
        if (!matched && is_error) {
            const char *c = cause_of_exit(code);
            gt_doctor_finding *f = finding(r, c ? c : "unknown", 1);
            evidence(f, "%s:%d: %.360s", base(path), ln, line);
        }
    }
    free(line);
    fclose(fp);
    r->n_logs++;
    return 1;
}

/* forensics.jsonl: which household/turbine, when, why. */
static void read_forensics(gt_doctor_report *r, const char *dir) {
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/forensics.jsonl", dir);
    char why[256];
    FILE *fp = open_bounded(p, why, sizeof why);
    if (!fp) return;
    gt_doctor_finding *f = finding(r, "nan", 1);
    char *line = GT_MALLOC(GT_DOCTOR_LINE_MAX);
    long long budget = GT_DOCTOR_READ_MAX + (long long)GT_DOCTOR_LINE_MAX;
    int ln = 0, shown = 0;
    while (read_line_bounded(fp, line, GT_DOCTOR_LINE_MAX, &budget) >= 0) {
        ln++;
        cJSON *j = cJSON_Parse(line);
        if (!j) continue;
        const cJSON *kind = cJSON_GetObjectItem(j, "kind"), *reason = cJSON_GetObjectItem(j, "reason");
        const cJSON *a = cJSON_GetObjectItem(j, "t_start"), *z = cJSON_GetObjectItem(j, "t_end");
        if (shown < 3 && cJSON_IsString(kind) && cJSON_IsString(a) && cJSON_IsString(z)) {
            evidence(f, "forensics.jsonl:%d: step %.0f: %s %.0f, %s .. %s (%s, rank %.0f)", ln, gt_run_json_num(j, "step"),
                     kind->valuestring, gt_run_json_num(j, "id"), a->valuestring, z->valuestring,
                     cJSON_IsString(reason) ? reason->valuestring : "?", gt_run_json_num(j, "rank"));
            shown++;
        } else if (shown < 3 && cJSON_IsString(reason)) {
            evidence(f, "forensics.jsonl:%d: step %.0f: %s", ln, gt_run_json_num(j, "step"), reason->valuestring);
            shown++;
        }
        cJSON_Delete(j);
    }
    free(line);
    fclose(fp);
}

/* manifest.json gpu_telemetry (nn/telemetry.h): Xid events and new
 * uncorrected ECC errors, throttling, per rank. */
static void read_gpu(gt_doctor_report *r, const cJSON *g) {
    const cJSON *e;
    cJSON_ArrayForEach(e, g) {
        int rank = (int)gt_run_json_num(e, "rank");
        if (gt_run_json_num(e, "xid_events") > 0 || gt_run_json_num(e, "ecc_uncorrected_new") > 0) {
            gt_doctor_finding *f = finding(r, "xid", 1);
            evidence(f, "manifest.json: rank %d's GPU: %.0f Xid event(s) (last Xid %.0f), %.0f new uncorrected ECC "
                        "errors (NVML)", rank, gt_run_json_num(e, "xid_events"), gt_run_json_num(e, "last_xid"), gt_run_json_num(e, "ecc_uncorrected_new"));
        }
        if (gt_run_json_num(e, "throttled_frac") > 0.2) {
            const cJSON *why = cJSON_GetObjectItem(e, "throttle_reasons");
            gt_doctor_finding *f = finding(r, "gpu", 0);
            evidence(f, "manifest.json: rank %d's GPU throttled in %.0f%% of the samples (%s), max %.0f C, SM clock "
                        "%.0f MHz (min %.0f)", rank, 100 * gt_run_json_num(e, "throttled_frac"),
                     cJSON_IsString(why) ? why->valuestring : "?", gt_run_json_num(e, "temp_max_c"), gt_run_json_num(e, "sm_clock_mhz"),
                     gt_run_json_num(e, "sm_clock_min_mhz"));
        }
    }
}

/* timing.json (a finished run) and metrics.jsonl: data stall and imbalance. */
static void read_performance(gt_doctor_report *r, const char *dir) {
    cJSON *t = gt_run_json_load(dir, "timing.json");
    double stall = NAN;
    if (t) {
        stall = gt_run_json_num(t, "data_stall");
        const cJSON *ev = cJSON_GetObjectItem(t, "events");
        int ranks = (int)gt_run_json_num(t, "ranks");
        const cJSON *e;
        cJSON_ArrayForEach(e, ev) {
            const cJSON *nm = cJSON_GetObjectItem(e, "name");
            if (!cJSON_IsString(nm)) continue;
            /* compute phases: the data wait and all-reduce of the fast ranks absorb the slow one's extra time */
            if (strcmp(nm->valuestring, "forward") && strcmp(nm->valuestring, "backward") &&
                strcmp(nm->valuestring, "data_wait"))
                continue;
            double ratio = gt_run_json_num(e, "max_over_mean"), mean = gt_run_json_num(e, "mean_s");
            if (ranks > 1 && ratio > GT_DOCTOR_IMBALANCE_WARN && mean > 0.5) {
                gt_doctor_finding *f = finding(r, "imbalance", 0);
                evidence(f, "timing.json: %s max %.2f s vs mean %.2f s over %d ranks (max/mean %.2f > %.2f)",
                         nm->valuestring, gt_run_json_num(e, "max_s"), mean, ranks, ratio, GT_DOCTOR_IMBALANCE_WARN);
            }
        }
        const cJSON *g = cJSON_GetObjectItem(t, "regression"); /* train/regress.h, written by the run */
        if (cJSON_IsTrue(cJSON_GetObjectItem(g, "slower"))) {
            gt_doctor_finding *f = finding(r, "regression", 0);
            const cJSON *ph = cJSON_GetObjectItem(g, "slowed_phase");
            const cJSON *nb = cJSON_GetObjectItem(g, "newest_earlier_run");
            evidence(f, "timing.json: %.0f samples/s, %.0f%% of the median %.0f of %.0f earlier run(s) (newest: %s)",
                     gt_run_json_num(t, "samples_per_s"), 100 * gt_run_json_num(g, "ratio"), gt_run_json_num(g, "median_samples_per_s"),
                     gt_run_json_num(g, "earlier_runs"), cJSON_IsString(nb) ? nb->valuestring : "?");
            if (cJSON_IsString(ph))
                evidence(f, "timing.json: the phase that slowed most: %s %.3g ms per step (median %.3g ms)",
                         ph->valuestring, 1e3 * gt_run_json_num(g, "phase_s_per_step"), 1e3 * gt_run_json_num(g, "median_phase_s_per_step"));
        }
        cJSON_Delete(t);
    }
    /* metrics.jsonl: the stall of the logging intervals (also for a run that did not finish) */
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    char why[256];
    FILE *fp = open_bounded(p, why, sizeof why);
    int n = 0, high = 0;
    double sum = 0, worst = 0;
    if (fp) {
        char *line = GT_MALLOC(GT_DOCTOR_LINE_MAX);
        long long budget = GT_DOCTOR_READ_MAX + (long long)GT_DOCTOR_LINE_MAX;
        while (read_line_bounded(fp, line, GT_DOCTOR_LINE_MAX, &budget) >= 0) {
            cJSON *j = cJSON_Parse(line);
            const cJSON *ty = j ? cJSON_GetObjectItem(j, "type") : NULL;
            if (cJSON_IsString(ty) && !strcmp(ty->valuestring, "train")) {
                double s = gt_run_json_num(j, "data_stall");
                if (isfinite(s)) {
                    n++;
                    sum += s;
                    high += s > GT_DOCTOR_STALL_WARN;
                    if (s > worst) worst = s;
                }
            }
            cJSON_Delete(j);
        }
        free(line);
        fclose(fp);
    }
    double mean = n ? sum / n : NAN;
    if ((isfinite(stall) && stall > GT_DOCTOR_STALL_WARN) || (!isfinite(stall) && isfinite(mean) && mean > GT_DOCTOR_STALL_WARN)) {
        gt_doctor_finding *f = finding(r, "data_stall", 0);
        if (isfinite(stall))
            evidence(f, "timing.json: data_stall %.1f%% of the steady-state wall time (warning above %.0f%%)",
                     100 * stall, 100 * GT_DOCTOR_STALL_WARN);
        if (n) evidence(f, "metrics.jsonl: data_stall mean %.1f%%, worst %.1f%%, above %.0f%% in %d of %d intervals",
                        100 * mean, 100 * worst, 100 * GT_DOCTOR_STALL_WARN, high, n);
    }
}

/* Logs: run.log, RUN_DIR/ *.log and *.out, a Slurm output for the run's
 * job id (the trailing digits of RUN_DIR's name: runs/<JOBID>,
 * runs/nilm-<JOBID>, an array task's runs/<JOBID>_<TASK>) beside the run or in
 * the current directory, the given ones. */
static int is_log_name(const char *n) {
    size_t l = strlen(n);
    return (l > 4 && (!strcmp(n + l - 4, ".log") || !strcmp(n + l - 4, ".out"))) ;
}

int gt_doctor_job_of_name(const char *s, size_t n, gt_doctor_job *j) {
    memset(j, 0, sizeof *j);
    size_t e = n, b = n;
    while (b > 0 && s[b - 1] >= '0' && s[b - 1] <= '9') b--;
    if (b == e || e - b >= sizeof j->id) return 0;
    if (b > 1 && s[b - 1] == '_' && s[b - 2] >= '0' && s[b - 2] <= '9') { /* <JOBID>_<TASK>: an array task */
        memcpy(j->task, s + b, e - b);
        e = b - 1, b = e;
        while (b > 0 && s[b - 1] >= '0' && s[b - 1] <= '9') b--;
        if (e - b >= sizeof j->id) return 0;
    }
    memcpy(j->id, s + b, e - b);
    return 1;
}

/* A Slurm output of job `job`: slurm[-NAME]-<JOBID>[_<TASK>].out (or .log), the
 * job id the whole trailing number (%j, %A_%a of jobs/), equal to the run's;
 * an array task's too. A substring match made job 123 read slurm-51234.out and
 * blame that job's OOM on this run. */
static int is_job_log(const char *name, const gt_doctor_job *job) {
    size_t l = strlen(name);
    gt_doctor_job g;
    return !strncmp(name, "slurm", 5) && is_log_name(name) && gt_doctor_job_of_name(name, l - 4, &g) &&
           !strcmp(g.id, job->id) && !strcmp(g.task, job->task);
}

static void scan_dir_logs(gt_doctor_report *r, const char *dir, const gt_doctor_job *job, int *log_exit) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    char *names[64];
    int k = 0;
    while ((de = readdir(d)) && k < 64)
        if (de->d_name[0] != '.' && is_log_name(de->d_name) && (!job || is_job_log(de->d_name, job)))
            names[k++] = strdup(de->d_name);
    closedir(d);
    /* sorted: the same report every time */
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *x = names[j];
            names[j] = names[j - 1];
            names[j - 1] = x;
        }
    for (int i = 0; i < k; i++) {
        char p[PATH_MAX + 300];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        char why[256];
        if (!scan_log(r, p, log_exit, why, sizeof why) && errno != ENOENT)
            GT_WARN("doctor: %s not read: %s", p, why);
        free(names[i]);
    }
}

static int by_priority(const void *a, const void *b) {
    const gt_doctor_finding *x = a, *y = b;
    if (x->failure != y->failure) return y->failure - x->failure;
    return y->priority - x->priority;
}

int gt_doctor_run(const char *run_dir, const char *extra_logs, gt_doctor_report *r) {
    memset(r, 0, sizeof *r);
    r->exit_code = -1;
    int log_exit = -1;
    cJSON *m = gt_run_json_load(run_dir, "manifest.json");
    if (m) {
        r->has_manifest = 1;
        const cJSON *end = cJSON_GetObjectItem(m, "end_time");
        r->finished = cJSON_IsString(end);
        if (r->finished) r->exit_code = (int)gt_run_json_num(m, "exit_code");
        read_gpu(r, cJSON_GetObjectItem(m, "gpu_telemetry"));
        cJSON_Delete(m);
    }
    scan_dir_logs(r, run_dir, NULL, &log_exit);
    /* a Slurm output named after the job: beside the run directory or here */
    char rd[PATH_MAX];
    snprintf(rd, sizeof rd, "%s", run_dir);
    for (size_t l = strlen(rd); l > 1 && rd[l - 1] == '/';) rd[--l] = 0; /* runs/4242/ is runs/4242 */
    const char *b = base(rd);
    gt_doctor_job job;
    if (gt_doctor_job_of_name(b, strlen(b), &job)) {
        char parent[PATH_MAX];
        /* by name: RUN_DIR itself may not exist (a job that failed before creating it) */
        snprintf(parent, sizeof parent, "%s", run_dir);
        for (int up = 0; up < 2; up++) {
            size_t pl = strlen(parent);
            while (pl > 1 && parent[pl - 1] == '/') parent[--pl] = 0;
            char *slash = strrchr(parent, '/');
            if (!slash) snprintf(parent, sizeof parent, ".");
            else if (slash == parent) parent[1] = 0;
            else *slash = 0;
            scan_dir_logs(r, parent, &job, &log_exit);
            if (!strcmp(parent, ".") || !strcmp(parent, "/")) break;
        }
    }
    if (extra_logs && *extra_logs) {
        char *copy = strdup(extra_logs), *save = NULL;
        for (char *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
            char why[256];
            if (!scan_log(r, p, &log_exit, why, sizeof why)) {
                gt_doctor_finding *f = finding(r, "unknown", 1);
                evidence(f, "%s: cannot be read: %s", p, why);
            }
        }
        free(copy);
    }
    if (!r->has_manifest && r->n_logs == 0) return -1;
    if (r->exit_code < 0) r->exit_code = log_exit;
    read_forensics(r, run_dir);
    read_performance(r, run_dir);

    /* the exit code the manifest recorded, when no line said more */
    const char *by_code = cause_of_exit(r->exit_code);
    int failed_somehow = 0;
    for (int k = 0; k < r->n; k++) failed_somehow |= r->f[k].failure;
    if (r->exit_code > 0 && by_code && !failed_somehow) {
        gt_doctor_finding *f = finding(r, by_code, 1);
        if (f && f->n_evidence == 0)
            evidence(f, "manifest.json: exit_code %d%s", r->exit_code, r->finished ? "" : " (from the run log)");
        failed_somehow = 1;
    }
    /* the trainer never reached its end and nobody said why: a rank was killed or crashed */
    if (r->has_manifest && !r->finished && !failed_somehow) {
        gt_doctor_finding *f = finding(r, "crashed_rank", 1);
        evidence(f, "manifest.json: no end_time: the run did not reach its end (and no error line was found)");
    }
    if (r->exit_code == 0 && r->finished) /* a finished run: what failed on the way was absorbed (a resume) */
        for (int k = 0; k < r->n; k++) r->f[k].failure = 0;
    if (r->n == 0) finding(r, r->finished && r->exit_code == 0 ? "ok" : "unknown", r->exit_code != 0);
    qsort(r->f, (size_t)r->n, sizeof r->f[0], by_priority);
    return 0;
}

void gt_doctor_print(const gt_doctor_report *r, const char *run_dir, int json, FILE *out) {
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "run_dir", run_dir);
        cJSON_AddBoolToObject(o, "finished", r->finished);
        if (r->exit_code >= 0) cJSON_AddNumberToObject(o, "exit_code", r->exit_code);
        else cJSON_AddNullToObject(o, "exit_code");
        cJSON_AddStringToObject(o, "cause", r->f[0].cause);
        cJSON *fs = cJSON_AddArrayToObject(o, "findings");
        for (int i = 0; i < r->n; i++) {
            const gt_doctor_finding *f = &r->f[i];
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "cause", f->cause);
            cJSON_AddStringToObject(j, "title", f->title);
            cJSON_AddBoolToObject(j, "failure", f->failure);
            cJSON_AddStringToObject(j, "fix", f->fix);
            cJSON *ev = cJSON_AddArrayToObject(j, "evidence");
            for (int k = 0; k < f->n_evidence; k++) cJSON_AddItemToArray(ev, cJSON_CreateString(f->evidence[k]));
            cJSON_AddItemToArray(fs, j);
        }
        char *s = cJSON_Print(o);
        gt_fputs_utf8(out, s); /* log lines in any encoding: valid UTF-8 JSON */
        fputc('\n', out);
        cJSON_free(s);
        cJSON_Delete(o);
        return;
    }
    fprintf(out, "doctor: %s: %s", run_dir,
            r->finished ? "the run reached its end" : r->has_manifest ? "the run did not reach its end" : "no manifest.json");
    if (r->exit_code >= 0) fprintf(out, ", exit code %d", r->exit_code);
    fprintf(out, " (%d log%s read)\n", r->n_logs, r->n_logs == 1 ? "" : "s");
    for (int i = 0; i < r->n; i++) {
        const gt_doctor_finding *f = &r->f[i];
        const char *label = !strcmp(f->cause, "ok") ? "result" : f->failure ? (i == 0 ? "cause" : "also") : "warning";
        fprintf(out, "\n%s: %s: %s\n", label, f->cause, f->title);
        for (int k = 0; k < f->n_evidence; k++) fprintf(out, "  evidence: %s\n", f->evidence[k]);
        if (*f->fix) fprintf(out, "  fix: %s\n", f->fix);
    }
}
