/* nilm/nilm.h: what the NILM task (disaggregation on household files) offers
 * the folders above it and the tests; the rest of the task is reached
 * through its registered struct (task/task.h gt_task_def, task_registry.h). */
#ifndef GT_NILM_NILM_H
#define GT_NILM_NILM_H

#include "data/dataset.h"
#include "task/task.h"

extern const gt_task_def gt_task_def_nilm;            /* nilm.c: the task */
extern const struct gt_data_task_i gt_data_task_nilm; /* dataset_nilm.c: its data side */

/* The data settings' defaults (gt_data_config_defaults) with NILM's window
 * and stride resolved (task number GT_TASK_UNSET: for a dataset built
 * directly with gt_dataset_nilm, outside the registry). */
void gt_nilm_data_defaults(gt_data_config *cfg);

#endif
