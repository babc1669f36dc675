/* Screening at P ranks.
 *   testgen faults (inject = 1): household 1 rows 100..109 NaN (a gap), household
 *   2 row 200 = 1e6 (a spike), household 3 rows 300..339 stuck at 7 (not a
 *   spike), household 4 row 7 appliance 0 = +Inf (a bad target):
 *     DROP:   spikes found 1; screened windows per reason equal the grid
 *             windows touching the faulty rows; the CSV report is exactly
 *             three lines (one per run and reason, plus the spike itself);
 *     REPAIR: 1 sample repaired (to the local median 2201), no spike windows;
 *     OFF:    only gap windows screened, no spikes looked for;
 *     a window whose midpoint target is Inf gets mask 0 and y 0 (never NaN).
 *   A real synthetic file (synth/synth.h, many spikes of 20-60 kW, gaps, stuck
 *   runs, 8 W noise): every spike flagged in /fault_flags is found (at most 10%
 *   extra: genuine inrush transients); REPAIR changes exactly the counted
 *   samples, brings every flagged one below 20 kW; DROP changes nothing.
 *   PdM, data.pdm_short_gap: a run of up to 6 missing records is imputed (its samples counted), not
 *   screened; 7 records, or the rule off, screen the windows touching them;
 *   PdM with pdm_train_normal_only: the train/val windows touching the labelled
 *   event rows 100..199 of the even turbines are screened ("event"), test and
 *   holdout windows are kept. */
#include "pdm/pdm.h"
#include "nilm/nilm.h"
#include "data_test.h"
#include "synth/synth.h"
#include "synth/synth_source.h"

static gt_dataset *make(const char *path, MPI_Comm comm, int screen, int W) {
    gt_data_config cfg;
    gt_nilm_data_defaults(&cfg);
    cfg.window = W;
    cfg.stride = 1;
    cfg.screen = screen;
    return gt_dataset_nilm(gt_nilm_shard_read(path, comm), &cfg, comm);
}

/* grid windows (stride 1, all splits) of household h touching rows [a, b) */
static int64_t touching(int h, int64_t W, int64_t a, int64_t b) {
    int64_t n = tg_nilm_rows(h), b1, b2, c = 0;
    dt_bounds(n, 0.7, 0.15, &b1, &b2);
    int64_t lo[3] = {0, b1, b2}, hi[3] = {b1, b2, n};
    for (int k = 0; k < 3; k++)
        for (int64_t s = lo[k]; s + W <= hi[k]; s++) c += s < b && s + W > a;
    return c;
}
static int64_t total_windows(int H, int64_t W) {
    int64_t c = 0;
    for (int h = 0; h < H; h++) c += touching(h, W, 0, tg_nilm_rows(h));
    return c;
}
static int64_t tms(int h, int64_t row) { return TG_T0_MS + (int64_t)h * 60000 + row * (int64_t)(tg_nilm_period(h) * 1000); }

static char *report(const gt_dataset *ds, MPI_Comm comm) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    gt_dataset_write_screened(ds, comm, f);
    fclose(f);
    return buf;
}

static void check_testgen(const char *path, MPI_Comm comm, int H, int rank) {
    const int W = 31;
    const int64_t n_gap = touching(1, W, 100, 110), n_spike = touching(2, W, 200, 201);
    gt_screen_summary g;
    char expect[1024];
    /* DROP */
    gt_dataset *ds = make(path, comm, GT_SCREEN_DROP, W);
    gt_dataset_screen_summary(ds, comm, &g);
    TEST_EQ_INT(g.windows_total, total_windows(H, W));
    TEST_EQ_INT(g.spikes_found, 1);
    TEST_EQ_INT(g.samples_repaired, 0);
    TEST_EQ_INT(g.windows_screened_gap, n_gap);
    TEST_EQ_INT(g.windows_screened_spike, n_spike);
    TEST_EQ_INT(g.windows_screened_event, 0);
    int64_t kept = 0;
    for (int s = 0; s < GT_SPLIT_COUNT; s++) kept += gt_dataset_n_windows_global(ds, s);
    TEST_EQ_INT(kept, g.windows_total - n_gap - n_spike);
    char *rep = report(ds, comm);
    snprintf(expect, sizeof expect, "1001,%lld,%lld,gap\n1002,%lld,%lld,spike\n1002,%lld,%lld,spike_found\n",
             (long long)tms(1, 70), (long long)tms(1, 109 + W - 1), (long long)tms(2, 200 - W + 1),
             (long long)tms(2, 200 + W - 1), (long long)tms(2, 200), (long long)tms(2, 200));
    if (rank == 0) {
        TEST_CHECK(strcmp(rep, expect) == 0);
        if (strcmp(rep, expect)) fprintf(stderr, "report:\n%sexpected:\n%s", rep, expect);
    } else TEST_CHECK(rep[0] == 0);
    free(rep);
    /* no kept window touches a gap or the spike */
    int64_t bad = 0;
    for (int s = 0; s < GT_SPLIT_COUNT; s++) {
        int64_t n;
        gt_window_ref *r = dt_local_refs(ds, s, &n);
        for (int64_t i = 0; i < n; i++) {
            bad += r[i].file_index == 1 && r[i].start < 110 && r[i].start + W > 100;
            bad += r[i].file_index == 2 && r[i].start <= 200 && r[i].start + W > 200;
        }
        free(r);
    }
    TEST_EQ_INT(bad, 0);
    gt_dataset_free(ds);

    /* REPAIR */
    ds = make(path, comm, GT_SCREEN_REPAIR, W);
    gt_dataset_screen_summary(ds, comm, &g);
    TEST_EQ_INT(g.spikes_found, 1);
    TEST_EQ_INT(g.samples_repaired, 1);
    TEST_EQ_INT(g.windows_screened_gap, n_gap);
    TEST_EQ_INT(g.windows_screened_spike, 0);
    const gt_norm_stats *ns = gt_dataset_norm(ds);
    int64_t n_tr = gt_dataset_n_windows_local(ds, GT_SPLIT_TRAIN), seen = 0;
    for (int64_t i = 0; i < n_tr; i++) {
        gt_window_ref r;
        float x[W], y[TG_NILM_A], m[TG_NILM_A];
        gt_dataset_fill(ds, GT_SPLIT_TRAIN, &i, 1, x, y, m, &r);
        if (r.file_index == 2 && r.start == 190) {
            TEST_CLOSE(x[10], (2201.0 - ns->mean[0]) / ns->std[0], 1e-6, 1e-6); /* median of 2197..2203 without 2200 */
            TEST_CLOSE(x[9], (2199.0 - ns->mean[0]) / ns->std[0], 1e-6, 1e-6);
            seen++;
        }
    }
    int64_t seen_all = 0;
    MPI_Allreduce(&seen, &seen_all, 1, MPI_INT64_T, MPI_SUM, comm);
    TEST_EQ_INT(seen_all, 1);
    rep = report(ds, comm);
    snprintf(expect, sizeof expect, "1001,%lld,%lld,gap\n1002,%lld,%lld,spike_repaired\n", (long long)tms(1, 70),
             (long long)tms(1, 109 + W - 1), (long long)tms(2, 200), (long long)tms(2, 200));
    if (rank == 0) TEST_CHECK(strcmp(rep, expect) == 0);
    free(rep);
    gt_dataset_free(ds);

    /* OFF */
    ds = make(path, comm, GT_SCREEN_OFF, W);
    gt_dataset_screen_summary(ds, comm, &g);
    TEST_EQ_INT(g.spikes_found, 0);
    TEST_EQ_INT(g.windows_screened_gap, n_gap);
    TEST_EQ_INT(g.windows_screened_spike, 0);
    gt_dataset_free(ds);

    /* an Inf target: household 4 row 7 appliance 0 (W = 5: the window at 5) */
    ds = make(path, comm, GT_SCREEN_DROP, 5);
    int64_t hit = 0;
    n_tr = gt_dataset_n_windows_local(ds, GT_SPLIT_TRAIN);
    for (int64_t i = 0; i < n_tr; i++) {
        gt_window_ref r;
        float x[5], y[TG_NILM_A], m[TG_NILM_A];
        gt_dataset_fill(ds, GT_SPLIT_TRAIN, &i, 1, x, y, m, &r);
        for (int a = 0; a < TG_NILM_A; a++) TEST_CHECK(isfinite(y[a]));
        if (r.file_index == 4 && r.start == 5) {
            hit++;
            TEST_CHECK(m[0] == 0.0f && y[0] == 0.0f);
            for (int a = 1; a < TG_NILM_A; a++) TEST_CHECK(m[a] == 1.0f);
        }
    }
    int64_t hit_all = 0;
    MPI_Allreduce(&hit, &hit_all, 1, MPI_INT64_T, MPI_SUM, comm);
    TEST_EQ_INT(hit_all, 1);
    gt_dataset_free(ds);
}

/* Recall must be complete: every flagged spike sample is found (found &
 * flagged == flagged). Genuine 1-2 sample transients (a compressor's inrush
 * of a few hundred W on a 180 W base load) may also pass a Hampel test: allow
 * at most 10% extra and report them. */
static void check_synth(const char *path, MPI_Comm comm, int rank) {
    for (int mode = 0; mode < 2; mode++) {
        gt_nilm_shard *sh = gt_nilm_shard_read(path, comm);
        TEST_REQUIRE(sh->fault_flags != NULL);
        const int64_t n = sh->n_rows;
        float *before = malloc(sizeof(float) * (size_t)(n + 1));
        memcpy(before, sh->aggregate, sizeof(float) * (size_t)n);
        gt_data_config cfg;
        gt_nilm_data_defaults(&cfg);
        cfg.screen = mode == 0 ? GT_SCREEN_DROP : GT_SCREEN_REPAIR;
        gt_dataset *ds = gt_dataset_nilm(sh, &cfg, comm); /* sh stays valid until gt_dataset_free */
        int64_t v[4] = {0, 0, 0, 0}, t[4]; /* flagged, repaired (flagged rows), changed rows, flagged now < 20 kW */
        for (int64_t i = 0; i < n; i++) {
            int fl = (sh->fault_flags[i] & GT_FAULT_SPIKE) != 0;
            int changed = memcmp(&before[i], &sh->aggregate[i], sizeof(float)) != 0;
            v[0] += fl;
            v[1] += fl && changed;
            v[2] += changed;
            v[3] += fl && sh->aggregate[i] < 20000.0f;
        }
        MPI_Allreduce(v, t, 4, MPI_INT64_T, MPI_SUM, comm);
        gt_screen_summary g;
        gt_dataset_screen_summary(ds, comm, &g);
        TEST_CHECK(t[0] >= 20); /* the file really has spikes */
        TEST_CHECK(g.spikes_found >= t[0]);
        TEST_CHECK(g.spikes_found <= t[0] + t[0] / 10);
        if (mode == 1) {
            TEST_EQ_INT(g.samples_repaired, g.spikes_found);
            TEST_EQ_INT(t[2], g.samples_repaired); /* exactly the counted samples changed */
            TEST_EQ_INT(t[1], t[0]);               /* ... among them every flagged spike */
            TEST_EQ_INT(t[3], t[0]);
        } else {
            TEST_EQ_INT(t[2], 0); /* DROP never touches the series */
            TEST_CHECK(g.windows_screened_spike > 0 && g.windows_screened_gap > 0);
        }
        if (rank == 0)
            fprintf(stderr, "synth (%s): %lld spike samples flagged in the file, %lld found (%lld extra), %lld repaired, "
                    "%lld windows screened for spikes, %lld for gaps, of %lld\n", mode ? "repair" : "drop",
                    (long long)t[0], (long long)g.spikes_found, (long long)(g.spikes_found - t[0]),
                    (long long)g.samples_repaired, (long long)g.windows_screened_spike,
                    (long long)g.windows_screened_gap, (long long)g.windows_total);
        free(before);
        gt_dataset_free(ds);
    }
}

static void check_pdm_events(const char *path, MPI_Comm comm, int T) {
    gt_data_config cfg;
    gt_pdm_data_defaults(&cfg);
    cfg.window = 50;
    cfg.stride = 10;
    cfg.holdout_every = 4; /* turbine 3 */
    gt_pdm_data_cfg_set(&cfg)->train_normal_only = 1;
    gt_dataset *ds = gt_dataset_pdm(gt_pdm_shard_read(path, comm), &cfg, comm);
    int64_t expect_event = 0;
    for (int t = 0; t < T; t++) {
        if (t % 2 || t % 4 == 3) continue;
        int64_t b1, b2;
        dt_bounds(tg_pdm_rows(t), 0.7, 0.15, &b1, &b2);
        for (int64_t s = 0; s + 50 <= b1; s += 10) expect_event += s < 200 && s + 50 > 100;
        for (int64_t s = (b1 + 9) / 10 * 10; s + 50 <= b2; s += 10) expect_event += s < 200 && s + 50 > 100;
    }
    gt_screen_summary g;
    gt_dataset_screen_summary(ds, comm, &g);
    TEST_EQ_INT(g.windows_screened_event, expect_event);
    TEST_EQ_INT(g.windows_screened_gap, 0);
    TEST_EQ_INT(g.spikes_found, 0); /* smooth ramps: no false spikes */
    int64_t bad = 0;
    for (int s = 0; s < GT_SPLIT_COUNT; s++) {
        int64_t n;
        gt_window_ref *r = dt_local_refs(ds, s, &n);
        for (int64_t i = 0; i < n; i++)
            if (s <= GT_SPLIT_VAL) bad += r[i].file_index % 2 == 0 && r[i].start < 200 && r[i].start + 50 > 100;
        free(r);
    }
    TEST_EQ_INT(bad, 0);
    gt_dataset_free(ds);
}

/* data.pdm_short_gap: missing records (every channel NaN) in turbine 0's rows [300, 300 + a) and
 * [600, 600 + b), and its first `head` rows; returns the screen summary (samples imputed, windows
 * screened for gaps). */
static gt_screen_summary short_gap_head(const char *path, MPI_Comm comm, int64_t a, int64_t b, int64_t head,
                                        int short_gap) {
    gt_data_config cfg;
    gt_pdm_data_defaults(&cfg);
    cfg.window = 50;
    cfg.stride = 10;
    gt_pdm_data_cfg_set(&cfg)->short_gap = short_gap;
    gt_pdm_shard *sh = gt_pdm_shard_read(path, comm);
    const int C = sh->n_channels;
    for (int k = 0; k < sh->n_turbines; k++) {
        if (sh->index[k] != 0) continue;
        float *x = sh->signals + sh->row_offset[k] * C;
        for (int64_t r = 300; r < 300 + a; r++)
            for (int c = 0; c < C; c++) x[r * C + c] = NAN;
        for (int64_t r = 600; r < 600 + b; r++)
            for (int c = 0; c < C; c++) x[r * C + c] = NAN;
        for (int64_t r = 0; r < head; r++)
            for (int c = 0; c < C; c++) x[r * C + c] = NAN;
    }
    gt_dataset *ds = gt_dataset_pdm(sh, &cfg, comm);
    gt_screen_summary g;
    gt_dataset_screen_summary(ds, comm, &g);
    gt_dataset_free(ds);
    return g;
}

static gt_screen_summary short_gap_run(const char *path, MPI_Comm comm, int64_t a, int64_t b, int short_gap) {
    return short_gap_head(path, comm, a, b, 0, short_gap);
}

static void check_pdm_short_gap(const char *path, MPI_Comm comm) {
    gt_pdm_shard *probe = gt_pdm_shard_read(path, comm);
    const int C = probe->n_channels;
    gt_pdm_shard_free(probe);
    /* 3 missing records (short: imputed, by default at most 6) and 20 (a gap: screened) */
    gt_screen_summary def = short_gap_run(path, comm, 3, 20, 6), off = short_gap_run(path, comm, 3, 20, 0);
    gt_screen_summary longonly = short_gap_run(path, comm, 0, 20, 0), none = short_gap_run(path, comm, 0, 0, 6);
    TEST_EQ_INT(none.windows_screened_gap, 0);
    TEST_CHECK(longonly.windows_screened_gap > 0);
    /* the short run screens nothing: exactly the windows of the long run, and its samples are imputed */
    TEST_EQ_INT(def.windows_screened_gap, longonly.windows_screened_gap);
    TEST_EQ_INT(def.samples_imputed - none.samples_imputed, 3 * C);
    /* pdm_short_gap = 0 (runs stored without the key): the short run screens the windows touching it too */
    TEST_CHECK(off.windows_screened_gap > def.windows_screened_gap);
    TEST_EQ_INT(off.samples_imputed, none.samples_imputed);
    /* a run of exactly the limit is imputed; one record longer is a gap */
    gt_screen_summary six = short_gap_run(path, comm, 6, 20, 6);
    TEST_EQ_INT(six.windows_screened_gap, longonly.windows_screened_gap);
    TEST_EQ_INT(six.samples_imputed - none.samples_imputed, 6 * C);
    gt_screen_summary seven = short_gap_run(path, comm, 7, 20, 6), seven_off = short_gap_run(path, comm, 7, 20, 0);
    TEST_EQ_INT(seven.windows_screened_gap, seven_off.windows_screened_gap);
    TEST_CHECK(seven.windows_screened_gap > def.windows_screened_gap);
    /* a short run at the turbine's start has no record before it: a gap, as with the rule off */
    gt_screen_summary head = short_gap_head(path, comm, 0, 0, 3, 6), head_off = short_gap_head(path, comm, 0, 0, 3, 0);
    TEST_CHECK(head.windows_screened_gap > 0);
    TEST_EQ_INT(head.windows_screened_gap, head_off.windows_screened_gap);
    TEST_EQ_INT(head.samples_imputed, none.samples_imputed);
}

int main(int argc, char **argv) {
    int rank, size;
    tg_mpi_init(&argc, &argv, &rank, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    const int H = 6, T = 4;
    char tg[256], syn[256], pdm[256];
    dt_path(tg, sizeof tg, "test_data_screen_tg", comm);
    dt_path(syn, sizeof syn, "test_data_screen_synth", comm);
    dt_path(pdm, sizeof pdm, "test_data_screen_pdm", comm);
    dt_write_nilm(tg, H, 1, NULL, 0, comm);
    gt_nilm_synth_cfg sc;
    gt_nilm_synth_defaults(&sc);
    sc.n_households = 4;
    sc.days = 2.0;
    sc.spike_rate = 6.0;
    sc.gap_rate = 1.0;
    sc.stuck_rate = 1.0;
    gt_nilm_source *src = gt_synth_nilm_source(&sc);
    gt_write_opts o;
    gt_write_opts_defaults(&o);
    gt_nilm_write(syn, src, &o, comm, NULL);
    gt_synth_nilm_source_free(src);
    dt_write_pdm(pdm, T, comm);

    check_testgen(tg, comm, H, rank);
    check_synth(syn, comm, rank);
    check_pdm_events(pdm, comm, T);
    check_pdm_short_gap(pdm, comm);

    MPI_Barrier(comm);
    if (rank == 0) remove(tg), remove(syn), remove(pdm);
    int ok = tg_all(gt_test_failures == 0, comm);
    MPI_Finalize();
    if (!ok && gt_test_failures == 0) gt_test_failures = 1;
    TEST_DONE();
}
