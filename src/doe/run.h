/* doe/run.h: running the cells of a matrix (docs/doe.md).
 *
 * Layout of a sweep (SWEEP_DIR = [doe] dir):
 *   SWEEP_DIR/sweep.json          the expanded matrix: factors, levels, every cell's index and id
 *   SWEEP_DIR/cells/<id>/         one cell = one training run directory:
 *       cell.ini                  the cell's train configuration (fixed keys + factor levels)
 *       cell.json                 status (running|done|failed|preempted), attempts, preemptions,
 *                                 failures, last exit code, wall seconds over attempts, Slurm job ids
 *       train.log, eval.log       output of every attempt (appended)
 *       config.ini, manifest.json, metrics.jsonl, checkpoints/ ...   written by 'gridtrain train'
 *       eval.json                 written last: its presence marks the cell finished
 *   SWEEP_DIR/logs/               run-all: one log per task
 *
 * A cell runs 'gridtrain train' (and 'gridtrain eval' when the executable has
 * it) as child processes, optionally behind a launcher (e.g. "srun --mpi=pmix
 * -n 4"), so a failing training is recorded instead of ending the runner, and
 * SIGUSR1/SIGTERM received by the runner are forwarded to the training (which
 * checkpoints and exits 75). Idempotent: a cell with eval.json is skipped, a
 * cell with a committed checkpoint resumes (--resume), a cell locked by a live
 * runner (flock on cell.json.lock) is left alone.
 *
 * None of these functions is collective: 'doe' runs as one process. */
#ifndef GT_DOE_RUN_H
#define GT_DOE_RUN_H

#include <stdio.h>

#include "doe/matrix.h"

#define GT_DOE_NAME_LEN 64

typedef struct gt_doe_run_opts {
    const char *self;   /* executable that knows 'train' (and maybe 'eval'); NULL: /proc/self/exe */
    const char *launch; /* launcher words before SELF train ..., e.g. "srun --mpi=pmix -n 2"; NULL/"" none */
    int have_eval;      /* run 'SELF eval CELL_DIR' after training */
} gt_doe_run_opts;

/* Condition names of a PdM file indexed by code (/legend/condition; the
 * synthetic generator's names when the file has none). Returns the count, or
 * -1 when the file cannot be opened. */
int gt_doe_condition_names(const char *path, char names[][GT_DOE_NAME_LEN], int max_names);

/* The cell's train configuration as INI text (malloc'd), or NULL with a
 * message in err (e.g. an unknown condition name). run_dir is written as run.dir. */
char *gt_doe_cell_config(const gt_doe_matrix *m, const gt_doe_cell *c, const char *run_dir, char *err,
                         size_t err_bytes);

/* Prints the cells (index, id, levels) and the array size. */
void gt_doe_print_cells(const gt_doe_matrix *m, FILE *out);

/* Writes SWEEP_DIR/sweep.json (atomically; creates SWEEP_DIR). Returns 0 or -1. */
int gt_doe_write_sweep(const gt_doe_matrix *m);

/* Runs cell `index`: returns 0 (finished now or before, or busy elsewhere),
 * 75 (preempted: checkpoint written; run again to resume) or the failing exit
 * code (recorded in cell.json). */
int gt_doe_run_cell(const gt_doe_matrix *m, int64_t index, const gt_doe_run_opts *o);

/* Runs every cell with up to `jobs` concurrent 'SELF doe run MATRIX --task i'
 * processes. Returns 0 when every cell finished, else 1. */
int gt_doe_run_all(const gt_doe_matrix *m, int jobs, const gt_doe_run_opts *o);
/* The same for tasks[0..n) only, each as 'doe run MATRIX --task i [--rung r]'
 * (rung < 0: none). Returns 0 when every one finished, else 1. */
int gt_doe_run_tasks(const gt_doe_matrix *m, const int64_t *tasks, int64_t n, int rung, int jobs,
                     const gt_doe_run_opts *o);

/* Successive halving ([search] strategy = halving, doe/halving.h; ladder.c).
 *   SWEEP_DIR/ladder.json            the rungs: budget, cells, each configuration's
 *                                    mean metric, which advanced, the chosen one
 *   SWEEP_DIR/rungs/<r>/<id>.json    cell <id> at rung r: status, steps, metric, wall s
 *   SWEEP_DIR/rungs/<r>/<id>/        unit = data: the rung's training on the sample
 * The cells of rung 0 are all cells; those of rung r > 0 are what 'doe next'
 * wrote for it. Returns their count and the indices (malloc'd) in *cells, or
 * -1 when rung r has not been reached (no 'doe next' after rung r - 1). */
int64_t gt_doe_rung_cells(const gt_doe_matrix *m, int rung, int64_t **cells);
/* The rung ladder.json is at (the lowest without results), 0 without one. */
int gt_doe_current_rung(const gt_doe_matrix *m);
/* Cell `index` at rung `rung`: trains it to the rung's budget (unit steps:
 * resuming its own checkpoint, stopping at the budget; unit data: a run of
 * its own on the rung's sample; the last rung: 'doe run' of the cell, the full
 * training and its evaluation). Idempotent: a cell already at the rung's
 * budget is not rerun; a cell that is not in the rung is skipped. Returns 0,
 * 75 (preempted: run it again), or the failing exit code (recorded in the
 * rung's record). */
int gt_doe_run_rung(const gt_doe_matrix *m, int64_t index, int rung, const gt_doe_run_opts *o);
/* After rung `rung`: ranks its configurations, marks the ones that stop,
 * writes ladder.json with the next rung's cells, prints the ladder line and
 * "next: rung R cells a,b,c" or "chosen: ..." to out. Returns 0 (a next rung),
 * 1 (the ladder is finished) or -1 (too few configurations have a result:
 * the rule is printed; ladder.json unchanged for the next rung). */
int gt_doe_next(const gt_doe_matrix *m, int rung, FILE *out);
/* run-all of a halving matrix: every rung in turn, -j jobs, 'doe next'
 * between them. 0 when the ladder finished, else 1. */
int gt_doe_ladder_run_all(const gt_doe_matrix *m, int jobs, const gt_doe_run_opts *o);

/* Writes CELL_DIR/eval.json from the run's manifest.json, metrics.jsonl and
 * train.log when no evaluator is available, or adds its "train" part to an
 * existing eval.json that lacks one. wall_s: the cell's wall seconds over
 * attempts. Returns 0 or -1. */
int gt_doe_write_train_part(const char *cell_dir, double wall_s);

#endif
