/* eval/eval_config.c: the evaluation settings, one block per task (eval.h
 * gt_eval_config): each task's defaults and the lookup of its block, by the
 * order of the registered evaluations (eval_tasks.c). No task is named here. */
#include <string.h>

#include "core/check.h"
#include "eval/eval.h"
#include "eval/eval_task.h"

void gt_eval_config_defaults(gt_eval_config *c) {
    memset(c, 0, sizeof *c);
    for (int i = 0; gt_eval_task_at(i); i++) {
        const gt_eval_task_i *t = gt_eval_task_at(i);
        GT_CHECK(i < GT_EVAL_MAX_TASKS, GT_EXIT_INTERNAL, "eval: more than %d tasks with an evaluation",
                 GT_EVAL_MAX_TASKS);
        GT_CHECK(t->config_bytes <= GT_EVAL_TASK_CONFIG_BYTES, GT_EXIT_INTERNAL,
                 "eval: task %s's settings take %zu bytes (at most %d)", t->name, t->config_bytes,
                 GT_EVAL_TASK_CONFIG_BYTES);
        if (t->config_defaults) t->config_defaults(c->task[i].bytes);
    }
}

static int block_of(const char *name) {
    for (int i = 0; i < GT_EVAL_MAX_TASKS && gt_eval_task_at(i); i++)
        if (!strcmp(gt_eval_task_at(i)->name, name)) {
            GT_CHECK(gt_eval_task_at(i)->config_bytes > 0, GT_EXIT_INTERNAL, "eval: task %s has no settings", name);
            return i;
        }
    GT_FAIL(GT_EXIT_INTERNAL, "eval: no registered task %s with an evaluation (gt_task_register first)", name);
    return -1;
}

void *gt_eval_task_config(gt_eval_config *c, const char *name) { return c->task[block_of(name)].bytes; }

const void *gt_eval_task_config_c(const gt_eval_config *c, const char *name) {
    return c->task[block_of(name)].bytes;
}
