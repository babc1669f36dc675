/* doe/report.h: the sweep report (docs/doe.md).
 *
 *   gt_doe_sweep_load   SWEEP_DIR/sweep.json + every cells/<id>/{cell.json,eval.json}
 *   gt_doe_summarize    per configuration (cells equal in every factor but the
 *                       seed): n, mean and sample sd (n-1) over seeds of every
 *                       metric; main effects of each factor (per level: mean, sd,
 *                       standard error sd/sqrt(n) and mean - grand mean over the
 *                       finished cells); the two-way table (rows x cols, default
 *                       machine_type x condition) of the primary metric; best and
 *                       worst configuration; counts of missing, failed,
 *                       preempted/requeued cells; total CPU/GPU-hours
 *   gt_doe_report_write report.md, report.html, cells.csv, configs.csv,
 *                       effects.csv, two_way.csv and, with gnuplot, heatmap.svg
 *                       and effects.svg (generated .gp scripts kept beside them)
 *
 * Only finished cells (with eval.json) enter the statistics. A metric a cell
 * lacks is NaN and left out of that metric's statistics. Not collective. */
#ifndef GT_DOE_REPORT_H
#define GT_DOE_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "doe/halving.h"
#include "doe/matrix.h"
#include "eval/metrics.h"

#define GT_DOE_MAX_METRICS 32

typedef struct gt_doe_metric_def {
    const char *name;  /* dotted path in eval.json, e.g. "pdm.event.f05" */
    const char *label; /* column title */
    int higher_better;
    int quality;       /* 1: model quality (shown in the tables); 0: cost/throughput */
} gt_doe_metric_def;
/* The metric table and its size (*n, when n is not NULL): the registered
 * tasks' columns (each task's evaluation table, eval/eval_task.h
 * report_metrics), the last registered task's first, then training's
 * (train.*). Made from the registry when first asked for (made again
 * after a task is registered: register the tasks before loading a sweep,
 * whose values are indexed by it). Not thread-safe. */
const gt_doe_metric_def *gt_doe_metrics(int *n);
int gt_doe_metric_find(const char *name); /* index or -1 */

/* STOPPED: a halving sweep's cell that a rung did not keep */
enum gt_doe_status { GT_DOE_MISSING = 0, GT_DOE_RUNNING, GT_DOE_PREEMPTED, GT_DOE_FAILED, GT_DOE_DONE, GT_DOE_STOPPED };
const char *gt_doe_status_name(int status);

typedef struct gt_doe_result {
    int64_t index;
    char id[GT_DOE_ID_LEN];
    int level[GT_DOE_MAX_FACTORS]; /* level index per factor */
    int status;
    int attempts, preemptions, failures, exit_code;
    double value[GT_DOE_MAX_METRICS]; /* NaN when absent */
} gt_doe_result;

/* A halving sweep's ladder (SWEEP_DIR/ladder.json and rungs/, doe/run.h). */
typedef struct gt_doe_ladder_conf {
    int64_t first_cell;               /* the configuration's lowest cell index */
    char label[512];                  /* its levels but the seed */
    double mean[GT_DOE_MAX_RUNGS];    /* the rung metric's mean over seeds; NaN: not ranked there */
    int n_done[GT_DOE_MAX_RUNGS], n_failed[GT_DOE_MAX_RUNGS];
    int ran[GT_DOE_MAX_RUNGS];        /* 1: in that rung */
    int advanced[GT_DOE_MAX_RUNGS];   /* 1: kept after that rung */
    int chosen;                       /* 1: the ladder's choice (one per level of [search] per) */
} gt_doe_ladder_conf;
typedef struct gt_doe_ladder {
    int eta, n_rungs, n_ranked;       /* rungs, rungs with results */
    char unit[8], metric[64];
    double budget[GT_DOE_MAX_RUNGS];
    int64_t n_cells[GT_DOE_MAX_RUNGS], n_failed_cells[GT_DOE_MAX_RUNGS];
    int n_confs;
    gt_doe_ladder_conf *confs;        /* cell order */
    int chosen;                       /* index into confs of the (first) choice, -1: not finished */
    int n_chosen;                     /* choices: 1, or one per level of [search] per */
    double steps, cpu_hours, gpu_hours; /* spent over the rungs (the records' steps_added, cpu/gpu_hours) */
    double grid_steps;                /* every cell to the full budget (unit steps), else NaN */
    double grid_cpu_hours_est;        /* every cell at its rung-0 cost per budget x the full budget */
} gt_doe_ladder;

typedef struct gt_doe_sweep {
    char *dir, *name, *metric; /* metric: sweep.json's or NULL */
    char task[32];             /* the cells' task (sweep.json's, else the first eval.json's; "": unknown) */
    int n_factors;
    char *factor[GT_DOE_MAX_FACTORS];  /* names */
    char *key[GT_DOE_MAX_FACTORS];     /* train keys */
    int n_levels[GT_DOE_MAX_FACTORS];
    char **levels[GT_DOE_MAX_FACTORS];
    int seed_factor;           /* the replicate factor (train.seed) or -1 */
    int64_t n_cells;
    gt_doe_result *cells;      /* [n_cells] in index order */
    gt_doe_ladder *ladder;     /* a halving sweep's ladder, NULL for a grid sweep */
    /* the evaluation settings of the first finished cell (its eval.json eval_config: the task's
     * sweep_settings, eval/eval_task.h, e.g. eval.level, eval.margin; "" when none), and how many
     * finished cells differ */
    char eval_settings[320];
    int64_t n_eval_settings_differ;
} gt_doe_sweep;

typedef struct gt_doe_stat {
    int n;
    double mean, sd; /* NaN when n == 0; sd NaN when n < 2 */
} gt_doe_stat;
gt_doe_stat gt_doe_stat_of(const double *v, int n); /* NaNs are skipped */

typedef struct gt_doe_config {
    int level[GT_DOE_MAX_FACTORS]; /* -1 for the seed factor */
    int n_cells, n_done;
    gt_doe_stat stat[GT_DOE_MAX_METRICS];
} gt_doe_config;

typedef struct gt_doe_summary {
    int primary;                 /* metric index */
    int n_configs;
    gt_doe_config *configs;      /* [n_configs], first-seen order of the cells */
    gt_doe_stat grand[GT_DOE_MAX_METRICS];
    gt_doe_stat *effect[GT_DOE_MAX_FACTORS]; /* [n_levels[f] * n_metrics] (gt_doe_metrics); NULL for the seed factor */
    int row_factor, col_factor;  /* two-way table factors (-1 when fewer than two factors) */
    gt_doe_stat *two_way;        /* [n_levels[row] * n_levels[col]] of the primary metric */
    int best, worst;             /* configuration indices (-1: none finished) */
    int64_t n_status[6];         /* cells per gt_doe_status */
    int64_t n_requeued;          /* cells with a preemption (requeued/resumed) */
    double cpu_hours, gpu_hours, train_time_s;
    /* set by the caller after gt_doe_summarize (NULL: none): a halving sweep of
     * the same matrix to compare with this grid sweep (gt_doe_compare) */
    const struct gt_doe_sweep *halving;
} gt_doe_summary;

/* A halving sweep against a grid sweep of the same matrix: the grid's best
 * configuration by the halving's rung metric (mean over the finished seeds),
 * where the halving's choice ranks in the grid and its grid value, and the
 * compute of both. */
typedef struct gt_doe_compare {
    int grid_best, chosen;        /* configuration indices in the grid summary (-1: not found) */
    int chosen_rank, n_ranked;    /* 1 = the grid's best */
    double best_value, chosen_value, rel_diff; /* (chosen - best) / |best| */
    double grid_cpu_hours, halving_cpu_hours, grid_gpu_hours, halving_gpu_hours, grid_steps, halving_steps;
} gt_doe_compare;
/* 0, or -1 with err (the halving sweep has no choice yet, no such metric) */
int gt_doe_compare_halving(const gt_doe_sweep *grid, const gt_doe_summary *sum, const gt_doe_sweep *halving,
                           gt_doe_compare *out, char *err, size_t err_bytes);

int gt_doe_sweep_load(const char *dir, gt_doe_sweep *s, char *err, size_t err_bytes);
void gt_doe_sweep_free(gt_doe_sweep *s);

/* metric: a name from the table or NULL (sweep.json's, else the task's
 * headline metric, eval/eval_task.h, when any cell has it, else
 * train.best_val_loss).
 * rows/cols: factor names or NULL (machine_type x condition when present,
 * else the first two non-seed factors). Returns 0 or -1 with err. */
int gt_doe_summarize(const gt_doe_sweep *s, const char *metric, const char *rows, const char *cols,
                     gt_doe_summary *out, char *err, size_t err_bytes);
void gt_doe_summary_free(gt_doe_summary *sum, const gt_doe_sweep *s);

/* Cells slower than their siblings (the finished cells of the same
 * configuration: equal in every factor but the seed): a cell whose
 * train.samples_per_s is below (1 - GT_DOE_SLOW_THRESHOLD) x the median of
 * its siblings'. Fills at most max entries of out (cell indices into
 * s->cells, the cell's and the siblings' rates); returns how many there are. */
#define GT_DOE_SLOW_THRESHOLD 0.2
typedef struct gt_doe_slow {
    int64_t cell;
    double samples_per_s, siblings_median;
    int n_siblings;
} gt_doe_slow;
int gt_doe_slow_cells(const gt_doe_sweep *s, gt_doe_slow *out, int max);

/* The CARE to Compare protocol over a sweep with a factor on
 * data.care_event (one training per event dataset; docs/evaluation.md, "The
 * authors' protocol"). A protocol run is the set of cells equal in every
 * factor but care_event (e.g. one per detector and seed); its events are the
 * one evaluated /care_events entry of each finished cell's eval.json (read
 * by the sweep's task: eval/eval_task.h care_cell, e.g. PdM's
 * pdm.care_protocol.events), combined with gt_care_protocol_final per farm
 * and overall, beside the project's event recall (detected / labelled events
 * of the prediction parts) and false alarms per turbine-day (false alarm runs
 * / turbine-days of the prediction parts), summed over the cells. */
typedef struct gt_doe_care_event {
    int64_t cell;              /* index into s->cells */
    int64_t event_id, turbine_id;
    int farm;
    gt_care_event_eval r;
    int64_t rows, rows_in_training;
    double n_events, n_detected, n_false_alarms, turbine_days; /* the cell's event totals (gt_eval_care_cell) */
} gt_doe_care_event;
typedef struct gt_doe_care_sum {
    gt_care_protocol p;
    double recall, false_alarms_per_turbine_day; /* NaN without events / turbine-days */
} gt_doe_care_sum;
#define GT_DOE_CARE_MAX_FARMS 64
typedef struct gt_doe_care_run {
    char label[512];                /* the other factors' levels, "(all)" without any */
    int n_cells, n_done;            /* cells of the run, finished ones */
    int n_events;
    gt_doe_care_event *events;      /* [n_events], in the care_event factor's level order */
    gt_doe_care_sum overall;
    int n_farms;
    int farm[GT_DOE_CARE_MAX_FARMS];
    gt_doe_care_sum by_farm[GT_DOE_CARE_MAX_FARMS];
} gt_doe_care_run;
typedef struct gt_doe_care {
    int factor;            /* the care_event factor, -1: none (n_runs 0) */
    int n_runs;
    gt_doe_care_run *runs; /* first-seen order of the cells */
} gt_doe_care;
/* Collects and combines; 0, or -1 with err when a finished cell's eval.json
 * lacks its event (e.g. not evaluated under data.care_event). */
int gt_doe_care_collect(const gt_doe_sweep *s, gt_doe_care *out, char *err, size_t err_bytes);
void gt_doe_care_free(gt_doe_care *c);

/* Writes the report files into out_dir (created). plots: run gnuplot (when
 * found on PATH; otherwise a warning and no plots). Returns 0 or -1. */
int gt_doe_report_write(const gt_doe_sweep *s, const gt_doe_summary *sum, const char *out_dir, int plots);

#endif
