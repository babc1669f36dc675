/* cli/cmd_predict.c: `gridtrain predict CHECKPOINT_OR_RUN_DIR DATA.h5 -o OUT.h5`.
 *
 * NILM models (s2p_cnn, s2p_tf): disaggregated power per appliance for every
 * row of every household (eval/eval.h gt_predict_nilm); lstm models: the
 * per-step anomaly score, the calibrated threshold and the alarms
 * (gt_predict_pdm; eval.models adds models of other windows). Collective:
 * every rank predicts its households/turbines and writes its rows; the file
 * does not depend on the number of ranks. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_eval.h"
#include "cli/commands.h"
#include "core/check.h"
#include "core/log.h"
#include "eval/eval.h"
#include "eval/eval_task.h"
#include "train/checkpoint.h"
#include "train/trainer.h"

static const gt_opt predict_opts[] = {
    {"predict.output", "o", GT_OPT_STR, "", "output HDF5 file (written as FILE.tmp, renamed when complete)", NULL},
    {"predict.pad", "pad", GT_OPT_STR, "nan", "nilm: rows whose centred window leaves the household: NaN, or repeat the edge sample", "nan|edge"},
    GT_EVAL_OPTS,
    {NULL, NULL, 0, NULL, NULL, NULL},
};

static int run_predict(const gt_args *a, MPI_Comm comm) {
    const char *out = gt_args_str(a, "predict.output");
    GT_CHECK(out[0], GT_EXIT_USAGE, "predict: no output file (-o OUT.h5)");
    const char *data = a->pos[1];
    gt_eval_config ec;
    gt_eval_cli_config(a, &ec);
    ec.pad_edges = !strcmp(gt_args_str(a, "predict.pad"), "edge");
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
