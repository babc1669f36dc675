/* cli/train_args.h: the train command's settings as a gt_train_config, shared
 * by train, bench train, eval and predict (which rebuild a run's model and data
 * configuration from the configuration stored in its checkpoint). */
#ifndef GT_CLI_TRAIN_ARGS_H
#define GT_CLI_TRAIN_ARGS_H

#include "cli/options.h"
#include "train/trainer.h"

/* The option table of `gridtrain train` (cli/cmd_train.c), also plan's: the
 * rows every task reads and each registered task's own data.* rows (task/task.h
 * gt_task_opts), in their places; filled by gt_train_opts_init (the commands'
 * opts_init: gt_cmd_opts calls it before every use), again when tasks were
 * registered since. Register every task before the table's first use: a parse
 * keeps pointers to its rows. */
extern gt_opt gt_train_opts[];
void gt_train_opts_init(void);

/* CONFIG or --resume RUN_DIR of a0 -> the merged arguments a (defaults <
 * CONFIG or the stored configuration < --config files < command line) and the
 * training configuration c; *resume: 1 with --resume. */
void gt_train_resolve_config(const gt_args *a0, gt_args *a, gt_train_config *c, int *resume);

/* a: parsed with gt_cmd_train's table. Validates ranges (user errors, exit 2).
 * Strings in c point into a: keep it alive while c is used. */
void gt_train_config_from_args(const gt_args *a, gt_train_config *c);
/* For a configuration stored with a run (resume, eval, predict): one without
 * model.head predates the gated head and was trained with the power head. */
void gt_train_config_stored_compat(const gt_args *a, gt_train_config *c);

#endif
