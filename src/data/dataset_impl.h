/* data/dataset_impl.h: the dataset's private layout and the helpers the
 * data/ files share (internal to data/). See dataset.h. */
#ifndef GT_DATA_DATASET_IMPL_H
#define GT_DATA_DATASET_IMPL_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "data/dataset.h"

enum { F_GAP = 1, F_SPIKE = 2, F_EVENT = 4, F_SPIKE_SEEN = 8, F_OFFCOND = 16, F_OFFTRAIN = 32 };
enum { R_GAP = 0, R_SPIKE = 1, R_EVENT = 2, R_SPIKE_FOUND = 3, R_SPIKE_REPAIRED = 4, R_COUNT = 5 };
extern const char *const gt_ds_reason[R_COUNT]; /* screened.csv reason names (usage.c) */

#define HAMPEL_HALF 3

typedef struct ds_run {
    int64_t j0, n; /* screened grid positions [j0, j0 + n) */
    int64_t cum;   /* screened positions in the earlier runs of the same (item, split) */
} ds_run;

typedef struct ds_split {
    int64_t lo, hi;      /* rows [lo, hi) of the item */
    int64_t first;       /* first grid start (row within the item) */
    int64_t n_grid;      /* candidate windows */
    int64_t n_kept;      /* windows after screening */
    int64_t local_first; /* local window number of this item's first kept window */
    int64_t run_off;     /* runs [run_off, run_off + n_runs) of ds->runs */
    int64_t n_runs;
} ds_split;

typedef struct ds_item {
    int64_t row0, n_rows; /* local rows [row0, row0 + n_rows) of the shard */
    int64_t base;         /* rows between grid starts */
    int holdout;
    int excluded;         /* outside cfg.items or the task's own item filters (t->item_excluded): no windows */
    int64_t filled;       /* input samples filled (the task's open: data.fill_max_s) */
    int64_t n_total, n_gap, n_spike, n_event, n_filtered; /* windows on the grid, screened by reason */
    ds_split sp[GT_SPLIT_COUNT];
} ds_item;

typedef struct ds_record { /* one CSV line of the screening report */
    int32_t file_index, reason;
    int64_t id, start_ms, end_ms;
} ds_record;

struct gt_dataset {
    const struct gt_data_task_i *t; /* the task's data side (src/<task>/dataset_<task>.c) */
    void *part;           /* the task's own part (its shard, ...): made by the task's open, freed by t->free_part */
    gt_data_config cfg;
    int n_items, n_items_total;
    int n_cols;           /* the file's columns: the targets or the channels */
    int n_x;              /* channels per row of x (the task's open sets it) */
    int64_t W;
    const int64_t *ts;    /* [n_rows] */
    float *x;             /* the screened input series [n_rows, n_x] */
    const float *cols;    /* [n_rows, n_cols] the columns when x is not them (statistics features n_x..), or NULL */
    const int32_t *index; /* [n_items] file index */
    const int64_t *id;    /* [n_items] */
    ds_item *items;       /* [n_items] */
    /* what the task's open sets for the shared screening (window_index.c) and statistics (norm.c) */
    const uint8_t *events; /* [n_rows] rows inside a labelled event (never spikes; F_EVENT), or NULL */
    int train_skips_events; /* train and val windows touching an event are screened (R_EVENT), and the
                             * train statistics leave event rows out */
    int gap_min;          /* a row with at least this many of its n_x channels non-finite is a gap row */
    int64_t short_gap;    /* a run of at most this many gap rows between two rows is imputed, not a gap (0: none) */
    double spike_min_dev; /* a spike departs from its local median by more than this too */
    uint8_t *ch_spike_test; /* [n_x] (owned): 1 where the spike test runs; NULL: every channel */
    int64_t *ch_spikes;   /* [n_x] (owned): spikes found per channel, this rank (all ranks after
                           * gt_ds_build); NULL: not counted */
    int64_t *ch_missing;  /* [n_x] (owned): non-finite samples per channel, the same; NULL with ch_spikes */
    int rows_filtered;    /* the task's row filter (t->filter_rows) is on: cond_ok holds the passing rows */
    ds_run *runs;
    int64_t n_runs, cap_runs;
    ds_record *recs;
    int64_t n_recs, cap_recs;
    int64_t *spike_rows;  /* sorted local rows holding a detected spike (DROP: not used in moments) */
    int64_t n_spike_rows, cap_spike_rows;
    int64_t *cond_ok;     /* with rows_filtered: sorted local row ranges [a, b) (pairs) that pass */
    int64_t n_cond_ok, cap_cond_ok;
    int64_t n_local[GT_SPLIT_COUNT], n_global[GT_SPLIT_COUNT];
    int64_t *g_first[GT_SPLIT_COUNT]; /* [n_items_total + 1] global window prefix in file order */
    int32_t *owner_local;             /* [n_items_total] local item index, -1 elsewhere */
    gt_norm_stats norm;
    int64_t norm_count[1 + GT_DATA_MAX_CHANNELS]; /* finite train values behind norm, over all ranks */
    gt_screen_summary screen_local;
};

/* ------------------------------------------------------ the task's side -- */

/* What differs between the tasks in a dataset, filled in that task's folder
 * (nilm/dataset_nilm.c, pdm/dataset_pdm.c, which also create its datasets);
 * the shared files of data/ reach it through ds->t, and a configuration's
 * task-dependent defaults through gt_data_config_resolve. */
typedef struct gt_data_task_i {
    const char *name;     /* the log's "data: <name> windows ..." */
    int window;           /* data.window's default */
    int64_t stride;       /* data.stride's default (0: the task's own strides) */
    const char *item;     /* one item of the file ("household"): messages, reports */
    const char *items;    /* its plural */
    const char *gap_hint; /* what to check when gaps screen too many windows */
    const char *spike_hint; /* what to change when spikes screen too many windows */
    const char *column;   /* what one column of the file is ("appliance"): messages */
    int features_extra;   /* normalisation features besides one per column (nilm: 1, the aggregate) */
    /* the task's own data settings: a block of config_bytes in gt_data_config's arena (every task's
     * together at most GT_DATA_TASK_ARENA_BYTES), set to the defaults by config_defaults (dataset.h
     * gt_data_task_add, gt_data_config_defaults); 0 / NULL: none */
    size_t config_bytes;
    void (*config_defaults)(void *cfg);
    /* checks the settings the task reads (its block's and the shared ones it alone gives a
     * meaning), after the shared ones (one-line error) */
    void (*check_cfg)(const gt_data_config *cfg);
    /* checks the task's block when cfg trains another task, after that task's check_cfg: a setting
     * given that only this task reads ends the job (one-line error); NULL: none */
    void (*check_unused)(const gt_data_config *cfg);
    /* the rows of the splits of one item when the task's settings in cfg give them (gt_data_item_rows_of's
     * contract): fills r and returns 1; 0: the shared rule. Asked of every block's table; NULL: never */
    int (*item_rows)(const gt_data_config *cfg, int64_t n_rows, int32_t file_index, gt_data_item_rows *r);
    /* bytes of this rank's series (gt_dataset_bytes) */
    int64_t (*series_bytes)(const gt_dataset *ds);
    /* the same predicted from row counts before reading (gt_dataset_series_bytes) */
    int64_t (*plan_bytes)(const gt_data_config *cfg, int64_t rows, int64_t lowres_rows, int cols, int has_faults);
    /* input channels per time step a model sees of a file of n_cols columns (gt_dataset_n_x) */
    int (*n_in)(const gt_data_config *cfg, int n_cols);
    /* train-split augmentation of n filled samples (gt_dataset_augment's contract); NULL: none */
    int64_t (*augment)(const gt_dataset *ds, uint64_t epoch, const gt_window_ref *refs, int64_t n, float *x,
                       float *y, const float *mask);
    /* dataset target elements per sample (0: the targets come from the window) */
    int64_t (*n_y)(const gt_dataset *ds);
    /* the name of target column t (0 <= t < n_cols) */
    const char *(*target_name)(const gt_dataset *ds, int t);
    /* the sampling period of local item li (NaN when unknown) */
    double (*period_s)(const gt_dataset *ds, int li);
    /* window i (local item li, starting `start` rows into it; r0 = its first
     * local row) into x, y, mask (gt_dataset_fill) */
    void (*fill)(const gt_dataset *ds, int li, int64_t start, int64_t r0, int64_t i, float *x, float *y,
                 float *mask);
    /* the task's own log lines of the usage report (before the per-item table); NULL: none */
    void (*log_usage)(const gt_dataset *ds, const gt_item_usage *u, int n);
    /* its lines after the per-item table (rank 0); may name the channels with the most spikes and gaps in
     * most_spike, most_gap (cap bytes each, "" as given) for the screening warning; NULL: none */
    void (*log_channels)(const gt_dataset *ds, const gt_item_usage *u, int n, const gt_screen_summary *g,
                         char *most_spike, char *most_gap, size_t cap);
    /* frees ds->part (the task's part and its shard) */
    void (*free_part)(void *part);
    /* 1 when local item li is left out by the task's own item filters (beyond data.items); NULL: none */
    int (*item_excluded)(const gt_dataset *ds, int li);
    /* the task's row filter of local item li (flags [its rows]): sets F_OFFCOND on rows no window may
     * touch and F_OFFTRAIN on rows no train or val window may touch; returns 1 when the filter is on
     * (the same answer for every item); NULL: none */
    int (*filter_rows)(const gt_dataset *ds, int li, uint8_t *flags);
    /* the least std of normalisation feature f (the shared floor applies too); NULL: the shared floor */
    double (*norm_floor)(const gt_dataset *ds, int f);
    /* the statistics were set (built, or gt_dataset_set_norm): the task's own derived from them; NULL: none */
    void (*norm_changed)(gt_dataset *ds);
    /* the statistics local item li's windows use when the task keeps its own, else NULL; NULL: the global ones */
    const gt_norm_stats *(*item_norm)(const gt_dataset *ds, int li);
} gt_data_task_i;

/* ------------------------------------------------- shared between files -- */
/* One data filter option checked against the values the file has: `mine`
 * [n_mine] are this rank's (its items' ids, farms, ... or its segments'
 * condition codes); codes 0..n_legend-1 of a legend count as present too. */
typedef struct gt_data_filter_check {
    const char *key;        /* "data.farms" */
    const char *what;       /* "farm": the message says "no farm 7 in the file" */
    const gt_data_filter *f;
    const int64_t *mine;
    int n_mine;
    const char *legend;     /* rank 0: names [n_legend][GT_FORMAT_NAME_LEN] or NULL */
    int n_legend;
    int legend_counts;      /* 1: a code of the legend is present even without a value */
} gt_data_filter_check;
/* Collective: an entry of c->f that matches none of the file's values ends the
 * job with exit 2 and one line naming the file, the option, the entries and
 * the values the file has; rank 0 decides, every rank follows (filter.c). The
 * tasks' filter checks (their gt_<task>_check_filters) are made of these. */
void gt_data_filter_check_run(const char *file, const gt_data_filter_check *c, MPI_Comm comm);
/* The checks of the settings every task reads, then the task's own (t->check_cfg) (dataset.c) */
void gt_ds_check_cfg(const gt_data_config *cfg, const gt_data_task_i *t);
/* A dataset's shared fields; the caller attaches its part (ds->part) and sets the screening fields (dataset.c) */
gt_dataset *gt_ds_new(const gt_data_task_i *t, const gt_data_config *cfg, int n_items,
                      int n_items_total, int n_cols, const int64_t *ts, float *x, const int32_t *index,
                      const int64_t *id);
/* Collective, once the series views and the items' grids are set: the
 * global window counts, statistics and the log (dataset.c) */
void gt_ds_build(gt_dataset *ds, MPI_Comm comm);
/* screening and the window index of local item li (window_index.c) */
void gt_ds_index_item(gt_dataset *ds, int li, uint8_t *flags);
/* the splits and grid of local item li (window_index.c) */
void gt_ds_plan_item(gt_dataset *ds, int li, int64_t row0, int64_t n_rows, int64_t base);
/* the grid position of the k-th kept window of a split (window_index.c) */
int64_t gt_ds_kept_to_grid(const gt_dataset *ds, const ds_split *sp, int64_t k);
/* local item and start row of local window l of split s (window_index.c) */
void gt_ds_locate(const gt_dataset *ds, gt_split s, int64_t l, int *item, int64_t *start);
/* the usage lines of the log (usage.c) */
void gt_ds_log_usage(const gt_dataset *ds, const gt_item_usage *u, int n, const gt_screen_summary *g);
/* collective: the train statistics (norm.c) */
void gt_ds_compute_norm(gt_dataset *ds, MPI_Comm comm);
#endif
