/* data/dataset_impl.h: the dataset's private layout and the helpers the
 * data/ files share (internal to data/). See dataset.h. */
#ifndef GT_DATA_DATASET_IMPL_H
#define GT_DATA_DATASET_IMPL_H

#include <mpi.h>
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
    int excluded;         /* outside cfg.items / farms / machine_types: no windows */
    int64_t filled;       /* nilm: aggregate samples filled (cfg.fill_max_s) */
    int64_t n_total, n_gap, n_spike, n_event, n_filtered; /* windows on the grid, screened by reason */
    ds_split sp[GT_SPLIT_COUNT];
} ds_item;

typedef struct ds_record { /* one CSV line of the screening report */
    int32_t file_index, reason;
    int64_t id, start_ms, end_ms;
} ds_record;

struct gt_dataset {
    const struct gt_data_task_i *t; /* the task's data side (src/<task>/dataset_<task>.c) */
    gt_data_config cfg;
    gt_nilm_shard *nilm; /* owned (one of the two) */
    gt_pdm_shard *pdm;
    int n_items, n_items_total;
    int n_cols;           /* A (nilm targets) or C (pdm channels) */
    int64_t W;
    const int64_t *ts;    /* [n_rows] */
    float *x;             /* nilm aggregate [n_rows] or pdm signals [n_rows, C] */
    const float *app;     /* nilm appliances [n_rows, A] */
    float *tfeat;         /* nilm time features [n_rows, cfg.time_features] (owned), or NULL */
    const uint8_t *labels;/* pdm [n_rows] */
    const int32_t *index; /* [n_items] file index */
    const int64_t *id;    /* [n_items] */
    ds_item *items;       /* [n_items] */
    int64_t *strides;     /* nilm [n_items, A]: appliance a counts where start % stride == 0 */
    ds_run *runs;
    int64_t n_runs, cap_runs;
    ds_record *recs;
    int64_t n_recs, cap_recs;
    int64_t *spike_rows;  /* sorted local rows holding a detected spike (DROP: not used in moments) */
    int64_t n_spike_rows, cap_spike_rows;
    int64_t *cond_ok;     /* pdm with a condition filter: sorted local row ranges [a, b) (pairs) that pass */
    int64_t n_cond_ok, cap_cond_ok;
    uint32_t app_mask;    /* nilm: appliances whose targets count (bit a) */
    int64_t n_local[GT_SPLIT_COUNT], n_global[GT_SPLIT_COUNT];
    int64_t *g_first[GT_SPLIT_COUNT]; /* [n_items_total + 1] global window prefix in file order */
    int32_t *owner_local;             /* [n_items_total] local item index, -1 elsewhere */
    gt_norm_stats norm;
    int64_t norm_count[1 + GT_DATA_MAX_CHANNELS]; /* finite train values behind norm, over all ranks */
    gt_screen_summary screen_local;
    uint8_t *spike_ch;    /* pdm [n_cols]: 1 where the spike test runs (cfg.spike_channels) */
    int64_t *spikes_ch;   /* pdm [n_cols]: spikes found per channel, this rank */
    int64_t *nan_ch;      /* pdm [n_cols]: non-finite samples per channel, this rank */
    uint8_t *nbm_role;    /* pdm nbm [n_cols]: gt_nbm_role of each channel; NULL with pdm_target next */
    gt_norm_stats *item_norm; /* pdm, data.norm = turbine [n_items]: each item's statistics; else NULL */
    int nbm_n_in, nbm_n_tg;
    /* augmentation: activations [act_off[li * A + a], act_off[li * A + a + 1]) of ds->acts */
    int64_t *acts;        /* (row, len) pairs, local rows */
    int64_t *act_off;     /* [n_items * A + 1] */
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
    const char *column;   /* what one column of the file is ("appliance"): messages */
    int features_extra;   /* normalisation features besides one per column (nilm: 1, the aggregate) */
    /* the task's own data settings, after the shared ones (one-line error) */
    void (*check_cfg)(const gt_data_config *cfg);
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
} gt_data_task_i;

/* ------------------------------------------------- shared between files -- */
/* The checks every task shares, then the task's (t->check_cfg) (dataset.c) */
void gt_ds_check_cfg(const gt_data_config *cfg, const gt_data_task_i *t);
/* A dataset's shared fields; the caller attaches its shard (dataset.c) */
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
/* NILM: ds->tfeat from the rows' time stamps (time_features.c) */
void gt_ds_time_features(gt_dataset *ds, int64_t n_rows);
/* the usage lines of the log (usage.c) */
void gt_ds_log_usage(const gt_dataset *ds, const gt_item_usage *u, int n, const gt_screen_summary *g);
/* collective: the train statistics (norm.c) */
void gt_ds_compute_norm(gt_dataset *ds, MPI_Comm comm);
/* PdM data.norm = turbine: each item's statistics (norm.c) */
void gt_ds_item_norms(gt_dataset *ds);
#endif
