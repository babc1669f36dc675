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
    tc->n_x = (size_t)gt_dataset_n_x(ds);
    tc->n_y = n_y;
    tc->n_y_ds = (size_t)gt_dataset_n_y(ds);
    tc->n_t = tc->n_y;
    tc->ybuf = ybuf;
    tc->mbuf = mbuf;
    if (task->ctx_init) tc->priv = task->ctx_init(tc, ds, mc);
}

void gt_task_ctx_free(gt_task_ctx *tc) {
    if (tc->priv && tc->i && tc->i->ctx_free) tc->i->ctx_free(tc->priv);
    tc->priv = NULL;
}
