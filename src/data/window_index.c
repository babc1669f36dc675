/* data/window_index.c: screening and the window index of each item (see
 * dataset.h).
 *
 * Layout of the index. For every local item and split: the rows [lo, hi) of the
 * split, a grid of candidate window starts (first + j * base, j < n_grid, each
 * window [s, s + W) inside [lo, hi), so no window crosses a split boundary), and
 * the screened grid positions as sorted runs (j0, n) with the number of
 * screened windows before each run. The k-th kept window is found by a binary
 * search over the runs: a few dozen bytes per item plus 24 bytes per run of
 * screened windows, never per window, and never a copy of the window's data.
 *
 * Screening (per item, on every channel of the input x, as the task's open
 * described it in the dataset: NILM's aggregate, PdM's channels):
 *   gap    a row with at least ds->gap_min non-finite channels (NILM: a
 *          missing aggregate sample; PdM: a missing record), unless it is
 *          one of a run of at most ds->short_gap such rows between two rows;
 *   spike  a Hampel filter over the 7 centred samples: |x - median| >
 *          spike_k * max(1.4826 * MAD, sigma_item), where sigma_item (the
 *          item's noise from its first differences, and a quarter of its own
 *          robust spread; see item_sigma) keeps a flat stretch (a stuck meter,
 *          an idle channel) from flagging every small change and genuine
 *          short loads from passing for glitches. It finds isolated spikes of
 *          1-3 samples; a level that
 *          lasts 4 samples or more moves the median and is a real load. Rows
 *          inside a labelled event (ds->events, PdM's labels) are never
 *          spikes (a gearbox shock is the anomaly the detector must see, not
 *          a glitch to remove); only channels of ds->ch_spike_test are tested.
 *   event  with ds->train_skips_events (PdM's data.train_normal_only): a
 *          TRAIN or VAL window touching an event row.
 * A window is screened for the first of gap, spike, event it touches; a
 * window touching a row the task's row filter leaves out (t->filter_rows) is
 * filtered, not screened. */
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

static void push_run(gt_dataset *ds, ds_run r) {
    if (ds->n_runs == ds->cap_runs) {
        ds->cap_runs = ds->cap_runs ? 2 * ds->cap_runs : 64;
        ds->runs = GT_REALLOC(ds->runs, sizeof(ds_run) * (size_t)ds->cap_runs);
    }
    ds->runs[ds->n_runs++] = r;
}
static void push_rec(gt_dataset *ds, ds_record r) {
    if (ds->n_recs == ds->cap_recs) {
        ds->cap_recs = ds->cap_recs ? 2 * ds->cap_recs : 64;
        ds->recs = GT_REALLOC(ds->recs, sizeof(ds_record) * (size_t)ds->cap_recs);
    }
    ds->recs[ds->n_recs++] = r;
}
static void push_cond_ok(gt_dataset *ds, int64_t a, int64_t b) {
    if (ds->n_cond_ok + 2 > ds->cap_cond_ok) {
        ds->cap_cond_ok = ds->cap_cond_ok ? 2 * ds->cap_cond_ok : 64;
        ds->cond_ok = GT_REALLOC(ds->cond_ok, sizeof(int64_t) * (size_t)ds->cap_cond_ok);
    }
    ds->cond_ok[ds->n_cond_ok++] = a;
    ds->cond_ok[ds->n_cond_ok++] = b;
}
static void push_spike_row(gt_dataset *ds, int64_t row) {
    if (ds->n_spike_rows == ds->cap_spike_rows) {
        ds->cap_spike_rows = ds->cap_spike_rows ? 2 * ds->cap_spike_rows : 64;
        ds->spike_rows = GT_REALLOC(ds->spike_rows, sizeof(int64_t) * (size_t)ds->cap_spike_rows);
    }
    ds->spike_rows[ds->n_spike_rows++] = row;
}

static int cmp_f(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* sorts v[m] (m <= 2 * HAMPEL_HALF + 1) and returns its lower median */
static float small_median(float *v, int m) {
    for (int i = 1; i < m; i++) {
        float t = v[i];
        int j = i - 1;
        while (j >= 0 && v[j] > t) v[j + 1] = v[j], j--;
        v[j + 1] = t;
    }
    return v[(m - 1) / 2];
}

/* The item's floor of the spike scale, from up to 65536 evenly spaced samples
 * of x[i*stride] (i < n, finite values only): the largest of
 *   1.4826 * MAD of the first differences (the noise: a flat stretch does not
 *       flag every small change),
 *   0.25 * 1.4826 * MAD of the values (the item's own spread: a genuine short
 *       load of a few hundred watts in a household whose load varies by
 *       kilowatts is not a glitch; meter spikes are tens of kW),
 *   1e-3 * mean|x| + 1e-6. */
static double item_sigma(const float *x, int64_t n, int64_t stride) {
    const int64_t cap = 65536;
    int64_t step = n / cap + 1, m = 0, mv = 0;
    float *d = GT_MALLOC(sizeof(float) * (size_t)cap), *v = GT_MALLOC(sizeof(float) * (size_t)cap);
    double sum_abs = 0;
    for (int64_t i = 0; i < n && mv < cap; i += step) {
        float b = x[i * stride];
        if (!isfinite(b)) continue;
        v[mv++] = b;
        sum_abs += fabs(b);
        float a = i > 0 ? x[(i - 1) * stride] : NAN;
        if (isfinite(a)) d[m++] = b - a;
    }
    double s = 0, floor_ = 1e-6;
    float *arr[2] = {d, v};
    int64_t cnt[2] = {m, mv};
    double w[2] = {1.0, 0.25};
    for (int k = 0; k < 2; k++) {
        if (cnt[k] == 0) continue;
        float *a = arr[k];
        qsort(a, (size_t)cnt[k], sizeof(float), cmp_f);
        float med = a[cnt[k] / 2];
        for (int64_t i = 0; i < cnt[k]; i++) a[i] = fabsf(a[i] - med);
        qsort(a, (size_t)cnt[k], sizeof(float), cmp_f);
        double sk = w[k] * 1.4826 * a[cnt[k] / 2];
        if (sk > s) s = sk;
    }
    if (mv > 0) floor_ += 1e-3 * sum_abs / (double)mv;
    free(d);
    free(v);
    return s > floor_ ? s : floor_;
}

/* Hampel filter of one channel x[i*stride], i < n. Rows whose flags have
 * F_EVENT set are never spikes when skip_events. Marks F_SPIKE_SEEN (and
 * F_SPIKE when !repair) in flags; with repair replaces the sample by the local
 * median. Returns the number of spike samples. */
static int64_t hampel(float *x, int64_t n, int64_t stride, double k, double min_dev, int repair, int skip_events,
                      uint8_t *flags) {
    const double sigma = item_sigma(x, n, stride);
    const double thr_floor = k * sigma > min_dev ? k * sigma : min_dev;
    int64_t found = 0;
    float v[2 * HAMPEL_HALF + 1];
    for (int64_t i = 0; i < n; i++) {
        float xi = x[i * stride];
        if (!isfinite(xi) || (skip_events && (flags[i] & F_EVENT))) continue;
        int64_t a = i - HAMPEL_HALF < 0 ? 0 : i - HAMPEL_HALF;
        int64_t b = i + HAMPEL_HALF + 1 > n ? n : i + HAMPEL_HALF + 1;
        int m = 0, near = 0;
        for (int64_t j = a; j < b; j++) {
            float xj = x[j * stride];
            if (!isfinite(xj)) continue;
            v[m++] = xj;
            near += fabs((double)xj - xi) <= thr_floor;
        }
        /* more than half of the window within thr_floor of x_i puts the median
         * there too: x_i cannot pass the (larger) threshold; the common case */
        if (m < 3 || 2 * near > m) continue;
        float med = small_median(v, m);
        for (int j = 0; j < m; j++) v[j] = fabsf(v[j] - med);
        double mad = 1.4826 * small_median(v, m);
        double scale = mad > sigma ? mad : sigma;
        if (fabs((double)xi - med) > k * scale && fabs((double)xi - med) > min_dev) {
            found++;
            flags[i] |= F_SPIKE_SEEN;
            if (repair) x[i * stride] = med;
            else flags[i] |= F_SPIKE;
        }
    }
    return found;
}

static int64_t ts_at(const gt_dataset *ds, const ds_item *it, int64_t row) { return ds->ts[it->row0 + row]; }

/* The task's row filter: rows no window may touch (F_OFFCOND) or no train
 * or val window (F_OFFTRAIN), and the row ranges passing both. */
static void flag_filtered(gt_dataset *ds, int li, const ds_item *it, int64_t n, uint8_t *flags) {
    if (!ds->t->filter_rows || !ds->t->filter_rows(ds, li, flags)) return;
    ds->rows_filtered = 1;
    /* row ranges passing both (the moments: train rows only), in increasing row order */
    for (int64_t i = 0; i < n; i++) {
        if (flags[i] & (F_OFFCOND | F_OFFTRAIN)) continue;
        int64_t e = i;
        while (e < n && !(flags[e] & (F_OFFCOND | F_OFFTRAIN))) e++;
        push_cond_ok(ds, it->row0 + i, it->row0 + e);
        i = e;
    }
}

/* Gap rows (F_GAP), the imputed samples' count, and short gaps imputed. */
static void flag_gaps(gt_dataset *ds, int64_t n, int C, const float *x, uint8_t *flags) {
    /* gap rows: at least ds->gap_min of the row's channels non-finite (the task's open: one
     * missing sample of a single-channel input; a missing record of many); fewer are imputed */
    const int gap_min = ds->gap_min;
    for (int64_t i = 0; i < n; i++) {
        int miss = 0;
        for (int c = 0; c < C; c++)
            if (!isfinite(x[i * C + c])) {
                miss++;
                if (ds->ch_missing) ds->ch_missing[c]++;
            }
        if (miss >= gap_min) flags[i] |= F_GAP;
        else if (miss) ds->screen_local.samples_imputed += miss;
    }
    /* a short run of gap rows (telemetry dropped a record or two) between two rows is imputed like
     * missing samples (the input gets the training mean, loss and score leave it out), not
     * screened; a run at the item's start or end has no row on one side: a gap */
    for (int64_t i = 0; ds->short_gap > 0 && i < n; i++) {
        if (!(flags[i] & F_GAP)) continue;
        int64_t e = i;
        while (e < n && (flags[e] & F_GAP)) e++;
        if (e - i <= ds->short_gap && i > 0 && e < n)
            for (int64_t r = i; r < e; r++) {
                flags[r] &= (uint8_t)~F_GAP;
                for (int c = 0; c < C; c++) ds->screen_local.samples_imputed += !isfinite(x[r * C + c]);
            }
        i = e;
    }
}

/* data.screen: spikes per channel (F_SPIKE, repaired in place with repair), their rows and records. */
static void flag_spikes(gt_dataset *ds, int li, const ds_item *it, int64_t n, int C, float *x, uint8_t *flags) {
    const gt_data_config *cfg = &ds->cfg;
    int64_t found = 0;
    for (int c = 0; c < C; c++) {
        if (ds->ch_spike_test && !ds->ch_spike_test[c]) continue; /* a channel the spike test does not suit */
        /* a deviation under ds->spike_min_dev is no spike (the task's open: a household's loads
         * under data.spike_min_w are a microwave's defrost pulses, a drum's spin, not glitches) */
        int64_t fc = hampel(x + c, n, C, cfg->spike_k, ds->spike_min_dev, cfg->screen == GT_SCREEN_REPAIR,
                            ds->events != NULL, flags);
        if (ds->ch_spikes) ds->ch_spikes[c] += fc;
        found += fc;
    }
    ds->screen_local.spikes_found += found;
    if (cfg->screen == GT_SCREEN_REPAIR) ds->screen_local.samples_repaired += found;
    /* spike rows: for the moments and one record per contiguous run */
    int reason = cfg->screen == GT_SCREEN_REPAIR ? R_SPIKE_REPAIRED : R_SPIKE_FOUND;
    for (int64_t i = 0; i < n; i++) {
        if (!(flags[i] & F_SPIKE_SEEN)) continue;
        push_spike_row(ds, it->row0 + i);
        int64_t e = i;
        while (e + 1 < n && (flags[e + 1] & F_SPIKE_SEEN)) push_spike_row(ds, it->row0 + ++e);
        push_rec(ds, (ds_record){ds->index[li], reason, ds->id[li], ts_at(ds, it, i), ts_at(ds, it, e)});
        i = e;
    }
}

/* One split of one item: its windows kept, its exclusion runs and report records. */
static void index_split(gt_dataset *ds, int li, ds_item *it, int s, const uint8_t *flags) {
    const int64_t W = ds->W;
    ds_split *sp = &it->sp[s];
    sp->run_off = ds->n_runs;
    sp->n_runs = 0;
    sp->n_kept = 0;
    ds->screen_local.windows_total += sp->n_grid;
    it->n_total += sp->n_grid;
    uint8_t active = F_GAP | F_SPIKE | F_OFFCOND;
    if (ds->train_skips_events && (s == GT_SPLIT_TRAIN || s == GT_SPLIT_VAL)) active |= F_EVENT;
    if (s == GT_SPLIT_TRAIN || s == GT_SPLIT_VAL) active |= F_OFFTRAIN; /* set by the task's row filter */
    int64_t cnt[4] = {0, 0, 0, 0}; /* gap, spike, event, off-condition rows in the window [wa, wb) */
    int64_t wa = 0, wb = 0, n_screened = 0;
    int64_t rec_j = -2;
    int rec_reason = -1;
    for (int64_t j = 0; j < sp->n_grid; j++) {
        int64_t s0 = sp->first + j * it->base, e0 = s0 + W;
        if (s0 >= wb) {
            cnt[0] = cnt[1] = cnt[2] = cnt[3] = 0;
            wa = wb = s0;
        }
        for (; wa < s0; wa++) {
            uint8_t f = flags[wa] & active;
            cnt[0] -= (f & F_GAP) != 0, cnt[1] -= (f & F_SPIKE) != 0, cnt[2] -= (f & F_EVENT) != 0;
            cnt[3] -= (f & (F_OFFCOND | F_OFFTRAIN)) != 0;
        }
        for (; wb < e0; wb++) {
            uint8_t f = flags[wb] & active;
            cnt[0] += (f & F_GAP) != 0, cnt[1] += (f & F_SPIKE) != 0, cnt[2] += (f & F_EVENT) != 0;
            cnt[3] += (f & (F_OFFCOND | F_OFFTRAIN)) != 0;
        }
        int reason = cnt[3] ? R_COUNT : cnt[0] ? R_GAP : cnt[1] ? R_SPIKE : cnt[2] ? R_EVENT : -1;
        if (reason < 0) {
            sp->n_kept++;
            continue;
        }
        if (reason == R_COUNT) { /* condition filter: excluded, not screened (no record) */
            ds_run *last = sp->n_runs ? &ds->runs[ds->n_runs - 1] : NULL;
            if (last && last->j0 + last->n == j) last->n++;
            else {
                push_run(ds, (ds_run){j, 1, n_screened});
                sp->n_runs++;
            }
            n_screened++;
            ds->screen_local.windows_filtered++;
            it->n_filtered++;
            continue;
        }
        if (reason == R_GAP) ds->screen_local.windows_screened_gap++, it->n_gap++;
        else if (reason == R_SPIKE) ds->screen_local.windows_screened_spike++, it->n_spike++;
        else ds->screen_local.windows_screened_event++, it->n_event++;
        /* exclusion runs (any reason) */
        ds_run *last = sp->n_runs ? &ds->runs[ds->n_runs - 1] : NULL;
        if (last && last->j0 + last->n == j) last->n++;
        else {
            push_run(ds, (ds_run){j, 1, n_screened});
            sp->n_runs++;
        }
        n_screened++;
        /* report records (per reason) */
        if (rec_j == j - 1 && rec_reason == reason) ds->recs[ds->n_recs - 1].end_ms = ts_at(ds, it, e0 - 1);
        else push_rec(ds, (ds_record){ds->index[li], reason, ds->id[li], ts_at(ds, it, s0), ts_at(ds, it, e0 - 1)});
        rec_j = j;
        rec_reason = reason;
    }
}

/* Flags, screened runs and records of one item (flags: [n_rows] scratch). */
void gt_ds_index_item(gt_dataset *ds, int li, uint8_t *flags) {
    ds_item *it = &ds->items[li];
    const gt_data_config *cfg = &ds->cfg;
    const int64_t n = it->n_rows;
    const int C = ds->n_x;
    float *x = ds->x + it->row0 * C;
    memset(flags, 0, (size_t)n);
    if (ds->events)
        for (int64_t i = 0; i < n; i++) flags[i] = ds->events[it->row0 + i] ? F_EVENT : 0;
    flag_filtered(ds, li, it, n, flags);
    flag_gaps(ds, n, C, x, flags);
    if (cfg->screen != GT_SCREEN_OFF) flag_spikes(ds, li, it, n, C, x, flags);
    for (int s = 0; s < GT_SPLIT_COUNT; s++) index_split(ds, li, it, s, flags);
}

/* Grid positions of every split of one item. */
void gt_ds_plan_item(gt_dataset *ds, int li, int64_t row0, int64_t n_rows, int64_t base) {
    ds_item *it = &ds->items[li];
    const gt_data_config *cfg = &ds->cfg;
    it->row0 = row0;
    it->n_rows = n_rows;
    it->base = base;
    gt_data_item_rows rows;
    gt_data_item_rows_of(cfg, n_rows, ds->index[li], &rows);
    it->holdout = rows.holdout;
    it->excluded = rows.excluded || !gt_data_filter_has(&cfg->items, ds->id[li]);
    if (ds->t->item_excluded) it->excluded |= ds->t->item_excluded(ds, li);
    int64_t lo[GT_SPLIT_COUNT], hi[GT_SPLIT_COUNT];
    for (int s = 0; s < GT_SPLIT_COUNT; s++) {
        lo[s] = it->excluded ? 0 : rows.lo[s];
        hi[s] = it->excluded ? 0 : rows.hi[s];
    }
    for (int s = 0; s < GT_SPLIT_COUNT; s++) {
        ds_split *sp = &it->sp[s];
        memset(sp, 0, sizeof *sp);
        sp->lo = lo[s];
        sp->hi = hi[s];
        sp->first = (lo[s] + base - 1) / base * base;
        sp->n_grid = hi[s] - ds->W >= sp->first ? (hi[s] - ds->W - sp->first) / base + 1 : 0;
    }
}

/* Grid position of the k-th kept window of (item, split). */
int64_t gt_ds_kept_to_grid(const gt_dataset *ds, const ds_split *sp, int64_t k) {
    const ds_run *r = ds->runs + sp->run_off;
    int64_t lo = 0, hi = sp->n_runs; /* count runs with j0 - cum <= k */
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (r[mid].j0 - r[mid].cum <= k) lo = mid + 1;
        else hi = mid;
    }
    return lo > 0 ? k + r[lo - 1].cum + r[lo - 1].n : k;
}

/* local window number -> (item, start row) */
void gt_ds_locate(const gt_dataset *ds, gt_split s, int64_t l, int *item, int64_t *start) {
    GT_ASSERT(l >= 0 && l < ds->n_local[s]);
    int lo = 0, hi = ds->n_items; /* first item with local_first > l */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (ds->items[mid].sp[s].local_first <= l) lo = mid + 1;
        else hi = mid;
    }
    const ds_item *it = &ds->items[lo - 1];
    const ds_split *sp = &it->sp[s];
    int64_t k = l - sp->local_first;
    GT_ASSERT(k < sp->n_kept);
    *item = lo - 1;
    *start = sp->first + gt_ds_kept_to_grid(ds, sp, k) * it->base;
}

