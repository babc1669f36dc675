/* doe/tasks.c: the task of a sweep and of its cells (tasks.h). */
#include "doe/tasks.h"

#include <mpi.h>
#include <string.h>

#include "eval/eval_task.h"
#include "io/format.h"
#include "task/task.h"

const char *gt_doe_task_of_file(const char *file) {
    if (!file || !*file) return NULL;
    gt_file_index ix;
    char err[GT_IO_ERR_LEN];
    hid_t f = gt_io_open(file, MPI_COMM_SELF, GT_KIND_UNKNOWN, &ix, err, sizeof err);
    if (f < 0) return NULL;
    H5Fclose(f);
    const gt_task_i *t = gt_task_for_kind(ix.kind);
    gt_file_index_free(&ix);
    return t ? t->name : NULL;
}

const char *gt_doe_task_of_matrix(const gt_doe_matrix *m) {
    const char *named = gt_doe_fixed_get(m, "data.task");
    if (named && *named && strcmp(named, "auto")) return named;
    const char *file = gt_doe_fixed_get(m, "data.file");
    for (int f = 0; !file && f < m->n_factors; f++)
        if (!strcmp(m->factors[f].key, "data.file") && m->factors[f].n_levels > 0) file = m->factors[f].levels[0];
    const char *t = gt_doe_task_of_file(file);
    return t ? t : "";
}

void gt_doe_null_sections(cJSON *ev) {
    for (int i = 0; gt_eval_task_at(i); i++) cJSON_AddNullToObject(ev, gt_eval_task_at(i)->name);
}
