/* tests/task/test_task.c: the task interface (task/task.h). The data file's
 * kind chooses the task; each task's model shape, targets, target count and
 * objective are checked against what they must be, computed here by hand:
 *   - the registry (task/task_registry.h): nilm is task 0, pdm task 1, found by
 *     name, number and file kind; gt_task_for_file: NILM file -> nilm, wind-farm
 *     file -> pdm; gt_task_choose: "" and "auto" give the file's task, a name its task;
 *   - gt_data_config_resolve: the task's window/stride defaults, explicit values kept;
 *   - shape_model: NILM n_in = 1 + time features, n_out = A (2A gated); PdM n_in = n_out = C;
 *   - PdM targets: y[b,t] = x[b,t+1] with mask 0 at t = T-1; target count n (T-1) C;
 *   - NILM targets are the dataset's; target count = sum of the mask;
 *   - objective: the gated head's loss for a gated model, the model loss otherwise;
 *   - PdM nbm (data.pdm_target = nbm): the roles of the dataset are those of
 *     gt_pdm_nbm_roles for the file's channels, the targets are the target
 *     channels at the same step (mask 1 exactly there), the target count
 *     n T targets, and the model input has every non-input channel at 0:
 *     an LSTM's prediction does not change when the condition channels of
 *     the window change, and does when an operating channel changes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nilm/nilm.h"
#include "nn/model_lstm.h"
#include "pdm/pdm.h"
#include "task/task.h"
#include "task/task_registry.h"
#include "train/train_test_util.h"

static void check_pdm(const char *file, MPI_Comm comm) {
    const gt_task_i *task = gt_task_for_file(file, comm);
    TEST_CHECK(task == gt_task_def_pdm.train && gt_task_def_of(task) == &gt_task_def_pdm);
    TEST_CHECK(!strcmp(task->item, "turbine") && task->data_targets == 0);
    gt_data_config dc;
    gt_data_config_defaults(&dc);
    dc.window = GT_DATA_WINDOW_TASK_DEFAULT;
    dc.stride = GT_DATA_STRIDE_TASK_DEFAULT;
    gt_data_config_resolve(&dc, gt_task_id(task), gt_task_def_of(task)->data);
    TEST_EQ_INT(dc.window, 512);
    TEST_EQ_INT((int)dc.stride, 128);
    TEST_CHECK(dc.task == 1 && gt_task_get(dc.task) == task);
    dc.window = 16; /* explicit values stay */
    dc.stride = 8;
    gt_data_config_resolve(&dc, gt_task_id(task), gt_task_def_of(task)->data);
    TEST_EQ_INT(dc.window, 16);
    TEST_EQ_INT((int)dc.stride, 8);
    dc.screen = GT_SCREEN_OFF;
    gt_dataset *ds = task->open(file, &dc, comm);
    const int C = gt_dataset_n_targets(ds);
    TEST_CHECK(C > 1);
    gt_model_config mc;
    gt_model_config_default(&mc, GT_MODEL_LSTM);
    task->check_model(&mc, file); /* accepted: returns */
    task->shape_model(&mc, &dc, C);
    TEST_EQ_INT(mc.window, 16);
    TEST_EQ_INT(mc.n_in, C);
    TEST_EQ_INT(mc.n_out, C);

    const int B = 3, T = 16;
    const size_t n = (size_t)B * T * C;
    float *x = malloc(sizeof(float) * n), *yb = malloc(sizeof(float) * n), *mb = malloc(sizeof(float) * n);
    float *pred = malloc(sizeof(float) * n), *dp = malloc(sizeof(float) * n), *dp2 = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) x[i] = (float)sin(0.37 * (double)i), pred[i] = (float)cos(0.11 * (double)i);
    gt_task_ctx tc;
    memset(&tc, 0, sizeof tc);
    gt_task_ctx_init(&tc, task, ds, &mc, (size_t)T * C, yb, mb);
    const float *y, *mask;
    TEST_CHECK(gt_task_input(&tc, x, B) == x); /* next: the model sees the window as filled */
    gt_task_targets(&tc, x, NULL, NULL, B, &y, &mask);
    int bad = 0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++) {
                size_t i = ((size_t)b * T + t) * C + c;
                if (t < T - 1) bad += y[i] != x[i + C] || mask[i] != 1.0f;
                else bad += mask[i] != 0.0f;
            }
    TEST_EQ_INT(bad, 0);
    gt_batch bt = {.n = B, .x = x};
    TEST_CLOSE(gt_task_target_count(&tc, &bt), (double)B * (T - 1) * C, 0, 0);
    {   /* missing samples (data.pdm_row_missing): the input gets 0 (the training mean) in a copy, the
         * targets they are leave the loss (mask 0, y 0) and the count; x itself untouched */
        float *xm = malloc(sizeof(float) * n);
        memcpy(xm, x, sizeof(float) * n);
        const size_t miss[3] = {0, (size_t)2 * C + 1, n - 1}; /* step 0 (never a target), step 2, the last */
        for (int k = 0; k < 3; k++) xm[miss[k]] = NAN;
        const float *xin = gt_task_input(&tc, xm, B);
        TEST_CHECK(xin != xm && isnan(xm[miss[1]]));
        int bad_in = 0;
        for (size_t i = 0; i < n; i++) bad_in += isnan(xm[i]) ? xin[i] != 0.0f : xin[i] != xm[i];
        TEST_EQ_INT(bad_in, 0);
        const float *ym, *mm;
        gt_task_targets(&tc, xm, NULL, NULL, B, &ym, &mm);
        /* next: the target of step t is x at t + 1: the NaN at step 2 is step 1's target */
        TEST_CHECK(mm[(size_t)1 * C + 1] == 0.0f && ym[(size_t)1 * C + 1] == 0.0f);
        TEST_CHECK(mm[n - 1 - C] == 0.0f && mm[(size_t)1 * C] == 1.0f);
        int nonfinite = 0;
        for (size_t i = 0; i < n; i++) nonfinite += !isfinite(ym[i]);
        TEST_EQ_INT(nonfinite, 0);
        gt_batch bm = {.n = B, .x = xm};
        TEST_CLOSE(gt_task_target_count(&tc, &bm), (double)B * (T - 1) * C - 2, 0, 0);
        double msum = 0;
        for (size_t i = 0; i < n; i++) msum += mm[i];
        TEST_CLOSE(msum, (double)B * (T - 1) * C - 2, 0, 0);
        free(xm);
        gt_task_targets(&tc, x, NULL, NULL, B, &y, &mask); /* back to the complete window */
    }
    /* the objective is the model loss over the masked targets: sum (pred - y)^2 */
    double want = 0;
    for (size_t i = 0; i < n; i++) want += mask[i] * ((double)pred[i] - y[i]) * ((double)pred[i] - y[i]);
    double got = gt_task_objective(&tc, dp, pred, y, mask, B, 0.5f);
    TEST_CLOSE(got, want, 0, 1e-6); /* the loss forms pred - y in float */
    gt_loss_sum_grad(mc.loss, dp2, pred, y, mask, n, 0.5f);
    TEST_CHECK(!memcmp(dp, dp2, sizeof(float) * n));
    /* a seq2point model is refused on wind-farm data: covered by tests/cli (exit code, message) */
    gt_task_ctx_free(&tc);
    free(x), free(yb), free(mb), free(pred), free(dp), free(dp2);
    gt_dataset_free(ds);
}

static void check_pdm_nbm(const char *file, MPI_Comm comm) {
    const gt_task_i *task = gt_task_for_file(file, comm);
    gt_data_config dc;
    gt_pdm_data_defaults(&dc);
    dc.window = 16;
    dc.stride = 8;
    dc.screen = GT_SCREEN_OFF;
    gt_pdm_data_cfg_set(&dc)->target = GT_PDM_TARGET_NBM;
    gt_dataset *ds = task->open(file, &dc, comm);
    const int C = gt_dataset_n_targets(ds);
    int n_in, n_tg;
    const uint8_t *role = gt_dataset_nbm_roles(ds, &n_in, &n_tg);
    TEST_CHECK(role != NULL && n_in > 0 && n_tg > 0 && n_in + n_tg <= C);
    if (!role || n_in == 0 || n_tg == 0) {
        gt_dataset_free(ds);
        return;
    }
    /* the same roles as the file's channels give (what eval computes from the stored configuration) */
    gt_pdm_shard *sh = gt_pdm_shard_read(file, comm);
    uint8_t want[GT_DATA_MAX_CHANNELS];
    int wi, wt;
    gt_pdm_nbm_roles(&dc, sh->channels, C, want, &wi, &wt);
    TEST_CHECK(!memcmp(role, want, (size_t)C) && wi == n_in && wt == n_tg);
    int c_op = -1, c_cond = -1; /* an input and a target channel */
    for (int c = 0; c < C; c++) {
        if (role[c] == GT_NBM_INPUT && c_op < 0) c_op = c;
        if (role[c] == GT_NBM_TARGET && c_cond < 0) c_cond = c;
        /* a machine temperature is predicted; the wind speed and the ambient temperature are inputs */
        const char *nm = sh->channels[c].name;
        if (strstr(nm, "temp") && !strstr(nm, "ambient")) TEST_CHECK(role[c] == GT_NBM_TARGET);
        if (!strcmp(nm, "wind_speed") || !strcmp(nm, "ambient_temp")) TEST_CHECK(role[c] == GT_NBM_INPUT);
    }
    gt_pdm_shard_free(sh);

    gt_model_config mc;
    gt_model_config_default(&mc, GT_MODEL_LSTM);
    mc.hidden = 8;
    mc.n_layers = 1;
    const int B = 2, T = 16;
    mc.max_batch = B;
    task->shape_model(&mc, &dc, C);
    TEST_EQ_INT(mc.n_in, C);
    TEST_EQ_INT(mc.n_out, C);
    const size_t n = (size_t)B * T * C;
    float *x = malloc(sizeof(float) * n), *x2 = malloc(sizeof(float) * n), *yb = malloc(sizeof(float) * n),
          *mb = malloc(sizeof(float) * n), *p1 = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) x[i] = (float)sin(0.37 * (double)i + 0.5);
    gt_task_ctx tc;
    memset(&tc, 0, sizeof tc);
    gt_task_ctx_init(&tc, task, ds, &mc, (size_t)T * C, yb, mb);
    const float *y, *mask;
    gt_task_targets(&tc, x, NULL, NULL, B, &y, &mask);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        const int tg = role[i % (size_t)C] == GT_NBM_TARGET;
        bad += mask[i] != (tg ? 1.0f : 0.0f) || (tg && y[i] != x[i]);
    }
    TEST_EQ_INT(bad, 0);
    gt_batch bt = {.n = B, .x = x};
    TEST_CLOSE(gt_task_target_count(&tc, &bt), (double)B * T * n_tg, 0, 0);
    {   /* a missing target sample leaves the loss and the count; a missing input sample is imputed */
        int c_tg = -1, c_in = -1;
        for (int c = 0; c < C; c++) {
            if (c_tg < 0 && role[c] == GT_NBM_TARGET) c_tg = c;
            if (c_in < 0 && role[c] == GT_NBM_INPUT) c_in = c;
        }
        float *xm = malloc(sizeof(float) * n);
        memcpy(xm, x, sizeof(float) * n);
        xm[(size_t)4 * C + c_tg] = NAN;
        xm[(size_t)5 * C + c_in] = INFINITY;
        const float *ym, *mm;
        gt_task_targets(&tc, xm, NULL, NULL, B, &ym, &mm);
        TEST_CHECK(mm[(size_t)4 * C + c_tg] == 0.0f && ym[(size_t)4 * C + c_tg] == 0.0f);
        gt_batch bm = {.n = B, .x = xm};
        TEST_CLOSE(gt_task_target_count(&tc, &bm), (double)B * T * n_tg - 1, 0, 0);
        const float *xin = gt_task_input(&tc, xm, B);
        TEST_CHECK(xin[(size_t)5 * C + c_in] == 0.0f && xin[(size_t)6 * C + c_in] == x[(size_t)6 * C + c_in]);
        free(xm);
        gt_task_targets(&tc, x, NULL, NULL, B, &y, &mask);
    }
    /* the model input: the inputs as they are, everything else 0; x itself untouched */
    const float *xin = gt_task_input(&tc, x, B);
    TEST_CHECK(xin != x);
    bad = 0;
    for (size_t i = 0; i < n; i++) {
        const int in = role[i % (size_t)C] == GT_NBM_INPUT;
        bad += in ? xin[i] != x[i] : xin[i] != 0.0f;
        bad += x[i] != (float)sin(0.37 * (double)i + 0.5);
    }
    TEST_EQ_INT(bad, 0);
    /* what the model sees: the condition channels' values do not reach the prediction */
    gt_model *m = gt_model_create(&mc);
    gt_model_init(m, 7);
    gt_model_forward(m, gt_task_input(&tc, x, B), B);
    memcpy(p1, m->pred, sizeof(float) * n);
    memcpy(x2, x, sizeof(float) * n);
    for (size_t i = 0; i < n; i++)
        if (role[i % (size_t)C] != GT_NBM_INPUT) x2[i] = 5.0f + (float)i; /* targets and unused channels */
    gt_model_forward(m, gt_task_input(&tc, x2, B), B);
    TEST_CHECK(!memcmp(p1, m->pred, sizeof(float) * n));
    memcpy(x2, x, sizeof(float) * n);
    x2[(size_t)3 * C + c_op] += 1.0f; /* an operating channel at step 3 of sample 0 */
    gt_model_forward(m, gt_task_input(&tc, x2, B), B);
    TEST_CHECK(m->pred[(size_t)3 * C + c_cond] != p1[(size_t)3 * C + c_cond]);
    TEST_CHECK(m->pred[(size_t)2 * C + c_cond] == p1[(size_t)2 * C + c_cond]); /* causal: step 2 before it */
    gt_model_free(m);
    gt_task_ctx_free(&tc);
    free(x), free(x2), free(yb), free(mb), free(p1);
    gt_dataset_free(ds);
}

static void check_nilm(const char *file, MPI_Comm comm) {
    const gt_task_i *task = gt_task_for_file(file, comm);
    TEST_CHECK(task == gt_task_def_nilm.train && gt_task_def_of(task) == &gt_task_def_nilm);
    TEST_CHECK(!strcmp(task->item, "household") && task->data_targets == 1);
    gt_data_config dc;
    gt_data_config_defaults(&dc);
    dc.window = GT_DATA_WINDOW_TASK_DEFAULT;
    dc.stride = GT_DATA_STRIDE_TASK_DEFAULT;
    gt_data_config_resolve(&dc, gt_task_id(task), gt_task_def_of(task)->data);
    TEST_EQ_INT(dc.window, 599);
    TEST_EQ_INT((int)dc.stride, 0);
    dc.window = 63;
    dc.stride = 16;
    gt_nilm_data_cfg_set(&dc)->time_features = 2;
    dc.screen = GT_SCREEN_OFF;
    gt_dataset *ds = task->open(file, &dc, comm);
    const int A = gt_dataset_n_targets(ds);
    for (int gated = 0; gated < 2; gated++) {
        gt_model_config mc;
        gt_model_config_default(&mc, GT_MODEL_S2P_CNN);
        mc.gated = gated;
        task->check_model(&mc, file);
        task->shape_model(&mc, &dc, A);
        TEST_EQ_INT(mc.window, 63);
        TEST_EQ_INT(mc.n_in, 3);
        TEST_EQ_INT(mc.n_out, gated ? 2 * A : A);

        const int B = 4;
        const size_t ny = (size_t)mc.n_out;
        float *pred = malloc(sizeof(float) * B * ny), *dp = malloc(sizeof(float) * B * ny),
              *dp2 = malloc(sizeof(float) * B * ny);
        float *dy = malloc(sizeof(float) * B * A), *dm = malloc(sizeof(float) * B * A);
        for (size_t i = 0; i < (size_t)B * ny; i++) pred[i] = (float)sin(0.3 * (double)i);
        for (int i = 0; i < B * A; i++) dy[i] = (float)cos(0.2 * i), dm[i] = (float)(i % 3 != 0);
        gt_task_ctx tc;
        memset(&tc, 0, sizeof tc);
        gt_task_ctx_init(&tc, task, ds, &mc, ny, NULL, NULL);
        TEST_EQ_INT((int)tc.n_t, A);
        const float *y, *mask;
        gt_task_targets(&tc, NULL, dy, dm, B, &y, &mask);
        TEST_CHECK(y == dy && mask == dm); /* the dataset's own targets */
        TEST_CHECK(gt_task_input(&tc, dy, B) == dy);
        double cnt = 0;
        for (int i = 0; i < B * A; i++) cnt += dm[i];
        gt_batch bt = {.n = B, .mask = dm};
        TEST_CLOSE(gt_task_target_count(&tc, &bt), cnt, 0, 0);
        double got = gt_task_objective(&tc, dp, pred, y, mask, B, 0.25f);
        /* the gated head's on-thresholds come from the dataset's statistics */
        float thr[GT_DATA_MAX_TARGETS];
        for (int a = 0; a < A; a++) thr[a] = gt_dataset_on_threshold(ds, a);
        double want = gated ? gt_gated_loss_sum(dp2, pred, y, mask, thr, (size_t)B, A, 0.25f)
                            : gt_loss_sum_grad(mc.loss, dp2, pred, y, mask, (size_t)B * ny, 0.25f);
        TEST_CHECK(got == want && isfinite(got));
        TEST_CHECK(!memcmp(dp, dp2, sizeof(float) * B * ny));
        TEST_CHECK((tc.priv != NULL) == gated); /* NILM's own state: the gated head's only */
        gt_task_ctx_free(&tc);
        free(pred), free(dp), free(dp2), free(dy), free(dm);
    }
    gt_dataset_free(ds);
}

int main(int argc, char **argv) {
    gt_dist_init(&argc, &argv);
    gt_task_register_builtins();
    MPI_Comm world = MPI_COMM_WORLD;
    char dir[512], nilm[600], pdm[600];
    tt_scratch(dir, sizeof dir, "task", world);
    snprintf(nilm, sizeof nilm, "%s/n.h5", dir);
    snprintf(pdm, sizeof pdm, "%s/p.h5", dir);
    tt_write_nilm(nilm, -1, 0, world);
    tt_write_pdm(pdm, world);
    check_pdm(pdm, world);
    check_pdm_nbm(pdm, world);
    check_nilm(nilm, world);
    TEST_CHECK(gt_task_for_kind(GT_KIND_UNKNOWN) == NULL);
    TEST_EQ_INT(gt_task_count(), 2);
    TEST_CHECK(gt_task_get(1) == gt_task_def_pdm.train && gt_task_get(0) == gt_task_def_nilm.train);
    TEST_CHECK(gt_task_at(0) == &gt_task_def_nilm && gt_task_at(1) == &gt_task_def_pdm && gt_task_at(2) == NULL);
    TEST_CHECK(gt_task_by_name("pdm") == gt_task_def_pdm.train && gt_task_by_name("load") == NULL);
    TEST_CHECK(gt_task_for_kind(GT_KIND_NILM) == gt_task_def_nilm.train);
    TEST_CHECK(gt_task_choose("", nilm, world) == gt_task_def_nilm.train);
    TEST_CHECK(gt_task_choose("auto", pdm, world) == gt_task_def_pdm.train);
    TEST_CHECK(gt_task_choose("pdm", pdm, world) == gt_task_def_pdm.train);
    TEST_CHECK(!strcmp(gt_task_def_nilm.train->name, "nilm") && gt_task_def_nilm.train->file_kind == GT_KIND_NILM);
    gt_task_register_builtins(); /* a second call adds nothing */
    TEST_EQ_INT(gt_task_count(), 2);
    MPI_Barrier(world);
    int rank;
    MPI_Comm_rank(world, &rank);
    if (rank == 0 && !gt_test_failures) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        (void)!system(cmd);
    }
    int fails = gt_test_failures, any = 0;
    MPI_Allreduce(&fails, &any, 1, MPI_INT, MPI_MAX, world);
    gt_dist_finalize();
    return any ? 1 : 0;
}
