/* data/dataset.c: a dataset's creation (splits, index, statistics) and
 * queries (see dataset.h); the index and screening are window_index.c, the
 * statistics norm.c, the settings config.c. */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "core/log.h"
#include "core/rng.h"
#include "data/dataset_impl.h"
#include "data/permute.h"
#include "dist/reduce.h"

int64_t gt_dataset_series_bytes(const gt_data_task_i *t, const gt_data_config *cfg, int64_t rows,
                                int64_t lowres_rows, int cols, int has_faults) {
    return t->plan_bytes(cfg, rows, lowres_rows, cols, has_faults);
}

int gt_data_task_n_features(const gt_data_task_i *t, int n_cols) { return t->features_extra + n_cols; }

const char *gt_data_task_column(const gt_data_task_i *t) { return t->column; }

int64_t gt_dataset_augment(const gt_dataset *ds, uint64_t epoch, const gt_window_ref *refs, int64_t n, float *x,
                           float *y, const float *mask) {
    return ds->t->augment ? ds->t->augment(ds, epoch, refs, n, x, y, mask) : 0;
}

int64_t gt_dataset_bytes(const gt_dataset *ds) {
    int64_t b = ds->t->series_bytes(ds);
    b += (int64_t)sizeof *ds + (int64_t)sizeof(ds_item) * ds->n_items;
    b += (int64_t)sizeof(ds_run) * ds->cap_runs + (int64_t)sizeof(ds_record) * ds->cap_recs;
    b += (int64_t)sizeof(int64_t) * (ds->cap_spike_rows + ds->cap_cond_ok);
    b += (int64_t)(GT_SPLIT_COUNT * sizeof(int64_t) + sizeof(int32_t)) * (ds->n_items_total + 1);
    return b;
}

void gt_ds_build(gt_dataset *ds, MPI_Comm comm) {
    int rank = 0, size = 1;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    MPI_CHECK(MPI_Comm_size(comm, &size));
    int64_t max_rows = 1;
    for (int li = 0; li < ds->n_items; li++)
        if (ds->items[li].n_rows > max_rows) max_rows = ds->items[li].n_rows;
    uint8_t *flags = GT_MALLOC((size_t)max_rows);
    for (int li = 0; li < ds->n_items; li++) gt_ds_index_item(ds, li, flags);
    free(flags);

    /* local numbering: items in (file) order, each item's windows in time order */
    for (int s = 0; s < GT_SPLIT_COUNT; s++) {
        int64_t acc = 0;
        for (int li = 0; li < ds->n_items; li++) {
            ds->items[li].sp[s].local_first = acc;
            acc += ds->items[li].sp[s].n_kept;
        }
        ds->n_local[s] = acc;
    }

    /* global numbering: every rank learns every item's kept counts */
    enum { REC = 1 + GT_SPLIT_COUNT };
    const int mine = ds->n_items * REC;
    int64_t *sendb = GT_MALLOC(sizeof(int64_t) * (size_t)(mine + 1));
    for (int li = 0; li < ds->n_items; li++) {
        sendb[li * REC] = ds->index[li];
        for (int s = 0; s < GT_SPLIT_COUNT; s++) sendb[li * REC + 1 + s] = ds->items[li].sp[s].n_kept;
    }
    int64_t total = 0;
    int64_t *recvb = gt_dist_allgatherv(sendb, mine, MPI_INT64_T, &total, "data: too many items to gather", comm);
    GT_ASSERT(total == (int64_t)ds->n_items_total * REC);
    const int H = ds->n_items_total;
    for (int s = 0; s < GT_SPLIT_COUNT; s++) ds->g_first[s] = GT_CALLOC((size_t)H + 1, sizeof(int64_t));
    for (int e = 0; e < H; e++) {
        int64_t f = recvb[e * REC];
        GT_ASSERT(f >= 0 && f < H);
        for (int s = 0; s < GT_SPLIT_COUNT; s++) ds->g_first[s][f + 1] = recvb[e * REC + 1 + s];
    }
    for (int s = 0; s < GT_SPLIT_COUNT; s++) {
        for (int f = 0; f < H; f++) ds->g_first[s][f + 1] += ds->g_first[s][f];
        ds->n_global[s] = ds->g_first[s][H];
    }
    ds->owner_local = GT_MALLOC(sizeof(int32_t) * (size_t)(H > 0 ? H : 1));
    for (int f = 0; f < H; f++) ds->owner_local[f] = -1;
    for (int li = 0; li < ds->n_items; li++) ds->owner_local[ds->index[li]] = li;
    free(sendb), free(recvb);

    gt_ds_compute_norm(ds, comm);

    gt_screen_summary g;
    gt_dataset_screen_summary(ds, comm, &g);
    const int64_t bytes = gt_dataset_bytes(ds);
    const int64_t bytes_sum = gt_dist_sum_i64(bytes, comm), bytes_max = gt_dist_max_i64(bytes, comm);
    if (rank == 0) {
        GT_INFO("data: %s windows (W=%lld) train %lld, val %lld, test %lld, holdout %lld over %d %s", ds->t->name,
                (long long)ds->W, (long long)ds->n_global[0], (long long)ds->n_global[1], (long long)ds->n_global[2],
                (long long)ds->n_global[3], H, ds->t->items);
        GT_INFO("data: screening (%s): %lld of %lld windows screened (gap %lld, spike %lld, event %lld); "
                "spikes found %lld, repaired %lld",
                ds->cfg.screen == GT_SCREEN_DROP ? "drop" : ds->cfg.screen == GT_SCREEN_REPAIR ? "repair" : "off",
                (long long)(g.windows_screened_gap + g.windows_screened_spike + g.windows_screened_event),
                (long long)g.windows_total, (long long)g.windows_screened_gap, (long long)g.windows_screened_spike,
                (long long)g.windows_screened_event, (long long)g.spikes_found, (long long)g.samples_repaired);
        if (g.windows_filtered)
            GT_INFO("data: condition filter (data.conditions, data.train_conditions): %lld windows outside the "
                    "selected conditions left out", (long long)g.windows_filtered);
        GT_INFO("data: pipeline memory %.1f MiB over %d rank(s) (max %.1f MiB per rank, series + window index; "
                "windows are views)",
                (double)bytes_sum / 1048576.0, size, (double)bytes_max / 1048576.0);
    }
    int n_usage = 0;
    gt_item_usage *usage = gt_dataset_usage(ds, comm, &n_usage);
    if (ds->ch_spikes) { /* per-channel spike and gap counts, over all ranks (for the log) */
        gt_dist_allreduce_sum_i64(ds->ch_spikes, ds->n_x, comm);
        gt_dist_allreduce_sum_i64(ds->ch_missing, ds->n_x, comm);
    }
    if (rank == 0) gt_ds_log_usage(ds, usage, n_usage, &g);
    free(usage);
    if (ds->t->norm_changed) ds->t->norm_changed(ds); /* the task's statistics derived from the new ones */
}

void gt_ds_check_cfg(const gt_data_config *cfg, const gt_data_task_i *t) {
    GT_CHECK(cfg->window >= 2, GT_EXIT_USAGE, "data: window must be >= 2 (got %d)", cfg->window);
    GT_CHECK(cfg->stride >= 0, GT_EXIT_USAGE, "data: stride must be >= 0 (got %lld)", (long long)cfg->stride);
    GT_CHECK(cfg->stride > 0 || cfg->stride_frac > 0, GT_EXIT_USAGE,
             "data: stride_frac must be > 0 when stride = 0 (got %g)", cfg->stride_frac);
    GT_CHECK(cfg->split_train > 0 && cfg->split_val >= 0 && cfg->split_train + cfg->split_val <= 1.0 + 1e-12,
             GT_EXIT_USAGE, "data: split fractions must satisfy train > 0, val >= 0, train + val <= 1 (got %g, %g)",
             cfg->split_train, cfg->split_val);
    GT_CHECK(cfg->holdout_every >= 0, GT_EXIT_USAGE, "data: holdout_every must be >= 0");
    GT_CHECK(cfg->screen >= GT_SCREEN_DROP && cfg->screen <= GT_SCREEN_OFF, GT_EXIT_USAGE, "data: bad screen action");
    GT_CHECK(cfg->screen == GT_SCREEN_OFF || cfg->spike_k > 0, GT_EXIT_USAGE, "data: spike_k must be > 0");
    t->check_cfg(cfg);
    for (int i = 0; i < GT_DATA_MAX_TASKS && cfg->task_slice[i].owner; i++) { /* the others' settings: unused */
        const gt_data_task_i *o = cfg->task_slice[i].owner;
        if (o != t && o->check_unused) o->check_unused(cfg);
    }
}

gt_dataset *gt_ds_new(const gt_data_task_i *t, const gt_data_config *cfg, int n_items,
                      int n_items_total, int n_cols, const int64_t *ts, float *x, const int32_t *index,
                      const int64_t *id) {
    gt_dataset *ds = GT_CALLOC(1, sizeof *ds);
    ds->t = t;
    ds->cfg = *cfg;
    ds->n_items = n_items;
    ds->n_items_total = n_items_total;
    ds->n_cols = n_cols;
    ds->n_x = 1;
    ds->gap_min = 1;
    ds->W = cfg->window;
    ds->ts = ts;
    ds->x = x;
    ds->index = index;
    ds->id = id;
    ds->items = GT_CALLOC((size_t)(n_items > 0 ? n_items : 1), sizeof(ds_item));
    return ds;
}

void gt_dataset_free(gt_dataset *ds) {
    if (!ds) return;
    if (ds->part) ds->t->free_part(ds->part);
    free(ds->items);
    free(ds->runs);
    free(ds->recs);
    free(ds->spike_rows);
    free(ds->cond_ok);
    for (int s = 0; s < GT_SPLIT_COUNT; s++) free(ds->g_first[s]);
    free(ds->owner_local);
    free(ds->ch_spike_test), free(ds->ch_spikes), free(ds->ch_missing);
    free(ds);
}

/* ------------------------------------------------------------- queries -- */

int64_t gt_dataset_n_x(const gt_dataset *ds) { return ds->W * ds->t->n_in(&ds->cfg, ds->n_cols); }
int64_t gt_dataset_n_y(const gt_dataset *ds) { return ds->t->n_y(ds); }
int gt_dataset_n_targets(const gt_dataset *ds) { return ds->n_cols; }
const gt_norm_stats *gt_dataset_norm(const gt_dataset *ds) { return &ds->norm; }
int64_t gt_dataset_norm_count(const gt_dataset *ds, int f) {
    return f >= 0 && f < ds->norm.n ? ds->norm_count[f] : 0;
}
const char *gt_dataset_target_name(const gt_dataset *ds, int t) {
    if (t < 0 || t >= ds->n_cols) return "?";
    return ds->t->target_name(ds, t);
}
double gt_dataset_min_period_s(const gt_dataset *ds) {
    double p = INFINITY;
    for (int li = 0; li < ds->n_items; li++) {
        double q = ds->t->period_s(ds, li);
        if (q > 0 && q < p) p = q;
    }
    return p;
}

const gt_norm_stats *gt_dataset_item_norm(const gt_dataset *ds, int li) {
    const gt_norm_stats *own = ds->t->item_norm ? ds->t->item_norm(ds, li) : NULL;
    return own ? own : &ds->norm;
}

void gt_dataset_set_norm(gt_dataset *ds, const gt_norm_stats *ns) {
    GT_CHECK(ns->n == ds->norm.n, GT_EXIT_USAGE, "data: normalisation has %d features, the data %d", ns->n,
             ds->norm.n);
    ds->norm = *ns;
    if (ds->t->norm_changed) ds->t->norm_changed(ds);
}
int64_t gt_dataset_n_windows_local(const gt_dataset *ds, gt_split s) { return ds->n_local[s]; }
int64_t gt_dataset_n_windows_global(const gt_dataset *ds, gt_split s) { return ds->n_global[s]; }

int64_t gt_dataset_batches_per_epoch(const gt_dataset *ds, gt_split s, int64_t g_batch) {
    GT_ASSERT(g_batch > 0);
    return ds->n_global[s] / g_batch;
}

int64_t gt_dataset_batch_local(const gt_dataset *ds, gt_split s, uint64_t epoch, int64_t k, int64_t g_batch,
                               int64_t *local_idx) {
    const int64_t N = ds->n_global[s];
    GT_ASSERT(g_batch > 0 && k >= 0);
    int64_t p0 = k * g_batch, p1 = p0 + g_batch < N ? p0 + g_batch : N;
    if (p0 >= N) return 0;
    gt_perm perm;
    gt_perm_init(&perm, (uint64_t)N, ds->cfg.seed, gt_stream(GT_STREAM_SHUFFLE, (uint32_t)s), epoch);
    const int64_t *gf = ds->g_first[s];
    int64_t n = 0;
    for (int64_t p = p0; p < p1; p++) {
        int64_t g = (int64_t)gt_perm_at(&perm, (uint64_t)p);
        int lo = 0, hi = ds->n_items_total; /* first file item with gf[f + 1] > g */
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (gf[mid + 1] <= g) lo = mid + 1;
            else hi = mid;
        }
        int li = ds->owner_local[lo];
        if (li < 0) continue;
        local_idx[n++] = ds->items[li].sp[s].local_first + (g - gf[lo]);
    }
    return n;
}

int64_t gt_dataset_local_range(const gt_dataset *ds, gt_split s, int64_t first, int64_t n, int64_t *local_idx) {
    if (first < 0) first = 0;
    if (first + n > ds->n_local[s]) n = ds->n_local[s] - first;
    if (n <= 0) return 0;
    for (int64_t i = 0; i < n; i++) local_idx[i] = first + i;
    return n;
}

void gt_dataset_fill(const gt_dataset *ds, gt_split s, const int64_t *idx, int64_t n, float *x, float *y,
                     float *mask, gt_window_ref *refs) {
    const int64_t W = ds->W;
    for (int64_t i = 0; i < n; i++) {
        int li;
        int64_t start;
        gt_ds_locate(ds, s, idx[i], &li, &start);
        const ds_item *it = &ds->items[li];
        const int64_t r0 = it->row0 + start;
        ds->t->fill(ds, li, start, r0, i, x, y, mask);
        if (refs) {
            refs[i].item = li;
            refs[i].file_index = ds->index[li];
            refs[i].id = ds->id[li];
            refs[i].start = start;
            refs[i].t_start_ms = ds->ts[r0];
            refs[i].t_end_ms = ds->ts[r0 + W - 1];
        }
    }
}

