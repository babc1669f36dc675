/* Anomaly scoring with stored tiny LSTM runs (run at 1, 2 and 4 ranks).
 *
 * Loads the PdM runs of the fixture eval_runs (tests/eval/eval_runs.h,
 * trained once by test_eval_runs_setup on a small wind farm with frequent
 * shocks): a tiny lstm of window 32 (whose end-of-run evaluation wrote
 * eval.json with a "pdm" object) and one of window 16, then checks:
 *   - eval on all ranks == eval on rank 0 alone (threshold, every metric);
 *   - predict on all ranks == on rank 0 alone, byte for byte;
 *   - the predicted file: row 0 has no score, every row above the threshold
 *     is inside an alarm, every alarm starts above the threshold;
 *   - the threshold is >= margin x the validation quantile recomputed from
 *     the file, and the validation rows raise at most the budgeted alarms;
 *   - multi-scale (both models) works and is rank-independent too;
 *   - eval.level: the default is the quantile; robust is
 *     median + 3 x 1.4826 MAD of the same validation scores (recomputed),
 *     the threshold >= margin x it, the same on P ranks as on one;
 *   - eval.flat_line: a channel frozen at one value on turbine 0's test rows
 *     (a copy of the file) alarms there, its rows naming that channel, while
 *     without the term (or on the original file) none of those rows does;
 *     on the original file the term changes no alarm. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset.h"
#include "dist/comm.h"
#include "eval/eval.h"
#include "eval/eval_impl.h"
#include "eval/eval_runs.h"
#include "io/h5.h"
#include "io/read.h"
#include "pdm/pdm.h"
#include "pdm/pdm_impl.h"
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

/* dst := a copy of src whose channel c holds, on rows [a, b), the value of row a */
static void stuck_copy(const char *src, const char *dst, int c, int64_t a, int64_t b) {
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", src, dst);
    TEST_REQUIRE(system(cmd) == 0);
    hid_t f = H5Fopen(dst, H5F_ACC_RDWR, H5P_DEFAULT);
    TEST_REQUIRE(f >= 0);
    hid_t d = H5Dopen2(f, "signals", H5P_DEFAULT), sp = H5Dget_space(d);
    hsize_t dims[2];
    H5Sget_simple_extent_dims(sp, dims, NULL);
    hsize_t st[2] = {(hsize_t)a, (hsize_t)c}, cnt[2] = {(hsize_t)(b - a), 1};
    float *v = malloc(sizeof(float) * (size_t)(b - a));
    hid_t ms = H5Screate_simple(1, &cnt[0], NULL);
    H5Sselect_hyperslab(sp, H5S_SELECT_SET, st, NULL, cnt, NULL);
    TEST_REQUIRE(H5Dread(d, H5T_NATIVE_FLOAT, ms, sp, H5P_DEFAULT, v) >= 0);
    for (int64_t i = 1; i < b - a; i++) v[i] = v[0];
    TEST_REQUIRE(H5Dwrite(d, H5T_NATIVE_FLOAT, ms, sp, H5P_DEFAULT, v) >= 0);
    free(v);
    H5Sclose(ms), H5Sclose(sp), H5Dclose(d), H5Fclose(f);
}

/* /score, /alarm and /top_channel of a predicted file */
static void read_pred(const char *path, int64_t n, float *score, uint8_t *alarm, int16_t *top, double *thr) {
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    TEST_REQUIRE(f >= 0);
    hid_t d = H5Dopen2(f, "score", H5P_DEFAULT);
    H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, score);
    H5Dclose(d);
    d = H5Dopen2(f, "alarm", H5P_DEFAULT);
    H5Dread(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, alarm);
    H5Dclose(d);
    d = H5Dopen2(f, "top_channel", H5P_DEFAULT);
    H5Dread(d, H5T_NATIVE_INT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, top);
    H5Dclose(d);
    hid_t at = H5Aopen(f, "threshold", H5P_DEFAULT);
    H5Aread(at, H5T_NATIVE_DOUBLE, thr);
    H5Aclose(at);
    H5Fclose(f);
    (void)n;
}

/* the run of window T of the fixture, as trained (C channels) */
static gt_engine *load(const char *run, int T, int C, gt_norm_stats *ns, long long want_step) {
    gt_model_config mc;
    er_pdm_model(&mc, T, C);
    mc.max_batch = 16;
    gt_engine *e = gt_engine_create(GT_ENGINE_HOST, &mc);
    TEST_REQUIRE(er_load(run, gt_engine_model(e), ns) == want_step);
    TEST_EQ_INT(ns->n, C);
    return e;
}

static int same_eval(const gt_pdm_eval *a, const gt_pdm_eval *b) {
    int ok = a->threshold == b->threshold && !memcmp(&a->acc, &b->acc, sizeof a->acc) &&
             !memcmp(&a->overall, &b->overall, sizeof a->overall) && a->n_turbines == b->n_turbines &&
             !memcmp(a->by_cond, b->by_cond, sizeof a->by_cond) && !memcmp(a->by_type, b->by_type, sizeof a->by_type);
    for (int i = 0; ok && i < a->n_turbines; i++) ok = !memcmp(&a->turbines[i], &b->turbines[i], sizeof a->turbines[i]);
    return ok;
}

static double lin_gauss(uint64_t *s) { /* xorshift64* and Box-Muller */
    double u[2];
    for (int i = 0; i < 2; i++) {
        *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
        u[i] = ((double)((*s * 2685821657736338717ULL) >> 11) + 0.5) / 9007199254740992.0;
    }
    return sqrt(-2 * log(u[0])) * cos(6.283185307179586 * u[1]);
}

/* eval.nbm_linear's stage (pdm_linear.c) on a plant it can describe: a bearing temperature = 0.8 x the 2 h
 * EWMA of the power + 0.5 x the ambient temperature + noise (sd 0.05), next to a model whose prediction is
 * noise (sd 1): fitted on 2000 rows, the stage's residual on the 1000 rows after them is the plant's noise,
 * the weight of the useless prediction about 0; a model that predicts the plant keeps weight ~1 on it. */
static void lin_stage_unit(void) {
    gt_pdm_shard sh = {0};
    gt_io_channel ch[3] = {{"power_avg", "kW", "Grid power"},
                           {"sensor_amb_avg", "degC", "Ambient temperature"},
                           {"sensor_bearing_avg", "degC", "Temperature gearbox bearing"}};
    sh.n_channels = 3, sh.channels = ch;
    const uint8_t role[3] = {GT_NBM_INPUT, GT_NBM_INPUT, GT_NBM_TARGET};
    enum { N = 3000, NFIT = 2000 };
    float *sig = malloc(sizeof(float) * N * 3), *d = malloc(sizeof(float) * N * 3);
    uint64_t rs = 7;
    double p = 0, e = 0, a12 = 2.0 / (12 + 1.0);
    for (int r = 0; r < N; r++) {
        p += 0.1 * lin_gauss(&rs), p *= 0.995;
        e = r == 0 ? p : e + a12 * (p - e);
        const double amb = sin(r / 144.0 * 6.283), y = 0.8 * e + 0.5 * amb + 0.05 * lin_gauss(&rs);
        sig[r * 3] = (float)p, sig[r * 3 + 1] = (float)amb, sig[r * 3 + 2] = (float)y;
        d[r * 3] = d[r * 3 + 1] = NAN;
        d[r * 3 + 2] = (float)(lin_gauss(&rs) - (double)(float)y); /* prediction noise - value */
    }
    gt_norm_stats ns = {.n = 3};
    for (int c = 0; c < 3; c++) ns.mean[c] = 0, ns.std[c] = 1;
    for (int pass = 0; pass < 2; pass++) { /* 0: a useless model; 1: a model predicting the plant */
        if (pass == 1)
            for (int r = 0; r < N; r++) d[r * 3 + 2] = (float)(0.01 * lin_gauss(&rs));
        gt_pdm_lin L;
        gt_pdm_lin_init(&L, &sh, role);
        TEST_EQ_INT(L.nf, 2);
        TEST_EQ_INT(L.n_tg, 1);
        double *rec = calloc((size_t)L.rec, sizeof(double)), *sum = calloc((size_t)L.rec, sizeof(double));
        gt_pdm_lin_state st;
        gt_pdm_lin_begin(&st, &L, sig, &ns, 1.0 / 600);
        for (int r = 0; r < NFIT; r++) gt_pdm_lin_accumulate(&st, r, d + r * 3, rec);
        gt_pdm_lin_combine(&L, rec, 1, sum);
        TEST_EQ_INT(gt_pdm_lin_solve(&L, sum), 1);
        gt_pdm_lin_begin(&st, &L, sig, &ns, 1.0 / 600);
        double s0 = 0, s1 = 0;
        float out[3];
        for (int r = NFIT / 2; r < N; r++) {
            gt_pdm_lin_apply(&st, r, d + r * 3, out);
            if (r < NFIT) continue;
            s0 += (double)d[r * 3 + 2] * d[r * 3 + 2], s1 += (double)out[2] * out[2];
        }
        const double rms0 = sqrt(s0 / (N - NFIT)), rms1 = sqrt(s1 / (N - NFIT)), wp = L.beta[2 * (L.m + 1) + L.m];
        printf("linear stage, %s model: residual rms %.4f -> %.4f, weight of the prediction %.3f\n",
               pass ? "a good" : "a useless", rms0, rms1, wp);
        if (pass == 0) TEST_CHECK(rms1 < 0.1 && rms0 > 0.5 && fabs(wp) < 0.05);
        else TEST_CHECK(rms1 < 0.1 && fabs(wp - 1) < 0.2);
        free(rec), free(sum);
        gt_pdm_lin_free(&L);
    }
    free(sig), free(d);
}

int main(int argc, char **argv) {
    gt_dist_init(&argc, &argv);
    gt_task_register(&gt_task_def_pdm); /* this folder's task alone (the test links the PdM folder, not every task) */
    MPI_Comm world = MPI_COMM_WORLD;
    int rank, size;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    char dir[512], data[512], run32[512], run16[512];
    if (rank == 0) lin_stage_unit();
    er_path(data, sizeof data, "farm.h5");
    er_path(run32, sizeof run32, "pdm-32");
    er_path(run16, sizeof run16, "pdm-16");
    er_path(dir, sizeof dir, "complete");
    if (access(dir, R_OK) != 0) { /* the fixture's setup did not run or failed */
        if (rank == 0) fprintf(stderr, "%s: no stored runs (run the ctest fixture test_eval_runs_setup)\n", dir);
        gt_dist_finalize();
        return 1;
    }
    /* this test's outputs: a directory of its own beside the runs */
    snprintf(dir, sizeof dir, "%s/out-pdm-np%d", er_dir(), size);
    if (rank == 0) {
        char cmd[1100];
        snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
        TEST_REQUIRE(system(cmd) == 0);
    }
    MPI_Barrier(world);
    gt_data_config d32, d16; /* the runs' data settings (what they were trained with) */
    er_pdm_data(&d32, 32);
    er_pdm_data(&d16, 16);

    if (rank == 0) {
        char p[700];
        long n;
        snprintf(p, sizeof p, "%s/eval.json", run32);
        char *s = slurp(p, &n);
        TEST_REQUIRE(s);
        cJSON *j = cJSON_Parse(s);
        TEST_REQUIRE(j);
        TEST_CHECK(!strcmp(cJSON_GetObjectItem(j, "task")->valuestring, "pdm"));
        cJSON *pdm = cJSON_GetObjectItem(j, "pdm");
        TEST_REQUIRE(cJSON_IsObject(pdm));
        const char *keys[] = {"threshold", "point", "event", "by_turbine", "by_machine_type", "by_condition", "care_score"};
        for (int k = 0; k < 7; k++) TEST_CHECK(cJSON_GetObjectItem(pdm, keys[k]) != NULL);
        cJSON *ev = cJSON_GetObjectItem(pdm, "event");
        const char *ek[] = {"n_events", "n_detected", "recall", "precision", "f05", "false_alarms_per_turbine_day",
                            "detection_delay_s_mean", "turbine_days"};
        for (int k = 0; k < 8; k++) TEST_CHECK(cJSON_GetObjectItem(ev, ek[k]) != NULL);
        TEST_CHECK(cJSON_GetObjectItem(ev, "n_events")->valuedouble >= 1);
        TEST_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(pdm, "by_turbine")), 3);
        TEST_CHECK(cJSON_IsNull(cJSON_GetObjectItem(j, "nilm")));
        cJSON_Delete(j);
        free(s);
    }

    gt_pdm_shard *probe = gt_pdm_shard_read(data, world);
    const int C = probe->n_channels;
    gt_pdm_shard_free(probe);
    gt_eval_model ems[2];
    gt_norm_stats ns32, ns16;
    gt_engine *m32 = load(run32, 32, C, &ns32, 40), *m16 = load(run16, 16, C, &ns16, 20);
    ems[0] = (gt_eval_model){.e = m32, .ns = ns32, .data = d32, .name = run32};
    ems[1] = (gt_eval_model){.e = m16, .ns = ns16, .data = d16, .name = run16};
    ems[0].data.task = ems[1].data.task = gt_task_id(gt_task_by_name("pdm"));
    gt_eval_config ec;
    gt_eval_config_defaults(&ec);

    MPI_Comm self;
    MPI_Comm_split(world, rank == 0 ? 0 : MPI_UNDEFINED, 0, &self);
    gt_pdm_eval eP, e1, mP, m1;
    char outP[700], out1[700];
    snprintf(outP, sizeof outP, "%s/scores_p.h5", dir);
    snprintf(out1, sizeof out1, "%s/scores_1.h5", dir);
    gt_eval_pdm(data, ems, 1, &ec, NULL, world, &eP);
    gt_eval_pdm(data, ems, 2, &ec, NULL, world, &mP);
    /* the per-channel score with each channel scaled by its calibration quantile (eval.channel_quantile,
     * gathered over the ranks) and by its calibration mean */
    gt_eval_config ecC = ec, ecM = ec;
    gt_pdm_eval_cfg_set(&ecC)->score = gt_pdm_eval_cfg_set(&ecM)->score = GT_PDM_SCORE_CHANNEL;
    gt_pdm_eval_cfg_set(&ecM)->channel_quantile = 0;
    gt_pdm_eval eC, eM, eC1;
    gt_eval_pdm(data, ems, 1, &ecC, NULL, world, &eC);
    gt_eval_pdm(data, ems, 1, &ecM, NULL, world, &eM);
    TEST_CHECK(gt_pdm_eval_cfg_set(&ecC)->channel_quantile == 0.99 && isfinite(eC.threshold) && isfinite(eM.threshold));
    /* a channel's 0.99 quantile of its squared EWMA residual is above its mean: smaller terms, lower threshold */
    TEST_CHECK(eC.threshold < eM.threshold);
    printf("channel score: threshold %.4g (by the 0.99 quantile) vs %.4g (by the mean)\n", eC.threshold, eM.threshold);
    gt_predict_pdm(data, ems, 1, &ec, outP, world);
    gt_eval_config ecR = ec; /* eval.level = robust */
    gt_pdm_eval_cfg_set(&ecR)->level = GT_PDM_LEVEL_ROBUST;
    gt_pdm_eval eR, eR1;
    gt_eval_pdm(data, ems, 1, &ecR, NULL, world, &eR);
    /* eval.flat_line: channel 0 of turbine 0 frozen from its test split's start (row 0.85 n) to its end */
    char stuck[700], predS[700], predS0[700], predN0[700];
    snprintf(stuck, sizeof stuck, "%s/stuck.h5", dir);
    snprintf(predS, sizeof predS, "%s/pred_stuck.h5", dir);
    snprintf(predS0, sizeof predS0, "%s/pred_stuck_noflat.h5", dir);
    snprintf(predN0, sizeof predN0, "%s/pred_noflat.h5", dir);
    const int64_t st0 = llround(0.85 * 8640);
    if (rank == 0) stuck_copy(data, stuck, 0, st0, 8640);
    MPI_Barrier(world);
    gt_eval_config ecF = ec;
    gt_pdm_eval_cfg_set(&ecF)->flat_line = 0;
    gt_predict_pdm(stuck, ems, 1, &ec, predS, world);
    gt_predict_pdm(stuck, ems, 1, &ecF, predS0, world);
    gt_predict_pdm(data, ems, 1, &ecF, predN0, world);
    /* data.items filter of the run: only turbine id 1 calibrates and is evaluated */
    gt_eval_model only1 = ems[0];
    char ferr[128];
    TEST_REQUIRE(gt_data_filter_parse(&only1.data.items, "1", ferr, sizeof ferr) == 0);
    gt_pdm_eval eF;
    gt_eval_pdm(data, &only1, 1, &ec, NULL, world, &eF);
    TEST_EQ_INT(eF.n_turbines, 3);
    TEST_CHECK(!eF.turbines[0].skipped && eF.turbines[1].skipped && eF.turbines[2].skipped);
    TEST_CLOSE(eF.turbines[1].acc.rows + eF.turbines[2].acc.rows, 0, 0, 0);
    TEST_CLOSE(eF.acc.rows, 8640 - llround(0.85 * 8640), 0, 0);
    gt_pdm_eval_free(&eF);
    if (rank == 0) {
        gt_eval_pdm(data, ems, 1, &ec, NULL, self, &e1);
        gt_eval_pdm(data, ems, 2, &ec, NULL, self, &m1);
        gt_predict_pdm(data, ems, 1, &ec, out1, self);
        TEST_CHECK(same_eval(&eP, &e1));
        TEST_CHECK(same_eval(&mP, &m1));
        gt_eval_pdm(data, ems, 1, &ecR, NULL, self, &eR1);
        TEST_CHECK(same_eval(&eR, &eR1) && eR.quantile_value == eR1.quantile_value);
        gt_pdm_eval_free(&eR1);
        gt_eval_pdm(data, ems, 1, &ecC, NULL, self, &eC1);
        TEST_CHECK(same_eval(&eC, &eC1)); /* the quantiles' gather is rank-independent */
        gt_pdm_eval_free(&eC1);
        TEST_CHECK(isfinite(e1.threshold) && e1.threshold > 0 && isfinite(m1.threshold));
        TEST_CHECK(e1.overall.n_events >= 1);
        TEST_CLOSE(e1.overall.turbine_days, (8640 * 0.15 * 2 + 8640) / 86400.0, 2e-4, 0);
        printf("single: thr %.4g events %g detected %g FA/day %.2f; multi-scale: thr %.4g detected %g FA/day %.2f\n",
               e1.threshold, e1.overall.n_events, e1.overall.n_detected, e1.overall.false_alarms_per_turbine_day,
               m1.threshold, m1.overall.n_detected, m1.overall.false_alarms_per_turbine_day);
        long n1, nP;
        char *b1 = slurp(out1, &n1), *bP = slurp(outP, &nP);
        TEST_REQUIRE(b1 && bP);
        TEST_CHECK(n1 == nP && !memcmp(b1, bP, (size_t)n1));
        free(b1), free(bP);

        /* the file against the shard */
        gt_pdm_shard *sh = gt_pdm_shard_read(data, self);
        hid_t f = H5Fopen(out1, H5F_ACC_RDONLY, H5P_DEFAULT);
        TEST_REQUIRE(f >= 0);
        float *score = malloc(sizeof(float) * (size_t)sh->n_rows);
        uint8_t *alarm = malloc((size_t)sh->n_rows);
        hid_t d = H5Dopen2(f, "score", H5P_DEFAULT);
        H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, score);
        H5Dclose(d);
        d = H5Dopen2(f, "alarm", H5P_DEFAULT);
        H5Dread(d, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, alarm);
        H5Dclose(d);
        double thr = NAN;
        hid_t at = H5Aopen(f, "threshold", H5P_DEFAULT);
        H5Aread(at, H5T_NATIVE_DOUBLE, &thr);
        H5Aclose(at);
        char models[4096] = "", want[4096];
        TEST_CHECK(gt_h5_attr_read_str(f, "models", models, sizeof models) == 0);
        snprintf(want, sizeof want, "%s(window %d)", run32, gt_engine_config(ems[0].e)->window);
        TEST_CHECK(!strcmp(models, want));
        H5Fclose(f);
        /* predict's and eval's thresholds agree to float rounding: on a CPU
         * without AVX-512 they differ in the 7th digit (open in issue #37) */
        TEST_CLOSE(thr, e1.threshold, 0, 1e-6);
        int64_t bad = 0;
        double *val = malloc(sizeof(double) * (size_t)sh->n_rows);
        int64_t nv = 0, val_alarms = 0;
        double val_days = 0;
        const int64_t guard = 32 + (int64_t)ceil(3 * gt_pdm_ewma_span_rows(&ec, 1.0));
        for (int k = 0; k < sh->n_turbines; k++) {
            int64_t r0 = sh->row_offset[k], n = sh->row_offset[k + 1] - r0;
            TEST_CHECK(isnan(score[r0]));
            for (int64_t r = 1; r < n; r++) {
                if (score[r0 + r] > thr && !alarm[r0 + r]) bad++;
                if (alarm[r0 + r] && (r == 0 || !alarm[r0 + r - 1]) && !(score[r0 + r] > thr)) bad++;
            }
            int64_t b1, b2;
            int ho;
            gt_data_item_split(n, sh->index[k], 0.7, 0.15, 3, &b1, &b2, &ho);
            if (ho) continue;
            float *seg = malloc(sizeof(float) * (size_t)(b2 - b1));
            int64_t last = -1 - guard;
            for (int64_t r = 0; r < b2; r++) {
                if (sh->labels[r0 + r]) last = r;
                int ex = r - last <= guard;
                if (r >= b1) {
                    seg[r - b1] = ex ? NAN : score[r0 + r];
                    if (!ex && isfinite(score[r0 + r])) val[nv++] = score[r0 + r];
                }
            }
            gt_alarm_run *runs = malloc(sizeof(gt_alarm_run) * (size_t)(b2 - b1));
            val_alarms += gt_alarm_runs(seg, b2 - b1, thr, 0, (int64_t)llround(gt_pdm_eval_cfg_set(&ec)->merge_gap_s), runs);
            val_days += (double)(b2 - b1) / 86400.0;
            free(runs), free(seg);
        }
        TEST_EQ_INT(bad, 0);
        double q = gt_quantile(val, nv, gt_pdm_eval_cfg_set(&ec)->quantile);
        TEST_EQ_INT(nv, e1.n_val_scores);
        TEST_CLOSE(q, e1.quantile_value, 1e-6, 1e-6);
        TEST_CHECK(thr >= gt_pdm_eval_cfg_set(&ec)->margin * q * (1 - 1e-9));
        TEST_CHECK((double)val_alarms <= gt_pdm_eval_cfg_set(&ec)->val_false_alarms * val_days + 1e-9);
        /* eval.level: the quantile by default; robust = median + 3 x 1.4826 MAD */
        TEST_EQ_INT(e1.level, GT_PDM_LEVEL_QUANTILE);
        TEST_EQ_INT(eR.level, GT_PDM_LEVEL_ROBUST);
        const double med = gt_quantile(val, nv, 0.5);
        for (int64_t i = 0; i < nv; i++) val[i] = fabs(val[i] - med);
        const double robust = med + 3 * 1.4826 * gt_quantile(val, nv, 0.5);
        TEST_CLOSE(eR.quantile_value, robust, 1e-6, 1e-6);
        TEST_CHECK(eR.threshold >= gt_pdm_eval_cfg_set(&ec)->margin * robust * (1 - 1e-9));
        TEST_CHECK(robust < q); /* the tail of the validation scores sets the quantile, not the robust level */
        printf("eval.level: robust %.4g (threshold %.4g) vs quantile %.4g (threshold %.4g)\n", robust, eR.threshold, q,
               e1.threshold);
        /* eval.flat_line on the frozen channel: turbine 0's rows from st0 + span (the window of the term is
         * inside the frozen rows) */
        int16_t *top = malloc(sizeof(int16_t) * (size_t)sh->n_rows);
        float *s0 = malloc(sizeof(float) * (size_t)sh->n_rows);
        uint8_t *a0 = malloc((size_t)sh->n_rows);
        int16_t *t0 = malloc(sizeof(int16_t) * (size_t)sh->n_rows);
        double thrS, thrS0, thrN0;
        read_pred(predS, sh->n_rows, score, alarm, top, &thrS);
        read_pred(predS0, sh->n_rows, s0, a0, t0, &thrS0);
        const int64_t L = llround(gt_pdm_ewma_span_rows(&ec, 1.0)), r0 = sh->row_offset[0];
        int64_t n_frozen = 0, alarmed = 0, named = 0, alarmed_without = 0;
        for (int64_t r = st0 + L; r < sh->row_offset[1] - r0; r++) {
            if (!isfinite(score[r0 + r])) continue;
            n_frozen++;
            alarmed += alarm[r0 + r];
            named += top[r0 + r] == 0;
            alarmed_without += a0[r0 + r];
        }
        printf("eval.flat_line: %lld frozen rows scored: %lld alarm (%lld name channel 0), %lld without the term "
               "(thresholds %.4g, %.4g)\n", (long long)n_frozen, (long long)alarmed, (long long)named,
               (long long)alarmed_without, thrS, thrS0);
        TEST_CHECK(n_frozen > 1000);
        TEST_EQ_INT(alarmed, n_frozen);
        TEST_EQ_INT(named, n_frozen);
        TEST_CHECK(alarmed_without < n_frozen / 10);
        /* the original file: the term changes no alarm */
        read_pred(out1, sh->n_rows, score, alarm, top, &thr);
        read_pred(predN0, sh->n_rows, s0, a0, t0, &thrN0);
        int64_t differ = 0;
        for (int64_t r = 0; r < sh->n_rows; r++) differ += alarm[r] != a0[r];
        TEST_EQ_INT(differ, 0);
        TEST_CLOSE(thr, thrN0, 0, 1e-6);
        free(top), free(s0), free(a0), free(t0);
        free(val), free(score), free(alarm);
        gt_pdm_shard_free(sh);
        gt_pdm_eval_free(&e1);
        gt_pdm_eval_free(&m1);
        MPI_Comm_free(&self);
    }
    gt_pdm_eval_free(&eP);
    gt_pdm_eval_free(&eC), gt_pdm_eval_free(&eM), gt_pdm_eval_free(&eR);
    gt_pdm_eval_free(&mP);
    gt_engine_free(ems[0].e);
    gt_engine_free(ems[1].e);
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
