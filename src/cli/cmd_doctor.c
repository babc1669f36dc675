/* cli/cmd_doctor.c: `gridtrain doctor RUN_DIR`: the likely cause of a failed
 * or slow run, its fix and the evidence (train/doctor.h). Exit 0 with a
 * diagnosis (a cause, or a run that finished with nothing to report), 8 when
 * the run failed and no known cause matched, 3 when RUN_DIR holds no run. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "core/check.h"
#include "train/doctor.h"

#define GT_DOCTOR_EXIT_UNDIAGNOSED 8

static const gt_opt opts[] = {
    {"doctor.log", "log", GT_OPT_STR, "", "more log files to read, comma-separated (a Slurm output kept elsewhere); RUN_DIR/*.log, RUN_DIR/*.out and slurm-*JOBID*.out beside RUN_DIR are read anyway", NULL},
    {"doctor.json", "json", GT_OPT_BOOL, "false", "print one JSON object (cause, findings with title, fix and evidence) instead of the text report", NULL},
    {NULL, NULL, 0, NULL, NULL, NULL},
};

static int run(const gt_args *a, MPI_Comm comm) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    if (rank != 0) return 0; /* plain file reads: rank 0 reports */
    const char *dir = a->pos[0];
    gt_doctor_report *r = GT_CALLOC(1, sizeof *r);
    if (gt_doctor_run(dir, gt_args_str(a, "doctor.log"), r)) {
        free(r);
        GT_FAIL(GT_EXIT_DATA, "doctor: %s holds no run (no manifest.json, run.log or other log to read)", dir);
    }
    gt_doctor_print(r, dir, gt_args_bool(a, "doctor.json"), stdout);
    int rc = r->f[0].failure && !strcmp(r->f[0].cause, "unknown") ? GT_DOCTOR_EXIT_UNDIAGNOSED : 0;
    free(r);
    return rc;
}

const gt_cmd gt_cmd_doctor = {
    .name = "doctor",
    .usage = "doctor RUN_DIR [--log FILE[,FILE]] [--json]",
    .summary = "why a run failed or ran slow: the likely cause, the fix and the evidence",
    .details = "Reads RUN_DIR's manifest.json, run.log, metrics.jsonl, forensics.jsonl and timing.json,\n"
               "any *.log/*.out in RUN_DIR, a Slurm output slurm-*JOBID*.out beside RUN_DIR, and --log files.\n"
               "Names out of memory (with the plan's advice), NaN (the household), data stall, imbalance,\n"
               "NCCL and driver errors, Xid faults, preemption, time limits, disk full, a crashed rank.\n"
               "Exit 0 with a diagnosis, 8 when the run failed and no known cause matched, 3 when RUN_DIR\n"
               "holds no run (docs/troubleshooting.md, Diagnosing a run).",
    .opts = opts,
    .min_pos = 1,
    .max_pos = 1,
    .run = run,
};
