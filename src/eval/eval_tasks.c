/* eval/eval_tasks.c: evaluation's lookups of a task's side (eval_task.h),
 * through the task registry (task/task.h): no task is named here. The order
 * is the registry's, and eval.json's: each task's section and eval_config keys. */
#include <string.h>

#include "core/check.h"
#include "eval/eval_task.h"
#include "task/task.h"

const gt_eval_task_i *gt_eval_task_at(int i) {
    for (int k = 0, seen = 0; gt_task_at(k); k++)
        if (gt_task_at(k)->eval && seen++ == i) return gt_task_at(k)->eval;
    return NULL;
}

const gt_eval_task_i *gt_eval_task_get(gt_task kind) {
    const gt_task_def *d = gt_task_def_get(kind);
    GT_CHECK(d->eval, GT_EXIT_USAGE, "task %s has no evaluation", d->train->name);
    return d->eval;
}

const gt_eval_task_i *gt_eval_task_by_name(const char *name) {
    for (int i = 0; name && gt_eval_task_at(i); i++)
        if (!strcmp(gt_eval_task_at(i)->name, name)) return gt_eval_task_at(i);
    return NULL;
}
