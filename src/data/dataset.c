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

int64_t gt_dataset_series_bytes(gt_task task, int64_t rows, int64_t lowres_rows, int cols, int has_faults,
                                int time_features) {
    if (task == GT_TASK_NILM) {
        int64_t b = rows * (int64_t)(sizeof(int64_t) + sizeof(float) * (1 + cols + time_features));
        if (has_faults) b += rows;
        return b + lowres_rows * (int64_t)(sizeof(int64_t) + sizeof(float) * (1 + cols));
    }
    return rows * (int64_t)(sizeof(int64_t) + sizeof(float) * cols + 1);
}

static int64_t series_bytes(const gt_dataset *ds) {
    if (ds->nilm) {
        const gt_nilm_shard *s = ds->nilm;
        return gt_dataset_series_bytes(GT_TASK_NILM, s->n_rows, s->n_lowres_rows, s->n_appliances,
                                       s->fault_flags != NULL, ds->cfg.time_features);
    }
    const gt_pdm_shard *s = ds->pdm;
    return gt_dataset_series_bytes(GT_TASK_PDM, s->n_rows, 0, s->n_channels, 0, 0);
}

int64_t gt_dataset_bytes(const gt_dataset *ds) {
    int64_t b = series_bytes(ds);
    b += (int64_t)sizeof *ds + (int64_t)sizeof(ds_item) * ds->n_items;
    if (ds->strides) b += (int64_t)sizeof(int64_t) * ds->n_items * ds->n_cols;
    b += (int64_t)sizeof(ds_run) * ds->cap_runs + (int64_t)sizeof(ds_record) * ds->cap_recs;
    b += (int64_t)sizeof(int64_t) * (ds->cap_spike_rows + ds->cap_cond_ok);
    if (ds->item_norm) b += (int64_t)sizeof(gt_norm_stats) * ds->n_items;
    b += (int64_t)(GT_SPLIT_COUNT * sizeof(int64_t) + sizeof(int32_t)) * (ds->n_items_total + 1);
    return b;
}

/* Shared by both tasks once the series views and the items' grids are set. */
void gt_ds_log_usage(const gt_dataset *ds, const gt_item_usage *u, int n, const gt_screen_summary *g);

static void build(gt_dataset *ds, MPI_Comm comm) {
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
        GT_INFO("data: %s windows (W=%lld) train %lld, val %lld, test %lld, holdout %lld over %d %s",
                ds->task == GT_TASK_NILM ? "nilm" : "pdm", (long long)ds->W, (long long)ds->n_global[0],
                (long long)ds->n_global[1], (long long)ds->n_global[2], (long long)ds->n_global[3], H,
                ds->task == GT_TASK_NILM ? "households" : "turbines");
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
    if (ds->spikes_ch) { /* pdm: per-channel spike and gap counts, over all ranks (for the log) */
        gt_dist_allreduce_sum_i64(ds->spikes_ch, ds->n_cols, comm);
        gt_dist_allreduce_sum_i64(ds->nan_ch, ds->n_cols, comm);
    }
    if (rank == 0) gt_ds_log_usage(ds, usage, n_usage, &g);
    free(usage);
}

static void check_cfg(const gt_data_config *cfg, gt_task task) {
    GT_CHECK(cfg->task == task, GT_EXIT_USAGE, "data: config task does not match the file kind");
    GT_CHECK(cfg->window >= 2, GT_EXIT_USAGE, "data: window must be >= 2 (got %d)", cfg->window);
    GT_CHECK(cfg->stride >= 0, GT_EXIT_USAGE, "data: stride must be >= 0 (got %lld)", (long long)cfg->stride);
    GT_CHECK(task == GT_TASK_NILM || cfg->stride > 0, GT_EXIT_USAGE,
             "data: pdm needs a fixed stride > 0 (per-appliance strides are for nilm)");
    GT_CHECK(cfg->stride > 0 || cfg->stride_frac > 0, GT_EXIT_USAGE,
             "data: stride_frac must be > 0 when stride = 0 (got %g)", cfg->stride_frac);
    GT_CHECK(cfg->split_train > 0 && cfg->split_val >= 0 && cfg->split_train + cfg->split_val <= 1.0 + 1e-12,
             GT_EXIT_USAGE, "data: split fractions must satisfy train > 0, val >= 0, train + val <= 1 (got %g, %g)",
             cfg->split_train, cfg->split_val);
    GT_CHECK(cfg->holdout_every >= 0, GT_EXIT_USAGE, "data: holdout_every must be >= 0");
    GT_CHECK(task == GT_TASK_PDM || cfg->care_event < 0, GT_EXIT_USAGE,
             "data: data.care_event selects a CARE to Compare event dataset of a wind-farm (pdm) file");
    GT_CHECK(cfg->screen >= GT_SCREEN_DROP && cfg->screen <= GT_SCREEN_OFF, GT_EXIT_USAGE, "data: bad screen action");
    GT_CHECK(cfg->screen == GT_SCREEN_OFF || cfg->spike_k > 0, GT_EXIT_USAGE, "data: spike_k must be > 0");
    GT_CHECK(cfg->time_features == 0 || cfg->time_features == 2 || cfg->time_features == 4, GT_EXIT_USAGE,
             "data: time_features must be 0, 2 or 4 channels (got %d)", cfg->time_features);
    GT_CHECK(task == GT_TASK_NILM || cfg->time_features == 0, GT_EXIT_USAGE,
             "data.time_features is for nilm data (wind-farm inputs are the sensor channels)");
    GT_CHECK(cfg->augment >= 0 && cfg->augment <= 1, GT_EXIT_USAGE, "data.augment must be in [0, 1] (got %g)",
             cfg->augment);
    GT_CHECK(task == GT_TASK_NILM || cfg->augment == 0, GT_EXIT_USAGE,
             "data.augment is for nilm data (it superimposes appliance activations)");
    char err[600];
    GT_CHECK(gt_data_timezone_check(cfg->timezone, err, sizeof err) == 0, GT_EXIT_USAGE, "data.timezone: %s", err);
}

uint32_t gt_data_appliance_mask(const char *names, const gt_io_appliance *meta, int A) {
    uint32_t all = A >= 32 ? 0xffffffffu : (1u << A) - 1u;
    if (!names || !names[0] || !strcmp(names, "all")) return all;
    uint32_t mask = 0;
    const char *p = names;
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '+') p++;
        size_t n = strcspn(p, ",+ ");
        if (!n) break;
        int found = -1;
        for (int a = 0; a < A; a++)
            if (strlen(meta[a].name) == n && !strncmp(meta[a].name, p, n)) found = a;
        if (found < 0) {
            char known[1024] = "";
            for (int a = 0; a < A; a++) {
                strncat(known, a ? ", " : "", sizeof known - strlen(known) - 1);
                strncat(known, meta[a].name, sizeof known - strlen(known) - 1);
            }
            GT_FAIL(GT_EXIT_USAGE, "data.appliances: no appliance '%.*s' in the file (it has: %s)", (int)n, p, known);
        }
        mask |= 1u << found;
        p += n;
    }
    return mask;
}

/* The fields both kinds share; the caller attaches its shard. */
static gt_dataset *ds_new(gt_task task, const gt_data_config *cfg, int n_items, int n_items_total, int n_cols,
                          const int64_t *ts, float *x, const int32_t *index, const int64_t *id) {
    gt_dataset *ds = GT_CALLOC(1, sizeof *ds);
    ds->task = task;
    ds->cfg = *cfg;
    ds->n_items = n_items;
    ds->n_items_total = n_items_total;
    ds->n_cols = n_cols;
    ds->W = cfg->window;
    ds->ts = ts;
    ds->x = x;
    ds->index = index;
    ds->id = id;
    ds->items = GT_CALLOC((size_t)(n_items > 0 ? n_items : 1), sizeof(ds_item));
    return ds;
}


gt_dataset *gt_dataset_nilm(gt_nilm_shard *shard, const gt_data_config *cfg, MPI_Comm comm) {
    check_cfg(cfg, GT_TASK_NILM);
    const int A = shard->n_appliances;
    GT_CHECK(A >= 1 && A <= GT_DATA_MAX_TARGETS, GT_EXIT_DATA, "data: %d appliances (1..%d supported)", A,
             GT_DATA_MAX_TARGETS);
    gt_dataset *ds = ds_new(GT_TASK_NILM, cfg, shard->n_households, shard->n_households_total, A, shard->timestamps,
                            shard->aggregate, shard->index, shard->id);
    ds->nilm = shard;
    ds->app = shard->appliances;
    gt_ds_time_features(ds, shard->row_offset[shard->n_households]);
    ds->strides = GT_MALLOC(sizeof(int64_t) * (size_t)(ds->n_items > 0 ? ds->n_items : 1) * (size_t)A);
    ds->app_mask = gt_data_appliance_mask(cfg->appliances, shard->meta, shard->n_appliances);
    for (int li = 0; li < ds->n_items; li++) {
        int64_t *st = ds->strides + (int64_t)li * A, base;
        if (cfg->stride > 0) {
            base = cfg->stride;
            for (int a = 0; a < A; a++) st[a] = base;
        } else {
            /* per-appliance strides from the typical on-duration (the field
             * reports' adaptive overlap instead of a fixed 90% overlap); each
             * rounded to a multiple of the smallest selected one, so the window
             * set (the union over appliances) is exactly the grid of the
             * smallest. The multi-output models compute every appliance in
             * every window, so by default every window also trains every
             * appliance (stride_mask = 0): masking a long appliance's target
             * to its own stride saves no compute and leaves it few targets
             * (a washing machine 1 window in 35 at the defaults). */
            base = INT64_MAX;
            for (int a = 0; a < A; a++) {
                int64_t sa = llround(cfg->stride_frac * shard->meta[a].on_duration_s / shard->period_s[li]);
                st[a] = sa < 1 ? 1 : sa;
                if (st[a] < base && (ds->app_mask >> a & 1u)) base = st[a];
            }
            if (base == INT64_MAX) base = 1; /* no appliance selected: refused by gt_data_appliance_mask */
            for (int a = 0; a < A; a++) {
                int64_t m = llround((double)st[a] / (double)base);
                st[a] = cfg->stride_mask ? (m < 1 ? 1 : m) * base : base;
            }
        }
        gt_ds_plan_item(ds, li, shard->row_offset[li], shard->row_offset[li + 1] - shard->row_offset[li], base);
        /* short holes of the aggregate (timestamp jitter) filled for the model input: before
         * screening, so only real gaps screen windows; the targets keep their NaN (masked) */
        ds->items[li].filled = gt_data_fill_holes(ds->x + ds->items[li].row0, ds->items[li].n_rows,
                                                  gt_data_fill_max_rows(cfg, shard->period_s[li]));
    }
    build(ds, comm);
    if (cfg->augment > 0) gt_ds_find_activations(ds);
    return ds;
}

gt_dataset *gt_dataset_pdm(gt_pdm_shard *shard, const gt_data_config *cfg, MPI_Comm comm) {
    check_cfg(cfg, GT_TASK_PDM);
    const int C = shard->n_channels;
    GT_CHECK(C >= 1 && C <= GT_DATA_MAX_CHANNELS, GT_EXIT_DATA, "data: %d channels (1..%d supported)", C,
             GT_DATA_MAX_CHANNELS);
    gt_dataset *ds = ds_new(GT_TASK_PDM, cfg, shard->n_turbines, shard->n_turbines_total, C, shard->timestamps,
                            shard->signals, shard->index, shard->id);
    ds->pdm = shard;
    ds->labels = shard->labels;
    ds->spike_ch = GT_CALLOC((size_t)C, 1);
    ds->spikes_ch = GT_CALLOC((size_t)C, sizeof(int64_t));
    ds->nan_ch = GT_CALLOC((size_t)C, sizeof(int64_t));
    for (int c = 0; c < C; c++)
        ds->spike_ch[c] = (uint8_t)gt_data_spike_channel(cfg, shard->channels[c].name, shard->channels[c].desc,
                                                          shard->channels[c].unit);
    if (cfg->pdm_target == GT_PDM_TARGET_NBM) {
        ds->nbm_role = GT_CALLOC((size_t)C, 1);
        gt_data_nbm_roles(cfg, shard->channels, C, ds->nbm_role, &ds->nbm_n_in, &ds->nbm_n_tg);
    }
    for (int li = 0; li < ds->n_items; li++)
        gt_ds_plan_item(ds, li, shard->row_offset[li], shard->row_offset[li + 1] - shard->row_offset[li], cfg->stride);
    build(ds, comm);
    gt_ds_item_norms(ds);
    return ds;
}

void gt_dataset_free(gt_dataset *ds) {
    if (!ds) return;
    if (ds->nilm) gt_nilm_shard_free(ds->nilm);
    if (ds->pdm) gt_pdm_shard_free(ds->pdm);
    free(ds->items);
    free(ds->strides);
    free(ds->tfeat);
    free(ds->runs);
    free(ds->recs);
    free(ds->spike_rows);
    free(ds->cond_ok);
    for (int s = 0; s < GT_SPLIT_COUNT; s++) free(ds->g_first[s]);
    free(ds->owner_local);
    free(ds->acts), free(ds->act_off);
    free(ds->spike_ch), free(ds->spikes_ch), free(ds->nan_ch), free(ds->nbm_role), free(ds->item_norm);
    free(ds);
}

/* ------------------------------------------------------------- queries -- */

int64_t gt_dataset_n_x(const gt_dataset *ds) { return ds->W * gt_data_config_n_in(&ds->cfg, ds->n_cols); }
int64_t gt_dataset_n_y(const gt_dataset *ds) { return ds->task == GT_TASK_NILM ? ds->n_cols : 0; }
int gt_dataset_n_targets(const gt_dataset *ds) { return ds->n_cols; }
const gt_norm_stats *gt_dataset_norm(const gt_dataset *ds) { return &ds->norm; }
int64_t gt_dataset_norm_count(const gt_dataset *ds, int f) {
    return f >= 0 && f < ds->norm.n ? ds->norm_count[f] : 0;
}
const char *gt_dataset_target_name(const gt_dataset *ds, int t) {
    if (t < 0 || t >= ds->n_cols) return "?";
    if (ds->task == GT_TASK_NILM && ds->nilm) return ds->nilm->meta[t].name;
    if (ds->task == GT_TASK_PDM && ds->pdm) return ds->pdm->channels[t].name;
    return "?";
}
double gt_dataset_min_period_s(const gt_dataset *ds) {
    double p = INFINITY;
    for (int li = 0; li < ds->n_items; li++) {
        double q = ds->task == GT_TASK_NILM ? (ds->nilm ? ds->nilm->period_s[li] : NAN)
                                            : (ds->pdm && ds->pdm->rate_hz[li] > 0 ? 1.0 / ds->pdm->rate_hz[li] : NAN);
        if (q > 0 && q < p) p = q;
    }
    return p;
}

const gt_norm_stats *gt_dataset_item_norm(const gt_dataset *ds, int li) {
    return ds->item_norm ? &ds->item_norm[li] : &ds->norm;
}

const uint8_t *gt_dataset_nbm_roles(const gt_dataset *ds, int *n_inputs, int *n_targets) {
    *n_inputs = ds->nbm_n_in;
    *n_targets = ds->nbm_n_tg;
    return ds->nbm_role;
}

float gt_dataset_on_threshold(const gt_dataset *ds, int a) {
    GT_ASSERT(ds->task == GT_TASK_NILM && a >= 0 && a < ds->n_cols);
    return (float)(((double)ds->nilm->meta[a].on_power_w - ds->norm.mean[1 + a]) / ds->norm.std[1 + a]);
}
void gt_dataset_set_norm(gt_dataset *ds, const gt_norm_stats *ns) {
    GT_CHECK(ns->n == ds->norm.n, GT_EXIT_USAGE, "data: normalisation has %d features, the data %d", ns->n,
             ds->norm.n);
    ds->norm = *ns;
    gt_ds_item_norms(ds);
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
    const gt_norm_stats *ns = &ds->norm;
    for (int64_t i = 0; i < n; i++) {
        int li;
        int64_t start;
        gt_ds_locate(ds, s, idx[i], &li, &start);
        const ds_item *it = &ds->items[li];
        const int64_t r0 = it->row0 + start;
        if (ds->task == GT_TASK_NILM) {
            const int A = ds->n_cols;
            const double m0 = ns->mean[0], inv0 = 1.0 / ns->std[0];
            const int F = ds->cfg.time_features, Cin = 1 + F;
            const int last = ds->cfg.x_channels_last;
            float *xi = x + i * W * Cin; // (Cin, W) or (W, Cin)
            for (int64_t t = 0; t < W; t++) {
                xi[gt_data_x_offset(last, W, Cin, t, 0)] = (float)(((double)ds->x[r0 + t] - m0) * inv0);
                for (int f = 0; f < F; f++) xi[gt_data_x_offset(last, W, Cin, t, 1 + f)] = ds->tfeat[(r0 + t) * F + f];
            }
            const int64_t mid = r0 + W / 2;
            const int64_t *st = ds->strides + (int64_t)li * A;
            for (int a = 0; a < A; a++) {
                float v = ds->app[mid * A + a];
                int ok = isfinite(v) && start % st[a] == 0 && (ds->app_mask >> a & 1u);
                y[i * A + a] = ok ? (float)(((double)v - ns->mean[1 + a]) / ns->std[1 + a]) : 0.0f;
                mask[i * A + a] = ok ? 1.0f : 0.0f;
            }
        } else {
            const int C = ds->n_cols;
            ns = gt_dataset_item_norm(ds, li); /* data.norm = turbine: the item's own statistics */
            float *xi = x + i * W * C; // (T, C)
            for (int64_t t = 0; t < W; t++)
                for (int c = 0; c < C; c++)
                    xi[t * C + c] = (float)(((double)ds->x[(r0 + t) * C + c] - ns->mean[c]) / ns->std[c]);
        }
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

