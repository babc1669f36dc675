/* nilm/nilm.c: the NILM task (task/task.h gt_task_def): disaggregation on
 * household files, one folder: training's table (task_nilm.c), the data side
 * (dataset_nilm.c, nilm_augment.c), evaluation and predict (eval_nilm_task.c,
 * eval_nilm.c, nilm_predict.c), its option rows (nilm_opts.c). Registered by its line in task/task_registry.h. */
#include "eval/eval_task.h"
#include "nilm/nilm_impl.h"
#include "task/task.h"


const gt_task_def gt_task_def_nilm = {
    .train = &gt_task_nilm,
    .data = &gt_data_task_nilm,
    .eval = &gt_eval_task_nilm,
    .opts = &gt_nilm_opts,
};
