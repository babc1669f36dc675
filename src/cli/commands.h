/* cli/commands.h: the registry of subcommands. */
#ifndef GT_CLI_COMMANDS_H
#define GT_CLI_COMMANDS_H
#include <stdio.h>

#include "cli/options.h"

/* Each subcommand defines one of these in its cli/cmd_*.c file. */
extern const gt_cmd gt_cmd_synth, gt_cmd_import, gt_cmd_inspect, gt_cmd_train, gt_cmd_eval, gt_cmd_predict,
    gt_cmd_doe, gt_cmd_bench, gt_cmd_plan, gt_cmd_doctor;

int gt_commands_count(void);
const gt_cmd *gt_commands_get(int i);
const gt_cmd *gt_commands_find(const char *name);
/* 1 when some command's table has this "section.key" (shared config files). */
int gt_commands_know_key(const char *key);
/* Both, for gt_args_parse of a command's own arguments and config files. */
extern const gt_cmd_keys gt_commands_keys;

#endif
