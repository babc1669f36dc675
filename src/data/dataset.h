/* data/dataset.h: a rank's training data, from series to batches.
 *
 *   shard (io/read.h) -> dataset: chronological splits, spike screening,
 *   window index (views: a window is (item, start row), never a copy) ->
 *   normalisation (statistics of the TRAIN split only, reduced over ranks,
 *   frozen) -> global sampling (deterministic from (seed, epoch), independent of
 *   the number of ranks) -> batch fill -> prefetch thread (data/loader.h).
 *
 * Global sampling and data parallelism. Windows are numbered globally:
 * households/turbines in file order, each item's windows in time order. A
 * global batch is g_batch consecutive entries of a pseudo-random permutation of
 * all windows of a split (a bijection computed on the fly from (seed, epoch),
 * no per-window table). Each rank takes the entries of the global batch that
 * fall in its own items, so the union over ranks is exactly the batch one rank
 * would see: with P ranks the gradient (summed over ranks and divided by the
 * global batch size) equals the 1-rank gradient up to float summation order.
 * Per-rank batch sizes vary from step to step around g_batch / P.
 *
 * Collective functions take an MPI communicator (they exchange small per-item
 * counts and the normalisation moments; never gradients). */
#ifndef GT_DATA_DATASET_H
#define GT_DATA_DATASET_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "io/read.h"

/* A task's number in the task registry (task/task.h gt_task_register: the
 * built-ins of task/task_registry.h, then those a program adds). data/ never
 * asks what it is: it reaches the task's side of a dataset through the table
 * the task's datasets carry (data/dataset_impl.h gt_data_task_i). */
typedef int gt_task;
#define GT_TASK_UNSET (-1) /* until the data file's kind (or data.task) chooses */
typedef enum gt_split {
    GT_SPLIT_TRAIN = 0, /* first split_train of every (not held-out) item's time */
    GT_SPLIT_VAL = 1,   /* the next split_val */
    GT_SPLIT_TEST = 2,  /* the rest: later time of the training items */
    GT_SPLIT_HOLDOUT = 3, /* whole held-out items (all of their time) */
    GT_SPLIT_COUNT = 4
} gt_split;
const char *gt_split_name(gt_split s);

typedef enum gt_screen_action {
    GT_SCREEN_DROP = 0,   /* windows touching a spike or a gap are not used */
    GT_SCREEN_REPAIR = 1, /* spikes are replaced by the local median; gap windows dropped */
    GT_SCREEN_OFF = 2     /* no screening (NaN windows are still dropped) */
} gt_screen_action;

#define GT_DATA_MAX_TARGETS 32
#define GT_DATA_MAX_CHANNELS 1024 /* pdm sensor channels (CARE farms have up to ~950 SCADA columns) */
#define GT_DATA_MAX_RANGES 32

/* A subset of integer codes as inclusive ranges ("0,2,5-9"); n == 0 means
 * "everything" (the default). Used to select the households/turbines, farms,
 * machine types and operating conditions a run trains and evaluates on (DOE
 * cells, docs/doe.md). */
typedef struct gt_data_filter {
    int n;                           /* ranges; 0: no filter */
    int64_t lo[GT_DATA_MAX_RANGES];  /* inclusive bounds of range r */
    int64_t hi[GT_DATA_MAX_RANGES];
} gt_data_filter;
/* Parses "", "all" (no filter) or comma-separated codes and lo-hi ranges.
 * Returns 0, or -1 with a message in err[err_bytes]. Not collective. */
int gt_data_filter_parse(gt_data_filter *f, const char *text, char *err, size_t err_bytes);
/* 1 when v passes (always with n == 0). */
int gt_data_filter_has(const gt_data_filter *f, int64_t v);

/* A task's own data settings. The data.* keys that one task alone reads
 * live in that task's block of gt_data_config, laid out and set to its
 * defaults by the task's data table (data/dataset_impl.h gt_data_task_i
 * config_bytes, config_defaults; checked by its check_cfg), and read and
 * written only through gt_data_task_config, by the table's name (pdm/pdm.h
 * gt_pdm_data_cfg): data/ never reads one. The blocks share one arena of
 * GT_DATA_TASK_ARENA_BYTES: each added table gets a slice of its
 * config_bytes, aligned for any type, when it is added (gt_data_task_add;
 * the tables' slices must fit together). A slice records the table it
 * belongs to and where it lies, both within the configuration, so a
 * configuration copies by value and a lookup never depends on the order
 * the tables were added in. */
#define GT_DATA_MAX_TASKS 8              /* task data tables with settings of their own */
#define GT_DATA_TASK_ARENA_BYTES 4096    /* room for the settings of every task, together */
struct gt_data_task_i;
typedef struct gt_data_task_slice {
    const struct gt_data_task_i *owner; /* the task data table whose settings these are; NULL: unused */
    size_t off;                         /* they are arena bytes [off, off + owner->config_bytes) */
} gt_data_task_slice;

typedef struct gt_data_config {
    gt_task task;          /* set by gt_data_config_resolve */
    char task_name[32];    /* data.task: "" / "auto" (the task of the file's kind) or a task's name */
    int window;            /* W (nilm, odd preferred: the target is the midpoint) or T (pdm) */
    int64_t stride;        /* rows between window starts; 0 = nilm per-appliance strides */
    double stride_frac;    /* nilm per-appliance stride = max(1, stride_frac * on_duration_s / period_s) */
    double split_train;    /* fraction of each item's rows, chronological (e.g. 0.7) */
    double split_val;      /* (e.g. 0.15); test = 1 - train - val */
    int holdout_every;     /* 0: none; k: items with file index % k == k-1 held out */
    gt_screen_action screen;
    double spike_k;        /* robust z (median/MAD) above which a sample is a spike */
    uint64_t seed;
    /* Subsets (defaults: everything). Items outside the filters keep their
     * place in the file's numbering but contribute no window to any split. */
    gt_data_filter items;         /* household/turbine ids (a task's own filters: its settings block) */
    int x_channels_last;          /* nilm input layout per sample: 0 (C, W) (s2p_cnn), 1 (W, C) (s2p_tf);
                                     set by the caller from the model (gt_model_input_channels_last) */
    gt_data_task_slice task_slice[GT_DATA_MAX_TASKS]; /* the tasks' own settings (gt_data_task_config): */
    union {
        max_align_t align_;
        unsigned char bytes[GT_DATA_TASK_ARENA_BYTES];
    } task_arena;                                    /* ... their bytes */
} gt_data_config;
/* The shared defaults, and every added task data table's block
 * (gt_data_task_add) set to that task's defaults; task GT_TASK_UNSET and the
 * settings whose default depends on the task left to it
 * (GT_DATA_WINDOW_TASK_DEFAULT, GT_DATA_STRIDE_TASK_DEFAULT:
 * gt_data_config_resolve fills them). */
void gt_data_config_defaults(gt_data_config *cfg);
/* Adds the settings block of task data table t (one with config_bytes > 0)
 * to the configurations gt_data_config_defaults makes from now on, at the
 * next aligned offset of the arena; adding a table again does nothing,
 * another table of the same name, more than GT_DATA_MAX_TASKS tables or
 * blocks that together outgrow GT_DATA_TASK_ARENA_BYTES end the job
 * (GT_EXIT_INTERNAL, naming the table). The task registry (task/task.h gt_task_register)
 * adds every registered task's table, a task's own defaults helper its own
 * (pdm/pdm.h gt_pdm_data_defaults). Not thread-safe: at start-up. */
void gt_data_task_add(const struct gt_data_task_i *t);
/* The settings block of the task data table named `name` (its `name`) in
 * cfg (the task's folder asks for its own); ends the job (GT_EXIT_INTERNAL)
 * when cfg has none of that name (defaults made before the table was added). */
void *gt_data_task_config(gt_data_config *cfg, const char *name);
const void *gt_data_task_config_c(const gt_data_config *cfg, const char *name);
/* Settings whose default depends on the task, left to it until the data
 * file's kind is known (the trainer, eval and plan call
 * gt_data_config_resolve once it is): window 0, stride -1. */
#define GT_DATA_WINDOW_TASK_DEFAULT 0
#define GT_DATA_STRIDE_TASK_DEFAULT (-1)
/* Sets cfg->task and fills a window or stride left to the default of the
 * task's data side t (its `window`, `stride` fields). */
void gt_data_config_resolve(gt_data_config *cfg, gt_task task, const struct gt_data_task_i *t);
/* The chronological split of one item (household/turbine) of n_rows rows at
 * position file_index of the file: rows [0, *b1) train, [*b1, *b2) val,
 * [*b2, n_rows) test, with b1 = round(split_train * n_rows) and
 * b2 = round((split_train + split_val) * n_rows), clamped so that
 * 0 <= b1 <= b2 <= n_rows; *holdout = 1 when the whole item is held out
 * instead (holdout_every k > 0 and file_index % k == k - 1). The one place
 * this arithmetic lives: the dataset's splits and eval's calibration rows
 * both come from it. Not collective. */
void gt_data_item_split(int64_t n_rows, int32_t file_index, double split_train, double split_val, int holdout_every,
                        int64_t *b1, int64_t *b2, int *holdout);
/* The rows of every split of one item under cfg: [lo[s], hi[s]) within the
 * item, indexed by gt_split. The one rule shared by the dataset's windows,
 * its per-item statistics and eval's calibration and evaluation rows.
 * gt_data_item_split's ranges (train [0, b1), val [b1, b2), test [b2,
 * n_rows); a held-out item: holdout [0, n_rows), the others empty), unless a
 * task's settings in cfg give the item's rows themselves (the `item_rows`
 * slot of the task data table owning a block of cfg, data/dataset_impl.h:
 * PdM's data.care_event, the authors' protocol, where only the event
 * dataset's turbine has rows and every other item is `excluded`). Not
 * collective. */
typedef struct gt_data_item_rows {
    int64_t lo[GT_SPLIT_COUNT], hi[GT_SPLIT_COUNT];
    int holdout;  /* the whole item held out (data.holdout_every; never when a task gives the rows) */
    int excluded; /* no rows in any split (a task's rows leave the item out) */
} gt_data_item_rows;
void gt_data_item_rows_of(const gt_data_config *cfg, int64_t n_rows, int32_t file_index, gt_data_item_rows *r);
/* The data filters are checked against the file before any window is built
 * (each task's gt_<task>_check_filters, made of gt_data_filter_check_run of
 * data/dataset_impl.h): an entry that matches nothing ends the job with one
 * line naming it; at most GT_DATA_FILTER_LIST_MAX of the file's values are
 * listed. */
#define GT_DATA_FILTER_LIST_MAX 20
/* 0 when `zone` is "", "UTC" or a zone of the system's time-zone database
 * (/usr/share/zoneinfo or $TZDIR), else -1 with a message in err. */
int gt_data_timezone_check(const char *zone, char *err, size_t err_bytes);

/* Frozen normalisation: x' = (x - mean) / std, per feature.
 * nilm: feature 0 = aggregate, 1..A = appliances (targets);
 * pdm: one per channel (inputs and targets are the same channels). */
typedef struct gt_norm_stats {
    int n;
    double mean[1 + GT_DATA_MAX_CHANNELS];
    double std[1 + GT_DATA_MAX_CHANNELS];
} gt_norm_stats;


/* Where a window comes from, for NaN forensics and predictions. */
typedef struct gt_window_ref {
    int32_t item;       /* local item index; -1: a window another rank sent (gt_loader_balance) */
    int32_t file_index; /* position in the file's /households or /turbines */
    int64_t id;         /* household/turbine id */
    int64_t start;      /* first row within the item */
    int64_t t_start_ms, t_end_ms; /* time stamps of the first and last row */
} gt_window_ref;

typedef struct gt_dataset gt_dataset;

void gt_dataset_free(gt_dataset *ds);

/* Sizes a model needs: elements per sample of x and y (s2p: x (W) or with
 * time features (1 + F, W) / (W, 1 + F) by cfg.x_channels_last, y (A);
 * lstm: x (T, C), y unused (the target is the next step of x): 0). */
int64_t gt_dataset_n_x(const gt_dataset *ds);
int64_t gt_dataset_n_y(const gt_dataset *ds);
int gt_dataset_n_targets(const gt_dataset *ds); /* A (nilm) or C (pdm) */
const gt_norm_stats *gt_dataset_norm(const gt_dataset *ds);
/* The finite train-split values (over all ranks) behind feature f of the
 * statistics (nilm: 0 = aggregate, 1 + a = appliance a); 0 for none. */
int64_t gt_dataset_norm_count(const gt_dataset *ds, int f);
/* The name of column t: the appliance (nilm) or channel (pdm) in the order
 * the model's targets have; "?" out of range. */
const char *gt_dataset_target_name(const gt_dataset *ds, int t);
/* The shortest sampling period (s) of this rank's items; +inf with none. Not collective. */
double gt_dataset_min_period_s(const gt_dataset *ds);
/* Replace the statistics (inference with the model's frozen ones); with
 * data.norm = turbine they stay the fallback of channels without statistics
 * of their own. */
void gt_dataset_set_norm(gt_dataset *ds, const gt_norm_stats *ns);
/* The statistics local item li's windows are normalised with: its own
 * (data.norm = turbine) or the global ones. */
const gt_norm_stats *gt_dataset_item_norm(const gt_dataset *ds, int li);

/* Windows of a split: on this rank, and over all ranks. */
int64_t gt_dataset_n_windows_local(const gt_dataset *ds, gt_split s);
int64_t gt_dataset_n_windows_global(const gt_dataset *ds, gt_split s);

/* The local part of global batch `k` of `epoch` (g_batch windows of the
 * permutation; the last batch of an epoch may be short when drop_last = 0).
 * Writes up to g_batch global window numbers that this rank owns to
 * local_idx and returns their count. Same answer on every call. */
int64_t gt_dataset_batch_local(const gt_dataset *ds, gt_split s, uint64_t epoch, int64_t k,
                               int64_t g_batch, int64_t *local_idx);
/* Global batches per epoch: floor(n_global / g_batch) (drop_last). */
int64_t gt_dataset_batches_per_epoch(const gt_dataset *ds, gt_split s, int64_t g_batch);
/* Local windows of a split in order (evaluation, prediction): entries
 * [first, first + n) of this rank's windows of the split. */
int64_t gt_dataset_local_range(const gt_dataset *ds, gt_split s, int64_t first, int64_t n,
                               int64_t *local_idx);

/* Fill n samples (normalised) for local window numbers idx[n] (as returned
 * above): x (n, n_x), y (n, n_y) and mask (n, n_y) (1 where a target counts;
 * nilm per-appliance strides select appliances per window), refs (n) may be
 * NULL. Thread-safe for concurrent calls with different output buffers. */
void gt_dataset_fill(const gt_dataset *ds, gt_split s, const int64_t *idx, int64_t n, float *x,
                     float *y, float *mask, gt_window_ref *refs);

/* Activation augmentation (cfg.augment > 0, nilm, train split): with
 * probability cfg.augment a window gets one activation (a run of the
 * appliance above its on-power, off gaps up to 5 minutes inside it, at most
 * W rows, from the training rows of the same household) of an appliance
 * that is off throughout the window superimposed: its true power is added to
 * the aggregate at the same rows and, where it covers the midpoint, to that
 * appliance's target. Half the draws cover the midpoint (a positive
 * example), half fall anywhere in the window (context). The draw depends on
 * (seed, household, window start, epoch) only: the same batches for any
 * rank count. Adds to x and y as filled by gt_dataset_fill for refs[n];
 * returns the windows changed. */
int64_t gt_dataset_augment(const gt_dataset *ds, uint64_t epoch, const gt_window_ref *refs, int64_t n, float *x,
                           float *y, const float *mask);

/* Screening report: windows screened per item and reason, and the spikes
 * found (item id, time). Collective: rank 0 writes CSV lines
 * "id,start_ms,end_ms,reason" to `out` (all ranks' entries, in file order). */
typedef struct gt_screen_summary {
    int64_t windows_total, windows_screened_spike, windows_screened_gap, windows_screened_event;
    int64_t spikes_found, samples_repaired;
    int64_t windows_filtered; /* left out by the condition filter (not screening: no record) */
    int64_t samples_imputed;  /* pdm: missing samples of rows that are not gap rows (data.pdm_row_missing) */
} gt_screen_summary;
void gt_dataset_screen_summary(const gt_dataset *ds, MPI_Comm comm, gt_screen_summary *global);
void gt_dataset_write_screened(const gt_dataset *ds, MPI_Comm comm, FILE *out);

/* How one household/turbine was used: rows, filled input samples, windows
 * on the grid, kept, and screened by reason (every split together). */
typedef struct gt_item_usage {
    int64_t id;
    int32_t file_index;
    int32_t holdout;        /* 1: a held-out item (all of its windows in GT_SPLIT_HOLDOUT) */
    int64_t rows;
    int64_t filled;         /* nilm: aggregate samples filled (data.fill_max_s) */
    int64_t windows_total;  /* candidate windows on the grid */
    int64_t windows_kept;
    int64_t screened_gap, screened_spike, screened_event;
    int64_t filtered;       /* left out by the condition filter (not screening) */
    int64_t excluded;       /* 1: outside data.items / farms / machine_types */
} gt_item_usage;
/* Collective: every item's usage in file order, on rank 0 (*n_items = items
 * of the file); NULL and 0 on the other ranks. Caller frees. */
gt_item_usage *gt_dataset_usage(const gt_dataset *ds, MPI_Comm comm, int *n_items);
/* Collective: rank 0 writes the usage as CSV with a header line to `out`
 * (data_used.csv of a run). */
void gt_dataset_write_usage(const gt_dataset *ds, MPI_Comm comm, FILE *out);
/* "household" or "turbine" */
const char *gt_dataset_item_name(const gt_dataset *ds);

/* What a task's data side (data/dataset_impl.h gt_data_task_i, reached
 * through task/task.h gt_task_def.data) says of a file of n_cols columns: the
 * features of its normalisation statistics (nilm: the aggregate and one per
 * appliance; pdm: one per channel), and what one column is ("appliance"). */
int gt_data_task_n_features(const struct gt_data_task_i *t, int n_cols);
const char *gt_data_task_column(const struct gt_data_task_i *t);

/* Resident bytes of the dataset (series + index), this rank. */
int64_t gt_dataset_bytes(const gt_dataset *ds);
/* The series part of it for `rows` rows (and `lowres_rows` of a second
 * resolution) of `cols` columns under the task's data side t: what the memory
 * planner predicts from a file's row counts before reading it. */
int64_t gt_dataset_series_bytes(const struct gt_data_task_i *t, const gt_data_config *cfg, int64_t rows,
                                int64_t lowres_rows, int cols, int has_faults);

#endif
