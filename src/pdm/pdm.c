/* pdm/pdm.c: the PdM task (task/task.h gt_task_def): anomaly detection on
 * wind-farm files, one folder: training's table (task_pdm.c), the data side
 * (dataset_pdm.c), evaluation and predict (eval_pdm_task.c, eval_pdm.c,
 * pdm_score.c, pdm_calib.c, pdm_alarm.c, pdm_output.c), its option rows
 * (pdm_opts.c). Registered by its line in task/task_registry.h. */
#include "eval/eval_task.h"
#include "pdm/pdm_impl.h"
#include "task/task.h"

const gt_task_def gt_task_def_pdm = {
    .train = &gt_task_pdm,
    .data = &gt_data_task_pdm,
    .eval = &gt_eval_task_pdm,
    .opts = &gt_pdm_opts,
};
