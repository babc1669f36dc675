/* NILM evaluation and prediction of stored runs (run at 1, 2, 4 ranks).
 *
 * Loads a tiny s2p_cnn run of the fixture eval_runs (tests/eval/eval_runs.h:
 * trained once by test_eval_runs_setup, whose end-of-run evaluation wrote
 * eval.json and the report) from its checkpoint, then checks:
 *   - predict on all ranks == predict on rank 0 alone, byte for byte (file);
 *   - shapes, NaN exactly at the edge rows, values in [0, max_power_w];
 *   - stitching: row i equals the model output of the window centred on i,
 *     computed here by hand for a few rows (batch of one);
 *   - eval on all ranks == eval on rank 0 alone (every metric, bitwise);
 *   - eval at stride 1 agrees with the metrics recomputed from the predicted
 *     file over the test rows (MAE per appliance, overall EA);
 *   - eval.json of the run has the documented keys;
 *   - an ensemble of two models (eval.models): rank-independent, raw
 *     predictions the members' mean, model + exact copy == model alone.
 * With the argument "gated" the same for the gated head (model.head = gated):
 * 2 x 15 outputs, a row is the power where the on-logit is > 0, else 0 W.
 * With "time" the gated head with time-of-day/week input channels
 * (data.time_features = day+week): the hand-built window carries sin/cos of
 * each row's time of day and week, computed here from the time stamps.
 * Every expected value is recomputed here from the loaded model and data. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset.h"
#include "dist/comm.h"
#include "eval/eval.h"
#include "eval/eval_impl.h"
#include "eval/eval_runs.h"
#include "eval/metrics.h"
#include "io/h5.h"
#include "io/read.h"
#include "nilm/nilm.h"
#include "nn/engine.h"
#include "task/task.h"
#include "test.h"

static char *slurp(const char *path, long *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)*n + 1);
    TEST_REQUIRE(fread(b, 1, (size_t)*n, f) == (size_t)*n);
    b[*n] = 0;
    fclose(f);
    return b;
}

static void read_ds(hid_t f, const char *name, hid_t t, void *buf) {
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    TEST_REQUIRE(d >= 0);
    TEST_REQUIRE(H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0);
    H5Dclose(d);
}

static int same_metrics(const gt_nilm_metrics *a, const gt_nilm_metrics *b) { return !memcmp(a, b, sizeof *a); }

int main(int argc, char **argv) {
    gt_dist_init(&argc, &argv);
    gt_task_register(&gt_task_def_nilm); /* this folder's task alone (the test links the NILM folder, not every task) */
    MPI_Comm world = MPI_COMM_WORLD;
    int rank, size;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    char dir[512], data[512], run[512];
    const int timef = argc > 1 && !strcmp(argv[1], "time");
    const int gated = timef || (argc > 1 && !strcmp(argv[1], "gated"));
    const int variant = timef ? ER_TIME : gated ? ER_GATED : ER_POWER;
    const int F = er_nilm_time_features(variant);
    er_path(data, sizeof data, "nilm.h5");
    er_path(run, sizeof run, er_nilm_run_name(variant));
    er_path(dir, sizeof dir, "complete");
    if (access(dir, R_OK) != 0) { /* the fixture's setup did not run or failed */
        if (rank == 0) fprintf(stderr, "%s: no stored runs (run the ctest fixture test_eval_runs_setup)\n", dir);
        gt_dist_finalize();
        return 1;
    }
    /* this test's outputs: a directory of its own beside the runs */
    snprintf(dir, sizeof dir, "%s/out-%s-np%d", er_dir(), er_nilm_run_name(variant), size);
    if (rank == 0) {
        char cmd[1100];
        snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
        TEST_REQUIRE(system(cmd) == 0);
    }
    MPI_Barrier(world);
    gt_data_config dc; /* the run's data settings (what it was trained with) */
    er_nilm_data(&dc, variant);

    /* the evaluation after training wrote eval.json with the documented keys */
    if (rank == 0) {
        char p[700];
        long n;
        snprintf(p, sizeof p, "%s/eval.json", run);
        char *s = slurp(p, &n);
        TEST_REQUIRE(s);
        cJSON *j = cJSON_Parse(s);
        TEST_REQUIRE(j);
        TEST_CHECK(!strcmp(cJSON_GetObjectItem(j, "task")->valuestring, "nilm"));
        TEST_CHECK(!strcmp(cJSON_GetObjectItem(j, "model")->valuestring, "s2p_cnn"));
        cJSON *nilm = cJSON_GetObjectItem(j, "nilm");
        cJSON *test = cJSON_GetObjectItem(nilm, "test"), *hold = cJSON_GetObjectItem(nilm, "holdout");
        TEST_REQUIRE(cJSON_IsObject(test) && cJSON_IsObject(hold));
        const char *keys[] = {"mae_w", "sae", "nde", "precision", "recall", "f1", "ea"};
        cJSON *ov = cJSON_GetObjectItem(test, "overall");
        for (int k = 0; k < 7; k++) TEST_CHECK(cJSON_GetObjectItem(ov, keys[k]) != NULL);
        cJSON *apps = cJSON_GetObjectItem(test, "appliances");
        TEST_EQ_INT(cJSON_GetArraySize(apps), 15);
        cJSON *a0 = cJSON_GetArrayItem(apps, 0);
        TEST_CHECK(cJSON_IsString(cJSON_GetObjectItem(a0, "name")));
        TEST_CHECK(cJSON_GetObjectItem(a0, "energy_true_wh") && cJSON_GetObjectItem(a0, "energy_pred_wh"));
        cJSON *tr = cJSON_GetObjectItem(j, "train");
        TEST_EQ_INT(cJSON_GetObjectItem(tr, "steps")->valueint, 30);
        TEST_EQ_INT(cJSON_GetObjectItem(tr, "ranks")->valueint, 1); /* the setup test trains on one rank */
        TEST_CHECK(cJSON_IsNull(cJSON_GetObjectItem(j, "pdm")));
        double ea = cJSON_GetObjectItem(ov, "ea")->valuedouble;
        TEST_CHECK(ea <= 1.0 && ea > -10);
        cJSON_Delete(j);
        free(s);
        snprintf(p, sizeof p, "%s/report.md", run);
        TEST_CHECK(access(p, R_OK) == 0);
        snprintf(p, sizeof p, "%s/timing.json", run);
        TEST_CHECK(access(p, R_OK) == 0);
    }

    /* the model from the run's newest checkpoint */
    gt_model_config mc;
    er_nilm_model(&mc, variant);
    mc.max_batch = 16;
    gt_engine *eng = gt_engine_create(GT_ENGINE_HOST, &mc);
    gt_model *m = gt_engine_model(eng);
    gt_norm_stats ns;
    TEST_REQUIRE(er_load(run, m, &ns) == 30);
    TEST_EQ_INT(ns.n, 16); /* aggregate + 15 appliances */
    gt_eval_model em = {.e = eng, .ns = ns, .data = dc, .name = run};
    em.data.task = gt_task_id(gt_task_by_name("nilm"));
    gt_eval_config ec;
    gt_eval_config_defaults(&ec);

    /* predict: all ranks vs rank 0 alone */
    char outP[700], out1[700];
    snprintf(outP, sizeof outP, "%s/pred_p.h5", dir);
    snprintf(out1, sizeof out1, "%s/pred_1.h5", dir);
    gt_predict_nilm(data, &em, 1, &ec, outP, world);
    MPI_Comm self;
    MPI_Comm_split(world, rank == 0 ? 0 : MPI_UNDEFINED, 0, &self);
    gt_nilm_eval e1, eP;
    gt_nilm_eval_cfg_set(&ec)->stride = 1;
    gt_eval_nilm(data, &em, 1, &ec, NULL, world, &eP);
    gt_eval_config ecc = ec; /* calibrated gates (gated head) */
    gt_nilm_eval_cfg_set(&ecc)->calibrate_gate = 1;
    gt_nilm_eval cP;
    if (gated) gt_eval_nilm(data, &em, 1, &ecc, NULL, world, &cP);
    gt_eval_config ecf = ec, ecx = ec; /* the calibrated state filter; a fixed one */
    gt_nilm_eval_cfg_set(&ecf)->calibrate_filter = 1;
    gt_nilm_eval_cfg_set(&ecx)->fill_s = 60, gt_nilm_eval_cfg_set(&ecx)->min_on_s = 120;
    gt_nilm_eval fP;
    gt_eval_nilm(data, &em, 1, &ecf, NULL, world, &fP);
    char outF[700];
    snprintf(outF, sizeof outF, "%s/pred_filter.h5", dir);
    gt_predict_nilm(data, &em, 1, &ecx, outF, world);
    if (rank == 0) {
        gt_predict_nilm(data, &em, 1, &ec, out1, self);
        char smp[700];
        snprintf(smp, sizeof smp, "%s/eval_sample.csv", dir);
        gt_eval_nilm(data, &em, 1, &ec, smp, self, &e1);
        long n1, nP;
        char *b1 = slurp(out1, &n1), *bP = slurp(outP, &nP);
        TEST_REQUIRE(b1 && bP);
        TEST_EQ_INT(n1, nP);
        TEST_CHECK(n1 == nP && !memcmp(b1, bP, (size_t)n1)); /* byte-identical files */
        free(b1), free(bP);

        /* gated head: the calibrated on/off thresholds (eval.calibrate_gate) are the same for any
         * number of ranks, lie on the calibration grid, and the F1-optimal choice moved some */
        if (gated) {
            gt_nilm_eval c1;
            gt_eval_nilm(data, &em, 1, &ecc, NULL, self, &c1);
            TEST_CHECK(!memcmp(c1.gate, cP.gate, sizeof c1.gate));
            TEST_CHECK(same_metrics(&c1.test.overall, &cP.test.overall));
            TEST_CHECK(c1.gated && !e1.gate[0] && !e1.gate[14]); /* default: probability 0.5 */
            int moved = 0;
            for (int a = 0; a < 15; a++) {
                TEST_CHECK(c1.gate[a] >= -12.0f && c1.gate[a] <= 12.0f);
                double k = (c1.gate[a] + 12.0) * 20.0; /* 480 bins over [-12, 12] */
                TEST_CLOSE(k, round(k), 1e-3, 0);
                moved += c1.gate[a] != 0.0f;
            }
            fprintf(stderr, "gates: %d of 15 moved from 0; test F1 %.4f (0.5: %.4f)\n", moved, c1.test.overall.f1,
                    e1.test.overall.f1);
            TEST_CHECK(moved > 0);
        }

        /* eval identical for any number of ranks */
        TEST_CHECK(e1.test.present && e1.holdout.present);
        TEST_EQ_INT(e1.test.n_windows, eP.test.n_windows);
        TEST_CHECK(same_metrics(&e1.test.overall, &eP.test.overall));
        TEST_CHECK(same_metrics(&e1.holdout.overall, &eP.holdout.overall));
        for (int a = 0; a < 15; a++) TEST_CHECK(same_metrics(&e1.test.app[a], &eP.test.app[a]));

        /* the file: shapes, NaN edges, ranges */
        gt_nilm_shard *sh = gt_nilm_shard_read(data, self);
        const int A = sh->n_appliances, W = mc.window, half = W / 2;
        TEST_EQ_INT(A, 15);
        hid_t f = H5Fopen(out1, H5F_ACC_RDONLY, H5P_DEFAULT);
        TEST_REQUIRE(f >= 0);
        hid_t d = H5Dopen2(f, "predictions", H5P_DEFAULT), sp = H5Dget_space(d);
        hsize_t dims[2];
        TEST_EQ_INT(H5Sget_simple_extent_ndims(sp), 2);
        H5Sget_simple_extent_dims(sp, dims, NULL);
        TEST_EQ_INT(dims[0], sh->n_rows);
        TEST_EQ_INT(dims[1], A);
        H5Sclose(sp), H5Dclose(d);
        float *pred = malloc(sizeof(float) * (size_t)sh->n_rows * A);
        int64_t *off = malloc(sizeof(int64_t) * (size_t)(sh->n_households + 1));
        read_ds(f, "predictions", H5T_NATIVE_FLOAT, pred);
        read_ds(f, "households/row_offset", H5T_NATIVE_INT64, off);
        char head[16] = "";
        TEST_CHECK(gt_h5_attr_read_str(f, "head", head, sizeof head) == 0 && !strcmp(head, gated ? "gated" : "power"));
        int64_t tf_attr = -1;
        TEST_CHECK(gt_h5_attr_read_i64(f, "time_features", &tf_attr) == 0 && tf_attr == F);
        if (gated) { /* default: probability 0.5 for every appliance */
            float gl[15];
            read_ds(f, "appliance_meta/gate_logit", H5T_NATIVE_FLOAT, gl);
            for (int a = 0; a < 15; a++) TEST_CHECK(gl[a] == 0.0f);
        }
        H5Fclose(f);
        int64_t bad_range = 0, bad_nan = 0;
        for (int h = 0; h < sh->n_households; h++) {
            TEST_EQ_INT(off[h], sh->row_offset[h]);
            int64_t n = sh->row_offset[h + 1] - sh->row_offset[h];
            for (int64_t i = 0; i < n; i++)
                for (int a = 0; a < A; a++) {
                    float v = pred[(sh->row_offset[h] + i) * A + a];
                    int edge = i < half || i > n - 1 - (W - 1 - half);
                    if (edge != (isnan(v) != 0)) bad_nan++;
                    if (!isnan(v) && !(v >= 0 && v <= sh->meta[a].max_power_w)) bad_range++;
                }
        }
        TEST_EQ_INT(bad_nan, 0);
        TEST_EQ_INT(bad_range, 0);

        /* the same predictions without eval.off_below_on (raw clipped power) */
        char outR[700];
        snprintf(outR, sizeof outR, "%s/pred_raw.h5", dir);
        gt_eval_config ec_raw = ec;
        gt_nilm_eval_cfg_set(&ec_raw)->off_below_on = 0;
        gt_predict_nilm(data, &em, 1, &ec_raw, outR, self);
        float *raw = malloc(sizeof(float) * (size_t)sh->n_rows * A);
        f = H5Fopen(outR, H5F_ACC_RDONLY, H5P_DEFAULT);
        TEST_REQUIRE(f >= 0);
        read_ds(f, "predictions", H5T_NATIVE_FLOAT, raw);
        H5Fclose(f);

        /* stitching: row i = model output of the window centred on i (batch of one);
         * at or below the on-power threshold the default writes 0 W, the raw file the power */
        /* four fixed rows (first, middle, last full window), then every 61st row of household 1 */
        int64_t check[4 + 200][2] = {{0, half}, {0, 1000}, {1, 2345}, {2, -1}};
        int n_check = 4;
        for (int64_t i = half; i + (W - 1 - half) < sh->row_offset[2] - sh->row_offset[1] && n_check < 204; i += 61)
            check[n_check][0] = 1, check[n_check++][1] = i;
        int n_off = 0, n_on = 0;
        for (int c = 0; c < n_check; c++) {
            int h = (int)check[c][0];
            int64_t n = sh->row_offset[h + 1] - sh->row_offset[h];
            int64_t i = check[c][1] >= 0 ? check[c][1] : n - 1 - (W - 1 - half);
            const float *agg = sh->aggregate + sh->row_offset[h];
            const int64_t *ts = sh->timestamps + sh->row_offset[h];
            float x[5 * 512];
            for (int t = 0; t < W; t++) {
                x[t] = (float)(((double)agg[i - half + t] - ns.mean[0]) / ns.std[0]);
                if (!F) continue;
                /* UTC (the default zone); 1970-01-01 was a Thursday, so +3 days puts Monday 00:00 at 0 */
                int64_t ms = ts[i - half + t];
                double d = 6.283185307179586 * (double)(ms % 86400000) / 86400000.0;
                double wk = 6.283185307179586 * (double)((ms + 3 * INT64_C(86400000)) % (7 * INT64_C(86400000))) /
                            (7 * 86400000.0);
                x[1 * W + t] = (float)sin(d), x[2 * W + t] = (float)cos(d);
                x[3 * W + t] = (float)sin(wk), x[4 * W + t] = (float)cos(wk);
            }
            const float *out = gt_model_forward(m, x, 1);
            for (int a = 0; a < A; a++) {
                double w = out[a] * ns.std[1 + a] + ns.mean[1 + a];
                w = w < 0 ? 0 : w > sh->meta[a].max_power_w ? sh->meta[a].max_power_w : w;
                if (gated && !(out[A + a] > 0)) w = 0; /* the classifier says off */
                int off = w <= sh->meta[a].on_power_w;
                n_off += off, n_on += !off;
                TEST_CLOSE(raw[(sh->row_offset[h] + i) * A + a], w, 1e-3, 1e-5);
                TEST_CLOSE(pred[(sh->row_offset[h] + i) * A + a], off ? 0.0 : w, 1e-3, 1e-5);
            }
        }
        fprintf(stderr, "predict: %d checked values predicted off (0 W), %d on\n", n_off, n_on);
        TEST_CHECK(n_off > 0 && n_on > 0); /* both branches of the rule were exercised */
        free(raw);

        /* the sample day's aggregate column is the file's aggregate at each row's time (whatever
         * the input channels: with time features the window also holds sin/cos channels) */
        {
            FILE *fs = fopen(smp, "r");
            TEST_REQUIRE(fs != NULL);
            int hidx = -1;
            long long hid = -1;
            char from[32] = "";
            TEST_CHECK(fscanf(fs, "# household id %lld (file index %d) from %31[0-9T:Z-]", &hid, &hidx, from) == 3);
            TEST_CHECK(hid >= 0 && strlen(from) == 20 && from[19] == 'Z'); /* the id and an ISO UTC start */
            int c;
            while ((c = fgetc(fs)) != EOF && c != '\n') {}
            static double st[4096], sa[4096];
            int ns_rows = 0;
            while (ns_rows < 4096 && fscanf(fs, "%lf %lf", &st[ns_rows], &sa[ns_rows]) == 2) {
                while ((c = fgetc(fs)) != EOF && c != '\n') {}
                ns_rows++;
            }
            fclose(fs);
            int h = -1;
            for (int k = 0; k < sh->n_households; k++)
                if (sh->index[k] == hidx) h = k;
            TEST_REQUIRE(h >= 0 && ns_rows > 100);
            const float *agg = sh->aggregate + sh->row_offset[h];
            const int64_t *ts = sh->timestamps + sh->row_offset[h];
            int64_t n = sh->row_offset[h + 1] - sh->row_offset[h], best = 0;
            for (int64_t j0 = 0; j0 + 1 < n; j0++) { /* the row of the first sample: most matches */
                if (fabs(agg[j0] - sa[0]) > 0.01) continue;
                int64_t hits = 0;
                for (int r = 0; r < ns_rows; r++) {
                    int64_t j = j0 + llround(st[r] * 3.6e6 / (double)(ts[j0 + 1] - ts[j0]));
                    hits += j < n && fabs(agg[j] - sa[r]) <= 0.01;
                }
                if (hits > best) best = hits;
            }
            fprintf(stderr, "eval sample: %d rows of household %d, %lld match the file's aggregate\n", ns_rows, hidx,
                    (long long)best);
            TEST_EQ_INT(best, ns_rows);
        }

        /* state filter: the calibrated durations lie on the grid and are the same, like the metrics, for
         * any rank count; predict's /on (fixed durations 60 s / 120 s) is the unfiltered states (power above
         * the on-threshold) filtered here over each household's rows (NaN rows are breaks), and changed rows
         * report the raw power (turned on) or 0 W (turned off) */
        {
            gt_nilm_eval f1e;
            gt_eval_nilm(data, &em, 1, &ecf, NULL, self, &f1e);
            TEST_CHECK(f1e.filtered && fP.filtered && !e1.filtered);
            TEST_CHECK(!memcmp(f1e.fill_s, fP.fill_s, sizeof f1e.fill_s) && !memcmp(f1e.min_on_s, fP.min_on_s, sizeof f1e.min_on_s));
            TEST_CHECK(same_metrics(&f1e.test.overall, &fP.test.overall));
            TEST_CHECK(same_metrics(&f1e.holdout.overall, &fP.holdout.overall));
            for (int a = 0; a < 15; a++) {
                const float fg[] = {0, 60, 120, 300, 600, 1200, 2400, 3600, 7200}, mg[] = {0, 60, 120, 300, 600, 900, 1800, 3600};
                int okf = 0, okm = 0;
                for (int k = 0; k < 9; k++) okf += f1e.fill_s[a] == fg[k];
                for (int k = 0; k < 8; k++) okm += f1e.min_on_s[a] == mg[k];
                TEST_CHECK(okf == 1 && okm == 1);
            }
            gt_nilm_eval x1;
            gt_eval_nilm(data, &em, 1, &ecx, NULL, self, &x1); /* fixed: the same durations everywhere */
            TEST_CHECK(x1.filtered && x1.fill_s[0] == 60 && x1.min_on_s[14] == 120);
            float *pf = malloc(sizeof(float) * (size_t)sh->n_rows * A), fill[15], mon[15];
            uint8_t *on = malloc((size_t)sh->n_rows * A), *col = malloc((size_t)sh->n_rows), *brk = malloc((size_t)sh->n_rows);
            hid_t ff = H5Fopen(outF, H5F_ACC_RDONLY, H5P_DEFAULT);
            TEST_REQUIRE(ff >= 0);
            read_ds(ff, "predictions", H5T_NATIVE_FLOAT, pf);
            read_ds(ff, "on", H5T_NATIVE_UINT8, on);
            read_ds(ff, "appliance_meta/fill_s", H5T_NATIVE_FLOAT, fill);
            read_ds(ff, "appliance_meta/min_on_s", H5T_NATIVE_FLOAT, mon);
            int64_t sf = -1;
            TEST_CHECK(gt_h5_attr_read_i64(ff, "state_filter", &sf) == 0 && sf == 1);
            H5Fclose(ff);
            int n_dur = 0;
            int64_t changed = 0, bad_on = 0, bad_w = 0, turned_on = 0, turned_off = 0;
            for (int a = 0; a < A; a++) {
                TEST_CHECK(fill[a] == 60 && mon[a] == 120);
                n_dur += fill[a] > 0 || mon[a] > 0;
                for (int h = 0; h < sh->n_households; h++) {
                    const int64_t r0 = sh->row_offset[h], n = sh->row_offset[h + 1] - r0;
                    for (int64_t i = 0; i < n; i++) {
                        float v = pred[(r0 + i) * A + a];
                        col[i] = v > sh->meta[a].on_power_w;
                        brk[i] = isnan(v) || (i > 0 && isnan(pred[(r0 + i - 1) * A + a]));
                    }
                    changed += gt_nilm_state_filter(col, brk, n, sh->period_s[h], fill[a], mon[a]);
                    for (int64_t i = 0; i < n; i++) {
                        const size_t j = (size_t)(r0 + i) * A + a;
                        int was = pred[j] > sh->meta[a].on_power_w;
                        bad_on += on[j] != col[i];
                        if (col[i] == was) bad_w += !(pf[j] == pred[j] || (isnan(pf[j]) && isnan(pred[j])));
                        else if (col[i]) turned_on++, bad_w += !(pf[j] >= 0 && pf[j] <= sh->meta[a].max_power_w);
                        else turned_off++, bad_w += pf[j] != 0.0f;
                    }
                }
            }
            fprintf(stderr, "state filter: %d of 15 appliances filtered, %lld rows changed (%lld on, %lld off)\n", n_dur,
                    (long long)changed, (long long)turned_on, (long long)turned_off);
            TEST_EQ_INT(bad_on, 0);
            TEST_EQ_INT(bad_w, 0);
            TEST_CHECK(n_dur > 0 && changed > 0 && changed == turned_on + turned_off);
            free(pf), free(on), free(col), free(brk);
        }

        /* eval at stride 1 == metrics recomputed from the predicted file over the test rows */
        gt_nilm_acc acc[15], all;
        memset(acc, 0, sizeof acc);
        memset(&all, 0, sizeof all);
        for (int h = 0; h < sh->n_households; h++) {
            if (h % 4 == 3) continue; /* held out */
            int64_t n = sh->row_offset[h + 1] - sh->row_offset[h], b1, b2;
            int ho;
            gt_data_item_split(n, sh->index[h], dc.split_train, dc.split_val, 4, &b1, &b2, &ho);
            TEST_CHECK(!ho);
            for (int64_t s = b2; s + W <= n; s++) {
                int64_t r = sh->row_offset[h] + s + half;
                for (int a = 0; a < A; a++)
                    gt_nilm_acc_add(&acc[a], sh->appliances[r * A + a], pred[r * A + a], sh->meta[a].on_power_w, 0);
            }
        }
        for (int a = 0; a < A; a++) {
            gt_nilm_metrics mm;
            gt_nilm_metrics_from_acc(&acc[a], &mm);
            TEST_CLOSE(e1.test.app[a].mae_w, mm.mae_w, 1e-3, 1e-4);
            TEST_CLOSE(e1.test.app[a].n, mm.n, 0, 0);
            gt_nilm_acc_merge(&all, &acc[a]);
        }
        gt_nilm_metrics mo;
        gt_nilm_metrics_from_acc(&all, &mo);
        TEST_CLOSE(e1.test.overall.ea, mo.ea, 1e-5, 0);
        printf("test split: EA %.4f F1 %.4f MAE %.2f W over %lld windows; holdout EA %.4f\n", e1.test.overall.ea,
               e1.test.overall.f1, e1.test.overall.mae_w, (long long)e1.test.n_windows, e1.holdout.overall.ea);
        free(pred), free(off);
        gt_nilm_shard_free(sh);
        MPI_Comm_free(&self);
    }

    /* ensemble (eval.models): member 2 is the model with its parameters scaled by 1 + 0.2 sin(i);
     * member 3 an exact copy. The pair's metrics are the same for any rank count, the pair differs
     * from either member, and where both members' raw outputs lie inside (0, max power) and their
     * gates agree on "on", the ensemble's raw prediction is the members' mean; model + exact copy
     * evaluates like the model alone. */
    {
        gt_engine *e2 = gt_engine_create(GT_ENGINE_HOST, &mc), *e3 = gt_engine_create(GT_ENGINE_HOST, &mc);
        gt_model *m2 = gt_engine_model(e2), *m3 = gt_engine_model(e3);
        gt_norm_stats ns2;
        TEST_REQUIRE(er_load(run, m2, &ns2) == 30);
        TEST_REQUIRE(er_load(run, m3, &ns2) == 30);
        for (size_t i = 0; i < m2->n_params; i++) m2->params[i] *= (float)(1.0 + 0.2 * sin((double)i));
        gt_eval_model ems[2] = {em, em}, same[2] = {em, em};
        ems[1].e = e2, ems[1].name = "perturbed";
        same[1].e = e3;
        gt_nilm_eval pP, p1, s1;
        gt_eval_nilm(data, ems, 2, &ec, NULL, world, &pP);
        char outE[700], out2[700], outA[700];
        snprintf(outE, sizeof outE, "%s/pred_ens.h5", dir);
        snprintf(out2, sizeof out2, "%s/pred_m2.h5", dir);
        snprintf(outA, sizeof outA, "%s/pred_m1raw.h5", dir);
        gt_eval_config ec_raw = ec;
        gt_nilm_eval_cfg_set(&ec_raw)->off_below_on = 0;
        gt_predict_nilm(data, ems, 2, &ec_raw, outE, world);
        gt_predict_nilm(data, &ems[1], 1, &ec_raw, out2, world);
        gt_predict_nilm(data, &em, 1, &ec_raw, outA, world);
        MPI_Comm self2;
        MPI_Comm_split(world, rank == 0 ? 0 : MPI_UNDEFINED, 0, &self2);
        if (rank == 0) {
            gt_nilm_eval e0, e2;
            gt_eval_nilm(data, ems, 2, &ec, NULL, self2, &p1);
            gt_eval_nilm(data, &em, 1, &ec, NULL, self2, &e0);
            gt_eval_nilm(data, &ems[1], 1, &ec, NULL, self2, &e2);
            gt_eval_nilm(data, same, 2, &ec, NULL, self2, &s1);
            TEST_EQ_INT(p1.n_models, 2);
            TEST_EQ_INT(e0.n_models, 1);
            TEST_CHECK(same_metrics(&p1.test.overall, &pP.test.overall));
            TEST_CHECK(same_metrics(&p1.holdout.overall, &pP.holdout.overall));
            for (int a = 0; a < 15; a++) TEST_CHECK(same_metrics(&p1.test.app[a], &pP.test.app[a]));
            TEST_CHECK(p1.test.overall.mae_w != e0.test.overall.mae_w && p1.test.overall.mae_w != e2.test.overall.mae_w);
            TEST_CLOSE(s1.test.overall.ea, e0.test.overall.ea, 1e-6, 1e-9);
            TEST_CLOSE(s1.test.overall.f1, e0.test.overall.f1, 1e-6, 1e-9);
            TEST_CLOSE(s1.holdout.overall.mae_w, e0.holdout.overall.mae_w, 1e-6, 1e-6);
            fprintf(stderr, "ensemble: test EA %.4f / %.4f / pair %.4f, MAE %.2f / %.2f / pair %.2f W\n",
                    e0.test.overall.ea, e2.test.overall.ea, p1.test.overall.ea, e0.test.overall.mae_w,
                    e2.test.overall.mae_w, p1.test.overall.mae_w);
            gt_nilm_shard *sh = gt_nilm_shard_read(data, self2);
            const size_t N = (size_t)sh->n_rows * 15;
            float *pe = malloc(sizeof(float) * N), *pa = malloc(sizeof(float) * N), *pb = malloc(sizeof(float) * N);
            const char *paths[3] = {outE, outA, out2};
            float *bufs[3] = {pe, pa, pb};
            for (int k = 0; k < 3; k++) {
                hid_t f = H5Fopen(paths[k], H5F_ACC_RDONLY, H5P_DEFAULT);
                TEST_REQUIRE(f >= 0);
                read_ds(f, "predictions", H5T_NATIVE_FLOAT, bufs[k]);
                if (k == 0) {
                    int64_t nm = 0;
                    TEST_CHECK(gt_h5_attr_read_i64(f, "n_models", &nm) == 0 && nm == 2);
                }
                H5Fclose(f);
            }
            int64_t n_mean = 0, bad_mean = 0, n_diff = 0;
            for (size_t j = 0; j < N; j++) {
                const float hi = sh->meta[j % 15].max_power_w;
                if (isnan(pa[j])) continue;
                n_diff += pe[j] != pa[j];
                if (!(pa[j] > 0 && pa[j] < hi && pb[j] > 0 && pb[j] < hi)) continue;
                n_mean++;
                bad_mean += fabs(pe[j] - 0.5 * (pa[j] + pb[j])) > 1e-3 * (1.0 + fabs(pe[j]));
            }
            fprintf(stderr, "ensemble: %lld values inside both members' range, %lld differ from the mean; %lld differ from member 1\n",
                    (long long)n_mean, (long long)bad_mean, (long long)n_diff);
            TEST_CHECK(n_mean > (gated ? 100 : 1000) && n_diff > 1000); /* gated: both gates rarely on after 30 steps */
            TEST_EQ_INT(bad_mean, 0);
            free(pe), free(pa), free(pb);
            gt_nilm_shard_free(sh);
        }
        /* a specialist member (data.appliances = fridge+kettle: the perturbed model trained on two
         * appliances only) counts for its appliances alone: with the full model, the other 13
         * columns are the full model's outputs unchanged (predict: bitwise; eval: every metric), the
         * two the pair's mean (eval: the metrics of the pair above, the specialist as member 0);
         * alone, it predicts NaN for the other appliances and evaluates only its own. */
        {
            gt_eval_model mix[2] = {ems[1], em}, solo = ems[1];
            mix[0].name = solo.name = "specialist";
            gt_nilm_data_config *spec = gt_nilm_data_cfg_set(&mix[0].data);
            snprintf(spec->appliances, sizeof spec->appliances, "fridge+kettle");
            solo.data = mix[0].data;
            const int is_spec[15] = {[0] = 1, [2] = 1};
            char outM[700], outS[700];
            snprintf(outM, sizeof outM, "%s/pred_mix.h5", dir);
            snprintf(outS, sizeof outS, "%s/pred_spec.h5", dir);
            gt_predict_nilm(data, mix, 2, &ec_raw, outM, world);
            gt_predict_nilm(data, &solo, 1, &ec_raw, outS, world);
            gt_nilm_eval r1, q1;
            gt_eval_nilm(data, mix, 2, &ec, NULL, world, &r1);
            gt_eval_nilm(data, &solo, 1, &ec, NULL, world, &q1);
            if (rank == 0) {
                gt_nilm_eval e0, e2;
                gt_eval_nilm(data, &em, 1, &ec, NULL, self2, &e0);
                gt_eval_nilm(data, &ems[1], 1, &ec, NULL, self2, &e2);
                for (int a = 0; a < 15; a++) {
                    const gt_nilm_metrics *want = is_spec[a] ? &p1.test.app[a] : &e0.test.app[a];
                    const gt_nilm_metrics *wanth = is_spec[a] ? &p1.holdout.app[a] : &e0.holdout.app[a];
                    TEST_CHECK(same_metrics(&r1.test.app[a], want));
                    TEST_CHECK(same_metrics(&r1.holdout.app[a], wanth));
                    TEST_CHECK(is_spec[a] ? q1.test.app[a].n > 0 && same_metrics(&q1.test.app[a], &e2.test.app[a])
                                          : q1.test.app[a].n == 0 && isnan(q1.test.app[a].mae_w));
                }
                gt_nilm_shard *sh = gt_nilm_shard_read(data, self2);
                const size_t N = (size_t)sh->n_rows * 15;
                float *pm = malloc(sizeof(float) * N), *ps = malloc(sizeof(float) * N), *pa = malloc(sizeof(float) * N),
                      *pb = malloc(sizeof(float) * N), *pe = malloc(sizeof(float) * N);
                const char *paths[5] = {outM, outS, outA, out2, outE};
                float *bufs[5] = {pm, ps, pa, pb, pe};
                for (int k = 0; k < 5; k++) {
                    hid_t f = H5Fopen(paths[k], H5F_ACC_RDONLY, H5P_DEFAULT);
                    TEST_REQUIRE(f >= 0);
                    read_ds(f, "predictions", H5T_NATIVE_FLOAT, bufs[k]);
                    if (k == 1) {
                        char apps[64] = "";
                        TEST_CHECK(gt_h5_attr_read_str(f, "appliances", apps, sizeof apps) == 0 &&
                                   !strcmp(apps, "fridge+kettle"));
                    }
                    H5Fclose(f);
                }
                int64_t off_full = 0, off_pair = 0, off_solo = 0, n_spec = 0;
                for (size_t j = 0; j < N; j++) {
                    const int a = (int)(j % 15);
                    if (isnan(pa[j])) continue; /* an edge row: NaN in every file */
                    if (!is_spec[a]) {
                        off_full += memcmp(&pm[j], &pa[j], sizeof(float)) != 0;
                        off_solo += !isnan(ps[j]);
                    } else {
                        n_spec++;
                        off_pair += memcmp(&pm[j], &pe[j], sizeof(float)) != 0; /* the pair: the same two members */
                        off_solo += memcmp(&ps[j], &pb[j], sizeof(float)) != 0;
                    }
                }
                fprintf(stderr, "specialist: %lld values of its 2 appliances; off the full model %lld, off the pair %lld, "
                                "off the specialist alone / not NaN %lld\n",
                        (long long)n_spec, (long long)off_full, (long long)off_pair, (long long)off_solo);
                TEST_CHECK(n_spec > 1000);
                TEST_EQ_INT(off_full, 0);
                TEST_EQ_INT(off_pair, 0);
                TEST_EQ_INT(off_solo, 0);
                free(pm), free(ps), free(pa), free(pb), free(pe);
                gt_nilm_shard_free(sh);
            }
        }
        if (rank == 0) MPI_Comm_free(&self2);
        gt_engine_free(e2), gt_engine_free(e3);
    }
    gt_engine_free(eng);
    MPI_Barrier(world);
    if (rank == 0 && !gt_test_failures) {
        char cmd[1400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd)) fprintf(stderr, "cannot remove %s\n", dir);
    }
    int fails = gt_test_failures;
    MPI_Allreduce(MPI_IN_PLACE, &fails, 1, MPI_INT, MPI_SUM, world);
    gt_dist_finalize();
    return fails ? 1 : 0;
}
