/* task/task.c: the task registry, the choice by file kind or data.task, and what every task
 * shares (the objective, the bound context). See task.h. */
#include "task/task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "dist/reduce.h"
#include "io/format.h"

enum { MAX_TASKS = 16 };
static const gt_task_def *g_tasks[MAX_TASKS];
static int g_n_tasks;

gt_task gt_task_register(const gt_task_def *d) {
    GT_CHECK(g_n_tasks < MAX_TASKS, GT_EXIT_INTERNAL, "task: more than %d tasks", MAX_TASKS);
    GT_CHECK(d && d->train && d->train->name && d->data, GT_EXIT_INTERNAL,
             "task: a task needs a training table with a name and a data side");
    GT_CHECK(!gt_task_by_name(d->train->name), GT_EXIT_INTERNAL, "task: %s registered twice", d->train->name);
    gt_data_task_add(d->data); /* its data settings' block in every gt_data_config made from now on */
    g_tasks[g_n_tasks] = d;
    return (gt_task)g_n_tasks++;
}

int gt_task_count(void) { return g_n_tasks; }

const gt_task_def *gt_task_at(int i) { return i >= 0 && i < g_n_tasks ? g_tasks[i] : NULL; }

const gt_task_def *gt_task_def_get(gt_task k) {
    GT_CHECK(k >= 0 && k < g_n_tasks, GT_EXIT_INTERNAL, "unknown task %d (%d registered)", (int)k, g_n_tasks);
    return g_tasks[k];
}

const gt_task_i *gt_task_get(gt_task k) { return gt_task_def_get(k)->train; }

gt_task gt_task_id(const gt_task_i *t) {
    for (int i = 0; i < g_n_tasks; i++)
        if (g_tasks[i]->train == t) return (gt_task)i;
    GT_FAIL(GT_EXIT_INTERNAL, "task %s is not registered", t && t->name ? t->name : "?");
}

const gt_task_def *gt_task_def_of(const gt_task_i *t) { return g_tasks[gt_task_id(t)]; }

const gt_task_i *gt_task_by_name(const char *name) {
    for (int i = 0; name && i < g_n_tasks; i++)
        if (!strcmp(g_tasks[i]->train->name, name)) return g_tasks[i]->train;
    return NULL;
}

const gt_task_i *gt_task_for_kind(gt_file_kind k) {
    for (int i = 0; i < g_n_tasks; i++)
        if (g_tasks[i]->train->file_kind == k) return g_tasks[i]->train;
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

/* "auto|a|b": the tasks of file kind k */
static const char *same_kind(gt_file_kind k) {
    static char out[256];
    snprintf(out, sizeof out, "auto");
    for (int i = 0; i < g_n_tasks; i++) {
        size_t l = strlen(out);
        if (g_tasks[i]->train->file_kind == k) snprintf(out + l, sizeof out - l, "|%s", g_tasks[i]->train->name);
    }
    return out;
}

const gt_task_i *gt_task_choose(const char *name, const char *file, MPI_Comm comm) {
    const gt_task_i *of_file = gt_task_for_file(file, comm);
    if (!name || !name[0] || !strcmp(name, "auto")) return of_file;
    const gt_task_i *t = gt_task_by_name(name);
    char choices[256] = "auto";
    for (int i = 0; i < g_n_tasks; i++) {
        size_t l = strlen(choices);
        snprintf(choices + l, sizeof choices - l, "|%s", g_tasks[i]->train->name);
    }
    GT_CHECK(t, GT_EXIT_USAGE, "%s: data.task = %s: no such task (choices: %s)", file, name, choices);
    GT_CHECK(t->file_kind == of_file->file_kind, GT_EXIT_USAGE,
             "%s: data.task = %s: the task trains on %s files, this is a %s file (choices: %s)", file, name,
             gt_file_kind_name(t->file_kind), gt_file_kind_name(of_file->file_kind), same_kind(of_file->file_kind));
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
