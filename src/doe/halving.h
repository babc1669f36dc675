/* doe/halving.h: the search strategy of a matrix (docs/doe.md, Successive
 * halving): the [search] section, the rung arithmetic and the selection of
 * the configurations that advance. Pure functions, no files.
 *
 *   [search]
 *   strategy = halving     ; grid (default: every cell to the end) | halving
 *   eta = 3                ; keep the best 1/eta of the configurations per rung
 *   unit = steps           ; steps: rung r trains to min_budget x eta^r optimizer steps
 *                          ; data: on that fraction of the households/turbines
 *   min_budget = 100       ; steps (an integer), or a fraction in (0, 1]
 *   max_budget = 2700      ; steps: default the fixed train.max_steps; data: default 1
 *   metric = train.best_val_loss   ; what the rungs rank by (the validation loss)
 *   per = appliances       ; optional: one ladder per level of this factor (results that
 *                          ; are not comparable across its levels, e.g. appliance groups)
 *
 * Rung budgets: b_r = min_budget x eta^r while below max_budget (by more
 * than 0.1 %), then max_budget (the last rung is the full run). A configuration is the set of
 * cells equal in every factor but the seed; it is ranked by the mean over its
 * seeds that finished the rung, ties broken by the configuration's first cell
 * index, so the choice is deterministic. keep_r = max(1, floor(n_r / eta)). */
#ifndef GT_DOE_HALVING_H
#define GT_DOE_HALVING_H

#include <stddef.h>
#include <stdint.h>

#define GT_DOE_MAX_RUNGS 16

enum { GT_DOE_GRID = 0, GT_DOE_HALVING = 1 };
enum { GT_DOE_UNIT_STEPS = 0, GT_DOE_UNIT_DATA = 1 };

typedef struct gt_doe_search {
    int strategy;      /* GT_DOE_GRID or GT_DOE_HALVING */
    int eta;           /* >= 2 */
    int unit;          /* GT_DOE_UNIT_STEPS or GT_DOE_UNIT_DATA */
    double min_budget; /* 0: unset */
    double max_budget; /* 0: unset (steps: train.max_steps; data: 1) */
    char metric[64];   /* the rung metric */
    char per[64];      /* a factor: one ladder per level of it ("" none) */
    int line;          /* line of [search] in the matrix (0: none) */
    int n_rungs;
    double budget[GT_DOE_MAX_RUNGS]; /* filled by gt_doe_search_finish */
} gt_doe_search;

/* Defaults: grid, eta 3, steps, metric train.best_val_loss. */
void gt_doe_search_init(gt_doe_search *s);
/* One [search] key; 0 or -1 with a message (without file:line) in err. */
int gt_doe_search_set(gt_doe_search *s, const char *key, const char *value, char *err, size_t err_bytes);
/* After the whole matrix: max_steps = the fixed train.max_steps (0 when not
 * fixed), eval_every = the fixed train.eval_every (0 when not fixed). Checks
 * the budgets and fills budget[]; 0 or -1 with err. */
int gt_doe_search_finish(gt_doe_search *s, int64_t max_steps, int64_t eval_every, char *err, size_t err_bytes);

/* The rung budgets from min to max (b_r = min x eta^r while < max, then max);
 * returns the count (<= max_rungs) or -1 when more would be needed. */
int gt_doe_rungs(double min_budget, double max_budget, int eta, double *budget, int max_rungs);
/* Configurations kept after a rung of n: max(1, floor(n / eta)). */
int gt_doe_keep(int n, int eta);
/* Steps of compute of the whole ladder (unit steps, resumed cells: each rung
 * adds b_r - b_(r-1) per surviving cell) for n_configs configurations of
 * `seeds` cells each, every rung keeping gt_doe_keep; and of the grid
 * (n_configs x seeds x max). Both in cell-steps. */
double gt_doe_ladder_steps(int n_configs, int seeds, const gt_doe_search *s, double *grid_steps);

/* One configuration at a rung. */
typedef struct gt_doe_rank_in {
    int64_t first_cell; /* its lowest cell index: the tie-break */
    double mean;        /* mean over its seeds that finished the rung; NaN: none did */
    int n_done, n_failed, n_cells;
} gt_doe_rank_in;

/* Ranks n configurations (better first: higher_better or lower; NaN last;
 * ties by first_cell) into order[n] and returns how many advance: keep, when
 * at least keep configurations have a value; otherwise -1 with the rule in
 * why (too few survived the rung: rerun it, failed cells are retried). */
int gt_doe_select(const gt_doe_rank_in *in, int n, int keep, int higher_better, int *order, char *why,
                  size_t why_bytes);

/* The sample of a data rung: the first ceil(fraction x n) of ids[0..n) in the
 * order of a permutation drawn from seed (xxh64 of seed and id), so every
 * cell of one seed sees the same sample at a rung, and a larger fraction's
 * sample holds the smaller ones. Writes the chosen ids, in ids' order, to
 * out; returns their count (>= 1 when n >= 1). */
int64_t gt_doe_data_sample(const int64_t *ids, int64_t n, double fraction, int64_t seed, int64_t *out);

#endif
