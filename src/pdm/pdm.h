/* pdm/pdm.h: what the PdM task (anomaly detection on wind-farm files) offers
 * the folders above it and the tests; the rest of the task is reached
 * through its registered struct (task/task.h gt_task_def, task_registry.h). */
#ifndef GT_PDM_PDM_H
#define GT_PDM_PDM_H

#include "data/dataset.h"
#include "task/task.h"

extern const gt_task_def gt_task_def_pdm;            /* pdm.c: the task */
extern const struct gt_data_task_i gt_data_task_pdm; /* dataset_pdm.c: its data side */

/* The data settings' defaults (gt_data_config_defaults) with PdM's window and
 * stride resolved (task number GT_TASK_UNSET: for a dataset built directly
 * with gt_dataset_pdm, outside the registry). */
void gt_pdm_data_defaults(gt_data_config *cfg);

#endif
