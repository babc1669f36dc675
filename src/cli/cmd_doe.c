/* cli/cmd_doe.c: `gridtrain doe expand|run|run-all|report` (docs/doe.md).
 *
 *   doe expand MATRIX              the cells (index, stable id, levels) and the array size
 *   doe run MATRIX [--task N]      train + evaluate one cell (N defaults to SLURM_ARRAY_TASK_ID)
 *   doe run-all MATRIX [-j N]      every cell locally, N concurrent processes
 *   doe next MATRIX --rung R       halving: rank rung R, write the next rung's cells (ladder.json)
 *   doe report SWEEP_DIR|MATRIX    Markdown + HTML + CSV report with gnuplot plots
 *
 * 'doe' runs as ONE process (not under mpirun/srun): a cell's training is a
 * child 'gridtrain train' process, behind --launch (e.g. "srun --mpi=pmix -n 4")
 * for several ranks. The matrix format and the cell layout are in doe/matrix.h
 * and doe/run.h. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "core/check.h"
#include "core/log.h"
#include "doe/matrix.h"
#include "doe/report.h"
#include "doe/run.h"

static const gt_opt opts[] = {
    {"doe.task", "task", GT_OPT_INT, "", "run: cell index (default: $SLURM_ARRAY_TASK_ID)", NULL},
    {"doe.jobs", "j", GT_OPT_INT, "1", "run-all: concurrent cells", NULL},
    {"doe.rung", "rung", GT_OPT_INT, "", "halving ([search] strategy = halving): expand/run/next at this rung (default: the ladder's current rung)", NULL},
    {"doe.halving", "halving", GT_OPT_STR, "", "report of a grid sweep: compare with this halving sweep of the same matrix (SWEEP_DIR or MATRIX): did it choose the grid's best, at what share of the compute", NULL},
    {"doe.launch", "launch", GT_OPT_STR, "", "run/run-all: launcher before 'gridtrain train', e.g. 'srun --mpi=pmix -n 4' (default: $GT_DOE_LAUNCH or none)", NULL},
    {"doe.metric", "metric", GT_OPT_STR, "", "report: primary metric (default: [doe] metric, else pdm.event.f05 / nilm.test.overall.f1 / train.best_val_loss)", NULL},
    {"doe.rows", "rows", GT_OPT_STR, "", "report: row factor of the two-way table (default machine_type)", NULL},
    {"doe.cols", "cols", GT_OPT_STR, "", "report: column factor of the two-way table (default condition)", NULL},
    {"doe.out", "o", GT_OPT_STR, "", "report: output directory (default SWEEP_DIR/report)", NULL},
    {"doe.plots", "plots", GT_OPT_BOOL, "true", "report: draw heatmap.svg and effects.svg with gnuplot", NULL},
    {NULL, NULL, 0, NULL, NULL, NULL},
};

static int train_knows(const char *key) {
    for (const gt_opt *o = gt_cmd_opts(&gt_cmd_train); o && o->key; o++)
        if (!strcmp(o->key, key)) return 1;
    return 0;
}

static const gt_opt *train_opt(const char *key) {
    for (const gt_opt *o = gt_cmd_opts(&gt_cmd_train); o && o->key; o++)
        if (!strcmp(o->key, key)) return o;
    return NULL;
}

/* Every level of a factor that sets a 'gridtrain train' key is a valid value
 * of that key (seed = 5-1 or a 5000-digit number failed only in the cells). */
static void check_levels(const char *path, const gt_doe_matrix *m) {
    for (int f = 0; f < m->n_factors; f++) {
        const gt_doe_factor *F = &m->factors[f];
        const gt_opt *o = F->is_filter ? NULL : train_opt(F->key);
        for (int l = 0; o && l < F->n_levels; l++) {
            const char *why = gt_opt_invalid(o, F->levels[l]);
            GT_CHECK(!why, GT_EXIT_USAGE, "%s:%d: factor '%s' level '%.40s%s': %s (%s)", path, F->line, F->name,
                     F->levels[l], strlen(F->levels[l]) > 40 ? "..." : "", why, F->key);
        }
    }
    for (int i = 0; i < m->n_fixed; i++) {
        const gt_opt *o = train_opt(m->fixed[i].key);
        const char *why = o ? gt_opt_invalid(o, m->fixed[i].value) : NULL;
        GT_CHECK(!why, GT_EXIT_USAGE, "%s: %s = '%.40s%s': %s", path, m->fixed[i].key, m->fixed[i].value,
                 strlen(m->fixed[i].value) > 40 ? "..." : "", why);
    }
}

static void load_matrix(const char *path, gt_doe_matrix *m) {
    char err[1024];
    GT_CHECK(gt_doe_matrix_load(path, train_knows, m, err, sizeof err) == 0, GT_EXIT_USAGE, "%s", err);
    check_levels(path, m);
}

/* --rung R, or the ladder's current rung */
static int rung_of(const gt_args *a, const gt_doe_matrix *m) {
    if (!gt_args_is_set(a, "doe.rung")) return gt_doe_current_rung(m);
    const int64_t r = gt_args_int(a, "doe.rung");
    GT_CHECK(r >= 0 && r < m->search.n_rungs, GT_EXIT_USAGE, "--rung %lld: the ladder of %s has rungs 0-%d",
             (long long)r, m->path, m->search.n_rungs - 1);
    return (int)r;
}

/* doe expand MATRIX: the cells (or one rung's) and the ladder's budgets. */
static int verb_expand(const gt_args *a, const char *arg) {
    gt_doe_matrix m;
    load_matrix(arg, &m);
    if (m.search.strategy == GT_DOE_HALVING && gt_args_is_set(a, "doe.rung")) {
        const int r = rung_of(a, &m);
        int64_t *cells = NULL, n = gt_doe_rung_cells(&m, r, &cells);
        GT_CHECK(n >= 0, GT_EXIT_USAGE, "doe expand %s --rung %d: not reached yet ('doe next --rung %d' writes it)",
                 arg, r, r - 1);
        printf("# rung %d of '%s': %lld cells to %g %s\n", r, m.name, (long long)n, m.search.budget[r],
               m.search.unit == GT_DOE_UNIT_DATA ? "of the data" : "steps");
        printf("array: --array=");
        for (int64_t i = 0; i < n; i++) printf("%s%lld", i ? "," : "", (long long)cells[i]);
        printf(" (%lld tasks)\n", (long long)n);
        free(cells);
    } else {
        gt_doe_print_cells(&m, stdout);
        if (m.search.strategy == GT_DOE_HALVING) {
            printf("halving: eta %d, %d rungs:", m.search.eta, m.search.n_rungs);
            for (int r = 0; r < m.search.n_rungs; r++) printf(" %g", m.search.budget[r]);
            printf(" %s\n", m.search.unit == GT_DOE_UNIT_DATA ? "of the data" : "steps");
        }
    }
    gt_doe_matrix_free(&m);
    return 0;
}

/* doe run MATRIX: one cell (--task N or the Slurm array task), or its rung. */
static int verb_run(const gt_args *a, const char *arg, const gt_doe_run_opts *o) {
    gt_doe_matrix m;
    load_matrix(arg, &m);
    int64_t task;
    if (gt_args_is_set(a, "doe.task")) {
        task = gt_args_int(a, "doe.task");
    } else {
        const char *t = getenv("SLURM_ARRAY_TASK_ID");
        GT_CHECK(t && *t, GT_EXIT_USAGE, "doe run %s: give --task N (or run it as a Slurm array task)", arg);
        char *end;
        task = strtoll(t, &end, 10);
        GT_CHECK(*end == 0, GT_EXIT_USAGE, "SLURM_ARRAY_TASK_ID='%s' is not an integer", t);
    }
    if (!o->have_eval) GT_INFO("doe: no 'gridtrain eval' in this executable: eval.json gets the train part only");
    int rc = m.search.strategy == GT_DOE_HALVING ? gt_doe_run_rung(&m, task, rung_of(a, &m), o)
                                                 : gt_doe_run_cell(&m, task, o);
    gt_doe_matrix_free(&m);
    return rc;
}

/* A sweep directory named by arg, or the directory of the matrix file arg
 * (malloc'd). */
static char *sweep_dir_of(const char *arg) {
    struct stat st;
    if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) return GT_STRDUP(arg);
    gt_doe_matrix m;
    load_matrix(arg, &m);
    char *dir = GT_STRDUP(m.dir);
    gt_doe_matrix_free(&m);
    return dir;
}

/* doe report SWEEP|MATRIX: the report files, optionally against a halving sweep. */
static int verb_report(const gt_args *a, const char *arg) {
    char *dir = sweep_dir_of(arg);
    char err[1024];
    gt_doe_sweep s;
    GT_CHECK(gt_doe_sweep_load(dir, &s, err, sizeof err) == 0, GT_EXIT_DATA, "doe report: %s", err);
    const char *metric = gt_args_str(a, "doe.metric"), *rows = gt_args_str(a, "doe.rows"),
               *cols = gt_args_str(a, "doe.cols");
    gt_doe_summary sum;
    GT_CHECK(gt_doe_summarize(&s, *metric ? metric : NULL, *rows ? rows : NULL, *cols ? cols : NULL, &sum, err,
                              sizeof err) == 0,
             GT_EXIT_USAGE, "doe report: %s", err);
    gt_doe_sweep hs;
    int have_h = 0;
    const char *hv = gt_args_str(a, "doe.halving");
    if (*hv) { /* a halving sweep of the same matrix to compare with */
        char *hdir = sweep_dir_of(hv);
        GT_CHECK(gt_doe_sweep_load(hdir, &hs, err, sizeof err) == 0, GT_EXIT_DATA, "doe report --halving: %s", err);
        free(hdir);
        GT_CHECK(hs.ladder, GT_EXIT_USAGE, "doe report --halving %s: not a halving sweep (no ladder.json)", hv);
        sum.halving = &hs;
        have_h = 1;
    }
    char out[PATH_MAX];
    const char *o = gt_args_str(a, "doe.out");
    if (*o) snprintf(out, sizeof out, "%s", o);
    else snprintf(out, sizeof out, "%s/report", dir);
    int rc = gt_doe_report_write(&s, &sum, out, gt_args_bool(a, "doe.plots"));
    if (rc == 0) {
        printf("%s/report.md\n%s/report.html\n", out, out);
        GT_INFO("doe report: %lld cells (%lld done, %lld failed, %lld missing, %lld requeued) -> %s/report.md, "
                "report.html, *.csv",
                (long long)s.n_cells, (long long)sum.n_status[GT_DOE_DONE], (long long)sum.n_status[GT_DOE_FAILED],
                (long long)sum.n_status[GT_DOE_MISSING], (long long)sum.n_requeued, out);
    }
    gt_doe_summary_free(&sum, &s);
    gt_doe_sweep_free(&s);
    if (have_h) gt_doe_sweep_free(&hs);
    free(dir);
    return rc ? GT_EXIT_RESOURCE : 0;
}

static int run(const gt_args *a, MPI_Comm comm) {
    int size = 1;
    MPI_Comm_size(comm, &size);
    GT_CHECK(size == 1, GT_EXIT_USAGE,
             "doe runs as one process (not under mpirun/srun): cells start their own ranks with --launch");
    const char *verb = a->pos[0], *arg = a->pos[1];
    gt_doe_run_opts ro = {0};
    ro.launch = gt_args_str(a, "doe.launch");
    if (!ro.launch[0] && getenv("GT_DOE_LAUNCH")) ro.launch = getenv("GT_DOE_LAUNCH");
    /* evaluate cells when this executable has 'eval' (GT_DOE_EVAL=0/1 overrides) */
    const char *ge = getenv("GT_DOE_EVAL");
    ro.have_eval = ge && *ge ? atoi(ge) != 0 : a->keys && a->keys->find("eval") != NULL;
    if (!strcmp(verb, "expand")) return verb_expand(a, arg);
    if (!strcmp(verb, "next")) {
        gt_doe_matrix m;
        load_matrix(arg, &m);
        GT_CHECK(m.search.strategy == GT_DOE_HALVING, GT_EXIT_USAGE, "doe next: %s has no [search] strategy = halving",
                 arg);
        int rc = gt_doe_next(&m, rung_of(a, &m), stdout);
        gt_doe_matrix_free(&m);
        return rc < 0 ? GT_EXIT_DATA : 0;
    }
    if (!strcmp(verb, "run")) return verb_run(a, arg, &ro);
    if (!strcmp(verb, "run-all")) {
        gt_doe_matrix m;
        load_matrix(arg, &m);
        int64_t j = gt_args_int(a, "doe.jobs");
        GT_CHECK(j >= 1 && j <= 512, GT_EXIT_USAGE, "-j %lld: give 1 to 512 concurrent cells", (long long)j);
        int rc = gt_doe_run_all(&m, (int)j, &ro);
        gt_doe_matrix_free(&m);
        return rc;
    }
    if (!strcmp(verb, "report")) return verb_report(a, arg);
    GT_FAIL(GT_EXIT_USAGE, "doe: unknown action '%s' (expand, run, run-all, next, report)", verb);
}

const gt_cmd gt_cmd_doe = {
    .name = "doe",
    .usage = "doe expand MATRIX [--rung R] | run MATRIX [--task N] [--rung R] | run-all MATRIX [-j N] | next MATRIX --rung R | report SWEEP_DIR [--halving SWEEP_DIR]",
    .summary = "DOE sweeps: expand a factor matrix, run its cells (Slurm array tasks or locally), report",
    .details = "A matrix (INI: [doe] name/dir, [factors] farm = 0,1 / condition = low_wind,rated / seed = 1,2 /\n"
               "model.hidden = 64,128, [fixed] data.file, model.kind, train.max_steps ...) is a full factorial.\n"
               "Each cell trains (and evaluates) into SWEEP_DIR/cells/<id>/ (id: hash of its levels, stable\n"
               "when levels are appended); finished cells are skipped, preempted ones resume. Run 'doe' as\n"
               "one process: cells start 'gridtrain train' themselves (--launch 'srun --mpi=pmix -n 4').\n"
               "jobs/pdm_doe.sh submits a matrix as a Slurm job array. [search] strategy = halving trains\n"
               "the cells in rungs (eta, min_budget, max_budget) and keeps the best 1/eta after each ('doe next';\n"
               "jobs/doe_ladder.sh chains the rungs' arrays on Slurm). See docs/doe.md.",
    .opts = opts,
    .min_pos = 2,
    .max_pos = 2,
    .run = run,
    .prints_config = 1,
};
