/* cli/eval_load.c: a trained model loaded from its run directory onto an
 * engine, checked against the file it is evaluated on, and evaluated: what
 * `gridtrain eval`, `gridtrain predict` (cli/cmd_eval.c) and the evaluation at
 * the end of `gridtrain train` (cli/cmd_train.c) share (cli/eval_load.h). It
 * takes the run's training configuration as a gt_train_config: parsing a
 * stored one is cli/cmd_eval.c's (with train's option table). */
#define _GNU_SOURCE
#include "cli/eval_load.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/check.h"
#include "nn/engine.h"
#include "core/escape.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "data/dataset.h"
#include "eval/report.h"
#include "eval/run_eval.h"
#include "io/format.h"
#include "train/device.h"
#include <cjson/cJSON.h>
#include <hdf5.h>

/* ---------------------------------------------------- loading a model -- */

long long gt_eval_cli_run_dir_of(const char *path, char *run_dir, size_t n_run_dir) {
    struct stat st;
    GT_CHECK(stat(path, &st) == 0, GT_EXIT_USAGE, "%s: no such run directory or checkpoint", path);
    snprintf(run_dir, n_run_dir, "%s", path);
    if (S_ISDIR(st.st_mode)) {
        /* RUN_DIR/checkpoints given for the run: the run is the folder above */
        size_t n = strlen(run_dir);
        while (n > 1 && run_dir[n - 1] == '/') run_dir[--n] = 0;
        const char *b = strrchr(run_dir, '/');
        if (!strcmp(b ? b + 1 : run_dir, "checkpoints")) {
            char probe[PATH_MAX + 32];
            snprintf(probe, sizeof probe, "%s/checkpoints", run_dir);
            struct stat st2;
            if (stat(probe, &st2) != 0) { /* not a run directory that holds a checkpoints/ of its own */
                if (b == run_dir) run_dir[1] = 0;
                else if (b) run_dir[b - run_dir] = 0;
                else snprintf(run_dir, n_run_dir, ".");
            }
        }
        return -1;
    }
    long long file_step = -1;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char tail[8] = "";
    GT_CHECK(sscanf(base, "ckpt-%lld%7s", &file_step, tail) == 2 && file_step >= 0 && !strcmp(tail, ".h5"),
             GT_EXIT_USAGE, "%s: not a run directory or a checkpoint file (RUN_DIR/checkpoints/ckpt-N.h5)", path);
    char *s = strrchr(run_dir, '/');
    if (s) *s = 0;
    else snprintf(run_dir, n_run_dir, ".");
    size_t n = strlen(run_dir);
    if (n >= 11 && !strcmp(run_dir + n - 11, "checkpoints")) {
        run_dir[n - 11] = 0;
        if (n > 11 && run_dir[n - 12] == '/') run_dir[n - 12] = 0;
        if (!run_dir[0]) snprintf(run_dir, n_run_dir, ".");
    }
    return file_step;
}

static void check_columns(const char *path, const gt_eval_loaded *L, const gt_eval_data *D, MPI_Comm comm);

void gt_eval_cli_load_model(gt_eval_loaded *L, const char *path, long long file_step, const gt_eval_data *D,
                            int64_t batch, int best, gt_engine_kind engine, MPI_Comm comm) {
    const gt_task_i *task = D->task;
    if (L->tc.data.task_name[0] && strcmp(L->tc.data.task_name, "auto")) /* the run's data.task */
        task = gt_task_choose(L->tc.data.task_name, D->path, comm);
    const int n_cols = D->n_cols;
    gt_data_config_resolve(&L->tc.data, gt_task_id(task), gt_task_def_of(task)->data);
    gt_model_config mc = L->tc.model;
    task->check_model(&mc, D->path[0] ? D->path : path); /* the data file is what does not fit */
    check_columns(path, L, D, comm); /* before the checkpoint: a file of another column count named it */
    task->shape_model(&mc, &L->tc.data, n_cols);
    int64_t micro = L->tc.micro_batch > 0 && L->tc.micro_batch < L->tc.batch ? L->tc.micro_batch : L->tc.batch;
    if (batch > 0) micro = batch;
    if (micro > 1024) micro = 1024;
    if (micro < 1) micro = 1;
    mc.max_batch = (int)micro;
    if (mc.precision == GT_PRECISION_AUTO) /* the trainer's rule; the GPU's compute capability is not known here */
        mc.precision = gt_engine_auto_precision(engine, 0, NULL);
    gt_engine *e = gt_engine_create(engine, &mc);
    gt_model *m = gt_engine_model(e);
    gt_norm_stats ns;
    memset(&ns, 0, sizeof ns);
    /* the features the run normalised (data/norm.c): the aggregate and one per appliance, or one per
     * channel; the checkpoint's /norm must have exactly these */
    const int n_features = gt_data_task_n_features(gt_task_def_of(task)->data, n_cols);
    if (file_step >= 0) {
        L->step = gt_ckpt_load_expect(L->run_dir, GT_CKPT_STEP, file_step, m, &L->ts, &ns, n_features, comm);
        GT_CHECK(L->step >= 0, GT_EXIT_DATA, "%s: not a valid committed checkpoint (see the warnings above)", path);
    } else {
        L->step = gt_ckpt_load_expect(L->run_dir, best ? GT_CKPT_BEST : GT_CKPT_LATEST, -1, m, &L->ts, &ns,
                                      n_features, comm);
        GT_CHECK(L->step >= 0, GT_EXIT_USAGE, "%s: no valid checkpoint in %s/checkpoints", path, L->run_dir);
    }
    gt_engine_push_state(e);
    L->em.e = e;
    L->em.ns = ns;
    L->em.data = L->tc.data;
    L->em.name = L->run_dir;
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0)
        GT_INFO("eval: loaded %s (%s, window %d) at step %lld from %s/checkpoints (%s)", path,
                gt_model_kind_name(mc.kind), mc.window, (long long)L->step, L->run_dir,
                file_step >= 0                  ? "the checkpoint given"
                : L->ts.best_step == L->step    ? "best validation loss"
                : best                          ? "the newest: the best is not available"
                                                : "the newest");
}

void gt_eval_cli_unload(gt_eval_loaded *L) {
    gt_engine_free(L->em.e);
    gt_args_free(&L->args);
    memset(L, 0, sizeof *L);
}


/* Reads the fixed-length names of dataset `name` (n of them) and the
 * shortest period from `pdset` (seconds, or rates in Hz with is_rate) of the
 * open file; silently leaves them unset when unreadable (the schema check
 * passed, so they are there). Every rank reads alike. */
static void read_columns(gt_eval_data *D, hid_t f, const char *name, int n, const char *pdset, int is_rate,
                         int n_items) {
    free(D->names);
    D->names = GT_CALLOC((size_t)(n > 0 ? n : 1), sizeof *D->names);
    D->n = 0;
    D->period_s = NAN;
    char *buf = GT_CALLOC((size_t)(n > 0 ? n : 1), GT_FORMAT_NAME_LEN);
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT), t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, GT_FORMAT_NAME_LEN);
    if (d >= 0 && H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0) {
        for (int i = 0; i < n; i++) memcpy(D->names[i], buf + (size_t)i * GT_FORMAT_NAME_LEN, GT_FORMAT_NAME_LEN);
        D->n = n;
    }
    H5Tclose(t);
    if (d >= 0) H5Dclose(d);
    free(buf);
    double *p = GT_CALLOC((size_t)(n_items > 0 ? n_items : 1), sizeof *p);
    d = H5Dopen2(f, pdset, H5P_DEFAULT);
    if (d >= 0 && n_items > 0 && H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, p) >= 0) {
        double best = INFINITY;
        for (int i = 0; i < n_items; i++) {
            double q = is_rate ? (p[i] > 0 ? 1.0 / p[i] : NAN) : p[i];
            if (q > 0 && q < best) best = q;
        }
        if (isfinite(best)) D->period_s = best;
    }
    if (d >= 0) H5Dclose(d);
    free(p);
}

/* Collective (every rank decides alike). The run's stored column names
 * (manifest.json data.columns) against the evaluated file's: a file whose columns differ by name or order is
 * refused (exit 2) naming the file and the first mismatching column (the
 * model's outputs would be mislabelled); a run stored without names: a
 * warning. A sampling period more than 1 % off the run's: a warning (the
 * windows span another duration; resampled data may be intended). */
static void check_columns(const char *path, const gt_eval_loaded *L, const gt_eval_data *D, MPI_Comm comm) {
    const gt_task_i *task = D->task;
    if (!D->n) return;
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    char mp[PATH_MAX + 32];
    snprintf(mp, sizeof mp, "%s/manifest.json", L->run_dir);
    char why[160];
    char *text = gt_read_file_bounded(mp, GT_READ_JSON_MAX_BYTES, "a manifest.json", NULL, why, sizeof why);
    if (!text && errno == EFBIG && rank == 0) GT_WARN("%s: %s: not read", mp, why);
    cJSON *m = text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON *d = m ? cJSON_GetObjectItem(m, "data") : NULL;
    const cJSON *cols = d ? cJSON_GetObjectItem(d, "columns") : NULL;
    if (!cJSON_IsArray(cols)) {
        if (rank == 0)
            GT_WARN("%s: the run stores no column names (trained before they were stored): the columns of %s are "
                    "matched by position", path, D->path);
        cJSON_Delete(m);
        return;
    }
    /* every column of the file: the model has one output per appliance
     * (data.appliances only masks the loss) or one input per channel */
    const int n_sel = D->n;
    const int n_run = cJSON_GetArraySize(cols);
    const char *what = gt_data_task_column(gt_task_def_of(task)->data);
    char msg[3 * PATH_MAX + 512] = "";
    for (int i = 0; i < n_run || i < n_sel; i++) {
        const cJSON *c = cJSON_GetArrayItem(cols, i);
        const char *want = c && cJSON_IsString(c) ? c->valuestring : NULL;
        const char *got = i < n_sel ? D->names[i] : NULL;
        char got_u8[3 * sizeof D->names[0]]; /* the manifest holds names as valid UTF-8 (core/escape.h) */
        if (got) gt_utf8_fix(got_u8, sizeof got_u8, got);
        if (want && got && !strcmp(want, got_u8)) continue;
        snprintf(msg, sizeof msg,
                 "%s: %s column %d is %s%s%s but the run %s was trained with %s%s%s there (columns are matched by "
                 "position: give a file with the run's %ss in the run's order)",
                 D->path, what, i + 1, got ? "'" : "", got ? got : "missing", got ? "'" : "", path,
                 want ? "'" : "", want ? want : "none", want ? "'" : "", what);
        break;
    }
    const cJSON *pj = d ? cJSON_GetObjectItem(d, "period_s") : NULL;
    const double p_run = cJSON_IsNumber(pj) ? pj->valuedouble : NAN;
    cJSON_Delete(m);
    if (msg[0]) gt_io_fail(comm, GT_EXIT_USAGE, msg);
    if (rank == 0 && p_run > 0 && D->period_s > 0 && fabs(D->period_s / p_run - 1) > 0.01)
        GT_WARN("%s: sampling period %g s, but the run %s was trained at %g s: its windows span %.3g times the "
                "duration the model learned", D->path, D->period_s, path, p_run, D->period_s / p_run);
}

void gt_eval_cli_data_read(const char *path, MPI_Comm comm, gt_eval_data *D) {
    memset(D, 0, sizeof *D);
    gt_file_index ix;
    char err[GT_IO_ERR_LEN];
    hid_t f = gt_io_open(path, comm, GT_KIND_UNKNOWN, &ix, err, sizeof err);
    if (f < 0) gt_io_fail(comm, GT_EXIT_DATA, err);
    snprintf(D->path, sizeof D->path, "%s", path);
    if (ix.kind == GT_KIND_NILM) read_columns(D, f, "appliance_meta/name", ix.n_cols, "households/period_s", 0, ix.n_items);
    else read_columns(D, f, "channels/name", ix.n_cols, "turbines/rate_hz", 1, ix.n_items);
    H5Fclose(f);
    D->task = gt_task_for_kind(ix.kind);
    D->n_cols = ix.n_cols;
    gt_file_index_free(&ix);
}

void gt_eval_cli_data_free(gt_eval_data *D) {
    free(D->names);
    memset(D, 0, sizeof *D);
}

int gt_eval_cli_evaluate(const char *run_dir, const char *data, const gt_eval_loaded *Ls, const gt_eval_model *ems,
                           int n, const gt_eval_config *ec, MPI_Comm comm) {
    gt_eval_train_info ti;
    gt_eval_train_info_from_run(run_dir, Ls[0].ts.step, Ls[0].ts.elapsed_s, Ls[0].ts.best_val, &ti);
    ti.eval_step = Ls[0].step;
    ti.eval_best = Ls[0].ts.best_step == Ls[0].step;
    if (ti.ranks == 0) MPI_Comm_size(comm, &ti.ranks);
    return gt_eval_run_dir(run_dir, data, ems, n, ec, &ti, comm);
}

void gt_eval_cli_after_train(const gt_train_config *tc, const gt_eval_config *ec, const char *run_dir, MPI_Comm comm) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    const char *env = getenv("GT_EVAL_AT_END");
    if (env && !strcmp(env, "0")) {
        if (rank == 0) gt_report_write(run_dir, NULL);
        return;
    }
    gt_eval_data D;
    gt_eval_cli_data_read(tc->data_file, comm, &D);
    int64_t micro = tc->micro_batch > 0 && tc->micro_batch < tc->batch ? tc->micro_batch : tc->batch;
    gt_eval_loaded *L = GT_CALLOC(1, sizeof *L);
    L->tc = *tc; /* the configuration just trained (its strings stay the caller's) */
    L->tc.data.seed = tc->seed;
    snprintf(L->run_dir, sizeof L->run_dir, "%s", run_dir);
    gt_train_device dev; /* the device the run trained on (train.device) */
    gt_train_device_select(tc->device, "train.device", 1, comm, &dev); /* logged by the trainer */
    gt_eval_cli_load_model(L, run_dir, -1, &D, micro, 1, dev.engine, comm);
    gt_eval_config defaults;
    gt_eval_config_defaults(&defaults);
    gt_eval_cli_evaluate(run_dir, tc->data_file, L, &L->em, 1, ec ? ec : &defaults, comm);
    gt_eval_cli_unload(L);
    free(L);
    gt_eval_cli_data_free(&D);
}
