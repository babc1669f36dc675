/* task/task_pdm.c: wind-turbine anomaly detection. A window of T steps of
 * the C sensor channels; the target of step t is the input at t + 1
 * (next-step prediction), so a sequence model (lstm) learns normal
 * behaviour and its prediction error is the anomaly score (eval/). */
#include "core/check.h"
#include "nn/model_lstm.h"
#include "task/task.h"

static void pdm_check_model(const gt_model_config *mc, const char *file) {
    GT_CHECK(mc->kind == GT_MODEL_LSTM, GT_EXIT_USAGE,
             "%s is a wind-farm (pdm) file: model.kind %s predicts one value per window (seq2point); anomaly "
             "scores need a per-step sequence model (model.kind = lstm)", file, gt_model_kind_name(mc->kind));
    GT_CHECK(!mc->gated, GT_EXIT_USAGE,
             "%s is a wind-farm (pdm) file: model.head = gated is for NILM files (appliance on/off)", file);
}

static gt_dataset *pdm_open(const char *file, const gt_data_config *dc, MPI_Comm comm) {
    gt_pdm_shard *sh = gt_pdm_shard_read(file, comm);
    return gt_dataset_pdm(sh, dc, comm);
}

static void pdm_shape_model(gt_model_config *mc, const gt_data_config *dc, int n_targets) {
    mc->window = dc->window;
    mc->n_in = mc->n_out = n_targets;
}

static void pdm_targets(gt_task_ctx *tc, const float *x, const float *dy, const float *dm, int B, const float **y,
                        const float **mask) {
    (void)dy, (void)dm;
    gt_model_lstm_targets(tc->ybuf, tc->mbuf, x, B, tc->T, tc->C);
    *y = tc->ybuf;
    *mask = tc->mbuf;
}

static double pdm_target_count(const gt_task_ctx *tc, const gt_batch *b) {
    return (double)b->n * (double)(tc->T - 1) * (double)tc->C;
}

const gt_task_i gt_task_pdm = {
    .kind = GT_TASK_PDM,
    .name = "pdm",
    .item = "turbine",
    .file_kind = GT_KIND_PDM,
    .data_targets = 0,
    .check_model = pdm_check_model,
    .open = pdm_open,
    .shape_model = pdm_shape_model,
    .targets = pdm_targets,
    .target_count = pdm_target_count,
};
