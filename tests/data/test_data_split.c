/* Chronological splits, holdout items, window index, fill values, per-appliance
 * stride masks and the memory of the index, at P ranks (closed-form testgen
 * files, so every expectation is computed here from the formulas).
 *   - every window of a split lies inside the split's rows (never crosses a
 *     boundary), train < val < test in time, no window in two splits;
 *   - held-out items have only HOLDOUT windows, covering their whole time;
 *   - window counts per item and split equal the grid formula, globally too;
 *   - x/y equal the hand-normalised series at the window's rows / midpoint;
 *   - stride 0: starts on the smallest appliance stride, mask[a] = 1 exactly
 *     where start % stride_a == 0;
 *   - gt_dataset_bytes for a stride-1 window set is below 2x the series bytes
 *     and far below the bytes of materialised windows;
 *   - gt_data_item_split (the one split rule of dataset and eval) on hand
 *     cases: rounding, clamping, holdout. */
#include "pdm/pdm.h"
#include "nilm/nilm.h"
#include "data_test.h"

static void check_nilm_splits(const char *path, MPI_Comm comm, int H) {
    gt_data_config cfg;
    gt_nilm_data_defaults(&cfg);
    cfg.window = 31;
    cfg.stride = 1;
    cfg.holdout_every = 4; /* households 3 and 7 */
    gt_dataset *ds = gt_dataset_nilm(gt_nilm_shard_read(path, comm), &cfg, comm);
    const int64_t W = cfg.window;
    TEST_EQ_INT(gt_dataset_n_x(ds), W);
    TEST_EQ_INT(gt_dataset_n_y(ds), TG_NILM_A);
    TEST_EQ_INT(gt_dataset_n_targets(ds), TG_NILM_A);
    const gt_norm_stats *ns = gt_dataset_norm(ds);
    TEST_EQ_INT(ns->n, 1 + TG_NILM_A);

    int64_t expect_global[GT_SPLIT_COUNT] = {0};
    for (int h = 0; h < H; h++) {
        int64_t n = tg_nilm_rows(h), b1, b2;
        dt_bounds(n, cfg.split_train, cfg.split_val, &b1, &b2);
        if (h % 4 == 3) expect_global[GT_SPLIT_HOLDOUT] += dt_grid(0, n, W, 1);
        else {
            expect_global[0] += dt_grid(0, b1, W, 1);
            expect_global[1] += dt_grid(b1, b2, W, 1);
            expect_global[2] += dt_grid(b2, n, W, 1);
        }
    }
    int64_t bad = 0, bad_fill = 0, n_checked = 0;
    int64_t per_item[64][GT_SPLIT_COUNT];
    memset(per_item, 0, sizeof per_item);
    /* last row (exclusive) used by the previous split's windows, per item */
    int64_t prev_end[64], prev_tend[64];
    for (int h = 0; h < 64; h++) prev_end[h] = 0, prev_tend[h] = INT64_MIN;
    float x[64], y[TG_NILM_A], m[TG_NILM_A];
    for (int s = 0; s < GT_SPLIT_COUNT; s++) {
        TEST_EQ_INT(gt_dataset_n_windows_global(ds, s), expect_global[s]);
        int64_t n_loc;
        gt_window_ref *r = dt_local_refs(ds, s, &n_loc);
        int64_t split_max_end[64], split_min_start[64], split_min_t[64], split_max_t[64];
        for (int h = 0; h < 64; h++) split_max_end[h] = -1, split_min_start[h] = INT64_MAX,
                                     split_min_t[h] = INT64_MAX, split_max_t[h] = INT64_MIN;
        for (int64_t i = 0; i < n_loc; i++) {
            int h = r[i].file_index;
            int64_t n = tg_nilm_rows(h), b1, b2, lo, hi;
            dt_bounds(n, cfg.split_train, cfg.split_val, &b1, &b2);
            int hold = h % 4 == 3;
            if (hold) lo = s == GT_SPLIT_HOLDOUT ? 0 : -1, hi = n;
            else if (s == GT_SPLIT_TRAIN) lo = 0, hi = b1;
            else if (s == GT_SPLIT_VAL) lo = b1, hi = b2;
            else if (s == GT_SPLIT_TEST) lo = b2, hi = n;
            else lo = -1, hi = 0;
            bad += lo < 0 || r[i].start < lo || r[i].start + W > hi;
            bad += r[i].id != 1000 + h;
            int64_t pms = (int64_t)(tg_nilm_period(h) * 1000), t0 = TG_T0_MS + (int64_t)h * 60000;
            bad += r[i].t_start_ms != t0 + r[i].start * pms || r[i].t_end_ms != t0 + (r[i].start + W - 1) * pms;
            /* local order: items in file order, windows in time order, stride 1 */
            if (i > 0 && r[i - 1].file_index == h) bad += r[i].start != r[i - 1].start + 1;
            if (i > 0) bad += r[i].file_index < r[i - 1].file_index;
            per_item[h][s]++;
            if (r[i].start + W > split_max_end[h]) split_max_end[h] = r[i].start + W;
            if (r[i].start < split_min_start[h]) split_min_start[h] = r[i].start;
            if (r[i].t_start_ms < split_min_t[h]) split_min_t[h] = r[i].t_start_ms;
            if (r[i].t_end_ms > split_max_t[h]) split_max_t[h] = r[i].t_end_ms;
            /* fill: hand-normalised values (every 7th window to stay fast) */
            if (i % 7 == 0) {
                int64_t li = i;
                gt_dataset_fill(ds, s, &li, 1, x, y, m, NULL);
                for (int64_t t = 0; t < W; t++) {
                    double e = ((double)tg_agg(h, r[i].start + t) - ns->mean[0]) / ns->std[0];
                    bad_fill += fabs(x[t] - e) > 1e-5 * (1 + fabs(e));
                }
                int64_t mid = r[i].start + W / 2;
                for (int a = 0; a < TG_NILM_A; a++) {
                    double e = ((double)tg_app(h, mid, a) - ns->mean[1 + a]) / ns->std[1 + a];
                    bad_fill += fabs(y[a] - e) > 1e-5 * (1 + fabs(e)) || m[a] != 1.0f;
                }
                n_checked++;
            }
        }
        /* chronological: this split starts at or after the previous split's last row */
        for (int h = 0; h < 64; h++) {
            if (split_min_start[h] == INT64_MAX) continue;
            bad += split_min_start[h] < prev_end[h];
            bad += split_min_t[h] <= prev_tend[h];
            prev_end[h] = split_max_end[h];
            prev_tend[h] = split_max_t[h];
        }
        free(r);
    }
    TEST_EQ_INT(bad, 0);
    TEST_EQ_INT(bad_fill, 0);
    TEST_CHECK(n_checked > 0 || gt_dataset_n_windows_local(ds, GT_SPLIT_TRAIN) == 0);
    /* per-item counts: the grid of each split */
    int64_t bad_cnt = 0;
    for (int h = 0; h < H; h++) {
        int64_t n = tg_nilm_rows(h), b1, b2, tot = 0;
        dt_bounds(n, cfg.split_train, cfg.split_val, &b1, &b2);
        for (int s = 0; s < GT_SPLIT_COUNT; s++) tot += per_item[h][s];
        if (tot == 0) continue; /* another rank's household */
        if (h % 4 == 3) {
            bad_cnt += per_item[h][GT_SPLIT_HOLDOUT] != dt_grid(0, n, W, 1);
            bad_cnt += per_item[h][0] + per_item[h][1] + per_item[h][2] != 0;
        } else {
            bad_cnt += per_item[h][0] != dt_grid(0, b1, W, 1) || per_item[h][1] != dt_grid(b1, b2, W, 1) ||
                       per_item[h][2] != dt_grid(b2, n, W, 1) || per_item[h][3] != 0;
        }
    }
    TEST_EQ_INT(bad_cnt, 0);
    gt_dataset_free(ds);
}

/* stride 0: per-appliance strides from on_duration_s = 60 (a + 1) s; windows
 * start on the grid of the smallest selected appliance's stride (appliances
 * sel_lo.. selected). masked (data.stride_mask): appliance a's target counts
 * exactly where start % stride_a == 0 (strides rounded to multiples of the
 * grid); unmasked (the default): every selected appliance in every window. */
static void check_strides(const char *path, MPI_Comm comm, int masked, const char *select, int sel_lo) {
    gt_data_config cfg;
    gt_nilm_data_defaults(&cfg);
    cfg.window = 21;
    cfg.stride = 0;
    cfg.stride_frac = 0.35;
    gt_nilm_data_cfg_set(&cfg)->stride_mask = masked;
    gt_nilm_data_config *nc = gt_nilm_data_cfg_set(&cfg);
    snprintf(nc->appliances, sizeof nc->appliances, "%s", select);
    gt_dataset *ds = gt_dataset_nilm(gt_nilm_shard_read(path, comm), &cfg, comm);
    int64_t bad = 0, n_mask[TG_NILM_A] = {0}, n_expect[TG_NILM_A] = {0}, seen = 0, seen_expect = 0;
    float x[32], y[TG_NILM_A], m[TG_NILM_A];
    int done[64] = {0};
    for (int s = 0; s < GT_SPLIT_COUNT; s++) {
        int64_t n_loc = gt_dataset_n_windows_local(ds, s);
        for (int64_t i = 0; i < n_loc; i++) {
            gt_window_ref r;
            gt_dataset_fill(ds, s, &i, 1, x, y, m, &r);
            int h = r.file_index;
            int64_t st[TG_NILM_A], base = INT64_MAX;
            for (int a = 0; a < TG_NILM_A; a++) {
                st[a] = llround(0.35 * (60.0 * (a + 1)) / tg_nilm_period(h)); /* the code's order */
                if (st[a] < 1) st[a] = 1;
                if (a >= sel_lo && st[a] < base) base = st[a];
            }
            for (int a = 0; a < TG_NILM_A; a++) st[a] = masked ? llround((double)st[a] / base) * base : base;
            bad += r.start % base != 0;
            for (int a = 0; a < TG_NILM_A; a++) {
                bad += m[a] != (a >= sel_lo && r.start % st[a] == 0 ? 1.0f : 0.0f);
                n_mask[a] += m[a] == 1.0f;
            }
            if (!done[h]) { /* expected windows, and targets per appliance, of this household */
                done[h] = 1;
                int64_t n = tg_nilm_rows(h), b1, b2;
                dt_bounds(n, cfg.split_train, cfg.split_val, &b1, &b2);
                int64_t lo[3] = {0, b1, b2}, hi[3] = {b1, b2, n};
                for (int k = 0; k < 3; k++) {
                    seen_expect += dt_grid(lo[k], hi[k], cfg.window, base);
                    for (int a = sel_lo; a < TG_NILM_A; a++) n_expect[a] += dt_grid(lo[k], hi[k], cfg.window, st[a]);
                }
            }
            seen++;
        }
    }
    TEST_EQ_INT(bad, 0);
    TEST_EQ_INT(seen, seen_expect);
    TEST_CHECK(seen > 0);
    for (int a = 0; a < TG_NILM_A; a++) TEST_EQ_INT(n_mask[a], n_expect[a]);
    /* period 6 s, all selected, masked: strides 4, 8, 12, 16, 20 (3.5 (a+1) rounded, then to multiples of 4) */
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0)
        fprintf(stderr, "strides (%s, from appliance %d): %lld windows, targets per appliance %lld %lld %lld %lld %lld\n",
                masked ? "masked" : "every target", sel_lo, (long long)seen, (long long)n_mask[0],
                (long long)n_mask[1], (long long)n_mask[2], (long long)n_mask[3], (long long)n_mask[4]);
    gt_dataset_free(ds);
}

static void check_memory(const char *path, MPI_Comm comm) {
    gt_data_config cfg;
    gt_nilm_data_defaults(&cfg);
    cfg.window = 256;
    cfg.stride = 1;
    gt_nilm_shard *sh = gt_nilm_shard_read(path, comm);
    int64_t series = sh->n_rows * (int64_t)(sizeof(int64_t) + sizeof(float) * (1 + TG_NILM_A) + 1);
    gt_dataset *ds = gt_dataset_nilm(sh, &cfg, comm);
    int64_t nw = 0;
    for (int s = 0; s < GT_SPLIT_COUNT; s++) nw += gt_dataset_n_windows_local(ds, s);
    int64_t materialised = nw * cfg.window * (int64_t)sizeof(float);
    int64_t bytes = gt_dataset_bytes(ds);
    TEST_CHECK(bytes >= series);
    TEST_CHECK(bytes < 2 * series);
    /* windows are views: materialising them would take far more than the whole dataset (at this tiny size the
     * dataset's fixed part, a normalisation table for up to GT_DATA_MAX_CHANNELS channels, is ~15 % of it) */
    TEST_CHECK(nw == 0 || materialised > 5 * bytes);
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0)
        fprintf(stderr, "memory rank 0: series %lld B, dataset %lld B (%.3fx series), %lld windows would take %lld B "
                        "materialised (%.1fx the dataset)\n",
                (long long)series, (long long)bytes, (double)bytes / (double)series, (long long)nw,
                (long long)materialised, (double)materialised / (double)bytes);
    gt_dataset_free(ds);
}

static void check_pdm(const char *path, MPI_Comm comm, int T) {
    gt_data_config cfg;
    gt_pdm_data_defaults(&cfg);
    cfg.window = 64;
    cfg.stride = 16;
    cfg.holdout_every = 3; /* turbine 2 */
    gt_pdm_data_cfg_set(&cfg)->train_normal_only = 0;
    gt_dataset *ds = gt_dataset_pdm(gt_pdm_shard_read(path, comm), &cfg, comm);
    const gt_norm_stats *ns = gt_dataset_norm(ds);
    TEST_EQ_INT(gt_dataset_n_x(ds), 64 * TG_PDM_C);
    TEST_EQ_INT(gt_dataset_n_y(ds), 0);
    TEST_EQ_INT(ns->n, TG_PDM_C);
    int64_t expect[GT_SPLIT_COUNT] = {0};
    for (int t = 0; t < T; t++) {
        int64_t n = tg_pdm_rows(t), b1, b2;
        dt_bounds(n, cfg.split_train, cfg.split_val, &b1, &b2);
        if (t % 3 == 2) expect[3] += dt_grid(0, n, 64, 16);
        else expect[0] += dt_grid(0, b1, 64, 16), expect[1] += dt_grid(b1, b2, 64, 16), expect[2] += dt_grid(b2, n, 64, 16);
    }
    float *x = malloc(sizeof(float) * 64 * TG_PDM_C);
    int64_t bad = 0;
    for (int s = 0; s < GT_SPLIT_COUNT; s++) {
        TEST_EQ_INT(gt_dataset_n_windows_global(ds, s), expect[s]);
        int64_t n_loc = gt_dataset_n_windows_local(ds, s);
        for (int64_t i = 0; i < n_loc; i += 5) {
            gt_window_ref r;
            gt_dataset_fill(ds, s, &i, 1, x, NULL, NULL, &r);
            int t = r.file_index;
            int64_t n = tg_pdm_rows(t), b1, b2;
            dt_bounds(n, cfg.split_train, cfg.split_val, &b1, &b2);
            int64_t lo = s == 0 ? 0 : s == 1 ? b1 : s == 2 ? b2 : 0, hi = s == 0 ? b1 : s == 1 ? b2 : n;
            bad += (s == 3) != (t % 3 == 2);
            bad += r.start % 16 != 0 || r.start < lo || r.start + 64 > hi;
            for (int64_t tt = 0; tt < 64; tt++)
                for (int c = 0; c < TG_PDM_C; c++) {
                    double e = ((double)tg_sig(t, r.start + tt, c) - ns->mean[c]) / ns->std[c];
                    bad += fabs(x[tt * TG_PDM_C + c] - e) > 1e-5 * (1 + fabs(e));
                }
        }
    }
    TEST_EQ_INT(bad, 0);
    free(x);
    gt_dataset_free(ds);
}

static void check_item_split(void) {
    int64_t b1 = -1, b2 = -1;
    int ho = -1;
    gt_data_item_split(1000, 5, 0.7, 0.15, 0, &b1, &b2, &ho);
    TEST_EQ_INT(b1, 700); TEST_EQ_INT(b2, 850); TEST_EQ_INT(ho, 0);
    gt_data_item_split(10, 0, 0.75, 0.15, 0, &b1, &b2, &ho); /* 7.5 rounds away from zero, 9.0 stays */
    TEST_EQ_INT(b1, 8); TEST_EQ_INT(b2, 9);
    gt_data_item_split(0, 0, 0.7, 0.15, 0, &b1, &b2, &ho);
    TEST_EQ_INT(b1, 0); TEST_EQ_INT(b2, 0);
    const int64_t n = 1000000000000; /* train + val a hair above 1 (allowed): clamped to the rows */
    gt_data_item_split(n, 0, 0.7, 0.3 + 1e-12, 0, &b1, &b2, &ho);
    TEST_EQ_INT(b1, 700000000000); TEST_EQ_INT(b2, n);
    for (int f = 0; f < 9; f++) { /* every 4th item held out: file indices 3 and 7 */
        gt_data_item_split(100, f, 0.7, 0.15, 4, &b1, &b2, &ho);
        TEST_EQ_INT(ho, f % 4 == 3);
        TEST_EQ_INT(b1, 70); TEST_EQ_INT(b2, 85); /* the bounds are computed either way */
        gt_data_item_split(100, f, 0.7, 0.15, 1, &b1, &b2, &ho);
        TEST_EQ_INT(ho, 1);
    }
}

int main(int argc, char **argv) {
    int rank, size;
    tg_mpi_init(&argc, &argv, &rank, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    char nilm[256], pdm[256];
    dt_path(nilm, sizeof nilm, "test_data_split_nilm", comm);
    dt_path(pdm, sizeof pdm, "test_data_split_pdm", comm);
    const int H = 8, T = 5;
    dt_write_nilm(nilm, H, 0, NULL, 0, comm);
    dt_write_pdm(pdm, T, comm);
    check_nilm_splits(nilm, comm, H);
    check_strides(nilm, comm, 1, "", 0);
    check_strides(nilm, comm, 1, "app2+app3+app4", 2);
    check_strides(nilm, comm, 0, "", 0);
    check_strides(nilm, comm, 0, "app2+app3+app4", 2);
    check_memory(nilm, comm);
    check_pdm(pdm, comm, T);
    check_item_split();
    MPI_Barrier(comm);
    if (rank == 0) remove(nilm), remove(pdm);
    int ok = tg_all(gt_test_failures == 0, comm);
    MPI_Finalize();
    if (!ok && gt_test_failures == 0) gt_test_failures = 1;
    TEST_DONE();
}
