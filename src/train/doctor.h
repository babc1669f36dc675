/* train/doctor.h: why did a run fail, or what slowed it (`gridtrain doctor
 * RUN_DIR`, docs/troubleshooting.md, Diagnosing a run).
 *
 * Reads what a run leaves behind: manifest.json (exit code, end time),
 * run.log (every rank's warnings and errors, rank 0's progress; the CLI
 * writes it), metrics.jsonl, forensics.jsonl, timing.json, data_used.csv, any
 * *.log / *.out in RUN_DIR (jobs/nilm_full.sh's job log), a Slurm output
 * slurm-*<JOBID>*.out beside the run or where it was submitted, and the logs
 * given. Names the likely cause, the fix and the lines that show it. The
 * messages it knows are the ones gridtrain, Open MPI, Slurm and the NVIDIA
 * driver print (the table of causes in doctor.c). Not collective: plain file
 * reads, no MPI. */
#ifndef GT_TRAIN_DOCTOR_H
#define GT_TRAIN_DOCTOR_H

#include <stdio.h>

#define GT_DOCTOR_MAX_FINDINGS 16
#define GT_DOCTOR_MAX_EVIDENCE 6

typedef struct gt_doctor_finding {
    const char *cause;  /* "oom", "nan", "data_stall", "imbalance", "regression", "nccl", "xid", "device", "preempted",
                           "time_limit", "disk_full", "crashed_rank", "watchdog", "usage", "data", "resource", "library",
                           "internal", "unknown" (failed, nothing recognised), "ok" (finished, nothing to report) */
    const char *title;  /* one line: what happened */
    char fix[1024];     /* what to do */
    char evidence[GT_DOCTOR_MAX_EVIDENCE][400]; /* "file:line: text" or "file: value" */
    int n_evidence;
    int failure;        /* 1: a cause of the run's failure; 0: a warning of a run that may have finished */
    int priority;       /* the more specific cause first (Xid before NCCL before a killed rank) */
} gt_doctor_finding;

typedef struct gt_doctor_report {
    int has_manifest;
    int finished;       /* manifest.json has an end time: the trainer reached its end */
    int exit_code;      /* the manifest's, else the run log's "(exit N)", else -1 (unknown) */
    int n_logs;         /* log files read */
    gt_doctor_finding f[GT_DOCTOR_MAX_FINDINGS]; /* f[0] is the likely cause */
    int n;
} gt_doctor_report;

/* Diagnoses run_dir; extra_logs: NULL or a comma-separated list of more log
 * files (a Slurm output elsewhere). Returns 0 with at least one finding, or
 * -1 when run_dir holds no run (no manifest.json and no log: nothing to read). */
int gt_doctor_run(const char *run_dir, const char *extra_logs, gt_doctor_report *rep);
/* The Slurm job of a name's trailing number: "nilm-4242" -> id "4242",
 * "pdm-77_3" and "slurm-pdm-77_3" (an array task, %A_%a) -> id "77", task
 * "3"; task "" when none. Reads s[0, n). Returns 1, or 0 when the name does
 * not end in digits (or in more than 31). A log is the run's when both are
 * equal: the whole number, never a part of it (job 123 is not 1234). */
typedef struct gt_doctor_job {
    char id[32], task[32];
} gt_doctor_job;
int gt_doctor_job_of_name(const char *s, size_t n, gt_doctor_job *j);

/* Human-readable report; with json, one JSON object instead. */
void gt_doctor_print(const gt_doctor_report *rep, const char *run_dir, int json, FILE *out);

/* Thresholds of the performance findings (fractions). */
#define GT_DOCTOR_STALL_WARN 0.10     /* data stall: waiting for batches over the wall time */
#define GT_DOCTOR_IMBALANCE_WARN 1.20 /* a phase's max over ranks / mean over ranks */

#endif
