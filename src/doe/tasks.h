/* doe/tasks.h: the task of a sweep and of its cells, through the task
 * registry (task/task.h) and evaluation's tables (eval/eval_task.h): doe/
 * names no task. The files of doe/ that need one (run.c, the report's) use
 * these; the registry must hold the tasks (gt_task_register_builtins). */
#ifndef GT_DOE_TASKS_H
#define GT_DOE_TASKS_H

#include <cjson/cJSON.h>

#include "doe/matrix.h"

/* The name of the task a data file's kind selects (the first registered task
 * of that kind), NULL when the file cannot be opened as a gridtrain file or
 * no task trains on its kind. Not collective (opens on MPI_COMM_SELF). */
const char *gt_doe_task_of_file(const char *file);
/* The task of a matrix's cells: a fixed data.task other than auto, else the
 * task of the data file (a fixed data.file, else the first level of a
 * data.file factor); "" when neither tells. */
const char *gt_doe_task_of_matrix(const gt_doe_matrix *m);
/* eval.json's task sections of a cell that was not evaluated: null for
 * every task with an evaluation, in the registry's order (eval.json's). */
void gt_doe_null_sections(cJSON *ev);

#endif
