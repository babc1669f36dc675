/* pdm/task_pdm.c: wind-turbine anomaly detection. A window of T steps of
 * the C sensor channels and one of two objectives (data.pdm_target):
 *   next  the target of step t is the input at t + 1 (next-step prediction),
 *         so a sequence model (lstm) learns normal behaviour and its
 *         prediction error is the anomaly score (eval/);
 *   nbm   a normal-behaviour model: the targets are the condition channels
 *         (temperatures, pressures, ...) at every step t, the input is the
 *         window with those channels set to 0 (gt_pdm_nbm_input), so the
 *         model predicts what the operating channels (wind, power, rotor
 *         speed, ambient temperature, ...) of steps 0..t say the condition
 *         should be; the residual is the anomaly score.
 * Both keep the model's shape (n_in = n_out = C): nbm masks the other
 * channels out of the loss, so a run, a checkpoint and eval need nothing
 * else to tell them apart than the stored data.pdm_target. */
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/check_mpi.h"
#include "core/log.h"
#include "pdm/pdm.h"
#include "task/task.h"

/* a kind's output decides (nn/model.h gt_model_kind_seq2point): a value per step */
static void pdm_check_model(const gt_model_config *mc, const char *file) {
    if (gt_model_kind_seq2point(mc->kind)) {
        char kinds[256];
        gt_model_kinds_by_output(0, kinds, sizeof kinds);
        GT_FAIL(GT_EXIT_USAGE,
                "%s is a wind-farm (pdm) file: model.kind %s predicts one value per window (seq2point); anomaly "
                "scores need a per-step sequence model (model.kind = %s)", file, gt_model_kind_name(mc->kind), kinds);
    }
    GT_CHECK(!mc->gated, GT_EXIT_USAGE,
             "%s is a wind-farm (pdm) file: model.head = gated is for NILM files (appliance on/off)", file);
}

static gt_dataset *pdm_open(const char *file, const gt_data_config *dc_in, MPI_Comm comm) {
    int rank;
    MPI_CHECK(MPI_Comm_rank(comm, &rank));
    gt_data_config dcs = *dc_in, *dc = &dcs;
    gt_pdm_care_select(dc, file, comm); /* data.care_event: one event dataset's parts */
    const gt_pdm_care_sel *c = &gt_pdm_data_cfg(dc)->care;
    if (c->event_id >= 0 && rank == 0) {
        gt_data_item_rows r;
        gt_data_item_rows_of(dc, c->train_hi > c->pred_hi ? c->train_hi : c->pred_hi, c->turbine, &r);
        GT_INFO("data: CARE event dataset %lld (%s, turbine file index %d): training part rows [%lld, %lld) (%lld "
                "rows: train [%lld, %lld), validation [%lld, %lld)), prediction part rows [%lld, %lld) (%lld rows)",
                (long long)c->event_id, c->anomaly ? "anomaly" : "normal", c->turbine, (long long)c->train_lo,
                (long long)c->train_hi, (long long)(c->train_hi - c->train_lo), (long long)r.lo[GT_SPLIT_TRAIN],
                (long long)r.hi[GT_SPLIT_TRAIN], (long long)r.lo[GT_SPLIT_VAL], (long long)r.hi[GT_SPLIT_VAL],
                (long long)c->pred_lo, (long long)c->pred_hi, (long long)(c->pred_hi - c->pred_lo));
    }
    const gt_pdm_data_config *pc = gt_pdm_data_cfg(dc);
    gt_pdm_shard *sh = gt_pdm_shard_read_opts(file, &(gt_read_opts){pc->signal_limit}, comm);
    gt_pdm_check_filters(file, sh, dc, comm); /* an id or code the file lacks: one line, not an empty split */
    gt_dataset *ds = gt_dataset_pdm(sh, dc, comm);
    /* data.spike_channels patterns: one that matches no channel of the file is
     * likely a typo (the spike test then screens fewer channels than meant) */
    if (rank == 0 && strcmp(pc->spike_channels, "auto") && strcmp(pc->spike_channels, "all") &&
        strcmp(pc->spike_channels, "none")) {
        char pats[sizeof pc->spike_channels];
        memcpy(pats, pc->spike_channels, sizeof pats);
        pats[sizeof pats - 1] = 0;
        char *save = NULL;
        for (char *p = strtok_r(pats, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
            while (*p == ' ') p++;
            if (!*p) continue;
            int any = 0;
            for (int c = 0; c < gt_dataset_n_targets(ds) && !any; c++) any = fnmatch(p, gt_dataset_target_name(ds, c), 0) == 0;
            if (!any) GT_WARN("%s: data.spike_channels pattern '%s' matches no channel of the file", file, p);
        }
    }
    int n_in, n_tg;
    if (gt_dataset_nbm_roles(ds, &n_in, &n_tg)) { /* the same roles on every rank: they come from the file's channels */
        GT_CHECK(n_in > 0 && n_tg > 0, GT_EXIT_USAGE,
                 "%s: data.pdm_target = nbm needs operating channels to predict from and condition channels to "
                 "predict; the file has %d input and %d target channels (data.nbm_inputs = %s, data.nbm_targets = %s)",
                 file, n_in, n_tg, pc->nbm_inputs, pc->nbm_targets);
        if (rank == 0)
            GT_INFO("data: normal-behaviour model: %d condition channels predicted from %d operating channels (%d "
                    "unused)", n_tg, n_in, sh->n_channels - n_in - n_tg);
    }
    return ds;
}

static void pdm_shape_model(gt_model_config *mc, const gt_data_config *dc, int n_targets) {
    mc->window = dc->window;
    mc->n_in = mc->n_out = n_targets;
}

/* A window of T steps x C channels; next: the model kind (its table's
 * next-step targets); nbm: each channel's role (input or target); the model
 * input (imputed, nbm's targets zeroed). */
typedef struct pdm_ctx {
    int T, C;
    gt_model_kind kind;
    uint8_t *role; /* (C) gt_nbm_role of each channel; NULL: next-step targets */
    float *xbuf;   /* (max_batch, n_x) */
} pdm_ctx;

static void *pdm_ctx_init(gt_task_ctx *tc, const gt_dataset *ds, const gt_model_config *mc) {
    pdm_ctx *pc = GT_CALLOC(1, sizeof *pc);
    pc->T = mc->window;
    pc->C = gt_dataset_n_targets(ds);
    pc->kind = mc->kind;
    int n_in, n_tg;
    const uint8_t *role = gt_dataset_nbm_roles(ds, &n_in, &n_tg);
    if (role) { /* nbm: the model sees a copy of the window with the targets zeroed */
        pc->role = GT_MALLOC((size_t)(pc->C > 0 ? pc->C : 1));
        memcpy(pc->role, role, (size_t)pc->C);
    } else { /* next: the kind's table says what the next step's targets are */
        GT_CHECK(gt_model_kind_next_step(mc->kind), GT_EXIT_USAGE,
                 "data.pdm_target = next: model.kind %s does not predict the next step of its input (no next-step "
                 "targets in its table); use data.pdm_target = nbm", gt_model_kind_name(mc->kind));
    }
    /* the model input with missing samples imputed (and nbm's zeroed targets) */
    pc->xbuf = GT_MALLOC(sizeof(float) * (size_t)(mc->max_batch > 0 ? mc->max_batch : 1) * tc->n_x);
    return pc;
}

static void pdm_ctx_free(void *priv) {
    pdm_ctx *pc = priv;
    free(pc->role), free(pc->xbuf);
    free(pc);
}

/* The model input: missing samples (NaN in the window: rows that are not gap
 * rows, data.pdm_row_missing) set to 0, the channel's training mean; nbm:
 * the target channels zeroed. A window without a missing sample is passed as
 * it is (next). */
static const float *pdm_input(gt_task_ctx *tc, const float *x, int B) {
    pdm_ctx *pc = tc->priv;
    const size_t n = (size_t)B * tc->n_x;
    if (!pc->role) {
        size_t i = 0;
        while (i < n && isfinite(x[i])) i++;
        if (i == n) return x;
    }
    memcpy(pc->xbuf, x, sizeof(float) * n);
    gt_pdm_impute(pc->xbuf, (int64_t)n);
    if (pc->role) gt_pdm_nbm_input(pc->xbuf, (int64_t)B * pc->T, pc->C, pc->role);
    return pc->xbuf;
}

/* nbm: y (B,T,C) = x (the same step), mask 1 on the target channels at every
 * step: the model has seen the operating channels of steps 0..t */
static void nbm_targets(float *y, float *mask, const float *x, int B, int T, int C, const uint8_t *role) {
    const size_t n = (size_t)B * T * C;
    memcpy(y, x, sizeof(float) * n);
    for (size_t i = 0; i < n; i++) mask[i] = role[i % (size_t)C] == GT_NBM_TARGET ? 1.0f : 0.0f;
}

/* A missing target sample is left out of the loss (mask 0, y 0). */
static void pdm_targets(gt_task_ctx *tc, const float *x, const float *dy, const float *dm, int B, const float **y,
                        const float **mask) {
    pdm_ctx *pc = tc->priv;
    (void)dy, (void)dm;
    if (pc->role) nbm_targets(tc->ybuf, tc->mbuf, x, B, pc->T, pc->C, pc->role);
    else gt_model_next_step_targets(pc->kind, tc->ybuf, tc->mbuf, x, B, pc->T, pc->C);
    const size_t n = (size_t)B * tc->n_y;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(tc->ybuf[i])) tc->ybuf[i] = 0.0f, tc->mbuf[i] = 0.0f;
    *y = tc->ybuf;
    *mask = tc->mbuf;
}

/* The targets the loss counts: every step but the first (next) or the
 * target channels at every step (nbm), missing samples left out. */
static double pdm_target_count(const gt_task_ctx *tc, const gt_batch *b) {
    const pdm_ctx *pc = tc->priv;
    const size_t C = (size_t)pc->C, TC = (size_t)pc->T * C;
    double c = 0;
    for (int64_t i = 0; i < b->n; i++) {
        const float *x = b->x + (size_t)i * tc->n_x;
        for (size_t k = pc->role ? 0 : C; k < TC; k++)
            c += (!pc->role || pc->role[k % C] == GT_NBM_TARGET) && isfinite(x[k]);
    }
    return c;
}

const gt_task_i gt_task_pdm = {
    .name = "pdm",
    .item = "turbine",
    .file_kind = GT_KIND_PDM,
    .data_targets = 0,
    .check_model = pdm_check_model,
    .open = pdm_open,
    .shape_model = pdm_shape_model,
    .input = pdm_input,
    .targets = pdm_targets,
    .target_count = pdm_target_count,
    .objective = gt_task_loss_objective,
    .ctx_init = pdm_ctx_init,
    .ctx_free = pdm_ctx_free,
};
