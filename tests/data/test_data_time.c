/* NILM time features (data.time_features, data.timezone) at P ranks.
 *
 * Households of a closed-form file start at 2026-03-29 00:30 UTC with one row
 * a minute, so every household crosses the start of British Summer Time
 * (01:00 UTC that day) and household 7 also the local Monday 00:00. Every
 * window of every split is filled and each row's features are compared with
 * values computed here from the row's time stamp and the EU rule (UTC+1 from
 * the last Sunday of March 01:00 UTC), not from the C library:
 *   - channel 0 is the normalised aggregate, channels 1-4 are sin/cos of the
 *     local time of day and of the week (phase 0 = local Monday 00:00);
 *   - both layouts: (C, W) for s2p_cnn and (W, C) for s2p_tf/lstm;
 *   - timezone UTC ignores daylight saving; Europe/London moves the features
 *     by one hour at exactly the transition row;
 *   - "day" gives 3 channels; unknown or unsafe zone names are refused with a
 *     message naming the zone; the model's input channel count follows. */
#include "nilm/nilm.h"
#include "data_test.h"
#include "nn/model.h"

#define T0_MS INT64_C(1774744200000)  /* 2026-03-29 00:30:00 UTC (a Sunday) */
#define BST_MS INT64_C(1774746000000) /* 2026-03-29 01:00:00 UTC: clocks go forward */
#define MONDAY_MS INT64_C(1767571200000) /* 2026-01-05 00:00:00, a Monday */
#define PERIOD_MS 60000

static void info(void *ctx, int h, gt_nilm_item *it, uint8_t *owns) {
    tg_nilm_info(ctx, h, it, owns);
    it->t0_ms = T0_MS + (int64_t)h * 7000; /* not on a minute: offsets in the middle of rows */
    it->period_s = PERIOD_MS / 1000.0;
}

static double phase(int64_t local_ms, int64_t period_ms) {
    int64_t r = local_ms % period_ms;
    if (r < 0) r += period_ms;
    return 6.283185307179586 * (double)r / (double)period_ms;
}

/* max |x - expected| over every window of every split (and the count of rows checked) */
static double check_fill(const char *path, const char *zone, int F, int last, MPI_Comm comm, int64_t *rows) {
    gt_data_config cfg;
    gt_nilm_data_defaults(&cfg);
    cfg.window = 31;
    cfg.stride = 7;
    cfg.holdout_every = 4;
    cfg.x_channels_last = last;
    gt_nilm_data_config *nc = gt_nilm_data_cfg_set(&cfg);
    nc->time_features = F;
    snprintf(nc->timezone, sizeof nc->timezone, "%s", zone);
    gt_dataset *ds = gt_dataset_nilm(gt_nilm_shard_read(path, comm), &cfg, comm);
    const int W = cfg.window, C = 1 + F;
    TEST_EQ_INT(gt_dataset_n_x(ds), (int64_t)W * C);
    const gt_norm_stats *ns = gt_dataset_norm(ds);
    const int london = !strcmp(zone, "Europe/London");
    float *x = malloc(sizeof(float) * (size_t)W * C);
    float y[TG_NILM_A], m[TG_NILM_A];
    double worst = 0;
    int64_t n_rows = 0, n_bst = 0;
    for (int s = 0; s < GT_SPLIT_COUNT; s++) {
        int64_t n = gt_dataset_n_windows_local(ds, s);
        for (int64_t i = 0; i < n; i++) {
            gt_window_ref r;
            gt_dataset_fill(ds, s, &i, 1, x, y, m, &r);
            for (int t = 0; t < W; t++) {
                int64_t ms = r.t_start_ms + (int64_t)t * PERIOD_MS;
                int64_t off = london && ms >= BST_MS ? 3600000 : 0;
                n_bst += off != 0;
                double e[5];
                e[0] = ((double)tg_agg(r.file_index, r.start + t) - ns->mean[0]) / ns->std[0];
                double d = phase(ms + off, 86400000), w = phase(ms + off - MONDAY_MS, 7 * 86400000);
                e[1] = sin(d), e[2] = cos(d), e[3] = sin(w), e[4] = cos(w);
                for (int c = 0; c < C; c++) {
                    float v = last ? x[t * C + c] : x[c * W + t];
                    double err = fabs(v - e[c]) / (c == 0 ? 1 + fabs(e[0]) : 1.0);
                    if (err > worst) worst = err;
                }
                n_rows++;
            }
        }
    }
    double g = 0;
    MPI_Allreduce(&worst, &g, 1, MPI_DOUBLE, MPI_MAX, comm);
    int64_t gr[2], lr[2] = {n_rows, n_bst};
    MPI_Allreduce(lr, gr, 2, MPI_INT64_T, MPI_SUM, comm);
    TEST_CHECK(gr[0] > 1000);
    if (london) TEST_CHECK(gr[1] > 0 && gr[1] < gr[0]); /* rows on both sides of the change */
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0)
        fprintf(stderr, "time features %s F=%d %s: %lld window rows (%lld in summer time), max error %.2e\n", zone, F,
                last ? "(W, C)" : "(C, W)", (long long)gr[0], (long long)gr[1], g);
    *rows = gr[0];
    free(x);
    gt_dataset_free(ds);
    return g;
}

int main(int argc, char **argv) {
    int rank, size;
    tg_mpi_init(&argc, &argv, &rank, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    char path[256];
    dt_path(path, sizeof path, "test_data_time", comm);
    gt_nilm_source src;
    tg_nilm g;
    tg_nilm_source(&src, &g, 8, 0, 0.0);
    src.info = info;
    gt_write_opts o;
    gt_write_opts_defaults(&o);
    o.chunk_rows = 4096;
    gt_nilm_write(path, &src, &o, comm, NULL);

    const char *tz0 = getenv("TZ");
    char tz_before[256];
    snprintf(tz_before, sizeof tz_before, "%s", tz0 ? tz0 : "(unset)");
    int64_t rows;
    TEST_CHECK(check_fill(path, "UTC", 4, 0, comm, &rows) < 2e-6);
    TEST_CHECK(check_fill(path, "Europe/London", 4, 0, comm, &rows) < 2e-6);
    TEST_CHECK(check_fill(path, "Europe/London", 4, 1, comm, &rows) < 2e-6);
    TEST_CHECK(check_fill(path, "Europe/London", 2, 1, comm, &rows) < 2e-6);
    TEST_CHECK(check_fill(path, "", 0, 1, comm, &rows) < 2e-6);

    /* parsing and zone checks */
    TEST_EQ_INT(gt_nilm_time_features_parse("none"), 0);
    TEST_EQ_INT(gt_nilm_time_features_parse("day"), 2);
    TEST_EQ_INT(gt_nilm_time_features_parse("day+week"), 4);
    TEST_EQ_INT(gt_nilm_time_features_parse("week"), -1);
    char err[600];
    TEST_EQ_INT(gt_data_timezone_check("UTC", err, sizeof err), 0);
    TEST_EQ_INT(gt_data_timezone_check("Europe/London", err, sizeof err), 0);
    TEST_EQ_INT(gt_data_timezone_check("Mars/Olympus_Mons", err, sizeof err), -1);
    TEST_CHECK(strstr(err, "Mars/Olympus_Mons") != NULL);
    TEST_EQ_INT(gt_data_timezone_check("../../etc/passwd", err, sizeof err), -1);
    TEST_EQ_INT(gt_data_timezone_check("Europe", err, sizeof err), -1); /* a directory */
    TEST_EQ_INT(gt_model_input_channels_last(GT_MODEL_S2P_CNN), 0);
    TEST_EQ_INT(gt_model_input_channels_last(GT_MODEL_S2P_TF), 1);
    /* the TZ of the process is left as it was */
    const char *tz1 = getenv("TZ");
    TEST_CHECK(!strcmp(tz_before, tz1 ? tz1 : "(unset)"));

    MPI_Barrier(comm);
    if (rank == 0) remove(path);
    int ok = tg_all(gt_test_failures == 0, comm);
    MPI_Finalize();
    if (!ok && gt_test_failures == 0) gt_test_failures = 1;
    TEST_DONE();
}
