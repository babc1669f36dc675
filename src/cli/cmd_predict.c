/* cli/cmd_predict.c: `gridtrain predict CHECKPOINT_OR_RUN_DIR DATA.h5 -o OUT.h5`.
 *
 * NILM models (s2p_cnn, s2p_tf): disaggregated power per appliance for every
 * row of every household (nilm/nilm.h gt_predict_nilm); lstm models: the
 * per-step anomaly score, the calibrated threshold and the alarms
 * (gt_predict_pdm; eval.models adds models of other windows). Collective:
 * every rank predicts its households/turbines and writes its rows; the file
 * does not depend on the number of ranks. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cmd_eval.h"
#include "cli/commands.h"
#include "core/check.h"
#include "core/fsutil.h"
#include "core/log.h"
#include "eval/eval.h"
#include "eval/eval_task.h"
#include "io/format.h"
#include "nilm/nilm.h"
#include "train/checkpoint.h"
#include "train/trainer.h"

static const gt_opt predict_opts[] = {
    {"predict.output", "o", GT_OPT_STR, "", "output HDF5 file (written as FILE.tmp.XXXXXX, renamed when complete; never one of the inputs)", NULL},
    {"predict.pad", "pad", GT_OPT_STR, "nan", "nilm: rows whose centred window leaves the household: NaN, or repeat the edge sample", "nan|edge"},
    GT_EVAL_OPTS,
    {NULL, NULL, 0, NULL, NULL, NULL},
};

/* Collective (every rank decides alike): the output must not be one of the
 * inputs (the data file, a model's checkpoint file) nor lie inside the run
 * directory of a model (a run directory given, or the run a checkpoint
 * RUN/checkpoints/ckpt-*.h5 belongs to): it would replace a file that is read
 * (a checkpoint) or one of the run's own records (config.ini, manifest.json,
 * eval.json, ...). Same file = same device and inode, so links and other
 * spellings of the path count; an output that does not exist yet is refused
 * inside a run directory. */
static void refuse_output_over_inputs(const gt_args *a, const char *out, MPI_Comm comm) {
    char list[4096];
    snprintf(list, sizeof list, "%s,%s", a->pos[0], gt_args_str(a, "eval.models"));
    const char *inputs[2 * GT_EVAL_MAX_MODELS + 2];
    char rundirs[GT_EVAL_MAX_MODELS + 1][PATH_MAX + 16];
    int n = 0, n_dirs = 0;
    inputs[n++] = a->pos[1];
    char *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok && n + 2 < (int)(sizeof inputs / sizeof *inputs);
         tok = strtok_r(NULL, ",", &save)) {
        if (!*tok) continue;
        inputs[n++] = tok; /* a run directory (refused as a whole), or a checkpoint file */
        struct stat st;
        if (n_dirs > GT_EVAL_MAX_MODELS || stat(tok, &st) != 0 || S_ISDIR(st.st_mode)) continue;
        /* a checkpoint file: its run directory is the folder above checkpoints/ */
        char *d = rundirs[n_dirs];
        snprintf(d, sizeof rundirs[0], "%s", tok);
        char *slash = strrchr(d, '/');
        if (!slash) snprintf(d, sizeof rundirs[0], ".");
        else if (slash == d) d[1] = 0;
        else *slash = 0;
        const char *base = strrchr(d, '/') ? strrchr(d, '/') + 1 : d;
        if (strcmp(base, "checkpoints")) continue;
        size_t k = strlen(d) - strlen("checkpoints");
        if (k == 0) snprintf(d, sizeof rundirs[0], ".");
        else d[k > 1 ? k - 1 : k] = 0; /* "RUN/checkpoints" -> "RUN", "/checkpoints" -> "/" */
        inputs[n++] = rundirs[n_dirs++];
    }
    char why[2 * PATH_MAX + 128];
    for (int i = 0; i < n; i++) {
        if (gt_output_is_input(out, inputs[i], why, sizeof why)) {
            char msg[sizeof why + 256];
            snprintf(msg, sizeof msg, "predict: refusing to write the output: %s (a model's run directory and the "
                     "inputs are never written); choose another -o", why);
            gt_io_fail(comm, GT_EXIT_USAGE, msg);
        }
    }
}

static int run_predict(const gt_args *a, MPI_Comm comm) {
    const char *out = gt_args_str(a, "predict.output");
    GT_CHECK(out[0], GT_EXIT_USAGE, "predict: no output file (-o OUT.h5)");
    refuse_output_over_inputs(a, out, comm);
    struct stat st; /* a directory failed only at the rename, after the whole computation */
    if (stat(out, &st) == 0 && S_ISDIR(st.st_mode)) {
        char msg[PATH_MAX + 128];
        snprintf(msg, sizeof msg, "cannot create the output '%s': %s", out, strerror(EISDIR));
        gt_io_fail(comm, GT_EXIT_RESOURCE, msg);
    }
    const char *data = a->pos[1];
    gt_eval_config ec;
    gt_eval_cli_config(a, &ec);
    gt_nilm_eval_cfg_set(&ec)->pad_edges = !strcmp(gt_args_str(a, "predict.pad"), "edge"); /* NILM's edge rows */
    gt_eval_loaded *Ls = GT_CALLOC(GT_EVAL_MAX_MODELS, sizeof(gt_eval_loaded));
    gt_eval_model ems[GT_EVAL_MAX_MODELS];
    int n = gt_eval_cli_load_all(a->pos[0], a, data, comm, Ls, ems);
    gt_eval_task_get(ems[0].data.task)->predict(data, ems, n, &ec, out, comm);
    for (int i = 0; i < n; i++) gt_eval_cli_unload(&Ls[i]);
    free(Ls);
    return 0;
}

const gt_cmd gt_cmd_predict = {
    .name = "predict",
    .usage = "predict CHECKPOINT_OR_RUN_DIR DATA.h5 -o OUT.h5 [section.key=value ...]",
    .summary = "per-row disaggregated power (NILM) or anomaly scores and alarms (PdM) of a file -> HDF5",
    .details = "NILM: /predictions [N, A] W for every row, the window centred on each row (edge rows NaN,\n"
               "or predict.pad=edge), plus /timestamps, /aggregate, /households, /appliance_meta;\n"
               "with a state filter also /on [N, A] (the filtered on/off states).\n"
               "PdM: /score, /alarm, /labels [N] with the threshold calibrated on the validation rows.\n"
               "A run directory loads its best-validation checkpoint (eval.checkpoint), a checkpoint\n"
               "path exactly that checkpoint. The output does not\n"
               "depend on the number of ranks. See docs/evaluation.md.",
    .opts = predict_opts,
    .min_pos = 2,
    .max_pos = 2,
    .run = run_predict,
    .prints_config = 0,
};
