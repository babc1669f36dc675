/* eval/eval_tasks.c: the evaluation table, one line per task (eval_task.h),
 * and the tasks a program adds at start-up (gt_eval_task_register: a task
 * outside src/, such as tests/task's). The order is eval.json's: each task's
 * section and eval_config keys. */
#include <string.h>

#include "core/check.h"
#include "eval/eval_task.h"

enum { MAX_EVAL_TASKS = 8 };
static const gt_eval_task_i *g_eval_tasks[MAX_EVAL_TASKS] = {
    &gt_eval_task_nilm,
    &gt_eval_task_pdm,
};

/* the rows above, then those of gt_eval_task_register */
static int n_tasks(void) {
    int n = 0;
    while (n < MAX_EVAL_TASKS && g_eval_tasks[n]) n++;
    return n;
}

void gt_eval_task_register(const gt_eval_task_i *t) {
    const int n = n_tasks();
    GT_CHECK(n < MAX_EVAL_TASKS, GT_EXIT_INTERNAL, "eval: more than %d tasks", MAX_EVAL_TASKS);
    for (int i = 0; i < n; i++)
        GT_CHECK(g_eval_tasks[i]->kind != t->kind && strcmp(g_eval_tasks[i]->name, t->name), GT_EXIT_INTERNAL,
                 "eval: task %s registered twice", t->name);
    g_eval_tasks[n] = t;
}

const gt_eval_task_i *gt_eval_task_at(int i) { return i >= 0 && i < MAX_EVAL_TASKS ? g_eval_tasks[i] : NULL; }

const gt_eval_task_i *gt_eval_task_get(gt_task kind) {
    for (int i = 0; gt_eval_task_at(i); i++)
        if (g_eval_tasks[i]->kind == kind) return g_eval_tasks[i];
    GT_FAIL(GT_EXIT_INTERNAL, "no evaluation for task %d", (int)kind);
}

const gt_eval_task_i *gt_eval_task_by_name(const char *name) {
    for (int i = 0; name && gt_eval_task_at(i); i++)
        if (!strcmp(g_eval_tasks[i]->name, name)) return g_eval_tasks[i];
    return NULL;
}
