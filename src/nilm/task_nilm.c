/* nilm/task_nilm.c: NILM disaggregation. A window of aggregate power (plus
 * optional time-of-day channels) -> each appliance's power at its midpoint
 * (seq2point); targets and masks come from the dataset (per-appliance
 * strides, appliances not owned or not selected masked out). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/log.h"
#include "dist/allreduce.h"
#include "io/format.h"
#include "nilm/nilm_impl.h"
#include "task/task.h"

/* a kind's output decides (nn/model.h gt_model_kind_seq2point): one value per window */
static void nilm_check_model(const gt_model_config *mc, const char *file) {
    if (gt_model_kind_seq2point(mc->kind)) return;
    char kinds[256];
    gt_model_kinds_by_output(1, kinds, sizeof kinds);
    GT_FAIL(GT_EXIT_USAGE,
            "%s is a NILM file: model.kind %s predicts its own input sequence (anomaly detection on wind-farm "
            "files); disaggregation needs a seq2point model (model.kind = %s)", file, gt_model_kind_name(mc->kind),
            kinds);
}

static gt_dataset *nilm_open(const char *file, const gt_data_config *dc, MPI_Comm comm) {
    gt_nilm_shard *sh = gt_nilm_shard_read_opts(file, &(gt_read_opts){gt_nilm_data_cfg(dc)->power_limit_w}, comm);
    gt_nilm_check_filters(file, sh, dc, comm); /* an id the file lacks: one line, not an empty split */
    gt_dataset *ds = gt_dataset_nilm(sh, dc, comm);
    /* appliances without a single finite target in the train split: all of
     * them trained nothing (loss 0, null metrics): refused; some: a warning.
     * The counts are global, so every rank decides alike. */
    const int A = gt_dataset_n_targets(ds);
    char names[1024] = "";
    int n_none = 0;
    for (int a = 0; a < A; a++)
        if (gt_dataset_norm_count(ds, 1 + a) == 0) {
            size_t l = strlen(names);
            if (l + 40 < sizeof names)
                snprintf(names + l, sizeof names - l, "%s%s", n_none ? ", " : "", gt_dataset_target_name(ds, a));
            n_none++;
        }
    if (A > 0 && n_none == A && gt_dataset_n_windows_global(ds, GT_SPLIT_TRAIN) > 0) { /* no windows: the trainer says so */
        char msg[1400];
        snprintf(msg, sizeof msg, "%s: no finite target in the train split for any appliance (%s): every value is "
                 "missing (NaN) in the training rows; check the file or data.appliances", file, names);
        gt_io_fail(comm, GT_EXIT_DATA, msg);
    }
    if (n_none)
        GT_WARN("%s: %d of %d appliance(s) have no finite target in the train split and learn nothing: %s", file,
                n_none, A, names);
    const double augment = gt_nilm_data_cfg(dc)->augment;
    if (augment > 0) {
        double n_act = (double)gt_dataset_n_activations(ds);
        gt_dist_allreduce_sum_d(&n_act, 1, comm);
        GT_INFO("data: augment %g: %lld appliance activations of the training rows to superimpose", augment,
                (long long)n_act);
        GT_CHECK(n_act > 0, GT_EXIT_DATA, "%s: data.augment = %g but no appliance is ever on in the training rows",
                 file, augment);
    }
    return ds;
}

static void nilm_shape_model(gt_model_config *mc, const gt_data_config *dc, int n_targets) {
    mc->window = dc->window;
    mc->n_in = gt_nilm_n_in(dc, n_targets);
    mc->n_out = mc->gated ? 2 * n_targets : n_targets;
}

static const float *nilm_input(gt_task_ctx *tc, const float *x, int B) {
    (void)tc, (void)B;
    return x;
}

static void nilm_targets(gt_task_ctx *tc, const float *x, const float *dy, const float *dm, int B, const float **y,
                         const float **mask) {
    (void)tc, (void)x, (void)B;
    *y = dy;
    *mask = dm;
}

static double nilm_target_count(const gt_task_ctx *tc, const gt_batch *b) {
    double c = 0;
    size_t n = (size_t)b->n * tc->n_y_ds;
    for (size_t i = 0; i < n; i++) c += b->mask[i];
    return c;
}

/* The gated head (model outputs power | on-logit per appliance): its
 * on-thresholds in the (possibly restored) normalised units. */
typedef struct nilm_ctx {
    int gated;
    float *thr; /* (n_y_ds) */
} nilm_ctx;

static void *nilm_ctx_init(gt_task_ctx *tc, const gt_dataset *ds, const gt_model_config *mc) {
    if (!mc->gated) return NULL;
    nilm_ctx *nc = GT_CALLOC(1, sizeof *nc);
    nc->gated = 1;
    tc->n_t = tc->n_y_ds; /* a mask element per appliance, two outputs each */
    nc->thr = GT_MALLOC(sizeof(float) * (tc->n_y_ds ? tc->n_y_ds : 1));
    for (size_t a = 0; a < tc->n_y_ds; a++) nc->thr[a] = gt_dataset_on_threshold(ds, (int)a);
    return nc;
}

static void nilm_ctx_free(void *priv) {
    nilm_ctx *nc = priv;
    free(nc->thr);
    free(nc);
}

static double nilm_objective(const gt_task_ctx *tc, float *dpred, const float *pred, const float *y,
                             const float *mask, int B, float coef) {
    const nilm_ctx *nc = tc->priv;
    if (nc && nc->gated) return gt_gated_loss_sum(dpred, pred, y, mask, nc->thr, (size_t)B, (int)tc->n_y_ds, coef);
    return gt_task_loss_objective(tc, dpred, pred, y, mask, B, coef);
}

const gt_task_i gt_task_nilm = {
    .name = "nilm",
    .item = "household",
    .file_kind = GT_KIND_NILM,
    .data_targets = 1,
    .check_model = nilm_check_model,
    .open = nilm_open,
    .shape_model = nilm_shape_model,
    .input = nilm_input,
    .targets = nilm_targets,
    .target_count = nilm_target_count,
    .objective = nilm_objective,
    .ctx_init = nilm_ctx_init,
    .ctx_free = nilm_ctx_free,
};
