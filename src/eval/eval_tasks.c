/* eval/eval_tasks.c: the evaluation table, one line per task (eval_task.h).
 * The order is eval.json's: each task's section and eval_config keys. */
#include <string.h>

#include "core/check.h"
#include "eval/eval_task.h"

static const gt_eval_task_i *const g_eval_tasks[] = {
    &gt_eval_task_nilm,
    &gt_eval_task_pdm,
};
enum { N_EVAL_TASKS = (int)(sizeof g_eval_tasks / sizeof g_eval_tasks[0]) };

const gt_eval_task_i *gt_eval_task_at(int i) { return i >= 0 && i < N_EVAL_TASKS ? g_eval_tasks[i] : NULL; }

const gt_eval_task_i *gt_eval_task_get(gt_task kind) {
    for (int i = 0; i < N_EVAL_TASKS; i++)
        if (g_eval_tasks[i]->kind == kind) return g_eval_tasks[i];
    GT_FAIL(GT_EXIT_INTERNAL, "no evaluation for task %d", (int)kind);
}

const gt_eval_task_i *gt_eval_task_by_name(const char *name) {
    for (int i = 0; name && i < N_EVAL_TASKS; i++)
        if (!strcmp(g_eval_tasks[i]->name, name)) return g_eval_tasks[i];
    return NULL;
}
