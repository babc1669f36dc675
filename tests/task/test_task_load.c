/* tests/task/test_task_load.c: a third task written outside src/, through the
 * task tables only: load forecasting on the household files (from a window
 * of aggregate power, its last sample hidden, predict that sample).
 *
 * The task is one struct (task/task.h gt_task_def) registered with
 * gt_task_register after the built-ins, as a folder of src/ would be by its
 * line in task/task_registry.h: its training side is a gt_task_i (input: the
 * window with its last sample set to 0; targets: that sample, computed from
 * the window; objective: the model's loss), its data side NILM's (its
 * datasets are the household file's windows: nilm/nilm.h), its evaluation
 * side a gt_eval_task_i (eval.json's "load" section, its report section).
 * data.task = load chooses it on a household file (gt_task_choose), as
 * `gridtrain train data.task=load` would. The test trains a small seq2point
 * CNN through the table's slots, then runs the shared evaluation driver
 * (gt_eval_run_dir) and report on it, and checks:
 *   - data.task: "load" gives the load task on the household file, "" and
 *     "auto" the file's own (nilm); its number is the one registration gave;
 *   - the training objective over a fixed batch falls (the model learns);
 *   - the trainer itself (gt_train_run with data.task = load) trains it:
 *     the mean step loss of its last 10 steps below half that of its first 10;
 *   - the target count is the number of finite last samples of the batch;
 *   - eval.json: "task" "load", the load section's MAE equals the MAE
 *     computed here from the same model and test windows, the built-in
 *     tasks' keys are null;
 *   - report.md holds the load section with that MAE. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/fsutil.h"
#include "eval/eval_task.h"
#include "eval/report_section.h"
#include "eval/run_eval.h"
#include "io/read.h"
#include "nilm/nilm.h"
#include "task/task.h"
#include "task/task_registry.h"
#include "train/train_test_util.h"

/* ----------------------------------------------------------- training -- */

typedef struct load_ctx {
    int W;
    float *xbuf; /* (max_batch, W) the window with its last sample hidden */
} load_ctx;

static void load_check_model(const gt_model_config *mc, const char *file) {
    GT_CHECK(gt_model_kind_seq2point(mc->kind), GT_EXIT_USAGE, "%s: load forecasting needs a seq2point model", file);
}

/* the household file's NILM dataset (its windows of aggregate power) */
static gt_dataset *load_open(const char *file, const gt_data_config *dc, MPI_Comm comm) {
    return gt_dataset_nilm(gt_nilm_shard_read(file, comm), dc, comm);
}

static void load_shape_model(gt_model_config *mc, const gt_data_config *dc, int n_targets) {
    (void)n_targets;
    mc->window = dc->window;
    mc->n_in = 1;
    mc->n_out = 1;
}

static void *load_ctx_init(gt_task_ctx *tc, const gt_dataset *ds, const gt_model_config *mc) {
    (void)ds;
    load_ctx *lc = calloc(1, sizeof *lc);
    lc->W = mc->window;
    lc->xbuf = malloc(sizeof(float) * (size_t)mc->max_batch * tc->n_x);
    return lc;
}

static void load_ctx_free(void *priv) {
    load_ctx *lc = priv;
    free(lc->xbuf);
    free(lc);
}

static const float *load_input(gt_task_ctx *tc, const float *x, int B) {
    load_ctx *lc = tc->priv;
    memcpy(lc->xbuf, x, sizeof(float) * (size_t)B * tc->n_x);
    for (int b = 0; b < B; b++) lc->xbuf[(size_t)b * tc->n_x + (size_t)lc->W - 1] = 0.0f;
    return lc->xbuf;
}

static void load_targets(gt_task_ctx *tc, const float *x, const float *dy, const float *dm, int B, const float **y,
                         const float **mask) {
    (void)dy, (void)dm;
    const load_ctx *lc = tc->priv;
    for (int b = 0; b < B; b++) {
        float v = x[(size_t)b * tc->n_x + (size_t)lc->W - 1];
        tc->ybuf[b] = isfinite(v) ? v : 0.0f;
        tc->mbuf[b] = isfinite(v) ? 1.0f : 0.0f;
    }
    *y = tc->ybuf;
    *mask = tc->mbuf;
}

static double load_target_count(const gt_task_ctx *tc, const gt_batch *b) {
    const load_ctx *lc = tc->priv;
    double c = 0;
    for (int64_t i = 0; i < b->n; i++) c += isfinite(b->x[(size_t)i * tc->n_x + (size_t)lc->W - 1]);
    return c;
}

static const gt_task_i g_load = {
    .name = "load",
    .item = "household",
    .file_kind = GT_KIND_NILM,
    .data_targets = 0,
    .check_model = load_check_model,
    .open = load_open,
    .shape_model = load_shape_model,
    .input = load_input,
    .targets = load_targets,
    .target_count = load_target_count,
    .objective = gt_task_loss_objective,
    .ctx_init = load_ctx_init,
    .ctx_free = load_ctx_free,
};

/* --------------------------------------------------------- evaluation -- */

static gt_dataset *g_ds; /* the dataset the test trained on (evaluate reads its test split) */
static gt_task_ctx *g_tc;

/* MAE (normalised units) of the model over this rank's test windows, summed over the ranks. */
static double test_mae(gt_engine *e, int64_t *n_windows, MPI_Comm comm) {
    const int B = gt_engine_max_batch(e);
    const size_t nx = (size_t)gt_dataset_n_x(g_ds), ny = (size_t)gt_dataset_n_y(g_ds);
    float *x = malloc(sizeof(float) * B * nx), *dy = malloc(sizeof(float) * B * ny),
          *dm = malloc(sizeof(float) * B * ny);
    int64_t idx[64];
    double s[2] = {0, 0};
    const int64_t n = gt_dataset_n_windows_local(g_ds, GT_SPLIT_TEST);
    for (int64_t first = 0; first < n; first += B) {
        int64_t m = gt_dataset_local_range(g_ds, GT_SPLIT_TEST, first, B, idx);
        gt_dataset_fill(g_ds, GT_SPLIT_TEST, idx, m, x, dy, dm, NULL);
        const float *y, *mask;
        gt_task_targets(g_tc, x, dy, dm, (int)m, &y, &mask);
        const float *pred = gt_engine_forward(e, gt_task_input(g_tc, x, (int)m), (int)m);
        for (int64_t i = 0; i < m; i++)
            if (mask[i] > 0) s[0] += fabs((double)pred[i] - y[i]), s[1] += 1;
    }
    MPI_Allreduce(MPI_IN_PLACE, s, 2, MPI_DOUBLE, MPI_SUM, comm);
    free(x), free(dy), free(dm);
    *n_windows = (int64_t)s[1];
    return s[1] > 0 ? s[0] / s[1] : NAN;
}

static void load_evaluate(const char *run_dir, const char *data_file, const gt_eval_model *ems, int n_models,
                          const gt_eval_config *ec, const char *sample_path, cJSON **data, cJSON **section,
                          MPI_Comm comm) {
    (void)run_dir, (void)n_models, (void)ec, (void)sample_path;
    int64_t nw;
    double mae = test_mae(ems[0].e, &nw, comm);
    if (!data) return;
    cJSON *d = *data = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "file", data_file);
    cJSON_AddStringToObject(d, "kind", "load");
    cJSON *o = *section = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "mae", mae);
    cJSON_AddNumberToObject(o, "windows", (double)nw);
}

static void load_eval_config(cJSON *c, const gt_eval_config *ec) {
    (void)ec;
    cJSON_AddStringToObject(c, "load_target", "last sample of the window");
}

static void load_report(struct gt_rep *r, const cJSON *ev) {
    gt_rep_heading(r, 2, "Load forecasting results");
    gt_rep_para(r, "MAE %.6f over %.0f test windows (normalised units).", gt_rep_jnum(ev, "load.mae"),
                gt_rep_jnum(ev, "load.windows"));
}

static const gt_eval_task_i g_load_eval = {
    .name = "load",
    .items = "households",
    .sample_file = "eval_load.csv",
    .evaluate = load_evaluate,
    .predict = NULL,
    .eval_config = load_eval_config,
    .report = load_report,
};

/* ------------------------------------------------------------ the task -- */

static const gt_task_def g_load_def = {
    .train = &g_load,
    .data = &gt_data_task_nilm, /* NILM's datasets: window and stride defaults, fill, screening */
    .eval = &g_load_eval,
};

/* ---------------------------------------------------------------- test -- */

int main(int argc, char **argv) {
    gt_dist_init(&argc, &argv);
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank;
    MPI_Comm_rank(comm, &rank);
    char dir[512], file[600], run[600];
    tt_scratch(dir, sizeof dir, "task_load", comm);
    snprintf(file, sizeof file, "%s/n.h5", dir);
    snprintf(run, sizeof run, "%s/run", dir);
    tt_write_nilm(file, -1, 0, comm);
    if (rank == 0) TEST_CHECK(gt_mkdir_out(run) == 0);
    MPI_Barrier(comm);
    gt_task_register_builtins();
    const gt_task load_id = gt_task_register(&g_load_def);
    TEST_EQ_INT(load_id, 2); /* after nilm and pdm */
    TEST_CHECK(gt_task_choose("", file, comm) == gt_task_def_nilm.train);
    TEST_CHECK(gt_task_choose("auto", file, comm) == gt_task_def_nilm.train);

    gt_train_config c;
    tt_cnn_config(&c, file);
    c.model.dropout = 0;
    c.model.max_batch = 8;
    snprintf(c.data.task_name, sizeof c.data.task_name, "load"); /* data.task = load */
    gt_data_config dc = c.data;
    const gt_task_i *task = gt_task_choose(dc.task_name, file, comm);
    TEST_CHECK(task == &g_load && gt_task_id(task) == load_id && gt_task_def_of(task) == &g_load_def);
    gt_data_config_resolve(&dc, gt_task_id(task), gt_task_def_of(task)->data);
    TEST_EQ_INT(dc.task, load_id);
    gt_dataset *ds = task->open(file, &dc, comm);
    gt_model_config mc = c.model;
    task->check_model(&mc, file);
    task->shape_model(&mc, &dc, gt_dataset_n_targets(ds));
    gt_engine *e = gt_engine_create(GT_ENGINE_HOST, &mc);
    gt_engine_init(e, 7);
    const int B = mc.max_batch;
    float *ybuf = malloc(sizeof(float) * B), *mbuf = malloc(sizeof(float) * B);
    gt_task_ctx tc;
    memset(&tc, 0, sizeof tc);
    gt_task_ctx_init(&tc, task, ds, gt_engine_config(e), 1, ybuf, mbuf);
    TEST_EQ_INT((int)tc.n_x, dc.window);
    TEST_EQ_INT((int)tc.n_t, 1);
    g_ds = ds, g_tc = &tc;

    /* a fixed batch of train windows: the objective before and after training */
    const size_t nx = tc.n_x, nyd = (size_t)gt_dataset_n_y(ds);
    float *x = malloc(sizeof(float) * B * nx), *dy = malloc(sizeof(float) * B * nyd),
          *dm = malloc(sizeof(float) * B * nyd);
    int64_t idx[8];
    const int64_t n_train = gt_dataset_n_windows_local(ds, GT_SPLIT_TRAIN);
    TEST_CHECK(n_train >= B);
    int64_t m = gt_dataset_local_range(ds, GT_SPLIT_TRAIN, 0, B, idx);
    gt_dataset_fill(ds, GT_SPLIT_TRAIN, idx, m, x, dy, dm, NULL);
    gt_batch bt = {.n = m, .x = x};
    double cnt = 0;
    for (int64_t i = 0; i < m; i++) cnt += isfinite(x[i * nx + nx - 1]);
    TEST_CLOSE(gt_task_target_count(&tc, &bt), cnt, 0, 0);
    const float *y, *mask;
    gt_task_targets(&tc, x, dy, dm, (int)m, &y, &mask);
    double before = gt_task_objective(&tc, NULL, gt_engine_forward(e, gt_task_input(&tc, x, (int)m), (int)m), y, mask,
                                      (int)m, 0.0f);

    uint64_t ids[8] = {0};
    for (int step = 0; step < 60; step++) { /* one rank's windows, in order: the table's slots, nothing else */
        int64_t first = (int64_t)step * B % (n_train - B + 1);
        m = gt_dataset_local_range(ds, GT_SPLIT_TRAIN, first, B, idx);
        gt_dataset_fill(ds, GT_SPLIT_TRAIN, idx, m, x, dy, dm, NULL);
        gt_task_targets(&tc, x, dy, dm, (int)m, &y, &mask);
        gt_batch b = {.n = m, .x = x};
        double M = gt_task_target_count(&tc, &b);
        if (M <= 0) continue;
        const gt_dropout_key key = {.seed = 1, .step = step, .ids = ids};
        gt_engine_zero_grad(e);
        const float *pred = gt_engine_forward_train(e, gt_task_input(&tc, x, (int)m), (int)m, &key);
        gt_task_objective(&tc, gt_engine_dpred(e), pred, y, mask, (int)m, (float)(1.0 / M));
        gt_engine_backward(e, 1.0f);
        gt_engine_adamw_step(e, &c.adamw, 2e-3f, step + 1, 0);
    }
    m = gt_dataset_local_range(ds, GT_SPLIT_TRAIN, 0, B, idx);
    gt_dataset_fill(ds, GT_SPLIT_TRAIN, idx, m, x, dy, dm, NULL);
    gt_task_targets(&tc, x, dy, dm, (int)m, &y, &mask);
    double after = gt_task_objective(&tc, NULL, gt_engine_forward(e, gt_task_input(&tc, x, (int)m), (int)m), y, mask,
                                     (int)m, 0.0f);
    if (rank == 0) printf("load task: objective over a train batch %.6g -> %.6g\n", before, after);
    TEST_CHECK(isfinite(after) && after < 0.5 * before);

    /* the trainer itself, the task chosen by data.task */
    gt_train_config tcfg;
    tt_cnn_config(&tcfg, file);
    snprintf(tcfg.data.task_name, sizeof tcfg.data.task_name, "load");
    tcfg.max_steps = 80;
    gt_train_result res;
    TEST_EQ_INT(gt_train_run(&tcfg, comm, &res), 0);
    TEST_EQ_INT((int)res.steps, 80);
    TEST_EQ_INT((int)res.n_losses, 80);
    double l0 = 0, l1 = 0; /* the mean step loss of the first and the last 10 steps */
    for (int i = 0; i < 10 && res.n_losses == 80; i++) l0 += res.losses[i] / 10, l1 += res.losses[70 + i] / 10;
    if (rank == 0) printf("load task: gt_train_run mean step loss %.6g (steps 1-10) -> %.6g (steps 71-80)\n", l0, l1);
    TEST_CHECK(isfinite(l0) && isfinite(l1) && l1 < 0.5 * l0);
    gt_train_result_free(&res);

    /* evaluation and report through the shared driver */
    int64_t nw;
    const double mae = test_mae(e, &nw, comm);
    TEST_CHECK(isfinite(mae) && nw > 0);
    gt_eval_model em = {.e = e, .ns = *gt_dataset_norm(ds), .data = dc, .name = "load"}; /* .data.task: load's */
    gt_eval_config ec;
    gt_eval_config_defaults(&ec);
    gt_eval_train_info ti;
    gt_eval_train_info_from_run(run, -1, 0, NAN, &ti);
    TEST_CHECK(gt_eval_run_dir(run, file, &em, 1, &ec, &ti, comm) == 0);
    if (rank == 0) {
        char p[700];
        snprintf(p, sizeof p, "%s/eval.json", run);
        char why[160];
        char *s = gt_read_file_bounded(p, 1 << 20, "eval.json", NULL, why, sizeof why);
        TEST_CHECK(s != NULL);
        cJSON *j = cJSON_Parse(s);
        TEST_CHECK(j != NULL);
        TEST_CHECK(!strcmp(cJSON_GetObjectItem(j, "task")->valuestring, "load"));
        const cJSON *ld = cJSON_GetObjectItem(j, "load");
        TEST_CHECK(cJSON_IsObject(ld));
        TEST_CLOSE(cJSON_GetObjectItem(ld, "mae")->valuedouble, mae, 1e-12, 1e-9);
        TEST_CLOSE(cJSON_GetObjectItem(ld, "windows")->valuedouble, (double)nw, 0, 0);
        TEST_CHECK(cJSON_IsNull(cJSON_GetObjectItem(j, "nilm")) && cJSON_IsNull(cJSON_GetObjectItem(j, "pdm")));
        const cJSON *cfg = cJSON_GetObjectItem(j, "eval_config");
        TEST_CHECK(cJSON_IsString(cJSON_GetObjectItem(cfg, "load_target")));
        TEST_CHECK(cJSON_IsNumber(cJSON_GetObjectItem(cfg, "nilm_stride"))); /* every task's keys */
        cJSON_Delete(j);
        free(s);
        snprintf(p, sizeof p, "%s/report.md", run);
        s = gt_read_file_bounded(p, 1 << 22, "report.md", NULL, why, sizeof why);
        TEST_CHECK(s != NULL);
        char want[128];
        snprintf(want, sizeof want, "MAE %.6f over %lld test windows", mae, (long long)nw);
        TEST_CHECK(strstr(s, "## Load forecasting results") != NULL);
        TEST_CHECK(strstr(s, want) != NULL);
        TEST_CHECK(strstr(s, "households") != NULL); /* the data line names the task's items */
        free(s);
    }
    gt_task_ctx_free(&tc);
    gt_engine_free(e);
    gt_dataset_free(ds);
    free(x), free(dy), free(dm), free(ybuf), free(mbuf);
    if (rank == 0 && !gt_test_failures) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        (void)!system(cmd);
    }
    int fails = gt_test_failures, any = 0;
    MPI_Allreduce(&fails, &any, 1, MPI_INT, MPI_MAX, comm);
    gt_dist_finalize();
    return any ? 1 : 0;
}
