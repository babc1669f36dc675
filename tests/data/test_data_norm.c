/* Normalisation from the TRAIN split only, at P ranks:
 *   - mean/std of every feature equal the closed-form values over the rows the
 *     kept train windows cover (households not held out), within 1e-9
 *     relative: so they are the same over 1, 2 and 4 ranks;
 *   - an outlier planted only in the validation part (aggregate and an
 *     appliance, screening off so nothing else protects the statistics)
 *     leaves the statistics bit-identical; the same outlier in the train part
 *     moves them (the control);
 *   - gt_dataset_set_norm replaces the statistics used by fill;
 *   - PdM data.norm = turbine: every turbine's own statistics (closed form over
 *     its normal train-split rows), the held-out turbine's the global ones,
 *     and fill normalises each window with its turbine's. */
#include "pdm/pdm.h"
#include "nilm/nilm.h"
#include "data_test.h"

static gt_dataset *make(const char *path, MPI_Comm comm, int screen) {
    gt_data_config cfg;
    gt_nilm_data_defaults(&cfg);
    cfg.window = 31;
    cfg.stride = 3;
    cfg.holdout_every = 4;
    cfg.screen = screen;
    return gt_dataset_nilm(gt_nilm_shard_read(path, comm), &cfg, comm);
}

/* closed-form statistics over [0, last train window end) of each non-held-out household */
static void expected(int H, int64_t W, int64_t stride, double *mean, double *sd) {
    for (int f = 0; f <= TG_NILM_A; f++) {
        double s = 0, n = 0;
        for (int pass = 0; pass < 2; pass++) {
            double acc = 0;
            for (int h = 0; h < H; h++) {
                if (h % 4 == 3) continue;
                int64_t b1, b2;
                dt_bounds(tg_nilm_rows(h), 0.7, 0.15, &b1, &b2);
                int64_t ng = dt_grid(0, b1, W, stride), end = (ng - 1) * stride + W;
                for (int64_t i = 0; i < end; i++) {
                    double v = f == 0 ? tg_agg(h, i) : tg_app(h, i, f - 1);
                    if (pass == 0) acc += v, n += 1;
                    else acc += (v - mean[f]) * (v - mean[f]);
                }
            }
            if (pass == 0) s = acc, mean[f] = s / n;
            else sd[f] = sqrt(acc / n);
        }
    }
}

int main(int argc, char **argv) {
    int rank, size;
    tg_mpi_init(&argc, &argv, &rank, &size);
    MPI_Comm comm = MPI_COMM_WORLD;
    const int H = 8;
    char clean[256], val_out[256], train_out[256];
    dt_path(clean, sizeof clean, "test_data_norm_clean", comm);
    dt_path(val_out, sizeof val_out, "test_data_norm_val", comm);
    dt_path(train_out, sizeof train_out, "test_data_norm_train", comm);
    /* household 1: 637 rows, train [0, 446), val [446, 541) */
    const dt_plant in_val[] = {{1, 500, -1, 5e6f}, {1, 480, 2, 1e6f}, {2, 700, -1, -4e6f} /* test part */};
    const dt_plant in_train[] = {{1, 300, -1, 5e6f}};
    dt_write_nilm(clean, H, 0, NULL, 0, comm);
    dt_write_nilm(val_out, H, 0, in_val, 3, comm);
    dt_write_nilm(train_out, H, 0, in_train, 1, comm);

    double mean[1 + TG_NILM_A], sd[1 + TG_NILM_A];
    expected(H, 31, 3, mean, sd);
    gt_dataset *a = make(clean, comm, GT_SCREEN_OFF);
    const gt_norm_stats *na = gt_dataset_norm(a);
    TEST_EQ_INT(na->n, 1 + TG_NILM_A);
    for (int f = 0; f <= TG_NILM_A; f++) {
        TEST_CLOSE(na->mean[f], mean[f], 0, 1e-9);
        TEST_CLOSE(na->std[f], sd[f], 0, 1e-9);
    }
    if (rank == 0)
        fprintf(stderr, "train stats: aggregate mean %.6f std %.6f; app0 mean %.6f std %.6f\n", na->mean[0],
                na->std[0], na->mean[1], na->std[1]);

    gt_dataset *b = make(val_out, comm, GT_SCREEN_OFF);
    const gt_norm_stats *nb = gt_dataset_norm(b);
    for (int f = 0; f <= TG_NILM_A; f++) {
        TEST_CHECK(nb->mean[f] == na->mean[f]);
        TEST_CHECK(nb->std[f] == na->std[f]);
    }
    /* the planted value is really in the val split of household 1 */
    int64_t n_val = gt_dataset_n_windows_local(b, GT_SPLIT_VAL), found = 0;
    for (int64_t i = 0; i < n_val; i++) {
        gt_window_ref r;
        float x[31], y[TG_NILM_A], m[TG_NILM_A];
        gt_dataset_fill(b, GT_SPLIT_VAL, &i, 1, x, y, m, &r);
        if (r.file_index == 1 && r.start <= 500 && r.start + 31 > 500)
            found += fabs(x[500 - r.start] - (5e6 - na->mean[0]) / na->std[0]) < 1e-3 * 5e6 / na->std[0];
    }
    int64_t found_all = 0;
    MPI_Allreduce(&found, &found_all, 1, MPI_INT64_T, MPI_SUM, comm);
    TEST_CHECK(found_all > 0);

    gt_dataset *c = make(train_out, comm, GT_SCREEN_OFF);
    const gt_norm_stats *nc = gt_dataset_norm(c);
    TEST_CHECK(nc->mean[0] > na->mean[0] + 100.0); /* one 5 MW sample in ~3000 train rows */
    TEST_CHECK(nc->std[0] > 10 * na->std[0]);
    /* with DROP screening the train outlier is a spike: excluded from the
     * moments (one sample fewer than the clean file: close, not identical) */
    gt_dataset *d = make(train_out, comm, GT_SCREEN_DROP);
    TEST_CLOSE(gt_dataset_norm(d)->mean[0], na->mean[0], 0, 1e-3);
    TEST_CLOSE(gt_dataset_norm(d)->std[0], na->std[0], 0, 1e-3);

    /* set_norm: fill uses the replaced statistics */
    gt_norm_stats ns = *na;
    ns.mean[0] = 0.0;
    ns.std[0] = 2.0;
    gt_dataset_set_norm(a, &ns);
    if (gt_dataset_n_windows_local(a, GT_SPLIT_TRAIN) > 0) {
        int64_t i = 0;
        gt_window_ref r;
        float x[31], y[TG_NILM_A], m[TG_NILM_A];
        gt_dataset_fill(a, GT_SPLIT_TRAIN, &i, 1, x, y, m, &r);
        TEST_CLOSE(x[5], tg_agg(r.file_index, r.start + 5) / 2.0, 1e-6, 1e-6);
    }
    gt_dataset_free(a), gt_dataset_free(b), gt_dataset_free(c), gt_dataset_free(d);

    /* PdM: every channel's statistics match the closed form over the rows of
     * the kept (event-free) train windows, event rows excluded */
    char pdm[256];
    dt_path(pdm, sizeof pdm, "test_data_norm_pdm", comm);
    dt_write_pdm(pdm, 3, comm);
    gt_data_config cfg;
    gt_pdm_data_defaults(&cfg);
    cfg.window = 100;
    cfg.stride = 50;
    gt_pdm_data_cfg_set(&cfg)->train_normal_only = 1; /* event rows (100..199 of turbines 0, 2) leave the moments */
    gt_dataset *p = gt_dataset_pdm(gt_pdm_shard_read(pdm, comm), &cfg, comm);
    for (int c = 0; c < TG_PDM_C; c++) {
        double s = 0, n = 0, q = 0, mu;
        for (int pass = 0; pass < 2; pass++)
            for (int t = 0; t < 3; t++) {
                int64_t b1, b2;
                dt_bounds(tg_pdm_rows(t), 0.7, 0.15, &b1, &b2);
                /* kept train windows: those not touching [100, 200) on even turbines */
                int64_t ng = dt_grid(0, b1, 100, 50), first = -1, last = -1;
                for (int64_t j = 0; j < ng; j++) {
                    int64_t st = j * 50;
                    int ev = t % 2 == 0 && st < 200 && st + 100 > 100;
                    if (ev) continue;
                    if (first < 0) first = st;
                    last = st;
                }
                for (int64_t i = first; i < last + 100; i++) {
                    if (tg_label(t, i)) continue;
                    double v = tg_sig(t, i, c);
                    if (pass == 0) s += v, n += 1;
                    else q += (v - s / n) * (v - s / n);
                }
            }
        mu = s / n;
        TEST_CLOSE(gt_dataset_norm(p)->mean[c], mu, 0, 1e-9);
        TEST_CLOSE(gt_dataset_norm(p)->std[c], sqrt(q / n), 0, 1e-9);
    }
    gt_dataset_free(p);

    /* PdM, data.norm = turbine: each turbine's own statistics over its train-split rows of normal
     * operation [0, b1) (not only the kept windows' rows), the held-out turbine (holdout_every 3:
     * turbine 2) the global ones; fill normalises every window with its turbine's statistics */
    gt_pdm_data_cfg_set(&cfg)->norm_turbine = 1;
    cfg.holdout_every = 3;
    p = gt_dataset_pdm(gt_pdm_shard_read(pdm, comm), &cfg, comm);
    for (int s = 0; s < GT_SPLIT_COUNT; s++) {
        int64_t nw = gt_dataset_n_windows_local(p, (gt_split)s);
        for (int64_t i = 0; i < nw; i += nw / 3 + 1) {
            gt_window_ref r;
            float x[100 * TG_PDM_C];
            gt_dataset_fill(p, (gt_split)s, &i, 1, x, NULL, NULL, &r);
            const int t = r.file_index;
            const gt_norm_stats *ns = gt_dataset_item_norm(p, r.item);
            TEST_CHECK((t == 2) == (s == GT_SPLIT_HOLDOUT));
            int64_t b1, b2;
            dt_bounds(tg_pdm_rows(t), 0.7, 0.15, &b1, &b2);
            for (int c = 0; c < TG_PDM_C; c++) {
                double mu = gt_dataset_norm(p)->mean[c], sd = gt_dataset_norm(p)->std[c];
                if (t != 2) { /* closed form over the turbine's normal train rows */
                    double sm = 0, n = 0, q = 0;
                    for (int64_t k = 0; k < b1; k++)
                        if (!tg_label(t, k)) sm += tg_sig(t, k, c), n += 1;
                    mu = sm / n;
                    for (int64_t k = 0; k < b1; k++)
                        if (!tg_label(t, k)) q += (tg_sig(t, k, c) - mu) * (tg_sig(t, k, c) - mu);
                    sd = sqrt(q / n);
                    TEST_CHECK(fabs(ns->mean[c] - gt_dataset_norm(p)->mean[c]) > 1e-6 * fabs(mu));
                }
                TEST_CLOSE(ns->mean[c], mu, 0, 1e-9);
                TEST_CLOSE(ns->std[c], sd, 0, 1e-9);
                TEST_CLOSE(x[7 * TG_PDM_C + c], (tg_sig(t, r.start + 7, c) - mu) / sd, 1e-5, 1e-5);
            }
        }
    }
    gt_dataset_free(p);

    MPI_Barrier(comm);
    if (rank == 0) remove(clean), remove(val_out), remove(train_out), remove(pdm);
    int ok = tg_all(gt_test_failures == 0, comm);
    MPI_Finalize();
    if (!ok && gt_test_failures == 0) gt_test_failures = 1;
    TEST_DONE();
}
