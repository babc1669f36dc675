/* cli/cmd_eval.c: `gridtrain eval RUN_DIR [DATA.h5] [section.key=value ...]`.
 *
 * Rebuilds the model of a training run from the configuration stored in its
 * checkpoint (eval.checkpoint: best validation loss or newest; the same keys
 * as `gridtrain train`), loads the
 * parameters and the frozen normalisation statistics, evaluates it
 * (eval/run_eval.h, through the task's eval table) and writes RUN_DIR/eval.json
 * and the report (eval/report.h).
 * Also defines gt_eval_cli_load and gt_eval_cli_load_all (used by
 * cli/cmd_predict.c): the stored configuration parsed with train's option
 * table, the model then loaded by cli/eval_load.c. */
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
#include "cli/eval_load.h"
#include "cli/train_args.h"
#include "core/check.h"
#include "core/log.h"
#include "eval/eval.h"
#include "train/checkpoint.h"
#include "train/device.h"
#include "train/trainer.h"

extern const gt_cmd gt_cmd_train;

static const gt_opt eval_opts[] = {
    GT_EVAL_STRIDE_OPTS("stride"),
    GT_EVAL_OPTS,
    {NULL, NULL, 0, NULL, NULL, NULL},
};

/* ---------------------------------------------------- loading a model -- */

void gt_eval_cli_load(const char *path, const gt_eval_data *D, int64_t batch, int best, gt_engine_kind engine,
                      MPI_Comm comm, gt_eval_loaded *L) {
    memset(L, 0, sizeof *L);
    long long file_step = gt_eval_cli_run_dir_of(path, L->run_dir, sizeof L->run_dir);
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
    gt_args_parse(&L->args, &gt_cmd_train, NULL, 2, argv); /* a stored config.ini: train's keys only */
    unlink(tpath);
    gt_train_config_from_args(&L->args, &L->tc);
    gt_train_config_stored_compat(&L->args, &L->tc);
    gt_eval_cli_load_model(L, path, file_step, D, batch, best, engine, comm);
}

int gt_eval_cli_load_all(const char *main_path, const gt_args *a, const char *data, MPI_Comm comm, gt_eval_loaded *Ls,
                         gt_eval_model *ems) {
    gt_eval_data D;
    gt_eval_cli_data_read(data, comm, &D);
    int64_t batch = gt_args_int(a, "eval.batch");
    GT_CHECK(batch >= 0 && batch <= GT_TRAIN_MAX_BATCH, GT_EXIT_USAGE, "eval.batch = %lld: give 0 (the run's micro-batch) or a size of 1 to %d",
             (long long)batch, GT_TRAIN_MAX_BATCH); /* a negative one was taken as 0 */
    int best = !strcmp(gt_args_str(a, "eval.checkpoint"), "best");
    int req = gt_device_request_parse(gt_args_str(a, "eval.device"));
    GT_ASSERT(req >= 0); /* the option table allows auto|cpu|cuda only */
    gt_train_device dev;
    gt_train_device_select((gt_device_request)req, "eval.device", 0, comm, &dev);
    int n = 0;
    gt_eval_cli_load(main_path, &D, batch, best, dev.engine, comm, &Ls[n]);
    ems[n] = Ls[n].em;
    n++;
    char list[4096];
    snprintf(list, sizeof list, "%s", gt_args_str(a, "eval.models"));
    char *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!*tok) continue;
        GT_CHECK(n < GT_EVAL_MAX_MODELS, GT_EXIT_USAGE, "eval.models: at most %d models in all", GT_EVAL_MAX_MODELS);
        gt_eval_cli_load(tok, &D, batch, best, dev.engine, comm, &Ls[n]);
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
    gt_eval_cli_data_free(&D);
    return n;
}

static int run_eval(const gt_args *a, MPI_Comm comm) {
    char run_dir[PATH_MAX];
    gt_eval_cli_run_dir_of(a->pos[0], run_dir, sizeof run_dir); /* eval.json etc. go to the run directory */
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
    int rc = gt_eval_cli_evaluate(run_dir, data, Ls, ems, n, &ec, comm);
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
               "metrics per turbine, machine type and condition, the authors' CARE score\n"
               "(care_protocol); eval.models adds models of other window lengths (multi-scale), or\n"
               "for NILM more runs of the same window whose\n"
               "outputs are averaged (an ensemble, e.g. other train.seed). Identical results for any number of ranks.\n"
               "See docs/evaluation.md.",
    .opts = eval_opts,
    .min_pos = 1,
    .max_pos = 2,
    .run = run_eval,
    .prints_config = 0,
};
