/* task/task_objective.c: the objective every task may use as its own: the
 * model's loss over the masked targets (the tasks' tables point here). */
#include "task/task.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/check.h"
#include "dist/reduce.h"
#include "io/format.h"

double gt_task_loss_objective(const gt_task_ctx *tc, float *dpred, const float *pred, const float *y,
                              const float *mask, int B, float coef) {
    return gt_loss_sum_grad(tc->loss, dpred, pred, y, mask, (size_t)B * tc->n_y, coef);
}
