/* task/task.c: the task table, the choice by file kind, and what every task
 * shares (the objective, the bound context). See task.h. */
#include "task/task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "dist/reduce.h"
#include "io/format.h"

static const gt_task_i *const g_tasks[] = {&gt_task_nilm, &gt_task_pdm};

const gt_task_i *gt_task_get(gt_task k) {
    for (size_t i = 0; i < sizeof g_tasks / sizeof g_tasks[0]; i++)
        if (g_tasks[i]->kind == k) return g_tasks[i];
    GT_FAIL(GT_EXIT_INTERNAL, "unknown task %d", (int)k);
}

const gt_task_i *gt_task_for_kind(gt_file_kind k) {
    for (size_t i = 0; i < sizeof g_tasks / sizeof g_tasks[0]; i++)
        if (g_tasks[i]->file_kind == k) return g_tasks[i];
    return NULL;
}

const gt_task_i *gt_task_for_file(const char *file, MPI_Comm comm) {
    gt_file_index ix;
    char err[GT_IO_ERR_LEN];
    hid_t f = gt_io_open(file, comm, GT_KIND_UNKNOWN, &ix, err, sizeof err);
    if (f < 0) gt_io_fail(comm, GT_EXIT_DATA, err);
    H5Fclose(f);
    const gt_task_i *t = gt_task_for_kind(ix.kind);
    gt_file_index_free(&ix);
    GT_CHECK(t, GT_EXIT_DATA, "%s: no task trains on this file kind", file);
    return t;
}

void gt_task_ctx_init(gt_task_ctx *tc, const gt_task_i *task, const gt_dataset *ds, const gt_model_config *mc,
                      size_t n_y, float *ybuf, float *mbuf) {
    gt_task_ctx_free(tc);
    memset(tc, 0, sizeof *tc);
    tc->i = task;
    tc->loss = mc->loss;
    tc->gated = mc->gated;
    tc->n_x = (size_t)gt_dataset_n_x(ds);
    tc->n_y = n_y;
    tc->n_y_ds = (size_t)gt_dataset_n_y(ds);
    tc->n_t = tc->gated ? tc->n_y_ds : tc->n_y;
    tc->T = mc->window;
    tc->C = gt_dataset_n_targets(ds);
    tc->ybuf = ybuf;
    tc->mbuf = mbuf;
    int n_in, n_tg;
    const uint8_t *role = gt_dataset_nbm_roles(ds, &n_in, &n_tg);
    if (role) { /* pdm nbm: the model sees a copy of the window with the targets zeroed */
        tc->role = GT_MALLOC((size_t)(tc->C > 0 ? tc->C : 1));
        memcpy(tc->role, role, (size_t)tc->C);
        tc->n_role_tg = n_tg;
    }
    if (task->kind == GT_TASK_PDM) /* the model input with missing samples imputed (and nbm's zeroed targets) */
        tc->xbuf = GT_MALLOC(sizeof(float) * (size_t)(mc->max_batch > 0 ? mc->max_batch : 1) * tc->n_x);
    if (tc->gated) { /* on-thresholds in the (possibly restored) normalised units */
        tc->thr = GT_MALLOC(sizeof(float) * (tc->n_y_ds ? tc->n_y_ds : 1));
        for (size_t a = 0; a < tc->n_y_ds; a++) tc->thr[a] = gt_dataset_on_threshold(ds, (int)a);
    }
}

void gt_task_ctx_free(gt_task_ctx *tc) {
    free(tc->thr), free(tc->role), free(tc->xbuf);
    tc->thr = NULL;
    tc->role = NULL;
    tc->xbuf = NULL;
}

double gt_task_objective(const gt_task_ctx *tc, float *dpred, const float *pred, const float *y, const float *mask,
                         int B, float coef) {
    if (tc->gated) return gt_gated_loss_sum(dpred, pred, y, mask, tc->thr, (size_t)B, (int)tc->n_y_ds, coef);
    return gt_loss_sum_grad(tc->loss, dpred, pred, y, mask, (size_t)B * tc->n_y, coef);
}
