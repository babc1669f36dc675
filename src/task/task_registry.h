/* task/task_registry.h: the tasks built into gridtrain, one line each.
 *
 * A task is one folder, src/<name>/ (docs/design.md "How to add a task"),
 * that defines `const gt_task_def gt_task_def_<name>` (task/task.h): its
 * training table (name, file kind, slots), its data side (data/dataset_impl.h
 * gt_data_task_i) and its evaluation side (eval/eval_task.h gt_eval_task_i). Its
 * line below makes the folder a layer of the build (cmake/layers.cmake reads
 * this list) and registers the task at start-up. The order is the tasks'
 * numbers (gt_task), the order of data.task's choices and of eval.json's task
 * sections.
 *
 * gt_task_register_builtins() is called by the program (cli/main.c) and by
 * the tests that train or evaluate a built-in task, before anything asks for
 * a task; it references the task folders' tables, so only code that may use
 * them (cli/, doe/, tests) calls it. */
#ifndef GT_TASK_TASK_REGISTRY_H
#define GT_TASK_TASK_REGISTRY_H

#include "task/task.h"

#define GT_TASKS(X) \
    X(nilm)         \
    X(pdm)

#define GT_TASK_DECLARE_(n) extern const gt_task_def gt_task_def_##n;
GT_TASKS(GT_TASK_DECLARE_)
#undef GT_TASK_DECLARE_

/* Registers the built-in tasks in the order of GT_TASKS (once; a second call
 * does nothing). */
static inline void gt_task_register_builtins(void) {
    if (gt_task_count() > 0) return;
#define GT_TASK_REGISTER_(n) gt_task_register(&gt_task_def_##n);
    GT_TASKS(GT_TASK_REGISTER_)
#undef GT_TASK_REGISTER_
}

#endif
