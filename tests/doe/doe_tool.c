/* tests/doe/doe_tool.c: the gridtrain executable plus `doe`, for the doe and
 * slurm tests before the lead registers gt_cmd_doe in cli/commands.c:
 *   doe_tool doe|eval ...   dispatched to gt_cmd_doe / gt_cmd_eval (same steps as cli/cli.c)
 *                           while cli/commands.c does not list them
 *   doe_tool COMMAND ...    everything else through gt_cli_main (train, synth, ...)
 * 'doe run' re-executes this binary (/proc/self/exe) for 'train'. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "core/check.h"
#include "core/log.h"
#include "dist/comm.h"
#include "task/task_registry.h"

extern const gt_cmd gt_cmd_doe, gt_cmd_eval;

int main(int argc, char **argv) {
    gt_task_register_builtins(); /* task/task_registry.h */
    if (argc < 2 || gt_commands_find(argv[1])) return gt_cli_main(argc, argv);
    const gt_cmd *cmd = !strcmp(argv[1], "doe") ? &gt_cmd_doe : !strcmp(argv[1], "eval") ? &gt_cmd_eval : NULL;
    if (!cmd) return gt_cli_main(argc, argv);
    gt_log_init_from_env();
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--help")) {
            gt_cmd_help(cmd, stdout);
            return 0;
        }
    gt_dist_init(&argc, &argv);
    gt_args a;
    gt_args_parse(&a, cmd, &gt_commands_keys, argc - 2, argv + 2);
    int rc = cmd->run(&a, MPI_COMM_WORLD);
    if (cmd == &gt_cmd_eval && gt_log_level() <= GT_LOG_INFO) gt_dist_event_table(MPI_COMM_WORLD, stderr);
    gt_args_free(&a);
    gt_dist_finalize();
    return rc;
}
