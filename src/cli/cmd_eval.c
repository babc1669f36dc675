/* cli/cmd_eval.c: `gridtrain eval RUN_DIR [DATA.h5] [section.key=value ...]`.
 *
 * Rebuilds the model of a training run from the configuration stored in its
 * checkpoint (eval.checkpoint: best validation loss or newest; the same keys
 * as `gridtrain train`), loads the
 * parameters and the frozen normalisation statistics, evaluates it
 * (eval/eval.h) and writes RUN_DIR/eval.json and the report (eval/report.h).
 * Also defines gt_eval_cli_load (used by cli/cmd_predict.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cmd_eval.h"
#include "cli/commands.h"
#include "cli/train_args.h"
#include "core/check.h"
#include "core/escape.h"
#include "core/log.h"
#include "eval/eval.h"
#include "eval/report.h"
#include "eval/run_eval.h"
#include "train/checkpoint.h"
#include "train/device.h"
#include "train/trainer.h"
#include "core/fsutil.h"
#include "data/dataset.h"
#include "io/format.h"
#include <cjson/cJSON.h>
#include <hdf5.h>

extern const gt_cmd gt_cmd_train;

static const gt_opt eval_opts[] = {
    {"eval.stride", "stride", GT_OPT_INT, "0", "nilm: rows between evaluated window midpoints; 0 = auto (at most eval.max_windows windows)", NULL},
    {"eval.max_windows", NULL, GT_OPT_INT, "1000000", "nilm: auto stride = rows in the file / this", NULL},
    GT_EVAL_OPTS,
    {NULL, NULL, 0, NULL, NULL, NULL},
};

/* ---------------------------------------------------- loading a model -- */

/* The evaluated file's column names (appliances or channels, file order) and
 * shortest sampling period: set by gt_eval_cli_data_sizes, checked against
 * each run's stored ones by check_columns. */
static struct {
    char path[PATH_MAX];
    int n;
    char (*names)[GT_FORMAT_NAME_LEN + 1];
    double period_s;
} g_data;


/* RUN_DIR, or RUN_DIR/checkpoints/ckpt-N.h5 -> RUN_DIR in run_dir and the
 * returned step N (-1 for a directory). Errors are user errors. */
static long long run_dir_of(const char *path, char *run_dir, size_t n_run_dir) {
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

/* Collective: the model of L->tc (the run's training configuration) on
 * `engine` (chosen by gt_train_device_select), its checkpoint of RUN_DIR
 * loaded into the host model and pushed to the engine (file_step >= 0:
 * exactly that step; else the best-validation one or the newest). */
static void check_columns(const char *path, const gt_eval_loaded *L, const gt_task_i *task, MPI_Comm comm);

static void load_model(gt_eval_loaded *L, const char *path, long long file_step, const gt_task_i *task, int n_cols,
                       int64_t batch, int best, gt_engine_kind engine, MPI_Comm comm) {
    gt_data_config_resolve(&L->tc.data, task->kind);
    gt_model_config mc = L->tc.model;
    task->check_model(&mc, g_data.path[0] ? g_data.path : path); /* the data file is what does not fit */
    check_columns(path, L, task, comm); /* before the checkpoint: a file of another column count named it */
    task->shape_model(&mc, &L->tc.data, n_cols);
    int64_t micro = L->tc.micro_batch > 0 && L->tc.micro_batch < L->tc.batch ? L->tc.micro_batch : L->tc.batch;
    if (batch > 0) micro = batch;
    if (micro > 1024) micro = 1024;
    if (micro < 1) micro = 1;
    mc.max_batch = (int)micro;
    gt_engine *e = gt_engine_create(engine, &mc);
    gt_model *m = gt_engine_model(e);
    gt_norm_stats ns;
    memset(&ns, 0, sizeof ns);
    /* the features the run normalised (data/norm.c): the aggregate and one per appliance, or one per
     * channel; the checkpoint's /norm must have exactly these */
    const int n_features = task->kind == GT_TASK_NILM ? 1 + n_cols : n_cols;
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

void gt_eval_cli_load(const char *path, const gt_task_i *task, int n_cols, int64_t batch, int best,
                      gt_engine_kind engine, MPI_Comm comm, gt_eval_loaded *L) {
    memset(L, 0, sizeof *L);
    long long file_step = run_dir_of(path, L->run_dir, sizeof L->run_dir);
    char *text = gt_ckpt_read_config(L->run_dir);
    GT_CHECK(text, GT_EXIT_USAGE, "%s: no valid checkpoint (with its configuration) in %s/checkpoints", path,
             L->run_dir);
    const char *td = getenv("TMPDIR");
    char tpath[PATH_MAX];
    snprintf(tpath, sizeof tpath, "%s/gridtrain-eval-XXXXXX", td && *td ? td : "/tmp");
    int fd = mkstemp(tpath);
    GT_CHECK(fd >= 0, GT_EXIT_RESOURCE, "cannot create a temporary file");
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    free(text);
    char *argv[2] = {"--config", tpath};
    gt_args_parse(&L->args, &gt_cmd_train, 2, argv);
    unlink(tpath);
    gt_train_config_from_args(&L->args, &L->tc);
    gt_train_config_stored_compat(&L->args, &L->tc);
    load_model(L, path, file_step, task, n_cols, batch, best, engine, comm);
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
static void read_columns(hid_t f, const char *name, int n, const char *pdset, int is_rate, int n_items) {
    free(g_data.names);
    g_data.names = GT_CALLOC((size_t)(n > 0 ? n : 1), sizeof *g_data.names);
    g_data.n = 0;
    g_data.period_s = NAN;
    char *buf = GT_CALLOC((size_t)(n > 0 ? n : 1), GT_FORMAT_NAME_LEN);
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT), t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, GT_FORMAT_NAME_LEN);
    if (d >= 0 && H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0) {
        for (int i = 0; i < n; i++) memcpy(g_data.names[i], buf + (size_t)i * GT_FORMAT_NAME_LEN, GT_FORMAT_NAME_LEN);
        g_data.n = n;
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
        if (isfinite(best)) g_data.period_s = best;
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
static void check_columns(const char *path, const gt_eval_loaded *L, const gt_task_i *task, MPI_Comm comm) {
    if (!g_data.n) return;
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
                    "matched by position", path, g_data.path);
        cJSON_Delete(m);
        return;
    }
    /* every column of the file: the model has one output per appliance
     * (data.appliances only masks the loss) or one input per channel */
    const int n_sel = g_data.n;
    const int n_run = cJSON_GetArraySize(cols);
    const char *what = task->kind == GT_TASK_NILM ? "appliance" : "channel";
    char msg[3 * PATH_MAX + 512] = "";
    for (int i = 0; i < n_run || i < n_sel; i++) {
        const cJSON *c = cJSON_GetArrayItem(cols, i);
        const char *want = c && cJSON_IsString(c) ? c->valuestring : NULL;
        const char *got = i < n_sel ? g_data.names[i] : NULL;
        char got_u8[3 * sizeof g_data.names[0]]; /* the manifest holds names as valid UTF-8 (core/escape.h) */
        if (got) gt_utf8_fix(got_u8, sizeof got_u8, got);
        if (want && got && !strcmp(want, got_u8)) continue;
        snprintf(msg, sizeof msg,
                 "%s: %s column %d is %s%s%s but the run %s was trained with %s%s%s there (columns are matched by "
                 "position: give a file with the run's %ss in the run's order)",
                 g_data.path, what, i + 1, got ? "'" : "", got ? got : "missing", got ? "'" : "", path,
                 want ? "'" : "", want ? want : "none", want ? "'" : "", what);
        break;
    }
    const cJSON *pj = d ? cJSON_GetObjectItem(d, "period_s") : NULL;
    const double p_run = cJSON_IsNumber(pj) ? pj->valuedouble : NAN;
    cJSON_Delete(m);
    if (msg[0]) gt_io_fail(comm, GT_EXIT_USAGE, msg);
    if (rank == 0 && p_run > 0 && g_data.period_s > 0 && fabs(g_data.period_s / p_run - 1) > 0.01)
        GT_WARN("%s: sampling period %g s, but the run %s was trained at %g s: its windows span %.3g times the "
                "duration the model learned", g_data.path, g_data.period_s, path, p_run, g_data.period_s / p_run);
}

void gt_eval_cli_data_sizes(const char *path, MPI_Comm comm, const gt_task_i **task, int *n_cols) {
    gt_file_index ix;
    char err[GT_IO_ERR_LEN];
    hid_t f = gt_io_open(path, comm, GT_KIND_UNKNOWN, &ix, err, sizeof err);
    if (f < 0) gt_io_fail(comm, GT_EXIT_DATA, err);
    snprintf(g_data.path, sizeof g_data.path, "%s", path);
    if (ix.kind == GT_KIND_NILM) read_columns(f, "appliance_meta/name", ix.n_cols, "households/period_s", 0, ix.n_items);
    else read_columns(f, "channels/name", ix.n_cols, "turbines/rate_hz", 1, ix.n_items);
    H5Fclose(f);
    *task = gt_task_for_kind(ix.kind);
    *n_cols = ix.n_cols;
    gt_file_index_free(&ix);
}

void gt_eval_cli_config(const gt_args *a, gt_eval_config *ec) {
    gt_eval_config_defaults(ec);
    for (int i = 0; i < a->n_values; i++) {
        const char *k = a->spec[i]->key;
        if (!strcmp(k, "eval.stride")) ec->nilm_stride = gt_args_int(a, k);
        else if (!strcmp(k, "eval.max_windows")) ec->nilm_max_windows = gt_args_int(a, k);
        else if (!strcmp(k, "eval.off_below_on")) ec->nilm_off_below_on = gt_args_bool(a, k);
        else if (!strcmp(k, "eval.calibrate_gate")) ec->nilm_calibrate_gate = gt_args_bool(a, k);
        else if (!strcmp(k, "eval.calibrate_filter")) ec->nilm_calibrate_filter = gt_args_bool(a, k);
        else if (!strcmp(k, "eval.fill_s")) ec->nilm_fill_s = gt_args_float(a, k);
        else if (!strcmp(k, "eval.min_on_s")) ec->nilm_min_on_s = gt_args_float(a, k);
        else if (!strcmp(k, "eval.quantile")) ec->pdm_quantile = gt_args_float(a, k);
        else if (!strcmp(k, "eval.margin")) ec->pdm_margin = gt_args_float(a, k);
        else if (!strcmp(k, "eval.val_false_alarms")) ec->pdm_val_false_alarms = gt_args_float(a, k);
        else if (!strcmp(k, "eval.ewma_s")) ec->pdm_ewma_s = gt_args_auto_nonneg(a, k);
        else if (!strcmp(k, "eval.channel_quantile")) ec->pdm_channel_quantile = gt_args_float(a, k);
        else if (!strcmp(k, "eval.envelope")) ec->pdm_envelope = gt_args_float(a, k);
        else if (!strcmp(k, "eval.score")) {
            ec->pdm_score = gt_pdm_score_parse(gt_args_str(a, k));
            GT_CHECK(ec->pdm_score >= 0, GT_EXIT_USAGE, "eval.score = '%s' (auto|mean|channel)", gt_args_str(a, k));
        }
        else if (!strcmp(k, "eval.min_duration_s")) ec->pdm_min_duration_s = gt_args_float(a, k);
        else if (!strcmp(k, "eval.merge_gap_s")) ec->pdm_merge_gap_s = gt_args_float(a, k);
        else if (!strcmp(k, "eval.hop")) ec->pdm_hop = gt_args_int(a, k);
        else if (!strcmp(k, "eval.calibrate")) ec->pdm_calibrate_train = !strcmp(gt_args_str(a, k), "train_val");
        else if (!strcmp(k, "eval.turbine_offset")) ec->pdm_turbine_offset = gt_args_bool(a, k);
    }
    GT_CHECK(ec->nilm_stride >= 0 && ec->nilm_max_windows > 0, GT_EXIT_USAGE,
             "eval.stride must be >= 0 and eval.max_windows > 0");
    /* the warm-up and guard rows are whole multiples of the span in rows (int64): 1e308 s overflowed them */
    GT_CHECK(ec->pdm_ewma_s <= 1e9, GT_EXIT_USAGE, "eval.ewma_s = %g: give auto or a number of seconds in [0, 1e9]",
             ec->pdm_ewma_s);
    GT_CHECK(ec->nilm_fill_s >= 0 && ec->nilm_min_on_s >= 0 && isfinite(ec->nilm_fill_s) && isfinite(ec->nilm_min_on_s),
             GT_EXIT_USAGE, "eval.fill_s (%g) and eval.min_on_s (%g) must be finite and >= 0", ec->nilm_fill_s,
             ec->nilm_min_on_s);
    GT_CHECK(ec->pdm_quantile > 0 && ec->pdm_quantile <= 1 && ec->pdm_margin > 0 &&
                 ec->pdm_min_duration_s >= 0 && ec->pdm_merge_gap_s >= 0 && ec->pdm_hop >= 0 && ec->pdm_val_false_alarms >= 0 &&
                 ec->pdm_channel_quantile >= 0 && ec->pdm_channel_quantile < 1 && isfinite(ec->pdm_envelope),
             GT_EXIT_USAGE,
             "eval: quantile in (0, 1], margin > 0, min_duration_s, merge_gap_s, hop, val_false_alarms >= 0, "
             "channel_quantile in [0, 1)");
}

int gt_eval_cli_load_all(const char *main_path, const gt_args *a, const char *data, MPI_Comm comm, gt_eval_loaded *Ls,
                         gt_eval_model *ems) {
    const gt_task_i *task = NULL;
    int cols = 0;
    gt_eval_cli_data_sizes(data, comm, &task, &cols);
    int64_t batch = gt_args_int(a, "eval.batch");
    GT_CHECK(batch >= 0 && batch <= GT_TRAIN_MAX_BATCH, GT_EXIT_USAGE, "eval.batch = %lld: give 0 (the run's micro-batch) or a size of 1 to %d",
             (long long)batch, GT_TRAIN_MAX_BATCH); /* a negative one was taken as 0 */
    int best = !strcmp(gt_args_str(a, "eval.checkpoint"), "best");
    int req = gt_device_request_parse(gt_args_str(a, "eval.device"));
    GT_ASSERT(req >= 0); /* the option table allows auto|cpu|cuda only */
    gt_train_device dev;
    gt_train_device_select((gt_device_request)req, "eval.device", 0, comm, &dev);
    int n = 0;
    gt_eval_cli_load(main_path, task, cols, batch, best, dev.engine, comm, &Ls[n]);
    ems[n] = Ls[n].em;
    n++;
    char list[4096];
    snprintf(list, sizeof list, "%s", gt_args_str(a, "eval.models"));
    char *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!*tok) continue;
        GT_CHECK(n < GT_EVAL_MAX_MODELS, GT_EXIT_USAGE, "eval.models: at most %d models in all", GT_EVAL_MAX_MODELS);
        gt_eval_cli_load(tok, task, cols, batch, best, dev.engine, comm, &Ls[n]);
        /* the same run (and checkpoint) twice would weigh one model double in the ensemble */
        for (int i = 0; i < n; i++) {
            char ra[PATH_MAX], rb[PATH_MAX];
            if (realpath(Ls[i].run_dir, ra) && realpath(Ls[n].run_dir, rb) && !strcmp(ra, rb) &&
                Ls[i].step == Ls[n].step)
                GT_FAIL(GT_EXIT_USAGE, "eval.models: %s is the same model (run %s, step %lld) as %s: give each "
                        "ensemble member once", tok, Ls[n].run_dir, (long long)Ls[n].step,
                        i == 0 ? main_path : "an earlier entry of eval.models");
        }
        ems[n] = Ls[n].em;
        n++;
    }
    return n;
}

/* Collective: eval.json and the report of run_dir for the loaded models. */
static int evaluate_loaded(const char *run_dir, const char *data, const gt_eval_loaded *Ls, const gt_eval_model *ems,
                           int n, const gt_eval_config *ec, MPI_Comm comm) {
    gt_eval_train_info ti;
    gt_eval_train_info_from_run(run_dir, Ls[0].ts.step, Ls[0].ts.elapsed_s, Ls[0].ts.best_val, &ti);
    ti.eval_step = Ls[0].step;
    ti.eval_best = Ls[0].ts.best_step == Ls[0].step;
    if (ti.ranks == 0) MPI_Comm_size(comm, &ti.ranks);
    return gt_eval_run_dir(run_dir, data, ems, n, ec, &ti, comm);
}

void gt_eval_cli_after_train(const gt_train_config *tc, const char *run_dir, MPI_Comm comm) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    const char *env = getenv("GT_EVAL_AT_END");
    if (env && !strcmp(env, "0")) {
        if (rank == 0) gt_report_write(run_dir, NULL);
        return;
    }
    const gt_task_i *task = NULL;
    int cols = 0;
    gt_eval_cli_data_sizes(tc->data_file, comm, &task, &cols);
    int64_t micro = tc->micro_batch > 0 && tc->micro_batch < tc->batch ? tc->micro_batch : tc->batch;
    gt_eval_loaded *L = GT_CALLOC(1, sizeof *L);
    L->tc = *tc; /* the configuration just trained (its strings stay the caller's) */
    L->tc.data.seed = tc->seed;
    snprintf(L->run_dir, sizeof L->run_dir, "%s", run_dir);
    gt_train_device dev; /* the device the run trained on (train.device) */
    gt_train_device_select(tc->device, "train.device", 1, comm, &dev); /* logged by the trainer */
    load_model(L, run_dir, -1, task, cols, micro, 1, dev.engine, comm);
    gt_eval_config ec;
    gt_eval_config_defaults(&ec);
    evaluate_loaded(run_dir, tc->data_file, L, &L->em, 1, &ec, comm);
    gt_eval_cli_unload(L);
    free(L);
}

static int run_eval(const gt_args *a, MPI_Comm comm) {
    char run_dir[PATH_MAX];
    run_dir_of(a->pos[0], run_dir, sizeof run_dir); /* eval.json etc. go to the run directory */
    gt_eval_loaded *Ls = GT_CALLOC(GT_EVAL_MAX_MODELS, sizeof(gt_eval_loaded));
    gt_eval_model ems[GT_EVAL_MAX_MODELS];
    /* the data: the positional file, else the run's data.file */
    const char *data = a->n_pos >= 2 ? a->pos[1] : NULL;
    char data_buf[PATH_MAX];
    if (!data) {
        /* read data.file from the stored configuration */
        char *t = gt_ckpt_read_config(run_dir);
        GT_CHECK(t, GT_EXIT_USAGE, "eval: no valid checkpoint (with its configuration) in %s/checkpoints", run_dir);
        const char *p = strstr(t, "\nfile = ");
        GT_CHECK(p, GT_EXIT_USAGE, "eval: %s stores no data.file; give DATA.h5", run_dir);
        p += 8;
        size_t len = strcspn(p, "\n");
        snprintf(data_buf, sizeof data_buf, "%.*s", (int)len, p);
        free(t);
        data = data_buf;
    }
    gt_eval_config ec;
    gt_eval_cli_config(a, &ec);
    int n = gt_eval_cli_load_all(a->pos[0], a, data, comm, Ls, ems);
    int rc = evaluate_loaded(run_dir, data, Ls, ems, n, &ec, comm);
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) GT_INFO("eval: wrote %s/eval.json, %s/report.md and %s/report.html", run_dir, run_dir, run_dir);
    for (int i = 0; i < n; i++) gt_eval_cli_unload(&Ls[i]);
    free(Ls);
    return rc;
}

const gt_cmd gt_cmd_eval = {
    .name = "eval",
    .usage = "eval RUN_DIR [DATA.h5] [section.key=value ...]",
    .summary = "evaluate a training run: per-appliance NILM metrics or calibrated anomaly alarms -> eval.json + report",
    .details = "Loads the checkpoint of RUN_DIR with the best validation loss (eval.checkpoint=last: the\n"
               "newest valid one; its stored configuration rebuilds the model),\n"
               "evaluates it on DATA.h5 (default: the run's data.file) and writes RUN_DIR/eval.json,\n"
               "report.md, report.html and plots/ (gnuplot). NILM: MAE, SAE, NDE, on/off precision/recall/F1\n"
               "and EA per appliance on the held-out time (test split) and on held-out households, states\n"
               "optionally filtered (eval.calibrate_filter, eval.fill_s, eval.min_on_s). PdM:\n"
               "per-step scores, threshold calibrated on validation data, alarm runs, point and event\n"
               "metrics per turbine, machine type and condition, CARE score; eval.models adds models of\n"
               "other window lengths (multi-scale), or for NILM more runs of the same window whose\n"
               "outputs are averaged (an ensemble, e.g. other train.seed). Identical results for any number of ranks.\n"
               "See docs/evaluation.md.",
    .opts = eval_opts,
    .min_pos = 1,
    .max_pos = 2,
    .run = run_eval,
    .prints_config = 0,
};
